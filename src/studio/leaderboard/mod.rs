//! The Leaderboard tab: several cards run on one task, or on every task of a
//! suite, with one model, the same seeds and the same iteration budget, as
//! `galapagos leaderboard` does; the table (for a suite: the cards' summary
//! and a card × task table) and the banded mean curves fill in as runs
//! finish, and a click on a run opens it in the Run tab.
//!
//! The batch runs on the engine's batch thread
//! ([`crate::engine::leaderboard::worker`]); this panel only drains its
//! events each frame (within a time budget) and draws what they said. The
//! batch folder is the command line's: started again on the same folder, a
//! batch resumes, and opening a folder shows its `leaderboard.json`.
//!
//! The form lives in the persisted [`LeaderboardForm`]; everything that
//! touches the app (starting, opening a run or a folder) is a [`UiCommand`].

mod form;
mod view;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::error::TryRecvError;

use crate::engine::card::ValidCard;
use crate::engine::leaderboard::report::{Leaderboard, RunResult};
use crate::engine::leaderboard::suite_report::SuiteLeaderboard;
use crate::engine::leaderboard::worker::{self, BatchCommand, BatchEvent, BatchHandle};
use crate::engine::leaderboard::{BatchRun, BatchSpec, Board, RunState};
use crate::engine::registry::Registry;
use crate::studio::jobs::read_card;
use crate::studio::state::LeaderboardForm;

pub use form::CardChoice;
pub use view::SuiteCell;

/// Time spent draining batch events per frame before yielding to drawing.
const DRAIN_BUDGET: Duration = Duration::from_millis(3);

/// How a built-in card is named in [`LeaderboardForm::cards`].
pub const BUILTIN_PREFIX: &str = "built-in:";

/// Load a card the form names (a file, or `built-in:NAME`) and check it.
pub fn load_card_ref(reference: &str, registry: &Registry) -> Result<ValidCard, String> {
    let card = match reference.strip_prefix(BUILTIN_PREFIX) {
        Some(name) => {
            let builtin = crate::engine::builtin::card(name)
                .ok_or_else(|| format!("there is no built-in card {name}"))?;
            builtin.valid(registry).map(ValidCard::into_card)
        }
        None => read_card(Path::new(reference), registry),
    }
    .map_err(|errors| {
        errors
            .0
            .first()
            .map_or_else(|| reference.to_owned(), ToString::to_string)
    })?;
    card.check(registry).map_err(|problems| {
        let first = problems
            .first()
            .map(|p| format!("{}: {}", p.field, p.message))
            .unwrap_or_default();
        format!("{reference}: {first}")
    })
}

/// One run as the panel lists it: from a live batch, or from a folder's
/// `leaderboard.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// The run's task, in a suite (`None`: a one-task batch).
    pub task: Option<String>,
    pub card: String,
    pub seed: u64,
    pub dir: PathBuf,
    /// What happened to it, in full ("waiting", "running 12/30",
    /// "budget reached (...)", "failed: ...").
    pub state: String,
    /// Iterations done, when known.
    pub done: Option<u64>,
    /// Best score so far, when known.
    pub best: Option<f64>,
    /// Nothing more will happen to it in this batch.
    pub over: bool,
    /// It has a record to open.
    pub recorded: bool,
    pub running: bool,
    pub failed: bool,
    /// It stopped at its token or cost cap.
    pub capped: bool,
}

impl RunRow {
    fn of_batch(r: &BatchRun, iterations: u64, suite: bool) -> Self {
        let (state, done, best) = match &r.state {
            RunState::Waiting => ("waiting".to_owned(), None, None),
            RunState::Running { done, best } => {
                (format!("running {done}/{iterations}"), Some(*done), *best)
            }
            RunState::Skipped => ("finished before".to_owned(), None, None),
            RunState::Finished(status) => (status.clone(), None, None),
            RunState::Failed(why) => (format!("failed: {why}"), None, None),
        };
        Self {
            task: suite.then(|| r.task.clone()),
            card: r.card.clone(),
            seed: r.seed,
            dir: r.dir.clone(),
            capped: state.starts_with("budget reached"),
            state,
            done,
            best,
            over: r.state.is_over(),
            recorded: !matches!(r.state, RunState::Waiting)
                || r.dir.join("archive.sqlite").is_file(),
            running: matches!(r.state, RunState::Running { .. }),
            failed: matches!(r.state, RunState::Failed(_)),
        }
    }

    /// The label a run is listed (and clicked) by: `CARD seed S`, and in a
    /// suite `TASK · CARD seed S`.
    pub fn label(&self) -> String {
        match &self.task {
            Some(task) => format!("{task} · {} seed {}", self.card, self.seed),
            None => format!("{} seed {}", self.card, self.seed),
        }
    }

    /// Its state in a word (the whole of it on hover).
    pub fn word(&self) -> &str {
        if self.failed {
            "failed"
        } else if self.capped {
            "capped"
        } else if self.running {
            "running"
        } else {
            self.state.split(" (").next().unwrap_or_default()
        }
    }
}

/// Where the shown leaderboard came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Nothing shown yet.
    Nothing,
    /// The batch started in this session (running or over).
    Batch,
    /// A batch folder's `leaderboard.json`.
    Folder(PathBuf),
}

/// The Leaderboard tab's runtime state (not persisted).
pub struct LeaderboardPanel {
    handle: Option<BatchHandle>,
    /// The number fields' text (the form keeps the parsed values).
    text: form::FormText,
    /// The runs shown, in the batch's order.
    runs: Vec<RunRow>,
    /// Iterations of the batch shown.
    iterations: u64,
    /// The batch shown runs a suite.
    suite_batch: bool,
    /// The leaderboard shown (a task's or a suite's), and the curves drawn
    /// from it.
    table: Option<Board>,
    curves: Vec<view::CardCurve>,
    /// What the card × task table of a suite shows in its cells.
    pub suite_cell: SuiteCell,
    source: Source,
    /// What the last batch ended with, and when the batch started.
    outcome: Option<Result<String, String>>,
    started: Option<Instant>,
    warnings: Vec<String>,
    /// Events applied in the last `logic` call.
    last_drained: usize,
    /// What the app handed over for the next draw.
    frame: Option<LeaderboardFrame>,
}

impl Default for LeaderboardPanel {
    fn default() -> Self {
        Self {
            handle: None,
            text: form::FormText::default(),
            runs: Vec::new(),
            iterations: 0,
            suite_batch: false,
            table: None,
            curves: Vec::new(),
            suite_cell: SuiteCell::default(),
            source: Source::Nothing,
            outcome: None,
            started: None,
            warnings: Vec::new(),
            last_drained: 0,
            frame: None,
        }
    }
}

impl LeaderboardPanel {
    /// True while a batch is running.
    pub fn is_running(&self) -> bool {
        self.handle.is_some()
    }

    /// The runs shown.
    pub fn runs(&self) -> &[RunRow] {
        &self.runs
    }

    /// The one-task leaderboard shown (live, or read from a folder).
    pub fn table(&self) -> Option<&Leaderboard> {
        match &self.table {
            Some(Board::Task(lb)) => Some(lb),
            _ => None,
        }
    }

    /// The suite leaderboard shown (live, or read from a folder).
    pub fn suite(&self) -> Option<&SuiteLeaderboard> {
        match &self.table {
            Some(Board::Suite(sl)) => Some(sl),
            _ => None,
        }
    }

    /// Where the shown leaderboard came from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// What the last batch ended with (`Err`: it failed or wrote nothing).
    pub fn outcome(&self) -> Option<&Result<String, String>> {
        self.outcome.as_ref()
    }

    /// Warnings the batch reported.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many events the last [`Self::logic`] call applied.
    pub fn last_drained(&self) -> usize {
        self.last_drained
    }

    /// Start the batch of `spec` (`baseline`: a card's name).
    pub fn start(
        &mut self,
        spec: BatchSpec,
        registry: Arc<Registry>,
        baseline: String,
        target: Option<f64>,
        ctx: &egui::Context,
    ) -> Result<(), String> {
        if self.handle.is_some() {
            return Err("a leaderboard batch is running; stop it first".to_owned());
        }
        let iterations = spec.iterations;
        let suite_batch = spec.tasks.is_suite();
        let waker_ctx = ctx.clone();
        let handle = worker::start(
            spec,
            registry,
            baseline,
            target,
            Some(Arc::new(move || waker_ctx.request_repaint())),
        )?;
        self.handle = Some(handle);
        self.iterations = iterations;
        self.suite_batch = suite_batch;
        self.runs.clear();
        self.set_table(None);
        self.source = Source::Batch;
        self.outcome = None;
        self.warnings.clear();
        self.started = Some(Instant::now());
        Ok(())
    }

    /// The batch folder of the leaderboard shown, once it is final.
    pub fn folder(&self) -> Option<PathBuf> {
        match &self.source {
            Source::Folder(dir) => Some(dir.clone()),
            Source::Batch if !self.is_running() && self.table.is_some() => {
                // RUN is OUT/runs/RUN, in a suite OUT/TASK/runs/RUN
                let up = if self.suite_batch { 3 } else { 2 };
                self.runs
                    .first()
                    .and_then(|r| r.dir.ancestors().nth(up))
                    .map(Path::to_path_buf)
            }
            Source::Batch | Source::Nothing => None,
        }
    }

    /// Read the form's fields again (it was changed from outside).
    pub fn resync_form(&mut self) {
        self.text.resync();
    }

    /// Stop the batch (its runs keep their records; Start resumes them).
    pub fn stop(&mut self) {
        if let Some(h) = &self.handle {
            h.send(BatchCommand::Stop);
        }
    }

    /// Show a batch folder's leaderboard (read off the UI thread).
    pub fn show_folder(&mut self, dir: PathBuf, board: Board) {
        let (iterations, suite, boards): (u64, bool, Vec<&Leaderboard>) = match &board {
            Board::Task(lb) => (lb.iterations, false, vec![lb.as_ref()]),
            Board::Suite(sl) => (sl.iterations, true, sl.tasks.iter().collect()),
        };
        self.iterations = iterations;
        self.suite_batch = suite;
        self.runs = boards
            .iter()
            .flat_map(|lb| lb.cards.iter().map(move |c| (&lb.task, c)))
            .flat_map(|(task, c)| {
                c.runs.iter().map(move |r| RunRow {
                    task: suite.then(|| task.clone()),
                    card: c.card.clone(),
                    seed: r.seed,
                    dir: r.dir.clone(),
                    state: r.status.clone(),
                    done: Some(r.iterations_done),
                    best: r.best,
                    over: true,
                    recorded: true,
                    running: false,
                    failed: false,
                    capped: r.capped,
                })
            })
            .collect();
        self.set_table(Some(board));
        self.source = Source::Folder(dir);
        self.outcome = None;
        self.warnings.clear();
        self.started = None;
    }

    fn set_table(&mut self, table: Option<Board>) {
        self.curves = table.as_ref().map(view::curves_of).unwrap_or_default();
        self.table = table;
        self.fill_rows();
    }

    /// The result of `row`'s run on the leaderboard shown.
    fn result_of<'a>(table: &'a Board, row: &RunRow) -> Option<&'a RunResult> {
        let lb: &Leaderboard = match (table, &row.task) {
            (Board::Task(lb), _) => lb,
            (Board::Suite(sl), Some(task)) => sl.tasks.iter().find(|t| &t.task == task)?,
            (Board::Suite(_), None) => return None,
        };
        lb.cards
            .iter()
            .filter(|c| c.card == row.card)
            .flat_map(|c| &c.runs)
            .find(|r| r.seed == row.seed)
    }

    /// The runs that are over get their best score and iterations from the
    /// leaderboard (what their records hold).
    fn fill_rows(&mut self) {
        let Some(table) = &self.table else {
            return;
        };
        for row in self.runs.iter_mut().filter(|r| !r.running) {
            if let Some(r) = Self::result_of(table, row) {
                row.best = r.best;
                row.done = Some(r.iterations_done);
                // a run skipped now says how it ended before
                if !row.capped && r.capped {
                    row.capped = true;
                    row.state = format!("{}: {}", row.state, r.status);
                }
            }
        }
    }

    /// Drain the batch's events within [`DRAIN_BUDGET`]; never blocks.
    pub fn logic(&mut self, ctx: &egui::Context) {
        self.last_drained = 0;
        let Some(mut handle) = self.handle.take() else {
            return;
        };
        let start = Instant::now();
        let mut ended = false;
        loop {
            let event = match handle.events.try_recv() {
                Ok(e) => e,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    ended = true;
                    if self.outcome.is_none() {
                        self.outcome = Some(Err("the batch ended without a result".to_owned()));
                    }
                    break;
                }
            };
            self.last_drained += 1;
            match event {
                BatchEvent::Started { runs } => {
                    self.runs = runs
                        .iter()
                        .map(|r| RunRow::of_batch(r, self.iterations, self.suite_batch))
                        .collect();
                }
                BatchEvent::Run { index, run } => {
                    if let Some(row) = self.runs.get_mut(index) {
                        *row = RunRow::of_batch(&run, self.iterations, self.suite_batch);
                    }
                    self.fill_rows();
                }
                BatchEvent::Table(board) => self.set_table(Some(board)),
                BatchEvent::Warning(w) => self.warnings.push(w),
                BatchEvent::Finished(outcome) => {
                    ended = true;
                    let failures = outcome.failures();
                    self.outcome = Some(match (&outcome.leaderboard, &outcome.written) {
                        (Ok(_), Ok(files)) => {
                            let folder = files
                                .first()
                                .and_then(|f| f.parent())
                                .map(|d| d.display().to_string())
                                .unwrap_or_default();
                            let stem = if self.suite_batch {
                                "suite"
                            } else {
                                "leaderboard"
                            };
                            let mut text = if outcome.stopped {
                                format!(
                                    "Stopped; the leaderboard of what is recorded is in {folder} (Start resumes the batch)"
                                )
                            } else {
                                format!("Done; wrote {stem}.md, .json, .svg and .png in {folder}")
                            };
                            if failures > 0 {
                                text.push_str(&format!(
                                    "; {failures} run(s) failed and are left out"
                                ));
                            }
                            Ok(text)
                        }
                        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
                    });
                    self.runs = outcome
                        .runs
                        .iter()
                        .map(|r| RunRow::of_batch(r, self.iterations, self.suite_batch))
                        .collect();
                    if let Ok(board) = outcome.leaderboard {
                        self.set_table(Some(board));
                    }
                    break;
                }
            }
            if start.elapsed() >= DRAIN_BUDGET {
                ctx.request_repaint();
                break;
            }
        }
        // The thread ends right after its last event: once it is over,
        // dropping the handle detaches it (never joined on the UI thread).
        if !ended {
            self.handle = Some(handle);
        }
    }

    /// Draw the tab.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        lctx: &LeaderboardCtx<'_>,
        form: &mut LeaderboardForm,
        commands: &mut crate::studio::command::Commands,
    ) {
        self.text.sync_from(form);
        form::form_ui(self, ui, lctx, form, commands);
        ui.separator();
        let mut cell = self.suite_cell;
        view::results_ui(self, ui, lctx, commands, &mut cell);
        self.suite_cell = cell;
    }

    /// Why Start is disabled, if it is.
    pub fn start_blocker(&self, form: &LeaderboardForm) -> Option<String> {
        if self.is_running() {
            return Some("A leaderboard batch is running".to_owned());
        }
        if let Some(e) = self.text.problem() {
            return Some(e);
        }
        if form.cards.is_empty() {
            return Some("Tick the cards to compare".to_owned());
        }
        if form.out.as_os_str().is_empty() {
            return Some("Name the batch folder".to_owned());
        }
        if form.scope == crate::studio::state::LeaderboardScope::Suite
            && form.suite.as_os_str().is_empty()
        {
            return Some("Name the suite: a folder of task folders, or math".to_owned());
        }
        None
    }
}

/// The Leaderboard tab.
impl crate::studio::panel::TabPanel for LeaderboardPanel {
    fn logic(&mut self, ctx: &egui::Context) {
        LeaderboardPanel::logic(self, ctx);
    }

    fn activity(&self) -> Option<&'static str> {
        self.is_running().then_some("running")
    }

    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        ctx: &mut crate::studio::panel::TabCtx<'_>,
        commands: &mut crate::studio::command::Commands,
    ) {
        let Some(frame) = self.frame.take() else {
            return;
        };
        let lctx = LeaderboardCtx {
            choices: &frame.choices,
            task_dir: ctx.folders.task,
            model: frame.model.clone(),
            error: ctx.card.palette.error,
            warn: ctx.card.palette.warn,
        };
        LeaderboardPanel::ui(self, ui, &lctx, ctx.leaderboard_form, commands);
    }
}

/// What the app works out for the Leaderboard tab in a frame where it is shown: the cards that can be ticked and
/// the model the runs will use (its description), or why there is none.
pub struct LeaderboardFrame {
    pub choices: Vec<CardChoice>,
    pub model: Result<String, String>,
}

impl LeaderboardPanel {
    /// Hand the panel what it shows in this frame (taken by its next draw).
    pub fn prepare(&mut self, frame: LeaderboardFrame) {
        self.frame = Some(frame);
    }
}

/// What the panel draws from in one frame.
pub struct LeaderboardCtx<'a> {
    /// The cards that can be ticked.
    pub choices: &'a [CardChoice],
    /// The studio's task folder (used when the form names none).
    pub task_dir: &'a Path,
    /// The model the runs will use (its description), or why there is none.
    pub model: Result<String, String>,
    pub error: egui::Color32,
    pub warn: egui::Color32,
}
