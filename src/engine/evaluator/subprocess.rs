//! `SubprocessEvaluator`: runs the task's `evaluator.py` (OpenEvolve format)
//! in one warm Python worker, one forked child per candidate, so a runaway,
//! crashing or misbehaving candidate can always be killed without paying an
//! interpreter start-up (or an `evaluator.py` import) per candidate.
//!
//! Over 800 lines on purpose: the worker protocol, the supervision of its
//! processes (zygote, lanes, timeouts, output capture) and their tests are one
//! state machine (ARCHITECTURE.md, "The evaluator process model").
//!
//! How it works:
//! - The worker's code (`assets/python/galapagos_worker.py`, embedded) and a
//!   small `openevolve` package (`EvaluationResult` shim) are written, when
//!   missing, to a code dir in the user's cache dir named by their hash, which
//!   is put on `PYTHONPATH` (so evaluators written for OpenEvolve run
//!   unchanged). The worker is imported as a module there, so Python keeps its
//!   bytecode from one run to the next; when the cache dir cannot be written,
//!   the private dir below holds the code instead. Candidates' program files
//!   go in a private per-run dir (in RAM, `/dev/shm`, when it exists). The
//!   worker starts through the interpreter as named (param `python`, default
//!   `python3`) and reports its real path (`sys.executable`); a replacement
//!   worker starts from that path, which skips version-manager shims. The run
//!   starts it (`warm_up`) while it opens its record.
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
//!   result while it reads the child's output (head and tail kept, ~20 KB
//!   each). The worker is not on that path: one process hand-over each way.
//!   The run enforces the timeout itself, by killing the child's whole
//!   process group (grandchildren included); a child that served its last
//!   candidate is killed the same way. A child that ends without a result
//!   (a crash, `os._exit`) is described from its wait status, which the
//!   zygote reaps and the worker reports when asked. By default each child
//!   evaluates exactly one candidate; with `candidates_per_process` K > 1 a
//!   child serves up to K in turn (it puts back the process state candidates
//!   commonly change, and retires early when a candidate tampered with it or
//!   left threads or processes behind).
//! - A backstop (timeout + 5 s) covers a worker that stops supplying
//!   children (hung, or its zygote frozen): it is killed with its zygote and
//!   children, and the candidate goes to a fresh worker. An evaluation
//!   dropped unfinished (a stopped run) kills its candidate; dropping the
//!   evaluator kills the worker, its zygote, every child the run knows of,
//!   and any candidate still running.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use std::os::fd::OwnedFd;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::net::{UnixListener, UnixStream};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{OnceCell, Semaphore};

use super::{Candidate, Evaluation, Evaluator};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::task::Task;

/// The worker's code, written into the code dir (see [`code_dir`]) when missing.
const WORKER_SCRIPT: &str = include_str!("../../../assets/python/galapagos_worker.py");
/// `openevolve/__init__.py` of the compatibility shim.
const SHIM_INIT: &str = include_str!("../../../assets/python/openevolve/__init__.py");
/// `openevolve/evaluation_result.py` of the compatibility shim.
const SHIM_RESULT: &str = include_str!("../../../assets/python/openevolve/evaluation_result.py");

/// Extra time the Rust side waits beyond the candidate timeout before it
/// declares the worker itself hung.
const BACKSTOP_GRACE_SECS: f64 = 5.0;
/// Upper bound of the `candidates_per_process` parameter.
const MAX_CANDIDATES_PER_PROCESS: u32 = 1_000_000;
/// Time allowed for a worker to start and import `evaluator.py`, on top of
/// the candidate timeout.
const STARTUP_GRACE_SECS: f64 = 60.0;

/// Parameters of [`SubprocessEvaluator`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubprocessParams {
    /// Wall-clock limit per candidate, in seconds (the whole cascade).
    pub timeout_secs: f64,
    /// Use `evaluate_stage1/2/3` when evaluator.py defines `evaluate_stage1`.
    pub cascade: bool,
    /// Score a stage must reach to go on to the next one.
    pub cascade_thresholds: Vec<f64>,
    /// The Python interpreter (name on PATH or a path).
    pub python: String,
    /// Candidates one evaluation process serves in turn before it is
    /// replaced: 1 (default) forks a fresh child per candidate; more reuses a
    /// child, which is faster for cheap evaluators but shares process state
    /// between candidates (see the worker's `CandidateState`).
    pub candidates_per_process: u32,
}

impl Default for SubprocessParams {
    fn default() -> Self {
        Self {
            timeout_secs: 60.0,
            cascade: true,
            cascade_thresholds: vec![0.5, 0.75, 0.9],
            python: "python3".to_owned(),
            candidates_per_process: 1,
        }
    }
}

/// Scores candidates with the task's `evaluator.py` in a warm Python
/// worker, one killable forked child per candidate.
///
/// Result normalisation (done in the worker): numeric and bool values become
/// scores (bool → 0/1); strings become artifacts; lists and dicts become
/// JSON-string artifacts; an `artifacts` dict key (or an `.artifacts`
/// attribute of an `EvaluationResult`) is merged into the artifacts; `None`
/// values are dropped. Captured stdout/stderr (truncated to ~20 KB each) are
/// the artifacts `stdout` / `stderr`; an exception adds `traceback`.
///
/// A candidate is **invalid** when: the evaluator raised (error
/// "evaluator raised <Type>: <msg>"); the evaluation timed out (error starts
/// with "timeout"); the child crashed or exited early (signal or exit status);
/// any metric is NaN or infinite ("non-finite score <key>"); an `error` value
/// is a non-empty string; a `validity` (or `valid`) score is present and
/// <= 0; a `timeout` value is true; evaluator.py cannot be imported; or the
/// worker stopped answering. Everything else is valid, even with a low score.
///
/// Cascade: when `cascade` is on and evaluator.py defines `evaluate_stage1`,
/// stage 1 runs first; if its `combined_score` (else the mean of its scores)
/// is below `cascade_thresholds[0]`, stage 1's result is returned as a valid
/// (weak) candidate with artifact `failure_stage: stage1`. Otherwise
/// `evaluate_stage2` (if defined) runs and its results override stage 1's;
/// stage 3 follows likewise, gated by `cascade_thresholds[1]`. Without stage
/// functions `evaluate` is used.
pub struct SubprocessEvaluator {
    /// The warm worker all evaluations share (started at first use, replaced
    /// when it dies or hangs). Killed in `Drop`, before the private dir goes.
    worker: tokio::sync::Mutex<Option<Arc<Worker>>>,
    /// Candidates in flight at once (`BuildContext.parallel`).
    permits: Semaphore,
    import_failure: Mutex<Option<Evaluation>>,
    /// Why `warm_up` could not start the worker, for the next evaluation.
    warm_failure: Mutex<Option<String>>,
    next_worker: AtomicU64,
    next_request: AtomicU64,
    config: Config,
    setup: OnceCell<Result<Setup, String>>,
    /// The interpreter's real path, as reported by the first worker.
    resolved_python: Mutex<Option<PathBuf>>,
}

#[derive(Clone, Debug)]
struct Config {
    evaluator_path: PathBuf,
    task_dir: PathBuf,
    suffix: String,
    params: SubprocessParams,
}

/// Where the worker's code and the candidates' files are.
struct Setup {
    /// Private per-run dir: candidates' program files (one subdir per worker).
    dir: tempfile::TempDir,
    /// `galapagos_worker.py` and the `openevolve` shim: the user's cache dir
    /// when it can be written (see [`code_dir`]), else `dir`.
    code: PathBuf,
}

/// How the interpreter starts the worker: import it as a module, so its
/// bytecode is cached next to it in the code dir (`-B`/`PYTHONDONTWRITEBYTECODE`
/// stay in force for everything else, candidates included), then serve. The
/// `-c` entry `''` (the current dir, which is the task dir) leaves
/// `sys.path`: the code dir comes from `PYTHONPATH`, as the script's own dir
/// did, and the worker puts the task dir on the path as before.
const LAUNCH: &str = "import sys
if sys.path and sys.path[0] == '': del sys.path[0]
sys.dont_write_bytecode = False
import galapagos_worker
sys.dont_write_bytecode = True
galapagos_worker.main()
";

impl Component for SubprocessEvaluator {
    type Slot = dyn Evaluator;
    type Params = SubprocessParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "subprocess",
        type_name: "SubprocessEvaluator",
        summary: "Runs the task's evaluator.py in a warm Python worker, one killable forked child per candidate",
        params: &[
            ParamSpec {
                key: "timeout_secs",
                doc: "Wall-clock limit per candidate in seconds; the candidate's process group is killed when it is exceeded",
                ty: ParamType::Float {
                    min: 0.1,
                    max: 86400.0,
                },
            },
            ParamSpec {
                key: "cascade",
                doc: "Staged evaluation: run evaluate_stage1/2/3 when evaluator.py defines evaluate_stage1",
                ty: ParamType::Bool,
            },
            ParamSpec {
                key: "cascade_thresholds",
                doc: "Score (combined_score, else mean of scores) a stage must reach to run the next stage",
                ty: ParamType::FloatList {
                    min: -1e12,
                    max: 1e12,
                },
            },
            ParamSpec {
                key: "python",
                doc: "Python interpreter used to run evaluator.py (a name on PATH or a path)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "candidates_per_process",
                doc: "Candidates one evaluation process serves before it is replaced. 1: a fresh process per \
                      candidate (full isolation). More: faster for cheap evaluators; state candidates commonly \
                      change is reset between them and a process that was tampered with is retired, but \
                      candidates share one interpreter. A timeout or crash still kills only that candidate",
                ty: ParamType::Int {
                    min: 1,
                    max: MAX_CANDIDATES_PER_PROCESS as i64,
                },
            },
        ],
    };

    /// Ranges are the table's; an interpreter must be named.
    fn check(params: &SubprocessParams) -> Result<(), ParamError> {
        if params.python.trim().is_empty() {
            return Err(ParamError {
                key: "python".to_owned(),
                reason: "must name an interpreter".to_owned(),
            });
        }
        Ok(())
    }

    /// Uses the task's evaluator path, folder and program suffix, and sizes
    /// the pool by `ctx.parallel`.
    fn build(params: SubprocessParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(ctx.task, params, ctx.parallel))
    }
}

impl SubprocessEvaluator {
    /// Build for a task with explicit parameters and at most `pool_size`
    /// candidates evaluated at once (at least one). Nothing is started until the first
    /// evaluation. Out-of-range timeouts are clamped to 0.1..=86400 s.
    pub fn new(task: &Task, mut params: SubprocessParams, pool_size: usize) -> Self {
        params.timeout_secs = if params.timeout_secs.is_finite() {
            params.timeout_secs.clamp(0.1, 86400.0)
        } else {
            60.0
        };
        params.cascade_thresholds.retain(|t| t.is_finite());
        params.candidates_per_process = params
            .candidates_per_process
            .clamp(1, MAX_CANDIDATES_PER_PROCESS);
        Self {
            worker: tokio::sync::Mutex::new(None),
            permits: Semaphore::new(pool_size.max(1)),
            import_failure: Mutex::new(None),
            warm_failure: Mutex::new(None),
            next_worker: AtomicU64::new(0),
            next_request: AtomicU64::new(0),
            config: Config {
                evaluator_path: task.evaluator_path.clone(),
                task_dir: task.dir.clone(),
                suffix: task.suffix.clone(),
                params,
            },
            setup: OnceCell::new(),
            resolved_python: Mutex::new(None),
        }
    }

    /// The parameters in effect.
    pub fn params(&self) -> &SubprocessParams {
        &self.config.params
    }

    /// Process id of the warm worker, when one is running (for diagnostics
    /// and tests; empty while another task holds the worker slot).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.worker
            .try_lock()
            .ok()
            .and_then(|w| w.as_ref().filter(|w| w.alive()).and_then(|w| w.pid))
            .into_iter()
            .collect()
    }

    async fn setup(&self) -> Result<&Setup, String> {
        self.setup
            .get_or_init(|| async { prepare() })
            .await
            .as_ref()
            .map_err(Clone::clone)
    }

    fn cached_import_failure(&self) -> Option<Evaluation> {
        lock(&self.import_failure).clone()
    }

    async fn spawn_worker(&self, setup: &Setup) -> Result<Arc<Worker>, SpawnError> {
        let n = self.next_worker.fetch_add(1, Ordering::Relaxed);
        if n > 0 {
            // A replacement: the shared code dir may have been pruned by a
            // newer build meanwhile (see `mark_used_and_prune`).
            write_code(&setup.code).map_err(SpawnError::Other)?;
        }
        let scratch = setup.dir.path().join(format!("w{n}"));
        let reuse = self.config.params.candidates_per_process;
        // Standby children kept ready: a candidate that arrives finds a child
        // already set up; the one taken is replaced meanwhile. Reused children
        // need one only when a child retires.
        let depth = if reuse > 1 { 1 } else { 2 };
        let (listener, socket_path, socket_dir) =
            bind_lanes(&scratch).map_err(SpawnError::Other)?;
        let worker_config = serde_json::json!({
            "evaluator": self.config.evaluator_path,
            "task_dir": self.config.task_dir,
            "suffix": self.config.suffix,
            "scratch": scratch,
            "lanes": socket_path,
            "standby": depth,
            "reuse": reuse,
        });
        let mut python_path = std::env::var_os("PYTHONPATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        python_path.push(setup.code.clone());
        let python_path = std::env::join_paths(python_path)
            .map_err(|e| SpawnError::Other(format!("cannot build PYTHONPATH: {e}")))?;
        let resolved = lock(&self.resolved_python).clone();
        let python = resolved.unwrap_or_else(|| PathBuf::from(&self.config.params.python));
        let mut cmd = Command::new(&python);
        cmd.arg("-c")
            .arg(LAUNCH)
            .arg(worker_config.to_string())
            .current_dir(&self.config.task_dir)
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
        let limit = Duration::from_secs_f64(STARTUP_GRACE_SECS + self.config.params.timeout_secs);
        let hello = match tokio::time::timeout(limit, read_line(&mut stdout)).await {
            Err(_) => {
                kill_worker(&mut child, pid);
                return Err(SpawnError::Other(format!(
                    "evaluation worker did not finish importing {} within {:.0} s",
                    self.config.evaluator_path.display(),
                    limit.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                let status = exit_status(&mut child).await;
                return Err(SpawnError::Other(format!(
                    "evaluation worker for {} exited during start-up ({e}{status})",
                    self.config.evaluator_path.display()
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
                    self.config.evaluator_path.display(),
                    hello.error
                )),
            }));
        }
        if !hello.executable.is_empty() {
            lock(&self.resolved_python).get_or_insert_with(|| PathBuf::from(&hello.executable));
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
            _socket_dir: socket_dir,
        });
        tokio::spawn(write_commands(stdin, lines));
        tokio::spawn(read_replies(Arc::clone(&worker), stdout));
        let accept = tokio::spawn(accept_lanes(listener, Arc::downgrade(&worker)));
        *lock(&worker.accept) = Some(accept.abort_handle());
        Ok(worker)
    }

    /// The shared worker, started (or replaced, when it died) as needed.
    async fn current_worker(&self, setup: &Setup) -> Result<Arc<Worker>, SpawnError> {
        let mut slot = self.worker.lock().await;
        if let Some(w) = slot.as_ref().filter(|w| w.alive()) {
            return Ok(Arc::clone(w));
        }
        if let Some(old) = slot.take() {
            old.kill();
        }
        let worker = self.spawn_worker(setup).await?;
        *slot = Some(Arc::clone(&worker));
        Ok(worker)
    }

    /// Kill `worker` and forget it, so that the next evaluation starts a new one.
    async fn retire(&self, worker: &Arc<Worker>) {
        worker.kill();
        let mut slot = self.worker.lock().await;
        if slot.as_ref().is_some_and(|w| Arc::ptr_eq(w, worker)) {
            *slot = None;
        }
    }

    /// One attempt on the shared worker. `Retry` means the worker failed
    /// before the candidate started, so a fresh worker may be tried.
    async fn attempt(&self, setup: &Setup, candidate: &Candidate) -> Attempt {
        if let Some(reason) = lock(&self.warm_failure).take() {
            return Attempt::Done(invalid(reason));
        }
        let worker = match self.current_worker(setup).await {
            Ok(w) => w,
            Err(SpawnError::Import(failure)) => {
                *lock(&self.import_failure) = Some(failure.clone());
                return Attempt::Done(failure);
            }
            Err(SpawnError::Other(reason)) => return Attempt::Done(invalid(reason)),
        };
        let request = Request {
            id: self.next_request.fetch_add(1, Ordering::Relaxed),
            program: &candidate.content,
            timeout: self.config.params.timeout_secs,
            cascade: self.config.params.cascade,
            thresholds: &self.config.params.cascade_thresholds,
        };
        let backstop =
            Duration::from_secs_f64(self.config.params.timeout_secs + BACKSTOP_GRACE_SECS);
        match worker.run(&request, backstop).await {
            Ok(reply) => Attempt::Done(reply.into_evaluation()),
            Err(RunError::BeforeStart(reason)) => {
                self.retire(&worker).await;
                Attempt::Retry(reason)
            }
            Err(RunError::Failed(reason)) => {
                if !worker.alive() {
                    self.retire(&worker).await;
                }
                Attempt::Done(invalid(reason))
            }
        }
    }
}

#[async_trait::async_trait]
impl Evaluator for SubprocessEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        let setup = match self.setup().await {
            Ok(s) => s,
            Err(reason) => return invalid(reason),
        };
        if let Some(failure) = self.cached_import_failure() {
            return failure;
        }
        let Ok(_permit) = self.permits.acquire().await else {
            return invalid("the evaluator is shutting down".to_owned());
        };
        match self.attempt(setup, candidate).await {
            Attempt::Done(e) => e,
            Attempt::Retry(first) => match self.attempt(setup, candidate).await {
                Attempt::Done(e) => e,
                Attempt::Retry(second) => invalid(format!(
                    "evaluation worker failed twice before running the candidate: {first}; {second}"
                )),
            },
        }
    }

    fn timeout_secs(&self) -> Option<f64> {
        Some(self.config.params.timeout_secs)
    }

    /// Start the worker (interpreter start and `evaluator.py` import, tens of
    /// milliseconds). An import failure is kept for the first evaluation to
    /// report; any other failure is met again, and reported, by it.
    async fn warm_up(&self) {
        let Ok(setup) = self.setup().await else {
            return;
        };
        if self.cached_import_failure().is_some() {
            return;
        }
        match self.current_worker(setup).await {
            Ok(_) => {}
            Err(SpawnError::Import(failure)) => *lock(&self.import_failure) = Some(failure),
            // Said once, by the next evaluation, rather than met twice (a
            // hanging import would otherwise cost its whole limit again).
            Err(SpawnError::Other(reason)) => *lock(&self.warm_failure) = Some(reason),
        }
    }
}

impl std::fmt::Debug for SubprocessEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubprocessEvaluator")
            .field("config", &self.config)
            .field("worker_pids", &self.worker_pids())
            .finish()
    }
}

impl Drop for SubprocessEvaluator {
    fn drop(&mut self) {
        // Before the private dir (a field) is removed: the worker, its
        // zygote and standby children, and every candidate still running.
        if let Some(worker) = self.worker.get_mut().take() {
            worker.kill();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn invalid(reason: String) -> Evaluation {
    Evaluation {
        valid: false,
        scores: BTreeMap::new(),
        artifacts: BTreeMap::new(),
        error: Some(reason),
    }
}

enum Attempt {
    Done(Evaluation),
    Retry(String),
}

enum SpawnError {
    /// evaluator.py failed to import: every evaluation gets this result.
    Import(Evaluation),
    Other(String),
}

enum RunError {
    /// The worker failed before the candidate's child was started.
    BeforeStart(String),
    /// The worker failed while the candidate ran (or hung).
    Failed(String),
}

/// The lane socket the evaluation children of one worker connect to:
/// `<scratch>/lanes`, in the private (owner-only) dir, or a new owner-only
/// dir under /tmp when that path is too long for a socket address.
fn bind_lanes(
    scratch: &Path,
) -> Result<(UnixListener, PathBuf, Option<tempfile::TempDir>), String> {
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
    Ok((listener, path, dir))
}

/// Create the private dir, and find (or write) the worker's code.
///
/// Candidates' program files are written in the private dir, one per
/// evaluation, so it goes in RAM (`/dev/shm`) when that exists and `TMPDIR`
/// does not say otherwise: creating a file there costs a few microseconds
/// against a tenth of a millisecond or more on a journalled disk. Otherwise
/// the system temp dir is used.
fn prepare() -> Result<Setup, String> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("galapagos-eval-");
    let in_ram = std::env::var_os("TMPDIR")
        .is_none()
        .then(|| Path::new("/dev/shm"))
        .filter(|p| p.is_dir())
        .and_then(|p| builder.tempdir_in(p).ok());
    let dir = match in_ram {
        Some(dir) => dir,
        None => builder
            .tempdir()
            .map_err(|e| format!("cannot create a private temp dir for the evaluator: {e}"))?,
    };
    let code = match code_dir() {
        Some(code) if write_code(&code).is_ok() => {
            mark_used_and_prune(&code, STALE_CODE_DIR);
            code
        }
        _ => {
            let code = dir.path().to_path_buf();
            write_code(&code)?;
            code
        }
    };
    Ok(Setup { dir, code })
}

/// The worker's code files, by path inside the code dir.
const CODE: [(&str, &str); 3] = [
    ("galapagos_worker.py", WORKER_SCRIPT),
    ("openevolve/__init__.py", SHIM_INIT),
    ("openevolve/evaluation_result.py", SHIM_RESULT),
];

/// A code dir in the user's cache dir (`~/.cache/galapagos/worker-<hash>` on
/// Linux) that outlives the run, so Python compiles the 1,200-line worker
/// once (~8 ms) instead of at every run start. The hash of the code names
/// the dir, so builds with different workers never share one.
fn code_dir() -> Option<PathBuf> {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::hash::DefaultHasher::new();
    CODE.hash(&mut h);
    directories::ProjectDirs::from("org", "galapagos", "galapagos")
        .map(|d| d.cache_dir().join(format!("worker-{:016x}", h.finish())))
}

/// Code dirs of other galapagos builds unused for this long are removed when
/// a run starts; each run marks its own dir used.
const STALE_CODE_DIR: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Mark the code dir `code` used now (its modification time), then remove
/// the other `worker-*` dirs beside it that were not used for longer than
/// `stale`: every galapagos build leaves one (~140 KB). Best effort: a dir
/// that cannot be read or removed is left. A run of an old build that lasts
/// longer than `stale` does not depend on its dir staying: a replacement
/// worker rewrites the code first (see `spawn_worker`).
fn mark_used_and_prune(code: &Path, stale: Duration) {
    let now = std::time::SystemTime::now();
    if let Ok(dir) = std::fs::File::open(code) {
        let _ = dir.set_modified(now);
    }
    let Some(Ok(entries)) = code.parent().map(std::fs::read_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == code || !entry.file_name().to_string_lossy().starts_with("worker-") {
            continue;
        }
        // `DirEntry::metadata` does not follow symlinks: only real dirs go.
        let unused_for = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok());
        if unused_for.is_some_and(|age| age > stale) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Make `code` hold exactly the worker's code. A file is (re)written only when
/// missing or different, through a temporary file and a rename, so runs
/// starting at once never see half a file and an unchanged file keeps the
/// modification time its cached bytecode was checked against. A missing dir
/// is created (a new private dir, or a code dir pruned meanwhile).
fn write_code(code: &Path) -> Result<(), String> {
    for (name, text) in CODE {
        let path = code.join(name);
        if std::fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
            continue;
        }
        let parent = path.parent().unwrap_or(code);
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)
            .map_err(|e| format!("cannot write in {}: {e}", parent.display()))?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        tmp.persist(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
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
struct Worker {
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

/// Bytes of big-endian length before a result's JSON.
const RESULT_HEADER: usize = 8;
/// How a candidate's child ended before it sent a whole result.
const ZYGOTE_GONE: &str = "evaluation worker died (its zygote, the candidate's parent process, ended); \
     the candidate may have killed or crashed it; the worker will be restarted";
/// Largest result a child may send (its artifacts are clipped far below this).
const MAX_RESULT_BYTES: u64 = 64 << 20;
/// How long the run waits for a killed child's lane to close, and for the
/// worker to report how a child ended.
const REAP_WAIT: Duration = Duration::from_secs(2);

impl Worker {
    fn alive(&self) -> bool {
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
    fn kill(&self) {
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
    async fn run(&self, request: &Request<'_>, lane_limit: Duration) -> Result<Reply, RunError> {
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
        out.attach(&mut reply, "stdout");
        err.attach(&mut reply, "stderr");
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

/// The fields of `/proc/<pid>/stat` after the command name (state, ppid, …);
/// None when the process (or /proc) is not there.
fn proc_stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: split after the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Is `pid` a process that has not exited (from /proc; false without it)?
fn process_running(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|f| f.first().is_some_and(|state| state != "Z" && state != "X"))
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

/// What a candidate wrote to one stream: the first and the last
/// 2 * `CAPTURE_LIMIT` bytes (a chatty candidate costs bounded memory; the
/// middle is counted, not kept).
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: usize,
}

/// Characters of each captured stream kept in the artifacts.
const CAPTURE_LIMIT: usize = 20_000;

impl Capture {
    /// Read what is there after `readable` (tokio then waits for new data);
    /// false at end of file.
    fn pump(&mut self, stream: &pipe::Receiver) -> bool {
        let mut buf = [0u8; 65536];
        loop {
            match stream.try_read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => self.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Read everything there is now, without waiting. Direct reads, not
    /// tokio's cached readiness: this must see bytes that arrived just
    /// before the result (the stream is not waited on afterwards).
    fn drain(&mut self, stream: &pipe::Receiver) {
        let mut buf = [0u8; 65536];
        loop {
            match rustix::io::read(stream, &mut buf) {
                Ok(0) => return,
                Ok(n) => self.push(&buf[..n]),
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        let room = (2 * CAPTURE_LIMIT).saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        self.tail.extend(chunk);
        let extra = self.tail.len().saturating_sub(2 * CAPTURE_LIMIT);
        if extra > 0 {
            self.tail.drain(..extra);
            self.dropped += extra;
        }
    }

    fn text(&self) -> String {
        let mut data = self.head.clone();
        if self.dropped > 0 {
            data.extend_from_slice(
                format!("\n... [{} bytes omitted] ...\n", self.dropped).as_bytes(),
            );
        }
        data.extend(self.tail.iter());
        clip(&String::from_utf8_lossy(&data), CAPTURE_LIMIT)
    }

    /// Add the captured text as the artifact `name` unless it is empty.
    fn attach(&self, reply: &mut Reply, name: &str) {
        if !self.head.is_empty() || self.dropped > 0 {
            reply.artifacts.insert(name.to_owned(), self.text());
        }
    }
}

/// At most `limit` characters: the first and last halves around a marker.
fn clip(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_owned();
    }
    let half = limit / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n... [{} characters omitted] ...\n{tail}",
        count - 2 * half
    )
}

/// A wait status as the reason a candidate is invalid.
fn describe_status(status: i32) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    let s = std::process::ExitStatus::from_raw(status);
    if let Some(sig) = s.signal() {
        return format!(
            "candidate crashed: killed by {} (signal {sig})",
            signal_name(sig)
        );
    }
    let code = s.code().unwrap_or(status);
    format!(
        "candidate exited with status {code} before the evaluator returned (os._exit or a crash)"
    )
}

fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    usize::try_from(sig)
        .ok()
        .and_then(|s| s.checked_sub(1))
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("signal {sig}"), |n| (*n).to_owned())
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

/// The first line of a lane connection (at most 16 bytes, read one at a
/// time so nothing after it is consumed) and the fds that came with it.
async fn read_hello(stream: &UnixStream) -> Option<(String, Vec<OwnedFd>)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut line = Vec::new();
    let mut fds = Vec::new();
    loop {
        stream.readable().await.ok()?;
        let mut byte = [0u8; 1];
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = stream.try_io(tokio::io::Interest::READABLE, || {
            rustix::net::recvmsg(
                stream,
                &mut [std::io::IoSliceMut::new(&mut byte)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            )
            .map(|m| m.bytes)
            .map_err(std::io::Error::from)
        });
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        match got {
            Ok(0) => return None,
            Ok(_) if byte[0] == b'\n' => return String::from_utf8(line).ok().map(|l| (l, fds)),
            Ok(_) if line.len() < 16 => line.push(byte[0]),
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
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

/// The worker's report of how a child ended.
#[derive(Deserialize)]
struct Exited {
    exited: u32,
    status: i32,
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

/// SIGKILL whole process groups (`killpg`; groups already gone are skipped).
fn kill_groups(groups: &[i64]) {
    for group in groups.iter().filter(|g| **g > 1) {
        if let Some(pid) = i32::try_from(*group)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

#[derive(Serialize)]
struct Request<'a> {
    id: u64,
    program: &'a str,
    timeout: f64,
    cascade: bool,
    thresholds: &'a [f64],
}

#[derive(Deserialize)]
struct Hello {
    ready: bool,
    /// `sys.executable` of the worker: later workers start from it.
    #[serde(default)]
    executable: String,
    #[serde(default)]
    error: String,
    #[serde(default)]
    traceback: String,
    /// The zygote's pid (lanes are accepted from its children only).
    #[serde(default)]
    zygote: Option<u32>,
}

/// A candidate's result, as its child sent it (or as the run made it up for
/// a timeout or a crash).
#[derive(Debug, Default, Deserialize)]
struct Reply {
    #[serde(default)]
    scores: BTreeMap<String, f64>,
    #[serde(default)]
    nonfinite: Vec<String>,
    #[serde(default)]
    artifacts: BTreeMap<String, String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    timeout: bool,
    /// The child will serve another candidate.
    #[serde(default)]
    reusable: bool,
}

impl Reply {
    /// Apply the validity rule documented on [`SubprocessEvaluator`].
    fn into_evaluation(self) -> Evaluation {
        let Self {
            mut scores,
            nonfinite,
            artifacts,
            error,
            timeout,
            ..
        } = self;
        let mut nonfinite = nonfinite;
        nonfinite.extend(
            scores
                .iter()
                .filter(|(_, v)| !v.is_finite())
                .map(|(k, _)| k.clone()),
        );
        scores.retain(|_, v| v.is_finite());
        let reason = error
            .filter(|e| !e.trim().is_empty())
            .or_else(|| timeout.then(|| "timeout".to_owned()))
            .or_else(|| nonfinite.first().map(|k| format!("non-finite score {k}")))
            .or_else(|| {
                artifacts
                    .get("error")
                    .filter(|e| !e.trim().is_empty())
                    .map(|e| format!("evaluator reported an error: {}", first_line(e)))
            })
            .or_else(|| {
                ["validity", "valid"].iter().find_map(|key| {
                    scores
                        .get(*key)
                        .filter(|v| **v <= 0.0)
                        .map(|v| format!("evaluator marked the candidate invalid ({key} = {v})"))
                })
            })
            .or_else(|| {
                scores
                    .get("timeout")
                    .filter(|v| **v > 0.0)
                    .map(|_| "evaluator reported a timeout".to_owned())
            });
        Evaluation {
            valid: reason.is_none(),
            scores,
            artifacts,
            error: reason,
        }
    }
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE_EVALUATOR: &str = r#"
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {"combined_score": mod.value()}
"#;

    fn value_task() -> (tempfile::TempDir, Task) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("evaluator.py"), VALUE_EVALUATOR).unwrap();
        std::fs::write(
            dir.path().join("initial_program.py"),
            "def value():\n    return 0.25\n",
        )
        .unwrap();
        let task = Task::load(dir.path()).unwrap();
        (dir, task)
    }

    fn value_candidate(id: u64, value: f64) -> Candidate {
        Candidate {
            id,
            content: format!("def value():\n    return {value}\n"),
        }
    }

    /// Children of `pid` that are alive (not zombies), from /proc.
    fn live_children(pid: u32) -> Vec<u32> {
        let path = format!("/proc/{pid}/task/{pid}/children");
        let Ok(text) = std::fs::read_to_string(path) else {
            return Vec::new();
        };
        text.split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter(|p| alive(*p))
            .collect()
    }

    fn alive(pid: u32) -> bool {
        process_running(pid)
    }

    /// Waits up to 5 s for `cond`.
    async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
        for _ in 0..100 {
            if cond() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cond()
    }

    /// The worker's zygote (its one child) and the zygote's live children
    /// (the standby children waiting for candidates).
    fn zygote_and_standbys(worker: u32) -> Option<(u32, Vec<u32>)> {
        let children = live_children(worker);
        let [zygote] = children.as_slice() else {
            return None;
        };
        Some((*zygote, live_children(*zygote)))
    }

    fn standbys(worker: u32) -> Vec<u32> {
        zygote_and_standbys(worker)
            .map(|(_, s)| s)
            .unwrap_or_default()
    }

    /// A candidate whose score is the pid of the process evaluating it.
    fn pid_candidate(id: u64) -> Candidate {
        Candidate {
            id,
            content: "import os\ndef value():\n    return os.getpid()\n".to_owned(),
        }
    }

    #[tokio::test]
    async fn standby_children_are_ready_between_candidates_and_each_candidate_gets_a_fresh_one() {
        if !Path::new("/proc/self/task").exists() {
            return; // needs Linux /proc to see the worker's children
        }
        let (_dir, task) = value_task();
        let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
        let e = ev.evaluate(&pid_candidate(1)).await;
        assert!(e.valid, "{e:?}");
        let first = e.scores["combined_score"] as u32;
        let worker = ev.worker_pids()[0];
        assert!(
            eventually(|| !alive(first)).await,
            "the child that evaluated is killed"
        );
        // Two standby children wait, forked by the worker's zygote.
        assert!(eventually(|| standbys(worker).len() == 2).await);
        let before = standbys(worker);
        let e = ev.evaluate(&pid_candidate(2)).await;
        let second = e.scores["combined_score"] as u32;
        assert!(before.contains(&second), "a waiting child took it");
        assert!(
            eventually(|| !alive(second)).await,
            "the child that evaluated must be gone"
        );
        assert_eq!(
            before.iter().filter(|p| alive(**p)).count(),
            1,
            "the other one still waits"
        );
        assert!(eventually(|| standbys(worker).len() == 2).await);
        // A candidate that changes module state cannot affect the next one:
        // each runs in its own child forked from the clean zygote.
        let e = ev
            .evaluate(&Candidate {
                id: 3,
                content:
                    "import evaluator\nevaluator.evaluate = None\ndef value():\n    return 0.1\n"
                        .to_owned(),
            })
            .await;
        assert!(e.valid, "{e:?}");
        let e = ev.evaluate(&value_candidate(4, 0.3)).await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], 0.3);
    }

    #[tokio::test]
    async fn standbys_killed_while_idle_are_replaced_and_all_die_with_the_evaluator() {
        if !Path::new("/proc/self/task").exists() {
            return;
        }
        let (_dir, task) = value_task();
        let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
        assert!(ev.evaluate(&value_candidate(1, 0.5)).await.valid);
        let worker = ev.worker_pids()[0];
        assert!(eventually(|| standbys(worker).len() == 2).await);
        let killed = standbys(worker);
        let groups: Vec<i64> = killed.iter().map(|p| i64::from(*p)).collect();
        kill_groups(&groups);
        assert!(eventually(|| killed.iter().all(|p| !alive(*p))).await);
        let e = ev.evaluate(&value_candidate(2, 0.625)).await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], 0.625);
        assert_eq!(ev.worker_pids(), vec![worker], "the worker itself survives");
        assert!(eventually(|| standbys(worker).len() == 2).await);
        let (zygote, waiting) = zygote_and_standbys(worker).expect("a zygote");
        drop(ev);
        assert!(
            eventually(|| !alive(worker)).await,
            "worker survived the drop"
        );
        assert!(eventually(|| !alive(zygote)).await, "zygote survived");
        for standby in waiting {
            assert!(
                eventually(|| !alive(standby)).await,
                "idle standby child {standby} survived the evaluator"
            );
        }
    }

    #[tokio::test]
    async fn candidate_faking_completion_is_invalid() {
        // The child's completion pipe is an inherited fd; a candidate that
        // writes to every fd it finds must not produce a bogus result.
        let (_dir, task) = value_task();
        let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
        let program = "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'1')\n    except OSError:\n        pass\nos._exit(0)\n";
        let e = ev
            .evaluate(&Candidate {
                id: 1,
                content: program.to_owned(),
            })
            .await;
        assert!(!e.valid, "{e:?}");
        assert!(e.error.is_some());
        let e = ev.evaluate(&value_candidate(2, 0.5)).await;
        assert!(e.valid, "{e:?}");
    }

    fn reply(scores: &[(&str, f64)]) -> Reply {
        Reply {
            scores: scores.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            ..Reply::default()
        }
    }

    #[test]
    fn code_dirs_of_other_builds_unused_for_long_are_pruned() {
        let cache = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(24 * 60 * 60);
        let now = std::time::SystemTime::now();
        let make = |name: &str, age: Duration| {
            let dir = cache.path().join(name);
            std::fs::create_dir_all(dir.join("openevolve")).unwrap();
            std::fs::write(dir.join("galapagos_worker.py"), "x").unwrap();
            std::fs::File::open(&dir)
                .unwrap()
                .set_modified(now - age)
                .unwrap();
            dir
        };
        let current = make("worker-current", 90 * day);
        let old = make("worker-old", 31 * day);
        let recent = make("worker-recent", 29 * day);
        let not_ours = make("other-old", 90 * day);
        let file = cache.path().join("worker-file");
        std::fs::write(&file, "x").unwrap();
        std::fs::File::open(&file)
            .unwrap()
            .set_modified(now - 90 * day)
            .unwrap();

        mark_used_and_prune(&current, 30 * day);

        assert!(!old.exists(), "a build's dir unused for 31 days is removed");
        assert!(recent.is_dir() && not_ours.is_dir() && file.is_file());
        assert!(
            current.join("galapagos_worker.py").is_file(),
            "the current dir stays"
        );
        let age = now
            .duration_since(std::fs::metadata(&current).unwrap().modified().unwrap())
            .unwrap_or_default();
        assert!(age < day, "the current dir is marked used: {age:?}");
    }

    #[tokio::test]
    async fn a_replacement_worker_rewrites_a_pruned_code_dir() {
        let (_dir, task) = value_task();
        let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
        let cache = tempfile::tempdir().unwrap();
        let code = cache.path().join("worker-test");
        write_code(&code).unwrap();
        let private = tempfile::tempdir().unwrap();
        assert!(
            ev.setup
                .set(Ok(Setup {
                    dir: private,
                    code: code.clone()
                }))
                .is_ok()
        );
        assert!(ev.evaluate(&value_candidate(1, 0.5)).await.valid);
        let worker = ev.worker_pids()[0];
        // A newer build pruned the dir while this run went on; then the
        // worker died.
        std::fs::remove_dir_all(&code).unwrap();
        kill_groups(&[i64::from(worker)]);
        assert!(eventually(|| !alive(worker)).await);
        let e = ev.evaluate(&value_candidate(2, 0.75)).await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], 0.75);
        assert_ne!(ev.worker_pids(), vec![worker], "a new worker served");
        for (name, text) in CODE {
            assert_eq!(std::fs::read_to_string(code.join(name)).unwrap(), text);
        }
    }

    #[test]
    fn validity_rule() {
        let ok = reply(&[("combined_score", 0.4)]).into_evaluation();
        assert!(ok.valid, "{ok:?}");
        assert_eq!(ok.scores["combined_score"], 0.4);

        let v = reply(&[("combined_score", 0.4), ("validity", 0.0)]).into_evaluation();
        assert!(!v.valid);
        assert!(v.error.unwrap_or_default().contains("validity = 0"));

        let v = reply(&[("valid", 1.0)]).into_evaluation();
        assert!(v.valid);

        let v = reply(&[("timeout", 1.0)]).into_evaluation();
        assert!(!v.valid);

        let mut r = reply(&[("combined_score", 1.0)]);
        r.nonfinite = vec!["sum".to_owned()];
        let v = r.into_evaluation();
        assert_eq!(v.error.as_deref(), Some("non-finite score sum"));

        let mut r = reply(&[("combined_score", 1.0)]);
        r.artifacts
            .insert("error".to_owned(), "overlap\nmore".to_owned());
        let v = r.into_evaluation();
        assert!(!v.valid);
        assert_eq!(
            v.error.as_deref(),
            Some("evaluator reported an error: overlap")
        );

        let mut r = reply(&[("combined_score", 1.0)]);
        r.artifacts.insert("error".to_owned(), "  ".to_owned());
        assert!(r.into_evaluation().valid);

        let mut r = reply(&[]);
        r.timeout = true;
        r.error = Some("timeout: evaluation exceeded 1 s and was killed".to_owned());
        let v = r.into_evaluation();
        assert!(!v.valid);
        assert!(v.error.unwrap_or_default().starts_with("timeout"));
    }
}
