//! `TopKPolicy`: greedy top-1 parent with the next `k` programs as
//! inspirations (the semantics of SkyDiscover's top-k database). Stateless
//! and deterministic.

use serde::{Deserialize, Serialize};

use super::{Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::{Population, Query};
use crate::engine::rng::SearchRng;

/// Parameters of [`TopKPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopKParams {
    /// Programs ranked 2..=k+1 shown as inspirations.
    pub k: u64,
}

impl Default for TopKParams {
    fn default() -> Self {
        Self { k: 4 }
    }
}

/// Parent = the global best; inspirations = the next `k` by fitness.
#[derive(Clone, Debug)]
pub struct TopKPolicy {
    k: usize,
}

impl Default for TopKPolicy {
    fn default() -> Self {
        Self::new(TopKParams::default())
    }
}

impl Component for TopKPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = TopKParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "topk",
        type_name: "TopKPolicy",
        summary: "Greedy: the best program is the parent, the next k are inspirations",
        params: &[ParamSpec {
            key: "k",
            doc: "Inspirations: the programs ranked 2 to k+1 by fitness",
            ty: ParamType::Int { min: 1, max: 100 },
        }],
    };

    fn build(params: TopKParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl TopKPolicy {
    /// A policy with the given parameters.
    pub fn new(params: TopKParams) -> Self {
        Self {
            k: usize::try_from(params.k).unwrap_or(usize::MAX),
        }
    }
}

impl SelectionPolicy for TopKPolicy {
    fn select(
        &mut self,
        population: &dyn Population,
        _rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let mut top = population
            .query(&Query::TopK(self.k.saturating_add(1)))
            .into_iter()
            .filter(|g| g.valid);
        let parent = top.next().ok_or(SelectionError::Empty)?;
        Ok(Selection {
            parents: vec![parent],
            inspirations: top.collect(),
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
    fn parent_is_top_one_and_inspirations_the_next_k() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        let mut policy = TopKPolicy::new(TopKParams { k: 2 });
        let mut rng = seeded(0);
        assert_eq!(
            policy.select(&pop, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
        pop.add(g(0, Some(0.3)));
        let s = policy.select(&pop, &mut rng).unwrap();
        assert_eq!(s.parent().unwrap().id, 0);
        assert!(s.inspirations.is_empty());
        pop.add(g(1, Some(0.9)));
        pop.add(g(2, None));
        pop.add(g(3, Some(0.5)));
        pop.add(g(4, Some(0.1)));
        for _ in 0..3 {
            let s = policy.select(&pop, &mut rng).unwrap();
            assert_eq!(s.parent().unwrap().id, 1);
            let insp: Vec<GenomeId> = s.inspirations.iter().map(|g| g.id).collect();
            assert_eq!(insp, vec![3, 0]);
            assert_eq!(s.island, None);
        }
    }
}
