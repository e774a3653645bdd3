//! `BeamPolicy`: draws one parent per step from the active beam of a
//! [`BeamPopulation`](crate::engine::population::BeamPopulation)
//! by one of four strategies — `best`, `stochastic` (softmax over the beam
//! score), `round_robin` (cycle the beam in score order) or
//! `diversity_weighted` (softmax over `(1−w)·score + w·mean 3-gram distance
//! to the last 10 expanded parents`). Inspirations are the global top
//! programs, excluding the parent (deterministic).

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use super::{PolicyStatus, Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{
    BuildContext, Component, ComponentInfo, Feature, Need, RestoreError, Slot,
};
use crate::engine::genome::{Genome, GenomeId, OrdF64};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::{Population, Query, Structure, beam_score};
use crate::engine::rng::SearchRng;
use crate::engine::text::ngrams::NgramSet;

/// How many recently expanded parents are remembered.
pub const EXPANDED_MEMORY: usize = 50;
/// How many of the most recent expansions the diversity term looks back on.
pub const DIVERSITY_LOOKBACK: usize = 10;

/// How the parent is drawn from the beam.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BeamStrategy {
    /// The highest-scoring member.
    Best,
    /// Softmax over the beam score at the temperature.
    Stochastic,
    /// Cycle through the beam in score-descending order.
    RoundRobin,
    /// Softmax over score blended with distance from recently expanded parents.
    #[default]
    DiversityWeighted,
}

impl BeamStrategy {
    /// The card name of the strategy.
    pub fn name(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Stochastic => "stochastic",
            Self::RoundRobin => "round_robin",
            Self::DiversityWeighted => "diversity_weighted",
        }
    }
}

/// Parameters of [`BeamPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BeamSelectionParams {
    /// Parent draw strategy.
    pub beam_selection_strategy: BeamStrategy,
    /// Softmax temperature for `stochastic` / `diversity_weighted` (≤ 0 = argmax).
    pub beam_temperature: f64,
    /// Global top programs supplied as context.
    pub num_inspirations: u64,
}

impl Default for BeamSelectionParams {
    fn default() -> Self {
        Self {
            beam_selection_strategy: BeamStrategy::DiversityWeighted,
            beam_temperature: 1.0,
            num_inspirations: 4,
        }
    }
}

/// Picks one parent per step from a beam population's active beam.
#[derive(Clone, Debug)]
pub struct BeamPolicy {
    strategy: BeamStrategy,
    temperature: f64,
    num_inspirations: usize,
    rr_index: usize,
    /// The last [`EXPANDED_MEMORY`] expanded parents, oldest first.
    expanded: VecDeque<GenomeId>,
    total_expansions: u64,
    /// 3-gram sets of beam members and recently expanded parents.
    grams: HashMap<GenomeId, Arc<NgramSet>>,
}

impl Default for BeamPolicy {
    fn default() -> Self {
        Self::new(BeamSelectionParams::default())
    }
}

/// Index of the first maximum (NaN ranks lowest); 0 for an empty slice.
fn argmax(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if OrdF64(*v) > OrdF64(values[best]) {
            best = i;
        }
    }
    best
}

/// Roulette draw from `softmax((v − max) / t)`; `t ≤ 0` (or nothing to
/// weigh) → the argmax. Non-finite values get zero weight.
fn softmax_pick(values: &[f64], temperature: f64, rng: &mut SearchRng) -> usize {
    if values.len() <= 1 || temperature.is_nan() || temperature <= 0.0 {
        return argmax(values);
    }
    let max = values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return argmax(values);
    }
    let weights: Vec<f64> = values
        .iter()
        .map(|v| {
            let w = ((v - max) / temperature).exp();
            if w.is_finite() { w } else { 0.0 }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return argmax(values);
    }
    let r = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut last_positive = argmax(values);
    for (i, w) in weights.iter().enumerate() {
        if *w > 0.0 {
            acc += w;
            last_positive = i;
            if r < acc {
                return i;
            }
        }
    }
    last_positive
}

impl Component for BeamPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = BeamSelectionParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "beam",
        type_name: "BeamPolicy",
        summary: "Pick the parent from the beam: best, stochastic, round_robin or diversity_weighted",
        params: &[
            ParamSpec {
                key: "beam_selection_strategy",
                doc: "Parent draw: best = top member, stochastic = softmax over score, \
                      round_robin = cycle in score order, diversity_weighted = softmax over \
                      (1-w)*score + w*distance to recently expanded parents",
                ty: ParamType::Choice(&["best", "stochastic", "round_robin", "diversity_weighted"]),
            },
            ParamSpec {
                key: "beam_temperature",
                doc: "Softmax temperature for stochastic / diversity_weighted (0 = always the top)",
                ty: ParamType::Float {
                    min: 0.0,
                    max: f64::MAX,
                },
            },
            ParamSpec {
                key: "num_inspirations",
                doc: "Global top programs (excluding the parent) shown as context",
                ty: ParamType::Int {
                    min: 0,
                    max: i64::MAX,
                },
            },
        ],
    };
    const NEEDS: &'static [Need] = &[Need {
        slot: Slot::Population,
        feature: Feature::Beam,
    }];

    fn build(params: BeamSelectionParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl BeamPolicy {
    /// A policy with the given parameters.
    pub fn new(params: BeamSelectionParams) -> Self {
        Self {
            strategy: params.beam_selection_strategy,
            temperature: params.beam_temperature,
            num_inspirations: usize::try_from(params.num_inspirations).unwrap_or(usize::MAX),
            rr_index: 0,
            expanded: VecDeque::new(),
            total_expansions: 0,
            grams: HashMap::new(),
        }
    }

    /// Recently expanded parents, oldest first (at most [`EXPANDED_MEMORY`]).
    pub fn expanded(&self) -> impl Iterator<Item = GenomeId> + '_ {
        self.expanded.iter().copied()
    }

    /// Number of selections made so far.
    pub fn total_expansions(&self) -> u64 {
        self.total_expansions
    }

    fn grams_of(&mut self, genome: &Genome) -> Arc<NgramSet> {
        self.grams
            .entry(genome.id)
            .or_insert_with(|| Arc::new(NgramSet::new(&genome.content.text())))
            .clone()
    }

    /// `diversity_weighted`: softmax over `(1−w)·score + w·mean distance to
    /// the last DIVERSITY_LOOKBACK expanded parents`; stochastic when none.
    fn pick_diverse(
        &mut self,
        population: &dyn Population,
        members: &[(Arc<Genome>, f64)],
        weight: f64,
        rng: &mut SearchRng,
    ) -> usize {
        let recent: Vec<Arc<Genome>> = self
            .expanded
            .iter()
            .rev()
            .take(DIVERSITY_LOOKBACK)
            .filter_map(|id| population.get(*id))
            .collect();
        let scores: Vec<f64> = members.iter().map(|(_, s)| *s).collect();
        if recent.is_empty() {
            return softmax_pick(&scores, self.temperature, rng);
        }
        let recent_grams: Vec<Arc<NgramSet>> = recent.iter().map(|g| self.grams_of(g)).collect();
        let combined: Vec<f64> = members
            .iter()
            .map(|(g, score)| {
                let own = self.grams_of(g);
                let mean = recent_grams.iter().map(|r| own.distance(r)).sum::<f64>()
                    / recent_grams.len() as f64;
                (1.0 - weight) * score + weight * mean
            })
            .collect();
        softmax_pick(&combined, self.temperature, rng)
    }

    /// Drop cached 3-gram sets that are neither beam members nor in the
    /// diversity lookback.
    fn trim_cache(&mut self, members: &[(Arc<Genome>, f64)]) {
        let keep: HashSet<GenomeId> = members
            .iter()
            .map(|(g, _)| g.id)
            .chain(self.expanded.iter().rev().take(DIVERSITY_LOOKBACK).copied())
            .collect();
        self.grams.retain(|id, _| keep.contains(id));
    }
}

impl SelectionPolicy for BeamPolicy {
    fn checkpoint(&self) -> serde_json::Value {
        serde_json::json!({
            "rr_index": self.rr_index,
            "expanded": self.expanded.iter().collect::<Vec<_>>(),
            "total_expansions": self.total_expansions,
        })
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        if state.is_null() {
            return Ok(());
        }
        self.rr_index = state
            .get("rr_index")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| RestoreError::field("rr_index", "missing"))?
            as usize;
        self.total_expansions = state
            .get("total_expansions")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| RestoreError::field("total_expansions", "missing"))?;
        self.expanded = state
            .get("expanded")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| RestoreError::field("expanded", "missing"))?
            .iter()
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| RestoreError::field("expanded", format!("bad id {v}")))
            })
            .collect::<Result<_, _>>()?;
        self.grams.clear();
        Ok(())
    }

    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let best = population.best().ok_or(SelectionError::Empty)?;
        let Structure::Beam(view) = population.structure() else {
            return Err(SelectionError::Incompatible(
                "beam selection needs a beam population".to_owned(),
            ));
        };
        let score = |g: &Genome| {
            beam_score(
                g.fitness_or_min(),
                population.depth(g.id).unwrap_or(0),
                view.depth_penalty,
            )
        };
        let mut members: Vec<(Arc<Genome>, f64)> = view
            .members
            .iter()
            .filter_map(|id| population.get(*id))
            .filter(|g| g.valid)
            .map(|g| {
                let s = score(&g);
                (g, s)
            })
            .collect();
        if members.is_empty() {
            // an empty beam over a non-empty population: the global best
            let s = score(&best);
            members.push((best, s));
        }
        members.sort_by_key(|(g, s)| (Reverse(OrdF64(*s)), g.id));

        let scores: Vec<f64> = members.iter().map(|(_, s)| *s).collect();
        let index = match self.strategy {
            BeamStrategy::Best => 0,
            BeamStrategy::RoundRobin => {
                let i = self.rr_index % members.len();
                self.rr_index = self.rr_index.wrapping_add(1);
                i
            }
            BeamStrategy::Stochastic => softmax_pick(&scores, self.temperature, rng),
            BeamStrategy::DiversityWeighted => {
                self.pick_diverse(population, &members, view.diversity_weight, rng)
            }
        };
        // `members` is non-empty here, and every pick is an index into it
        let parent = members[index.min(members.len() - 1)].0.clone();

        self.expanded.push_back(parent.id);
        while self.expanded.len() > EXPANDED_MEMORY {
            self.expanded.pop_front();
        }
        self.total_expansions = self.total_expansions.saturating_add(1);
        if self.strategy == BeamStrategy::DiversityWeighted {
            self.trim_cache(&members);
        }

        let inspirations = if self.num_inspirations == 0 {
            Vec::new()
        } else {
            population
                .query(&Query::TopK(self.num_inspirations.saturating_add(1)))
                .into_iter()
                .filter(|g| g.id != parent.id)
                .take(self.num_inspirations)
                .collect()
        };
        Ok(Selection {
            parents: vec![parent],
            inspirations,
            island: None,
        })
    }

    fn status(&self) -> PolicyStatus {
        PolicyStatus {
            fields: vec![
                ("strategy".to_owned(), self.strategy.name().to_owned()),
                ("expansions".to_owned(), self.total_expansions.to_string()),
                (
                    "last expanded".to_owned(),
                    self.expanded
                        .back()
                        .map_or_else(|| "none".to_owned(), |id| format!("#{id}")),
                ),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::FITNESS_KEY;
    use crate::engine::params::ParamMap;
    use crate::engine::params::ParamValue;
    use crate::engine::population::{
        BeamParams, BeamPopulation, InMemoryParams, InMemoryPopulation,
    };
    use crate::engine::rng::seeded;

    fn g(id: GenomeId, score: f64, content: &str) -> Arc<Genome> {
        let mut genome = Genome {
            id,
            valid: true,
            content: content.to_owned().into(),
            ..Genome::default()
        };
        genome.scores.insert(FITNESS_KEY.into(), score);
        Arc::new(genome)
    }

    #[test]
    fn strategy_decodes_from_its_card_name() {
        for name in ["best", "stochastic", "round_robin", "diversity_weighted"] {
            let mut m = ParamMap::default();
            m.set("beam_selection_strategy", ParamValue::Str(name.into()));
            assert!(m.validate(BeamPolicy::INFO.params).is_empty());
            let p: BeamSelectionParams = m.decode().unwrap();
            assert_eq!(p.beam_selection_strategy.name(), name);
        }
        let mut bad = ParamMap::default();
        bad.set("beam_selection_strategy", ParamValue::Str("greedy".into()));
        assert_eq!(bad.validate(BeamPolicy::INFO.params).len(), 1);
        assert!(bad.decode::<BeamSelectionParams>().is_err());
    }

    #[test]
    fn softmax_edge_cases() {
        let mut rng = seeded(9);
        assert_eq!(softmax_pick(&[0.1, 0.7, 0.3], 0.0, &mut rng), 1);
        assert_eq!(softmax_pick(&[0.1, 0.7, 0.3], -1.0, &mut rng), 1);
        assert_eq!(
            softmax_pick(&[f64::NEG_INFINITY, f64::NEG_INFINITY], 1.0, &mut rng),
            0
        );
        // a -inf member is never drawn
        for _ in 0..200 {
            assert_eq!(softmax_pick(&[f64::NEG_INFINITY, 0.2], 1.0, &mut rng), 1);
        }
        assert_eq!(argmax(&[f64::NAN, 0.0]), 1);
        // ties: the first maximum
        assert_eq!(argmax(&[0.5, 0.5]), 0);
    }

    #[test]
    fn needs_a_beam_population_and_a_valid_genome() {
        let mut policy = BeamPolicy::default();
        let mut rng = seeded(0);
        let mut flat = InMemoryPopulation::new(InMemoryParams::default());
        assert_eq!(
            policy.select(&flat, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
        flat.add(g(0, 0.5, "x"));
        assert!(matches!(
            policy.select(&flat, &mut rng),
            Err(SelectionError::Incompatible(msg)) if msg == "beam selection needs a beam population"
        ));
        let beam = BeamPopulation::new(BeamParams::default());
        assert_eq!(
            policy.select(&beam, &mut rng).unwrap_err(),
            SelectionError::Empty
        );
    }

    #[test]
    fn status_and_expansion_memory() {
        let mut pop = BeamPopulation::new(BeamParams::default());
        pop.add(g(0, 0.5, "abcdef"));
        let mut policy = BeamPolicy::new(BeamSelectionParams {
            beam_selection_strategy: BeamStrategy::Best,
            beam_temperature: 1.0,
            num_inspirations: 4,
        });
        let mut rng = seeded(0);
        for _ in 0..(EXPANDED_MEMORY + 5) {
            let s = policy.select(&pop, &mut rng).unwrap();
            assert_eq!(s.parent().unwrap().id, 0);
            assert!(s.inspirations.is_empty());
        }
        assert_eq!(policy.expanded().count(), EXPANDED_MEMORY);
        assert_eq!(policy.total_expansions(), (EXPANDED_MEMORY + 5) as u64);
        assert_eq!(
            policy.status().fields,
            vec![
                ("strategy".to_owned(), "best".to_owned()),
                ("expansions".to_owned(), "55".to_owned()),
                ("last expanded".to_owned(), "#0".to_owned()),
            ]
        );
    }
}
