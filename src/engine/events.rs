//! The worker ↔ UI contract: [`RunCommand`]s go in, [`RunEvent`]s come out,
//! both on bounded channels. The engine never depends on the UI; a UI passes
//! a waker closure (e.g. `request_repaint`) that the sender calls after each
//! event.

use std::sync::Arc;

use crate::engine::genome::{Genome, GenomeId, TokenUsage};
use crate::engine::selection::PolicyStatus;

/// Commands a UI (or the CLI's signal handler) sends to a running scaffold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunCommand {
    /// Finish the iterations in flight, then wait without starting new ones.
    Pause,
    /// Continue after a pause.
    Resume,
    /// End the run: in-flight iterations are abandoned (their evaluator
    /// processes are killed) and the run finishes as `stopped`.
    Stop,
}

/// Severity of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

/// Static facts about a run, sent once at start.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    pub card_name: String,
    pub task_name: String,
    pub max_iterations: u64,
    /// Description of the model ("offline model (built-in, no network)").
    pub model: String,
    pub offline: bool,
    pub seed: u64,
    pub parallel: u32,
    /// Where the run folder is, when the run is recorded.
    pub run_dir: Option<std::path::PathBuf>,
    /// Set when candidates run without a sandbox (`evaluator.sandbox:
    /// none`): the warning, also logged at the start of every such run. A UI
    /// shows it as a badge.
    pub unsandboxed: Option<String>,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// The iteration budget was spent.
    Completed,
    /// A budget cap (cost or tokens) was reached.
    BudgetReached(String),
    /// Stopped by a command.
    Stopped,
    /// A fatal error (bad credentials, broken initial program evaluator...).
    Failed(String),
}

impl RunStatus {
    pub fn label(&self) -> String {
        match self {
            Self::Completed => "completed".to_owned(),
            Self::BudgetReached(why) => format!("budget reached ({why})"),
            Self::Stopped => "stopped".to_owned(),
            Self::Failed(why) => format!("failed: {why}"),
        }
    }
}

/// The final tally of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub status: RunStatus,
    /// Iterations completed (the initial program not counted).
    pub iterations: u64,
    pub genomes: u64,
    pub valid: u64,
    pub invalid: u64,
    pub best_id: Option<GenomeId>,
    pub best_score: Option<f64>,
    pub initial_score: Option<f64>,
    pub usage: TokenUsage,
    pub wall_secs: f64,
}

impl RunSummary {
    /// A summary with nothing counted yet.
    pub fn empty(status: RunStatus) -> Self {
        Self {
            status,
            iterations: 0,
            genomes: 0,
            valid: 0,
            invalid: 0,
            best_id: None,
            best_score: None,
            initial_score: None,
            usage: TokenUsage::default(),
            wall_secs: 0.0,
        }
    }
}

/// What a running scaffold reports, in order.
#[derive(Clone, Debug)]
pub enum RunEvent {
    /// The run started (first event).
    Started(RunInfo),
    /// An iteration was dispatched with this parent.
    IterationStarted { iteration: u64, parent_id: GenomeId },
    /// A genome (valid or not) was admitted to the population and recorded.
    GenomeAdmitted {
        genome: Arc<Genome>,
        /// Best valid genome after admission.
        best_id: Option<GenomeId>,
        best_score: Option<f64>,
        /// Iterations finished so far.
        iterations_done: u64,
        /// The selection policy's state after `observe`.
        policy: PolicyStatus,
        /// Ids in the population's active structure (the beam), if any.
        active: Vec<GenomeId>,
    },
    /// A log line.
    Log { level: LogLevel, message: String },
    /// What the memory holds changed (e.g. a new scratchpad).
    MemoryUpdated { notes: Vec<String> },
    /// The run is paused (no new iterations will start).
    Paused,
    /// The run resumed.
    Resumed,
    /// The run ended (last event).
    Finished(RunSummary),
}

/// Sending half of the event channel plus the UI's waker.
#[derive(Clone)]
pub struct EventSink {
    tx: tokio::sync::mpsc::Sender<RunEvent>,
    waker: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl EventSink {
    pub fn new(
        tx: tokio::sync::mpsc::Sender<RunEvent>,
        waker: Option<Arc<dyn Fn() + Send + Sync>>,
    ) -> Self {
        Self { tx, waker }
    }

    /// Send (waits when the channel is full: backpressure). A dropped
    /// receiver is ignored: the run goes on and is still recorded.
    pub async fn send(&self, event: RunEvent) {
        if self.tx.send(event).await.is_ok()
            && let Some(w) = &self.waker
        {
            w();
        }
    }

    pub async fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.send(RunEvent::Log {
            level,
            message: message.into(),
        })
        .await;
    }
}
