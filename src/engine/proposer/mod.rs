//! Slot 4 — Proposer: the variation operator. Turns a built prompt into a new
//! candidate (one model call + edit application for `DiffProposer`).

pub mod crossover;
pub mod diff;
pub mod novelty;

pub use crossover::{CrossoverParams, CrossoverProposer};
pub use diff::{DiffParams, DiffProposer};

use std::sync::Arc;

use crate::engine::component::{Fills, Slot, SlotTrait};
use crate::engine::genome::{Genome, Prompt, TokenUsage};
use crate::engine::prompt::EditMode;
use crate::engine::rng::SearchRng;

/// Input to one proposal.
#[derive(Clone, Debug)]
pub struct ProposalRequest {
    pub prompt: Prompt,
    pub parent: Arc<Genome>,
    pub inspirations: Vec<Arc<Genome>>,
    /// Seed drawn from the run's RNG for this proposal.
    pub seed: u64,
    /// The fittest genomes of the population (as many as
    /// [`Proposer::novelty_pool_size`] asked for), for novelty checks.
    pub pool: Vec<Arc<Genome>>,
    /// The edit mode the prompt was built for (what
    /// [`Proposer::edit_mode`] chose for this attempt).
    pub mode: EditMode,
}

/// Why a proposal produced no candidate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    /// The reply had no usable edit (no blocks, unmatched SEARCH, edit outside
    /// the EVOLVE-BLOCK, broken markers...).
    #[error("{0}")]
    Parse(String),
    /// The edit left the program unchanged.
    #[error("{0}")]
    NoOp(String),
    /// The model call failed (after the client's own retries).
    #[error("{0}")]
    Model(String),
    /// The run must stop (e.g. authentication failed).
    #[error("{0}")]
    Fatal(String),
}

/// The outcome of one proposal. The raw response is kept even on failure.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub content: Result<String, ProposalError>,
    pub response: Option<String>,
    pub model: Option<String>,
    pub usage: Option<TokenUsage>,
    /// `diff`, `full`, `crossover`...
    pub patch_type: String,
}

/// The proposer slot (slot 4 of the loop, see ARCHITECTURE.md). `propose` is
/// the one required verb.
#[async_trait::async_trait]
pub trait Proposer: Send + Sync {
    async fn propose(&self, request: ProposalRequest) -> Proposal;

    /// How many of the population's fittest genomes the proposer wants in
    /// [`ProposalRequest::pool`] (for novelty rejection); 0 = none.
    fn novelty_pool_size(&self) -> usize {
        0
    }

    /// The edit mode for the next attempt, chosen before its prompt is built
    /// (patch-type mixing). `inspirations` are the attempt's context
    /// programs (crossover needs one). The default is always
    /// [`EditMode::Diff`] and draws nothing from `rng`.
    fn edit_mode(&self, _inspirations: &[Arc<Genome>], _rng: &mut SearchRng) -> EditMode {
        EditMode::Diff
    }
}

impl SlotTrait for dyn Proposer {
    const SLOT: Slot = Slot::Proposer;
}

impl<T: Proposer + 'static> Fills<dyn Proposer> for T {
    fn boxed(self) -> Box<dyn Proposer> {
        Box::new(self)
    }
}
