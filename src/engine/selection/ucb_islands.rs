//! `UcbIslandsPolicy`: AdaEvolve's adaptive island routing.
//!
//! * Island choice is UCB1: while any island is unvisited, a random
//!   unvisited island; afterwards `argmax R_k / V_k + C·sqrt(ln(N+1) / n_k)`
//!   (ties: the lowest index), where `n_k` counts selections of island `k`,
//!   `N` all selections, and `R_k`, `V_k` are the decayed reward sum and
//!   decayed visit count (`R ← ρR + r`, `V ← ρV + 1` when a child of the
//!   island is observed). The reward `r` is the child's improvement over its
//!   island's best, normalised by the **global** best:
//!   `min(1, (f − best_k) / (|f*| + ε))` (0 when not an improvement, 1 for an
//!   island's first score), so islands are comparable.
//! * Each island keeps an improvement signal `G ← ρG + (1−ρ)δ²`, updated on
//!   improvement with `δ = min(1, (f − best_k)/(|best_k| + ε))`. The search
//!   intensity is `I = I_min + (I_max − I_min)/(1 + sqrt(G + ε))`: with
//!   probability `I` the parent is a random MAP-Elites cell elite of the
//!   island (explore), otherwise the island's best (exploit). An island
//!   whose children keep improving therefore exploits more.
//! * Inspirations: `local_context_ratio` of them are the island's top
//!   programs, the rest are drawn from the global elite archive.
//!
//! A card must pair it with an island population (UCB over a single island
//! routes nothing); used directly on a population without islands, the whole
//! population is one island.

use std::collections::HashSet;

use rand::RngExt as _;
use rand::seq::IndexedRandom as _;
use serde::{Deserialize, Serialize};

use super::explore_exploit::{fetch, fill, pools};
use super::{PolicyStatus, Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{
    BuildContext, Component, ComponentInfo, Feature, Need, RestoreError, Slot,
};
use crate::engine::genome::{Genome, GenomeId, OrdF64};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::Population;
use crate::engine::rng::SearchRng;

/// Largest island count the policy tracks (the island population's limit).
pub const MAX_ISLANDS: usize = 1000;

/// Small constant guarding divisions and square roots.
pub const EPSILON: f64 = 1e-8;

/// Parameters of [`UcbIslandsPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UcbIslandsParams {
    /// UCB exploration constant C.
    pub exploration_constant: f64,
    /// Decay ρ of rewards, visits and the improvement signal.
    pub decay: f64,
    /// Intensity when an island improves strongly (exploit).
    pub intensity_min: f64,
    /// Intensity when an island stagnates (explore).
    pub intensity_max: f64,
    /// Inspirations per step.
    pub num_inspirations: u64,
    /// Share of inspirations taken from the island (the rest: the archive).
    pub local_context_ratio: f64,
}

impl Default for UcbIslandsParams {
    fn default() -> Self {
        Self {
            exploration_constant: 1.41,
            decay: 0.9,
            intensity_min: 0.15,
            intensity_max: 0.5,
            num_inspirations: 4,
            local_context_ratio: 0.6,
        }
    }
}

/// The resumable state (per island, indexed by island).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct UcbState {
    visits: Vec<u64>,
    decayed_rewards: Vec<f64>,
    decayed_visits: Vec<f64>,
    signal: Vec<f64>,
    island_best: Vec<Option<f64>>,
    global_best: Option<f64>,
    total: u64,
    last_island: Option<usize>,
    last_explore: Option<bool>,
}

impl UcbState {
    fn ensure(&mut self, n: usize) {
        if self.visits.len() < n {
            self.visits.resize(n, 0);
            self.decayed_rewards.resize(n, 0.0);
            self.decayed_visits.resize(n, 0.0);
            self.signal.resize(n, 0.0);
            self.island_best.resize(n, None);
        }
    }
}

/// AdaEvolve: UCB over islands with decayed, globally normalised rewards and
/// an explore↔exploit intensity driven by recent improvement.
#[derive(Clone, Debug)]
pub struct UcbIslandsPolicy {
    c: f64,
    decay: f64,
    intensity_min: f64,
    intensity_max: f64,
    num_inspirations: usize,
    local_ratio: f64,
    state: UcbState,
}

impl Default for UcbIslandsPolicy {
    fn default() -> Self {
        Self::new(UcbIslandsParams::default())
    }
}

fn finite_or(v: f64, fallback: f64) -> f64 {
    if v.is_finite() { v } else { fallback }
}

impl Component for UcbIslandsPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = UcbIslandsParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "ucb_islands",
        type_name: "UcbIslandsPolicy",
        summary: "AdaEvolve: UCB over islands, intensity-driven explore/exploit inside the island",
        params: &[
            ParamSpec {
                key: "exploration_constant",
                doc: "UCB exploration constant C in avg_reward + C*sqrt(ln(N+1)/visits)",
                ty: ParamType::Float {
                    min: 0.0,
                    max: 100.0,
                },
            },
            ParamSpec {
                key: "decay",
                doc: "Decay of island rewards, visits and improvement signal (closer to 1 = \
                      longer memory)",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "intensity_min",
                doc: "Exploration probability of an island that keeps improving",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "intensity_max",
                doc: "Exploration probability of a stagnating island",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "num_inspirations",
                doc: "Inspirations per step",
                ty: ParamType::Int { min: 0, max: 100 },
            },
            ParamSpec {
                key: "local_context_ratio",
                doc: "Share of inspirations taken from the island's top programs (the rest come \
                      from the global elite archive)",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
        ],
    };
    const NEEDS: &'static [Need] = &[Need {
        slot: Slot::Population,
        feature: Feature::Islands,
    }];

    fn build(params: UcbIslandsParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl UcbIslandsPolicy {
    /// A policy with the given parameters (non-finite values fall back to
    /// the defaults; probabilities are clamped to 0..=1).
    pub fn new(params: UcbIslandsParams) -> Self {
        let d = UcbIslandsParams::default();
        Self {
            c: finite_or(params.exploration_constant, d.exploration_constant).max(0.0),
            decay: finite_or(params.decay, d.decay).clamp(0.0, 1.0),
            intensity_min: finite_or(params.intensity_min, d.intensity_min).clamp(0.0, 1.0),
            intensity_max: finite_or(params.intensity_max, d.intensity_max).clamp(0.0, 1.0),
            num_inspirations: usize::try_from(params.num_inspirations).unwrap_or(usize::MAX),
            local_ratio: finite_or(params.local_context_ratio, d.local_context_ratio)
                .clamp(0.0, 1.0),
            state: UcbState::default(),
        }
    }

    /// The exploration probability of island `k` now.
    pub fn intensity(&self, k: usize) -> f64 {
        let g = self.state.signal.get(k).copied().unwrap_or(0.0);
        self.intensity_min
            + (self.intensity_max - self.intensity_min) / (1.0 + (g + EPSILON).sqrt())
    }

    /// Selections of each island so far.
    pub fn visits(&self) -> &[u64] {
        &self.state.visits
    }

    /// The decayed average reward of island `k`.
    pub fn average_reward(&self, k: usize) -> f64 {
        let v = self.state.decayed_visits.get(k).copied().unwrap_or(0.0);
        if v <= 0.0 {
            0.0
        } else {
            self.state.decayed_rewards.get(k).copied().unwrap_or(0.0) / v
        }
    }

    /// The island chosen by the last `select`.
    pub fn last_island(&self) -> Option<usize> {
        self.state.last_island
    }

    /// Whether the last `select` explored (random cell elite) rather than
    /// exploited (the island's best).
    pub fn last_explored(&self) -> Option<bool> {
        self.state.last_explore
    }

    /// UCB island choice among `n` islands.
    fn choose_island(&self, n: usize, rng: &mut SearchRng) -> usize {
        let unvisited: Vec<usize> = (0..n).filter(|k| self.state.visits[*k] == 0).collect();
        if let Some(k) = unvisited.choose(rng) {
            return *k;
        }
        let ln = ((self.state.total + 1) as f64).ln();
        let mut best = 0;
        let mut best_value = OrdF64(f64::NEG_INFINITY);
        for k in 0..n {
            let bonus = self.c * (ln / self.state.visits[k] as f64).sqrt();
            let value = OrdF64(self.average_reward(k) + bonus);
            if value > best_value {
                best = k;
                best_value = value;
            }
        }
        best
    }
}

impl SelectionPolicy for UcbIslandsPolicy {
    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        if population.store().valid_len() == 0 {
            return Err(SelectionError::Empty);
        }
        let pools = pools(population, 0.1);
        let n = pools.islands.len().max(1);
        self.state.ensure(n);
        let k = self.choose_island(n, rng);
        self.state.visits[k] += 1;
        self.state.total += 1;
        self.state.last_island = Some(k);
        let island = pools.islands.get(k).cloned().unwrap_or_default();
        let explore = rng.random::<f64>() < self.intensity(k);
        self.state.last_explore = Some(explore);
        let pick = if explore {
            let from = if island.elites.is_empty() {
                &island.members
            } else {
                &island.elites
            };
            from.choose(rng).copied()
        } else {
            island.members.first().copied()
        };
        let parent = pick
            .and_then(|id| population.get(id))
            .filter(|g| g.valid)
            .or_else(|| population.best())
            .ok_or(SelectionError::Empty)?;
        let want = self.num_inspirations;
        let local = ((want as f64) * self.local_ratio).ceil() as usize;
        let mut ids = Vec::new();
        let mut taken: HashSet<GenomeId> = HashSet::from([parent.id]);
        fill(&mut ids, &mut taken, &island.members, local.min(want), None);
        fill(&mut ids, &mut taken, &pools.archive, want, Some(rng));
        fill(&mut ids, &mut taken, &island.members, want, None);
        Ok(Selection {
            inspirations: fetch(population, &ids),
            parents: vec![parent],
            island: pools.has_islands.then(|| u32::try_from(k).unwrap_or(0)),
        })
    }

    fn observe(&mut self, genome: &Genome) {
        let f = genome.fitness().filter(|f| f.is_finite());
        if genome.parent_id.is_none() {
            // the root seeds every island
            if let Some(f) = f {
                for b in &mut self.state.island_best {
                    *b = Some(b.map_or(f, |b| b.max(f)));
                }
                self.state.global_best = Some(self.state.global_best.map_or(f, |g| g.max(f)));
            }
            return;
        }
        let raw = genome
            .metadata
            .island
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(0);
        // island ids wrap around the island count, as in the population;
        // before any select, never grow past the largest island count
        let k = match self.state.visits.len() {
            0 => raw.min(MAX_ISLANDS - 1),
            n => raw % n,
        };
        self.state.ensure(k + 1);
        if self.state.island_best.iter().all(Option::is_none)
            && let Some(g) = self.state.global_best
        {
            // islands learned after the root was observed start at the root
            for b in &mut self.state.island_best {
                *b = Some(g);
            }
        }
        let rho = self.decay;
        let mut reward = 0.0;
        if let Some(f) = f {
            let prev = self.state.island_best[k];
            let improved = prev.is_none_or(|b| f > b);
            if improved {
                let delta = match prev {
                    None => 1.0,
                    Some(b) => ((f - b) / (b.abs() + EPSILON)).min(1.0),
                };
                reward = match (prev, self.state.global_best) {
                    (Some(b), Some(g)) => ((f - b) / (g.abs() + EPSILON)).min(1.0),
                    _ => 1.0,
                };
                self.state.signal[k] = rho * self.state.signal[k] + (1.0 - rho) * delta * delta;
                self.state.island_best[k] = Some(f);
            }
            self.state.global_best = Some(self.state.global_best.map_or(f, |g| g.max(f)));
        }
        self.state.decayed_rewards[k] = rho * self.state.decayed_rewards[k] + reward;
        self.state.decayed_visits[k] = rho * self.state.decayed_visits[k] + 1.0;
    }

    fn status(&self) -> PolicyStatus {
        let islands: Vec<String> = (0..self.state.visits.len())
            .map(|k| {
                format!(
                    "#{k}: {} visits, reward {:.3}, intensity {:.2}",
                    self.state.visits[k],
                    self.average_reward(k),
                    self.intensity(k)
                )
            })
            .collect();
        PolicyStatus {
            fields: vec![
                (
                    "last island".to_owned(),
                    self.state
                        .last_island
                        .map_or_else(|| "none".to_owned(), |k| k.to_string()),
                ),
                (
                    "last draw".to_owned(),
                    match self.state.last_explore {
                        None => "none",
                        Some(true) => "explore",
                        Some(false) => "exploit",
                    }
                    .to_owned(),
                ),
                ("islands".to_owned(), islands.join("; ")),
            ],
        }
    }

    fn checkpoint(&self) -> serde_json::Value {
        serde_json::to_value(&self.state).unwrap_or(serde_json::Value::Null)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        if state.is_null() {
            return Ok(());
        }
        let s: UcbState = serde_json::from_value(state.clone())?;
        let n = s.visits.len();
        if [
            s.decayed_rewards.len(),
            s.decayed_visits.len(),
            s.signal.len(),
            s.island_best.len(),
        ]
        .iter()
        .any(|l| *l != n)
        {
            return Err(RestoreError::field(
                "visits",
                "per-island arrays differ in length",
            ));
        }
        self.state = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intensity_falls_with_improvement() {
        let mut p = UcbIslandsPolicy::default();
        p.state.ensure(2);
        assert!((p.intensity(0) - (0.15 + 0.35 / (1.0 + EPSILON.sqrt()))).abs() < 1e-9);
        p.state.island_best = vec![Some(1.0), Some(1.0)];
        p.state.global_best = Some(1.0);
        let child = Genome {
            id: 1,
            parent_id: Some(0),
            valid: true,
            scores: [("combined_score".to_owned(), 2.0)].into(),
            metadata: crate::engine::genome::GenomeMeta {
                island: Some(1),
                ..Default::default()
            },
            ..Genome::default()
        };
        p.observe(&child);
        // δ = min(1, (2-1)/1) = 1 → G = 0.1
        assert!((p.state.signal[1] - 0.1).abs() < 1e-6);
        assert!(p.intensity(1) < p.intensity(0));
        assert!((p.average_reward(1) - 1.0).abs() < 1e-6);
        assert_eq!(p.average_reward(0), 0.0);
        assert!(
            p.restore(&serde_json::json!({"visits": [1], "decayed_rewards": [],
            "decayed_visits": [], "signal": [], "island_best": [], "global_best": null,
            "total": 0, "last_island": null, "last_explore": null}))
                .is_err()
        );
    }
}
