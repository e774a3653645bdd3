//! The `slurm` evaluator's parameters and their table (the docs the studio
//! and the hub README show).

use serde::{Deserialize, Serialize};

use crate::engine::evaluator::confirm::Confirm;
use crate::engine::params::{ParamSpec, ParamType};
use crate::engine::sandbox::isolation::{self, Isolation};
use crate::engine::sandbox::limits::Allowance;

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
    /// The sandbox on the nodes, the network, read paths and the limits.
    #[serde(flatten)]
    pub isolation: Isolation,
    /// What a candidate may read and use, and the output kept
    /// ([`Allowance`]).
    #[serde(flatten)]
    pub allowance: Allowance,
    /// Confirming a would-be best ([`crate::engine::evaluator::confirm`]).
    #[serde(flatten)]
    pub confirm: Confirm,
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
            isolation: Isolation::default(),
            allowance: Allowance::default(),
            confirm: Confirm::default(),
        }
    }
}

/// The `slurm` evaluator's own parameters, in the order the studio shows
/// them (its table joins the cascade's, [`isolation::SPECS`] and
/// [`crate::engine::evaluator::confirm::SPECS`] after them).
pub(super) const OWN_SPECS: &[ParamSpec] = &[
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
        doc: "Memory per job in MiB (--mem; null: the partition's default); memory_limit_mib bounds each candidate's process",
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
    isolation::timeout_spec(
        "Wall-clock limit per candidate once it runs on its node; its job step or job is cancelled \
         (scancel) when it is exceeded",
    ),
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
];
