//! A run on a server (or in another process here) shown in the run view:
//! a [`Follow`] on a thread of its own (its own tokio runtime) reaches it
//! through the run service, reconnecting with backoff and resuming from the
//! last event; the view drains what it reports each frame as it drains a
//! local run's events. Commands (pause, steering, a person's program) and
//! genome bodies (fetched when a genome is selected) go over the same
//! connection.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use super::bodies::BodySource;
use super::{DRAIN_BUDGET, RunHistory, RunView, structure};
use crate::engine::events::{RunCommand, RunEvent};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::service::protocol::{Command, RequestBody};
use crate::engine::service::{Client, ConnectOptions, Follow, Target, Update};

/// What the view asks of the connection.
enum Ask {
    Command(Command),
    Genome(GenomeId),
}

/// What comes back besides the follow's updates.
pub enum Answer {
    Update(Update),
    Genome(GenomeId, Result<Box<Genome>, String>),
    /// A command the server refused (or that could not be sent).
    Refused(String),
}

/// Where the connection stands (the status bar's text).
#[derive(Clone, Debug, PartialEq)]
pub enum LinkState {
    Connecting,
    Connected { live: bool },
    Reconnecting { error: String, at: Instant },
    Ended(String),
    Failed(String),
}

/// A followed run.
pub struct RemoteLink {
    pub target: Target,
    answers: Receiver<Answer>,
    asks: tokio::sync::mpsc::UnboundedSender<Ask>,
    pub state: LinkState,
    /// Reconnections so far.
    pub reconnections: u32,
    _thread: std::thread::JoinHandle<()>,
}

impl RemoteLink {
    /// Follow `target` with `options`; `waker` is called after each answer.
    pub fn connect(
        target: Target,
        options: ConnectOptions,
        waker: Arc<dyn Fn() + Send + Sync>,
    ) -> std::io::Result<Self> {
        let (tx, answers) = channel();
        let (asks, mut asked) = tokio::sync::mpsc::unbounded_channel::<Ask>();
        let followed = target.clone();
        let thread = std::thread::Builder::new()
            .name("galapagos-remote".to_owned())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    tx.send(Answer::Update(Update::Failed(
                        "cannot start a runtime".to_owned(),
                    )))
                    .ok();
                    return;
                };
                runtime.block_on(async move {
                    // a connection of its own for bodies asked for once the
                    // follow has none (the run ended, or it is reconnecting)
                    let spare: Arc<tokio::sync::Mutex<Option<Arc<Client>>>> = Arc::default();
                    let (spare_target, spare_options) = (followed.clone(), options.clone());
                    let mut follow = Follow::start(followed, options, true);
                    let send = |a: Answer, tx: &Sender<Answer>| {
                        let ok = tx.send(a).is_ok();
                        waker();
                        ok
                    };
                    loop {
                        tokio::select! {
                            update = follow.updates.recv() => {
                                let Some(update) = update else { return };
                                if !send(Answer::Update(update), &tx) {
                                    return;
                                }
                            }
                            ask = asked.recv() => {
                                let Some(ask) = ask else { return };
                                let client = follow.client();
                                if client.is_none() && matches!(ask, Ask::Command(_)) {
                                    send(Answer::Refused("not connected: try again once the run is reached".to_owned()), &tx);
                                    continue;
                                }
                                let tx = tx.clone();
                                let waker = Arc::clone(&waker);
                                let (spare, target, options) = (Arc::clone(&spare), spare_target.clone(), spare_options.clone());
                                tokio::spawn(async move {
                                    let client = match client {
                                        Some(c) => c,
                                        None => {
                                            let mut held = spare.lock().await;
                                            let usable = held.as_ref().filter(|c| c.closed().is_none()).cloned();
                                            match usable {
                                                Some(c) => c,
                                                None => match Client::connect(&target, &options).await {
                                                    Ok(c) => {
                                                        let c = Arc::new(c);
                                                        *held = Some(Arc::clone(&c));
                                                        c
                                                    }
                                                    Err(e) => {
                                                        if let Ask::Genome(id) = ask {
                                                            tx.send(Answer::Genome(id, Err(e.to_string()))).ok();
                                                            waker();
                                                        }
                                                        return;
                                                    }
                                                },
                                            }
                                        }
                                    };
                                    let answer = match ask {
                                        Ask::Genome(id) => Answer::Genome(id, client.genome(id).await.map(Box::new).map_err(|e| e.to_string())),
                                        Ask::Command(command) => match client.request(RequestBody::Command { command }).await {
                                            Ok(_) => return,
                                            Err(e) => Answer::Refused(e.to_string()),
                                        },
                                    };
                                    tx.send(answer).ok();
                                    waker();
                                });
                            }
                        }
                    }
                });
            })?;
        Ok(Self {
            target,
            answers,
            asks,
            state: LinkState::Connecting,
            reconnections: 0,
            _thread: thread,
        })
    }

    /// What arrived, at most for `budget`.
    pub fn drain(&mut self, budget: Duration) -> Vec<Answer> {
        let start = Instant::now();
        let mut out = Vec::new();
        while let Ok(a) = self.answers.try_recv() {
            if let Answer::Update(u) = &a {
                self.note(u);
            }
            out.push(a);
            if start.elapsed() >= budget {
                break;
            }
        }
        out
    }

    fn note(&mut self, update: &Update) {
        match update {
            Update::Connecting { .. } => {
                if !matches!(self.state, LinkState::Reconnecting { .. }) {
                    self.state = LinkState::Connecting;
                }
            }
            Update::Connected { welcome, .. } => {
                if matches!(self.state, LinkState::Reconnecting { .. }) {
                    self.reconnections += 1;
                }
                self.state = LinkState::Connected { live: welcome.live };
            }
            Update::Lost { error, retry_in } => {
                self.state = LinkState::Reconnecting {
                    error: error.clone(),
                    at: Instant::now() + *retry_in,
                };
            }
            Update::Ended { status } => self.state = LinkState::Ended(status.clone()),
            Update::Failed(why) => self.state = LinkState::Failed(why.clone()),
            Update::Reset { .. } | Update::Event(_) | Update::Running(_) | Update::Synced => {}
        }
    }

    /// Send a command to the run.
    pub fn command(&self, command: Command) -> bool {
        self.asks.send(Ask::Command(command)).is_ok()
    }

    /// Ask for a genome's bodies (they come back as [`Answer::Genome`]).
    pub fn fetch(&self, id: GenomeId) -> bool {
        self.asks.send(Ask::Genome(id)).is_ok()
    }

    /// True while the run can be steered through the link.
    pub fn is_live(&self) -> bool {
        matches!(
            self.state,
            LinkState::Connected { live: true }
                | LinkState::Reconnecting { .. }
                | LinkState::Connecting
        )
    }

    /// The status bar's words for the connection.
    pub fn label(&self) -> String {
        match &self.state {
            LinkState::Connecting => format!("connecting to {}", self.target),
            LinkState::Connected { live: true } => format!("connected to {}", self.target),
            LinkState::Connected { live: false } => {
                format!("connected to {} (a recorded run)", self.target)
            }
            LinkState::Reconnecting { error, at } => format!(
                "connection lost ({error}); reconnecting in {:.0} s",
                at.saturating_duration_since(Instant::now())
                    .as_secs_f64()
                    .ceil()
            ),
            LinkState::Ended(status) => format!("{}: {status}", self.target),
            LinkState::Failed(why) => format!("cannot reach {}: {why}", self.target),
        }
    }
}

impl RunView {
    /// Follow the run at `target` through the run service (any run shown
    /// before is stopped or closed): its history, then its events as they
    /// come; a dropped connection is retried with backoff and resumes from
    /// the last event.
    pub fn connect_remote(
        &mut self,
        target: crate::engine::service::Target,
        options: crate::engine::service::ConnectOptions,
        ctx: &egui::Context,
    ) {
        self.load_history(RunHistory::new());
        self.history.set_body_source(BodySource::Remote);
        self.structure = structure::StructureMirror::default();
        self.objectives.set_objectives(Vec::new());
        let waker_ctx = ctx.clone();
        match RemoteLink::connect(
            target,
            options,
            Arc::new(move || waker_ctx.request_repaint()),
        ) {
            Ok(link) => self.remote = Some(link),
            Err(e) => self.last_error = Some(format!("cannot follow the run: {e}")),
        }
    }

    /// The followed run's connection, when the view shows one.
    pub fn remote(&self) -> Option<&RemoteLink> {
        self.remote.as_ref()
    }

    /// True when genome `id`'s bodies (program, prompt, reply, diff) are
    /// here: a recent genome of a local run, or one read back from its
    /// archive or fetched from the server.
    pub fn has_body(&self, id: GenomeId) -> bool {
        self.history.body(id).is_some()
    }

    /// A followed run's frame: what its connection brought (a fresh
    /// snapshot starts the history over), the bodies of the selected and
    /// picked genomes asked for.
    pub(super) fn remote_logic(&mut self, ctx: &egui::Context) {
        let Some(link) = self.remote.as_mut() else {
            return;
        };
        let answers = link.drain(DRAIN_BUDGET);
        let more = !answers.is_empty();
        for answer in answers {
            match answer {
                Answer::Update(Update::Reset { .. }) => {
                    let selected = self.selected;
                    self.history = RunHistory::new();
                    self.history.set_body_source(BodySource::Remote);
                    self.plot.reset();
                    self.objectives.reset();
                    self.models.reset();
                    self.tree.reset();
                    self.table.reset();
                    self.bodies_asked.clear();
                    self.bodies_failed.clear();
                    self.select_later = selected;
                }
                // after the snapshot's Started: the run's time, not the
                // connection's
                Answer::Update(Update::Running(secs)) => self.history.running_for(secs),
                Answer::Update(Update::Event(mut event)) => {
                    // a path on the server is no folder here
                    if let RunEvent::Started(info) = &mut event {
                        info.run_dir = None;
                    }
                    self.take_event(event);
                }
                Answer::Update(_) => {}
                Answer::Genome(id, body) => self.body_arrived(id, body.map(|g| *g)),
                Answer::Refused(why) => {
                    self.pause_requested = false;
                    self.last_error = Some(why);
                }
            }
        }
        if let Some(id) = self.select_later.take()
            && self.history.get(id).is_some()
        {
            self.select(Some(id));
        }
        self.want_bodies(ctx);
        if more {
            ctx.request_repaint();
        } else {
            // the status bar's countdown, the elapsed time
            ctx.request_repaint_after(Duration::from_millis(500));
        }
    }

    /// Hand a command to the run: its channel, or the followed run's
    /// connection. False when it could not be queued.
    pub(super) fn send(&mut self, cmd: RunCommand) -> bool {
        if let Some(link) = &self.remote {
            let command = match cmd {
                RunCommand::Pause => Command::Pause,
                RunCommand::Resume => Command::Resume,
                RunCommand::Stop => Command::Stop,
                RunCommand::SetNotes(text) => Command::Notes { text },
                RunCommand::Pin(genome) => Command::Pin { genome },
                RunCommand::Unpin(genome) => Command::Unpin { genome },
                RunCommand::Inject {
                    parent,
                    program,
                    outside_markers,
                } => Command::Inject {
                    parent,
                    program,
                    outside_markers,
                },
                RunCommand::Reconfigure(new) => Command::Settings {
                    card_yaml: new.card.card().to_yaml(),
                },
            };
            return link.command(command);
        }
        self.handle.as_ref().is_some_and(|h| h.send(cmd))
    }

    /// True while the active run is paused (or a pause was asked for).
    pub fn is_paused(&self) -> bool {
        self.is_running() && (self.history.paused || self.pause_requested)
    }
}
