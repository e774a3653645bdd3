//! One connection: the handshake, then requests answered as they come
//! (each on a task of its own, so a long export does not hold up a
//! command) and at most one subscription streaming. Everything sent goes
//! through one bounded queue and the server's redactor.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader, BufWriter};
use tokio::sync::mpsc;

use super::live::LiveRun;
use super::protocol::{
    self, Cursor, LineError, MAX_REQUEST_LINE, Message, Reply, Request, RequestBody, VERSION,
    Welcome,
};
use super::record;
use crate::engine::archive::{ARCHIVE_FILE, Archive};
use crate::engine::redact::Redactor;

/// Lines waiting to be written to one connection; a full queue makes its
/// senders wait (a slow client slows its own stream, never the run).
pub const OUT_CAPACITY: usize = 64;
/// Events sent per look at the ring.
const BATCH: usize = 256;

/// What a connection is served from.
pub(crate) enum Source {
    /// A run running in this process.
    Live(Arc<LiveRun>),
    /// A folder: a run's record (finished, or not served), or a folder of
    /// runs.
    Folder(PathBuf),
}

impl Source {
    fn dir(&self) -> &Path {
        match self {
            Self::Live(live) => &live.dir,
            Self::Folder(dir) => dir,
        }
    }
}

async fn send(out: &mpsc::Sender<String>, message: &Message) -> bool {
    out.send(protocol::line(message)).await.is_ok()
}

fn error(id: u64, message: impl Into<String>) -> Message {
    Message::Error {
        id: Some(id),
        message: message.into(),
    }
}

/// Serve one connection from `source` until the client closes it.
pub(crate) async fn serve_connection<R, W>(
    source: Source,
    reader: R,
    writer: W,
    redactor: Arc<Redactor>,
    read_only: bool,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let source = Arc::new(source);
    let (out, mut queue) = mpsc::channel::<String>(OUT_CAPACITY);
    let writing = tokio::spawn(async move {
        let mut w = BufWriter::new(writer);
        while let Some(line) = queue.recv().await {
            let text = redactor.text(&line);
            if w.write_all(text.as_bytes()).await.is_err() {
                return;
            }
            if queue.is_empty() && w.flush().await.is_err() {
                return;
            }
        }
        w.flush().await.ok();
    });
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let mut read_only = read_only;
    let mut greeted = false;
    let mut subscription: Option<tokio::task::JoinHandle<()>> = None;
    let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    loop {
        match protocol::read_line(&mut reader, &mut buf, MAX_REQUEST_LINE).await {
            Ok(()) => {}
            Err(LineError::TooLong(max)) => {
                send(
                    &out,
                    &Message::Error {
                        id: None,
                        message: format!("a request longer than {max} bytes"),
                    },
                )
                .await;
                break;
            }
            Err(LineError::Closed | LineError::Io(_)) => break,
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let request: Request = match serde_json::from_slice(&buf) {
            Ok(r) => r,
            Err(e) => {
                send(
                    &out,
                    &Message::Error {
                        id: None,
                        message: format!("not a request: {e}"),
                    },
                )
                .await;
                if greeted {
                    continue;
                }
                break;
            }
        };
        let id = request.id;
        if !greeted {
            let RequestBody::Hello {
                version,
                read_only: watcher,
                ..
            } = request.request
            else {
                send(&out, &error(id, "say hello first")).await;
                break;
            };
            if version != VERSION {
                send(
                    &out,
                    &error(
                        id,
                        format!(
                            "protocol version {version} asked; this server (galapagos {}) speaks version {VERSION}: use the same galapagos on both sides",
                            env!("CARGO_PKG_VERSION")
                        ),
                    ),
                )
                .await;
                break;
            }
            match welcome(&source, read_only || watcher) {
                Ok(w) => {
                    read_only = w.read_only;
                    send(&out, &Message::Welcome(w)).await;
                    greeted = true;
                    continue;
                }
                Err(why) => {
                    send(&out, &error(id, why)).await;
                    break;
                }
            }
        }
        tasks.retain(|t| !t.is_finished());
        match request.request {
            RequestBody::Hello { .. } => {
                send(&out, &error(id, "hello was said already")).await;
            }
            RequestBody::Subscribe { after, history } => {
                if let Some(old) = subscription.take() {
                    old.abort();
                }
                let (source, out) = (Arc::clone(&source), out.clone());
                subscription = Some(tokio::spawn(async move {
                    match &*source {
                        Source::Live(live) => {
                            stream_live(Arc::clone(live), id, after, history, out).await;
                        }
                        Source::Folder(dir) => stream_folder(dir.clone(), id, history, out).await,
                    }
                }));
            }
            RequestBody::Command { command } => {
                let answer = if read_only {
                    error(
                        id,
                        "this connection is read-only (a watcher's): commands are refused",
                    )
                } else {
                    match &*source {
                        Source::Live(live) => match live.command(command) {
                            Ok(()) => Message::Reply {
                                id,
                                reply: Box::new(Reply::Done),
                            },
                            Err(why) => error(id, why),
                        },
                        Source::Folder(dir) => error(
                            id,
                            format!(
                                "{}: the run is not running here (no live run answers on its socket); \
                                 steer a stopped run with `galapagos steer` on the server",
                                dir.display()
                            ),
                        ),
                    }
                };
                send(&out, &answer).await;
            }
            other => {
                let (source, out) = (Arc::clone(&source), out.clone());
                tasks.push(tokio::spawn(async move {
                    answer(source, id, other, out).await;
                }));
            }
        }
    }
    if let Some(s) = subscription {
        s.abort();
    }
    for t in tasks {
        t.abort();
    }
    drop(out);
    writing.await.ok();
}

fn welcome(source: &Source, read_only: bool) -> Result<Welcome, String> {
    let dir = source.dir();
    let (run, live) = match source {
        Source::Live(_) => (true, true),
        Source::Folder(dir) => {
            if !dir.is_dir() {
                return Err(format!("{}: no such folder", dir.display()));
            }
            (dir.join(ARCHIVE_FILE).is_file(), false)
        }
    };
    Ok(Welcome {
        version: VERSION,
        server: format!("galapagos {}", env!("CARGO_PKG_VERSION")),
        path: dir.display().to_string(),
        run,
        live,
        read_only,
    })
}

/// Answer one request that reads (on a blocking thread: SQLite).
async fn answer(source: Arc<Source>, id: u64, request: RequestBody, out: mpsc::Sender<String>) {
    let dir = source.dir().to_path_buf();
    if let RequestBody::Export = request {
        let o = out.clone();
        let done = tokio::task::spawn_blocking(move || record::export(&dir, id, &o)).await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(why)) => {
                send(&out, &error(id, why)).await;
            }
            Err(e) => {
                send(&out, &error(id, format!("the export failed: {e}"))).await;
            }
        }
        return;
    }
    let live_status = match (&*source, &request) {
        (Source::Live(live), RequestBody::Status) => Some(Arc::clone(live)),
        _ => None,
    };
    let live_now = match (&*source, &request) {
        (Source::Live(live), RequestBody::Card | RequestBody::Summary) => live
            .stream
            .lock()
            .ok()
            .map(|s| (s.card_yaml.clone(), s.state.summary.clone())),
        _ => None,
    };
    let reply = tokio::task::spawn_blocking(move || -> Result<Reply, String> {
        match request {
            RequestBody::Status => Ok(Reply::Status(match live_status {
                Some(live) => live.status(),
                None => record::row(&dir, None),
            })),
            RequestBody::Runs => Ok(Reply::Runs(record::rows(&dir))),
            RequestBody::Card => match live_now {
                Some((yaml, _)) => Ok(Reply::Card { yaml }),
                None => {
                    let meta = Archive::open(&dir)
                        .and_then(|a| a.meta())
                        .map_err(|e| e.to_string())?;
                    Ok(Reply::Card {
                        yaml: meta.card_yaml,
                    })
                }
            },
            RequestBody::Summary => {
                if let Some((_, Some(summary))) = live_now {
                    return Ok(Reply::Summary(Some(summary)));
                }
                let archive = Archive::open(&dir).map_err(|e| e.to_string())?;
                let meta = archive.meta().map_err(|e| e.to_string())?;
                let checkpoint = archive.checkpoint().map_err(|e| e.to_string())?;
                record::summary_of(&archive, &dir, &meta, checkpoint.as_ref())
                    .map(|s| Reply::Summary(Some(s)))
                    .map_err(|e| e.to_string())
            }
            RequestBody::Genome { genome } => {
                let archive = Archive::open(&dir).map_err(|e| e.to_string())?;
                match archive.genome(genome).map_err(|e| e.to_string())? {
                    Some(g) => Ok(Reply::Genome(Box::new(g))),
                    None => Err(format!(
                        "{}: no genome #{genome} (the run has {})",
                        dir.display(),
                        archive.genome_count().unwrap_or(0)
                    )),
                }
            }
            RequestBody::Program { genome } => {
                let (genome, program, initial) =
                    crate::engine::takeout::program_files(&dir, genome)
                        .map_err(|e| e.to_string())?;
                Ok(Reply::Program {
                    genome,
                    program,
                    initial,
                })
            }
            RequestBody::Hello { .. }
            | RequestBody::Subscribe { .. }
            | RequestBody::Command { .. }
            | RequestBody::Export => Err("not answered here".to_owned()),
        }
    })
    .await;
    let message = match reply {
        Ok(Ok(reply)) => Message::Reply {
            id,
            reply: Box::new(reply),
        },
        Ok(Err(why)) => error(id, why),
        Err(e) => error(id, format!("the request failed: {e}")),
    };
    send(&out, &message).await;
}

/// Send a snapshot of the live run: its state at the current end of the
/// stream, the heads of the genomes its record holds (when `history`),
/// and where the stream goes on. Returns that point and the genomes sent.
async fn snapshot_live(
    live: &Arc<LiveRun>,
    history: bool,
    out: &mpsc::Sender<String>,
) -> Option<(u64, u64)> {
    let (next, snapshot) = {
        let s = live.stream.lock().ok()?;
        (s.next, s.snapshot())
    };
    let reset = Message::Reset {
        instance: live.instance.clone(),
        live: true,
    };
    if !send(out, &reset).await || !send(out, &Message::Snapshot(Box::new(snapshot))).await {
        return None;
    }
    // Every genome whose event is numbered below `next` is on disk (an
    // event is sent once its genome is), so the record read now holds it;
    // a genome on disk whose event comes later is left out of the stream
    // by its id.
    let genomes = if history && live.dir.join(ARCHIVE_FILE).is_file() {
        let (dir, o) = (live.dir.clone(), out.clone());
        match tokio::task::spawn_blocking(move || record::send_heads(&dir, 0, &o)).await {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => {
                send(
                    out,
                    &Message::Error {
                        id: None,
                        message: e.to_string(),
                    },
                )
                .await;
                0
            }
            Err(_) => return None,
        }
    } else {
        0
    };
    let cursor = Cursor {
        instance: live.instance.clone(),
        next,
        genomes,
    };
    send(out, &Message::Synced { cursor })
        .await
        .then_some((next, genomes))
}

/// Stream the live run to one subscription, from `after` when the ring
/// still holds it, else from a snapshot.
async fn stream_live(
    live: Arc<LiveRun>,
    id: u64,
    after: Option<Cursor>,
    history: bool,
    out: mpsc::Sender<String>,
) {
    struct Counted(Arc<LiveRun>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.subscribers.fetch_sub(1, Ordering::SeqCst);
        }
    }
    live.subscribers.fetch_add(1, Ordering::SeqCst);
    let _counted = Counted(Arc::clone(&live));
    let mut wake = live.seq.subscribe();
    let resume = after.filter(|c| {
        c.instance == live.instance
            && live
                .stream
                .lock()
                .is_ok_and(|s| c.next >= s.first() && c.next <= s.next)
    });
    let subscribed = |resumed: bool, next: u64| Message::Reply {
        id,
        reply: Box::new(Reply::Subscribed { resumed, next }),
    };
    let (mut next, mut holds) = match resume {
        Some(c) => {
            if !send(&out, &subscribed(true, c.next)).await {
                return;
            }
            (c.next, c.genomes)
        }
        None => {
            let now = live.stream.lock().map_or(0, |s| s.next);
            if !send(&out, &subscribed(false, now)).await {
                return;
            }
            match snapshot_live(&live, history, &out).await {
                Some(at) => at,
                None => return,
            }
        }
    };
    loop {
        wake.mark_unchanged();
        let (batch, ended) = match live.stream.lock() {
            Ok(s) => {
                let batch = s.since(next, BATCH);
                let ended = s.ended.clone();
                (batch, ended)
            }
            Err(_) => return,
        };
        let Some(batch) = batch else {
            // fell behind the ring: start over from a snapshot
            match snapshot_live(&live, history, &out).await {
                Some(at) => (next, holds) = at,
                None => return,
            }
            continue;
        };
        if batch.is_empty() {
            if let Some(status) = ended {
                send(&out, &Message::Ended { status }).await;
                return;
            }
            if wake.changed().await.is_err() {
                return;
            }
            continue;
        }
        for (seq, genome, line) in batch {
            next = seq + 1;
            if genome.is_some_and(|g| g < holds) {
                continue;
            }
            if out.send(line.to_string()).await.is_err() {
                return;
            }
        }
    }
}

/// Stream a run's record: its snapshot, then `Ended` (nothing runs here to
/// send events).
async fn stream_folder(dir: PathBuf, id: u64, history: bool, out: mpsc::Sender<String>) {
    let instance = format!("record {}", dir.display());
    let subscribed = Message::Reply {
        id,
        reply: Box::new(Reply::Subscribed {
            resumed: false,
            next: 0,
        }),
    };
    if !send(&out, &subscribed).await {
        return;
    }
    let d = dir.clone();
    let snapshot = match tokio::task::spawn_blocking(move || record::snapshot(&d)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            send(&out, &error(id, e.to_string())).await;
            return;
        }
        Err(e) => {
            send(&out, &error(id, e.to_string())).await;
            return;
        }
    };
    let status = match &snapshot.state.summary {
        Some(s) => s.status.label(),
        None if crate::engine::archive::RunLock::is_held(&dir) => {
            "running (its events are not served: only its record so far)".to_owned()
        }
        None => "interrupted (the record has no end)".to_owned(),
    };
    let reset = Message::Reset {
        instance: instance.clone(),
        live: false,
    };
    if !send(&out, &reset).await || !send(&out, &Message::Snapshot(Box::new(snapshot))).await {
        return;
    }
    let genomes = if history {
        let (d, o) = (dir.clone(), out.clone());
        match tokio::task::spawn_blocking(move || record::send_heads(&d, 0, &o)).await {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => {
                send(&out, &error(id, e.to_string())).await;
                return;
            }
            Err(_) => return,
        }
    } else {
        0
    };
    let cursor = Cursor {
        instance,
        next: 0,
        genomes,
    };
    if send(&out, &Message::Synced { cursor }).await {
        send(&out, &Message::Ended { status }).await;
    }
}
