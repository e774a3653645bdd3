//! The vocabulary every component shares: the six [`Slot`]s, the
//! [`Component`] trait an implementation of a slot trait fills in, its static
//! [`ComponentInfo`], the [`BuildContext`] it is built with, and the errors of
//! looking a kind up and checking its parameters.
//!
//! A component is a type that implements one slot trait (say
//! [`crate::engine::selection::SelectionPolicy`]) and [`Component`]: its card
//! `kind`, its parameter table, its typed `serde` parameters and how it is
//! built from them. The registry ([`crate::engine::registry`]) is a table of
//! `Entry::of::<T>()` lines and derives everything else (defaults, checking,
//! building) from this trait.
//!
//! # The trait
//!
//! ```text
//! pub trait Component: Sized + 'static {
//!     type Slot: ?Sized + SlotTrait;            // dyn SelectionPolicy
//!     type Params: Default + Clone + Serialize + DeserializeOwned + Send + Sync + 'static;
//!     const INFO: ComponentInfo;                // kind, type name, summary, parameter table
//!     fn check(params: &Self::Params) -> Result<(), ParamError> { Ok(()) }
//!     fn build(params: Self::Params, ctx: &BuildContext<'_>) -> Result<Self, ParamError>;
//! }
//! ```
//!
//! - The parameter table (`ParamSpec`: key, type, range, doc) drives the studio's typed widgets,
//!   card validation and the hub README. Defaults are written once, as `Params::default()`; the
//!   registry derives what the studio and the README show from it.
//!
//! # Blocks that go together
//!
//! A component declares what it provides to the other slots (`Component::PROVIDES`: a beam
//! population keeps `Feature::Beam`, an island population `Feature::Islands`) and what it needs
//! from them (`Component::NEEDS`: the beam policy needs `Feature::Beam` from the population, UCB
//! islands `Feature::Islands`). `Registry::conflicts` is the one rule: the card check turns each
//! conflict into an error at the needing slot's `kind` naming both slots and the first kind that
//! provides what is missing, so loading, `galapagos validate`, the studio's status and Start run
//! all refuse such a card the same way. `Registry::companions` answers the studio's question "what
//! else must change if I put this kind here" (the palette's pair, the inspector's Fix). A need
//! names a feature, never another component's kind.
//!
//! # Parameters that change in flight
//!
//! `Component::LIVE` says whether a paused run may rebuild the block from new parameters and go on;
//! it defaults to its slot's rule (`Slot::live_by_default`: the selection policy, whose state is
//! carried over through `checkpoint` / `restore`, the prompt builder and the proposer, which keep
//! none; not the population, the evaluator or the memory), and a block that keeps state it cannot
//! carry over says `false`. The registry carries it on each `Entry` and checked block
//! (`Configured::live`); `steering::changes::compare` asks it, never a kind.
//!
//! # Kinds only in the registry
//!
//! A card kind is named in its component's file and its `Registry::builtin()` line, and compared
//! nowhere else (`tests/layout.rs` fails on a kind string compared with a block's kind, matched on,
//! or looked up outside `registry.rs` and the slot folders). Code that must know what a block does
//! asks the registry whether it provides a feature (`Registry::provides`, `Registry::provider`):
//!
//! | feature | provided by | asked by |
//! |---|---|---|
//! | `Beam`, `Islands` | the beam and island populations | the policies that need them; the studio's Beam and Islands views (`studio/run/structure.rs`) |
//! | `TaskEvaluatorFile` | evaluators that run the task's own `evaluator.py` (`subprocess`, `slurm`) | `RunPlan` refuses a task folder without one (`launch.rs`); the studio's Start run says so first |
//! | `CommandLine` | the evaluator that runs a card's `argv` (`command`) | a ShinkaEvolve task's mapping (`task_settings/`): a local `TaskEvaluatorFile` evaluator becomes it, with `evaluate.py`'s command line |
//! | `Cluster` | evaluators that score on a cluster's nodes (`slurm`) | the same mapping leaves such an evaluator as the card has it |
//!
//! A component that needs nothing of a run builds from its checked parameters alone
//! (`Component::detached`); every population does (the registry test checks), so the studio replays
//! a card's population block through the registry, checked as the run checked it, and reads what it
//! draws through the `Population` trait (`structure`, `migrations`, `cell_of`).

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::meter::RunMeter;
use crate::engine::model::LanguageModel;
use crate::engine::params::{ParamError, ParamSpec};
use crate::engine::task::Task;

/// The six slots of a scaffold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    Population,
    SelectionPolicy,
    PromptBuilder,
    Proposer,
    Evaluator,
    Memory,
}

impl Slot {
    /// All slots in loop order.
    pub const ALL: [Self; 6] = [
        Self::Population,
        Self::SelectionPolicy,
        Self::PromptBuilder,
        Self::Proposer,
        Self::Evaluator,
        Self::Memory,
    ];

    /// Whether a block of this slot may, unless it says otherwise
    /// ([`Component::LIVE`]), take new parameters while its run is paused:
    /// a selection policy (rebuilt, its state carried over through
    /// `checkpoint` / `restore`), a prompt builder and a proposer (they keep
    /// no state between iterations). A population holds the genomes, an
    /// evaluator its processes and a memory its notes: not in flight.
    pub const fn live_by_default(self) -> bool {
        matches!(
            self,
            Self::SelectionPolicy | Self::PromptBuilder | Self::Proposer
        )
    }

    /// The card key (`selection_policy`).
    pub fn key(self) -> &'static str {
        match self {
            Self::Population => "population",
            Self::SelectionPolicy => "selection_policy",
            Self::PromptBuilder => "prompt_builder",
            Self::Proposer => "proposer",
            Self::Evaluator => "evaluator",
            Self::Memory => "memory",
        }
    }

    /// The display name (`SelectionPolicy`).
    pub fn title(self) -> &'static str {
        match self {
            Self::Population => "Population",
            Self::SelectionPolicy => "SelectionPolicy",
            Self::PromptBuilder => "PromptBuilder",
            Self::Proposer => "Proposer",
            Self::Evaluator => "Evaluator",
            Self::Memory => "Memory",
        }
    }

    /// What the slot does, in one line.
    pub fn role(self) -> &'static str {
        match self {
            Self::Population => "The candidate store: holds genomes, answers add / query / best",
            Self::SelectionPolicy => {
                "Decides which parents and inspirations to draw, adapts over time"
            }
            Self::PromptBuilder => "Formats the selected genomes and memory into the model input",
            Self::Proposer => "The variation operator: turns a prompt into a new candidate",
            Self::Evaluator => "Scores each candidate with the task's own evaluator",
            Self::Memory => "Cross-candidate knowledge read by prompts, written after evaluation",
        }
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Static description of one implementation. Defaults are not written here:
/// the registry derives them from the component's `Params::default()`.
#[derive(Clone, Copy, Debug)]
pub struct ComponentInfo {
    /// The card `kind` (`best_of_n`).
    pub kind: &'static str,
    /// The Rust type name shown in the studio (`BestOfNPolicy`).
    pub type_name: &'static str,
    /// One-line description for the palette.
    pub summary: &'static str,
    /// Parameter schema: keys, types, ranges and docs.
    pub params: &'static [ParamSpec],
}

/// What a block keeps or does that the rest of the program may rely on: a
/// population's beam or islands (which other blocks need and the studio
/// draws), what an evaluator runs (which the task folder is checked and
/// fitted against). Code outside the registry and the component files asks
/// the registry whether a block provides a feature
/// ([`crate::engine::registry::Registry::provides`]); it never compares a
/// card kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// A fixed-width beam of members (`Structure::Beam`).
    Beam,
    /// Islands with their own members and elites (`Structure::Islands`).
    Islands,
    /// Runs the task folder's own evaluator file (an OpenEvolve task's
    /// `evaluator.py`): a folder without one cannot be run.
    TaskEvaluatorFile,
    /// Runs a command line the card gives (`argv`), such as a ShinkaEvolve
    /// task's `evaluate.py`.
    CommandLine,
    /// Scores candidates on a cluster's nodes rather than in processes of
    /// this machine.
    Cluster,
}

impl Feature {
    /// What has it, in words: "a beam" in "needs a beam population".
    pub fn article_noun(self) -> &'static str {
        match self {
            Self::Beam => "a beam",
            Self::Islands => "an island",
            Self::TaskEvaluatorFile => "a task-evaluator-file",
            Self::CommandLine => "a command-line",
            Self::Cluster => "a cluster",
        }
    }
}

/// What a block needs from the block in another slot: "beam selection needs a
/// beam population" is `Need { slot: Population, feature: Beam }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Need {
    /// The other slot.
    pub slot: Slot,
    /// What its block must provide.
    pub feature: Feature,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "needs {} {}",
            self.feature.article_noun(),
            self.slot.key().replace('_', " ")
        )
    }
}

/// What a block runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runs {
    /// The task's evaluator and the candidate programs the model writes.
    Candidates,
    /// A command the card names (its argv), which runs the candidates.
    Command(Vec<String>),
    /// A coding agent, the command the card names (its argv).
    Agent(Vec<String>),
}

/// Where a block's processes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On the machine galapagos runs on.
    ThisMachine,
    /// On a cluster's nodes (Slurm jobs).
    Cluster,
}

/// What a block's processes are and what its parameters let them reach:
/// facts, judged by [`crate::engine::sandbox::lowered::lowered`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    pub runs: Runs,
    pub place: Place,
    /// In the sandbox (false: as the user, reaching what they can).
    pub sandboxed: bool,
    /// May use the network (in the sandbox; without it, they may anyway).
    pub network: bool,
    /// `read_paths` as the card writes them.
    pub read_paths: Vec<String>,
    /// `env` entries as the card writes them (`NAME` passes the run's
    /// value, `NAME=value` sets one).
    pub env: Vec<String>,
    /// More arguments for the cluster's scheduler (`sbatch_args`).
    pub scheduler_args: Vec<String>,
    /// The folder the task and the candidates' files are copied to
    /// (`staging_dir`), when set.
    pub staging_dir: Option<String>,
}

impl Reach {
    /// `runs`, on `place`, sandboxed, with nothing widened.
    pub fn sandboxed(runs: Runs, place: Place) -> Self {
        Self {
            runs,
            place,
            sandboxed: true,
            network: false,
            read_paths: Vec::new(),
            env: Vec::new(),
            scheduler_args: Vec::new(),
            staging_dir: None,
        }
    }
}

/// What a component may use while it is built.
#[derive(Clone)]
pub struct BuildContext<'a> {
    pub task: &'a Task,
    pub model: Arc<dyn LanguageModel>,
    /// `general.parallel`: how many iterations may be in flight at once
    /// (an evaluator sizes its worker pool by it).
    pub parallel: usize,
    /// The run's folder, when the run is recorded: the same for a run and
    /// its resumption (an evaluator that leaves work outside this process,
    /// such as cluster jobs, names it after the run).
    pub run_dir: Option<&'a std::path::Path>,
    /// Names of the variables that hold the run's model keys, gathered once
    /// with its secrets ([`crate::engine::model::RunSecrets`]): an evaluator
    /// never passes them, or a variable holding one's value, to candidates.
    pub key_vars: &'a [String],
    /// The run's meter: its spend against its budget, for a proposer that
    /// spends while it runs (a coding agent through the model relay).
    pub meter: Arc<RunMeter>,
}

/// A slot trait object (`dyn Population`, `dyn Proposer`, ...): which slot it
/// is. Implemented once per slot, next to the slot trait.
pub trait SlotTrait: Send + 'static {
    const SLOT: Slot;
}

/// `Self` implements the slot trait `S` and can be boxed as one. Implemented
/// once per slot for every implementation of its trait (a blanket impl next
/// to the slot trait); a component never writes it.
pub trait Fills<S: ?Sized + SlotTrait> {
    fn boxed(self) -> Box<S>;
}

/// One implementation of a slot, as the registry sees it.
///
/// Write the parameters once, as a `serde` struct with
/// `#[serde(deny_unknown_fields, default)]` and a `Default` impl; the table in
/// [`ComponentInfo::params`] gives each key's type, range and doc. The
/// registry test checks that the two agree, key for key and default for
/// default.
pub trait Component: Sized + 'static {
    /// The slot trait object this fills (`dyn SelectionPolicy`).
    type Slot: ?Sized + SlotTrait;
    /// The typed parameters a card's block decodes into.
    type Params: Default + Clone + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// Kind, type name, summary and parameter table.
    const INFO: ComponentInfo;
    /// What this block keeps that blocks of other slots may rely on.
    const PROVIDES: &'static [Feature] = &[];
    /// What this block needs from the blocks of other slots. A card whose
    /// blocks do not provide it is refused when it is checked, naming both
    /// slots and the fix ([`crate::engine::registry::Registry::conflicts`]).
    const NEEDS: &'static [Need] = &[];
    /// Whether a paused run may rebuild this block from new parameters and go
    /// on (see [`Slot::live_by_default`], the slot's rule this defaults to;
    /// a block that keeps state it cannot carry over says `false`).
    const LIVE: bool = <Self::Slot as SlotTrait>::SLOT.live_by_default();

    /// Checks across parameters that the table's types and ranges cannot
    /// express (e.g. two lists of the same length). Run once, when a card is
    /// checked; `build` then receives only parameters that passed.
    fn check(_params: &Self::Params) -> Result<(), ParamError> {
        Ok(())
    }

    /// Build the component from checked parameters.
    fn build(params: Self::Params, ctx: &BuildContext<'_>) -> Result<Self, ParamError>;

    /// Build the component from checked parameters alone, without a run
    /// around it, for a block that needs nothing of the task, the model or
    /// the run folder. The studio replays a card's population this way to
    /// draw its islands or beam (a population is a pure function of the
    /// genomes added to it), so every population provides it (the registry
    /// test checks). `None`: the block needs a run.
    fn detached(_params: Self::Params) -> Option<Self> {
        None
    }

    /// What the block's processes are and what these parameters let them
    /// reach (the sandbox, the network, read paths, the environment), for
    /// the list of settings that lower isolation
    /// ([`crate::engine::sandbox::lowered::lowered`]). `None`: the block starts no
    /// process of its own.
    fn reach(_params: &Self::Params) -> Option<Reach> {
        None
    }
}

/// The parameters of a component that takes none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Why a slot could not be looked up, checked or built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "unknown {slot} kind `{kind}`{} (available: {})",
        crate::engine::suggest::did_you_mean(kind, available.iter().copied()),
        available.join(", ")
    )]
    UnknownKind {
        slot: Slot,
        kind: String,
        available: Vec<&'static str>,
    },
    #[error("{slot} kind `{kind}` is registered twice")]
    DuplicateKind { slot: Slot, kind: &'static str },
    #[error("{slot}.{}", .error)]
    Param { slot: Slot, error: ParamError },
}

/// Why a component could not take back the state it checkpointed (a policy's
/// counters, a memory's notes) when a run resumes.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A field is missing or has the wrong shape.
    #[error("{field}: {reason}")]
    Field { field: String, reason: String },
    /// The state does not decode.
    #[error(transparent)]
    Decode(#[from] serde_json::Error),
}

impl RestoreError {
    /// `field` is missing or wrong, for `reason`.
    pub fn field(field: &str, reason: impl Into<String>) -> Self {
        Self::Field {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Two blocks that do not go together: the block in `slot` needs what the
/// block in `need.slot` does not provide. Its text names both slots and the
/// fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The slot whose block needs something.
    pub slot: Slot,
    /// Its kind and type name.
    pub kind: &'static str,
    pub type_name: &'static str,
    /// What it needs, and from which slot.
    pub need: Need,
    /// The kind and type name in that slot, which lacks it.
    pub other_kind: String,
    pub other_type_name: Option<&'static str>,
    /// The first kind of `need.slot` that provides it, with its type name.
    pub fix: Option<(&'static str, &'static str)>,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let other = self.need.slot.key();
        write!(
            f,
            "{} ({} `{}`) {}, but {other} is `{}`",
            self.type_name,
            self.slot.key(),
            self.kind,
            self.need,
            self.other_kind
        )?;
        if let Some(name) = self.other_type_name {
            write!(f, " ({name})")?;
        }
        match self.fix {
            Some((kind, name)) => write!(
                f,
                "; switch {other} to `{kind}` ({name}), or pick another {}",
                self.slot.key().replace('_', " ")
            ),
            None => write!(f, "; pick another {}", self.slot.key().replace('_', " ")),
        }
    }
}
