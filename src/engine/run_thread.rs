//! Running a [`RunPlan`] on its own named thread with its own tokio runtime.
//! The caller gets a [`RunHandle`]: a bounded command sender and a bounded
//! event receiver (the contract in [`crate::engine::events`]).

use std::path::Path;
use std::sync::Arc;

use crate::engine::archive::{Archive, Redacted, RunRecorder, open_run_folder};
use crate::engine::events::{EventSink, LogLevel, RunCommand, RunEvent, RunStatus, RunSummary};
use crate::engine::launch::RunPlan;
use crate::engine::model::{LanguageModel, RedactedModel, run_secrets};
use crate::engine::redact::Redactor;
use crate::engine::scaffold::Scaffold;

/// Capacity of the event channel. The engine waits when the UI falls this far
/// behind (backpressure) rather than growing memory.
pub const EVENT_CAPACITY: usize = 4096;
/// Capacity of the command channel.
pub const COMMAND_CAPACITY: usize = 16;

/// Called after every event (e.g. `egui::Context::request_repaint`).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A running scaffold.
pub struct RunHandle {
    pub commands: tokio::sync::mpsc::Sender<RunCommand>,
    pub events: tokio::sync::mpsc::Receiver<RunEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A thread that passes the run's events on (the run service's, see
    /// [`crate::engine::service`]), joined after the run's.
    relay: Option<std::thread::JoinHandle<()>>,
}

impl RunHandle {
    /// Ask the run to do something; never blocks (a full queue drops the
    /// command and returns false).
    pub fn send(&self, cmd: RunCommand) -> bool {
        self.commands.try_send(cmd).is_ok()
    }

    /// Wait for the run thread (and the thread relaying its events) to end.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
        if let Some(t) = self.relay.take() {
            t.join().ok();
        }
    }

    /// True once the run thread (and the thread relaying its events) has
    /// ended.
    pub fn is_finished(&self) -> bool {
        self.thread
            .as_ref()
            .is_none_or(std::thread::JoinHandle::is_finished)
            && self
                .relay
                .as_ref()
                .is_none_or(std::thread::JoinHandle::is_finished)
    }

    /// This handle with its events passed through `relay`: `spawn` gets the
    /// run's event receiver and returns the receiver the handle reads from
    /// then on and the thread doing the relaying (joined with the run's).
    pub(crate) fn relayed<E>(
        mut self,
        spawn: impl FnOnce(
            tokio::sync::mpsc::Receiver<RunEvent>,
        ) -> Result<
            (
                tokio::sync::mpsc::Receiver<RunEvent>,
                std::thread::JoinHandle<()>,
            ),
            (tokio::sync::mpsc::Receiver<RunEvent>, E),
        >,
    ) -> (Self, Option<E>) {
        let (_, closed) = tokio::sync::mpsc::channel(1);
        let events = std::mem::replace(&mut self.events, closed);
        match spawn(events) {
            Ok((events, relay)) => {
                self.events = events;
                self.relay = Some(relay);
                (self, None)
            }
            Err((events, e)) => {
                self.events = events;
                (self, Some(e))
            }
        }
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        // Stop the run; the thread ends on its own (we do not block a UI here).
        self.commands.try_send(RunCommand::Stop).ok();
    }
}

fn failed_summary(msg: String) -> RunSummary {
    RunSummary::empty(RunStatus::Failed(msg))
}

/// Start `plan` (a new run or a resumed one) on a new thread named
/// `galapagos-run`, asking `model`; `waker` is called after every event.
pub fn start(
    plan: RunPlan,
    model: Arc<dyn LanguageModel>,
    waker: Option<Waker>,
) -> std::io::Result<RunHandle> {
    let (cmd_tx, cmd_rx) = tokio::sync::mpsc::channel(COMMAND_CAPACITY);
    let (ev_tx, ev_rx) = tokio::sync::mpsc::channel(EVENT_CAPACITY);
    let sink = EventSink::new(ev_tx, waker);
    let thread = std::thread::Builder::new()
        .name("galapagos-run".to_owned())
        .spawn(move || {
            // One thread: the whole run is one future (P iterations in flight
            // are a FuturesUnordered inside it), so extra runtime threads
            // would only add a cross-thread wake-up to every model reply and
            // evaluator message.
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    sink_blocking(
                        &sink,
                        RunEvent::Finished(failed_summary(format!(
                            "cannot start the runtime: {e}"
                        ))),
                    );
                    return;
                }
            };
            runtime.block_on(run_plan(plan, model, sink, cmd_rx));
        })?;
    Ok(RunHandle {
        commands: cmd_tx,
        events: ev_rx,
        thread: Some(thread),
        relay: None,
    })
}

fn sink_blocking(sink: &EventSink, event: RunEvent) {
    if let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() {
        rt.block_on(sink.send(event));
    }
}

/// Load the task, build the scaffold and run it (on the current runtime).
///
/// The run's secrets are gathered once ([`run_secrets`]: the model's keys
/// and endpoint credentials). Their values are taken out at its three
/// boundaries by one [`Redactor`]: every event `sink` reports, everything
/// the run folder's recorder writes, and every prompt sent to `model`; the
/// names of the key variables go to the components through the build
/// context (the evaluators never pass them to candidates).
pub async fn run_plan(
    plan: RunPlan,
    model: Arc<dyn LanguageModel>,
    sink: EventSink,
    commands: tokio::sync::mpsc::Receiver<RunCommand>,
) -> RunSummary {
    // A model that learns from a run (adaptive weights) learns from this
    // one alone.
    let model = model.for_run().unwrap_or(model);
    let secrets = run_secrets(model.as_ref());
    let redactor = Arc::new(Redactor::new(secrets.values));
    let key_vars = secrets.key_vars;
    let sink = sink.with_redactor(Arc::clone(&redactor));
    let model = RedactedModel::wrap(model, Arc::clone(&redactor));
    let fail = |msg: String| async {
        sink.log(LogLevel::Error, msg.clone()).await;
        let s = failed_summary(msg);
        sink.send(RunEvent::Finished(s.clone())).await;
        s
    };
    // Nothing starts (no evaluator, no agent, no record) for a card whose
    // lowered isolation needs a consent it lacks; a front end asks first,
    // this is the last word.
    if let Err(e) = plan.check_consent() {
        return fail(e.to_string()).await;
    }
    let clearance = plan
        .clearance()
        .clone()
        .signed(&plan.valid_card().card().hash());
    // A down endpoint fails the run now, with the fix, not after the
    // retries of several iterations.
    if let Some(why) = crate::engine::model::check::unreachable_endpoint(model.as_ref()).await {
        return fail(why).await;
    }
    let task = plan.task().clone();
    let notices = plan.notices();
    let origin = plan.origin().cloned();
    let name = plan.card().name.clone();
    let resume = plan.is_resume();
    let run_dir = plan.run_dir().map(Path::to_path_buf);
    // Held until the run has finished writing its folder.
    let _lock = plan.lock();
    // Building may resolve interpreters and start processes: keep it off the
    // async workers.
    let card = plan.valid_card().clone();
    let dir = run_dir.clone();
    let built = tokio::task::spawn_blocking(move || {
        Scaffold::build(&card, task, model, dir.as_deref(), &key_vars)
    })
    .await;
    let changes = plan.steering_changes().map(<[RunCommand]>::to_vec);
    let mut scaffold = match built {
        Ok(Ok(s)) => {
            let s = s
                .with_notices(notices)
                .forked_from(origin)
                .with_clearance(clearance)
                .with_redactor(Arc::clone(&redactor));
            match changes {
                Some(changes) => s.steer_only(changes),
                None => s,
            }
        }
        Ok(Err(e)) => return fail(format!("card {name}: {e}")).await,
        Err(e) => return fail(format!("building the scaffold failed: {e}")).await,
    };
    if resume {
        let Some(dir) = run_dir.as_deref() else {
            return fail("resume needs a run folder".to_owned()).await;
        };
        let read = Archive::open(dir)
            .and_then(|a| Ok((a.genomes_without_transcripts()?, a.checkpoint()?)));
        match read {
            Ok((genomes, Some(checkpoint))) => {
                if let Err(e) = scaffold.restore(genomes, checkpoint) {
                    return fail(format!("{}: cannot resume: {e}", dir.display())).await;
                }
            }
            // Stopped before the initial program was scored: nothing to
            // restore, the run starts over in the same folder.
            Ok((genomes, None)) if genomes.is_empty() => {}
            Ok((_, None)) => {
                return fail(format!(
                    "{}: the run has no checkpoint to resume from",
                    dir.display()
                ))
                .await;
            }
            Err(e) => return fail(e.to_string()).await,
        }
    }
    // The evaluator starts (an interpreter, the task's import: tens of ms)
    // while the run folder is opened. A detached task: a run that ends early
    // drops it with the runtime, which kills what it started.
    drop(tokio::spawn(scaffold.warm_up()));
    // Let it start the process before this thread blocks on the disk.
    tokio::task::yield_now().await;
    let recorder: Option<Box<dyn RunRecorder>> = match run_dir.as_deref() {
        Some(d) => match open_run_folder(d, resume) {
            Ok(r) => Some(Redacted::wrap(r, redactor)),
            Err(e) => return fail(e.to_string()).await,
        },
        None => None,
    };
    scaffold.run(sink, commands, recorder, run_dir).await
}
