//! `SubprocessEvaluator` (kind `subprocess`): runs the task's `evaluator.py`
//! (OpenEvolve format) in one warm Python worker, one forked child per
//! candidate, so a runaway, crashing or misbehaving candidate can always be
//! killed without paying an interpreter start-up (or an `evaluator.py`
//! import) per candidate. The worker, its children and the sandbox around
//! them are in [`super::python_worker`] (on the isolation kit,
//! [`crate::engine::sandbox`]); this file holds the parameters and the slot
//! trait.
//!
//! - The worker's code (embedded) is written, when missing, to a code dir in
//!   the user's cache dir named by its hash, put on `PYTHONPATH` (with the
//!   `openevolve` shim, so evaluators written for OpenEvolve run unchanged).
//!   The interpreter (param `python`) is found outside the sandbox once; the
//!   worker starts from its real path. The run starts it (`warm_up`) while
//!   it opens its record.
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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{OnceCell, Semaphore};

use super::confirm::{self, Confirm, check_fresh};
use super::python_worker::code_dir::{Setup, prepare, write_code};
use super::python_worker::in_sandbox;
use super::python_worker::protocol::Request;
use super::python_worker::{LAUNCH, Launch, RunError, SpawnError, Worker, bind_lanes, lock};
use super::{Candidate, Evaluation, Evaluator};
use crate::engine::component::{BuildContext, Component, ComponentInfo, Feature};
use crate::engine::params::{ParamError, ParamSpec, ParamType, param_table};
use crate::engine::platform;
use crate::engine::sandbox::interpreter::Interpreter;
use crate::engine::sandbox::isolation::{self, Isolation, Sandbox};
use crate::engine::sandbox::limits::{Allowance, Limits};
use crate::engine::sandbox::{bwrap, environment, paths, run_as};
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
    /// Names of environment variables passed to the worker and candidates
    /// on top of the allowlist (PATH, locale, time zone, GPU selection).
    pub env: Vec<String>,
    /// The sandbox, the network, read paths and the limits.
    #[serde(flatten)]
    pub isolation: Isolation,
    /// What a candidate may read and use, and the output kept
    /// ([`Allowance`]).
    #[serde(flatten)]
    pub allowance: Allowance,
    /// Confirming a would-be best ([`super::confirm`]).
    #[serde(flatten)]
    pub confirm: Confirm,
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
            env: Vec::new(),
            isolation: Isolation::default(),
            allowance: Allowance::default(),
            confirm: Confirm::default(),
        }
    }
}

/// Scores candidates with the task's `evaluator.py` in a warm Python
/// worker, one killable forked child per candidate (in the sandbox by
/// default; see [`Sandbox`]).
///
/// The worker reports what `evaluate` returned (every metric with its kind;
/// an `artifacts` dict, or an `EvaluationResult`'s `.artifacts`, as
/// artifacts), what the candidate printed (the artifacts `stdout` / `stderr`,
/// head and tail kept, or `stdout (captured)` ... beside an artifact of that
/// name) and an exception's `traceback`; the run decides validity
/// (`Observed::judge` in the slot module): a crash, a timeout, a limit hit, an
/// evaluator that raised or cannot be imported make the candidate invalid,
/// as do a `combined_score` that is not a finite number and the evaluator's
/// own verdicts (`error`, `validity`).
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
    /// The interpreter, as it reported itself (see [`crate::engine::sandbox::interpreter::probe`]).
    interpreter: OnceCell<Result<Interpreter, String>>,
}

#[derive(Clone, Debug)]
struct Config {
    evaluator_path: PathBuf,
    task_dir: PathBuf,
    suffix: String,
    params: SubprocessParams,
    /// Variables that hold model API keys: never passed, even when listed.
    key_vars: Vec<String>,
    /// The task's hidden paths, handed to the evaluator (`galapagos_eval`
    /// keeps them from candidates).
    hidden: Vec<PathBuf>,
}

/// Staged evaluation (`cascade`, `cascade_thresholds`), as every backend
/// that runs evaluator.py offers it.
pub(crate) const CASCADE_SPECS: &[ParamSpec] = &[
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
];

/// The `subprocess` evaluator's own parameters (the table joins
/// [`CASCADE_SPECS`], [`isolation::SPECS`] and [`confirm::SPECS`] after
/// them).
const OWN_SPECS: &[ParamSpec] = &[
    isolation::timeout_spec(
        "Wall-clock limit per candidate in seconds; the candidate's process group is killed when it is exceeded",
    ),
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
    ParamSpec {
        key: "env",
        doc: "Environment variables passed to evaluator.py and the candidates, by name, on top of \
              PATH, the locale, TZ and GPU selection (everything else, API keys included, is not \
              passed; HOME and TMPDIR are private). A model API key variable is refused",
        ty: ParamType::TextList,
    },
];

impl Component for SubprocessEvaluator {
    type Slot = dyn Evaluator;
    type Params = SubprocessParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "subprocess",
        type_name: "SubprocessEvaluator",
        summary: "Runs the task's evaluator.py in a warm Python worker, one killable forked child per candidate",
        params: param_table!(OWN_SPECS, CASCADE_SPECS, isolation::SPECS, confirm::SPECS),
    };
    const PROVIDES: &'static [Feature] = &[Feature::TaskEvaluatorFile];

    /// Ranges are the table's; an interpreter must be named; `env` names
    /// variables, none of them `OPENAI_API_KEY` (the default key variable).
    fn check(params: &SubprocessParams) -> Result<(), ParamError> {
        if params.python.trim().is_empty() {
            return Err(ParamError {
                key: "python".to_owned(),
                reason: "must name an interpreter".to_owned(),
            });
        }
        environment::check_env(&params.env, &environment::default_key_vars(), &|_| None)?;
        check_fresh(params.confirm.times, params.candidates_per_process)?;
        params.allowance.check()
    }

    /// Uses the task's evaluator path, folder and program suffix, and sizes
    /// the pool by `ctx.parallel`. Refuses an `env` entry that names (or
    /// holds the value of) one of the run's key variables (the model's, the
    /// user settings' endpoints').
    fn build(params: SubprocessParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        let keys = environment::key_vars(ctx);
        environment::check_env(&params.env, &keys, &|name| std::env::var_os(name))?;
        platform::runs_here().map_err(|reason| ParamError {
            key: "sandbox".to_owned(),
            reason,
        })?;
        if params.isolation.sandbox == Sandbox::Bwrap {
            bwrap::find_bwrap().map_err(|reason| ParamError {
                key: "sandbox".to_owned(),
                reason,
            })?;
        }
        let mut evaluator = Self::new(ctx.task, params, ctx.parallel);
        evaluator.config.key_vars = keys;
        Ok(evaluator)
    }

    /// The task's evaluator and the candidates, on this machine.
    fn reach(params: &SubprocessParams) -> Option<crate::engine::component::Reach> {
        Some(params.isolation.reach(
            &params.allowance,
            crate::engine::component::Runs::Candidates,
            crate::engine::component::Place::ThisMachine,
            &params.env,
        ))
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
                key_vars: environment::default_key_vars(),
                hidden: crate::engine::task::hidden::hidden_paths(&task.dir, &task.config)
                    .unwrap_or_default(),
            },
            setup: OnceCell::new(),
            interpreter: OnceCell::new(),
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

    /// What a candidate's process may use.
    fn limits(&self) -> Limits {
        let params = &self.config.params;
        params.allowance.resolve(params.timeout_secs)
    }

    /// The interpreter, found once (outside any sandbox; see
    /// [`crate::engine::sandbox::interpreter::probe`]).
    async fn interpreter(&self, setup: &Setup) -> Result<&Interpreter, String> {
        self.interpreter
            .get_or_init(|| {
                in_sandbox::find_interpreter(
                    &self.config.params.python,
                    &self.config.task_dir,
                    &setup.code,
                )
            })
            .await
            .as_ref()
            .map_err(Clone::clone)
    }

    async fn spawn_worker(&self, setup: &Setup) -> Result<Arc<Worker>, SpawnError> {
        platform::runs_here().map_err(SpawnError::Other)?;
        let n = self.next_worker.fetch_add(1, Ordering::Relaxed);
        if n > 0 {
            // A replacement: the shared code dir may have been pruned by a
            // newer build meanwhile (see `mark_used_and_prune`).
            write_code(&setup.code).map_err(SpawnError::Other)?;
        }
        let params = &self.config.params;
        let bwrap = match params.isolation.sandbox {
            Sandbox::Bwrap => Some(bwrap::find_bwrap().map_err(SpawnError::Other)?),
            Sandbox::None => None,
        };
        let interpreter = self
            .interpreter(setup)
            .await
            .map_err(SpawnError::Other)?
            .clone();
        let dir = setup.dir.path().join(format!("w{n}"));
        let reuse = params.candidates_per_process;
        // Standby children kept ready: a candidate that arrives finds a child
        // already set up; the one taken is replaced meanwhile. Reused children
        // need one only when a child retires.
        let depth = if reuse > 1 { 1 } else { 2 };
        let lanes = bind_lanes(&dir).map_err(SpawnError::Other)?;
        let lanes_dir = lanes
            .path
            .parent()
            .map_or_else(|| dir.clone(), Path::to_path_buf);
        let (home, tmp, scratch) = in_sandbox::scratch_dirs(bwrap.is_some(), setup, &dir);
        let limits = self.limits();
        let isolate = bwrap
            .as_ref()
            .map(|_| in_sandbox::isolation(params.isolation.network, &lanes_dir));
        let worker_config = serde_json::json!({
            "evaluator": self.config.evaluator_path,
            "task_dir": self.config.task_dir,
            "suffix": self.config.suffix,
            "scratch": scratch,
            "lanes": lanes.path,
            "standby": depth,
            "reuse": reuse,
            "isolate": isolate,
            "limits": limits.to_json(),
        });
        // Listed names that hold a key never pass, however the evaluator
        // was built.
        let listed: Vec<String> = params
            .env
            .iter()
            .filter(|n| {
                environment::refuse_listed(n, &self.config.key_vars, &|v| std::env::var_os(v))
                    .is_none()
            })
            .cloned()
            .collect();
        let mut env =
            environment::environment(&listed, &home, &tmp, &setup.code, std::env::vars_os());
        if let Some(hidden) = environment::hidden_var(&self.config.hidden) {
            env.push(hidden);
        }
        let command: Vec<std::ffi::OsString> = vec![
            interpreter.executable.clone().into(),
            "-c".into(),
            LAUNCH.into(),
            worker_config.to_string().into(),
        ];
        let (program, args) = match &bwrap {
            Some(bwrap) => {
                let (uid, gid) = platform::user_ids().map_err(SpawnError::Other)?;
                let run_as = run_as::run_as(uid, run_as::NOBODY);
                let private = paths::private_dirs();
                let task_copy = match run_as {
                    Some(user) => {
                        lanes.open_to_others().map_err(SpawnError::Other)?;
                        run_as::stage_task(
                            user,
                            &self.config.task_dir,
                            setup.dir.path(),
                            &bwrap::hidden_dirs(&private),
                        )
                        .map_err(SpawnError::Other)?
                    }
                    None => None,
                };
                let jail = bwrap::Jail {
                    network: params.isolation.network,
                    interpreter: &interpreter,
                    task_dir: &self.config.task_dir,
                    code_dir: &setup.code,
                    lanes_dir: &lanes_dir,
                    extra: environment::python_path(&env)
                        .into_iter()
                        .chain(
                            params
                                .allowance
                                .read_paths
                                .iter()
                                .map(|p| paths::expand_home(p)),
                        )
                        .collect(),
                    writable: Vec::new(),
                    private,
                    uid,
                    gid,
                    run_as,
                    task_copy,
                    write_quota_mib: limits.write_quota_mib,
                    // Each candidate mounts its one scratch file system
                    // inside the worker's container.
                    one_scratch: false,
                    shown: Vec::new(),
                };
                let command = run_as::as_user(run_as, &command);
                (bwrap.clone(), bwrap::bwrap_args(&jail, &command))
            }
            None => (interpreter.executable.clone(), command[1..].to_vec()),
        };
        let started = Worker::start(Launch {
            program: &program,
            args,
            sandboxed: bwrap.is_some(),
            cwd: &self.config.task_dir,
            env,
            startup_limit: Duration::from_secs_f64(
                params.import_timeout_secs + params.timeout_secs,
            ),
            evaluator_path: &self.config.evaluator_path,
            lanes,
            depth,
            output_limit: params.allowance.output_bytes(),
        })
        .await?;
        if started.stale_bytecode {
            in_sandbox::compile_in_background(&params.python, &self.config.task_dir, &setup.code);
        }
        Ok(started.worker)
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
            return Attempt::Done(Evaluation::broken(reason));
        }
        let worker = match self.current_worker(setup, false).await {
            Ok(w) => w,
            Err(SpawnError::Import(failure)) => return Attempt::Done(failure),
            Err(SpawnError::Other(reason)) => return Attempt::Done(Evaluation::broken(reason)),
        };
        let request = Request {
            id: self.next_request.fetch_add(1, Ordering::Relaxed),
            program: candidate.content.single_text().unwrap_or(""),
            files: (!candidate.content.is_single()).then_some(&candidate.content),
            timeout: self.config.params.timeout_secs,
            cascade: self.config.params.cascade,
            thresholds: &self.config.params.cascade_thresholds,
        };
        let backstop =
            Duration::from_secs_f64(self.config.params.timeout_secs + BACKSTOP_GRACE_SECS);
        match worker.run(&request, backstop).await {
            Ok(mut reply) => {
                reply.explain_limit(self.limits());
                Attempt::Done(reply.into_evaluation())
            }
            Err(RunError::BeforeStart(reason)) => {
                self.retire(&worker).await;
                Attempt::Retry(reason)
            }
            Err(RunError::Failed(reason)) => {
                if !worker.alive() {
                    self.retire(&worker).await;
                }
                Attempt::Done(Evaluation::invalid(reason))
            }
        }
    }
}

#[async_trait::async_trait]
impl Evaluator for SubprocessEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        let setup = match self.setup().await {
            Ok(s) => s,
            Err(reason) => return Evaluation::broken(reason),
        };
        if let Some(failure) = self.cached_import_failure() {
            return failure;
        }
        let Ok(_permit) = self.permits.acquire().await else {
            return Evaluation::invalid("the evaluator is shutting down".to_owned());
        };
        match self.attempt(setup, candidate).await {
            Attempt::Done(e) => e,
            Attempt::Retry(first) => match self.attempt(setup, candidate).await {
                Attempt::Done(e) => e,
                Attempt::Retry(second) => Evaluation::broken(format!(
                    "evaluation worker failed twice before running the candidate: {first}; {second}"
                )),
            },
        }
    }

    fn timeout_secs(&self) -> Option<f64> {
        Some(self.config.params.timeout_secs)
    }

    /// A fresh child per evaluation (`check` refuses reused ones).
    fn confirmation(&self) -> Confirm {
        self.config.params.confirm
    }

    fn unsandboxed(&self) -> Option<String> {
        (self.config.params.isolation.sandbox == Sandbox::None).then(|| {
            "candidates run without a sandbox (evaluator.sandbox: none): they can read and change \
             your files, use the network and leave processes behind"
                .to_owned()
        })
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

enum Attempt {
    Done(Evaluation),
    Retry(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::evaluator::python_worker::code_dir::CODE;
    use crate::engine::sandbox::process::{kill_groups, process_running};

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
            content: format!("def value():\n    return {value}\n").into(),
        }
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

    #[tokio::test]
    async fn a_replacement_worker_rewrites_a_pruned_code_dir() {
        let (_dir, task) = value_task();
        let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
        let cache = tempfile::tempdir().unwrap();
        let code = cache.path().join("worker-test");
        write_code(&code).unwrap();
        let private = tempfile::tempdir().unwrap();
        let (home, tmp) = (private.path().join("h"), private.path().join("t"));
        assert!(
            ev.setup
                .set(Ok(Setup {
                    dir: private,
                    code: code.clone(),
                    home,
                    tmp,
                }))
                .is_ok()
        );
        assert!(ev.evaluate(&value_candidate(1, 0.5)).await.valid);
        let worker = ev.worker_pids()[0];
        // A newer build pruned the dir while this run went on; then the
        // worker died.
        std::fs::remove_dir_all(&code).unwrap();
        kill_groups(&[i64::from(worker)]);
        assert!(eventually(|| !process_running(worker)).await);
        // Once the evaluator has seen it go (its standbys may outlive it by
        // a moment), the next evaluation needs a new worker.
        assert!(eventually(|| ev.worker_pids().is_empty()).await);
        let e = ev.evaluate(&value_candidate(2, 0.75)).await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], 0.75);
        assert_ne!(ev.worker_pids(), vec![worker], "a new worker served");
        for (name, text) in CODE {
            assert_eq!(std::fs::read_to_string(code.join(name)).unwrap(), text);
        }
    }
}
