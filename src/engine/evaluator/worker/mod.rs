//! The warm Python worker (`assets/python/galapagos_worker.py`) and the
//! evaluation children it forks: starting it, the lanes its children connect
//! on, evaluating one candidate in a child, and killing what is left.
//!
//! How it works:
//! - The worker imports `evaluator.py` once (cwd = task dir, task dir on
//!   `sys.path`), then only forks. Right after the import it forks a zygote
//!   whose only job is to fork standby children (a process that forks pays a
//!   page fault for every page it writes afterwards; the zygote writes almost
//!   nothing, the worker never forks again). Standbys are set up before a
//!   candidate exists (own process group, parent-death signal, stdin from
//!   /dev/null, a rehearsal of the request path) and connect to this run's
//!   lane socket (in the private dir): one connection per child carries
//!   requests in and results out, and passes the read ends of the child's
//!   stdout and stderr pipes (`SCM_RIGHTS`). A connection is kept only when
//!   its peer (by `SO_PEERCRED`) is a child of the zygote.
//! - An evaluation takes a ready child (the reused one that served last, else
//!   the oldest fresh one; the worker is asked to fork replacements, two
//!   spares by default), writes the request on its lane and waits for the
//!   result while it reads the child's output (head and tail kept, see
//!   [`capture`]). The worker is not on that path: one process hand-over each
//!   way. The run enforces the timeout itself, by killing the child's whole
//!   process group (grandchildren included); a child that served its last
//!   candidate is killed the same way. A child that ends without a result
//!   (a crash, `os._exit`) is described from its wait status, which the
//!   zygote reaps and the worker reports when asked.
//! - A worker that stops supplying children (hung, or its zygote frozen) is
//!   killed with its zygote and children by the caller's backstop. An
//!   evaluation dropped unfinished (a stopped run) kills its candidate;
//!   [`Worker::kill`] kills the worker, its zygote, every child the run knows
//!   of, and any candidate still running.
//!
//! The pieces a backend that runs `evaluator.py` reuses: [`protocol`] (the
//! wire formats), [`code_dir`] (the worker's code), [`capture`] (bounded
//! output), [`process`] (process groups and wait statuses).

pub(crate) mod capture;
pub(crate) mod code_dir;
pub(crate) mod process;
pub(crate) mod protocol;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::net::UnixStream;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::engine::evaluator::Evaluation;
use capture::Capture;
use process::{describe_status, kill_groups, proc_stat, process_running};
use protocol::{Exited, Hello, MAX_RESULT_BYTES, RESULT_HEADER, Reply, Request, read_hello};

/// How to start a worker.
pub(crate) struct Launch<'a> {
    /// The interpreter.
    pub python: &'a Path,
    /// `-c` program that imports and runs the worker.
    pub program: &'a str,
    /// The worker's configuration (its one argument).
    pub config: serde_json::Value,
    /// Working directory (the task dir).
    pub cwd: &'a Path,
    /// `PYTHONPATH` (the code dir first).
    pub python_path: OsString,
    /// How long the worker may take to import `evaluator.py` and greet.
    pub startup_limit: Duration,
    /// The task's `evaluator.py` (named in errors).
    pub evaluator_path: &'a Path,
    /// The lane socket, bound (see [`bind_lanes`]).
    pub lanes: Lanes,
    /// Standby children the worker forks as it starts.
    pub depth: usize,
}

/// A bound lane socket.
pub(crate) struct Lanes {
    listener: UnixListener,
    /// Its path (in the worker's configuration).
    pub path: PathBuf,
    /// Holds the socket's dir when the private dir's path was too long for
    /// a socket address.
    dir: Option<tempfile::TempDir>,
}

/// A worker that greeted: the process, and the interpreter's real path.
pub(crate) struct Started {
    pub worker: Arc<Worker>,
    /// `sys.executable` of the worker (empty when it did not say).
    pub executable: String,
}

/// The lane socket the evaluation children of one worker connect to:
/// `<scratch>/lanes`, in the private (owner-only) dir, or a new owner-only
/// dir under /tmp when that path is too long for a socket address.
pub(crate) fn bind_lanes(scratch: &Path) -> Result<Lanes, String> {
    std::fs::create_dir_all(scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let mut path = scratch.join("lanes");
    let mut dir = None;
    if path.as_os_str().len() > 100 {
        let short = tempfile::Builder::new()
            .prefix("galapagos-")
            .tempdir_in("/tmp")
            .map_err(|e| format!("cannot create a socket dir in /tmp: {e}"))?;
        path = short.path().join("lanes");
        dir = Some(short);
    }
    let listener = UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    Ok(Lanes {
        listener,
        path,
        dir,
    })
}

/// The warm worker process and the evaluation children it forks.
///
/// The worker (Python) only forks standby children through its zygote (when
/// asked, `{"fork": n}`) and tells how a child ended (`{"status": pid}` ->
/// `{"exited": pid, "status": s}`). Each child connects to this worker's lane
/// socket (its lane for requests and results, with the read ends of its
/// stdout and stderr pipes), so a candidate goes from the run to its child
/// and its result straight back: the worker is not on that path. The run takes a ready
/// lane, writes the request, reads the result and the captures, and enforces
/// the timeout by killing the child's process group itself.
pub(crate) struct Worker {
    /// The worker's pid, which is also its process group id.
    pid: Option<u32>,
    /// The zygote's pid: a lane is accepted only from one of its children.
    zygote: Option<u32>,
    child: Mutex<Child>,
    /// Lines for the worker's stdin (written by a task, so asking for forks
    /// never waits).
    commands: tokio::sync::mpsc::UnboundedSender<String>,
    /// Why the worker is gone, once it is.
    dead: Mutex<Option<String>>,
    pool: Mutex<LanePool>,
    /// Standby children kept ready beyond those evaluations are waiting for.
    depth: usize,
    /// Exit statuses the worker reported, by pid (removed when read).
    statuses: Mutex<HashMap<u32, i32>>,
    /// Bumped whenever a lane arrives or returns, a status arrives or the
    /// worker dies: waiters re-check their condition.
    events: tokio::sync::watch::Sender<u64>,
    /// Children running a candidate (killed with the worker).
    running: Mutex<HashSet<u32>>,
    /// The task accepting lane connections.
    accept: Mutex<Option<tokio::task::AbortHandle>>,
    /// Holds the lane socket's dir when the private dir's path was too long
    /// for a socket address.
    _socket_dir: Option<tempfile::TempDir>,
}

/// One evaluation child: `stream` carries requests in and results out;
/// `stdout`/`stderr` are the read ends of the pipes that are its fds 1 and 2.
struct Lane {
    pid: u32,
    stream: UnixStream,
    stdout: pipe::Receiver,
    stderr: pipe::Receiver,
    /// Candidates this child has served.
    served: u32,
}

#[derive(Default)]
struct LanePool {
    /// Children that never served, oldest first.
    fresh: VecDeque<Lane>,
    /// Reused children between candidates, the most recent last (warmest).
    idle: Vec<Lane>,
    /// Children with a lane (fresh, idle or running): one lane per child, so
    /// a candidate cannot slip in a second connection of its own.
    known: HashSet<u32>,
    /// Forks asked of the worker whose lanes have not arrived yet.
    requested: usize,
    /// Evaluations waiting for a lane.
    waiting: usize,
}

/// How a candidate's child ended before it sent a whole result.
const ZYGOTE_GONE: &str = "evaluation worker died (its zygote, the candidate's parent process, ended); \
     the candidate may have killed or crashed it; the worker will be restarted";
/// How long the run waits for a killed child's lane to close, and for the
/// worker to report how a child ended.
const REAP_WAIT: Duration = Duration::from_secs(2);

impl Worker {
    /// Start a worker and wait for its greeting: ready, or why it cannot
    /// serve (an `evaluator.py` that does not import is
    /// [`SpawnError::Import`]).
    pub(crate) async fn start(launch: Launch<'_>) -> Result<Started, SpawnError> {
        let Launch {
            python,
            program,
            config,
            cwd,
            python_path,
            startup_limit,
            evaluator_path,
            lanes,
            depth,
        } = launch;
        let mut cmd = Command::new(python);
        cmd.arg("-c")
            .arg(program)
            .arg(config.to_string())
            .current_dir(cwd)
            .env("PYTHONPATH", python_path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            SpawnError::Other(format!(
                "cannot run the Python interpreter `{}`: {e} (set the evaluator's `python` parameter)",
                python.display()
            ))
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SpawnError::Other(
                "evaluation worker has no stdin/stdout pipe".to_owned(),
            ));
        };
        let pid = child.id();
        let mut stdout = BufReader::new(stdout);
        let hello = match tokio::time::timeout(startup_limit, read_line(&mut stdout)).await {
            Err(_) => {
                kill_worker(&mut child, pid);
                return Err(SpawnError::Other(format!(
                    "evaluation worker did not finish importing {} within {:.0} s",
                    evaluator_path.display(),
                    startup_limit.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                let status = exit_status(&mut child).await;
                return Err(SpawnError::Other(format!(
                    "evaluation worker for {} exited during start-up ({e}{status})",
                    evaluator_path.display()
                )));
            }
            Ok(Ok(line)) => line,
        };
        let hello: Hello = match serde_json::from_str(&hello) {
            Ok(h) => h,
            Err(e) => {
                kill_worker(&mut child, pid);
                return Err(SpawnError::Other(format!(
                    "evaluation worker sent a malformed greeting: {e}"
                )));
            }
        };
        if !hello.ready {
            kill_worker(&mut child, pid);
            let mut artifacts = BTreeMap::new();
            if !hello.traceback.is_empty() {
                artifacts.insert("traceback".to_owned(), hello.traceback);
            }
            return Err(SpawnError::Import(Evaluation {
                valid: false,
                scores: BTreeMap::new(),
                artifacts,
                error: Some(format!(
                    "cannot import the task evaluator {}: {}",
                    evaluator_path.display(),
                    hello.error
                )),
            }));
        }
        let (commands, lines) = tokio::sync::mpsc::unbounded_channel();
        let worker = Arc::new(Worker {
            pid,
            zygote: hello.zygote,
            child: Mutex::new(child),
            commands,
            dead: Mutex::new(None),
            pool: Mutex::new(LanePool {
                // The worker forks `depth` children as it starts.
                requested: depth,
                ..LanePool::default()
            }),
            depth,
            statuses: Mutex::new(HashMap::new()),
            events: tokio::sync::watch::channel(0).0,
            running: Mutex::new(HashSet::new()),
            accept: Mutex::new(None),
            _socket_dir: lanes.dir,
        });
        tokio::spawn(write_commands(stdin, lines));
        tokio::spawn(read_replies(Arc::clone(&worker), stdout));
        let accept = tokio::spawn(accept_lanes(lanes.listener, Arc::downgrade(&worker)));
        *lock(&worker.accept) = Some(accept.abort_handle());
        Ok(Started {
            worker,
            executable: hello.executable,
        })
    }

    /// The worker's pid (its process group), while it was started.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub(crate) fn alive(&self) -> bool {
        lock(&self.dead).is_none()
    }

    fn bump(&self) {
        self.events.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn send(&self, message: &serde_json::Value) {
        let _ = self.commands.send(format!("{message}\n"));
    }

    /// Ask for forks so that fresh children (arrived or on their way) cover
    /// the waiting evaluations, plus `depth` spares when `spares` (after a
    /// fresh child was taken: its replacement forks while it evaluates).
    fn ensure_supply(&self, spares: bool) {
        let need = {
            let mut pool = lock(&self.pool);
            let have = pool.fresh.len() + pool.requested;
            let want = pool.waiting + if spares { self.depth } else { 0 };
            let need = want.saturating_sub(have);
            pool.requested += need;
            need
        };
        if need > 0 {
            self.send(&serde_json::json!({ "fork": need }));
        }
    }

    /// Kill the worker (with its zygote), every child it forked that the run
    /// knows of, and every candidate running.
    pub(crate) fn kill(&self) {
        if let Some(accept) = lock(&self.accept).take() {
            accept.abort();
        }
        let mut groups: Vec<i64> = lock(&self.running).iter().map(|p| i64::from(*p)).collect();
        {
            let mut pool = lock(&self.pool);
            groups.extend(pool.fresh.drain(..).map(|l| i64::from(l.pid)));
            groups.extend(pool.idle.drain(..).map(|l| i64::from(l.pid)));
            pool.known.clear();
        }
        let mut child = lock(&self.child);
        // Only signal the worker's group while the worker is unreaped, so the
        // id cannot have been reused.
        if let (Some(pid), Ok(None)) = (self.pid, child.try_wait()) {
            groups.push(i64::from(pid));
        }
        kill_groups(&groups);
        let _ = child.start_kill();
        drop(child);
        lock(&self.dead).get_or_insert_with(|| "the evaluation worker was stopped".to_owned());
        self.bump();
    }

    /// The worker ended: nothing more arrives from it.
    fn mark_dead(&self, reason: String) {
        lock(&self.dead).get_or_insert(reason);
        self.bump();
    }

    /// A child is ready: its lane and its output pipes arrived.
    fn add_lane(&self, lane: Lane) {
        let mut pool = lock(&self.pool);
        if !pool.known.insert(lane.pid) {
            return;
        }
        pool.fresh.push_back(lane);
        pool.requested = pool.requested.saturating_sub(1);
        drop(pool);
        self.bump();
    }

    /// Is `pid` a child of this worker's zygote? (Without /proc: accepted.)
    fn forked_by_zygote(&self, pid: u32) -> bool {
        let Some(zygote) = self.zygote else {
            return true;
        };
        match proc_stat(pid) {
            Some(fields) => fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(zygote),
            None => !Path::new("/proc/self/stat").exists(),
        }
    }

    /// A ready child for the next candidate: the reused child that served
    /// last, else the oldest fresh one, else the first to arrive within
    /// `limit` (forks are asked for as needed).
    async fn take_lane(&self, limit: Duration) -> Result<Lane, RunError> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut events = self.events.subscribe();
        let mut waiting = WaitingGuard {
            worker: self,
            counted: false,
        };
        loop {
            if let Some(reason) = lock(&self.dead).clone() {
                return Err(RunError::BeforeStart(reason));
            }
            let taken = {
                let mut pool = lock(&self.pool);
                let lane = pool.idle.pop().or_else(|| pool.fresh.pop_front());
                if lane.is_none() && !waiting.counted {
                    pool.waiting += 1;
                    waiting.counted = true;
                }
                lane
            };
            if let Some(lane) = taken {
                drop(waiting);
                if lane.served == 0 {
                    self.ensure_supply(true); // its replacement forks meanwhile
                }
                return Ok(lane);
            }
            self.ensure_supply(false);
            match tokio::time::timeout_at(deadline, events.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    return Err(RunError::BeforeStart(
                        "the evaluation worker went away".to_owned(),
                    ));
                }
                Err(_) => {
                    drop(waiting);
                    self.kill();
                    return Err(RunError::BeforeStart(format!(
                        "evaluation worker did not answer within {:.1} s (no evaluation process became \
                         ready; hung or stuck outside Python); it was killed and will be restarted",
                        limit.as_secs_f64()
                    )));
                }
            }
        }
    }

    /// How the child `pid` ended (its wait status, reported by the worker),
    /// waiting up to `limit`; `Err` with the reason when the worker is gone.
    async fn exit_status(&self, pid: u32, limit: Duration) -> Result<Option<i32>, String> {
        let mut events = self.events.subscribe();
        self.send(&serde_json::json!({ "status": pid }));
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(status) = lock(&self.statuses).remove(&pid) {
                return Ok(Some(status));
            }
            if let Some(reason) = lock(&self.dead).clone() {
                return Err(reason);
            }
            match tokio::time::timeout_at(deadline, events.changed()).await {
                Ok(Ok(())) => {}
                _ => return Ok(None),
            }
        }
    }

    /// Evaluate one candidate in a child of this worker.
    pub(crate) async fn run(
        &self,
        request: &Request<'_>,
        lane_limit: Duration,
    ) -> Result<Reply, RunError> {
        let mut line = serde_json::to_vec(request)
            .map_err(|e| RunError::Failed(format!("cannot encode the request: {e}")))?;
        line.push(b'\n');
        let limit = Duration::from_secs_f64(request.timeout);
        // A child killed from outside while it waited refuses the request
        // (its lane is closed): the next one gets it.
        let (mut lane, guard, deadline) = loop {
            let mut lane = self.take_lane(lane_limit).await?;
            let guard = RunningGuard::new(self, lane.pid);
            let deadline = tokio::time::Instant::now() + limit;
            match tokio::time::timeout_at(deadline, lane.stream.write_all(&line)).await {
                Ok(Ok(())) => break (lane, guard, deadline),
                Ok(Err(_)) => {} // gone: the guard kills what is left of it
                Err(_) => {
                    let mut guard = guard;
                    guard.finish();
                    wait_closed(&mut lane).await;
                    return Ok(timeout_reply(request.timeout));
                }
            }
        };
        let mut guard = guard;
        let mut out = Capture::default();
        let mut err = Capture::default();
        let (mut out_open, mut err_open) = (true, true);
        let mut frame: Vec<u8> = Vec::with_capacity(4096);
        let mut need: Option<usize> = None;
        let timer = tokio::time::sleep_until(deadline);
        tokio::pin!(timer);
        let ended = loop {
            if let Some(n) = need
                && frame.len() >= n
            {
                break Ended::Result;
            }
            // The deadline first: a candidate that prints without pause
            // must not starve it.
            tokio::select! {
                biased;
                () = &mut timer => break Ended::Timeout,
                r = lane.stdout.readable(), if out_open => {
                    out_open = r.is_ok() && out.pump(&lane.stdout);
                }
                r = lane.stderr.readable(), if err_open => {
                    err_open = r.is_ok() && err.pump(&lane.stderr);
                }
                r = lane.stream.read_buf(&mut frame) => match r {
                    Ok(0) | Err(_) => break Ended::Closed,
                    Ok(_) => {
                        if need.is_none() && frame.len() >= RESULT_HEADER {
                            let mut header = [0u8; RESULT_HEADER];
                            header.copy_from_slice(&frame[..RESULT_HEADER]);
                            let len = u64::from_be_bytes(header);
                            if len > MAX_RESULT_BYTES {
                                break Ended::Malformed;
                            }
                            need = usize::try_from(len).ok().map(|l| l + RESULT_HEADER);
                        }
                    }
                },
            }
        };
        let pid = lane.pid;
        let mut reply = match ended {
            Ended::Result => {
                let end = need.unwrap_or(frame.len()).min(frame.len());
                match serde_json::from_slice::<Reply>(&frame[RESULT_HEADER..end]) {
                    Ok(reply) => reply,
                    Err(e) => Reply {
                        error: Some(format!("unreadable evaluation result: {e}")),
                        ..Reply::default()
                    },
                }
            }
            Ended::Malformed => Reply {
                error: Some("unreadable evaluation result: too large".to_owned()),
                ..Reply::default()
            },
            Ended::Timeout => {
                guard.finish();
                wait_closed(&mut lane).await;
                timeout_reply(request.timeout)
            }
            Ended::Closed => {
                guard.finish();
                let error = match self.exit_status(pid, REAP_WAIT).await {
                    Ok(Some(status)) => describe_status(status),
                    Ok(None) => {
                        "candidate ended before the evaluator returned (how is unknown)".to_owned()
                    }
                    // Its parent, the zygote, ended (the candidate may have
                    // killed it), and the worker with it.
                    Err(_) => return Err(RunError::Failed(ZYGOTE_GONE.to_owned())),
                };
                Reply {
                    error: Some(error),
                    ..Reply::default()
                }
            }
        };
        // Everything the candidate printed before its result (or before it
        // was killed) is in the pipes by now.
        out.drain(&lane.stdout);
        err.drain(&lane.stderr);
        out.attach(&mut reply.artifacts, "stdout");
        err.attach(&mut reply.artifacts, "stderr");
        lane.served += 1;
        if reply.reusable {
            guard.release();
            lock(&self.pool).idle.push(lane);
            self.bump();
        } else {
            // Clear the whole group: stray grandchildren must not outlive
            // the candidate.
            guard.finish();
        }
        Ok(reply)
    }
}

/// How waiting for a candidate's result ended.
enum Ended {
    Result,
    Malformed,
    Timeout,
    Closed,
}

/// After its group was killed: wait (briefly) for the child's lane to
/// close and the child to have exited, so it is gone before the reply says
/// so.
async fn wait_closed(lane: &mut Lane) {
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(REAP_WAIT, async {
        loop {
            sink.clear();
            match lane.stream.read_buf(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        // The lane closes as the child starts to exit; its exit ends a
        // moment later (then it is a zombie until the zygote reaps it).
        while process_running(lane.pid) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

/// The reply for a candidate killed at its timeout.
fn timeout_reply(timeout: f64) -> Reply {
    Reply {
        error: Some(format!(
            "timeout: evaluation exceeded {timeout} s and was killed"
        )),
        timeout: true,
        ..Reply::default()
    }
}

/// Counts an evaluation among those waiting for a lane while it waits.
struct WaitingGuard<'a> {
    worker: &'a Worker,
    counted: bool,
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        if self.counted {
            let mut pool = lock(&self.worker.pool);
            pool.waiting = pool.waiting.saturating_sub(1);
        }
    }
}

/// A child running a candidate: its group is killed when the evaluation is
/// dropped unfinished (a stopped run), unless it was handed back.
struct RunningGuard<'a> {
    worker: &'a Worker,
    pid: u32,
    armed: bool,
}

impl<'a> RunningGuard<'a> {
    fn new(worker: &'a Worker, pid: u32) -> Self {
        lock(&worker.running).insert(pid);
        Self {
            worker,
            pid,
            armed: true,
        }
    }

    /// The child stays (a reused child between candidates).
    fn release(&mut self) {
        lock(&self.worker.running).remove(&self.pid);
        self.armed = false;
    }

    /// Kill the child's group now (its lane is done).
    fn finish(&mut self) {
        if self.armed {
            kill_groups(&[i64::from(self.pid)]);
            lock(&self.worker.pool).known.remove(&self.pid);
        }
        self.release();
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Accept lane connections until the worker goes. A child's first line
/// (`lane`) comes with the read ends of its stdout and stderr pipes; a
/// connection is kept only when its peer is a child of the zygote.
async fn accept_lanes(listener: UnixListener, worker: std::sync::Weak<Worker>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let worker = worker.clone();
        tokio::spawn(async move {
            let Some(pid) = stream
                .peer_cred()
                .ok()
                .and_then(|c| c.pid())
                .and_then(|p| u32::try_from(p).ok())
            else {
                return;
            };
            let Ok(Some((kind, mut fds))) =
                tokio::time::timeout(Duration::from_secs(10), read_hello(&stream)).await
            else {
                return;
            };
            let Some(worker) = worker.upgrade() else {
                return;
            };
            if kind != "lane" || fds.len() != 2 || !worker.forked_by_zygote(pid) {
                return;
            }
            let (Some(err), Some(out)) = (fds.pop(), fds.pop()) else {
                return;
            };
            let (Ok(stdout), Ok(stderr)) = (
                pipe::Receiver::from_owned_fd(out),
                pipe::Receiver::from_owned_fd(err),
            ) else {
                return;
            };
            worker.add_lane(Lane {
                pid,
                stream,
                stdout,
                stderr,
                served: 0,
            });
        });
    }
}

/// Write queued lines to the worker's stdin.
async fn write_commands(
    mut stdin: ChildStdin,
    mut lines: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}

/// Keep the exit statuses the worker reports; when its output ends, mark it dead.
async fn read_replies(worker: Arc<Worker>, mut stdout: BufReader<ChildStdout>) {
    let end = loop {
        let text = match read_line(&mut stdout).await {
            Ok(t) => t,
            Err(e) => break e,
        };
        if let Ok(exited) = serde_json::from_str::<Exited>(&text) {
            lock(&worker.statuses).insert(exited.exited, exited.status);
            worker.bump();
        }
    };
    let mut status = String::new();
    for _ in 0..10 {
        if let Ok(Some(s)) = lock(&worker.child).try_wait() {
            status = format!("; {s}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.mark_dead(format!("evaluation worker died ({end}{status})"));
}

async fn read_line(stdout: &mut BufReader<ChildStdout>) -> Result<String, String> {
    let mut line = String::new();
    match stdout.read_line(&mut line).await {
        Ok(0) => Err("end of output".to_owned()),
        Ok(_) => Ok(line),
        Err(e) => Err(format!("read error: {e}")),
    }
}

/// Describe how a worker that is starting ended, waiting briefly for it.
async fn exit_status(child: &mut Child) -> String {
    match tokio::time::timeout(Duration::from_millis(500), child.wait()).await {
        Ok(Ok(status)) => format!("; {status}"),
        _ => String::new(),
    }
}

/// Kill a worker that failed to start (its group, while it is unreaped).
fn kill_worker(child: &mut Child, pid: Option<u32>) {
    if let (Some(pid), Ok(None)) = (pid, child.try_wait()) {
        kill_groups(&[i64::from(pid)]);
    }
    let _ = child.start_kill();
}

pub(crate) enum SpawnError {
    /// evaluator.py failed to import: every evaluation gets this result.
    Import(Evaluation),
    Other(String),
}

pub(crate) enum RunError {
    /// The worker failed before the candidate's child was started.
    BeforeStart(String),
    /// The worker failed while the candidate ran (or hung).
    Failed(String),
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
