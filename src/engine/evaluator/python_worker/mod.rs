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
//! In the sandbox (the default), the worker runs in bubblewrap and each
//! standby child is pid 1 of a pid namespace of its own, with its own user,
//! mount and IPC namespaces, a private scratch dir, limits and no privileges
//! (see [`in_sandbox`], the isolation kit [`crate::engine::sandbox`] and
//! `assets/python/galapagos_sandbox.py`); the run maps the lanes' pids
//! across those namespaces.
//!
//! The files: this one (the worker and its children: taking a ready child,
//! one evaluation, killing what is left), [`lanes`] (the lane socket the
//! children connect on; a connection is kept only when its peer, by
//! `SO_PEERCRED`, is a child of the zygote), [`protocol`] (the wire formats,
//! which the Slurm runner's results share), [`code_dir`] (the worker's code
//! in the user's cache, and the private per-run dir), [`in_sandbox`] (its
//! interpreter, its candidates' scratch dirs, the `isolate` entry of its
//! configuration).
//!
//! # The process model
//!
//! **The Python evaluator** (`subprocess`):
//!
//! - One warm worker per run imports the task's `evaluator.py` once (cwd = the task folder), then only forks: a zygote
//!   forks standby children, set up before any candidate exists, and each candidate is evaluated in a child of its own
//!   (with `candidates_per_process` K > 1 a child serves up to K in turn, putting back the process state candidates
//!   commonly change, and retires when a candidate tampered with it).
//! - A child connects to the run's lane socket once; that connection carries the request in and the result out, and
//!   hands the run the read ends of the child's stdout and stderr (head and tail kept). The worker is off that path.
//!   Processes forked from a child lose the connection (`os.register_at_fork`).
//! - The run enforces the time limit itself by killing the child's process group at `timeout_secs`; a crash or hang
//!   costs only that candidate. A backstop replaces a worker that stops supplying children. Dropping the evaluator
//!   kills the worker, its zygote and every child. A worker that has not greeted is killed with its group when its
//!   start is abandoned; a start that fails is recorded before the worker slot is released, and an evaluator that cannot
//!   run at all says so (`Evaluation::evaluator_failed`): the loop then reports the evaluator's failure, not the initial
//!   program's.
//! - What an evaluator reports is kept as it wrote it (captured output never replaces an artifact of the same name;
//!   `failure_stage` is the worker's word only for a stage that raised).

pub(crate) mod code_dir;
pub(crate) mod in_sandbox;
mod lanes;
pub(crate) mod protocol;

use lanes::{LanePool, accept_lanes};
pub(crate) use lanes::{Lanes, bind_lanes};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::engine::evaluator::Evaluation;
use crate::engine::platform;
use crate::engine::sandbox::capture::Capture;
use crate::engine::sandbox::process::kill_groups;
use protocol::{Exited, Hello};

/// How the interpreter starts the worker: import it as a module, so its
/// bytecode is cached next to it in the code dir (`-B`/`PYTHONDONTWRITEBYTECODE`
/// stay in force for everything else, candidates included), then serve. The
/// `-c` entry `''` (the current dir, which is the task dir) leaves
/// `sys.path`: the code dir comes from `PYTHONPATH`, as the script's own dir
/// did, and the worker puts the task dir on the path as before.
pub(crate) const LAUNCH: &str = "import sys
if sys.path and sys.path[0] == '': del sys.path[0]
sys.dont_write_bytecode = False
import galapagos_worker
sys.dont_write_bytecode = True
galapagos_worker.main()
";

/// How to start a worker.
pub(crate) struct Launch<'a> {
    /// What to run: the interpreter, or `bwrap` starting it in the sandbox.
    pub program: &'a Path,
    pub args: Vec<OsString>,
    /// The worker runs in the sandbox (one pid namespace below the run's).
    pub sandboxed: bool,
    /// Working directory (the task dir).
    pub cwd: &'a Path,
    /// The worker's whole environment (see [`crate::engine::sandbox::environment`]).
    pub env: Vec<(OsString, OsString)>,
    /// How long the worker may take to import `evaluator.py` and greet.
    pub startup_limit: Duration,
    /// The task's `evaluator.py` (named in errors).
    pub evaluator_path: &'a Path,
    /// The lane socket, bound (see [`bind_lanes`]).
    pub lanes: Lanes,
    /// Standby children the worker forks as it starts.
    pub depth: usize,
    /// Bytes of each of a candidate's stdout and stderr kept.
    pub output_limit: usize,
}

/// How a child ended: its wait status and the CPU time it used.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exit {
    pub status: i32,
    pub cpu_secs: Option<f64>,
}

/// A worker that greeted.
pub(crate) struct Started {
    pub worker: Arc<Worker>,
    /// Its code ran without up-to-date bytecode (compile it for the next).
    pub stale_bytecode: bool,
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
    /// How children ended, as the worker reported it, by pid (removed when
    /// read).
    statuses: Mutex<HashMap<u32, Exit>>,
    /// Bumped whenever a lane arrives or returns, a status arrives or the
    /// worker dies: waiters re-check their condition.
    events: tokio::sync::watch::Sender<u64>,
    /// Process groups of the children running a candidate (killed with the
    /// worker).
    running: Mutex<HashSet<u32>>,
    /// Children killed once their candidate was done, until they have
    /// exited (pidfds): the next candidate waits for them before it runs.
    dying: Mutex<Vec<Arc<platform::ExitWatch>>>,
    /// The task accepting lane connections.
    accept: Mutex<Option<tokio::task::AbortHandle>>,
    /// Holds the lane socket's dir when the private dir's path was too long
    /// for a socket address.
    _socket_dir: Option<tempfile::TempDir>,
    /// How many pid namespaces the worker is below the run's (1 in the
    /// sandbox): its pids (the zygote's, the children's it reports) are in
    /// its own namespace, lanes' peers are in the run's.
    pid_level: usize,
    /// The zygote's pid in the run's namespace and the depth of its own pid
    /// namespace below the run's, once a lane showed them.
    zygote_outer: Mutex<Option<(u32, usize)>>,
    /// Bytes of each of a candidate's stdout and stderr kept.
    output_limit: usize,
}

impl Worker {
    /// Start a worker and wait for its greeting: ready, or why it cannot
    /// serve (an `evaluator.py` that does not import is
    /// [`SpawnError::Import`]).
    pub(crate) async fn start(launch: Launch<'_>) -> Result<Started, SpawnError> {
        let Launch {
            program,
            args,
            sandboxed,
            cwd,
            env,
            startup_limit,
            evaluator_path,
            lanes,
            depth,
            output_limit,
        } = launch;
        // The worker and its candidates run as this user: keep them out of
        // this process's memory and /proc entries (its environment holds
        // the model's API key). Best effort; a no-op after the first call.
        platform::not_dumpable();
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        platform::own_group(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| SpawnError::Other(format!("cannot run `{}`: {e}", program.display())))?;
        let pid = child.id();
        // Until it greets, the worker (and whatever its import started) is
        // killed as a group if this start is abandoned: a run stopped while
        // `evaluator.py` is still importing leaves nothing behind.
        let mut starting = Starting {
            child: Some(child),
            pid,
        };
        let Some(child) = starting.child.as_mut() else {
            return Err(SpawnError::Other(
                "evaluation worker was not started".to_owned(),
            ));
        };
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SpawnError::Other(
                "evaluation worker has no stdin/stdout/stderr pipe".to_owned(),
            ));
        };
        // What the worker (and bubblewrap) say on stderr: the last few KB,
        // for the error when it cannot start or dies.
        let said = Arc::new(Mutex::new(Capture::new(STDERR_KEPT)));
        tokio::spawn(keep_stderr(stderr, Arc::clone(&said)));
        let mut stdout = BufReader::new(stdout);
        let hello = match tokio::time::timeout(startup_limit, read_line(&mut stdout)).await {
            Err(_) => {
                kill_worker(child, pid);
                return Err(SpawnError::Other(format!(
                    "evaluation worker did not finish importing {} within {:.0} s",
                    evaluator_path.display(),
                    startup_limit.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                let status = exit_status(child).await;
                // Let the stderr reader take the last bytes.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let said = lock(&said).text();
                let said = said.trim();
                if sandboxed && said.starts_with("bwrap:") {
                    return Err(SpawnError::Other(format!(
                        "the sandbox could not start: {said} (see the README's Security model for \
                         what bubblewrap needs; the evaluator's `sandbox: none` runs candidates without \
                         a sandbox)"
                    )));
                }
                let said = if said.is_empty() {
                    String::new()
                } else {
                    format!("; it said: {said}")
                };
                return Err(SpawnError::Other(format!(
                    "evaluation worker for {} exited during start-up ({e}{status}){said}",
                    evaluator_path.display()
                )));
            }
            Ok(Ok(line)) => line,
        };
        let hello: Hello = match serde_json::from_str(&hello) {
            Ok(h) => h,
            Err(e) => {
                kill_worker(child, pid);
                return Err(SpawnError::Other(format!(
                    "evaluation worker sent a malformed greeting: {e}"
                )));
            }
        };
        if !hello.ready {
            kill_worker(child, pid);
            let mut artifacts = BTreeMap::new();
            if !hello.traceback.is_empty() {
                artifacts.insert("traceback".to_owned(), hello.traceback);
            }
            return Err(SpawnError::Import(Evaluation {
                valid: false,
                artifacts,
                error: Some(if hello.import_failed {
                    format!(
                        "cannot import the task evaluator {}: {}",
                        evaluator_path.display(),
                        hello.error
                    )
                } else {
                    format!(
                        "the evaluation worker for {} cannot start: {}",
                        evaluator_path.display(),
                        hello.error
                    )
                }),
                evaluator_failed: true,
                ..Evaluation::default()
            }));
        }
        let Some(child) = starting.child.take() else {
            return Err(SpawnError::Other(
                "evaluation worker was not started".to_owned(),
            ));
        };
        let (commands, lines) = tokio::sync::mpsc::unbounded_channel();
        let worker = Arc::new(Worker {
            pid,
            zygote: hello.zygote,
            child: Mutex::new(child),
            commands,
            dead: Mutex::new(None),
            // The worker forks `depth` children as it starts.
            pool: Mutex::new(LanePool::expecting(depth)),
            depth,
            statuses: Mutex::new(HashMap::new()),
            events: tokio::sync::watch::channel(0).0,
            running: Mutex::new(HashSet::new()),
            dying: Mutex::new(Vec::new()),
            accept: Mutex::new(None),
            _socket_dir: lanes.dir,
            pid_level: usize::from(sandboxed),
            zygote_outer: Mutex::new(None),
            output_limit,
        });
        tokio::spawn(write_commands(stdin, lines));
        tokio::spawn(read_replies(Arc::clone(&worker), stdout));
        let accept = tokio::spawn(accept_lanes(lanes.listener, Arc::downgrade(&worker)));
        *lock(&worker.accept) = Some(accept.abort_handle());
        Ok(Started {
            worker,
            stale_bytecode: hello.stale,
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

    /// Kill the worker (with its zygote), every child it forked that the run
    /// knows of, and every candidate running.
    pub(crate) fn kill(&self) {
        if let Some(accept) = lock(&self.accept).take() {
            accept.abort();
        }
        let mut groups: Vec<i64> = lock(&self.running).iter().map(|p| i64::from(*p)).collect();
        groups.extend(lock(&self.pool).drain_groups());
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

    /// How the child `pid` ended (its wait status, reported by the worker),
    /// waiting up to `limit`; `Err` with the reason when the worker is gone.
    async fn exit_status(&self, pid: u32, limit: Duration) -> Result<Option<Exit>, String> {
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
}

/// Bytes of the worker's own stderr kept for error messages.
const STDERR_KEPT: usize = 4000;

/// Read the worker's stderr to its end, keeping its head and tail.
async fn keep_stderr(mut stderr: tokio::process::ChildStderr, said: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => lock(&said).push(&buf[..n]),
        }
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
            lock(&worker.statuses).insert(
                exited.exited,
                Exit {
                    status: exited.status,
                    cpu_secs: exited.cpu,
                },
            );
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
/// A worker process that has not greeted yet (see [`Worker::start`]).
struct Starting {
    child: Option<Child>,
    pid: Option<u32>,
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            kill_worker(child, self.pid);
        }
    }
}

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
