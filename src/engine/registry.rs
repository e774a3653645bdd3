//! The registry: card `kind` names → implementations, one table per slot,
//! filled explicitly in [`Registry::builtin`]. An unknown kind is an error
//! that lists the known kinds of that slot.

use std::fmt;
use std::sync::Arc;

use crate::engine::evaluator::{Evaluator, SubprocessEvaluator};
use crate::engine::memory::{Memory, NullMemory, ScratchpadMemory};
use crate::engine::model::LanguageModel;
use crate::engine::params::{ParamError, ParamMap, ParamSpec};
use crate::engine::population::{BeamPopulation, InMemoryPopulation, IslandPopulation, Population};
use crate::engine::prompt::{DefaultPromptBuilder, PromptBuilder};
use crate::engine::proposer::{CrossoverProposer, DiffProposer, Proposer};
use crate::engine::selection::{
    BeamSelectionPolicy, BestOfNAttemptsPolicy, BestOfNPolicy, ExploreExploitPolicy,
    IdentityPolicy, SelectionPolicy, TopKPolicy, UCBBanditPolicy, WeightedParentPolicy,
};
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

    /// What the slot does, in one line (seed 004).
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

/// Static description of one implementation.
#[derive(Clone, Copy, Debug)]
pub struct ComponentInfo {
    /// The card `kind` (`best_of_n`).
    pub kind: &'static str,
    /// The Rust type name shown in the studio (`BestOfNPolicy`).
    pub type_name: &'static str,
    /// One-line description for the palette.
    pub summary: &'static str,
    /// Parameter schema.
    pub params: &'static [ParamSpec],
}

/// What factories may use while building a component.
#[derive(Clone)]
pub struct BuildContext<'a> {
    pub task: &'a Task,
    pub model: Arc<dyn LanguageModel>,
    /// `general.parallel`: how many iterations may be in flight at once
    /// (an evaluator sizes its worker pool by it).
    pub parallel: usize,
}

/// A factory: validated params → component.
pub type Factory<T> = fn(&ParamMap, &BuildContext<'_>) -> Result<Box<T>, ParamError>;

/// One registered implementation.
pub struct Entry<T: ?Sized> {
    pub info: ComponentInfo,
    pub build: Factory<T>,
}

/// Why a slot could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown {slot} kind `{kind}`; available: {}", available.join(", "))]
    UnknownKind {
        slot: Slot,
        kind: String,
        available: Vec<&'static str>,
    },
    #[error("{slot}.{}", .error)]
    Param { slot: Slot, error: ParamError },
}

/// Every implementation, per slot.
pub struct Registry {
    pub populations: Vec<Entry<dyn Population>>,
    pub selection_policies: Vec<Entry<dyn SelectionPolicy>>,
    pub prompt_builders: Vec<Entry<dyn PromptBuilder>>,
    pub proposers: Vec<Entry<dyn Proposer>>,
    pub evaluators: Vec<Entry<dyn Evaluator>>,
    pub memories: Vec<Entry<dyn Memory>>,
}

fn find<'r, T: ?Sized>(
    entries: &'r [Entry<T>],
    slot: Slot,
    kind: &str,
) -> Result<&'r Entry<T>, RegistryError> {
    entries
        .iter()
        .find(|e| e.info.kind == kind)
        .ok_or_else(|| RegistryError::UnknownKind {
            slot,
            kind: kind.to_owned(),
            available: entries.iter().map(|e| e.info.kind).collect(),
        })
}

fn build<T: ?Sized>(
    entries: &[Entry<T>],
    slot: Slot,
    kind: &str,
    params: &ParamMap,
    ctx: &BuildContext<'_>,
) -> Result<Box<T>, RegistryError> {
    let entry = find(entries, slot, kind)?;
    if let Some(error) = params.validate(entry.info.params).into_iter().next() {
        return Err(RegistryError::Param { slot, error });
    }
    (entry.build)(params, ctx).map_err(|error| RegistryError::Param { slot, error })
}

impl Registry {
    /// The built-in implementations, registered explicitly here and nowhere else.
    pub fn builtin() -> Self {
        Self {
            populations: vec![
                Entry {
                    info: InMemoryPopulation::INFO,
                    build: |p, c| Ok(Box::new(InMemoryPopulation::from_params(p, c)?)),
                },
                Entry {
                    info: BeamPopulation::INFO,
                    build: |p, c| Ok(Box::new(BeamPopulation::from_params(p, c)?)),
                },
                Entry {
                    info: IslandPopulation::INFO,
                    build: |p, c| Ok(Box::new(IslandPopulation::from_params(p, c)?)),
                },
            ],
            selection_policies: vec![
                Entry {
                    info: BestOfNPolicy::INFO,
                    build: |p, c| Ok(Box::new(BestOfNPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: BestOfNAttemptsPolicy::INFO,
                    build: |p, c| Ok(Box::new(BestOfNAttemptsPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: BeamSelectionPolicy::INFO,
                    build: |p, c| Ok(Box::new(BeamSelectionPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: TopKPolicy::INFO,
                    build: |p, c| Ok(Box::new(TopKPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: ExploreExploitPolicy::INFO,
                    build: |p, c| Ok(Box::new(ExploreExploitPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: UCBBanditPolicy::INFO,
                    build: |p, c| Ok(Box::new(UCBBanditPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: IdentityPolicy::INFO,
                    build: |p, c| Ok(Box::new(IdentityPolicy::from_params(p, c)?)),
                },
                Entry {
                    info: WeightedParentPolicy::INFO,
                    build: |p, c| Ok(Box::new(WeightedParentPolicy::from_params(p, c)?)),
                },
            ],
            prompt_builders: vec![Entry {
                info: DefaultPromptBuilder::INFO,
                build: |p, c| Ok(Box::new(DefaultPromptBuilder::from_params(p, c)?)),
            }],
            proposers: vec![
                Entry {
                    info: DiffProposer::INFO,
                    build: |p, c| Ok(Box::new(DiffProposer::from_params(p, c)?)),
                },
                Entry {
                    info: CrossoverProposer::INFO,
                    build: |p, c| Ok(Box::new(CrossoverProposer::from_params(p, c)?)),
                },
            ],
            evaluators: vec![Entry {
                info: SubprocessEvaluator::INFO,
                build: |p, c| Ok(Box::new(SubprocessEvaluator::from_params(p, c)?)),
            }],
            memories: vec![
                Entry {
                    info: NullMemory::INFO,
                    build: |_, _| Ok(Box::new(NullMemory)),
                },
                Entry {
                    info: ScratchpadMemory::INFO,
                    build: |p, c| Ok(Box::new(ScratchpadMemory::from_params(p, c)?)),
                },
            ],
        }
    }

    /// Infos of one slot's implementations, in registration order.
    pub fn infos(&self, slot: Slot) -> Vec<ComponentInfo> {
        fn infos<T: ?Sized>(e: &[Entry<T>]) -> Vec<ComponentInfo> {
            e.iter().map(|e| e.info).collect()
        }
        match slot {
            Slot::Population => infos(&self.populations),
            Slot::SelectionPolicy => infos(&self.selection_policies),
            Slot::PromptBuilder => infos(&self.prompt_builders),
            Slot::Proposer => infos(&self.proposers),
            Slot::Evaluator => infos(&self.evaluators),
            Slot::Memory => infos(&self.memories),
        }
    }

    /// The info of `kind` in `slot`, or the unknown-kind error.
    pub fn info(&self, slot: Slot, kind: &str) -> Result<ComponentInfo, RegistryError> {
        self.infos(slot)
            .into_iter()
            .find(|i| i.kind == kind)
            .ok_or_else(|| RegistryError::UnknownKind {
                slot,
                kind: kind.to_owned(),
                available: self.infos(slot).iter().map(|i| i.kind).collect(),
            })
    }

    pub fn population(
        &self,
        kind: &str,
        p: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<dyn Population>, RegistryError> {
        build(&self.populations, Slot::Population, kind, p, ctx)
    }

    pub fn selection_policy(
        &self,
        kind: &str,
        p: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<dyn SelectionPolicy>, RegistryError> {
        build(
            &self.selection_policies,
            Slot::SelectionPolicy,
            kind,
            p,
            ctx,
        )
    }

    pub fn prompt_builder(
        &self,
        kind: &str,
        p: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<dyn PromptBuilder>, RegistryError> {
        build(&self.prompt_builders, Slot::PromptBuilder, kind, p, ctx)
    }

    pub fn proposer(
        &self,
        kind: &str,
        p: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<dyn Proposer>, RegistryError> {
        build(&self.proposers, Slot::Proposer, kind, p, ctx)
    }

    pub fn evaluator(
        &self,
        kind: &str,
        p: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<dyn Evaluator>, RegistryError> {
        build(&self.evaluators, Slot::Evaluator, kind, p, ctx)
    }

    pub fn memory(
        &self,
        kind: &str,
        p: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<dyn Memory>, RegistryError> {
        build(&self.memories, Slot::Memory, kind, p, ctx)
    }
}
