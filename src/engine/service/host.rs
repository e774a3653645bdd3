//! A live run's side of the service: a thread of its own passes the run's
//! events on to whoever started the run (the command line, the studio),
//! numbers them, keeps the newest in a bounded ring for replay and the
//! state they built for snapshots, and serves connections on the run
//! folder's socket ([`super::local`]). The run never waits for a client: a
//! client that falls behind the ring gets a fresh snapshot instead.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::live::LiveRun;
use super::protocol::{self, Message};
use super::session::{self, Source};
use crate::engine::card::ValidCard;
use crate::engine::events::{RunCommand, RunEvent};
use crate::engine::redact::Redactor;
use crate::engine::registry::Registry;
use crate::engine::run_thread::{EVENT_CAPACITY, RunHandle, Waker};
use crate::engine::task::Task;

/// Connections served at once; more are refused with an error.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a run that ended keeps serving clients still catching up.
const LINGER: Duration = Duration::from_secs(3);

/// What the service of a run needs besides its handle.
pub struct ServeContext {
    /// The run folder (where the socket goes).
    pub dir: PathBuf,
    /// The card the run starts with and its task: what new settings are
    /// checked and fitted against.
    pub card: ValidCard,
    pub task: Task,
    pub registry: Arc<Registry>,
    /// Takes the server's secrets out of everything sent (the events and
    /// the record are redacted already; this is the service's own
    /// boundary).
    pub redactor: Arc<Redactor>,
}

/// Serve the run of `handle` on its folder's socket while it runs: returns
/// the handle to use instead (its events pass through the service, and
/// `waker` is called after each one reaches it) and, when the socket
/// could not be made, why (the run goes on, unserved).
pub fn serve(
    handle: RunHandle,
    ctx: ServeContext,
    waker: Option<Waker>,
) -> (RunHandle, Option<std::io::Error>) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Option<std::io::Error>>();
    let commands = handle.commands.clone();
    let (handle, spawn_error) = handle.relayed(|events| {
        let (out_tx, out_rx) = mpsc::channel(EVENT_CAPACITY);
        let held = Arc::new(Mutex::new(Some(events)));
        let inside = Arc::clone(&held);
        let spawned = std::thread::Builder::new()
            .name("galapagos-service".to_owned())
            .spawn(move || {
                let Some(events) = inside.lock().ok().and_then(|mut e| e.take()) else {
                    ready_tx.send(None).ok();
                    return;
                };
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        ready_tx.send(Some(e)).ok();
                        // no runtime: the events still reach their reader
                        pass_on_blocking(events, &out_tx, waker.as_ref());
                        return;
                    }
                };
                runtime.block_on(host(ctx, commands, events, out_tx, waker, ready_tx));
            });
        match spawned {
            Ok(thread) => Ok((out_rx, thread)),
            Err(e) => match held.lock().ok().and_then(|mut e| e.take()) {
                Some(events) => Err((events, e)),
                None => Err((mpsc::channel(1).1, e)),
            },
        }
    });
    if let Some(e) = spawn_error {
        return (handle, Some(e));
    }
    let error = ready_rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| {
            Some(std::io::Error::other(
                "the run service did not start in 30 s",
            ))
        });
    (handle, error)
}

fn pass_on_blocking(
    mut events: mpsc::Receiver<RunEvent>,
    out: &mpsc::Sender<RunEvent>,
    waker: Option<&Waker>,
) {
    while let Some(event) = events.blocking_recv() {
        if out.blocking_send(event).is_ok()
            && let Some(w) = waker
        {
            w();
        }
    }
}

/// A name for this process's run no other has: the pid and the time.
fn instance_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos:x}", std::process::id())
}

async fn host(
    ctx: ServeContext,
    commands: mpsc::Sender<RunCommand>,
    mut events: mpsc::Receiver<RunEvent>,
    out: mpsc::Sender<RunEvent>,
    waker: Option<Waker>,
    ready: std::sync::mpsc::Sender<Option<std::io::Error>>,
) {
    let listener = match super::local::bind(&ctx.dir) {
        Ok(l) => {
            ready.send(None).ok();
            Some(l)
        }
        Err(e) => {
            let e = std::io::Error::new(
                e.kind(),
                format!(
                    "{}: the run service cannot listen: {e}",
                    super::local::socket_path(&ctx.dir).display()
                ),
            );
            ready.send(Some(e)).ok();
            None
        }
    };
    let live = Arc::new(LiveRun::new(
        instance_name(),
        ctx.dir.clone(),
        commands,
        ctx.card,
        ctx.task,
        ctx.registry,
        ctx.redactor,
    ));
    let accept = {
        let live = Arc::clone(&live);
        async move {
            let Some(listener) = listener else {
                return std::future::pending::<()>().await;
            };
            let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // out of descriptors, say: try again in a moment
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                // owner-only socket in an owner-only folder; the peer is
                // checked all the same
                let ours = crate::engine::platform::peer_is_me(&stream);
                if !ours {
                    continue;
                }
                let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
                    let (_, mut w) = stream.into_split();
                    let refusal = protocol::line(&Message::Error {
                        id: None,
                        message: format!("the run serves {MAX_CONNECTIONS} connections at most"),
                    });
                    tokio::io::AsyncWriteExt::write_all(&mut w, refusal.as_bytes())
                        .await
                        .ok();
                    continue;
                };
                let source = Source::Live(Arc::clone(&live));
                let redactor = Arc::clone(&live.redactor);
                tokio::spawn(async move {
                    let (r, w) = stream.into_split();
                    session::serve_connection(source, r, w, redactor, false).await;
                    drop(permit);
                });
            }
        }
    };
    let pump = {
        let live = Arc::clone(&live);
        async move {
            let mut seq = 0u64;
            while let Some(event) = events.recv().await {
                live.take(seq, &event);
                seq += 1;
                if out.send(event).await.is_ok()
                    && let Some(w) = &waker
                {
                    w();
                }
            }
        }
    };
    tokio::select! {
        () = pump => {}
        () = accept => {}
    }
    // the run has ended: clients still catching up get a moment
    let deadline = tokio::time::Instant::now() + LINGER;
    while live.subscribers.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    remove_socket(&ctx.dir);
}

fn remove_socket(dir: &Path) {
    super::local::remove(dir);
}
