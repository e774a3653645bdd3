//! `InMemoryPopulation`: the flat keep-all archive of every scored genome,
//! optionally bounded by a capacity.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{GenomeStore, Population};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::Genome;
use crate::engine::params::{ParamError, ParamSpec, ParamType};

/// Parameters of [`InMemoryPopulation`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InMemoryParams {
    /// Maximum number of genomes kept; `None` keeps everything.
    pub capacity: Option<u64>,
}

/// A flat keep-all archive. Over capacity it evicts the oldest invalid genome
/// first, otherwise the worst valid one; the best genome is never evicted.
#[derive(Clone, Default)]
pub struct InMemoryPopulation {
    store: GenomeStore,
    capacity: Option<usize>,
}

impl Component for InMemoryPopulation {
    type Slot = dyn Population;
    type Params = InMemoryParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "in_memory",
        type_name: "InMemoryPopulation",
        summary: "Flat keep-all archive of every scored program, ranked by fitness",
        params: &[ParamSpec {
            key: "capacity",
            doc: "Maximum number of programs kept (null = keep everything); over capacity the \
                  oldest invalid program goes first, then the worst valid one, never the best",
            ty: ParamType::OptionalInt {
                min: 1,
                max: i64::MAX,
            },
        }],
    };

    fn build(params: InMemoryParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }

    fn detached(params: InMemoryParams) -> Option<Self> {
        Some(Self::new(params))
    }
}

impl InMemoryPopulation {
    /// A population with the given parameters (a capacity of 0 is treated as 1).
    pub fn new(params: InMemoryParams) -> Self {
        Self {
            store: GenomeStore::new(),
            capacity: params
                .capacity
                .map(|c| usize::try_from(c.max(1)).unwrap_or(usize::MAX)),
        }
    }

    /// The configured capacity, if any.
    pub fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    /// Evict until within capacity: oldest invalid first, else the worst
    /// valid genome, but never the best one.
    fn enforce_capacity(&mut self) {
        let Some(cap) = self.capacity else { return };
        while self.store.len() > cap {
            let victim = match self.store.oldest_invalid() {
                Some(id) => Some(id),
                None => {
                    let best = self.store.best().map(|g| g.id);
                    self.store
                        .worst_valid()
                        .map(|g| g.id)
                        .filter(|id| Some(*id) != best)
                }
            };
            match victim {
                Some(id) => {
                    self.store.remove(id);
                }
                // only the best is left (cap ≥ 1 makes this unreachable in
                // practice); keep it rather than loop
                None => break,
            }
        }
    }
}

impl Population for InMemoryPopulation {
    fn add(&mut self, genome: Arc<Genome>) {
        self.store.insert(genome);
        self.enforce_capacity();
    }

    fn store(&self) -> &GenomeStore {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::GenomeId;
    use crate::engine::params::ParamMap;
    use crate::engine::population::Query;

    fn g(id: GenomeId, score: Option<f64>) -> Arc<Genome> {
        crate::engine::genome::scored_for_tests(id, score)
    }

    fn ids(v: &[Arc<Genome>]) -> Vec<GenomeId> {
        v.iter().map(|g| g.id).collect()
    }

    #[test]
    fn decodes_null_and_int_capacity() {
        let mut m = ParamMap::default();
        assert!(m.validate(InMemoryPopulation::INFO.params).is_empty());
        assert_eq!(m.decode::<InMemoryParams>().unwrap().capacity, None);
        m.set("capacity", crate::engine::params::ParamValue::Int(3));
        assert_eq!(m.decode::<InMemoryParams>().unwrap().capacity, Some(3));
        m.set("capacity", crate::engine::params::ParamValue::Int(0));
        assert_eq!(m.validate(InMemoryPopulation::INFO.params).len(), 1);
    }

    #[test]
    fn keeps_everything_without_capacity() {
        let mut p = InMemoryPopulation::new(InMemoryParams::default());
        for i in 0..50 {
            p.add(g(i, if i % 3 == 0 { None } else { Some(i as f64) }));
        }
        assert_eq!(p.len(), 50);
        assert_eq!(p.best().unwrap().id, 49);
        assert_eq!(ids(&p.query(&Query::TopK(2))), vec![49, 47]);
        assert_eq!(p.query(&Query::All).len(), 50);
        // Active on a flat population = every valid genome
        assert_eq!(p.query(&Query::Active).len(), 33);
    }

    #[test]
    fn capacity_evicts_oldest_invalid_then_worst_valid() {
        let mut p = InMemoryPopulation::new(InMemoryParams { capacity: Some(3) });
        p.add(g(0, Some(0.5)));
        p.add(g(1, None));
        p.add(g(2, None));
        p.add(g(3, Some(0.7)));
        // the oldest invalid (1) went first
        assert_eq!(ids(&p.query(&Query::All)), vec![0, 2, 3]);
        p.add(g(4, Some(0.1)));
        assert_eq!(ids(&p.query(&Query::All)), vec![0, 3, 4]);
        // no invalid left: the worst valid goes (the newcomer here)
        p.add(g(5, Some(0.05)));
        assert_eq!(ids(&p.query(&Query::All)), vec![0, 3, 4]);
        p.add(g(6, Some(0.9)));
        assert_eq!(ids(&p.query(&Query::All)), vec![0, 3, 6]);
        assert_eq!(p.best().unwrap().id, 6);
    }

    #[test]
    fn capacity_one_never_evicts_the_best() {
        let mut p = InMemoryPopulation::new(InMemoryParams { capacity: Some(1) });
        p.add(g(0, Some(0.5)));
        p.add(g(1, Some(0.2)));
        assert_eq!(ids(&p.query(&Query::All)), vec![0]);
        p.add(g(2, None));
        assert_eq!(ids(&p.query(&Query::All)), vec![0]);
        p.add(g(3, Some(0.8)));
        assert_eq!(ids(&p.query(&Query::All)), vec![3]);
    }
}
