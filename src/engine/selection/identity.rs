//! `IdentityPolicy`: no framework choice at all. It hands the whole valid
//! pool (best first, capped) to the proposer as parents and defers the pick
//! to it — the agent-driven scaffolds' "the agent chooses its own parent".

use serde::{Deserialize, Serialize};

use super::{Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::{Population, Query};
use crate::engine::rng::SearchRng;

/// Parameters of [`IdentityPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdentityParams {
    /// At most this many parents are handed over (best first).
    pub max_parents: u64,
}

impl Default for IdentityParams {
    fn default() -> Self {
        Self { max_parents: 50 }
    }
}

/// Returns the whole valid pool as parents, best first; no inspirations.
#[derive(Clone, Debug)]
pub struct IdentityPolicy {
    max_parents: usize,
}

impl Default for IdentityPolicy {
    fn default() -> Self {
        Self::new(IdentityParams::default())
    }
}

impl Component for IdentityPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = IdentityParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "identity",
        type_name: "IdentityPolicy",
        summary: "Hand the whole pool (best first) to the proposer and let it choose",
        params: &[ParamSpec {
            key: "max_parents",
            doc: "Most programs handed to the proposer, best first (the first is the default parent)",
            ty: ParamType::Int {
                min: 1,
                max: i64::MAX,
            },
        }],
    };

    fn build(params: IdentityParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl IdentityPolicy {
    /// A policy with the given parameters (at least one parent).
    pub fn new(params: IdentityParams) -> Self {
        Self {
            max_parents: usize::try_from(params.max_parents.max(1)).unwrap_or(usize::MAX),
        }
    }
}

impl SelectionPolicy for IdentityPolicy {
    fn select(
        &mut self,
        population: &dyn Population,
        _rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let parents: Vec<_> = population
            .query(&Query::TopK(self.max_parents))
            .into_iter()
            .filter(|g| g.valid)
            .collect();
        if parents.is_empty() {
            return Err(SelectionError::Empty);
        }
        Ok(Selection {
            parents,
            inspirations: Vec::new(),
            island: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::genome::{Genome, GenomeId};
    use crate::engine::population::{InMemoryParams, InMemoryPopulation};
    use crate::engine::rng::seeded;

    fn g(id: GenomeId, score: Option<f64>) -> Arc<Genome> {
        crate::engine::genome::scored_for_tests(id, score)
    }

    #[test]
    fn returns_the_valid_pool_best_first_capped_without_inspirations() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        let mut rng = seeded(3);
        let mut policy = IdentityPolicy::new(IdentityParams { max_parents: 3 });
        assert_eq!(
            policy.select(&pop, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
        for (i, s) in [Some(0.2), None, Some(0.8), Some(0.5), Some(0.1)]
            .into_iter()
            .enumerate()
        {
            pop.add(g(i as GenomeId, s));
        }
        let s = policy.select(&pop, &mut rng).unwrap();
        let ids: Vec<GenomeId> = s.parents.iter().map(|g| g.id).collect();
        assert_eq!(ids, vec![2, 3, 0]);
        assert!(s.inspirations.is_empty());
        let mut all = IdentityPolicy::default();
        assert_eq!(all.select(&pop, &mut rng).unwrap().parents.len(), 4);
    }
}
