//! The client: one connection to a run service ([`Client`]: requests,
//! one subscription, exports) over the user's `ssh` to
//! `galapagos serve --stdio PATH` on a server, or on this machine to a live
//! run's socket (or, for a record, to a server in this process); and
//! [`Follow`], a subscription that reconnects with backoff after a dropped
//! connection and resumes from its cursor, turning the stream into the
//! [`RunEvent`]s the command line and the studio already read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::protocol::{
    self, Cursor, LineError, MAX_MESSAGE_LINE, Message, Reply, Request, RequestBody, RunState,
    Snapshot, VERSION, Welcome,
};
use super::target::{SshOptions, Target};
use crate::engine::events::{RunEvent, RunSummary};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::redact::Redactor;

/// How a client connects.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    pub ssh: SshOptions,
    /// A watcher's connection: the server refuses its commands.
    pub read_only: bool,
    /// What the client calls itself in the handshake.
    pub client: String,
    /// How long connecting (ssh included) and each answer may take.
    pub timeout: Duration,
}

impl ConnectOptions {
    /// Options from the environment ([`SshOptions::from_env`]).
    pub fn new(client: &str) -> Self {
        Self {
            ssh: SshOptions::from_env(None, None),
            read_only: false,
            client: format!("{client} (galapagos {})", env!("CARGO_PKG_VERSION")),
            timeout: Duration::from_secs(60),
        }
    }
}

/// Why talking to a run service failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ClientError {
    /// No connection came up (ssh failed, the server's galapagos did not
    /// start): worth trying again later.
    #[error("{0}")]
    Connect(String),
    /// The server refused the connection (another protocol version, no
    /// such folder): trying again will not help.
    #[error("{0}")]
    Refused(String),
    /// The server answered a request with an error.
    #[error("{0}")]
    Request(String),
    /// The connection closed.
    #[error("the connection closed{0}")]
    Closed(String),
    #[error("no answer in {0} s")]
    Timeout(u64),
}

enum Waiter {
    Reply(oneshot::Sender<Result<Reply, String>>),
    Export(mpsc::Sender<Result<(Vec<String>, bool), String>>),
}

type Pending = Arc<Mutex<HashMap<u64, Waiter>>>;

/// Messages of the stream a client holds before it reads them.
const STREAM_CAPACITY: usize = 1024;
/// Lines of the transport's own error output kept for messages.
const STDERR_LINES: usize = 20;

/// One connection to a run service.
pub struct Client {
    welcome: Welcome,
    lines: mpsc::Sender<String>,
    pending: Pending,
    stream: tokio::sync::Mutex<Option<mpsc::Receiver<Message>>>,
    next_id: AtomicU64,
    closed: watch::Receiver<Option<String>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// ssh, killed when the client is dropped.
    _child: Option<tokio::process::Child>,
    timeout: Duration,
}

impl Drop for Client {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

type Halves = (
    Box<dyn AsyncRead + Unpin + Send>,
    Box<dyn AsyncWrite + Unpin + Send>,
);

/// The transport to `target`: its two halves, ssh's process and its error
/// output.
async fn transport(
    target: &Target,
    options: &ConnectOptions,
) -> Result<
    (
        Halves,
        Option<tokio::process::Child>,
        Arc<Mutex<Vec<String>>>,
    ),
    ClientError,
> {
    let stderr = Arc::new(Mutex::new(Vec::new()));
    match target {
        Target::Local(dir) => {
            if let Ok(stream) = super::local::connect(dir).await {
                let (r, w) = stream.into_split();
                return Ok(((Box::new(r), Box::new(w)), None, stderr));
            }
            // a record (or a run not served): answered by this process
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (tr, tw) = tokio::io::split(theirs);
            let source = super::session::Source::Folder(dir.clone());
            let redactor = Arc::new(Redactor::new(crate::engine::hub::secret_env_values()));
            let read_only = options.read_only;
            tokio::spawn(super::session::serve_connection(
                source, tr, tw, redactor, read_only,
            ));
            let (r, w) = tokio::io::split(ours);
            Ok(((Box::new(r), Box::new(w)), None, stderr))
        }
        Target::Ssh(t) => {
            let argv = options.ssh.argv(t, options.read_only);
            let Some((program, args)) = argv.split_first() else {
                return Err(ClientError::Connect("no ssh command".to_owned()));
            };
            let mut child = tokio::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| {
                    ClientError::Connect(format!(
                        "cannot run {program} (set GALAPAGOS_SSH to your ssh): {e}"
                    ))
                })?;
            let (Some(stdin), Some(stdout), Some(err)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                return Err(ClientError::Connect("ssh has no pipes".to_owned()));
            };
            let kept = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut reader = BufReader::new(err);
                let mut buf = Vec::new();
                while protocol::read_line(&mut reader, &mut buf, 64 << 10)
                    .await
                    .is_ok()
                {
                    let line = String::from_utf8_lossy(&buf).trim().to_owned();
                    if line.is_empty() {
                        continue;
                    }
                    if let Ok(mut k) = kept.lock() {
                        if k.len() >= STDERR_LINES {
                            k.remove(0);
                        }
                        k.push(line);
                    }
                }
            });
            Ok(((Box::new(stdout), Box::new(stdin)), Some(child), stderr))
        }
    }
}

/// `what` with the transport's last error lines, if it said any.
fn with_stderr(what: &str, stderr: &Mutex<Vec<String>>) -> String {
    let said = stderr.lock().map(|l| l.join("\n")).unwrap_or_default();
    if said.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {said}")
    }
}

impl Client {
    /// Connect to `target` and say hello.
    pub async fn connect(target: &Target, options: &ConnectOptions) -> Result<Self, ClientError> {
        let ((reader, writer), child, stderr) = transport(target, options).await?;
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (stream_tx, stream_rx) = mpsc::channel(STREAM_CAPACITY);
        let (closed_tx, closed_rx) = watch::channel(None);
        let (hello_tx, hello_rx) = oneshot::channel::<Result<Welcome, String>>();
        let (lines_tx, mut lines_rx) = mpsc::channel::<String>(64);
        let writing = tokio::spawn(async move {
            let mut writer = writer;
            while let Some(line) = lines_rx.recv().await {
                if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err()
                {
                    return;
                }
            }
        });
        let reading = {
            let pending = Arc::clone(&pending);
            let stderr = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut hello = Some(hello_tx);
                let why = read_messages(reader, &pending, &stream_tx, &mut hello).await;
                // let ssh say why it ended
                tokio::time::sleep(Duration::from_millis(50)).await;
                let why = with_stderr(&why, &stderr);
                if let Some(h) = hello.take() {
                    h.send(Err(why.clone())).ok();
                }
                if let Ok(mut p) = pending.lock() {
                    p.clear();
                }
                closed_tx.send_replace(Some(why));
            })
        };
        let hello = Request {
            id: 0,
            request: RequestBody::Hello {
                version: VERSION,
                read_only: options.read_only,
                client: options.client.clone(),
            },
        };
        let mut text = serde_json::to_string(&hello).unwrap_or_default();
        text.push('\n');
        lines_tx
            .send(text)
            .await
            .map_err(|_| ClientError::Connect(with_stderr("the connection closed", &stderr)))?;
        let welcome = match tokio::time::timeout(options.timeout, hello_rx).await {
            Err(_) => {
                return Err(ClientError::Connect(with_stderr(
                    &format!("{target}: no answer in {} s", options.timeout.as_secs()),
                    &stderr,
                )));
            }
            Ok(Err(_)) => {
                return Err(ClientError::Connect(with_stderr(
                    &format!("{target}: the connection closed"),
                    &stderr,
                )));
            }
            Ok(Ok(Err(why))) => {
                return Err(if why.starts_with("refused: ") {
                    ClientError::Refused(format!(
                        "{target}: {}",
                        why.trim_start_matches("refused: ")
                    ))
                } else {
                    ClientError::Connect(format!("{target}: {why}"))
                });
            }
            Ok(Ok(Ok(w))) => w,
        };
        Ok(Self {
            welcome,
            lines: lines_tx,
            pending,
            stream: tokio::sync::Mutex::new(Some(stream_rx)),
            next_id: AtomicU64::new(1),
            closed: closed_rx,
            tasks: vec![writing, reading],
            _child: child,
            timeout: options.timeout,
        })
    }

    /// What the server said it is.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Why the connection closed, once it has.
    pub fn closed(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    fn closed_error(&self) -> ClientError {
        ClientError::Closed(self.closed().map(|w| format!(": {w}")).unwrap_or_default())
    }

    async fn send(&self, request: RequestBody, waiter: Waiter) -> Result<u64, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, waiter);
        }
        let mut text = serde_json::to_string(&Request { id, request })
            .map_err(|e| ClientError::Request(format!("cannot encode the request: {e}")))?;
        text.push('\n');
        if self.lines.send(text).await.is_err() {
            return Err(self.closed_error());
        }
        Ok(id)
    }

    /// Ask, and wait for the answer.
    pub async fn request(&self, request: RequestBody) -> Result<Reply, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.send(request, Waiter::Reply(tx)).await?;
        match tokio::time::timeout(self.timeout, rx).await {
            Err(_) => Err(ClientError::Timeout(self.timeout.as_secs())),
            Ok(Err(_)) => Err(self.closed_error()),
            Ok(Ok(Err(why))) => Err(ClientError::Request(why)),
            Ok(Ok(Ok(reply))) => Ok(reply),
        }
    }

    /// Genome `id` with everything it holds.
    pub async fn genome(&self, id: GenomeId) -> Result<Genome, ClientError> {
        match self.request(RequestBody::Genome { genome: id }).await? {
            Reply::Genome(g) => Ok(*g),
            other => Err(unexpected(&other)),
        }
    }

    /// Start the connection's subscription (once per connection): whether
    /// it resumed from `after` and at which event, and its messages.
    pub async fn subscribe(
        &self,
        after: Option<Cursor>,
        history: bool,
    ) -> Result<(bool, u64, mpsc::Receiver<Message>), ClientError> {
        let stream = self
            .stream
            .lock()
            .await
            .take()
            .ok_or_else(|| ClientError::Request("subscribed already".to_owned()))?;
        match self
            .request(RequestBody::Subscribe { after, history })
            .await?
        {
            Reply::Subscribed { resumed, next } => Ok((resumed, next, stream)),
            other => Err(unexpected(&other)),
        }
    }

    /// Every genome as `export-run --jsonl` writes it, chunk by chunk.
    pub async fn export(
        &self,
        mut each: impl FnMut(Vec<String>) -> Result<(), String>,
    ) -> Result<(), ClientError> {
        let (tx, mut rx) = mpsc::channel(4);
        self.send(RequestBody::Export, Waiter::Export(tx)).await?;
        loop {
            match tokio::time::timeout(self.timeout, rx.recv()).await {
                Err(_) => return Err(ClientError::Timeout(self.timeout.as_secs())),
                Ok(None) => return Err(self.closed_error()),
                Ok(Some(Err(why))) => return Err(ClientError::Request(why)),
                Ok(Some(Ok((lines, done)))) => {
                    each(lines).map_err(ClientError::Request)?;
                    if done {
                        return Ok(());
                    }
                }
            }
        }
    }
}

fn unexpected(reply: &Reply) -> ClientError {
    ClientError::Request(format!("an unexpected answer: {reply:?}"))
}

/// Read the server's messages until the connection ends; returns why.
async fn read_messages(
    reader: Box<dyn AsyncRead + Unpin + Send>,
    pending: &Pending,
    stream: &mpsc::Sender<Message>,
    hello: &mut Option<oneshot::Sender<Result<Welcome, String>>>,
) -> String {
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let mut buf = Vec::new();
    loop {
        match protocol::read_line(&mut reader, &mut buf, MAX_MESSAGE_LINE).await {
            Ok(()) => {}
            Err(LineError::Closed) => return "the connection closed".to_owned(),
            Err(e) => return e.to_string(),
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Message = match serde_json::from_slice(&buf) {
            Ok(m) => m,
            Err(e) => {
                let start = String::from_utf8_lossy(&buf[..buf.len().min(200)]).into_owned();
                return format!("the server sent what is not a message ({e}): {start}");
            }
        };
        let take = |id: u64| pending.lock().ok().and_then(|mut p| p.remove(&id));
        match message {
            Message::Welcome(w) => {
                if let Some(h) = hello.take() {
                    h.send(Ok(w)).ok();
                }
            }
            Message::Error { id, message } if hello.is_some() && id.is_none_or(|i| i == 0) => {
                if let Some(h) = hello.take() {
                    h.send(Err(format!("refused: {message}"))).ok();
                }
            }
            Message::Reply { id, reply } => match take(id) {
                Some(Waiter::Reply(tx)) => {
                    tx.send(Ok(*reply)).ok();
                }
                Some(Waiter::Export(tx)) => {
                    tx.send(Err(format!("an unexpected answer: {reply:?}")))
                        .await
                        .ok();
                }
                None => {}
            },
            Message::Error {
                id: Some(id),
                message,
            } => match take(id) {
                Some(Waiter::Reply(tx)) => {
                    tx.send(Err(message)).ok();
                }
                Some(Waiter::Export(tx)) => {
                    tx.send(Err(message)).await.ok();
                }
                None => {
                    if stream
                        .send(Message::Error {
                            id: Some(id),
                            message,
                        })
                        .await
                        .is_err()
                    {
                        continue;
                    }
                }
            },
            Message::Export { id, lines, done } => {
                let waiter = if done {
                    take(id)
                } else {
                    pending.lock().ok().and_then(|p| match p.get(&id) {
                        Some(Waiter::Export(tx)) => Some(Waiter::Export(tx.clone())),
                        _ => None,
                    })
                };
                if let Some(Waiter::Export(tx)) = waiter {
                    tx.send(Ok((lines, done))).await.ok();
                }
            }
            other => {
                // the subscription's stream; nobody reading it yet is fine
                stream.send(other).await.ok();
            }
        }
    }
}

/// What a [`Follow`] reports.
#[derive(Debug)]
pub enum Update {
    /// Connecting (attempt 0 is the first).
    Connecting { attempt: u32 },
    /// Connected; `resumed`: the stream goes on from where the last
    /// connection left it (no snapshot).
    Connected { welcome: Welcome, resumed: bool },
    /// The connection dropped (or could not be made); trying again in
    /// `retry_in`.
    Lost { error: String, retry_in: Duration },
    /// Forget the run as held: a snapshot follows, as events.
    Reset { live: bool },
    /// An event of the run (from a snapshot or live).
    Event(RunEvent),
    /// How long the run has been going (seconds), from a snapshot: its
    /// elapsed time counts from this, not from connecting.
    Running(f64),
    /// The snapshot is in: what follows is live.
    Synced,
    /// No more events: the run ended (`status`), or the record is not
    /// live.
    Ended { status: String },
    /// Following stopped for good (the server refused, or the first
    /// connection could not be made).
    Failed(String),
}

/// Turns a snapshot into events: `Started`, each genome as admitted (the
/// best so far computed as a recorded run's is), then the state.
struct Replay {
    state: RunState,
    best: Option<(GenomeId, f64)>,
    /// The last genome of a chunk, held so the last of all carries the
    /// run's state.
    held: Option<Genome>,
}

impl Replay {
    fn new(snapshot: Snapshot, out: &mut Vec<RunEvent>) -> Self {
        if let Some(info) = snapshot.info {
            out.push(RunEvent::Started(info));
        }
        Self {
            state: snapshot.state,
            best: None,
            held: None,
        }
    }

    fn admitted(&self, genome: Genome, last: bool) -> RunEvent {
        RunEvent::GenomeAdmitted {
            genome: Arc::new(genome),
            best_id: self.best.map(|b| b.0),
            best_score: self.best.map(|b| b.1),
            iterations_done: self.state.iterations_done,
            policy: if last {
                self.state.policy.clone()
            } else {
                Default::default()
            },
            active: if last {
                self.state.active.clone()
            } else {
                Vec::new()
            },
        }
    }

    fn genomes(&mut self, genomes: Vec<Genome>, out: &mut Vec<RunEvent>) {
        for g in genomes {
            if let Some(prev) = self.held.take() {
                out.push(self.admitted(prev, false));
            }
            if let Some(f) = g.selection_fitness().filter(|f| !f.is_nan())
                && self.best.is_none_or(|(_, b)| f > b)
            {
                self.best = Some((g.id, f));
            }
            self.held = Some(g);
        }
    }

    fn finish(mut self, out: &mut Vec<RunEvent>) {
        if let Some(last) = self.held.take() {
            out.push(self.admitted(last, true));
        }
        let s = self.state;
        for (level, message) in s.logs {
            out.push(RunEvent::Log { level, message });
        }
        for change in s.settings_changes {
            out.push(RunEvent::SettingsChanged(change));
        }
        if let Some(refused) = s.refused {
            out.push(RunEvent::SettingsRefused(refused));
        }
        if !s.steering.is_empty() {
            out.push(RunEvent::Steered(s.steering));
        }
        if !s.memory_notes.is_empty() {
            out.push(RunEvent::MemoryUpdated {
                notes: s.memory_notes,
            });
        }
        if s.paused {
            out.push(RunEvent::Paused);
        }
        if let Some(summary) = s.summary {
            out.push(RunEvent::Finished(summary_with_best(summary, self.best)));
        }
    }
}

/// A recorded tally without a best (an interrupted record's) gets the one
/// its genomes show.
fn summary_with_best(mut s: RunSummary, best: Option<(GenomeId, f64)>) -> RunSummary {
    if s.best_id.is_none()
        && let Some((id, score)) = best
    {
        s.best_id = Some(id);
        s.best_score = Some(score);
    }
    s
}

/// The first retry's wait, doubled after each failure up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A subscription that outlives its connections.
pub struct Follow {
    /// What happens, in order.
    pub updates: mpsc::Receiver<Update>,
    current: Arc<Mutex<Option<Arc<Client>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Follow {
    /// Follow `target` (on the current tokio runtime). `history`: the
    /// snapshot holds every genome's head.
    pub fn start(target: Target, options: ConnectOptions, history: bool) -> Self {
        let (tx, rx) = mpsc::channel(4096);
        let current = Arc::new(Mutex::new(None));
        let task = tokio::spawn(follow(target, options, history, tx, Arc::clone(&current)));
        Self {
            updates: rx,
            current,
            task,
        }
    }

    /// The connection now, to ask it for a genome or send a command.
    pub fn client(&self) -> Option<Arc<Client>> {
        self.current.lock().ok().and_then(|c| c.clone())
    }
}

async fn follow(
    target: Target,
    options: ConnectOptions,
    history: bool,
    tx: mpsc::Sender<Update>,
    current: Arc<Mutex<Option<Arc<Client>>>>,
) {
    let mut cursor: Option<Cursor> = None;
    let mut attempt = 0u32;
    let mut backoff = FIRST_BACKOFF;
    let mut connected_once = false;
    loop {
        if tx.send(Update::Connecting { attempt }).await.is_err() {
            return;
        }
        let error = match Client::connect(&target, &options).await {
            Err(ClientError::Refused(why)) => {
                tx.send(Update::Failed(why)).await.ok();
                return;
            }
            Err(e) if !connected_once => {
                tx.send(Update::Failed(e.to_string())).await.ok();
                return;
            }
            Err(e) => e.to_string(),
            Ok(client) => {
                connected_once = true;
                let client = Arc::new(client);
                if let Ok(mut c) = current.lock() {
                    *c = Some(Arc::clone(&client));
                }
                let why = stream(&client, &mut cursor, history, &tx, &mut backoff).await;
                if let Ok(mut c) = current.lock() {
                    *c = None;
                }
                match why {
                    Streamed::Ended | Streamed::Gone => return,
                    Streamed::Lost(why) => why,
                }
            }
        };
        if tx
            .send(Update::Lost {
                error,
                retry_in: backoff,
            })
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        attempt += 1;
    }
}

enum Streamed {
    /// The run ended (or the record is not live): done.
    Ended,
    /// Nobody reads the updates any more.
    Gone,
    Lost(String),
}

async fn stream(
    client: &Client,
    cursor: &mut Option<Cursor>,
    history: bool,
    tx: &mpsc::Sender<Update>,
    backoff: &mut Duration,
) -> Streamed {
    let (resumed, _, mut messages) = match client.subscribe(cursor.clone(), history).await {
        Ok(s) => s,
        Err(e) => return Streamed::Lost(e.to_string()),
    };
    let welcome = client.welcome().clone();
    if tx
        .send(Update::Connected { welcome, resumed })
        .await
        .is_err()
    {
        return Streamed::Gone;
    }
    let mut replay: Option<Replay> = None;
    let mut events = Vec::new();
    loop {
        let Some(message) = messages.recv().await else {
            return Streamed::Lost(
                client
                    .closed()
                    .unwrap_or_else(|| "the connection closed".to_owned()),
            );
        };
        let mut more = Vec::new();
        match message {
            Message::Reset { live, .. } => {
                *cursor = None;
                replay = None;
                more.push(Update::Reset { live });
            }
            Message::Snapshot(s) => {
                if let Some(secs) = s.running_secs {
                    more.push(Update::Running(secs));
                }
                replay = Some(Replay::new(*s, &mut events));
            }
            Message::History { genomes } => {
                if let Some(r) = replay.as_mut() {
                    r.genomes(genomes, &mut events);
                }
            }
            Message::Synced { cursor: c } => {
                if let Some(r) = replay.take() {
                    r.finish(&mut events);
                }
                *cursor = Some(c);
                *backoff = FIRST_BACKOFF;
                more.push(Update::Synced);
            }
            Message::Event { seq, event } => {
                if let Some(c) = cursor.as_mut() {
                    c.next = seq + 1;
                    if let Some(id) = event.genome_id() {
                        c.genomes = c.genomes.max(id + 1);
                    }
                }
                events.push(event.into_event());
            }
            Message::Ended { status } => more.push(Update::Ended { status }),
            Message::Error { message, .. } => {
                return Streamed::Lost(format!("the server: {message}"));
            }
            Message::Welcome(_) | Message::Reply { .. } | Message::Export { .. } => {}
        }
        for e in events.drain(..) {
            if tx.send(Update::Event(e)).await.is_err() {
                return Streamed::Gone;
            }
        }
        for u in more {
            let ended = matches!(u, Update::Ended { .. });
            if tx.send(u).await.is_err() {
                return Streamed::Gone;
            }
            if ended {
                return Streamed::Ended;
            }
        }
    }
}
