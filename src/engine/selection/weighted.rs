//! `WeightedPolicy`: ShinkaEvolve's default parent selection. Every
//! valid genome may be the parent, drawn with weight
//!
//! ```text
//! w_i = sigmoid(λ · (s_i − median(s)) / max(MAD(s), 1e-6)) × 1 / (1 + children_i)
//! ```
//!
//! where `s` are the fitnesses, MAD is the median absolute deviation from
//! the median, and `children_i` counts the children already proposed from
//! genome `i` (every admitted child, valid or not: each one spent an attempt
//! on that parent). High scorers are preferred, and a parent that has been
//! expanded many times is gradually left for less explored ones.
//! Inspirations are the `num_inspirations` fittest genomes other than the
//! parent. The children counts are checkpointed.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use super::{PolicyStatus, Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{BuildContext, Component, ComponentInfo, RestoreError};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::{Population, Query};
use crate::engine::rng::SearchRng;

/// Parameters of [`WeightedPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WeightedParams {
    /// λ: sharpness of the sigmoid over MAD-normalised scores.
    pub lambda: f64,
    /// Context programs taken from the top of the population.
    pub num_inspirations: u64,
}

impl Default for WeightedParams {
    fn default() -> Self {
        Self {
            lambda: 10.0,
            num_inspirations: 2,
        }
    }
}

const SPECS: [ParamSpec; 2] = [
    ParamSpec {
        key: "lambda",
        doc: "λ: sharpness of sigmoid(λ·(score − median)/MAD); larger = greedier, 0 = uniform \
              up to the children penalty",
        ty: ParamType::Float {
            min: 0.0,
            max: 1000.0,
        },
    },
    ParamSpec {
        key: "num_inspirations",
        doc: "Context programs: the fittest genomes other than the parent",
        ty: ParamType::Int { min: 0, max: 100 },
    },
];

/// The median of a non-empty slice (sorted copy).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Samples parents by sigmoid-of-MAD-normalised score, penalised by children.
#[derive(Clone, Debug, Default)]
pub struct WeightedPolicy {
    params: WeightedParams,
    /// Children admitted per parent id.
    children: BTreeMap<GenomeId, u64>,
    /// The last parent drawn and its share of the total weight.
    last: Option<(GenomeId, f64)>,
    candidates: usize,
}

impl Component for WeightedPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = WeightedParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "weighted",
        type_name: "WeightedPolicy",
        summary: "ShinkaEvolve parents: sigmoid(λ·(score − median)/MAD) × 1/(1+children); top \
                  genomes as inspirations",
        params: &SPECS,
    };

    fn build(params: WeightedParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl WeightedPolicy {
    /// A policy with the given parameters.
    pub fn new(params: WeightedParams) -> Self {
        Self {
            params,
            ..Self::default()
        }
    }

    /// Children counted for `id` so far.
    pub fn children(&self, id: GenomeId) -> u64 {
        self.children.get(&id).copied().unwrap_or(0)
    }

    /// The unnormalised sampling weight of each candidate (valid genomes with
    /// a finite fitness), in the population's ranking order.
    pub fn weights(&self, population: &dyn Population) -> Vec<(Arc<Genome>, f64)> {
        let candidates: Vec<(Arc<Genome>, f64)> = population
            .query(&Query::Active)
            .into_iter()
            .filter_map(|g| {
                let s = g.fitness().filter(|s| s.is_finite())?;
                Some((g, s))
            })
            .collect();
        let scores: Vec<f64> = candidates.iter().map(|(_, s)| *s).collect();
        let med = median(&scores);
        let deviations: Vec<f64> = scores.iter().map(|s| (s - med).abs()).collect();
        let mad = median(&deviations).max(1e-6);
        candidates
            .into_iter()
            .map(|(g, s)| {
                let w = sigmoid(self.params.lambda * (s - med) / mad)
                    / (1.0 + self.children(g.id) as f64);
                (g, w)
            })
            .collect()
    }
}

impl SelectionPolicy for WeightedPolicy {
    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let weighted = self.weights(population);
        self.candidates = weighted.len();
        let total: f64 = weighted.iter().map(|(_, w)| w).sum();
        let parent = if weighted.is_empty() || !total.is_finite() || total <= 0.0 {
            population.best().ok_or(SelectionError::Empty)?
        } else {
            let mut r = rng.random::<f64>() * total;
            let mut chosen = Arc::clone(&weighted[weighted.len() - 1].0);
            for (g, w) in &weighted {
                if r < *w {
                    chosen = Arc::clone(g);
                    break;
                }
                r -= w;
            }
            chosen
        };
        let share = weighted
            .iter()
            .find(|(g, _)| g.id == parent.id)
            .map_or(1.0, |(_, w)| if total > 0.0 { w / total } else { 1.0 });
        self.last = Some((parent.id, share));
        let k = usize::try_from(self.params.num_inspirations).unwrap_or(usize::MAX);
        let inspirations = population
            .query(&Query::TopK(k.saturating_add(1)))
            .into_iter()
            .filter(|g| g.id != parent.id && g.valid)
            .take(k)
            .collect();
        Ok(Selection {
            parents: vec![parent],
            inspirations,
            island: None,
        })
    }

    fn observe(&mut self, genome: &Genome) {
        if let Some(parent) = genome.parent_id {
            *self.children.entry(parent).or_insert(0) += 1;
        }
    }

    fn status(&self) -> PolicyStatus {
        let mut fields = vec![("candidates".to_owned(), self.candidates.to_string())];
        if let Some((id, share)) = self.last {
            fields.push(("last parent".to_owned(), format!("#{id}")));
            fields.push(("its weight".to_owned(), format!("{:.1}%", share * 100.0)));
            fields.push(("its children".to_owned(), self.children(id).to_string()));
        }
        PolicyStatus { fields }
    }

    fn checkpoint(&self) -> serde_json::Value {
        serde_json::json!({
            "children": self
                .children
                .iter()
                .map(|(id, n)| [*id, *n])
                .collect::<Vec<_>>()
        })
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        if state.is_null() {
            return Ok(());
        }
        let list = state
            .get("children")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| RestoreError::field("children", "missing or not a list"))?;
        let mut children = BTreeMap::new();
        for entry in list {
            let pair = entry
                .as_array()
                .filter(|p| p.len() == 2)
                .and_then(|p| Some((p[0].as_u64()?, p[1].as_u64()?)))
                .ok_or_else(|| {
                    RestoreError::field("children", format!("expected [id, count], got {entry}"))
                })?;
            children.insert(pair.0, pair.1);
        }
        self.children = children;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::FITNESS_KEY;
    use crate::engine::population::{InMemoryParams, InMemoryPopulation};
    use crate::engine::rng::seeded;

    fn genome(id: GenomeId, parent: Option<GenomeId>, score: Option<f64>) -> Arc<Genome> {
        let mut g = Genome {
            id,
            parent_id: parent,
            valid: score.is_some(),
            content: format!("x = {id}").into(),
            ..Genome::default()
        };
        if let Some(s) = score {
            g.scores.insert(FITNESS_KEY.into(), s);
        }
        Arc::new(g)
    }

    fn population(scores: &[Option<f64>]) -> InMemoryPopulation {
        let mut p = InMemoryPopulation::new(InMemoryParams::default());
        for (i, s) in scores.iter().enumerate() {
            p.add(genome(i as u64, (i > 0).then_some(0), *s));
        }
        p
    }

    fn counts(policy: &mut WeightedPolicy, pop: &InMemoryPopulation, n: usize) -> Vec<usize> {
        let mut rng = seeded(3);
        let mut c = vec![0; pop.len()];
        for _ in 0..n {
            let s = policy.select(pop, &mut rng).unwrap();
            c[s.parents[0].id as usize] += 1;
        }
        c
    }

    #[test]
    fn weights_follow_the_formula() {
        // scores 0.1 0.2 0.3 0.4 0.5: median 0.3, MAD 0.1
        let pop = population(&[Some(0.1), Some(0.2), Some(0.3), Some(0.4), Some(0.5), None]);
        let mut policy = WeightedPolicy::new(WeightedParams {
            lambda: 1.0,
            num_inspirations: 2,
        });
        policy.observe(&genome(9, Some(4), Some(0.0)));
        policy.observe(&genome(10, Some(4), None));
        let w: BTreeMap<GenomeId, f64> = policy
            .weights(&pop)
            .into_iter()
            .map(|(g, w)| (g.id, w))
            .collect();
        assert_eq!(w.len(), 5, "the invalid genome is never a candidate");
        for (id, z) in [(0, -2.0), (1, -1.0), (2, 0.0), (3, 1.0)] {
            assert!((w[&id] - sigmoid(z)).abs() < 1e-9, "{id}: {}", w[&id]);
        }
        assert!((w[&4] - sigmoid(2.0) / 3.0).abs() < 1e-9);
    }

    #[test]
    fn prefers_high_scores_and_penalises_many_children() {
        // median 0.45, MAD 0.15: with λ = 2 the expected shares are about
        // 49% (0.9), 33% (0.5), 17% (0.4), 2% (0.2)
        let pop = population(&[Some(0.2), Some(0.5), Some(0.9), Some(0.4)]);
        let mut policy = WeightedPolicy::new(WeightedParams {
            lambda: 2.0,
            num_inspirations: 2,
        });
        let c = counts(&mut policy, &pop, 4000);
        assert!(c[2] > c[1] && c[1] > c[3] && c[3] > c[0], "{c:?}");
        assert!((1800..2100).contains(&c[2]), "{c:?}");
        // genome 2 has had 30 children: its weight drops 31-fold
        for i in 0..30 {
            policy.observe(&genome(100 + i, Some(2), Some(0.1)));
        }
        let c2 = counts(&mut policy, &pop, 4000);
        assert!(c2[2] < c[2] / 5, "{c:?} -> {c2:?}");
        assert!(c2[1] > c[1], "{c:?} -> {c2:?}");
    }

    #[test]
    fn inspirations_are_the_top_without_the_parent() {
        let pop = population(&[Some(0.9), Some(0.1), Some(0.8), Some(0.7)]);
        let mut policy = WeightedPolicy::new(WeightedParams::default());
        let mut rng = seeded(1);
        for _ in 0..50 {
            let s = policy.select(&pop, &mut rng).unwrap();
            let parent = s.parents[0].id;
            let ids: Vec<GenomeId> = s.inspirations.iter().map(|g| g.id).collect();
            let want: Vec<GenomeId> = [0, 2, 3]
                .into_iter()
                .filter(|i| *i != parent)
                .take(2)
                .collect();
            assert_eq!(ids, want);
        }
        assert!(
            policy
                .status()
                .fields
                .iter()
                .any(|(k, _)| k == "last parent")
        );
    }

    #[test]
    fn empty_population_is_an_error_and_a_single_genome_is_chosen() {
        let mut policy = WeightedPolicy::new(WeightedParams::default());
        let mut rng = seeded(1);
        let empty = InMemoryPopulation::new(InMemoryParams::default());
        assert_eq!(
            policy.select(&empty, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
        let one = population(&[Some(0.3)]);
        let s = policy.select(&one, &mut rng).unwrap();
        assert_eq!(s.parents[0].id, 0);
        assert!(s.inspirations.is_empty());
    }

    #[test]
    fn children_counts_survive_checkpoint_and_restore() {
        let mut policy = WeightedPolicy::new(WeightedParams::default());
        for i in 0..3 {
            policy.observe(&genome(10 + i, Some(4), None));
        }
        policy.observe(&genome(20, Some(0), Some(1.0)));
        policy.observe(&genome(0, None, Some(1.0)));
        let state = policy.checkpoint();
        let mut fresh = WeightedPolicy::new(WeightedParams::default());
        fresh.restore(&state).unwrap();
        assert_eq!(
            (fresh.children(4), fresh.children(0), fresh.children(7)),
            (3, 1, 0)
        );
        assert!(
            fresh
                .restore(&serde_json::json!({"children": [[1]]}))
                .is_err()
        );
        assert!(fresh.restore(&serde_json::Value::Null).is_ok());
    }
}
