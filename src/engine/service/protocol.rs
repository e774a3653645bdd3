//! The run service's messages (serde types, one JSON object per line) and
//! the bounded line reader both ends use. See the module documentation of
//! [`crate::engine::service`] for the conversation.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use crate::engine::events::{LogLevel, RunEvent, RunInfo, RunSummary};
use crate::engine::genome::{Genome, GenomeId, Tree};
use crate::engine::selection::PolicyStatus;
use crate::engine::steering::Steering;
use crate::engine::steering::changes::{Fixed, SettingsChange};

/// The protocol's version: a client and a server of different versions
/// refuse each other in the handshake, each saying both versions.
pub const VERSION: u32 = 1;

/// The longest line a server reads from a client (a person's program
/// folder is the largest request).
pub const MAX_REQUEST_LINE: usize = 64 << 20;
/// The longest line a client reads from a server (a genome's body, a chunk
/// of history).
pub const MAX_MESSAGE_LINE: usize = 256 << 20;
/// Genomes per [`Message::History`] chunk.
pub const HISTORY_CHUNK: usize = 2000;
/// Lines of the run's log a snapshot carries (the newest).
pub const SNAPSHOT_LOG_LINES: usize = 500;
/// Genome records per [`Message::Export`] chunk.
pub const EXPORT_CHUNK: usize = 200;

/// What a client sends: a request and the number its answer will carry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub request: RequestBody,
}

/// The requests.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestBody {
    /// The first line of every connection: the client's protocol version;
    /// `read_only` makes the connection a watcher's (every command
    /// refused). Answered with [`Message::Welcome`] or an error.
    Hello {
        version: u32,
        #[serde(default)]
        read_only: bool,
        /// The client's name and version, for the server's log.
        #[serde(default)]
        client: String,
    },
    /// Where the run stands ([`Reply::Status`]).
    Status,
    /// The card the run goes on with, as YAML ([`Reply::Card`]).
    Card,
    /// The run's tally: the final one of a finished run, the one so far of
    /// a live run ([`Reply::Summary`]).
    Summary,
    /// Stream the run: a snapshot (unless `after` names a point the server
    /// can replay from), then every event as it happens, until the run
    /// ends ([`Message::Ended`]). `history: false` leaves the genomes out
    /// of the snapshot (a client that only steers or watches the state).
    Subscribe {
        #[serde(default)]
        after: Option<Cursor>,
        #[serde(default = "yes")]
        history: bool,
    },
    /// One genome with everything it holds ([`Reply::Genome`]).
    Genome { genome: GenomeId },
    /// A genome's program as files named as the task names them, and the
    /// run's initial program likewise (what `apply` writes and compares
    /// with): genome `genome`, or the run's best ([`Reply::Program`]).
    Program {
        #[serde(default)]
        genome: Option<GenomeId>,
    },
    /// Every genome as the JSON lines `export-run --jsonl` writes, in
    /// chunks ([`Message::Export`]).
    Export,
    /// Change the live run ([`Reply::Done`] once the run has it queued;
    /// what it made of it comes as events).
    Command { command: Command },
    /// The runs under the served folder ([`Reply::Runs`]).
    Runs,
}

fn yes() -> bool {
    true
}

/// What a client may ask a live run to do: the studio's and the command
/// line's [`crate::engine::events::RunCommand`]s, in a form that travels.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Pause,
    Resume,
    Stop,
    /// Notes for every following prompt (empty: none).
    Notes {
        text: String,
    },
    Pin {
        genome: GenomeId,
    },
    Unpin {
        genome: GenomeId,
    },
    /// A person's program, to evaluate as a child of `parent`
    /// (`outside_markers`: the person overrides the task's edit rule, as
    /// `inject --outside-markers` and the studio's editor do).
    Inject {
        parent: GenomeId,
        program: Tree,
        #[serde(default)]
        outside_markers: bool,
    },
    /// While paused: go on with this card's settings (YAML). The server
    /// checks it with its components, fits it to the run's task and builds
    /// the model from its own settings when `llm` changed, as the studio
    /// does; the run takes it or refuses it as it would the studio's.
    Settings {
        card_yaml: String,
    },
}

/// Where a client is in a server's event stream: the server `instance`
/// (one live run process) and the next event it wants. `genomes`: the
/// genomes it holds (ids below it), which a replay leaves out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub instance: String,
    pub next: u64,
    pub genomes: u64,
}

/// What a server sends: answers, and the stream of a subscription.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Message {
    /// The answer to `Hello`.
    Welcome(Welcome),
    /// The answer to request `id`.
    Reply { id: u64, reply: Box<Reply> },
    /// Request `id` failed (`None`: a line that was not a request).
    Error { id: Option<u64>, message: String },
    /// Stream: forget what you hold of this run; a snapshot follows
    /// (`Snapshot`, `History` chunks, `Synced`).
    Reset { instance: String, live: bool },
    /// Stream: the run's facts and state.
    Snapshot(Box<Snapshot>),
    /// Stream: genomes of the snapshot, in id order, without their bodies.
    History { genomes: Vec<Genome> },
    /// Stream: the snapshot is complete; events continue from here.
    Synced { cursor: Cursor },
    /// Stream: an event of the live run, number `seq` of its instance.
    Event { seq: u64, event: Box<WireEvent> },
    /// Stream: no more events (the run ended, or the record is not live).
    Ended { status: String },
    /// A chunk of `Export`'s lines; `done` on the last.
    Export {
        id: u64,
        lines: Vec<String>,
        done: bool,
    },
}

/// What the server is and serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    pub version: u32,
    /// `galapagos X.Y.Z`.
    pub server: String,
    /// The served path, as the server has it.
    pub path: String,
    /// A run folder (or else a folder of runs).
    pub run: bool,
    /// The run is running and this connection reaches it.
    pub live: bool,
    /// Commands are refused on this connection.
    pub read_only: bool,
}

/// Answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Status(RunRow),
    Card {
        yaml: String,
    },
    Summary(Option<RunSummary>),
    Genome(Box<Genome>),
    Program {
        genome: GenomeId,
        program: Tree,
        initial: Tree,
    },
    Runs(Vec<RunRow>),
    /// A command was queued.
    Done,
    /// A subscription starts: `resumed` when the stream goes on from the
    /// client's cursor (no snapshot), at event `next`.
    Subscribed {
        resumed: bool,
        next: u64,
    },
}

/// One run as a list shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The run folder, as the server has it.
    pub dir: String,
    pub card: String,
    pub task: String,
    /// `running`, `paused`, `interrupted`, or how it ended (`completed`,
    /// `stopped`, `failed: …`, …).
    pub state: String,
    /// The run answers on its service socket.
    pub live: bool,
    pub iterations: u64,
    pub max_iterations: u64,
    pub genomes: u64,
    pub best_score: Option<f64>,
    pub cost_usd: Option<f64>,
    pub started_unix: u64,
}

/// A run's facts and the state its events built, at one point of its
/// stream.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub info: Option<RunInfo>,
    pub card_yaml: String,
    pub state: RunState,
    /// How long the run has been going, in seconds: a live run's process
    /// since it started, a recorded run's wall time when it ended (a
    /// client's elapsed time and ETA start from it, not from connecting).
    #[serde(default)]
    pub running_secs: Option<f64>,
}

/// What a run's events (or its record) say of it now.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunState {
    pub iterations_done: u64,
    pub iterations_started: u64,
    pub paused: bool,
    pub steering: Steering,
    pub policy: PolicyStatus,
    pub active: Vec<GenomeId>,
    pub memory_notes: Vec<String>,
    pub settings_changes: Vec<SettingsChange>,
    pub refused: Option<Vec<Fixed>>,
    /// The newest lines of the log, oldest first.
    pub logs: Vec<(LogLevel, String)>,
    /// The run's tally once it ended.
    pub summary: Option<RunSummary>,
}

impl RunState {
    /// Take in one event of the run.
    pub fn apply(&mut self, event: &RunEvent) {
        match event {
            RunEvent::Started(_) | RunEvent::GenomeAdmitted { .. } => {}
            RunEvent::IterationStarted { iteration, .. } => {
                self.iterations_started = self.iterations_started.max(*iteration);
            }
            RunEvent::Log { level, message } => {
                if self.logs.len() >= SNAPSHOT_LOG_LINES {
                    self.logs.remove(0);
                }
                self.logs.push((*level, message.clone()));
            }
            RunEvent::MemoryUpdated { notes } => self.memory_notes.clone_from(notes),
            RunEvent::Steered(s) => self.steering = s.clone(),
            RunEvent::Paused => self.paused = true,
            RunEvent::Resumed => self.paused = false,
            RunEvent::SettingsChanged(c) => {
                self.refused = None;
                self.settings_changes.push(c.clone());
            }
            RunEvent::SettingsRefused(f) => self.refused = Some(f.clone()),
            RunEvent::Finished(s) => {
                self.paused = false;
                self.summary = Some(s.clone());
            }
        }
        if let RunEvent::GenomeAdmitted {
            iterations_done,
            policy,
            active,
            ..
        } = event
        {
            self.iterations_done = *iterations_done;
            self.policy = policy.clone();
            self.active.clone_from(active);
        }
    }
}

/// A [`RunEvent`] as it travels: a genome without its bodies
/// ([`head`]), fetched one at a time with [`RequestBody::Genome`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireEvent {
    Started(RunInfo),
    IterationStarted {
        iteration: u64,
        parent_id: GenomeId,
    },
    GenomeAdmitted {
        genome: Box<Genome>,
        best_id: Option<GenomeId>,
        best_score: Option<f64>,
        iterations_done: u64,
        policy: PolicyStatus,
        active: Vec<GenomeId>,
    },
    Log {
        level: LogLevel,
        message: String,
    },
    MemoryUpdated {
        notes: Vec<String>,
    },
    Steered(Steering),
    Paused,
    Resumed,
    SettingsChanged(SettingsChange),
    SettingsRefused(Vec<Fixed>),
    Finished(RunSummary),
}

impl WireEvent {
    /// `event` as it travels.
    pub fn of(event: &RunEvent) -> Self {
        match event {
            RunEvent::Started(info) => Self::Started(info.clone()),
            RunEvent::IterationStarted {
                iteration,
                parent_id,
            } => Self::IterationStarted {
                iteration: *iteration,
                parent_id: *parent_id,
            },
            RunEvent::GenomeAdmitted {
                genome,
                best_id,
                best_score,
                iterations_done,
                policy,
                active,
            } => Self::GenomeAdmitted {
                genome: Box::new(head(genome)),
                best_id: *best_id,
                best_score: *best_score,
                iterations_done: *iterations_done,
                policy: policy.clone(),
                active: active.clone(),
            },
            RunEvent::Log { level, message } => Self::Log {
                level: *level,
                message: message.clone(),
            },
            RunEvent::MemoryUpdated { notes } => Self::MemoryUpdated {
                notes: notes.clone(),
            },
            RunEvent::Steered(s) => Self::Steered(s.clone()),
            RunEvent::Paused => Self::Paused,
            RunEvent::Resumed => Self::Resumed,
            RunEvent::SettingsChanged(c) => Self::SettingsChanged(c.clone()),
            RunEvent::SettingsRefused(f) => Self::SettingsRefused(f.clone()),
            RunEvent::Finished(s) => Self::Finished(s.clone()),
        }
    }

    /// The event again, its genome (if any) a head.
    pub fn into_event(self) -> RunEvent {
        match self {
            Self::Started(info) => RunEvent::Started(info),
            Self::IterationStarted {
                iteration,
                parent_id,
            } => RunEvent::IterationStarted {
                iteration,
                parent_id,
            },
            Self::GenomeAdmitted {
                genome,
                best_id,
                best_score,
                iterations_done,
                policy,
                active,
            } => RunEvent::GenomeAdmitted {
                genome: Arc::new(*genome),
                best_id,
                best_score,
                iterations_done,
                policy,
                active,
            },
            Self::Log { level, message } => RunEvent::Log { level, message },
            Self::MemoryUpdated { notes } => RunEvent::MemoryUpdated { notes },
            Self::Steered(s) => RunEvent::Steered(s),
            Self::Paused => RunEvent::Paused,
            Self::Resumed => RunEvent::Resumed,
            Self::SettingsChanged(c) => RunEvent::SettingsChanged(c),
            Self::SettingsRefused(f) => RunEvent::SettingsRefused(f),
            Self::Finished(s) => RunEvent::Finished(s),
        }
    }

    /// The id of the genome it admits, if it admits one.
    pub fn genome_id(&self) -> Option<GenomeId> {
        match self {
            Self::GenomeAdmitted { genome, .. } => Some(genome.id),
            _ => None,
        }
    }
}

/// A genome without its bodies, as [`crate::engine::archive::Archive::genome_heads_json`]
/// reads it: no program (empty text), diff, artifacts, prompt, reply,
/// private metrics or agent transcript; its error cut short.
pub fn head(g: &Genome) -> Genome {
    let error = g.error.as_ref().map(|e| {
        e.chars()
            .take(crate::engine::archive::HEAD_ERROR_CHARS)
            .collect()
    });
    Genome {
        id: g.id,
        parent_id: g.parent_id,
        inspiration_ids: g.inspiration_ids.clone(),
        iteration: g.iteration,
        attempt: g.attempt,
        valid: g.valid,
        scores: g.scores.clone(),
        content: Tree::single(crate::engine::tree::SINGLE_FILE, ""),
        diff: None,
        error,
        artifacts: Default::default(),
        metadata: g.metadata.clone(),
        prompt: None,
        response: None,
        response_bytes: g.response_bytes,
        timings: g.timings,
        usage: g.usage,
        fitness_metric: g.fitness_metric.clone(),
        private: Default::default(),
        confirmation: g.confirmation.clone(),
        placement: g.placement.clone(),
        rejected: g.rejected.clone(),
        agent: None,
        rule_override: g.rule_override.clone(),
    }
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("the connection closed")]
    Closed,
    #[error("a line longer than {0} bytes")]
    TooLong(usize),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Read one line of at most `max` bytes (without its newline) into `buf`.
/// A longer line is an error (the rest of it is not buffered); the end of
/// the stream before any byte is [`LineError::Closed`].
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<(), LineError> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return if buf.is_empty() {
                Err(LineError::Closed)
            } else {
                // the last line without its newline
                Ok(())
            };
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(at) => {
                if buf.len() + at > max {
                    return Err(LineError::TooLong(max));
                }
                buf.extend_from_slice(&available[..at]);
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = available.len();
                if buf.len() + n > max {
                    return Err(LineError::TooLong(max));
                }
                buf.extend_from_slice(available);
                reader.consume(n);
            }
        }
    }
}

/// `message` as one line (with its newline).
pub fn line(message: &Message) -> String {
    let mut text = serde_json::to_string(message).unwrap_or_else(|e| {
        serde_json::to_string(&Message::Error {
            id: None,
            message: format!("cannot encode a message: {e}"),
        })
        .unwrap_or_default()
    });
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_split() {
        let data: &[u8] = b"{\"a\":1}\nsecond\n0123456789abcdef\nlast";
        let mut r = tokio::io::BufReader::with_capacity(4, data);
        let mut buf = Vec::new();
        read_line(&mut r, &mut buf, 10).await.unwrap();
        assert_eq!(buf, b"{\"a\":1}");
        read_line(&mut r, &mut buf, 10).await.unwrap();
        assert_eq!(buf, b"second");
        assert!(matches!(
            read_line(&mut r, &mut buf, 10).await,
            Err(LineError::TooLong(10))
        ));
        let mut r = tokio::io::BufReader::new(&b"last"[..]);
        read_line(&mut r, &mut buf, 10).await.unwrap();
        assert_eq!(buf, b"last");
        assert!(matches!(
            read_line(&mut r, &mut buf, 10).await,
            Err(LineError::Closed)
        ));
    }

    #[test]
    fn a_head_keeps_what_lists_show_and_drops_the_bodies() {
        let mut g = Genome {
            id: 7,
            parent_id: Some(3),
            valid: true,
            content: Tree::single("main.py", "print(1)\n"),
            diff: Some("--- a\n+++ b\n".into()),
            prompt: Some(crate::engine::genome::Prompt {
                system: "s".into(),
                user: "u".into(),
            }),
            response: Some("reply".into()),
            error: Some("x".repeat(5000)),
            ..Genome::default()
        };
        g.scores.insert("combined_score".into(), 0.5);
        g.artifacts.insert("stdout".into(), "out".into());
        let h = head(&g);
        assert_eq!((h.id, h.parent_id, h.valid), (7, Some(3), true));
        assert_eq!(h.scores, g.scores);
        assert!(h.prompt.is_none() && h.response.is_none() && h.diff.is_none());
        assert!(h.artifacts.is_empty());
        assert_eq!(h.content.single_text(), Some(""));
        assert_eq!(
            h.error.unwrap().chars().count(),
            crate::engine::archive::HEAD_ERROR_CHARS
        );
        // a head travels as a genome does
        let json = serde_json::to_string(&head(&g)).unwrap();
        let back: Genome = serde_json::from_str(&json).unwrap();
        assert_eq!(back.id, 7);
    }

    #[test]
    fn messages_round_trip() {
        let m = Message::Synced {
            cursor: Cursor {
                instance: "i".into(),
                next: 4,
                genomes: 9,
            },
        };
        let text = line(&m);
        assert!(text.ends_with('\n'));
        let back: Message = serde_json::from_str(text.trim_end()).unwrap();
        assert!(matches!(back, Message::Synced { cursor } if cursor.next == 4));
        let r: Request =
            serde_json::from_str(r#"{"id":3,"request":{"subscribe":{"after":null}}}"#).unwrap();
        assert!(matches!(
            r.request,
            RequestBody::Subscribe { history: true, .. }
        ));
    }
}
