//! The sandbox-and-limits settings every evaluator that runs candidates as
//! processes shares (`subprocess`, `command`, `slurm`): one struct, one
//! parameter table. Each evaluator's parameters flatten it in
//! (`#[serde(flatten)]`), so a card writes its keys beside the evaluator's
//! own (`evaluator.sandbox`, `evaluator.memory_limit_mib`), and each
//! evaluator's table joins [`SPECS`] in ([`crate::engine::params::param_table`]):
//! a setting added here reaches all three evaluators, the studio's widgets
//! and the hub README at once.

use serde::{Deserialize, Serialize};

use super::limits::Limits;
use super::paths;
use crate::engine::params::{ParamError, ParamSpec, ParamType};

/// How candidates are isolated (`evaluator.sandbox`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sandbox {
    /// A bubblewrap sandbox per run, namespaces and limits per candidate.
    Bwrap,
    /// No sandbox: candidates run as you, with your files and network.
    None,
}

impl Default for Sandbox {
    /// `bwrap` on Linux, where bubblewrap exists; `none` elsewhere.
    fn default() -> Self {
        if cfg!(target_os = "linux") {
            Self::Bwrap
        } else {
            Self::None
        }
    }
}

/// How a candidate is isolated from the machine and from other candidates,
/// and what it may use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Isolation {
    /// How candidates are isolated (`bwrap` by default on Linux).
    pub sandbox: Sandbox,
    /// Candidates may use the network (off: no network at all).
    pub network: bool,
    /// More paths shown, read-only, inside the sandbox (data sets,
    /// toolchains under your home); `~/` is your home.
    pub read_paths: Vec<String>,
    /// Memory a candidate's process may allocate (RLIMIT_DATA), in MiB;
    /// null: no limit.
    pub memory_limit_mib: Option<u64>,
    /// CPU time a candidate's process may use, in seconds; null: twice the
    /// evaluator's `timeout_secs` (at least 10 s).
    pub cpu_limit_secs: Option<f64>,
    /// Processes a candidate may run at once (with the sandbox, which runs
    /// candidates as nobody when galapagos runs as root); null: no limit.
    pub process_limit: Option<u64>,
    /// Largest file a candidate may write, in MiB; null: no limit.
    pub file_size_limit_mib: Option<u64>,
    /// Space a candidate may fill in what it can write (its scratch dir:
    /// HOME, TMPDIR, `/dev/shm`, its program's folder), in MiB, in memory or
    /// not; a write past it fails with "no space".
    pub write_quota_mib: u64,
    /// Bytes of each of a candidate's stdout and stderr kept (its first and
    /// last halves), in KB.
    pub output_limit_kb: u64,
}

impl Default for Isolation {
    fn default() -> Self {
        Self {
            sandbox: Sandbox::default(),
            network: false,
            read_paths: Vec::new(),
            memory_limit_mib: Some(4096),
            cpu_limit_secs: None,
            process_limit: Some(256),
            file_size_limit_mib: Some(1024),
            output_limit_kb: 20,
            write_quota_mib: 512,
        }
    }
}

/// The wall-clock limit per candidate, `timeout_secs`, in seconds (0.1 s to
/// a day), a key each evaluator has beside the fragment (the process
/// evaluators' `Evaluator::timeout_secs`); `doc` says what ends at it.
pub(crate) const fn timeout_spec(doc: &'static str) -> ParamSpec {
    ParamSpec {
        key: "timeout_secs",
        doc,
        ty: ParamType::Float {
            min: 0.1,
            max: 86400.0,
        },
    }
}

/// The table of [`Isolation`]'s keys, in the order the studio shows them.
pub const SPECS: &[ParamSpec] = &[
    ParamSpec {
        key: "sandbox",
        doc: "bwrap: each candidate runs in a bubblewrap sandbox (read-only file system, your home and \
              the run folder hidden, no network, a private scratch dir as HOME and TMPDIR, its own \
              namespaces, the limits below; needs the bubblewrap package, on the Slurm nodes for the \
              slurm evaluator). none: no sandbox, candidates run as you (a warning on every run; the \
              command evaluator then applies none of the limits)",
        ty: ParamType::Choice(&["bwrap", "none"]),
    },
    ParamSpec {
        key: "network",
        doc: "Let candidates (and the evaluator) use the network; off, the sandbox has none",
        ty: ParamType::Bool,
    },
    ParamSpec {
        key: "read_paths",
        doc: "More files or dirs candidates and the evaluator may read inside the sandbox (a data set, a \
              toolchain under your home such as ~/.rustup); ~/ is your home. Read-only; on Slurm the \
              nodes must see them",
        ty: ParamType::TextList,
    },
    ParamSpec {
        key: "memory_limit_mib",
        doc: "Memory each process of a candidate's evaluation may allocate, in MiB (null: no limit)",
        ty: ParamType::OptionalInt {
            min: 16,
            max: 1 << 30,
        },
    },
    ParamSpec {
        key: "cpu_limit_secs",
        doc: "CPU seconds each process of a candidate's evaluation may use (null: twice timeout_secs, \
              at least 10)",
        ty: ParamType::OptionalFloat { min: 1.0, max: 1e7 },
    },
    ParamSpec {
        key: "process_limit",
        doc: "Processes a candidate may run at once, itself included (1: it may start none; with the \
              sandbox, which runs candidates as nobody when galapagos runs as root; not on Slurm nodes \
              whose jobs run as root; null: no limit)",
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
    ParamSpec {
        key: "write_quota_mib",
        doc: "Space a candidate may fill in everything it can write (HOME, TMPDIR, /dev/shm, its \
              program's folder), in MiB, held in memory or not; a write past it fails with no space \
              left, named on the genome (with the sandbox)",
        ty: ParamType::Int {
            min: 1,
            max: 1 << 30,
        },
    },
    ParamSpec {
        key: "output_limit_kb",
        doc: "KB of each of a candidate's stdout and stderr kept (the first and last halves; the rest \
              is counted)",
        ty: ParamType::Int {
            min: 1,
            max: 100_000,
        },
    },
];

impl Isolation {
    /// What a candidate's process may use, for an evaluator whose wall-clock
    /// limit is `timeout_secs`.
    pub(crate) fn limits(&self, timeout_secs: f64) -> Limits {
        Limits {
            memory_mib: self.memory_limit_mib,
            cpu_secs: self
                .cpu_limit_secs
                .unwrap_or((2.0 * timeout_secs).max(10.0)),
            file_size_mib: self.file_size_limit_mib,
            processes: self.process_limit,
            write_quota_mib: Some(self.write_quota_mib),
        }
    }

    /// The bytes of each output stream kept.
    pub(crate) fn output_bytes(&self) -> usize {
        usize::try_from(self.output_limit_kb.saturating_mul(1000)).unwrap_or(usize::MAX)
    }

    /// What a block with these settings reaches when it runs `runs` on
    /// `place` with the run's environment variables `env` passed
    /// ([`crate::engine::sandbox::lowered`] judges it).
    pub(crate) fn reach(
        &self,
        runs: crate::engine::component::Runs,
        place: crate::engine::component::Place,
        env: &[String],
    ) -> crate::engine::component::Reach {
        crate::engine::component::Reach {
            sandboxed: self.sandbox != Sandbox::None,
            network: self.network,
            read_paths: self.read_paths.clone(),
            env: env.to_vec(),
            ..crate::engine::component::Reach::sandboxed(runs, place)
        }
    }

    /// `read_paths` may not show a whole home, `/` or the settings file.
    pub(crate) fn check(&self) -> Result<(), ParamError> {
        paths::check_read_paths(&self.read_paths)
    }
}
