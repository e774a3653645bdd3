//! Slot 2 — SelectionPolicy: the active, stateful policy that decides which
//! parents and inspirations to draw from the population and adapts over time.

mod beam;
mod best_of_n;
mod best_of_n_attempts;
mod explore_exploit;
mod identity;
mod pareto;
mod topk;
mod ucb_islands;
mod weighted;

use std::sync::Arc;

pub use beam::{BeamPolicy, BeamSelectionParams, BeamStrategy};
pub use best_of_n::{BestOfNParams, BestOfNPolicy};
pub use best_of_n_attempts::{BestOfNAttemptsParams, BestOfNAttemptsPolicy};
pub use explore_exploit::{ExploreExploitParams, ExploreExploitPolicy, SampleMode};
pub use identity::{IdentityParams, IdentityPolicy};
pub use pareto::{ParetoMode, ParetoParams, ParetoPolicy};
pub use topk::{TopKParams, TopKPolicy};
pub use ucb_islands::{UcbIslandsParams, UcbIslandsPolicy};
pub use weighted::{WeightedParams, WeightedPolicy};

use crate::engine::component::{Fills, RestoreError, Slot, SlotTrait};
use crate::engine::genome::Genome;
use crate::engine::population::Population;
use crate::engine::rng::SearchRng;

/// What a policy hands to the prompt builder.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Parents, primary first. The child's `parent_id` is the first parent.
    pub parents: Vec<Arc<Genome>>,
    /// Context programs shown alongside the parent.
    pub inspirations: Vec<Arc<Genome>>,
    /// Island the child should join (island populations); `None` = the
    /// parent's island.
    pub island: Option<u32>,
}

impl Selection {
    /// The primary parent.
    pub fn parent(&self) -> Option<&Arc<Genome>> {
        self.parents.first()
    }
}

/// Why a policy could not select.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SelectionError {
    #[error("the population has no valid genome to select from")]
    Empty,
    #[error("{0}")]
    Incompatible(String),
}

/// A policy's state, shown in the studio ("current parent #12, used 2/5").
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PolicyStatus {
    /// Label/value pairs, in display order.
    pub fields: Vec<(String, String)>,
}

/// The selection slot (slot 2 of the loop, see ARCHITECTURE.md). `select` is
/// the one required verb.
pub trait SelectionPolicy: Send + Sync {
    /// Choose parents and inspirations for the next iteration. Every random
    /// choice draws from `rng`.
    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError>;

    /// The selection `select` just returned was dispatched as iteration
    /// `iteration`, the number its genomes carry (`Genome::iteration`).
    /// With several iterations in flight, a policy whose state changes at a
    /// selection (a new cycle) tells by it which children came before.
    fn dispatched(&mut self, _iteration: u64) {}

    /// Update internal state after a child (valid or not) was admitted.
    fn observe(&mut self, _genome: &Genome) {}

    /// The policy's state for display.
    fn status(&self) -> PolicyStatus {
        PolicyStatus::default()
    }

    /// Everything the policy needs to continue after a restart (counters,
    /// current parent, expansion history), for run checkpoints. Stateless
    /// policies keep the default.
    fn checkpoint(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restore what [`SelectionPolicy::checkpoint`] saved.
    fn restore(&mut self, _state: &serde_json::Value) -> Result<(), RestoreError> {
        Ok(())
    }
}

impl SlotTrait for dyn SelectionPolicy {
    const SLOT: Slot = Slot::SelectionPolicy;
}

impl<T: SelectionPolicy + 'static> Fills<dyn SelectionPolicy> for T {
    fn boxed(self) -> Box<dyn SelectionPolicy> {
        Box::new(self)
    }
}
