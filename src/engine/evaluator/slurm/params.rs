//! The `slurm` evaluator's parameters and their table (the docs the studio
//! and the hub README show).

use serde::{Deserialize, Serialize};

use crate::engine::evaluator::confirm::{Aggregate, Confirm, SPECS as CONFIRM_SPECS};
use crate::engine::evaluator::subprocess::{CASCADE, CASCADE_THRESHOLDS};
use crate::engine::evaluator::worker::sandbox::Sandbox;
use crate::engine::params::{ParamSpec, ParamType};

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

/// Parameters of [`super::SlurmEvaluator`].
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
    /// How candidates are isolated on the nodes (bubblewrap, as the local
    /// evaluators; `none`: they run as you).
    pub sandbox: Sandbox,
    /// Candidates may use the network (off: no network at all).
    pub network: bool,
    /// More paths shown, read-only, inside the sandbox; `~/` is your home.
    pub read_paths: Vec<String>,
    /// Memory a candidate's process may allocate (RLIMIT_DATA), in MiB.
    pub memory_limit_mib: Option<u64>,
    /// CPU seconds a candidate's process may use (null: twice
    /// `timeout_secs`, at least 10).
    pub cpu_limit_secs: Option<f64>,
    /// Processes a candidate may run at once (sandboxed, not as root).
    pub process_limit: Option<u64>,
    /// Largest file a candidate may write, in MiB.
    pub file_size_limit_mib: Option<u64>,
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
            // The nodes run Linux, whatever machine submits the work.
            sandbox: Sandbox::Bwrap,
            network: false,
            read_paths: Vec::new(),
            memory_limit_mib: Some(4096),
            cpu_limit_secs: None,
            process_limit: Some(256),
            file_size_limit_mib: Some(1024),
            confirm: Confirm::default().times,
            confirm_aggregate: Confirm::default().aggregate,
            confirm_tolerance: Confirm::default().tolerance,
        }
    }
}

/// The parameter table, in the order the studio shows it.
pub(super) const SPECS: [ParamSpec; 28] = [
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
    ParamSpec {
        key: "sandbox",
        doc: "bwrap: each candidate runs on its node in a bubblewrap sandbox of its own, as with the local \
              evaluator (read-only file system, your home and the run folder hidden, no network, a private \
              scratch dir, its own namespaces, limits; the nodes need the bubblewrap package and unprivileged \
              user namespaces). none: no sandbox, candidates run as you on the nodes (a warning on every run)",
        ty: ParamType::Choice(&["bwrap", "none"]),
    },
    ParamSpec {
        key: "network",
        doc: "Let candidates (and evaluator.py) use the network; off, the sandbox has none",
        ty: ParamType::Bool,
    },
    ParamSpec {
        key: "read_paths",
        doc: "More files or dirs candidates and evaluator.py may read inside the sandbox (a data set, a \
              toolchain under your home); ~/ is your home. Read-only; the nodes must see them",
        ty: ParamType::TextList,
    },
    ParamSpec {
        key: "memory_limit_mib",
        doc: "Memory a candidate's process may allocate, in MiB (null: no limit; memory_mib is the job's)",
        ty: ParamType::OptionalInt {
            min: 16,
            max: 1 << 30,
        },
    },
    ParamSpec {
        key: "cpu_limit_secs",
        doc: "CPU seconds a candidate's process may use (null: twice timeout_secs, at least 10)",
        ty: ParamType::OptionalFloat { min: 1.0, max: 1e7 },
    },
    ParamSpec {
        key: "process_limit",
        doc: "Processes a candidate may run at once (with the sandbox; not enforced for root; null: no limit)",
        ty: ParamType::OptionalInt {
            min: 1,
            max: 1 << 22,
        },
    },
    ParamSpec {
        key: "file_size_limit_mib",
        doc: "Largest file a candidate may write, in MiB (null: no limit)",
        ty: ParamType::OptionalInt {
            min: 1,
            max: 1 << 30,
        },
    },
    CONFIRM_SPECS[0],
    CONFIRM_SPECS[1],
    CONFIRM_SPECS[2],
];
