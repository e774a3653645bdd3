//! `BestOfNPolicy`: reuse one parent until it has produced N *valid*
//! children, then commit to the current global best (the semantics of
//! SkyDiscover's best-of-N database). Failed children are free retries.
//! Inspirations are re-sampled from the top pool at every step.

use std::sync::Arc;

use rand::seq::IndexedRandom as _;
use serde::{Deserialize, Serialize};

use super::{PolicyStatus, Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{BuildContext, Component, ComponentInfo, RestoreError};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::{Population, Query};
use crate::engine::rng::SearchRng;

/// Parameters of [`BestOfNPolicy`] (and of its attempt-counted sibling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BestOfNParams {
    /// N: how many children one parent gets before the switch to the global best.
    pub best_of_n: u64,
    /// Context programs sampled from the top pool each step.
    pub num_inspirations: u64,
}

impl Default for BestOfNParams {
    fn default() -> Self {
        Self {
            best_of_n: 5,
            num_inspirations: 4,
        }
    }
}

/// The parameter table of [`BestOfNPolicy`].
const SPECS: [ParamSpec; 2] = [
    ParamSpec {
        key: "best_of_n",
        doc: "N: valid children drawn from one parent before switching to the global best \
              (failed children do not count)",
        ty: ParamType::Int {
            min: 1,
            max: i64::MAX,
        },
    },
    ParamSpec {
        key: "num_inspirations",
        doc: "Context programs sampled at random from the top max(2k, 10), excluding the \
              parent, re-drawn every step",
        ty: ParamType::Int {
            min: 0,
            max: i64::MAX,
        },
    },
];

/// The parent-reuse state machine shared by the two best-of-N policies.
#[derive(Clone, Debug)]
pub(crate) struct ReuseState {
    pub(crate) n: usize,
    pub(crate) num_inspirations: usize,
    pub(crate) current_parent_id: Option<GenomeId>,
    pub(crate) uses: usize,
    /// The iteration that began the current cycle (the first dispatched
    /// after the last commit): a child of an earlier iteration belongs to
    /// an earlier cycle, even when that cycle committed to the same parent.
    /// 0 after a restore: nothing dispatched before it is still in flight.
    cycle_start: u64,
    /// A commit was made by the last `select` and awaits its iteration
    /// number ([`ReuseState::dispatched`]).
    committed: bool,
}

impl ReuseState {
    /// The resumable part: current parent and its use count.
    pub(crate) fn checkpoint(&self) -> serde_json::Value {
        serde_json::json!({ "current_parent_id": self.current_parent_id, "uses": self.uses })
    }

    pub(crate) fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        if state.is_null() {
            return Ok(());
        }
        self.current_parent_id = match state.get("current_parent_id") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                RestoreError::field("current_parent_id", format!("expected an id, got {v}"))
            })?),
        };
        self.uses = state
            .get("uses")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| RestoreError::field("uses", "missing or not a count"))?
            as usize;
        self.cycle_start = 0;
        self.committed = false;
        Ok(())
    }

    pub(crate) fn new(params: &BestOfNParams) -> Self {
        Self {
            n: usize::try_from(params.best_of_n.max(1)).unwrap_or(usize::MAX),
            num_inspirations: usize::try_from(params.num_inspirations).unwrap_or(usize::MAX),
            current_parent_id: None,
            uses: 0,
            cycle_start: 0,
            committed: false,
        }
    }

    /// The selection just made was dispatched as `iteration`: when it
    /// committed to a parent, the new cycle begins there.
    pub(crate) fn dispatched(&mut self, iteration: u64) {
        if std::mem::take(&mut self.committed) {
            self.cycle_start = iteration;
        }
    }

    /// Whether `child` was dispatched in the current cycle from its parent.
    pub(crate) fn of_this_cycle(&self, child: &Genome) -> bool {
        child.parent_id.is_some()
            && child.parent_id == self.current_parent_id
            && child.iteration >= self.cycle_start
    }

    /// Reuse the current parent, or commit to the global best (ties: the
    /// earliest admitted) when there is none, it is gone, or its budget is
    /// spent.
    pub(crate) fn choose_parent(
        &mut self,
        population: &dyn Population,
    ) -> Result<Arc<Genome>, SelectionError> {
        let best = population.best().ok_or(SelectionError::Empty)?;
        let current = self
            .current_parent_id
            .and_then(|id| population.get(id))
            .filter(|g| g.valid);
        match current {
            Some(parent) if self.uses < self.n => Ok(parent),
            _ => {
                self.current_parent_id = Some(best.id);
                self.uses = 0;
                self.committed = true;
                Ok(best)
            }
        }
    }

    /// Parent, then a fresh random sample of inspirations.
    pub(crate) fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let parent = self.choose_parent(population)?;
        let inspirations = sample_inspirations(population, parent.id, self.num_inspirations, rng);
        Ok(Selection {
            parents: vec![parent],
            inspirations,
            island: None,
        })
    }

    pub(crate) fn status(&self) -> PolicyStatus {
        PolicyStatus {
            fields: vec![
                (
                    "current parent".to_owned(),
                    self.current_parent_id
                        .map_or_else(|| "none".to_owned(), |id| format!("#{id}")),
                ),
                ("uses".to_owned(), format!("{}/{}", self.uses, self.n)),
            ],
        }
    }
}

/// A random sample of at most `k` inspirations from the top `max(2k, 10)`
/// valid genomes, never the parent; when that pool holds nothing but the
/// parent, from every other valid genome. Draws only from `rng`.
pub(crate) fn sample_inspirations(
    population: &dyn Population,
    parent_id: GenomeId,
    k: usize,
    rng: &mut SearchRng,
) -> Vec<Arc<Genome>> {
    if k == 0 {
        return Vec::new();
    }
    let top = k.saturating_mul(2).max(10);
    let mut pool: Vec<Arc<Genome>> = population
        .query(&Query::TopK(top))
        .into_iter()
        .filter(|g| g.id != parent_id && g.valid)
        .collect();
    if pool.is_empty() {
        pool = population
            .store()
            .iter_ranked()
            .filter(|g| g.id != parent_id)
            .cloned()
            .collect();
    }
    pool.sample(rng, k).cloned().collect()
}

/// Reuses one parent for N valid children, then switches to the global best.
#[derive(Clone, Debug)]
pub struct BestOfNPolicy {
    state: ReuseState,
}

impl Default for BestOfNPolicy {
    fn default() -> Self {
        Self::new(BestOfNParams::default())
    }
}

impl Component for BestOfNPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = BestOfNParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "best_of_n",
        type_name: "BestOfNPolicy",
        summary: "Reuse one parent until N valid children, then switch to the global best",
        params: &SPECS,
    };

    fn build(params: BestOfNParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl BestOfNPolicy {
    /// A policy with the given parameters (N is at least 1).
    pub fn new(params: BestOfNParams) -> Self {
        Self {
            state: ReuseState::new(&params),
        }
    }

    /// The parent being reused, if one is committed.
    pub fn current_parent_id(&self) -> Option<GenomeId> {
        self.state.current_parent_id
    }

    /// Valid children counted against the current parent.
    pub fn uses(&self) -> usize {
        self.state.uses
    }
}

impl SelectionPolicy for BestOfNPolicy {
    fn checkpoint(&self) -> serde_json::Value {
        self.state.checkpoint()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        self.state.restore(state)
    }

    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        self.state.select(population, rng)
    }

    fn dispatched(&mut self, iteration: u64) {
        self.state.dispatched(iteration);
    }

    /// Only a valid child *of the current cycle* spends its budget: with
    /// several iterations in flight, a child selected before the last
    /// commit that lands after it does not count for the new cycle, whether
    /// the commit moved to another parent or re-committed to the same one
    /// (and the initial program, which has no parent, never counts).
    fn observe(&mut self, genome: &Genome) {
        if genome.valid && self.state.of_this_cycle(genome) {
            self.state.uses = self.state.uses.saturating_add(1);
        }
    }

    fn status(&self) -> PolicyStatus {
        self.state.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::params::ParamMap;
    use crate::engine::params::ParamValue;
    use crate::engine::population::{InMemoryParams, InMemoryPopulation};
    use crate::engine::rng::seeded;

    fn g(id: GenomeId, score: Option<f64>) -> Arc<Genome> {
        crate::engine::genome::scored_for_tests(id, score)
    }

    #[test]
    fn params_decode() {
        let mut m = ParamMap::default();
        m.set("best_of_n", ParamValue::Int(3));
        assert!(m.validate(BestOfNPolicy::INFO.params).is_empty());
        let p: BestOfNParams = m.decode().unwrap();
        assert_eq!((p.best_of_n, p.num_inspirations), (3, 4));
        m.set("best_of_n", ParamValue::Int(0));
        assert_eq!(m.validate(BestOfNPolicy::INFO.params).len(), 1);
    }

    #[test]
    fn empty_population_is_an_error() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        let mut policy = BestOfNPolicy::default();
        let mut rng = seeded(0);
        assert_eq!(
            policy.select(&pop, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
        // only invalid genomes: still nothing to select
        pop.add(g(0, None));
        assert_eq!(
            policy.select(&pop, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
    }

    #[test]
    fn observe_before_any_select_does_not_count_and_status_reports() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        let mut policy = BestOfNPolicy::new(BestOfNParams {
            best_of_n: 2,
            num_inspirations: 0,
        });
        let seed = g(0, Some(0.5));
        pop.add(seed.clone());
        policy.observe(&seed);
        assert_eq!(policy.uses(), 0);
        let mut rng = seeded(1);
        let s = policy.select(&pop, &mut rng).unwrap();
        assert_eq!(s.parent().unwrap().id, 0);
        assert!(s.inspirations.is_empty());
        let mut child = (*g(1, Some(0.1))).clone();
        child.parent_id = Some(0);
        policy.observe(&child);
        assert_eq!(
            policy.status().fields,
            vec![
                ("current parent".to_owned(), "#0".to_owned()),
                ("uses".to_owned(), "1/2".to_owned()),
            ]
        );
    }
}
