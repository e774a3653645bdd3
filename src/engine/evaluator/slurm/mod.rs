//! `SlurmEvaluator` (kind `slurm`): runs the task's `evaluator.py` (the
//! same task format as `subprocess`) as Slurm work, one evaluation per job
//! step or job, so evaluations can use a cluster's nodes and GPUs.
//!
//! Two ways to place work (`mode`):
//! - `pool` (default): up to `general.parallel` long-lived allocations
//!   (`sbatch`, a job that only waits), each serving candidates one after
//!   another as job steps (`srun --jobid`). A step starts in tens of
//!   milliseconds where a job waits for the scheduler (seconds). An
//!   allocation ends by itself a few minutes after the run stops touching
//!   its heartbeat file.
//! - `job`: one `sbatch` job per candidate, for isolation or when
//!   allocations should not be held between candidates.
//!
//! Each evaluation gets a folder in the staging area (see [`Stage`]) with the
//! program (a file, or a folder program's tree as `program/`), a request, and what the runner (`galapagos_slurm.py`) writes:
//! `started.json` (job, step, node), `result.json` (the worker's result
//! format) and the candidate's `stdout` and `stderr` (head and tail). With
//! `sandbox: bwrap` (the default) each candidate runs on its node in a
//! bubblewrap container of its own, with the local worker's options (see
//! [`runner`]); the container sees none of that folder. The run
//! cancels (`scancel`) the step or job at `timeout_secs` (counted from its
//! start on the node) and when the evaluation is dropped. Work the scheduler
//! ends before it gives a result (a node failure, a preemption, a
//! cancellation from outside the run) is retried, up to `max_retries` times,
//! and the genome's [`Placement`] records each retry. Every job is named
//! after the run (`gp-<run folder>-<hash>`), so a resumed run cancels what
//! its killed predecessor left, and dropping the evaluator cancels the
//! run's jobs.
//!
//! Commands run with an environment of their own: the search path, locale,
//! time zone, user, `SLURM_CONF`, `SBATCH_*` defaults and the card's `env`
//! names, never a model key (Slurm passes the submitting environment to the
//! job).
//!
//! This file holds the checks before the first candidate and the slot
//! trait; [`params`] the parameters, [`place`] places one attempt (pool or
//! job), [`runner`] configures the runner and reads what it reports, and
//! [`client`] runs Slurm's commands.
//!
//! # How it runs on a cluster
//!
//! **The Slurm evaluator** (`slurm/mod.rs`, kind `slurm`; `slurm/place.rs` places one attempt, `slurm/client.rs` runs
//! Slurm's commands): the task format and result rules of the local evaluator, on a cluster. A runner
//! (`assets/python/galapagos_slurm.py`) imports `galapagos_worker`'s `load_evaluator` / `run_evaluation` on the node
//! and writes `started.json` (job, step, node) and `result.json` (the worker's result format) into a per-candidate
//! folder of the staging area (the run folder's `slurm/`, or `staging_dir` with a copy of the task); the run reads them
//! as a `Reply` and judges it with `Observed::judge`. `pool` (default): up to `general.parallel` `sbatch`'d
//! allocations whose batch step only waits (and exits once the run's heartbeat file is stale); each keeps one standby
//! step (`srun --jobid --overlap`, interpreter and `evaluator.py` imported) that takes the next candidate's folder on
//! its stdin, and the next standby starts as it does. `job`: one `sbatch` per candidate, polled through the result
//! file and `squeue`. The timeout counts from `started.json`; a timed-out step or job is `scancel`led. Work the
//! scheduler ended (a lost state in `scontrol`, slurmstepd's "CANCELLED" line, an allocation gone, a step that ended
//! before it took its candidate) is retried up to `max_retries` and recorded in `Placement::retries`. Jobs are named
//! after the run (`BuildContext::run_dir`, the same for a run and its resumption), so the checks before the first
//! candidate (client commands, controller, partition, `sbatch --test-only`) also cancel what a killed run left, and
//! dropping the evaluator cancels the run's jobs. `Evaluation::placement` becomes `Genome::placement` (job id and node).
//! Slurm's commands run with an allowlisted environment, because Slurm passes the submitting environment to jobs.
//!
//! *The sandbox on the nodes* (`slurm/runner.rs`, `galapagos_slurm.py`): the run writes `runner.json` into the staging
//! area once: the evaluator, the limits, the candidates' environment (`sandbox/environment.rs`'s allowlist) and, with
//! `sandbox: bwrap`, the bubblewrap options of `sandbox/bwrap.rs`'s `bwrap_args` (the run folder and the staging area
//! added to the hidden dirs, the runner's code dir bound back like the worker's) and, when the job runs as root, the command that starts the evaluation process as `nobody` in a user
//! namespace of its own (`setpriv`, `unshare --user`), as the local command evaluator does with the list of hidden dirs. On the
//! node the runner is two processes: a supervisor outside the sandbox that adds the node's facts to those options (its
//! GPU devices, its interpreter's dirs where a hidden dir covers them, hidden dirs the node lacks left out), finds
//! `bwrap` (or fails with the node named: `setup_failed`, which the run turns into `Evaluation::broken`), and starts the
//! evaluation process in a container of its own; that process imports `evaluator.py`, drops what
//! `galapagos_sandbox.drop_privileges` drops and says it is ready, all before the candidate comes (a pool's standby
//! step). The container is per candidate, so bubblewrap's namespaces do what the local worker's per-candidate
//! namespaces do: a fresh scratch tmpfs, and a pid namespace whose end kills whatever the candidate left. The
//! supervisor hands over the request and the program on a pipe (a folder program's files read from the candidate's
//! folder in the staging area, which the evaluation process writes into its scratch dir for `evaluate`), receives the result on another (the
//! candidate's process sees nothing of the staging area; it applies the limits as the candidate arrives, CPU time
//! counted from then), copies the output keeping head and tail (`Capture::from_parts` rebuilds it), and writes `result.json`: the worker's result,
//! or the wait status and CPU time of a process that ended without one (turned into "exceeded the … limit" by
//! `Limits::hit`, as locally; the node reports the wait status as it is and Rust reads bubblewrap's 128 + N).

mod client;
mod params;
mod place;
mod runner;
mod staged;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OnceCell, Semaphore};

use super::confirm::{self, Confirm};
use super::python_worker::code_dir::write_code;
use super::subprocess;
use super::{Candidate, Evaluation, Evaluator};
use crate::engine::component::{BuildContext, Component, ComponentInfo, Feature};
use crate::engine::genome::Placement;
use crate::engine::params::{ParamError, param_table};
use crate::engine::sandbox::environment;
use crate::engine::sandbox::isolation::{self, Sandbox};
use crate::engine::task::Task;
use client::{COMMANDS, copy_tree, expand_home, find_on_path, job_name};
pub use params::{Mode, SlurmParams};
use runner::RUNNER;

/// How often the run touches the heartbeat file an allocation watches.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// An allocation ends when the heartbeat is older than this, in seconds.
const HEARTBEAT_STALE_SECS: u64 = 180;
/// Job states after which a job gave no result through no fault of its
/// candidate: it is retried.
const LOST_STATES: [&str; 5] = [
    "CANCELLED",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
];

/// Scores candidates with the task's `evaluator.py` on a Slurm cluster (see
/// the module docs).
pub struct SlurmEvaluator {
    params: SlurmParams,
    task_dir: PathBuf,
    evaluator_file: String,
    suffix: String,
    /// Every job of this run has this name.
    job_name: String,
    run_dir: Option<PathBuf>,
    permits: Semaphore,
    stage: OnceCell<Result<Stage, String>>,
    /// Allocations (pool mode) that are running and free.
    idle: Mutex<Vec<Allocation>>,
    next: AtomicU64,
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Variables that hold model API keys: never passed, even when listed.
    key_vars: Vec<String>,
}

/// Where evaluations' files are, as the nodes see them: `root` holds the
/// runner's code (`code/`), the heartbeat, and one folder per evaluation;
/// `task_dir` is the task folder (a copy under `root` with a staging dir).
struct Stage {
    root: PathBuf,
    task_dir: PathBuf,
    /// Holds `root` when the run is not recorded.
    _temp: Option<tempfile::TempDir>,
}

/// A running allocation of the pool.
#[derive(Debug)]
struct Allocation {
    job: String,
    node: String,
    /// A job step started ahead of its candidate (the interpreter up,
    /// `evaluator.py` imported), waiting for a candidate on its stdin.
    standby: Option<tokio::process::Child>,
}

/// How one attempt ended.
enum Outcome {
    Done(Box<Evaluation>, Placement),
    /// The scheduler ended the work without a result: retry.
    Lost(String),
    /// No candidate can be evaluated (a job rejected, the runner missing).
    Broken(String),
}

impl Component for SlurmEvaluator {
    type Slot = dyn Evaluator;
    type Params = SlurmParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "slurm",
        type_name: "SlurmEvaluator",
        summary: "Runs the task's evaluator.py as Slurm work: job steps in long-lived allocations, or one job per candidate",
        params: param_table!(
            params::OWN_SPECS,
            subprocess::CASCADE_SPECS,
            isolation::SPECS,
            confirm::SPECS
        ),
    };
    const PROVIDES: &'static [Feature] = &[Feature::TaskEvaluatorFile, Feature::Cluster];

    fn check(params: &SlurmParams) -> Result<(), ParamError> {
        let refuse = |key: &str, reason: &str| {
            Err(ParamError {
                key: key.to_owned(),
                reason: reason.to_owned(),
            })
        };
        if params.python.trim().is_empty() {
            return refuse("python", "must name an interpreter");
        }
        for (key, value) in [
            ("partition", &params.partition),
            ("time_limit", &params.time_limit),
            ("gpus", &params.gpus),
            ("account", &params.account),
            ("qos", &params.qos),
            ("constraint", &params.constraint),
        ] {
            if value.chars().any(char::is_whitespace) {
                return refuse(key, "must not contain spaces");
            }
        }
        environment::check_env(&params.env, &environment::default_key_vars(), &|_| None)?;
        params.allowance.check()
    }

    /// Refuses an `env` entry that names (or holds the value of) one of the
    /// run's key variables (the model's, the user settings' endpoints').
    /// Bubblewrap is needed on the nodes, not here: the runner says so
    /// there.
    fn build(params: SlurmParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        let keys = environment::key_vars(ctx);
        environment::check_env(&params.env, &keys, &|name| std::env::var_os(name))?;
        let mut evaluator = Self::new(ctx.task, params, ctx.parallel, ctx.run_dir);
        evaluator.key_vars = keys;
        Ok(evaluator)
    }

    /// The task's evaluator and the candidates, on the cluster's nodes, with
    /// the scheduler's extra arguments and the staging folder.
    fn reach(params: &SlurmParams) -> Option<crate::engine::component::Reach> {
        let mut reach = params.isolation.reach(
            &params.allowance,
            crate::engine::component::Runs::Candidates,
            crate::engine::component::Place::Cluster,
            &params.env,
        );
        reach.scheduler_args.clone_from(&params.sbatch_args);
        let staging = params.staging_dir.trim();
        reach.staging_dir = (!staging.is_empty()).then(|| staging.to_owned());
        Some(reach)
    }
}

impl SlurmEvaluator {
    /// An evaluator for `task` with at most `parallel` evaluations in flight;
    /// its jobs are named after `run_dir` (a run of its own when `None`).
    pub fn new(task: &Task, params: SlurmParams, parallel: usize, run_dir: Option<&Path>) -> Self {
        let evaluator_file = task.evaluator_path.strip_prefix(&task.dir).map_or_else(
            |_| task.evaluator_path.display().to_string(),
            |p| p.display().to_string(),
        );
        // The nodes resolve every path the jobs are given (their working
        // dir, their log files) on their own: relative paths (a run folder
        // under `runs/` in the current dir) would point elsewhere there.
        let run_dir = run_dir.map(absolute);
        Self {
            params,
            task_dir: absolute(&task.dir),
            evaluator_file,
            suffix: task.suffix.clone(),
            job_name: job_name(run_dir.as_deref()),
            run_dir,
            permits: Semaphore::new(parallel.max(1)),
            stage: OnceCell::new(),
            idle: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            heartbeat: Mutex::new(None),
            key_vars: environment::default_key_vars(),
        }
    }

    /// The name every job of this run carries.
    pub fn job_name(&self) -> &str {
        &self.job_name
    }

    /// The checks before any candidate, once: the commands, the controller,
    /// the partition, the leftovers of a killed run, the staging area, and a
    /// job of these settings (`sbatch --test-only`).
    async fn stage(&self) -> Result<&Stage, String> {
        self.stage
            .get_or_init(|| async {
                let stage = self.prepare().await?;
                let beat = stage.root.join("heartbeat");
                let task = tokio::spawn(async move {
                    loop {
                        let _ = std::fs::write(&beat, b"");
                        tokio::time::sleep(HEARTBEAT).await;
                    }
                });
                *lock(&self.heartbeat) = Some(task);
                Ok(stage)
            })
            .await
            .as_ref()
            .map_err(Clone::clone)
    }

    async fn prepare(&self) -> Result<Stage, String> {
        for name in COMMANDS {
            if find_on_path(name).is_none() {
                return Err(format!(
                    "{name} is not on PATH: the slurm evaluator needs Slurm's client commands ({}) on the machine that runs galapagos",
                    COMMANDS.join(", ")
                ));
            }
        }
        let partitions = self
            .slurm("sinfo", &["-h", "-o", "%R"])
            .await
            .map_err(|e| format!("the Slurm controller is unreachable: {e}"))?;
        let p = &self.params.partition;
        if !p.is_empty() && !partitions.lines().any(|l| l.trim() == p) {
            let known: Vec<&str> = partitions.lines().map(str::trim).collect();
            return Err(format!(
                "evaluator.partition: the cluster has no partition {p:?} (it has: {})",
                known.join(", ")
            ));
        }
        self.cancel_leftovers().await?;
        let (root, temp) = match (self.params.staging_dir.trim(), &self.run_dir) {
            ("", Some(run)) => (run.join("slurm"), None),
            ("", None) => {
                let t = tempfile::Builder::new()
                    .prefix("galapagos-slurm-")
                    .tempdir()
                    .map_err(|e| format!("cannot create a staging dir: {e}"))?;
                (t.path().to_path_buf(), Some(t))
            }
            (dir, _) => (absolute(&expand_home(dir)).join(&self.job_name), None),
        };
        let made = |p: &Path| {
            std::fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
        };
        made(&root)?;
        let code = root.join("code");
        write_code(&code)?;
        std::fs::write(code.join("galapagos_slurm.py"), RUNNER)
            .map_err(|e| format!("cannot write {}: {e}", code.display()))?;
        let task_dir = if self.params.staging_dir.trim().is_empty() {
            self.task_dir.clone()
        } else {
            let copy = root.join("task");
            copy_tree(&self.task_dir, &copy, &root)?;
            copy
        };
        self.write_runner_config(&root, &task_dir)?;
        let mut args = self.sbatch_args(&root, &task_dir, Mode::Job);
        args.extend([
            "--test-only".to_owned(),
            "--wrap".to_owned(),
            "true".to_owned(),
        ]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        self.slurm("sbatch", &argv)
            .await
            .map_err(|e| format!("the scheduler rejects a job with these settings: {e}"))?;
        Ok(Stage {
            root,
            task_dir,
            _temp: temp,
        })
    }

    /// Cancel every job of this run still queued or running (a run killed
    /// before it could do so; its resumption is starting).
    async fn cancel_leftovers(&self) -> Result<(), String> {
        let name = format!("--name={}", self.job_name);
        let left = self
            .slurm("squeue", &["-h", "-o", "%i", &name])
            .await
            .map_err(|e| format!("cannot list this run's jobs: {e}"))?;
        if !left.trim().is_empty() {
            self.slurm("scancel", &[&name])
                .await
                .map_err(|e| format!("cannot cancel jobs left by an earlier run: {e}"))?;
        }
        Ok(())
    }

    /// The `sbatch` arguments of one job (without the script).
    fn sbatch_args(&self, root: &Path, task_dir: &Path, mode: Mode) -> Vec<String> {
        let p = &self.params;
        let mut args = vec![
            "--parsable".to_owned(),
            format!("--job-name={}", self.job_name),
            "--nodes=1".to_owned(),
            "--ntasks=1".to_owned(),
            format!("--cpus-per-task={}", p.cpus),
            format!("--chdir={}", task_dir.display()),
        ];
        let time = match (p.time_limit.as_str(), mode) {
            ("", Mode::Pool) => None,
            ("", Mode::Job) => Some(format!("{}", ((p.timeout_secs + 120.0) / 60.0).ceil())),
            (t, _) => Some(t.to_owned()),
        };
        let options = [
            ("--partition", p.partition.clone()),
            ("--time", time.unwrap_or_default()),
            (
                "--mem",
                p.memory_mib.map(|m| format!("{m}M")).unwrap_or_default(),
            ),
            ("--gres", p.gpus.clone()),
            ("--account", p.account.clone()),
            ("--qos", p.qos.clone()),
            ("--constraint", p.constraint.clone()),
        ];
        for (flag, value) in options {
            if !value.is_empty() {
                args.push(format!("{flag}={value}"));
            }
        }
        if mode == Mode::Pool {
            args.push(format!(
                "--output={}",
                root.join("allocation-%j.log").display()
            ));
        }
        args.extend(p.sbatch_args.iter().cloned());
        args
    }

    /// The folder of one attempt, with its program and request.
    fn attempt_dir(&self, stage: &Stage, candidate: &Candidate) -> Result<PathBuf, String> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = stage.root.join(format!("c{}-{n}", candidate.id));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // A single file as `program<suffix>`, a folder program's tree as
        // `program/`: the runner hands either to the evaluation process,
        // which writes its own copy (`evaluate` gets that file or folder).
        // Nothing writes the staging folder, so a tree is hard links to
        // the stage's read-only blob copies (`blobs/`, each file once).
        let folder = !candidate.content.is_single();
        let program = if folder {
            let program = dir.join("program");
            candidate
                .content
                .link_into(&program, &stage.root.join("blobs"))
                .map_err(|e| format!("cannot write the program into {}: {e}", program.display()))?;
            program
        } else {
            let program = dir.join(format!("program{}", self.suffix));
            std::fs::write(&program, candidate.content.text().as_ref())
                .map_err(|e| format!("cannot write {}: {e}", program.display()))?;
            program
        };
        let request = serde_json::json!({
            "id": candidate.id,
            "program": program,
            "folder": folder,
            "cascade": self.params.cascade,
            "thresholds": self.params.cascade_thresholds,
        });
        std::fs::write(dir.join("request.json"), request.to_string())
            .map_err(|e| format!("cannot write the request in {}: {e}", dir.display()))?;
        Ok(dir)
    }
}

#[async_trait::async_trait]
impl Evaluator for SlurmEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        let stage = match self.stage().await {
            Ok(s) => s,
            Err(reason) => return Evaluation::broken(reason),
        };
        let Ok(_permit) = self.permits.acquire().await else {
            return Evaluation::invalid("the evaluator is shutting down".to_owned());
        };
        let mut retries: Vec<String> = Vec::new();
        loop {
            let outcome = match self.params.mode {
                Mode::Pool => self.on_pool(stage, candidate).await,
                Mode::Job => self.as_job(stage, candidate).await,
            };
            match outcome {
                Outcome::Done(eval, mut placement) => {
                    let mut eval = *eval;
                    placement.retries = retries;
                    eval.placement = Some(placement);
                    return eval;
                }
                Outcome::Broken(reason) => return Evaluation::broken(reason),
                Outcome::Lost(what) => {
                    retries.push(what);
                    if retries.len() > self.params.max_retries as usize {
                        let mut eval = Evaluation::invalid(format!(
                            "the scheduler ended this candidate's work {} times without a result: {}",
                            retries.len(),
                            retries.join("; ")
                        ));
                        eval.placement = Some(Placement {
                            scheduler: "slurm".to_owned(),
                            retries,
                            ..Placement::default()
                        });
                        return eval;
                    }
                }
            }
        }
    }

    fn timeout_secs(&self) -> Option<f64> {
        Some(self.params.timeout_secs)
    }

    /// Each evaluation is a new process (a job step or a job) already.
    fn confirmation(&self) -> Confirm {
        self.params.confirm
    }

    /// The checks and the staging area, while the run opens its record.
    async fn warm_up(&self) {
        let _ = self.stage().await;
    }

    fn unsandboxed(&self) -> Option<String> {
        (self.params.isolation.sandbox == Sandbox::None).then(|| {
            "candidates run on the Slurm nodes without a sandbox (evaluator.sandbox: none): they run as \
             you, with your files and the network there, and can leave processes behind"
                .to_owned()
        })
    }
}

impl Drop for SlurmEvaluator {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.heartbeat).take() {
            task.abort();
        }
        if self.stage.get().is_some_and(Result::is_ok) {
            // Every job of this run: the pool's allocations and anything
            // still running.
            let _ = std::process::Command::new("scancel")
                .arg(format!("--name={}", self.job_name))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

impl std::fmt::Debug for SlurmEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlurmEvaluator")
            .field("params", &self.params)
            .field("job_name", &self.job_name)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `path` made absolute against the current dir (as it is when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
