//! `BestOfNAttemptsPolicy`: the attempt-counted best-of-N. The
//! per-parent budget is charged at selection time, so the parent rotates to
//! the current global best after exactly N selections, whatever their
//! outcome (failed or invalid children spend the budget too).

use serde::{Deserialize, Serialize};

use super::best_of_n::{BestOfNParams, ReuseState};
use super::{PolicyStatus, Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{BuildContext, Component, ComponentInfo, RestoreError};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::Population;
use crate::engine::rng::SearchRng;

/// Parameters of [`BestOfNAttemptsPolicy`] (the same keys as `best_of_n`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BestOfNAttemptsParams {
    /// N: selections of one parent before the switch to the global best.
    pub best_of_n: u64,
    /// Context programs sampled from the top pool each step.
    pub num_inspirations: u64,
}

impl Default for BestOfNAttemptsParams {
    fn default() -> Self {
        Self {
            best_of_n: 5,
            num_inspirations: 4,
        }
    }
}

/// Reuses one parent for exactly N attempts, then switches to the global best.
#[derive(Clone, Debug)]
pub struct BestOfNAttemptsPolicy {
    state: ReuseState,
}

impl Default for BestOfNAttemptsPolicy {
    fn default() -> Self {
        Self::new(BestOfNAttemptsParams::default())
    }
}

impl Component for BestOfNAttemptsPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = BestOfNAttemptsParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "best_of_n_attempts",
        type_name: "BestOfNAttemptsPolicy",
        summary: "Reuse one parent for exactly N attempts (valid or not), then switch to the global best",
        params: &[
            ParamSpec {
                key: "best_of_n",
                doc: "N: attempts on one parent before switching to the global best \
                      (every attempt counts, failed or not)",
                ty: ParamType::Int {
                    min: 1,
                    max: i64::MAX,
                },
            },
            ParamSpec {
                key: "num_inspirations",
                doc: "Context programs sampled at random from the top max(2k, 10), excluding \
                      the parent, re-drawn every step",
                ty: ParamType::Int {
                    min: 0,
                    max: i64::MAX,
                },
            },
        ],
    };

    fn build(params: BestOfNAttemptsParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl BestOfNAttemptsPolicy {
    /// A policy with the given parameters (N is at least 1).
    pub fn new(params: BestOfNAttemptsParams) -> Self {
        Self {
            state: ReuseState::new(&BestOfNParams {
                best_of_n: params.best_of_n,
                num_inspirations: params.num_inspirations,
            }),
        }
    }

    /// The parent being reused, if one is committed.
    pub fn current_parent_id(&self) -> Option<GenomeId> {
        self.state.current_parent_id
    }

    /// Attempts charged to the current parent.
    pub fn uses(&self) -> usize {
        self.state.uses
    }
}

impl SelectionPolicy for BestOfNAttemptsPolicy {
    fn checkpoint(&self) -> serde_json::Value {
        self.state.checkpoint()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        self.state.restore(state)
    }

    /// Choose (reuse or switch), sample inspirations, then charge one attempt.
    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let selection = self.state.select(population, rng)?;
        self.state.uses = self.state.uses.saturating_add(1);
        Ok(selection)
    }

    /// Nothing to do: the budget was charged in `select`.
    fn observe(&mut self, _genome: &Genome) {}

    fn status(&self) -> PolicyStatus {
        self.state.status()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::population::{InMemoryParams, InMemoryPopulation};
    use crate::engine::rng::seeded;

    fn g(id: GenomeId, score: Option<f64>) -> Arc<Genome> {
        crate::engine::genome::scored_for_tests(id, score)
    }

    #[test]
    fn charges_at_select_and_observe_is_inert() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        pop.add(g(0, Some(0.5)));
        let mut policy = BestOfNAttemptsPolicy::new(BestOfNAttemptsParams {
            best_of_n: 2,
            num_inspirations: 4,
        });
        let mut rng = seeded(3);
        assert_eq!(policy.uses(), 0);
        policy.select(&pop, &mut rng).unwrap();
        assert_eq!(policy.uses(), 1);
        policy.observe(&g(1, Some(0.9)));
        assert_eq!(policy.uses(), 1);
        assert_eq!(policy.current_parent_id(), Some(0));
        assert_eq!(
            policy.status().fields[1],
            ("uses".to_owned(), "1/2".to_owned())
        );
    }

    #[test]
    fn empty_population_is_an_error_and_charges_nothing() {
        let pop = InMemoryPopulation::new(InMemoryParams::default());
        let mut policy = BestOfNAttemptsPolicy::default();
        let mut rng = seeded(0);
        assert_eq!(
            policy.select(&pop, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
        assert_eq!(policy.uses(), 0);
    }
}
