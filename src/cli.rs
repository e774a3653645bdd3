//! The headless command line: `galapagos run`, `validate`, and friends. The
//! studio opens when no subcommand is given.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, Subcommand};

use crate::engine::archive::new_run_dir;
use crate::engine::card::Card;
use crate::engine::events::{LogLevel, RunCommand, RunEvent, RunStatus, RunSummary};
use crate::engine::model::LanguageModel;
use crate::engine::registry::Registry;
use crate::engine::worker::{RunRequest, spawn_run};

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
        /// Card files.
        #[arg(required = true)]
        cards: Vec<PathBuf>,
    },
    /// Open the studio (the default with no subcommand).
    Studio {
        /// Card to open.
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
    /// The scaffold card (YAML).
    pub card: PathBuf,
    /// Task folder (initial_program.*, evaluator.py, README.md).
    #[arg(long)]
    pub task: PathBuf,
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
}

/// Load a card, printing every error on failure.
fn load_card(path: &Path, registry: &Registry) -> Result<Card, i32> {
    Card::load(path, registry).map_err(|errors| {
        for e in &errors.0 {
            eprintln!("error: {e}");
        }
        2
    })
}

/// `galapagos validate`.
pub fn validate(cards: &[PathBuf]) -> i32 {
    let registry = Registry::builtin();
    let mut code = 0;
    for path in cards {
        match load_card(path, &registry) {
            Ok(card) => println!("ok: {} ({}/{})", path.display(), card.namespace, card.name),
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
        } else if force || done.is_multiple_of(10) {
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

fn print_summary(s: &RunSummary, run_dir: &Path, offline: bool, model: &str) {
    println!("status:      {}", s.status.label());
    println!("iterations:  {}", s.iterations);
    println!(
        "genomes:     {} ({} valid, {} invalid)",
        s.genomes, s.valid, s.invalid
    );
    match (s.best_id, s.best_score) {
        (Some(id), Some(score)) => println!("best:        genome {id}, combined_score {score:.6}"),
        _ => println!("best:        none"),
    }
    if let Some(init) = s.initial_score {
        println!("initial:     combined_score {init:.6}");
    }
    let cost = s
        .usage
        .cost_usd
        .map_or_else(String::new, |c| format!(", ${c:.4}"));
    println!(
        "tokens:      {} prompt + {} completion{cost}",
        s.usage.prompt_tokens, s.usage.completion_tokens
    );
    println!(
        "model:       {model}{}",
        if offline {
            " — offline, no endpoint configured"
        } else {
            ""
        }
    );
    println!("wall time:   {:.2} s", s.wall_secs);
    println!("run folder:  {}", run_dir.display());
}

/// `galapagos run`: returns the process exit code.
pub fn run(args: &RunArgs, model: Arc<dyn LanguageModel>) -> i32 {
    let registry = Arc::new(Registry::builtin());
    let mut card = match load_card(&args.card, &registry) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(n) = args.iterations {
        card.general.max_iterations = n;
    }
    if let Some(s) = args.seed {
        card.seed = s;
    }
    if let Some(p) = args.parallel {
        card.general.parallel = p;
    }
    if let Some(p) = card.validate(&registry).first() {
        eprintln!("error: {}: {}: {}", args.card.display(), p.field, p.message);
        return 2;
    }
    let task_name = args
        .task
        .file_name()
        .map_or_else(|| "task".to_owned(), |n| n.to_string_lossy().into_owned());
    let run_dir = new_run_dir(&args.out, &card.name, &task_name);
    let total = card.general.max_iterations;
    let model_desc = model.describe();
    let offline = model.is_offline();
    let request = RunRequest {
        card,
        task_dir: args.task.clone(),
        model,
        run_dir: Some(run_dir.clone()),
        waker: None,
    };
    let mut handle = match spawn_run(request, registry) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot start the run: {e}");
            return 1;
        }
    };
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
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal(),
        quiet: args.quiet,
        total,
        last_draw: Instant::now(),
    };
    let commands = handle.commands.clone();
    let summary = runtime.block_on(async {
        let mut interrupted = false;
        let (mut valid, mut invalid, mut best) = (0u64, 0u64, None);
        loop {
            tokio::select! {
                ev = handle.events.recv() => match ev {
                    None => return None,
                    Some(RunEvent::Started(info)) => {
                        if !args.quiet {
                            eprintln!("running {} on {} for {} iterations with {}", info.card_name, info.task_name, info.max_iterations, info.model);
                        }
                    }
                    Some(RunEvent::GenomeAdmitted { genome, best_score, iterations_done, .. }) => {
                        if genome.valid { valid += 1 } else { invalid += 1 }
                        best = best_score;
                        progress.draw(iterations_done, valid, invalid, best, false);
                    }
                    Some(RunEvent::Log { level, message }) => {
                        if level >= LogLevel::Warn || !args.quiet {
                            progress.clear();
                            eprintln!("{}: {message}", match level { LogLevel::Info => "info", LogLevel::Warn => "warning", LogLevel::Error => "error" });
                        }
                    }
                    Some(RunEvent::Finished(s)) => {
                        progress.draw(s.iterations, valid, invalid, best, true);
                        progress.clear();
                        return Some(s);
                    }
                    Some(_) => {}
                },
                _ = tokio::signal::ctrl_c(), if !interrupted => {
                    interrupted = true;
                    progress.clear();
                    eprintln!("interrupted: stopping (the run so far is kept in {})", run_dir.display());
                    commands.try_send(RunCommand::Stop).ok();
                }
            }
        }
    });
    handle.join();
    let Some(summary) = summary else {
        eprintln!("error: the run ended without a summary");
        return 1;
    };
    print_summary(&summary, &run_dir, offline, &model_desc);
    match summary.status {
        RunStatus::Completed | RunStatus::BudgetReached(_) => 0,
        RunStatus::Stopped => 130,
        RunStatus::Failed(msg) => {
            eprintln!("error: {msg}");
            1
        }
    }
}
