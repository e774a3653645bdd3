//! Slot 3 — PromptBuilder: renders the selected genomes and memory into the
//! model input. It formats; it does not select.

mod default;
mod program;

use std::sync::Arc;

pub use default::{DefaultPromptBuilder, DefaultPromptParams};

use crate::engine::component::{Fills, Slot, SlotTrait};
use crate::engine::genome::{Genome, Prompt};
use crate::engine::memory::Knowledge;
use crate::engine::rng::SearchRng;
pub use crate::engine::task::TaskBrief;

/// An earlier failed attempt of the same iteration (inner retry), shown so
/// the model can correct itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailedAttempt {
    pub error: String,
    /// The model's response (truncated when rendered).
    pub response: Option<String>,
}

/// How the proposer will read the reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EditMode {
    /// SEARCH/REPLACE blocks.
    #[default]
    Diff,
    /// The whole program in a fenced block.
    FullRewrite,
    /// Combine the parent with the first inspiration, whole program.
    Crossover,
}

/// Everything a prompt builder may format.
#[derive(Clone, Copy, Debug)]
pub struct PromptContext<'a> {
    pub task: &'a TaskBrief,
    /// The primary parent (the "current program").
    pub parent: &'a Genome,
    /// The parent's own parent, for "compared with last time" focus bullets.
    pub grandparent: Option<&'a Genome>,
    pub inspirations: &'a [Arc<Genome>],
    pub knowledge: &'a Knowledge,
    pub failed_attempts: &'a [FailedAttempt],
    pub mode: EditMode,
}

/// The prompt slot (slot 3 of the loop, see ARCHITECTURE.md). `build` is the
/// one required verb.
pub trait PromptBuilder: Send + Sync {
    /// Render the system and user messages. `rng` is only for stochastic
    /// template variation.
    fn build(&self, context: &PromptContext<'_>, rng: &mut SearchRng) -> Prompt;
}

impl SlotTrait for dyn PromptBuilder {
    const SLOT: Slot = Slot::PromptBuilder;
}

impl<T: PromptBuilder + 'static> Fills<dyn PromptBuilder> for T {
    fn boxed(self) -> Box<dyn PromptBuilder> {
        Box::new(self)
    }
}
