//! The worker ↔ UI contract: [`RunCommand`]s go in, [`RunEvent`]s come out,
//! both on bounded channels. The engine never depends on the UI; a UI passes
//! a waker closure (e.g. `request_repaint`) that the sender calls after each
//! event.
//!
//! # The contract
//!
//! - Two enums, each variant documented: `RunCommand` (`Pause`, `Resume`, `Stop`; steering: `Inject
//!   { parent, program }`, `SetNotes`, `Pin`, `Unpin`, `Reconfigure`) goes in; `RunEvent`
//!   (`Started`, `IterationStarted`, `GenomeAdmitted`, `Log`, `MemoryUpdated`, `Steered`, `Paused`,
//!   `Resumed`, `SettingsChanged`, `SettingsRefused`, `Finished`) comes out.
//! - Both channels are bounded (`COMMAND_CAPACITY`, `EVENT_CAPACITY`). A full event channel makes
//!   the run wait (backpressure) instead of growing memory; `RunHandle::send` never blocks (a full
//!   command queue drops the command and says so).
//! - `Started` is the first event and `Finished` (with the `RunSummary`) the last; a run that
//!   cannot start still sends both. A `GenomeAdmitted` is sent only once its genome is on disk, so
//!   whatever a user saw admitted survives a crash.
//! - The engine never depends on a UI: a UI passes a waker closure (the studio's `request_repaint`)
//!   that the sender calls after each event. The studio's UI thread only drains the channel, with a
//!   time budget per frame; it never waits for the run.

use std::sync::Arc;

use crate::engine::card::ValidCard;
use crate::engine::genome::{Genome, GenomeId, TokenUsage, Tree};
use crate::engine::model::LanguageModel;
use crate::engine::redact::Redactor;
use crate::engine::selection::PolicyStatus;
use crate::engine::steering::Steering;
use crate::engine::steering::changes::{Fixed, SettingsChange};

/// Commands a UI (or the CLI's signal handler) sends to a running scaffold.
#[derive(Clone, Debug)]
pub enum RunCommand {
    /// Finish the iterations in flight, then wait without starting new ones.
    Pause,
    /// Continue after a pause.
    Resume,
    /// While paused: run on with this card's settings. Taken only when every
    /// difference can change in flight ([`crate::engine::steering::changes::compare`]):
    /// the blocks whose parameters changed are rebuilt, the change is logged
    /// and recorded with the iteration it takes effect at
    /// ([`RunEvent::SettingsChanged`]); otherwise nothing changes and
    /// [`RunEvent::SettingsRefused`] names what cannot.
    Reconfigure(Box<NewSettings>),
    /// End the run: in-flight iterations are abandoned (their evaluator
    /// processes are killed) and the run finishes as `stopped`.
    Stop,
    /// A program written by a person, to evaluate as a child of `parent`
    /// and admit like any child (also while paused). Refused, with an error
    /// in the log, when the parent is unknown, the program is the parent's
    /// unchanged, it changes a file the task does not let change or it
    /// changes a marked file outside its EVOLVE-BLOCK markers, unless
    /// `outside_markers`: the person overrides that last rule, and the
    /// genome records it ([`crate::engine::genome::Genome::rule_override`]).
    Inject {
        parent: GenomeId,
        program: Tree,
        outside_markers: bool,
    },
    /// Notes added to every following prompt through the memory (empty
    /// text clears them).
    SetNotes(String),
    /// Show this valid genome as an inspiration in every following
    /// selection.
    Pin(GenomeId),
    /// Stop showing a pinned genome.
    Unpin(GenomeId),
}

/// New settings for a paused run ([`RunCommand::Reconfigure`]): the checked
/// card, fitted to the run's task, and the model built from its `llm`
/// section when that changed (the front end resolves models: its settings
/// file and flags; the run wraps it in its redactor).
#[derive(Clone)]
pub struct NewSettings {
    pub card: ValidCard,
    pub model: Option<Arc<dyn LanguageModel>>,
}

impl std::fmt::Debug for NewSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSettings")
            .field("card", &self.card.card().name)
            .field("model", &self.model.as_ref().map(|m| m.describe()))
            .finish()
    }
}

impl RunCommand {
    /// [`RunCommand::Reconfigure`] with `card` and, for a changed `llm`
    /// section, the model built from it.
    pub fn reconfigure(card: ValidCard, model: Option<Arc<dyn LanguageModel>>) -> Self {
        Self::Reconfigure(Box::new(NewSettings { card, model }))
    }
}

/// Severity of a log line.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

/// Static facts about a run, sent once at start.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The run and genome this run was forked from (its initial program is
    /// that genome's), when it is a fork.
    pub forked_from: Option<RunOrigin>,
    /// Where the card came from, the settings it lowers below the sandbox's
    /// defaults and the consent given for them, signed (see
    /// [`crate::engine::consent`]); kept in the run's record.
    pub clearance: Option<Box<crate::engine::consent::Clearance>>,
}

/// Where a forked run came from: the run folder and the genome whose program
/// is the fork's initial program. Kept in the fork's record (its archive's
/// metadata and `summary.json`), never in its card.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunOrigin {
    /// The parent run's folder (absolute).
    pub run: std::path::PathBuf,
    /// The genome of that run the fork starts from.
    pub genome: GenomeId,
}

impl std::fmt::Display for RunOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "genome #{} of {}", self.genome, self.run.display())
    }
}

impl RunInfo {
    /// Takes the run's secrets out of every text field.
    pub fn redact(&mut self, r: &Redactor) {
        r.string(&mut self.card_name);
        r.string(&mut self.task_name);
        r.string(&mut self.model);
        if let Some(warning) = &mut self.unsandboxed {
            r.string(warning);
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The iteration budget was spent.
    Completed,
    /// A budget cap (cost or tokens) was reached.
    BudgetReached(String),
    /// A rule of `general.stop` ended the run before its budget (target
    /// score, patience, cost or wall-time cap): why.
    EarlyStop(String),
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
            Self::EarlyStop(why) => format!("stopped early ({why})"),
            Self::Stopped => "stopped".to_owned(),
            Self::Failed(why) => format!("failed: {why}"),
        }
    }

    /// The status a record's label names ([`Self::label`] read back); a
    /// record that never ended (`running`, or no label) is an interrupted
    /// run.
    pub fn from_label(label: &str) -> Self {
        if label == "completed" {
            Self::Completed
        } else if label == "stopped" {
            Self::Stopped
        } else if let Some(why) = label
            .strip_prefix("budget reached (")
            .and_then(|w| w.strip_suffix(')'))
        {
            Self::BudgetReached(why.to_owned())
        } else if let Some(why) = label
            .strip_prefix("stopped early (")
            .and_then(|w| w.strip_suffix(')'))
        {
            Self::EarlyStop(why.to_owned())
        } else if let Some(why) = label.strip_prefix("failed: ") {
            Self::Failed(why.to_owned())
        } else if label == "running" || label.is_empty() {
            Self::Failed("interrupted (the record has no end)".to_owned())
        } else {
            Self::Failed(label.to_owned())
        }
    }

    /// Takes the run's secrets out of the reason, if any.
    pub fn redact(&mut self, r: &Redactor) {
        match self {
            Self::BudgetReached(why) | Self::EarlyStop(why) | Self::Failed(why) => {
                r.string(why);
            }
            Self::Completed | Self::Stopped => {}
        }
    }
}

/// The final tally of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSummary {
    pub status: RunStatus,
    /// Iterations completed (the initial program not counted).
    pub iterations: u64,
    pub genomes: u64,
    pub valid: u64,
    pub invalid: u64,
    /// Invalid genomes the novelty gate rejected before evaluation, over the
    /// whole run (its resumptions included).
    pub rejected: u64,
    pub best_id: Option<GenomeId>,
    pub best_score: Option<f64>,
    pub initial_score: Option<f64>,
    pub usage: TokenUsage,
    /// This invocation's wall time.
    pub wall_secs: f64,
    /// The run's wall time over every invocation (a resumed run adds its
    /// earlier ones, as recorded in its archive); what `general.stop`'s
    /// wall-time cap counts.
    pub run_wall_secs: f64,
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
            rejected: 0,
            best_id: None,
            best_score: None,
            initial_score: None,
            usage: TokenUsage::default(),
            wall_secs: 0.0,
            run_wall_secs: 0.0,
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
    /// The person's steering in force (notes, pins and their history): sent
    /// after `Started` when a resumed run has some, and after every change.
    Steered(Steering),
    /// The run is paused (no new iterations will start).
    Paused,
    /// The run resumed.
    Resumed,
    /// New settings took effect (after [`RunCommand::Reconfigure`]).
    SettingsChanged(SettingsChange),
    /// New settings were refused: these cannot change in flight (or the run
    /// was not paused); the run goes on as it was.
    SettingsRefused(Vec<Fixed>),
    /// The run ended (last event).
    Finished(RunSummary),
}

impl RunEvent {
    /// This event with the run's secrets taken out of every text it carries.
    #[must_use]
    pub fn redacted(self, r: &Redactor) -> Self {
        match self {
            Self::Started(mut info) => {
                info.redact(r);
                Self::Started(info)
            }
            Self::GenomeAdmitted {
                genome,
                best_id,
                best_score,
                iterations_done,
                mut policy,
                active,
            } => {
                for (label, value) in &mut policy.fields {
                    r.string(label);
                    r.string(value);
                }
                Self::GenomeAdmitted {
                    genome: r.genome(&genome).map_or(genome, Arc::new),
                    best_id,
                    best_score,
                    iterations_done,
                    policy,
                    active,
                }
            }
            Self::Log { level, mut message } => {
                r.string(&mut message);
                Self::Log { level, message }
            }
            Self::MemoryUpdated { mut notes } => {
                for note in &mut notes {
                    r.string(note);
                }
                Self::MemoryUpdated { notes }
            }
            Self::Steered(mut steering) => {
                r.string(&mut steering.notes);
                for changed in &mut steering.history {
                    if let crate::engine::steering::Change::Notes { text } = &mut changed.change {
                        r.string(text);
                    }
                }
                Self::Steered(steering)
            }
            Self::Finished(mut summary) => {
                summary.status.redact(r);
                Self::Finished(summary)
            }
            Self::SettingsChanged(mut change) => {
                for c in &mut change.changes {
                    r.string(&mut c.from);
                    r.string(&mut c.to);
                }
                Self::SettingsChanged(change)
            }
            Self::SettingsRefused(mut fixed) => {
                for f in &mut fixed {
                    r.string(&mut f.what);
                    r.string(&mut f.why);
                }
                Self::SettingsRefused(fixed)
            }
            other @ (Self::IterationStarted { .. } | Self::Paused | Self::Resumed) => other,
        }
    }
}

/// Sending half of the event channel plus the UI's waker. With a redactor,
/// every event is sent redacted (the reporting boundary of the run's
/// redactor: the CLI's output and the studio see only what it let through).
#[derive(Clone)]
pub struct EventSink {
    tx: tokio::sync::mpsc::Sender<RunEvent>,
    waker: Option<Arc<dyn Fn() + Send + Sync>>,
    redactor: Option<Arc<Redactor>>,
}

impl EventSink {
    pub fn new(
        tx: tokio::sync::mpsc::Sender<RunEvent>,
        waker: Option<Arc<dyn Fn() + Send + Sync>>,
    ) -> Self {
        Self {
            tx,
            waker,
            redactor: None,
        }
    }

    /// This sink, sending every event through `redactor`.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = (!redactor.is_empty()).then_some(redactor);
        self
    }

    /// Send (waits when the channel is full: backpressure). A dropped
    /// receiver is ignored: the run goes on and is still recorded.
    pub async fn send(&self, event: RunEvent) {
        let event = match &self.redactor {
            Some(r) => event.redacted(r),
            None => event,
        };
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
