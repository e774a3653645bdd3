//! Lanes: the connections a worker's evaluation children make to the run.
//! Each child connects once to the worker's lane socket; its lane carries
//! requests in and results out, and arrives with the read ends of the
//! child's stdout and stderr pipes. The run takes a ready lane per
//! candidate, reads the result and the output itself, and kills the child's
//! process group when the time is up or the child is done.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::protocol::{MAX_RESULT_BYTES, RESULT_HEADER, Reply, Request, read_hello};
use super::{RunError, Worker, lock};
use crate::engine::platform::{self, ExitWatch, Pipe, UnixListener, UnixStream};
use crate::engine::sandbox::capture::Capture;
use crate::engine::sandbox::process::{describe_status, kill_groups, ns_pids, proc_stat};

/// A bound lane socket.
pub(crate) struct Lanes {
    pub(super) listener: UnixListener,
    /// Its path (in the worker's configuration).
    pub path: PathBuf,
    /// Holds the socket's dir when the private dir's path was too long for
    /// a socket address.
    pub(super) dir: Option<tempfile::TempDir>,
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

impl Lanes {
    /// Let a sandbox that runs as another user (galapagos as root) connect:
    /// the socket open to all, its dir enterable. Whoever may connect is
    /// still checked (`SO_PEERCRED`), and the private dir around it stays
    /// the owner's.
    pub(crate) fn open_to_others(&self) -> Result<(), String> {
        let mode = |path: &Path, mode: u32| {
            platform::set_mode(path, mode)
                .map_err(|e| format!("cannot open {} to the sandbox's user: {e}", path.display()))
        };
        if let Some(dir) = self.path.parent() {
            mode(dir, 0o711)?;
        }
        mode(&self.path, 0o777)
    }
}

/// One evaluation child: `stream` carries requests in and results out;
/// `stdout`/`stderr` are the read ends of the pipes that are its fds 1 and 2.
pub(super) struct Lane {
    /// The child's pid in the run's pid namespace.
    pid: u32,
    /// Its process group (in the sandbox, led by its namespace's pid 1:
    /// killing the group ends the namespace).
    group: u32,
    /// Its pid in the zygote's namespace (how the worker reports it).
    inner: u32,
    stream: UnixStream,
    stdout: Pipe,
    stderr: Pipe,
    /// Candidates this child has served.
    served: u32,
}

#[derive(Default)]
pub(super) struct LanePool {
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
/// How long the run waits for a child whose lane closed to end by itself.
const END_WAIT: Duration = Duration::from_millis(300);
/// How long the run waits for a killed child's lane to close, and for the
/// worker to report how a child ended.
const REAP_WAIT: Duration = Duration::from_secs(2);

impl LanePool {
    /// A pool whose worker is forking `requested` children.
    pub(super) fn expecting(requested: usize) -> Self {
        Self {
            requested,
            ..Self::default()
        }
    }

    /// Forget every waiting child; their pids (process groups), to kill.
    pub(super) fn drain_groups(&mut self) -> Vec<i64> {
        self.known.clear();
        self.fresh
            .drain(..)
            .chain(self.idle.drain(..))
            .map(|l| i64::from(l.group))
            .collect()
    }
}

impl Worker {
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
    /// Is `pid` (in the run's pid namespace) a child of this worker's
    /// zygote? Its pid in the worker's namespace when it is. Without /proc:
    /// accepted, under the same pid.
    ///
    /// The zygote reports its pid in its own namespace: the parent counts as
    /// the zygote when its pid at the worker's level is that pid and it has
    /// none below (a candidate's processes are in namespaces further down,
    /// where the same number can come up).
    fn forked_by_zygote(&self, pid: u32) -> Option<u32> {
        let Some(zygote) = self.zygote else {
            return Some(pid);
        };
        if !Path::new("/proc/self/stat").exists() {
            return Some(pid);
        }
        let parent = proc_stat(pid)?.get(1)?.parse::<u32>().ok()?;
        let known = *lock(&self.zygote_outer);
        let depth = match known {
            Some((outer, depth)) if outer == parent => depth,
            Some(_) => return None,
            None => {
                // At the worker's level each process has its own pid: the
                // one the worker reported is the zygote.
                let ids = ns_pids(parent)?;
                if ids.get(self.pid_level) != Some(&zygote) {
                    return None;
                }
                let depth = ids.len() - 1;
                lock(&self.zygote_outer).get_or_insert((parent, depth));
                depth
            }
        };
        // The zygote reports its children by their pids in its own namespace.
        ns_pids(pid)?.get(depth).copied()
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
            // Whatever an earlier candidate left is gone before this one runs.
            self.settle_dying().await;
            let guard = RunningGuard::new(self, lane.pid, lane.group);
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
        let mut out = Capture::new(self.output_limit);
        let mut err = Capture::new(self.output_limit);
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
                // The child ends a moment after its lane closes (in the
                // sandbox, once the candidate's namespace is gone): its own
                // exit says more than the kill below would.
                let ended = match self.exit_status(lane.inner, END_WAIT).await {
                    Ok(Some(exit)) => Ok(Some(exit)),
                    _ => {
                        guard.finish();
                        self.exit_status(lane.inner, REAP_WAIT).await
                    }
                };
                guard.finish();
                let (error, status, cpu_secs) = match ended {
                    Ok(Some(exit)) => (
                        describe_status(exit.status),
                        Some(exit.status),
                        exit.cpu_secs,
                    ),
                    Ok(None) => (
                        "candidate ended before the evaluator returned (how is unknown)".to_owned(),
                        None,
                        None,
                    ),
                    // Its parent, the zygote, ended (the candidate may have
                    // killed it), and the worker with it.
                    Err(_) => return Err(RunError::Failed(ZYGOTE_GONE.to_owned())),
                };
                Reply {
                    error: Some(error),
                    status,
                    cpu_secs,
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
            // the candidate. In the sandbox the child is its namespace's pid
            // 1: once it is gone, so is every process the candidate started.
            // The kill is sent; the namespace's teardown (its mounts, its
            // user and IPC namespaces) takes a moment more in the kernel.
            // The next candidate waits for it before it runs, so this
            // result is not held up by it and no later candidate overlaps
            // anything this one left (see `settle_dying`).
            guard.finish();
            self.dying_push(lane.group);
        }
        Ok(reply)
    }
}

impl Worker {
    /// Remember `pid`, just killed, until it has exited: from now on a
    /// candidate waits for it before it runs.
    fn dying_push(&self, pid: u32) {
        // Gone already (reaped): nothing to wait for.
        if let Some(watch) = ExitWatch::open(pid) {
            lock(&self.dying).push(Arc::new(watch));
        }
    }

    /// Wait (up to [`REAP_WAIT`] in all) until every killed child has
    /// exited, and forget those that have.
    async fn settle_dying(&self) {
        let pending: Vec<Arc<ExitWatch>> = lock(&self.dying)
            .iter()
            .filter(|w| !w.exited())
            .cloned()
            .collect();
        if !pending.is_empty() {
            let _ = tokio::task::spawn_blocking(move || {
                let deadline = std::time::Instant::now() + REAP_WAIT;
                let mut left = pending;
                while !left.is_empty() {
                    let wait = deadline.saturating_duration_since(std::time::Instant::now());
                    if wait.is_zero() {
                        break;
                    }
                    let watches: Vec<&ExitWatch> = left.iter().map(|w| &**w).collect();
                    if !ExitWatch::any_exited(&watches, wait) {
                        break;
                    }
                    left.retain(|w| !w.exited());
                }
            })
            .await;
        }
        lock(&self.dying).retain(|w| !w.exited());
    }
}

/// Wait (up to `limit`) until `pid`, which was killed, has exited.
async fn wait_gone(pid: u32, limit: Duration) {
    // Gone already: nothing to wait for.
    let Some(watch) = ExitWatch::open(pid) else {
        return;
    };
    if watch.exited() {
        return;
    }
    let _ = tokio::task::spawn_blocking(move || ExitWatch::any_exited(&[&watch], limit)).await;
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
    })
    .await;
    // The lane closes as the child starts to exit; its exit ends a moment
    // later (then it is a zombie until the zygote reaps it).
    wait_gone(lane.group, REAP_WAIT).await;
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
    group: u32,
    armed: bool,
}

impl<'a> RunningGuard<'a> {
    fn new(worker: &'a Worker, pid: u32, group: u32) -> Self {
        lock(&worker.running).insert(group);
        Self {
            worker,
            pid,
            group,
            armed: true,
        }
    }

    /// The child stays (a reused child between candidates).
    fn release(&mut self) {
        lock(&self.worker.running).remove(&self.group);
        self.armed = false;
    }

    /// Kill the child's group now (its lane is done).
    fn finish(&mut self) {
        if self.armed {
            kill_groups(&[i64::from(self.group)]);
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
pub(super) async fn accept_lanes(listener: UnixListener, worker: std::sync::Weak<Worker>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let worker = worker.clone();
        tokio::spawn(async move {
            let Some(pid) = platform::peer_pid(&stream) else {
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
            if kind != "lane" || fds.len() != 2 {
                return;
            }
            let Some(inner) = worker.forked_by_zygote(pid) else {
                return;
            };
            let group = proc_stat(pid)
                .and_then(|f| f.get(2).and_then(|g| g.parse::<u32>().ok()))
                .filter(|g| *g > 1)
                .unwrap_or(pid);
            let (Some(err), Some(out)) = (fds.pop(), fds.pop()) else {
                return;
            };
            let (Ok(stdout), Ok(stderr)) = (platform::fd_pipe(out), platform::fd_pipe(err)) else {
                return;
            };
            worker.add_lane(Lane {
                pid,
                group,
                inner,
                stream,
                stdout,
                stderr,
                served: 0,
            });
        });
    }
}
