//! `galapagos leaderboard`: run cards × seeds on one task, or on every task of
//! a suite, with one model and budget in this process, then write the
//! leaderboard beside the runs.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::engine::leaderboard::worker::{self, BatchCommand, BatchEvent};
use crate::engine::leaderboard::{BatchRun, BatchSpec, BatchTasks, RunState};
use crate::engine::registry::Registry;
use crate::engine::task::Task;

/// `galapagos leaderboard`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("tasks").required(true).args(["task", "suite"])))]
pub struct LeaderboardArgs {
    /// The cards to compare: card files (YAML), built-in cards by name (`best_of_n`), or
    /// NAMESPACE/NAME[@VERSION] from a hub.
    #[arg(required = true)]
    pub cards: Vec<PathBuf>,
    /// The task folder every card runs on, or a built-in task by name (`circle_packing`).
    #[arg(long)]
    pub task: Option<PathBuf>,
    /// The tasks every card runs on: a folder of task folders, or a built-in suite by name (`math`: the ten
    /// mathematical benchmark tasks). Each task gets its leaderboard in a folder of its own; the suite's is
    /// suite.md / suite.json.
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// The fraction of a task's best known value (its config's best_known) a run must reach: the leaderboard
    /// gives the model calls, tokens and cost until it did. `0.99` or `99%`.
    #[arg(long, default_value = "0.99", value_parser = parse_fraction)]
    pub fraction: f64,
    /// Seeds per card: 0, 1, ..., K-1.
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// Iterations of every run.
    #[arg(long)]
    pub iterations: u64,
    /// Runs at once (each one's own `general.parallel` is kept).
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// The card the others are compared with (its name or its file; default: the first card).
    #[arg(long)]
    pub baseline: Option<String>,
    /// A score to reach: the leaderboard says how many runs reached it and at which iteration.
    #[arg(long)]
    pub target: Option<f64>,
    /// The batch folder (runs/ and the leaderboard files); running again on it resumes the batch.
    #[arg(long, default_value = "leaderboard")]
    pub out: PathBuf,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub model: super::ModelArgs,
    #[command(flatten)]
    pub consent: super::ConsentArgs,
    #[command(flatten)]
    pub hubs: super::HubArgs,
}

/// `0.99` or `99%`: a number above 0.
fn parse_fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}` is not a number (0.99, or 99%)"))?;
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(format!(
            "`{text}`: the fraction must be above 0 (0.99, or 99%)"
        ))
    }
}

/// The tasks the arguments name: the suite, or the one task (a built-in
/// task's name resolves when no such folder exists).
fn tasks_of(args: &LeaderboardArgs) -> Result<BatchTasks, String> {
    if let Some(suite) = &args.suite {
        return crate::engine::builtin::resolve_suite(suite)
            .map(BatchTasks::Suite)
            .map_err(|e| format!("--suite: {e}"));
    }
    let Some(arg) = &args.task else {
        return Err("name the task (--task DIR) or the suite (--suite DIR|math)".to_owned());
    };
    let task = crate::engine::builtin::resolve_task(arg).map_err(|e| e.to_string())?;
    if let Some(name) = task.builtin
        && !args.quiet
    {
        eprintln!("task: built-in {name} ({})", task.dir.display());
    }
    Task::load(&task.dir)
        .map(|t| BatchTasks::One(Box::new(t)))
        .map_err(|e| format!("--task: {e}"))
}

/// Run the batch and write the leaderboard; returns the exit code.
pub fn leaderboard(args: &LeaderboardArgs) -> i32 {
    let registry = Registry::builtin();
    let mut cards = Vec::new();
    let mut failed = false;
    for path in &args.cards {
        match super::load_card(path, &registry, &args.hubs) {
            Ok(c) => cards.push((path.clone(), c)),
            // the errors are printed
            Err(_) => failed = true,
        }
    }
    if failed {
        return 2;
    }
    let tasks = match tasks_of(args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // One model for every card: a card naming another one in its `llm`
    // section would make the comparison unequal, so that is refused.
    let mut model = None;
    // as many model calls at once as the runs at once times the widest card
    let in_flight = args.parallel.max(1)
        * cards
            .iter()
            .map(|(_, c)| c.card().general.parallel as usize)
            .max()
            .unwrap_or(1);
    for (path, card) in &cards {
        match super::resolve_model_for(card.card(), &args.model, in_flight) {
            Ok((m, desc)) => match &model {
                None => model = Some((m, desc, path.clone())),
                Some((_, first, first_path)) if *first != desc => {
                    eprintln!(
                        "error: {} uses the model {desc}, {} uses {first}: every card must run with one model \
                         (name it with --model / --api-base, or give the cards the same llm section)",
                        path.display(),
                        first_path.display()
                    );
                    return 2;
                }
                Some(_) => {}
            },
            Err(e) => {
                eprintln!("error: {}: model: {e}", path.display());
                return 2;
            }
        }
    }
    let Some((model, _, _)) = model else {
        eprintln!("error: no cards");
        return 2;
    };
    // a down endpoint is said once, before any run starts
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
    let baseline = match &args.baseline {
        None => cards[0].1.card().name.clone(),
        Some(b) => match cards
            .iter()
            .find(|(p, c)| c.card().name == *b || p.as_os_str() == b.as_str())
        {
            Some((_, c)) => c.card().name.clone(),
            None => {
                eprintln!(
                    "error: --baseline {b}: not one of the cards compared ({})",
                    cards
                        .iter()
                        .map(|(_, c)| c.card().name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                return 2;
            }
        },
    };
    let spec = BatchSpec {
        cards: cards.into_iter().map(|(_, c)| c).collect(),
        tasks,
        seeds: (0..args.seeds).collect(),
        iterations: args.iterations,
        parallel_runs: args.parallel.max(1),
        out: args.out.clone(),
        model,
        consents: args.consent.consents(),
        fraction: args.fraction,
    };
    let n_tasks = spec.tasks.tasks().len();
    let suite = spec.tasks.is_suite().then(|| spec.tasks.name().to_owned());
    let (n_runs, n_cards) = (
        spec.cards.len() * spec.seeds.len() * n_tasks,
        spec.cards.len(),
    );
    let mut handle = match worker::start(
        spec,
        std::sync::Arc::new(registry),
        baseline,
        args.target,
        None,
    ) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if !args.quiet {
        match &suite {
            Some(name) => eprintln!(
                "leaderboard: {n_runs} runs ({n_cards} cards × {n_tasks} tasks of {name} × {} seeds × {} iterations) in {}",
                args.seeds,
                args.iterations,
                args.out.display()
            ),
            None => eprintln!(
                "leaderboard: {n_runs} runs ({n_cards} cards × {} seeds × {} iterations) in {}",
                args.seeds,
                args.iterations,
                args.out.display()
            ),
        }
    }
    let runtime = match super::remote::runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let tty = std::io::stderr().is_terminal();
    let mut last_draw = Instant::now();
    let outcome = runtime.block_on(async {
        let mut terminate =
            crate::engine::platform::on_terminate();
        let mut stopping = false;
        loop {
            tokio::select! {
                event = handle.events.recv() => match event {
                    Some(BatchEvent::Finished(outcome)) => return Some(outcome),
                    Some(BatchEvent::Run { run, .. }) if !args.quiet => {
                        progress_line(&run, suite.is_some(), args.iterations, tty, &mut last_draw);
                    }
                    Some(BatchEvent::Warning(w)) => eprintln!("warning: {w}"),
                    Some(_) => {}
                    None => return None,
                },
                _ = tokio::signal::ctrl_c(), if !stopping => {
                    stopping = true;
                    eprintln!("interrupted: stopping (finished runs are kept; run the same command again to resume)");
                    handle.send(BatchCommand::Stop);
                }
                Some(()) = async { match terminate.as_mut() { Some(t) => t.recv().await, None => std::future::pending().await } }, if !stopping => {
                    stopping = true;
                    eprintln!("terminated: stopping (finished runs are kept; run the same command again to resume)");
                    handle.send(BatchCommand::Stop);
                }
            }
        }
    });
    handle.join();
    let Some(outcome) = outcome else {
        eprintln!("error: the batch ended without a result");
        return 1;
    };
    let board = match &outcome.leaderboard {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let written = match &outcome.written {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    println!("{}", board.markdown());
    for p in written {
        println!("wrote {}", p.display());
    }
    if outcome.stopped {
        return 130;
    }
    let failures = outcome.failures();
    if failures > 0 {
        eprintln!("error: {failures} run(s) failed; the leaderboard leaves them out");
        return 1;
    }
    0
}

/// Say what happened to a run on stderr: its end on a line of its own, its
/// progress (on a terminal) on one line drawn over at most every 100 ms. In a
/// suite, each line starts with the run's task.
fn progress_line(r: &BatchRun, suite: bool, iterations: u64, tty: bool, last_draw: &mut Instant) {
    let who = if suite {
        format!("{} {} seed {}", r.task, r.card, r.seed)
    } else {
        format!("{} seed {}", r.card, r.seed)
    };
    let line = match &r.state {
        RunState::Skipped => Some(format!("{who}: finished before, skipped")),
        RunState::Finished(status) => Some(format!(
            "{who}: {status} in {:.2} s (start-up {:.2} s)",
            r.wall_secs.unwrap_or_default(),
            r.startup_secs.unwrap_or_default()
        )),
        RunState::Failed(why) => Some(format!("{who}: failed: {why}")),
        RunState::Running { done, best }
            if tty && last_draw.elapsed() > Duration::from_millis(100) =>
        {
            *last_draw = Instant::now();
            eprint!(
                "\r{who}: {done}/{iterations} best {}   ",
                best.map_or_else(|| "-".to_owned(), |b| format!("{b:.6}"))
            );
            std::io::stderr().flush().ok();
            None
        }
        _ => None,
    };
    if let Some(line) = line {
        if tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("{line}");
    }
}
