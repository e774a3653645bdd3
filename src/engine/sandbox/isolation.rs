//! The sandbox settings of a card, one struct and one default per setting:
//! how an evaluator isolates candidates ([`Isolation`]: `sandbox`, `network`;
//! the evaluators `subprocess`, `command` and `slurm`), and what any
//! sandboxed process may read and use ([`super::limits::Allowance`]:
//! `read_paths`, the limits, `output_limit_kb`; the evaluators and the
//! coding-agent proposer `agent_command`, which always runs in bubblewrap
//! with no network but the run's model relay). A block's parameters flatten
//! them in (`#[serde(flatten)]`, side by side: serde's flatten inside a
//! flattened struct would stop the block from refusing unknown keys), so a
//! card writes their keys beside the block's own (`evaluator.sandbox`,
//! `proposer.memory_limit_mib`), and each block's table joins theirs in
//! ([`crate::engine::params::param_table`]: an evaluator's [`SPECS`], the
//! agent's [`super::limits::SPECS`]): a setting added here or in
//! [`super::limits`] reaches every block, the studio's widgets and the hub
//! README at once.

use serde::{Deserialize, Serialize};

use super::limits;
use crate::engine::params::{ParamSpec, ParamType, param_table};

/// How candidates are isolated (`evaluator.sandbox`). The default is the
/// sandbox on every platform, so a card means the same wherever it is
/// written or read (where there is no bubblewrap, local evaluation is
/// refused: [`crate::engine::platform::refusal`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sandbox {
    /// A bubblewrap sandbox per run, namespaces and limits per candidate.
    #[default]
    Bwrap,
    /// No sandbox: candidates run as you, with your files and network.
    None,
}

/// How an evaluator isolates candidates from the machine and from each
/// other: the container, and its network (what they may read and use is
/// [`super::limits::Allowance`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Isolation {
    /// How candidates are isolated (`bwrap` by default).
    pub sandbox: Sandbox,
    /// Candidates may use the network (off: no network at all).
    pub network: bool,
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

/// [`Isolation`]'s keys, which only the evaluators take.
const SANDBOX_SPECS: &[ParamSpec] = &[
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
];

/// The table of an evaluator's isolation keys, in the order the studio shows
/// them: [`Isolation`]'s (`sandbox`, `network`), then [`limits::SPECS`]
/// ([`super::limits::Allowance`]'s).
pub const SPECS: &[ParamSpec] = param_table!(SANDBOX_SPECS, limits::SPECS);

impl Isolation {
    /// What a block with these settings and `allowance` reaches when it runs
    /// `runs` on `place` with the run's environment variables `env` passed
    /// ([`crate::engine::sandbox::lowered`] judges it).
    pub(crate) fn reach(
        &self,
        allowance: &limits::Allowance,
        runs: crate::engine::component::Runs,
        place: crate::engine::component::Place,
        env: &[String],
    ) -> crate::engine::component::Reach {
        crate::engine::component::Reach {
            sandboxed: self.sandbox != Sandbox::None,
            network: self.network,
            read_paths: allowance.read_paths.clone(),
            env: env.to_vec(),
            ..crate::engine::component::Reach::sandboxed(runs, place)
        }
    }
}
