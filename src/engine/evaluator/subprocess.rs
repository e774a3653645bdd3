//! `SubprocessEvaluator` (kind `subprocess`): runs the task's `evaluator.py`
//! (OpenEvolve format) in one warm Python worker, one forked child per
//! candidate, so a runaway, crashing or misbehaving candidate can always be
//! killed without paying an interpreter start-up (or an `evaluator.py`
//! import) per candidate. The worker and its children are in
//! [`super::worker`]; this file holds the parameters and the slot trait.
//!
//! - The worker's code (`assets/python/galapagos_worker.py`, embedded) and a
//!   small `openevolve` package (`EvaluationResult` shim) are written, when
//!   missing, to a code dir in the user's cache dir named by their hash, which
//!   is put on `PYTHONPATH` (so evaluators written for OpenEvolve run
//!   unchanged). The worker is imported as a module there, so Python keeps its
//!   bytecode from one run to the next; when the cache dir cannot be written,
//!   the private dir holds the code instead. Candidates' program files go in
//!   a private per-run dir (in RAM, `/dev/shm`, when it exists). The worker
//!   starts through the interpreter as named (param `python`, default
//!   `python3`) and reports its real path (`sys.executable`); a replacement
//!   worker starts from that path, which skips version-manager shims. The run
//!   starts it (`warm_up`) while it opens its record.
//! - By default each child evaluates exactly one candidate; with
//!   `candidates_per_process` K > 1 a child serves up to K in turn (it puts
//!   back the process state candidates commonly change, and retires early
//!   when a candidate tampered with it or left threads or processes behind).
//! - A backstop (timeout + 5 s) covers a worker that stops supplying
//!   children (hung, or its zygote frozen): it is killed with its zygote and
//!   children, and the candidate goes to a fresh worker. An evaluation
//!   dropped unfinished (a stopped run) kills its candidate; dropping the
//!   evaluator kills the worker, its zygote, every child the run knows of,
//!   and any candidate still running.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{OnceCell, Semaphore};

use super::worker::code_dir::{Setup, prepare, write_code};
use super::worker::protocol::Request;
use super::worker::{Launch, RunError, SpawnError, Worker, bind_lanes, lock};
use super::{Candidate, Evaluation, Evaluator};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::task::Task;

/// Extra time the Rust side waits beyond the candidate timeout before it
/// declares the worker itself hung.
const BACKSTOP_GRACE_SECS: f64 = 5.0;
/// Upper bound of the `candidates_per_process` parameter.
const MAX_CANDIDATES_PER_PROCESS: u32 = 1_000_000;

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
    /// Time allowed for `evaluator.py` to import (the worker's start), in
    /// seconds, on top of `timeout_secs`; a start that takes longer fails
    /// once, and the run says so.
    pub import_timeout_secs: f64,
}

impl Default for SubprocessParams {
    fn default() -> Self {
        Self {
            timeout_secs: 60.0,
            cascade: true,
            cascade_thresholds: vec![0.5, 0.75, 0.9],
            python: "python3".to_owned(),
            candidates_per_process: 1,
            import_timeout_secs: 60.0,
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
/// the artifacts `stdout` / `stderr`, or `stdout (captured)` / `stderr
/// (captured)` when the evaluator returned artifacts of those names (never
/// over them); an exception adds `traceback`.
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
/// (weak) candidate. Otherwise `evaluate_stage2` (if defined) runs and its
/// results override stage 1's; stage 3 follows likewise, gated by
/// `cascade_thresholds[1]`. A stage that raises ends the cascade with the
/// artifact `failure_stage` naming it (unless the evaluator set its own);
/// nothing else sets it. Without stage functions `evaluate` is used.
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
            ParamSpec {
                key: "import_timeout_secs",
                doc: "Seconds evaluator.py may take to import, on top of timeout_secs; a start that takes \
                      longer fails once and is killed with everything it started",
                ty: ParamType::Float {
                    min: 0.1,
                    max: 86400.0,
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
        if !params.import_timeout_secs.is_finite() {
            params.import_timeout_secs = 60.0;
        }
        params.import_timeout_secs = params.import_timeout_secs.clamp(0.1, 86400.0);
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
            .and_then(|w| w.as_ref().filter(|w| w.alive()).and_then(|w| w.pid()))
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
        let lanes = bind_lanes(&scratch).map_err(SpawnError::Other)?;
        let worker_config = serde_json::json!({
            "evaluator": self.config.evaluator_path,
            "task_dir": self.config.task_dir,
            "suffix": self.config.suffix,
            "scratch": scratch,
            "lanes": lanes.path,
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
        let started = Worker::start(Launch {
            python: &python,
            program: LAUNCH,
            config: worker_config,
            cwd: &self.config.task_dir,
            python_path,
            startup_limit: Duration::from_secs_f64(
                self.config.params.import_timeout_secs + self.config.params.timeout_secs,
            ),
            evaluator_path: &self.config.evaluator_path,
            lanes,
            depth,
        })
        .await?;
        if !started.executable.is_empty() {
            lock(&self.resolved_python).get_or_insert_with(|| PathBuf::from(&started.executable));
        }
        let worker = started.worker;
        Ok(worker)
    }

    /// The shared worker, started (or replaced, when it died) as needed.
    /// A start that failed while this caller waited for the slot is
    /// reported, not tried again: a hanging `evaluator.py` import costs its
    /// limit once, however many evaluations were waiting (`warming`: the
    /// caller is [`Evaluator::warm_up`], which leaves the failure for the
    /// next evaluation to report).
    async fn current_worker(
        &self,
        setup: &Setup,
        warming: bool,
    ) -> Result<Arc<Worker>, SpawnError> {
        let mut slot = self.worker.lock().await;
        if let Some(w) = slot.as_ref().filter(|w| w.alive()) {
            return Ok(Arc::clone(w));
        }
        if let Some(failure) = self.cached_import_failure() {
            return Err(SpawnError::Import(failure));
        }
        if !warming && let Some(reason) = lock(&self.warm_failure).take() {
            return Err(SpawnError::Other(reason));
        }
        if let Some(old) = slot.take() {
            old.kill();
        }
        match self.spawn_worker(setup).await {
            Ok(worker) => {
                *slot = Some(Arc::clone(&worker));
                Ok(worker)
            }
            // Recorded before the slot is released, so that whoever waited
            // for it sees the failure instead of starting again.
            Err(SpawnError::Import(failure)) => {
                *lock(&self.import_failure) = Some(failure.clone());
                Err(SpawnError::Import(failure))
            }
            Err(SpawnError::Other(reason)) => {
                if warming {
                    *lock(&self.warm_failure) = Some(reason.clone());
                }
                Err(SpawnError::Other(reason))
            }
        }
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
            return Attempt::Done(broken(reason));
        }
        let worker = match self.current_worker(setup, false).await {
            Ok(w) => w,
            Err(SpawnError::Import(failure)) => return Attempt::Done(failure),
            Err(SpawnError::Other(reason)) => return Attempt::Done(broken(reason)),
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
            Err(reason) => return broken(reason),
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
                Attempt::Retry(second) => broken(format!(
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
        // A failure is recorded by `current_worker` and said once, by the
        // next evaluation, rather than met twice (a hanging import would
        // otherwise cost its whole limit again).
        let _ = self.current_worker(setup, true).await;
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

fn invalid(reason: String) -> Evaluation {
    Evaluation {
        valid: false,
        error: Some(reason),
        ..Evaluation::default()
    }
}

/// The evaluator cannot run at all (see [`Evaluation::evaluator_failed`]).
fn broken(reason: String) -> Evaluation {
    Evaluation {
        evaluator_failed: true,
        ..invalid(reason)
    }
}

enum Attempt {
    Done(Evaluation),
    Retry(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::evaluator::worker::code_dir::CODE;
    use crate::engine::evaluator::worker::process::{kill_groups, process_running};
    use std::path::Path;

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
}
