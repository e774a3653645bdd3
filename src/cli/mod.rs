//! The headless command line: `galapagos run`, `validate`, and friends. The
//! studio opens when no subcommand is given.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, Subcommand};

pub mod fork;
pub mod hub;
pub mod leaderboard;
pub mod models;
pub mod steer;
pub mod takeout;

pub use takeout::{apply, export_run, export_run_git};

use crate::engine::card::{Card, ValidCard};
use crate::engine::events::{LogLevel, RunCommand, RunEvent, RunStatus, RunSummary};
use crate::engine::launch::{LaunchError, RunPlan};
use crate::engine::model::{ConfigError, LanguageModel};
use crate::engine::registry::Registry;
use crate::engine::run_thread::{RunHandle, start};
use crate::engine::task::Task;

/// Galapagos: LLM-driven program search as six composable blocks.
#[derive(Debug, Parser)]
#[command(name = "galapagos", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scaffold card on a task folder, headless.
    Run(RunArgs),
    /// Check cards: every error with file:line:col and the field.
    Validate {
        /// Card files, names of built-in cards, or NAMESPACE/NAME[@VERSION] on a hub.
        #[arg(required = true)]
        cards: Vec<PathBuf>,
        #[command(flatten)]
        hubs: HubArgs,
    },
    /// (Internal) A sandboxed coding agent's pid 1: dies with its parent, runs the agent, and
    /// with --socket bridges the sandbox's loopback to the run's model relay.
    #[command(hide = true, name = "agent-bridge")]
    AgentBridge {
        /// The relay's Unix socket.
        #[arg(long)]
        socket: Option<PathBuf>,
        /// The file the agent reads as its stdin (else stdin is empty).
        #[arg(long)]
        stdin: Option<PathBuf>,
        /// The agent's command line.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Continue an interrupted or finished run up to its budget (or a raised one).
    Resume {
        /// The run folder (holds archive.sqlite).
        run_dir: PathBuf,
        /// Raise the iteration budget to N (total, including iterations already done).
        #[arg(long)]
        iterations: Option<u64>,
        /// No progress bar; only the summary.
        #[arg(long, short)]
        quiet: bool,
        /// Print one line per admitted genome.
        #[arg(long, short)]
        verbose: bool,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Evaluate a program you wrote as a child of genome N of a stopped run and add it to the run
    /// (marked as written by a person); `resume` continues with it.
    Inject(steer::InjectArgs),
    /// Notes for the model and pinned inspirations of a stopped run, kept when it resumes; with no
    /// option, print those in force.
    Steer(steer::SteerArgs),
    /// Start a new run from a genome of a recorded run: its program is the new run's initial program.
    Fork(fork::ForkArgs),
    /// Export a run's genomes as JSON lines, or the best genome's lineage as a git history.
    #[command(group(clap::ArgGroup::new("format").required(true).args(["jsonl", "git"])))]
    ExportRun {
        /// The run folder (holds archive.sqlite).
        run_dir: PathBuf,
        /// Write JSON lines (one genome per line).
        #[arg(long)]
        jsonl: bool,
        /// Output file for --jsonl (default: standard output).
        #[arg(long, requires = "jsonl")]
        out: Option<PathBuf>,
        /// Write a git repository into DIR (new or empty): one commit per generation of the best
        /// genome's lineage, its scores in the message.
        #[arg(long, value_name = "DIR")]
        git: Option<PathBuf>,
    },
    /// Write a genome's program into a folder (the run's best unless --genome): the whole program
    /// into a new or empty folder, else the files it changed, refusing to overwrite local changes.
    Apply {
        /// The run folder (holds archive.sqlite).
        run_dir: PathBuf,
        /// The genome's id (default: the run's best).
        #[arg(long, value_name = "N")]
        genome: Option<u64>,
        /// The folder to write into.
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
        /// Overwrite files with local changes.
        #[arg(long)]
        force: bool,
    },
    /// Export a card as a shareable hub bundle: DIR/NAMESPACE/NAME/{card.yaml, README.md} and NAME.tar.gz.
    Export {
        /// The card to export.
        card: PathBuf,
        /// Where to write the bundle.
        #[arg(long, default_value = "hub")]
        out: PathBuf,
        /// Attach a leaderboard the card is on (its folder or leaderboard.json) as a "Results" section.
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
    },
    /// Import a hub bundle (folder, card.yaml or .tar.gz), or NAMESPACE/NAME[@VERSION] from a hub, as a card file.
    Import {
        /// The bundle, or NAMESPACE/NAME[@VERSION].
        bundle: PathBuf,
        #[command(flatten)]
        hubs: HubArgs,
        /// Folder to write NAME.yaml into.
        #[arg(long, default_value = "cards")]
        out: PathBuf,
        /// Overwrite an existing card file.
        #[arg(long)]
        force: bool,
    },
    /// The hub: a folder of published cards and the static site built from it.
    Hub {
        #[command(subcommand)]
        command: hub::HubCommand,
    },
    /// Compare cards on a task: every card × seed with one model and budget, then leaderboard.md/.json.
    Leaderboard(leaderboard::LeaderboardArgs),
    /// Model endpoints: `galapagos models check` asks each a tiny question.
    Models {
        #[command(subcommand)]
        command: models::ModelsCommand,
    },
    /// Open the studio (the default with no subcommand).
    Studio {
        /// Card to open: a file, a built-in card's name, or NAMESPACE/NAME[@VERSION] on a hub.
        #[arg(long)]
        card: Option<PathBuf>,
        /// Task folder to select.
        #[arg(long)]
        task: Option<PathBuf>,
    },
}

/// `galapagos run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The scaffold card (YAML), the name of a built-in card (best_of_n, topk, ...), or
    /// NAMESPACE/NAME[@VERSION] on a hub.
    pub card: PathBuf,
    /// Task folder: OpenEvolve's layout (initial_program.*, evaluator.py, config.yaml, README.md) or
    /// ShinkaEvolve's (initial.*, evaluate.py); or the name of a built-in task (circle_packing, ...).
    #[arg(long)]
    pub task: PathBuf,
    /// The task's OpenEvolve config file, when the folder has several (relative to the task folder);
    /// default: config.yaml, or the folder's only config*.yaml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override general.max_iterations.
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Override the card's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override general.parallel (iterations in flight).
    #[arg(long)]
    pub parallel: Option<u32>,
    /// Folder for run folders (a new `<card>-<task>-<time>` folder is made inside).
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// No progress bar; only the summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print one line per admitted genome (for scripts and logs).
    #[arg(long, short)]
    pub verbose: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub hubs: HubArgs,
}

/// Where `NAMESPACE/NAME[@VERSION]` cards are pulled from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HubArgs {
    /// A hub to pull NAMESPACE/NAME[@VERSION] from (a hub folder or the address of a built hub site),
    /// tried before the hubs of the user settings file; repeatable.
    #[arg(long = "hub", value_name = "DIR|URL")]
    pub hubs: Vec<String>,
}

/// Choosing the model at run time without editing the card. With nothing
/// given (here, in the card's `llm` or in the user settings file) the
/// built-in offline model is used.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModelArgs {
    /// A provider preset: openai, openai-responses, azure, anthropic, gemini, openrouter, deepseek,
    /// mistral, groq, together, ollama, vllm, llamacpp, lmstudio (its URL, protocol, headers and key
    /// variable; --api-base and --api-key-env change them).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Endpoint base URL (e.g. http://127.0.0.1:8000/v1).
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,
    /// Model name sent to the endpoint (replaces the card's model list).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Name of the environment variable that holds the API key (default OPENAI_API_KEY).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
}

/// Resolve the model: CLI flags > user settings > the card's `llm` > offline.
pub fn resolve_model(
    card: &Card,
    args: &ModelArgs,
) -> Result<(Arc<dyn LanguageModel>, String), ConfigError> {
    let settings = crate::engine::model::load_user_settings()?;
    let overrides = crate::engine::model::ModelOverrides {
        provider: args.provider.clone(),
        api_base: args.api_base.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
    };
    crate::engine::model::build_model(
        card.llm.as_ref(),
        &overrides,
        &settings,
        crate::engine::model::default_model(),
    )
}

/// Load and check a card, printing every error on failure. A name with no
/// such file (`best_of_n`) is the built-in card of that name; a
/// `NAMESPACE/NAME[@VERSION]` with no such file is pulled from the hubs.
fn load_card(path: &Path, registry: &Registry, hubs: &HubArgs) -> Result<ValidCard, i32> {
    if let Some(card) = crate::engine::builtin::card_for_arg(path) {
        return ValidCard::from_yaml(card.yaml, &format!("built-in:{}", card.name), registry)
            .map_err(print_errors);
    }
    if !path.exists()
        && let Some(r) = path
            .to_str()
            .and_then(crate::engine::hub::pull::HubRef::parse)
    {
        return hub::pull_card(&r, registry, hubs).map(|p| p.card);
    }
    ValidCard::load(path, registry).map_err(print_errors)
}

fn print_errors(errors: crate::engine::card::CardErrors) -> i32 {
    for e in &errors.0 {
        eprintln!("error: {e}");
    }
    2
}

/// `galapagos validate`.
pub fn validate(cards: &[PathBuf], hubs: &HubArgs) -> i32 {
    let registry = Registry::builtin();
    let mut code = 0;
    for path in cards {
        match load_card(path, &registry, hubs) {
            Ok(card) => {
                let card = card.card();
                println!("ok: {} ({}/{})", path.display(), card.namespace, card.name);
            }
            Err(c) => code = c,
        }
    }
    code
}

struct Progress {
    tty: bool,
    quiet: bool,
    total: u64,
    last_draw: Instant,
    /// The last line printed without a terminal (not printed twice).
    last_line: Option<(u64, u64, u64)>,
}

impl Progress {
    fn draw(&mut self, done: u64, valid: u64, invalid: u64, best: Option<f64>, force: bool) {
        if self.quiet {
            return;
        }
        if !force && self.last_draw.elapsed().as_millis() < 100 {
            return;
        }
        self.last_draw = Instant::now();
        let best = best.map_or_else(|| "-".to_owned(), |b| format!("{b:.6}"));
        if self.tty {
            let width = 30usize;
            let filled = if self.total == 0 {
                width
            } else {
                (done.min(self.total) as usize * width) / self.total as usize
            };
            eprint!(
                "\r[{}{}] {done}/{} best {best}  valid {valid}  invalid {invalid} ",
                "#".repeat(filled),
                ".".repeat(width - filled),
                self.total
            );
            std::io::stderr().flush().ok();
        } else if (force || done.is_multiple_of(10))
            && self.last_line != Some((done, valid, invalid))
        {
            self.last_line = Some((done, valid, invalid));
            eprintln!(
                "iteration {done}/{}: best {best}, valid {valid}, invalid {invalid}",
                self.total
            );
        }
    }

    fn clear(&self) {
        if self.tty && !self.quiet {
            eprintln!();
        }
    }
}

/// What the best and the initial genome's fitness are (`combined_score`, a
/// metric the task named, or the mean of the metrics).
struct FitnessLabels {
    best: String,
    initial: String,
}

/// "combined_score 0.93", or "fitness 1.49 (mean of 2 metrics, no
/// combined_score)".
fn fitness_text(basis: &str, value: f64) -> String {
    if basis.contains(' ') {
        format!("fitness {value:.6} ({basis})")
    } else {
        format!("{basis} {value:.6}")
    }
}

fn print_summary(s: &RunSummary, run_dir: &Path, model: &str, fitness: &FitnessLabels) {
    // A failure's reason is printed once, as the error after the summary.
    let status = match &s.status {
        RunStatus::Failed(_) => "failed".to_owned(),
        other => other.label(),
    };
    println!("status:      {status}");
    println!("iterations:  {}", s.iterations);
    println!(
        "genomes:     {} ({} valid, {} invalid{})",
        s.genomes,
        s.valid,
        s.invalid,
        if s.rejected == 0 {
            String::new()
        } else {
            format!(", of which {} rejected before evaluation", s.rejected)
        }
    );
    match (s.best_id, s.best_score) {
        (Some(id), Some(best)) => println!(
            "best:        genome {id}, {}",
            fitness_text(&fitness.best, best)
        ),
        _ => println!("best:        none"),
    }
    if let Some(init) = s.initial_score {
        println!("initial:     {}", fitness_text(&fitness.initial, init));
    }
    let cost = s
        .usage
        .cost_usd
        .map_or_else(String::new, |c| format!(", ${c:.4}"));
    let of = |n: u64, what: &str| {
        if n == 0 {
            String::new()
        } else {
            format!(" ({n} {what})")
        }
    };
    println!(
        "tokens:      {} prompt{} + {} completion{}{cost}",
        s.usage.prompt_tokens,
        of(s.usage.cached_tokens, "from the prompt cache"),
        s.usage.completion_tokens,
        of(s.usage.reasoning_tokens, "reasoning")
    );
    // The description says it all once: the model, and for the offline
    // model why it is in use and how to name a real one.
    println!("model:       {model}");
    if s.run_wall_secs > s.wall_secs + 0.005 {
        println!(
            "wall time:   {:.2} s ({:.2} s over the run's invocations)",
            s.wall_secs, s.run_wall_secs
        );
    } else {
        println!("wall time:   {:.2} s", s.wall_secs);
    }
    println!("run folder:  {}", run_dir.display());
}

/// The flags `run` and `fork` share that change the card's settings.
struct RunFlags {
    iterations: Option<u64>,
    seed: Option<u64>,
    parallel: Option<u32>,
}

impl RunFlags {
    /// `card` with the flags' values, or the exit code after printing every
    /// problem (a flag's value as the flag's error, the card's as the card's,
    /// named `card_label`).
    fn apply(&self, card: ValidCard, card_label: &str) -> Result<ValidCard, i32> {
        card.with_settings(|general, seed| {
            if let Some(n) = self.iterations {
                general.max_iterations = n;
            }
            if let Some(s) = self.seed {
                *seed = s;
            }
            if let Some(p) = self.parallel {
                general.parallel = p;
            }
        })
        .map_err(|problems| {
            for p in problems {
                let flag = match p.field.as_str() {
                    "general.max_iterations" if self.iterations.is_some() => Some("--iterations"),
                    "general.parallel" if self.parallel.is_some() => Some("--parallel"),
                    _ => None,
                };
                match flag {
                    Some(flag) => eprintln!("error: {flag}: {}", p.message),
                    None => eprintln!("error: {card_label}: {}: {}", p.field, p.message),
                }
            }
            2
        })
    }
}

/// `galapagos run`: returns the process exit code.
pub fn run(args: &RunArgs) -> i32 {
    let registry = Registry::builtin();
    let card = match load_card(&args.card, &registry, &args.hubs) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let flags = RunFlags {
        iterations: args.iterations,
        seed: args.seed,
        parallel: args.parallel,
    };
    let card = match flags.apply(card, &args.card.display().to_string()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The task folder is checked before anything is written: a bad one is
    // one message and exit 2, with no run folder.
    // a name with no such folder (`circle_packing`) is the built-in task
    let task_dir = match crate::engine::builtin::task_dir_for_arg(&args.task) {
        Ok(dir) => dir.unwrap_or_else(|| args.task.clone()),
        Err(e) => {
            eprintln!(
                "error: cannot write the built-in task {} to {}: {e}",
                args.task.display(),
                crate::engine::builtin::tasks_dir().display()
            );
            return 2;
        }
    };
    if task_dir != args.task {
        println!(
            "task:        built-in {} ({})",
            args.task.display(),
            task_dir.display()
        );
    }
    let task = match Task::load_with(&task_dir, args.config.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // The folder is made once the model is resolved too (in `launch`).
    let plan = match RunPlan::new(card, task, None, &registry) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    launch(
        plan,
        &args.model,
        Output {
            quiet: args.quiet,
            verbose: args.verbose,
        },
        Some(&args.out),
    )
}

/// How much the CLI prints while a run goes.
#[derive(Clone, Copy)]
struct Output {
    quiet: bool,
    verbose: bool,
}

/// Resolve the model, start the run on its thread and follow it. A new
/// run gets its folder under `runs_root` here, once everything is checked.
fn launch(plan: RunPlan, model_args: &ModelArgs, out: Output, runs_root: Option<&Path>) -> i32 {
    let (model, model_desc) = match resolve_model(plan.card(), model_args) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: model: {e}");
            return 2;
        }
    };
    let plan = match runs_root {
        None => plan,
        Some(root) => match plan.in_new_folder(root) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        },
    };
    let total = plan.card().general.max_iterations;
    let recorded = plan.recorded_counts();
    let Some(run_dir) = plan.run_dir().map(Path::to_path_buf) else {
        eprintln!("error: the command line records every run; no run folder was given");
        return 2;
    };
    let handle = match start(plan, model, None) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot start the run: {e}");
            return 1;
        }
    };
    drive(handle, &run_dir, total, out, recorded, &model_desc)
}

/// Follow a running scaffold to its end: progress, Ctrl-C, summary, exit
/// code. `recorded`: the (valid, invalid) genomes a resumed run had already.
fn drive(
    mut handle: RunHandle,
    run_dir: &Path,
    total: u64,
    out: Output,
    recorded: (u64, u64),
    model_desc: &str,
) -> i32 {
    let Output { quiet, verbose } = out;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return 1;
        }
    };
    if !quiet {
        eprintln!("recording to {}", run_dir.display());
    }
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal() && !verbose,
        quiet,
        total,
        last_draw: Instant::now(),
        last_line: None,
    };
    let commands = handle.commands.clone();
    let summary = runtime.block_on(async {
        // SIGTERM (a service manager, `kill`, a batch system) stops the run
        // as Ctrl-C does: everything it started is killed, its record kept.
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut interrupted = false;
        let ((mut valid, mut invalid), mut best) = (recorded, None);
        // What the fitness is, as the best and the initial genome have it
        // ("fitness" for one not seen here, e.g. the initial program of a
        // resumed run).
        let mut labels = FitnessLabels { best: "fitness".to_owned(), initial: "fitness".to_owned() };
        loop {
            tokio::select! {
                ev = handle.events.recv() => match ev {
                    None => return None,
                    Some(RunEvent::Started(info)) => {
                        if !quiet {
                            eprintln!("running {} on {} for {} iterations with {}", info.card_name, info.task_name, info.max_iterations, info.model);
                        }
                    }
                    Some(RunEvent::GenomeAdmitted { genome, best_id, best_score, iterations_done, .. }) => {
                        if genome.valid { valid += 1 } else { invalid += 1 }
                        best = best_score;
                        if best_id == Some(genome.id) {
                            labels.best = genome.fitness_basis().to_string();
                        }
                        if genome.id == 0 {
                            labels.initial = genome.fitness_basis().to_string();
                        }
                        if verbose {
                            let score = genome.fitness().map_or_else(|| format!("invalid: {}", genome.error.as_deref().unwrap_or("")), |f| format!("{} {f:.6}", genome.fitness_basis()));
                            println!("admitted genome {} iteration {} attempt {}: {score}", genome.id, genome.iteration, genome.attempt);
                        }
                        progress.draw(iterations_done, valid, invalid, best, false);
                    }
                    Some(RunEvent::Log { level, message }) => {
                        if level >= LogLevel::Warn || !quiet {
                            progress.clear();
                            eprintln!("{}: {message}", match level { LogLevel::Info => "info", LogLevel::Warn => "warning", LogLevel::Error => "error" });
                        }
                    }
                    Some(RunEvent::Finished(s)) => {
                        progress.draw(s.iterations, valid, invalid, best, true);
                        progress.clear();
                        return Some((s, labels));
                    }
                    Some(_) => {}
                },
                _ = tokio::signal::ctrl_c(), if !interrupted => {
                    interrupted = true;
                    progress.clear();
                    eprintln!("interrupted: stopping (the run so far is kept in {})", run_dir.display());
                    commands.try_send(RunCommand::Stop).ok();
                }
                Some(()) = async { match terminate.as_mut() { Some(t) => t.recv().await, None => std::future::pending().await } }, if !interrupted => {
                    interrupted = true;
                    progress.clear();
                    eprintln!("terminated: stopping (the run so far is kept in {})", run_dir.display());
                    commands.try_send(RunCommand::Stop).ok();
                }
            }
        }
    });
    handle.join();
    let Some((summary, fitness)) = summary else {
        eprintln!("error: the run ended without a summary");
        return 1;
    };
    print_summary(&summary, run_dir, model_desc, &fitness);
    match summary.status {
        RunStatus::Completed | RunStatus::BudgetReached(_) | RunStatus::EarlyStop(_) => 0,
        RunStatus::Stopped => 130,
        RunStatus::Failed(msg) => {
            eprintln!("error: {msg}");
            1
        }
    }
}

/// `galapagos resume`: continue the run in `run_dir` up to `iterations`
/// total (the recorded budget when not given); see [`crate::engine::launch`]
/// for the rule when the budget is already spent.
pub fn resume(
    run_dir: &Path,
    iterations: Option<u64>,
    quiet: bool,
    verbose: bool,
    model_args: &ModelArgs,
) -> i32 {
    let registry = Registry::builtin();
    let plan = match RunPlan::resume(run_dir, iterations, &registry) {
        Ok(p) => p,
        Err(e @ LaunchError::NothingToDo { done, .. }) => {
            eprintln!(
                "error: {}: {e} (--iterations N, N > {done})",
                run_dir.display()
            );
            return 2;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    launch(plan, model_args, Output { quiet, verbose }, None)
}

/// `galapagos export`.
pub fn export(card_path: &Path, out: &Path, results: Option<&Path>) -> i32 {
    let registry = Registry::builtin();
    let card = match load_card(card_path, &registry, &HubArgs::default()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let card = card.into_card();
    let results = match results.map(|r| crate::engine::leaderboard::results_section(r, &card.name))
    {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            eprintln!("error: --results: {e}");
            return 2;
        }
    };
    match crate::engine::hub::export_bundle_with_results(
        &card,
        &registry,
        out,
        &crate::engine::hub::secret_env_values(),
        results.as_deref(),
    ) {
        Ok(dir) => {
            println!(
                "exported {}/{} to {}",
                card.namespace,
                card.name,
                dir.display()
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// `galapagos import`.
pub fn import(bundle: &Path, out: &Path, force: bool, hubs: &HubArgs) -> i32 {
    let registry = Registry::builtin();
    let hub_ref = (!bundle.exists())
        .then(|| {
            bundle
                .to_str()
                .and_then(crate::engine::hub::pull::HubRef::parse)
        })
        .flatten();
    let card = match hub_ref {
        Some(r) => match hub::pull_card(&r, &registry, hubs) {
            Ok(p) => p.card.into_card(),
            Err(code) => return code,
        },
        None => match crate::engine::hub::import_bundle(bundle, &registry) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        },
    };
    if out.exists() && !out.is_dir() {
        eprintln!(
            "error: --out {}: not a folder; --out names the folder to write {}.yaml into",
            out.display(),
            card.name
        );
        return 2;
    }
    let target = out.join(format!("{}.yaml", card.name));
    if target.exists() && !force {
        eprintln!(
            "error: {} exists; pass --force to overwrite",
            target.display()
        );
        return 1;
    }
    if let Err(e) = std::fs::create_dir_all(out).and_then(|()| card.save(&target)) {
        eprintln!("error: {}: {e}", target.display());
        return 1;
    }
    println!(
        "imported {}/{} as {}",
        card.namespace,
        card.name,
        target.display()
    );
    0
}
