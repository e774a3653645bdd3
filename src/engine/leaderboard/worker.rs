//! A batch driven on a thread of its own: the contract the command line and
//! the studio share.
//!
//! [`start`] lays the batch out, starts a thread named `galapagos-batch` and
//! returns a [`BatchHandle`]: [`BatchCommand`]s go in, [`BatchEvent`]s come
//! out, both over bounded channels (a full event channel makes the batch wait
//! rather than grow memory; [`BatchHandle::send`] never blocks). The thread
//! sleeps until one of its runs reports or a command arrives, so it costs
//! nothing between events.
//!
//! The events, in order: `Started` (the runs as laid out), then `Run` for
//! every change of a run's state (progress at most every
//! [`PROGRESS_EVERY`] per run; a run's start and end at once) and, after
//! each run that ends, `Table`: the leaderboard of the runs over so far (a
//! suite's, whose statistics cover every task, at most every
//! [`SUITE_TABLE_EVERY`], and not once the last run is over). Last
//! comes `Finished`: the leaderboard of every recorded run and the files
//! written into the batch folder (also after a stop).
//!
//! The command line prints the events; the studio's Leaderboard tab (`studio/leaderboard/`) drains
//! them each frame within a time budget, like the run view. A run's numbers are read from its
//! archive once, when it ends, so the table costs one read per run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::report::RunResult;
use super::{Batch, BatchRun, BatchSpec, Board, RunState, write_files};
use crate::engine::registry::Registry;
use crate::engine::run_thread::Waker;

/// Capacity of the event channel.
pub const EVENT_CAPACITY: usize = 1024;
/// Capacity of the command channel.
pub const COMMAND_CAPACITY: usize = 8;
/// A running run's progress is reported at most this often.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// A suite's table (every task's statistics) is sent at most this often;
/// a task's after every run that ends.
pub const SUITE_TABLE_EVERY: Duration = Duration::from_secs(2);
/// The longest the thread sleeps without a run reporting (commands wake it
/// too; this is the backstop).
const IDLE_WAKE: Duration = Duration::from_millis(50);

/// What a front end asks of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchCommand {
    /// Stop every active run (each keeps its record and resumes next time)
    /// and start no more; the leaderboard of what is recorded is still
    /// written.
    Stop,
}

/// The end of a batch.
#[derive(Clone, Debug)]
pub struct BatchOutcome {
    /// Every run as it ended.
    pub runs: Vec<BatchRun>,
    /// The leaderboard of every run with a record (runs that failed now are
    /// left out): the task's or the suite's; or why there is none.
    pub leaderboard: Result<Board, String>,
    /// The files written into the batch folder, or why they were not.
    pub written: Result<Vec<PathBuf>, String>,
    /// The batch was stopped before every run was over.
    pub stopped: bool,
}

impl BatchOutcome {
    /// How many runs failed.
    pub fn failures(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| matches!(r.state, RunState::Failed(_)))
            .count()
    }
}

/// What a batch reports.
#[derive(Clone, Debug)]
pub enum BatchEvent {
    /// First: every run of the batch as laid out (all `Waiting`).
    Started { runs: Vec<BatchRun> },
    /// Run `index` changed (started, progressed, was skipped, ended).
    Run { index: usize, run: BatchRun },
    /// The leaderboard of the runs over so far (skipped or finished now),
    /// sent after each run that ends.
    Table(Board),
    /// Something the user should know that did not stop the batch (a run's
    /// record that could not be read for the table).
    Warning(String),
    /// Last.
    Finished(Box<BatchOutcome>),
}

/// A batch being run on its thread. Dropping it stops the batch.
pub struct BatchHandle {
    commands: mpsc::Sender<BatchCommand>,
    /// What the batch reports.
    pub events: mpsc::Receiver<BatchEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BatchHandle {
    /// Ask the batch to do something; never blocks (a full queue drops the
    /// command and returns false).
    pub fn send(&self, cmd: BatchCommand) -> bool {
        let sent = self.commands.try_send(cmd).is_ok();
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        sent
    }

    /// True once the batch thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread
            .as_ref()
            .is_none_or(std::thread::JoinHandle::is_finished)
    }

    /// Wait for the batch thread to end.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
    }
}

impl Drop for BatchHandle {
    fn drop(&mut self) {
        // Stop the batch; its thread ends on its own (a UI is never blocked here).
        self.commands.try_send(BatchCommand::Stop).ok();
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }
}

/// Lay out the batch of `spec` (nothing is written yet), check `baseline`,
/// and run it on a thread named `galapagos-batch`; `waker` is called after
/// every event. Errors name what is wrong with the spec.
pub fn start(
    spec: BatchSpec,
    registry: Arc<Registry>,
    baseline: String,
    target: Option<f64>,
    waker: Option<Waker>,
) -> Result<BatchHandle, String> {
    let mut batch = Batch::new(spec, registry, None)?;
    batch.check_baseline(&baseline)?;
    let (cmd_tx, cmd_rx) = mpsc::channel(COMMAND_CAPACITY);
    let (ev_tx, ev_rx) = mpsc::channel(EVENT_CAPACITY);
    let thread = std::thread::Builder::new()
        .name("galapagos-batch".to_owned())
        .spawn(move || {
            // Every run wakes this thread when it reports.
            let me = std::thread::current();
            batch.waker = Some(Arc::new(move || me.unpark()));
            let sink = Sink {
                events: ev_tx,
                waker,
            };
            drive(&mut batch, &baseline, target, &sink, cmd_rx);
        })
        .map_err(|e| format!("cannot start the batch thread: {e}"))?;
    Ok(BatchHandle {
        commands: cmd_tx,
        events: ev_rx,
        thread: Some(thread),
    })
}

struct Sink {
    events: mpsc::Sender<BatchEvent>,
    waker: Option<Waker>,
}

impl Sink {
    /// Send an event (waiting while the channel is full); false once nobody
    /// listens.
    fn send(&self, event: BatchEvent) -> bool {
        let sent = self.events.blocking_send(event).is_ok();
        if let Some(w) = &self.waker {
            w();
        }
        sent
    }
}

fn drive(
    batch: &mut Batch,
    baseline: &str,
    target: Option<f64>,
    sink: &Sink,
    mut commands: mpsc::Receiver<BatchCommand>,
) {
    let n = batch.runs.len();
    let mut stopping = !sink.send(BatchEvent::Started {
        runs: batch.runs.clone(),
    });
    if stopping {
        batch.stop();
    }
    // Results of the runs that are over, read once each.
    let mut results: Vec<Option<RunResult>> = vec![None; n];
    let mut last_progress: Vec<Option<Instant>> = vec![None; n];
    let mut pending_progress = vec![false; n];
    let suite = batch.spec.tasks.is_suite();
    let mut table_due = false;
    let mut last_table: Option<Instant> = None;
    loop {
        loop {
            match commands.try_recv() {
                Ok(BatchCommand::Stop) => {
                    if !stopping {
                        stopping = true;
                        batch.stop();
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    // the handle is gone: nobody will read the outcome
                    if !stopping {
                        stopping = true;
                        batch.stop();
                    }
                    break;
                }
            }
        }
        let mut ended = false;
        for i in batch.poll() {
            match &batch.runs[i].state {
                RunState::Running { .. } => pending_progress[i] = true,
                state => {
                    let over = state.is_over();
                    let counts = matches!(state, RunState::Skipped | RunState::Finished(_));
                    pending_progress[i] = false;
                    last_progress[i] = Some(Instant::now());
                    let alive = sink.send(BatchEvent::Run {
                        index: i,
                        run: batch.runs[i].clone(),
                    });
                    if !alive && !stopping {
                        stopping = true;
                        batch.stop();
                    }
                    if over && counts {
                        match batch.read_result(i, target) {
                            Ok(r) => results[i] = r,
                            Err(e) => {
                                sink.send(BatchEvent::Warning(format!(
                                    "{e} (left out of the leaderboard)"
                                )));
                            }
                        }
                    }
                    ended |= over;
                }
            }
        }
        for i in 0..n {
            let due = last_progress[i].is_none_or(|t| t.elapsed() >= PROGRESS_EVERY);
            if pending_progress[i] && due && matches!(batch.runs[i].state, RunState::Running { .. })
            {
                pending_progress[i] = false;
                last_progress[i] = Some(Instant::now());
                sink.send(BatchEvent::Run {
                    index: i,
                    run: batch.runs[i].clone(),
                });
            }
        }
        table_due |= ended;
        let table_time = !suite || last_table.is_none_or(|t| t.elapsed() >= SUITE_TABLE_EVERY);
        if table_due && table_time && !(suite && batch.is_done()) {
            table_due = false;
            last_table = Some(Instant::now());
            match batch.board_from(&results, baseline, target) {
                Ok(board) => sink.send(BatchEvent::Table(board)),
                Err(e) => sink.send(BatchEvent::Warning(e)),
            };
        }
        if batch.is_done() {
            break;
        }
        std::thread::park_timeout(IDLE_WAKE);
    }
    // The runs not over now (stopped before they started) keep what an
    // earlier invocation recorded: read them too.
    let mut warnings = Vec::new();
    for (i, run) in batch.runs.iter().enumerate() {
        if results[i].is_none() && !matches!(run.state, RunState::Failed(_)) {
            match batch.read_result(i, target) {
                Ok(r) => results[i] = r,
                Err(e) => warnings.push(format!("{e} (left out of the leaderboard)")),
            }
        }
    }
    for w in warnings {
        sink.send(BatchEvent::Warning(w));
    }
    let leaderboard = batch.board_from(&results, baseline, target);
    let written = match &leaderboard {
        Ok(lb) => write_files(&batch.spec.out, lb),
        Err(e) => Err(e.clone()),
    };
    sink.send(BatchEvent::Finished(Box::new(BatchOutcome {
        runs: batch.runs.clone(),
        leaderboard,
        written,
        stopped: stopping,
    })));
}
