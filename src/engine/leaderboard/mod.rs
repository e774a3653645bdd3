//! A leaderboard: every card × seed run on one task, or on every task of a
//! suite ([`suite`]), with one model and one iteration budget, in this
//! process, and the statistics of the result.
//!
//! A batch lives in a folder. On one task, `runs/<card>-seed<s>/` holds each
//! run (a normal run folder), `leaderboard.md` / `leaderboard.json` the
//! result. On a suite, each task has a folder of its own laid out the same way
//! (`<task>/runs/<card>-seed<s>/`, `<task>/leaderboard.json`), and
//! `suite.md` / `suite.json` hold the suite's result ([`suite_report`]).
//! Started again on the same folder, a batch skips the runs that finished and
//! resumes the others (the engine's resume; see [`crate::engine::launch`]).
//!
//! On a task whose config names its best known value, each card's line also
//! measures the task's raw objective against it ([`value`]).
//!
//! [`Batch::poll`] never blocks; [`worker::start`] drives a batch on a
//! thread of its own and reports [`worker::BatchEvent`]s over a bounded
//! channel, which the command line and the studio both read.

pub mod hypervolume;
pub mod plot;
pub mod report;
pub mod stats;
pub mod suite;
pub mod suite_report;
pub mod value;
pub mod worker;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::engine::archive::Archive;
use crate::engine::card::ValidCard;
use crate::engine::consent::{Consent, ConsentNeeded};
use crate::engine::events::{RunEvent, RunStatus};
use crate::engine::launch::{LaunchError, RunPlan};
use crate::engine::model::LanguageModel;
use crate::engine::registry::Registry;
use crate::engine::run_thread::{RunHandle, Waker, start};
use crate::engine::task::Task;

/// The file a finished batch writes its leaderboard into, in its folder.
pub const LEADERBOARD_FILE: &str = "leaderboard.json";

/// The tasks of a batch.
#[derive(Clone)]
pub enum BatchTasks {
    /// One task: its runs in `OUT/runs/`, its leaderboard in `OUT/`.
    One(Box<Task>),
    /// A suite: each task's runs in `OUT/<task>/runs/` and its leaderboard in
    /// `OUT/<task>/`, the suite's leaderboard in `OUT/`.
    Suite(suite::Suite),
}

impl BatchTasks {
    /// Every task, in order.
    pub fn tasks(&self) -> &[Task] {
        match self {
            Self::One(t) => std::slice::from_ref(t),
            Self::Suite(s) => &s.tasks,
        }
    }

    /// True for a suite.
    pub fn is_suite(&self) -> bool {
        matches!(self, Self::Suite(_))
    }

    /// The task's name, or the suite's.
    pub fn name(&self) -> &str {
        match self {
            Self::One(t) => &t.name,
            Self::Suite(s) => &s.name,
        }
    }
}

/// What to run.
#[derive(Clone)]
pub struct BatchSpec {
    /// The cards compared; names must differ (they name the run folders).
    pub cards: Vec<ValidCard>,
    pub tasks: BatchTasks,
    /// The seeds every card runs with.
    pub seeds: Vec<u64>,
    /// The iteration budget of every run.
    pub iterations: u64,
    /// Runs at once.
    pub parallel_runs: usize,
    /// The batch folder.
    pub out: PathBuf,
    /// The model every run asks (the leaderboard records its
    /// [`LanguageModel::identity`]).
    pub model: Arc<dyn LanguageModel>,
    /// Consents to the cards' lowered isolation (each for one card's hash;
    /// see [`crate::engine::consent`]).
    pub consents: Vec<Consent>,
    /// The fraction of a task's best known value the leaderboard says
    /// whether, and at what spend, each run reached
    /// ([`value::DEFAULT_FRACTION`] unless told).
    pub fraction: f64,
}

/// The cards of `spec` whose lowered isolation needs a consent `spec` does
/// not give: what each asks for (once per card, on the first of its tasks
/// that asks). A card that does not fit a task is left to its run, which
/// says why.
pub fn consents_needed(spec: &BatchSpec, registry: &Registry) -> Vec<ConsentNeeded> {
    spec.cards
        .iter()
        .filter_map(|card| {
            spec.tasks.tasks().iter().find_map(|task| {
                let plan = RunPlan::new(card.clone(), task.clone(), None, registry).ok()?;
                match plan.with_consent_from(&spec.consents).check_consent() {
                    Err(LaunchError::ConsentNeeded(e)) => Some(*e),
                    _ => None,
                }
            })
        })
        .collect()
}

/// Where one run of a batch is.
#[derive(Clone, Debug, PartialEq)]
pub enum RunState {
    /// Not started yet.
    Waiting,
    /// Running: iterations done, best so far.
    Running { done: u64, best: Option<f64> },
    /// Finished in an earlier invocation; not run again.
    Skipped,
    /// Finished now, with the run's status.
    Finished(String),
    /// Could not start, or failed: the reason.
    Failed(String),
}

impl RunState {
    /// Nothing more will happen to this run in this invocation.
    pub fn is_over(&self) -> bool {
        matches!(self, Self::Skipped | Self::Finished(_) | Self::Failed(_))
    }
}

/// One card × seed (× task) of a batch.
#[derive(Clone, Debug)]
pub struct BatchRun {
    /// The task's name.
    pub task: String,
    pub card: String,
    pub seed: u64,
    pub dir: PathBuf,
    pub state: RunState,
    /// Seconds from asking for the run to its first iteration (plan, archive,
    /// evaluator start, initial program scored); `None` until then.
    pub startup_secs: Option<f64>,
    /// Seconds the run took in this invocation.
    pub wall_secs: Option<f64>,
}

struct Active {
    index: usize,
    handle: RunHandle,
    started: Instant,
}

/// A batch being run.
pub struct Batch {
    spec: BatchSpec,
    registry: Arc<Registry>,
    pub runs: Vec<BatchRun>,
    queue: VecDeque<usize>,
    active: Vec<Active>,
    waker: Option<Waker>,
    started: Instant,
}

/// A run a batch folder already holds where a batch run goes: `done` when
/// it needs nothing more for a budget of `n` iterations.
struct HeldRun {
    done: bool,
}

/// The run in `dir`, if one is there, as a batch run with `seed` and a
/// budget of `n` iterations would continue it; an error when it cannot (a
/// run of another seed, or of a bigger budget).
fn held_run(dir: &Path, seed: u64, n: u64) -> Result<Option<HeldRun>, String> {
    if !dir.join("archive.sqlite").is_file() {
        return Ok(None);
    }
    let archive = Archive::open(dir).map_err(|e| e.to_string())?;
    let meta = archive.meta().map_err(|e| e.to_string())?;
    let iterations = archive
        .checkpoint()
        .map_err(|e| e.to_string())?
        .map_or(0, |c| c.iterations_done);
    drop(archive);
    if meta.seed != seed {
        return Err(format!(
            "{} holds a run with seed {}, not {seed}",
            dir.display(),
            meta.seed
        ));
    }
    if meta.max_iterations > n {
        return Err(format!(
            "{} holds a run with a budget of {} iterations, more than {n}",
            dir.display(),
            meta.max_iterations
        ));
    }
    // A run that ended by its own rule (a cap, `general.stop`) is done.
    let finished = meta.status == "completed"
        || meta.status.starts_with("budget reached")
        || meta.status.starts_with("stopped early");
    Ok(Some(HeldRun {
        done: iterations >= n || (finished && meta.max_iterations == n),
    }))
}

/// The folder of a card's run with `seed` inside the batch folder `out`.
pub fn run_dir(out: &Path, card: &str, seed: u64) -> PathBuf {
    out.join("runs").join(format!("{card}-seed{seed}"))
}

/// The folder of a suite's task inside the suite batch folder `out`: a
/// one-task batch folder of its own.
pub fn task_folder(out: &Path, task: &str) -> PathBuf {
    out.join(task)
}

/// A batch's leaderboard: one task's, or a suite's.
#[derive(Clone, Debug)]
pub enum Board {
    Task(Box<report::Leaderboard>),
    Suite(Box<suite_report::SuiteLeaderboard>),
}

impl Board {
    /// The Markdown a batch prints and writes.
    pub fn markdown(&self) -> String {
        match self {
            Self::Task(lb) => report::markdown(lb),
            Self::Suite(sl) => suite_report::markdown(sl),
        }
    }

    /// The cards' names, in order.
    pub fn cards(&self) -> Vec<&str> {
        match self {
            Self::Task(lb) => lb.cards.iter().map(|c| c.card.as_str()).collect(),
            Self::Suite(sl) => sl.cards.iter().map(|c| c.card.as_str()).collect(),
        }
    }
}

impl Batch {
    /// Check the spec and lay out the runs (nothing is started or written).
    pub fn new(
        spec: BatchSpec,
        registry: Arc<Registry>,
        waker: Option<Waker>,
    ) -> Result<Self, String> {
        if spec.cards.is_empty() {
            return Err("no cards to compare".to_owned());
        }
        if spec.seeds.is_empty() {
            return Err("no seeds: --seeds must be at least 1".to_owned());
        }
        if spec.iterations == 0 {
            return Err("--iterations must be at least 1".to_owned());
        }
        if !(spec.fraction > 0.0 && spec.fraction.is_finite()) {
            return Err(format!(
                "--fraction {}: must be a number above 0 (0.99: 99 % of the best known value)",
                spec.fraction
            ));
        }
        let tasks = spec.tasks.tasks();
        if tasks.is_empty() {
            return Err(format!("the suite {} has no tasks", spec.tasks.name()));
        }
        let mut task_names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
        task_names.sort_unstable();
        if let Some(w) = task_names.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "two tasks of the suite are named `{}`: the name labels a task's folder, so each task needs its own",
                w[0]
            ));
        }
        let mut names: Vec<&str> = spec.cards.iter().map(|c| c.card().name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "two cards are named `{}`: the name labels a card's runs, so each card needs its own",
                w[0]
            ));
        }
        // Nothing starts while a card lacks the consent its lowered
        // isolation needs.
        let needed = consents_needed(&spec, &registry);
        if !needed.is_empty() {
            return Err(needed
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"));
        }
        let mut runs = Vec::new();
        for task in spec.tasks.tasks() {
            let folder = if spec.tasks.is_suite() {
                task_folder(&spec.out, &task.name)
            } else {
                spec.out.clone()
            };
            for card in &spec.cards {
                for &seed in &spec.seeds {
                    runs.push(BatchRun {
                        task: task.name.clone(),
                        card: card.card().name.clone(),
                        seed,
                        dir: run_dir(&folder, &card.card().name, seed),
                        state: RunState::Waiting,
                        startup_secs: None,
                        wall_secs: None,
                    });
                }
            }
        }
        // A batch folder that holds runs this batch cannot continue (another
        // seed, a bigger budget) is refused before anything starts or is
        // written: run by run, each would fail and the leaderboard files of
        // the batch that made them would be written over with an empty one.
        let conflicts: Vec<String> = runs
            .iter()
            .filter_map(|r| held_run(&r.dir, r.seed, spec.iterations).err())
            .collect();
        if let Some(first) = conflicts.first() {
            let more = match conflicts.len() {
                1 => String::new(),
                n => format!(" (and {} more runs like it)", n - 1),
            };
            return Err(format!(
                "the batch folder {} holds another batch's runs: {first}{more}; pick another batch \
                 folder (its leaderboard files were left as they are)",
                spec.out.display()
            ));
        }
        Ok(Self {
            queue: (0..runs.len()).collect(),
            runs,
            spec,
            registry,
            active: Vec::new(),
            waker,
            started: Instant::now(),
        })
    }

    pub fn spec(&self) -> &BatchSpec {
        &self.spec
    }

    /// True once every run is over.
    pub fn is_done(&self) -> bool {
        self.queue.is_empty() && self.active.is_empty()
    }

    /// Seconds since the batch was made.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Stop every active run (each keeps its record and resumes next time).
    pub fn stop(&mut self) {
        for a in &self.active {
            a.handle.send(crate::engine::events::RunCommand::Stop);
        }
        self.queue.clear();
    }

    /// Start runs while there is room, read what the active ones reported,
    /// and return the indices of runs whose state changed. Never blocks.
    pub fn poll(&mut self) -> Vec<usize> {
        let mut changed = Vec::new();
        while self.active.len() < self.spec.parallel_runs.max(1) {
            let Some(index) = self.queue.pop_front() else {
                break;
            };
            changed.push(index);
            let asked = Instant::now();
            let plan = self.plan(index).and_then(|plan| match plan {
                None => Ok(None),
                Some(p) => {
                    let p = p.with_consent_from(&self.spec.consents);
                    p.check_consent().map_err(|e| e.to_string())?;
                    Ok(Some(p))
                }
            });
            match plan {
                Ok(None) => self.runs[index].state = RunState::Skipped,
                Ok(Some(plan)) => match start(plan, self.spec.model.clone(), self.waker.clone()) {
                    Ok(handle) => {
                        self.runs[index].state = RunState::Running {
                            done: 0,
                            best: None,
                        };
                        self.active.push(Active {
                            index,
                            handle,
                            started: asked,
                        });
                    }
                    Err(e) => {
                        self.runs[index].state = RunState::Failed(format!("cannot start: {e}"));
                    }
                },
                Err(e) => self.runs[index].state = RunState::Failed(e),
            }
        }
        let mut ended = Vec::new();
        for (slot, a) in self.active.iter_mut().enumerate() {
            let run = &mut self.runs[a.index];
            while let Ok(ev) = a.handle.events.try_recv() {
                match ev {
                    RunEvent::IterationStarted { .. } if run.startup_secs.is_none() => {
                        run.startup_secs = Some(a.started.elapsed().as_secs_f64());
                    }
                    RunEvent::GenomeAdmitted {
                        best_score,
                        iterations_done,
                        ..
                    } => {
                        run.state = RunState::Running {
                            done: iterations_done,
                            best: best_score,
                        };
                        changed.push(a.index);
                    }
                    RunEvent::Finished(s) => {
                        run.wall_secs = Some(a.started.elapsed().as_secs_f64());
                        run.state = match s.status {
                            RunStatus::Failed(msg) => RunState::Failed(msg),
                            other => RunState::Finished(other.label()),
                        };
                        changed.push(a.index);
                        ended.push(slot);
                        break;
                    }
                    _ => {}
                }
            }
            if !run.state.is_over() && a.handle.is_finished() && a.handle.events.is_empty() {
                run.state = RunState::Failed("the run ended without a summary".to_owned());
                changed.push(a.index);
                ended.push(slot);
            }
        }
        for slot in ended.into_iter().rev() {
            let a = self.active.remove(slot);
            a.handle.join();
        }
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// The plan for run `index`: `None` when it finished before; a resume
    /// when its folder holds an unfinished run; else a new run.
    fn plan(&self, index: usize) -> Result<Option<RunPlan>, String> {
        let run = &self.runs[index];
        let dir = &run.dir;
        let n = self.spec.iterations;
        if let Some(held) = held_run(dir, run.seed, n)? {
            if held.done {
                return Ok(None);
            }
            return match RunPlan::resume(dir, Some(n), &self.registry) {
                Ok(p) => Ok(Some(p)),
                Err(LaunchError::NothingToDo { .. }) => Ok(None),
                Err(e) => Err(e.to_string()),
            };
        }
        let card = self
            .spec
            .cards
            .iter()
            .find(|c| c.card().name == run.card)
            .ok_or_else(|| format!("no card named {}", run.card))?
            .clone()
            .with_settings(|general, seed| {
                general.max_iterations = n;
                *seed = run.seed;
            })
            .map_err(|problems| {
                problems
                    .iter()
                    .map(|p| format!("{}: {}: {}", run.card, p.field, p.message))
                    .collect::<Vec<_>>()
                    .join("; ")
            })?;
        RunPlan::new(
            card,
            self.task(&run.task)?.clone(),
            Some(dir.clone()),
            &self.registry,
        )
        .map(Some)
        .map_err(|e| e.to_string())
    }
}

impl Batch {
    /// Refuse a baseline that is not one of the cards compared.
    pub fn check_baseline(&self, baseline: &str) -> Result<(), String> {
        if self.spec.cards.iter().any(|c| c.card().name == baseline) {
            Ok(())
        } else {
            Err(format!(
                "the baseline `{baseline}` is not one of the cards compared ({})",
                self.spec
                    .cards
                    .iter()
                    .map(|c| c.card().name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }

    /// Run `index` as its archive now holds it (`None`: no archive yet).
    pub fn read_result(
        &self,
        index: usize,
        target: Option<f64>,
    ) -> Result<Option<report::RunResult>, String> {
        let Some(run) = self.runs.get(index) else {
            return Ok(None);
        };
        if !run.dir.join("archive.sqlite").is_file() {
            return Ok(None);
        }
        let task = self.task(&run.task)?;
        report::read_run(
            &run.dir,
            run.seed,
            self.spec.iterations,
            target,
            &self.objectives(task),
            self.goal(task).as_ref(),
        )
        .map(Some)
        .map_err(|e| format!("{} seed {}: {e}", run.card, run.seed))
    }

    /// The objectives the batch is measured on: those the task's config
    /// names (`objectives`, `reference_point`: they replace a card's, as in
    /// a run), else those of the first card that names any
    /// (`general.objectives`); every run, of any card, gets its hypervolume
    /// over them. Empty: a single-objective batch.
    pub fn objectives(&self, task: &Task) -> Vec<crate::engine::genome::Objective> {
        let mut general = self
            .spec
            .cards
            .iter()
            .map(|c| &c.card().general)
            .find(|g| !g.objectives.is_empty())
            .cloned()
            .unwrap_or_default();
        // A config that cannot be read fails every run with its error.
        if let Ok(task) = crate::engine::task_settings::TaskObjectives::read(&task.config, "") {
            task.apply(&mut general);
        }
        general.objectives()
    }

    /// The task of the batch named `name`.
    fn task(&self, name: &str) -> Result<&Task, String> {
        self.spec
            .tasks
            .tasks()
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| format!("no task named {name} in the batch"))
    }

    /// What the runs of `task` aim at: its best known value (its config's
    /// `best_known`) and the batch's fraction of it.
    pub fn goal(&self, task: &Task) -> Option<value::Goal> {
        task.config.best_known().map(|b| value::Goal {
            record: b.into(),
            fraction: self.spec.fraction,
        })
    }

    /// The leaderboard of `task` from `results` (one per run, in the order
    /// of [`Self::runs`]; a `None` is left out of its card's numbers).
    fn task_board(
        &self,
        task: &Task,
        results: &[Option<report::RunResult>],
        baseline: &str,
        target: Option<f64>,
    ) -> report::Leaderboard {
        let n = self.spec.iterations;
        let goal = self.goal(task);
        let record = goal.as_ref().map(|g| g.record.clone());
        let mut cards = Vec::new();
        for card in &self.spec.cards {
            let name = &card.card().name;
            let runs = self
                .runs
                .iter()
                .zip(results)
                .filter(|(r, _)| &r.card == name && r.task == task.name)
                .filter_map(|(_, res)| res.clone())
                .collect();
            cards.push(report::card_result(name, runs, n, record.as_ref()));
        }
        report::compare_with_baseline(&mut cards, baseline, n);
        report::Leaderboard {
            task: task.name.clone(),
            task_dir: task.dir.clone(),
            model: self.spec.model.identity(),
            iterations: n,
            seeds: self.spec.seeds.clone(),
            baseline: baseline.to_owned(),
            target,
            bootstrap_seed: report::BOOTSTRAP_SEED,
            bootstrap_resamples: stats::BOOTSTRAP_RESAMPLES,
            batch_wall_secs: self.elapsed_secs(),
            max_startup_secs: self
                .runs
                .iter()
                .filter(|r| r.task == task.name)
                .filter_map(|r| r.startup_secs)
                .reduce(f64::max),
            objectives: self.objectives(task),
            fraction: record.as_ref().map(|_| self.spec.fraction),
            record,
            cards,
        }
    }

    /// The leaderboard of `results` (one per run, in the order of
    /// [`Self::runs`]; a `None` is left out of its card's numbers): the
    /// task's, or the suite's with every task's.
    pub fn board_from(
        &self,
        results: &[Option<report::RunResult>],
        baseline: &str,
        target: Option<f64>,
    ) -> Result<Board, String> {
        self.check_baseline(baseline)?;
        Ok(match &self.spec.tasks {
            BatchTasks::One(task) => {
                Board::Task(Box::new(self.task_board(task, results, baseline, target)))
            }
            BatchTasks::Suite(suite) => {
                let boards = suite
                    .tasks
                    .iter()
                    .map(|t| self.task_board(t, results, baseline, target))
                    .collect();
                let header = suite_report::SuiteHeader {
                    suite: suite.name.clone(),
                    suite_dir: suite.dir.clone(),
                    model: self.spec.model.identity(),
                    iterations: self.spec.iterations,
                    seeds: self.spec.seeds.clone(),
                    baseline: baseline.to_owned(),
                    target,
                    fraction: self.spec.fraction,
                    batch_wall_secs: self.elapsed_secs(),
                };
                let names: Vec<String> = self
                    .spec
                    .cards
                    .iter()
                    .map(|c| c.card().name.clone())
                    .collect();
                Board::Suite(Box::new(suite_report::build(header, &names, boards)))
            }
        })
    }

    /// The leaderboard of every run with a record, as the archives now hold
    /// them, leaving out the runs that failed in this invocation.
    pub fn board(&self, baseline: &str, target: Option<f64>) -> Result<Board, String> {
        let mut results = Vec::with_capacity(self.runs.len());
        for (i, run) in self.runs.iter().enumerate() {
            results.push(if matches!(run.state, RunState::Failed(_)) {
                None
            } else {
                self.read_result(i, target)?
            });
        }
        self.board_from(&results, baseline, target)
    }
}

/// Write a batch's leaderboard into its folder `out`: one task's files
/// ([`write_task_files`]); or a suite's `suite.md`, `suite.json` and plot
/// (`suite.svg`, `suite.png`), and each task's files in its folder. Returns
/// the paths written, the Markdown first.
pub fn write_files(out: &Path, board: &Board) -> Result<Vec<PathBuf>, String> {
    let sl = match board {
        Board::Task(lb) => return write_task_files(out, lb),
        Board::Suite(sl) => sl,
    };
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let md_path = out.join("suite.md");
    std::fs::write(&md_path, suite_report::markdown(sl)).map_err(|e| io(&md_path, e))?;
    let json_path = out.join(suite_report::SUITE_FILE);
    let json = serde_json::to_string_pretty(sl.as_ref())
        .map_err(|e| format!("{}: {e}", json_path.display()))?;
    std::fs::write(&json_path, json).map_err(|e| io(&json_path, e))?;
    let mut written = vec![md_path, json_path];
    written.extend(plot::write_suite_plots(out, sl)?);
    for lb in &sl.tasks {
        written.extend(write_task_files(&task_folder(out, &lb.task), lb)?);
    }
    Ok(written)
}

/// Read a batch folder's leaderboard: a suite's (`suite.json`) when the
/// folder has one, else one task's (`leaderboard.json`); or either file.
/// Returns the file read and what it holds.
pub fn read_board(path: &Path) -> Result<(PathBuf, Board), String> {
    let suite = if path.is_dir() {
        path.join(suite_report::SUITE_FILE).is_file()
    } else {
        path.file_name()
            .is_some_and(|n| n == suite_report::SUITE_FILE)
    };
    if suite {
        suite_report::read_suite(path).map(|(f, sl)| (f, Board::Suite(Box::new(sl))))
    } else {
        report::read_leaderboard(path).map(|(f, lb)| (f, Board::Task(Box::new(lb))))
    }
}

/// A hub README's "Results" section for `card` from a batch folder or its
/// leaderboard file (a task's or a suite's, as [`read_board`] reads it).
pub fn results_section(path: &Path, card: &str) -> Result<String, String> {
    match read_board(path)? {
        (_, Board::Task(_)) => report::results_section(path, card),
        (file, Board::Suite(sl)) => suite_report::results_section(&file, &sl, card),
    }
}

/// Write one task's `leaderboard.json`, `leaderboard.md` and the plot
/// (`leaderboard.svg`, `leaderboard.png`) into `out`; returns the paths
/// written.
pub fn write_task_files(out: &Path, lb: &report::Leaderboard) -> Result<Vec<PathBuf>, String> {
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let json_path = out.join(LEADERBOARD_FILE);
    let json =
        serde_json::to_string_pretty(lb).map_err(|e| format!("{}: {e}", json_path.display()))?;
    std::fs::write(&json_path, json).map_err(|e| io(&json_path, e))?;
    let md_path = out.join("leaderboard.md");
    std::fs::write(&md_path, report::markdown(lb)).map_err(|e| io(&md_path, e))?;
    let mut written = vec![md_path, json_path];
    written.extend(plot::write_plots(out, lb)?);
    Ok(written)
}
