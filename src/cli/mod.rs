//! The headless command line: `galapagos run`, `validate`, and friends. The
//! studio opens when no subcommand is given.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, Subcommand};

mod bundle;
mod consent;
pub mod detach;
pub mod fork;
pub mod hub;
pub mod leaderboard;
pub mod mcp;
pub mod models;
pub mod remote;
mod report;
pub mod steer;
mod steer_live;
pub mod takeout;

pub use bundle::{export, import};
pub use consent::ConsentArgs;
pub use takeout::{apply, export_run, export_run_git};

use crate::engine::card::{Card, ValidCard};
use crate::engine::events::{LogLevel, RunCommand, RunEvent, RunStatus};
use crate::engine::launch::{LaunchError, RunPlan};
use crate::engine::model::{ConfigError, LanguageModel};
use crate::engine::registry::Registry;
use crate::engine::run_thread::{RunHandle, start};
use crate::engine::task::Task;
use report::{FitnessLabels, Progress, print_summary};

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
        /// Start the agent once a byte comes on stdin (the run has filled its workspace).
        #[arg(long)]
        hold: bool,
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
        /// Run in the background, in a session of its own (it survives the terminal closing and an
        /// SSH logout; output to output.log in the run folder): print the folder and return.
        #[arg(long)]
        detach: bool,
        /// (Internal) the detached run itself.
        #[arg(long = "detached-into", hide = true, value_name = "DIR")]
        detached_into: Option<PathBuf>,
        /// No progress bar; only the summary.
        #[arg(long, short)]
        quiet: bool,
        /// Print one line per admitted genome.
        #[arg(long, short)]
        verbose: bool,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        consent: ConsentArgs,
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
        /// The run folder (holds archive.sqlite), or ssh://[user@]host[:port]/path (--jsonl).
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
        #[command(flatten)]
        remote: remote::RemoteArgs,
    },
    /// Write a genome's program into a folder (the run's best unless --genome): the whole program
    /// into a new or empty folder, else the files it changed, refusing to overwrite local changes.
    Apply {
        /// The run folder (holds archive.sqlite), or ssh://[user@]host[:port]/path.
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
        #[command(flatten)]
        remote: remote::RemoteArgs,
    },
    /// List the runs under a folder (default: ./runs, else the studio's runs folder), here or
    /// ssh://[user@]host[:port]/folder: running, paused, finished or failed, progress, best, cost.
    Runs {
        /// The folder of runs (or one run folder).
        folder: Option<PathBuf>,
        #[command(flatten)]
        remote: remote::RemoteArgs,
    },
    /// Follow a run live in the terminal until it ends (or Ctrl-C, which leaves it running), then
    /// print its summary: a run folder here, or ssh://[user@]host[:port]/path on a server.
    Attach {
        /// The run folder, or ssh://[user@]host[:port]/path.
        target: PathBuf,
        /// No progress bar; only the summary.
        #[arg(long, short)]
        quiet: bool,
        /// Print one line per genome (the run's history first).
        #[arg(long, short)]
        verbose: bool,
        /// Watch only: the connection cannot steer the run.
        #[arg(long)]
        read_only: bool,
        #[command(flatten)]
        remote: remote::RemoteArgs,
    },
    /// Serve a run (or a folder of runs) to one client on standard input and output: what a
    /// client's ssh runs on the server for ssh:// targets. A live run is reached through its
    /// socket; a finished run is read from its folder.
    Serve {
        /// Speak the run service's protocol on stdin/stdout (the one transport).
        #[arg(long, required = true)]
        stdio: bool,
        /// The run folder, or a folder of runs.
        path: PathBuf,
        /// Refuse every command (a watcher's connection).
        #[arg(long)]
        read_only: bool,
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
    /// Serve the Model Context Protocol on standard input and output, so a coding agent (Claude
    /// Code, Codex, any MCP client) can list cards and tasks, start, watch and steer runs and take
    /// the best program home (docs/mcp.md).
    Mcp,
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
    /// Run in the background, in a session of its own (it survives the terminal closing and an
    /// SSH logout; output to output.log in the run folder): print the run folder and return.
    #[arg(long)]
    pub detach: bool,
    /// (Internal) the detached run itself, recording into this folder.
    #[arg(long = "detached-into", hide = true, value_name = "DIR")]
    pub detached_into: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub hubs: HubArgs,
    #[command(flatten)]
    pub consent: ConsentArgs,
}

/// Where `NAMESPACE/NAME[@VERSION]` cards are pulled from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HubArgs {
    /// A hub to pull NAMESPACE/NAME[@VERSION] from: a hub folder or a built hub site's folder (a path
    /// or a file:// address), or a built hub site's http(s):// address; tried before the hubs of the
    /// user settings file; repeatable.
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

/// Resolve the model: CLI flags > user settings > the card's `llm` > offline;
/// an endpoint that sets no concurrency allows the card's iterations in
/// flight (`general.parallel`) at once.
pub fn resolve_model(
    card: &Card,
    args: &ModelArgs,
) -> Result<(Arc<dyn LanguageModel>, String), ConfigError> {
    resolve_model_for(card, args, card.general.parallel as usize)
}

/// [`resolve_model`] for `in_flight` model calls at once.
pub fn resolve_model_for(
    card: &Card,
    args: &ModelArgs,
    in_flight: usize,
) -> Result<(Arc<dyn LanguageModel>, String), ConfigError> {
    let settings = crate::engine::model::load_user_settings()?;
    let overrides = crate::engine::model::ModelOverrides {
        provider: args.provider.clone(),
        api_base: args.api_base.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
        in_flight: Some(in_flight),
    };
    crate::engine::model::build_model(
        card.llm.as_ref(),
        &overrides,
        &settings,
        crate::engine::model::default_model(),
    )
}

/// Load and check a card, printing every error on failure. The card is
/// resolved by the one rule ([`crate::engine::builtin::resolve_card`]): a
/// file, else a built-in card's name (`best_of_n`), else
/// `NAMESPACE/NAME[@VERSION]` pulled from the hubs.
fn load_card(path: &Path, registry: &Registry, hubs: &HubArgs) -> Result<ValidCard, i32> {
    use crate::engine::builtin::CardArg;
    match crate::engine::builtin::resolve_card(path) {
        Ok(CardArg::Builtin(card)) => card.valid(registry).map_err(print_errors),
        Ok(CardArg::Hub(r)) => hub::pull_card(&r, registry, hubs).map(|p| p.card),
        Ok(CardArg::Path(path)) => {
            crate::engine::hub::pull::load_card_file(&path, registry).map_err(print_errors)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(2)
        }
    }
}

/// The task folder a `--task` argument names, by the one rule
/// ([`crate::engine::builtin::resolve_task`]): a folder, else a built-in
/// task's name (written out into the per-user data dir); the exit code
/// after printing why not.
fn task_folder(arg: &Path) -> Result<crate::engine::builtin::TaskArg, i32> {
    crate::engine::builtin::resolve_task(arg).map_err(|e| {
        eprintln!("error: {e}");
        2
    })
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
    if args.detached_into.is_some() {
        detach::leave_session();
    }
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
    let task_dir = match task_folder(&args.task) {
        Ok(t) => {
            if let Some(name) = t.builtin {
                println!("task:        built-in {name} ({})", t.dir.display());
            }
            t.dir
        }
        Err(code) => return code,
    };
    let task = match Task::load_with(&task_dir, args.config.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // The folder is made once the model is resolved too (in `launch`); a
    // detached run records into the folder its starter made.
    let plan = match RunPlan::new(card, task, args.detached_into.clone(), &registry) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if args.detach && args.detached_into.is_none() {
        // The consent is checked here, before the folder is made; the
        // detached child is given the same flags and checks it again.
        return match args.consent.apply(plan) {
            Ok(plan) => detach::start(plan, &args.model, Some(&args.out)),
            Err(code) => code,
        };
    }
    launch(
        plan,
        &args.consent,
        &args.model,
        Output {
            quiet: args.quiet,
            verbose: args.verbose,
        },
        args.detached_into.is_none().then_some(args.out.as_path()),
    )
}

/// How much the CLI prints while a run goes.
#[derive(Clone, Copy)]
struct Output {
    quiet: bool,
    verbose: bool,
}

/// Resolve the model, start the run on its thread and follow it. A new
/// run gets its folder under `runs_root` here, once everything is checked
/// (the consent its card's lowered isolation needs included).
fn launch(
    plan: RunPlan,
    consent: &ConsentArgs,
    model_args: &ModelArgs,
    out: Output,
    runs_root: Option<&Path>,
) -> i32 {
    let plan = match consent.apply(plan) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (model, model_desc) = match resolve_model(plan.card(), model_args) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: model: {e}");
            return 2;
        }
    };
    // A down endpoint is said before anything is written (the run checks
    // again as it starts).
    let down = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
        .and_then(|rt| {
            rt.block_on(crate::engine::model::check::unreachable_endpoint(
                model.as_ref(),
            ))
        });
    if let Some(why) = down {
        eprintln!("error: model: {why}");
        return 2;
    }
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
    let serving = crate::engine::service::ServeContext {
        dir: run_dir.clone(),
        card: plan.valid_card().clone(),
        task: plan.task().clone(),
        registry: Arc::new(Registry::builtin()),
        redactor: Arc::new(crate::engine::redact::Redactor::new(
            crate::engine::model::run_secrets(model.as_ref())
                .values
                .into_iter()
                .chain(crate::engine::hub::secret_env_values()),
        )),
    };
    let handle = match start(plan, model, None) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot start the run: {e}");
            return 1;
        }
    };
    // The run answers on its folder's socket while it runs (`attach`,
    // `steer`, `runs`, a remote studio).
    let (handle, unserved) = crate::engine::service::serve(handle, serving, None);
    if let Some(e) = unserved {
        eprintln!("warning: {e}; the run goes on without its service");
    }
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
    let runtime = match remote::runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
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
            crate::engine::platform::on_terminate();
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
    detach: Option<bool>,
    quiet: bool,
    verbose: bool,
    model_args: &ModelArgs,
    consent: &ConsentArgs,
) -> i32 {
    // `Some(true)`: start it detached; `Some(false)`: this is the detached run.
    if detach == Some(false) {
        detach::leave_session();
    }
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
    if detach == Some(true) {
        return match consent.apply(plan) {
            Ok(plan) => detach::start(plan, model_args, None),
            Err(code) => code,
        };
    }
    launch(plan, consent, model_args, Output { quiet, verbose }, None)
}
