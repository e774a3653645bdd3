//! A live run as its service keeps it: the events numbered and the newest
//! in a bounded ring for replay, the state they built for snapshots, and
//! the commands passed on to the run (see the module documentation of
//! [`crate::engine::service`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use super::protocol::{self, Command, Message, RunRow, RunState, Snapshot, WireEvent};
use crate::engine::card::ValidCard;
use crate::engine::events::{RunCommand, RunEvent, RunInfo};
use crate::engine::redact::Redactor;
use crate::engine::registry::Registry;
use crate::engine::task::Task;

/// Events the ring keeps for replay (the oldest go first).
pub const RING_EVENTS: usize = 16_384;
/// Bytes of encoded events the ring keeps at most.
pub const RING_BYTES: usize = 32 << 20;
/// Events from the ring: each one's number, the genome it admits (if any)
/// and its line.
pub(crate) type Batch = Vec<(u64, Option<u64>, Arc<str>)>;

/// One event in the ring.
struct Entry {
    seq: u64,
    /// The genome it admits, if any (a replay leaves out those a client
    /// holds).
    genome: Option<u64>,
    line: Arc<str>,
}

/// The run's stream as the service keeps it.
pub(crate) struct Stream {
    ring: VecDeque<Entry>,
    bytes: usize,
    /// The number the next event gets.
    pub(crate) next: u64,
    pub(crate) info: Option<RunInfo>,
    pub(crate) card_yaml: String,
    pub(crate) state: RunState,
    /// Set once the run's last event is in: its status.
    pub(crate) ended: Option<String>,
    pub(crate) genomes: u64,
    pub(crate) best_score: Option<f64>,
    /// When this run process's service started (with the run).
    pub(crate) started: std::time::Instant,
}

impl Stream {
    /// The oldest event still held.
    pub(crate) fn first(&self) -> u64 {
        self.ring.front().map_or(self.next, |e| e.seq)
    }

    fn push(&mut self, entry: Entry) {
        self.bytes += entry.line.len();
        self.ring.push_back(entry);
        while self.ring.len() > RING_EVENTS || self.bytes > RING_BYTES {
            match self.ring.pop_front() {
                Some(old) => self.bytes -= old.line.len(),
                None => break,
            }
        }
    }

    /// Up to `max` events from `next` on, with the genome each admits:
    /// `None` when `next` is no longer held.
    pub(crate) fn since(&self, next: u64, max: usize) -> Option<Batch> {
        let first = self.first();
        if next < first {
            return None;
        }
        let skip = usize::try_from(next - first).unwrap_or(usize::MAX);
        Some(
            self.ring
                .iter()
                .skip(skip)
                .take(max)
                .map(|e| (e.seq, e.genome, Arc::clone(&e.line)))
                .collect(),
        )
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            info: self.info.clone(),
            card_yaml: self.card_yaml.clone(),
            state: self.state.clone(),
            running_secs: Some(self.started.elapsed().as_secs_f64()),
        }
    }
}

/// A live run as its service sees it.
pub struct LiveRun {
    /// This process's run: a cursor of another instance is not replayed.
    pub(crate) instance: String,
    pub(crate) dir: PathBuf,
    commands: mpsc::Sender<RunCommand>,
    pub(crate) stream: Mutex<Stream>,
    /// The number of the next event (every event below it is in the ring).
    pub(crate) seq: watch::Sender<u64>,
    /// Subscriptions streaming now.
    pub(crate) subscribers: AtomicUsize,
    /// The card the run goes on with, and settings sent and not yet taken.
    card: Mutex<(ValidCard, Option<ValidCard>)>,
    task: Task,
    registry: Arc<Registry>,
    pub(crate) redactor: Arc<Redactor>,
}

impl LiveRun {
    /// The service's side of a run that starts now.
    pub(crate) fn new(
        instance: String,
        dir: PathBuf,
        commands: mpsc::Sender<RunCommand>,
        card: ValidCard,
        task: Task,
        registry: Arc<Registry>,
        redactor: Arc<Redactor>,
    ) -> Self {
        let card_yaml = card.card().to_yaml();
        Self {
            instance,
            dir,
            commands,
            stream: Mutex::new(Stream {
                ring: VecDeque::new(),
                bytes: 0,
                next: 0,
                info: None,
                card_yaml,
                state: RunState::default(),
                ended: None,
                genomes: 0,
                best_score: None,
                started: std::time::Instant::now(),
            }),
            seq: watch::channel(0).0,
            subscribers: AtomicUsize::new(0),
            card: Mutex::new((card, None)),
            task,
            registry,
            redactor,
        }
    }

    /// Hand `command` to the run, checked and recorded by the loop as the
    /// studio's are; `Err` says why it was not queued.
    pub(crate) fn command(&self, command: Command) -> Result<(), String> {
        let command = match command {
            Command::Pause => RunCommand::Pause,
            Command::Resume => RunCommand::Resume,
            Command::Stop => RunCommand::Stop,
            Command::Notes { text } => RunCommand::SetNotes(text),
            Command::Pin { genome } => RunCommand::Pin(genome),
            Command::Unpin { genome } => RunCommand::Unpin(genome),
            Command::Inject {
                parent,
                program,
                outside_markers,
            } => RunCommand::Inject {
                parent,
                program,
                outside_markers,
            },
            Command::Settings { card_yaml } => self.settings(&card_yaml)?,
        };
        self.commands.try_send(command).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                "the run's command queue is full; try again".to_owned()
            }
            mpsc::error::TrySendError::Closed(_) => "the run has ended".to_owned(),
        })
    }

    /// New settings from a card's YAML: checked with this build's
    /// components and fitted to the run's task as the studio fits the
    /// Blocks tab's card, the model built from the server's own settings
    /// when `llm` changed. The loop compares and takes or refuses them.
    fn settings(&self, yaml: &str) -> Result<RunCommand, String> {
        let card = ValidCard::from_yaml(yaml, "the card sent to the run", &self.registry)
            .map_err(|e| e.to_string())?;
        let fitted = crate::engine::launch::fit_to_task(card, &self.task, &self.registry)
            .map_err(|e| e.to_string())?;
        let mut held = self
            .card
            .lock()
            .map_err(|_| "the service's state is poisoned".to_owned())?;
        let model = if held.0.card().llm == fitted.card().llm {
            None
        } else {
            let settings =
                crate::engine::model::load_user_settings().map_err(|e| format!("model: {e}"))?;
            let (model, _) = crate::engine::model::build_model(
                fitted.card().llm.as_ref(),
                &crate::engine::model::ModelOverrides::default(),
                &settings,
                crate::engine::model::default_model(),
            )
            .map_err(|e| format!("no model can be built from the card's llm section: {e}"))?;
            Some(model)
        };
        held.1 = Some(fitted.clone());
        Ok(RunCommand::reconfigure(fitted, model))
    }

    /// Where the run stands: its record's row with what its events say.
    pub(crate) fn status(&self) -> RunRow {
        let mut row = super::record::row(&self.dir, None);
        if let Ok(s) = self.stream.lock() {
            row.live = true;
            row.state = match (&s.ended, s.state.paused) {
                (Some(status), _) => status.clone(),
                (None, true) => "paused".to_owned(),
                (None, false) => "running".to_owned(),
            };
            row.iterations = row.iterations.max(s.state.iterations_done);
            if let Some(info) = &s.info {
                row.max_iterations = info.max_iterations;
            }
            row.genomes = row.genomes.max(s.genomes);
            if s.best_score.is_some() {
                row.best_score = s.best_score;
            }
        }
        row
    }

    /// Take in one event: the state, the ring, the waiting subscriptions.
    pub(crate) fn take(&self, seq: u64, event: &RunEvent) {
        let wire = WireEvent::of(event);
        let genome = wire.genome_id();
        let line: Arc<str> = protocol::line(&Message::Event {
            seq,
            event: Box::new(wire),
        })
        .into();
        if let Ok(mut s) = self.stream.lock() {
            s.state.apply(event);
            match event {
                RunEvent::Started(info) => {
                    s.info = Some(info.clone());
                }
                RunEvent::GenomeAdmitted {
                    genome, best_score, ..
                } => {
                    s.genomes = s.genomes.max(genome.id + 1);
                    s.best_score = *best_score;
                }
                RunEvent::SettingsChanged(change) => {
                    if let Some(info) = &mut s.info {
                        info.max_iterations = change.max_iterations;
                    }
                    if let Ok(mut card) = self.card.lock()
                        && let Some(new) = card.1.take()
                    {
                        s.card_yaml = new.card().to_yaml();
                        card.0 = new;
                    }
                }
                RunEvent::SettingsRefused(_) => {
                    if let Ok(mut card) = self.card.lock() {
                        card.1 = None;
                    }
                }
                RunEvent::Finished(summary) => s.ended = Some(summary.status.label()),
                _ => {}
            }
            s.next = seq + 1;
            s.push(Entry { seq, genome, line });
        }
        self.seq.send_replace(seq + 1);
    }
}
