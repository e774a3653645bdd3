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
//! program, a request, and what the runner (`galapagos_slurm.py`) writes:
//! `started.json` (job, step, node) and `result.json` (the worker's result
//! format); the job's stdout and stderr are the candidate's output. The run
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
//! This file holds the parameters, the checks before the first candidate and
//! the slot trait; [`place`] places one attempt (pool or job) and [`client`]
//! runs Slurm's commands.

mod client;
mod place;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{OnceCell, Semaphore};

use super::confirm::{Aggregate, Confirm, SPECS as CONFIRM_SPECS};
use super::subprocess::{CASCADE, CASCADE_THRESHOLDS};
use super::worker::capture::Capture;
use super::worker::code_dir::write_code;
use super::worker::environment;
use super::worker::protocol::Reply;
use super::{Candidate, Evaluation, Evaluator, Observed};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::Placement;
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::task::Task;
use client::{COMMANDS, copy_tree, expand_home, find_on_path, job_name, placement};

/// The runner started on the node for one candidate.
const RUNNER: &str = include_str!("../../../assets/python/galapagos_slurm.py");
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

/// How evaluations are placed on the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Long-lived allocations, one candidate per job step.
    #[default]
    Pool,
    /// One job per candidate.
    Job,
}

/// Parameters of [`SlurmEvaluator`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlurmParams {
    pub mode: Mode,
    /// Partition (empty: the cluster's default).
    pub partition: String,
    /// Time limit of a job, in Slurm's format (empty: see the table).
    pub time_limit: String,
    /// CPUs per evaluation.
    pub cpus: u32,
    /// Memory per job, in MiB (null: the partition's default).
    pub memory_mib: Option<u64>,
    /// Generic resources (`gpu:1`, `gpu:a100:2`; empty: none).
    pub gpus: String,
    pub account: String,
    pub qos: String,
    pub constraint: String,
    /// More `sbatch` arguments, as given.
    pub sbatch_args: Vec<String>,
    /// Wall-clock limit per candidate on its node, in seconds.
    pub timeout_secs: f64,
    pub cascade: bool,
    pub cascade_thresholds: Vec<f64>,
    /// The interpreter on the nodes (a name on their PATH or a path).
    pub python: String,
    /// Environment variables passed to the jobs on top of the allowlist.
    pub env: Vec<String>,
    /// Times a candidate is retried after the scheduler ended its work.
    pub max_retries: u32,
    /// A folder the nodes see, for the task copy, the runner and the
    /// candidates (empty: the run folder, which must then be shared).
    pub staging_dir: String,
    /// KB of each of a candidate's stdout and stderr kept.
    pub output_limit_kb: u64,
    /// Evaluations more for a would-be best ([`super::confirm`]; 0: off).
    pub confirm: u32,
    /// A confirmed candidate's metrics: the evaluations' mean or minimum.
    pub confirm_aggregate: Aggregate,
    /// Largest fitness spread allowed, relative to the mean's size.
    pub confirm_tolerance: f64,
}

impl Default for SlurmParams {
    fn default() -> Self {
        Self {
            mode: Mode::Pool,
            partition: String::new(),
            time_limit: String::new(),
            cpus: 1,
            memory_mib: None,
            gpus: String::new(),
            account: String::new(),
            qos: String::new(),
            constraint: String::new(),
            sbatch_args: Vec::new(),
            timeout_secs: 60.0,
            cascade: true,
            cascade_thresholds: vec![0.5, 0.75, 0.9],
            python: "python3".to_owned(),
            env: Vec::new(),
            max_retries: 2,
            staging_dir: String::new(),
            output_limit_kb: 20,
            confirm: Confirm::default().times,
            confirm_aggregate: Confirm::default().aggregate,
            confirm_tolerance: Confirm::default().tolerance,
        }
    }
}

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
        params: &[
            ParamSpec {
                key: "mode",
                doc: "pool: up to general.parallel long-lived allocations, one job step per candidate (starts in tens of ms). job: one sbatch job per candidate (isolation, seconds of scheduling each)",
                ty: ParamType::Choice(&["pool", "job"]),
            },
            ParamSpec {
                key: "partition",
                doc: "Slurm partition (empty: the cluster's default)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "time_limit",
                doc: "Job time limit in Slurm's format, e.g. 2:00:00 (empty: pool allocations get the partition's default, a per-candidate job timeout_secs plus two minutes)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "cpus",
                doc: "CPUs per evaluation (--cpus-per-task)",
                ty: ParamType::Int { min: 1, max: 4096 },
            },
            ParamSpec {
                key: "memory_mib",
                doc: "Memory per job in MiB (--mem; null: the partition's default)",
                ty: ParamType::OptionalInt {
                    min: 1,
                    max: 1 << 32,
                },
            },
            ParamSpec {
                key: "gpus",
                doc: "Generic resources per job (--gres), e.g. gpu:1 (empty: none)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "account",
                doc: "Account charged (--account; empty: your default)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "qos",
                doc: "Quality of service (--qos; empty: the default)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "constraint",
                doc: "Node features required (--constraint; empty: any node)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "sbatch_args",
                doc: "More sbatch arguments, each one item, e.g. --exclusive",
                ty: ParamType::TextList,
            },
            ParamSpec {
                key: "timeout_secs",
                doc: "Wall-clock limit per candidate once it runs on its node; its job step or job is cancelled (scancel) when it is exceeded",
                ty: ParamType::Float {
                    min: 0.1,
                    max: 86400.0,
                },
            },
            CASCADE,
            CASCADE_THRESHOLDS,
            ParamSpec {
                key: "python",
                doc: "Python interpreter on the nodes (a name on their PATH or a path)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "env",
                doc: "Environment variables passed to the jobs, by name, on top of PATH, the locale, TZ and the user (a model API key variable is refused)",
                ty: ParamType::TextList,
            },
            ParamSpec {
                key: "max_retries",
                doc: "Times a candidate is run again when the scheduler ends its work without a result (node failure, preemption, cancelled from outside); each retry is recorded",
                ty: ParamType::Int { min: 0, max: 100 },
            },
            ParamSpec {
                key: "staging_dir",
                doc: "A folder the compute nodes see, for a copy of the task folder, the runner and the candidates' files (empty: the run folder, which the nodes must then see)",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "output_limit_kb",
                doc: "KB of each of a candidate's stdout and stderr kept (the first and last halves)",
                ty: ParamType::Int {
                    min: 1,
                    max: 100_000,
                },
            },
            CONFIRM_SPECS[0],
            CONFIRM_SPECS[1],
            CONFIRM_SPECS[2],
        ],
    };

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
        environment::check_env(&params.env, &environment::default_key_vars(), &|_| None)
    }

    fn build(params: SlurmParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        let mut keys = environment::default_key_vars();
        keys.extend(ctx.model.key_env_vars());
        environment::check_env(&params.env, &keys, &|name| std::env::var_os(name))?;
        Ok(Self::new(ctx.task, params, ctx.parallel, ctx.run_dir))
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
        Self {
            params,
            task_dir: task.dir.clone(),
            evaluator_file,
            suffix: task.suffix.clone(),
            job_name: job_name(run_dir),
            run_dir: run_dir.map(Path::to_path_buf),
            permits: Semaphore::new(parallel.max(1)),
            stage: OnceCell::new(),
            idle: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            heartbeat: Mutex::new(None),
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
            (dir, _) => (expand_home(dir).join(&self.job_name), None),
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
        let program = dir.join(format!("program{}", self.suffix));
        std::fs::write(&program, &candidate.content)
            .map_err(|e| format!("cannot write {}: {e}", program.display()))?;
        let request = serde_json::json!({
            "evaluator": stage.task_dir.join(&self.evaluator_file),
            "task_dir": stage.task_dir,
            "program": program,
            "cascade": self.params.cascade,
            "thresholds": self.params.cascade_thresholds,
        });
        std::fs::write(dir.join("request.json"), request.to_string())
            .map_err(|e| format!("cannot write the request in {}: {e}", dir.display()))?;
        Ok(dir)
    }

    /// The command that evaluates the candidate in `dir` on a node.
    fn runner(&self, stage: &Stage, dir: &Path) -> Vec<String> {
        vec![
            self.params.python.clone(),
            stage
                .root
                .join("code")
                .join("galapagos_slurm.py")
                .display()
                .to_string(),
            dir.display().to_string(),
        ]
    }

    /// The evaluation `dir`'s runner reported, when it did.
    fn result(&self, dir: &Path, job: &str, node: &str) -> Option<Outcome> {
        let text = std::fs::read_to_string(dir.join("result.json")).ok()?;
        let value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                return Some(Outcome::Done(
                    Box::new(self.failed(dir, format!("unreadable result: {e}"))),
                    placement(job, node),
                ));
            }
        };
        let import_failed = value
            .get("import_failed")
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        let reply: Reply = serde_json::from_value(value).unwrap_or_default();
        if import_failed {
            return Some(Outcome::Broken(
                reply
                    .error
                    .unwrap_or_else(|| "cannot import evaluator.py".to_owned()),
            ));
        }
        let mut eval = reply.into_evaluation();
        self.attach_output(dir, &mut eval.artifacts);
        Some(Outcome::Done(Box::new(eval), placement(job, node)))
    }

    fn attach_output(
        &self,
        dir: &Path,
        artifacts: &mut std::collections::BTreeMap<String, String>,
    ) {
        let limit =
            usize::try_from(self.params.output_limit_kb.saturating_mul(1000)).unwrap_or(usize::MAX);
        for name in ["stdout", "stderr"] {
            let mut capture = Capture::new(limit);
            if let Ok(bytes) = std::fs::read(dir.join(name)) {
                capture.push(&bytes);
            }
            capture.attach(artifacts, name);
        }
    }

    fn failed(&self, dir: &Path, reason: String) -> Evaluation {
        let mut observed = Observed {
            error: Some(reason),
            ..Observed::default()
        };
        self.attach_output(dir, &mut observed.artifacts);
        observed.judge()
    }

    fn timed_out(&self, dir: &Path, job: &str) -> Evaluation {
        let secs = self.params.timeout_secs;
        let mut observed = Observed {
            error: Some(format!(
                "timeout: evaluation exceeded {secs} s; Slurm job {job} was cancelled"
            )),
            timeout: true,
            ..Observed::default()
        };
        self.attach_output(dir, &mut observed.artifacts);
        observed.judge()
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
        Confirm {
            times: self.params.confirm,
            aggregate: self.params.confirm_aggregate,
            tolerance: self.params.confirm_tolerance,
        }
    }

    /// The checks and the staging area, while the run opens its record.
    async fn warm_up(&self) {
        let _ = self.stage().await;
    }

    fn unsandboxed(&self) -> Option<String> {
        Some(
            "candidates run on Slurm nodes without a sandbox: they run as you, with your files on the nodes"
                .to_owned(),
        )
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
