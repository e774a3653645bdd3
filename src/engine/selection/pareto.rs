//! `ParetoPolicy`: parents from the non-dominated front of a multi-objective
//! search (the card's `general.objectives`, with their directions).
//!
//! `nsga2` ranks every valid genome by non-dominated sorting (rank 0 is the
//! front, rank 1 the front once it is removed, ...) and, within a rank, by
//! crowding distance (the spread of its neighbours on each objective, the
//! extremes infinite), keeps the first `survivors` of that order (NSGA-II's
//! population: the population keeps every genome ever made, and a
//! tournament over all of them would mostly pair two long-dominated ones),
//! then draws the parent by a binary tournament among the survivors: two at
//! random, the lower rank wins, then the larger crowding distance.
//! `uniform` draws the parent uniformly from the front
//! (`Query::ParetoFront`). Inspirations are other members of the front, as
//! many as `num_inspirations`, so the prompt shows the trade-offs. Stateless.

use std::sync::Arc;

use rand::RngExt as _;
use rand::seq::SliceRandom as _;
use serde::{Deserialize, Serialize};

use super::{PolicyStatus, Selection, SelectionError, SelectionPolicy};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::{Genome, Objective, dominates};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::{Population, Query};
use crate::engine::rng::SearchRng;

/// How the parent is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParetoMode {
    /// Binary tournament on (rank, crowding distance).
    #[default]
    Nsga2,
    /// Uniformly from the non-dominated front.
    Uniform,
}

/// Parameters of [`ParetoPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParetoParams {
    pub mode: ParetoMode,
    /// `nsga2`: how many genomes, best by rank then crowding distance, the
    /// tournament draws from (NSGA-II's population size).
    pub survivors: u64,
    /// Other members of the front shown as context.
    pub num_inspirations: u64,
}

impl Default for ParetoParams {
    fn default() -> Self {
        Self {
            mode: ParetoMode::Nsga2,
            survivors: 16,
            num_inspirations: 4,
        }
    }
}

/// Parents from the Pareto front over the run's objectives.
#[derive(Clone, Debug)]
pub struct ParetoPolicy {
    params: ParetoParams,
    objectives: Vec<Objective>,
    /// The size of the front at the last selection, for the studio.
    front: usize,
}

impl Component for ParetoPolicy {
    type Slot = dyn SelectionPolicy;
    type Params = ParetoParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "pareto",
        type_name: "ParetoPolicy",
        summary: "Multi-objective: the parent from the non-dominated front over general.objectives (NSGA-II rank and crowding, or uniform)",
        params: &[
            ParamSpec {
                key: "mode",
                doc: "nsga2 = binary tournament on non-domination rank, then crowding distance; \
                      uniform = uniformly from the non-dominated front",
                ty: ParamType::Choice(&["nsga2", "uniform"]),
            },
            ParamSpec {
                key: "survivors",
                doc: "nsga2: the tournament draws from this many genomes, the best by non-domination \
                      rank then crowding distance (NSGA-II's population size)",
                ty: ParamType::Int {
                    min: 2,
                    max: 10_000,
                },
            },
            ParamSpec {
                key: "num_inspirations",
                doc: "Other members of the front shown as context (the trade-offs)",
                ty: ParamType::Int { min: 0, max: 100 },
            },
        ],
    };

    fn build(params: ParetoParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        if ctx.task.objectives.len() < 2 {
            return Err(ParamError {
                key: "mode".to_owned(),
                reason: "the pareto policy needs two or more objectives: set general.objectives \
                         (e.g. {combined_score: max, evaluations: min})"
                    .to_owned(),
            });
        }
        Ok(Self::new(params, ctx.task.objectives.clone()))
    }
}

impl ParetoPolicy {
    pub fn new(params: ParetoParams, objectives: Vec<Objective>) -> Self {
        Self {
            params,
            objectives,
            front: 0,
        }
    }
}

/// Each point's non-domination rank (0 = the front), points higher-is-better.
/// O(n²) comparisons.
pub fn ranks(points: &[Vec<f64>]) -> Vec<usize> {
    let n = points.len();
    let mut dominated_by = vec![0usize; n];
    let mut dominates_list: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in (i + 1)..n {
            if dominates(&points[i], &points[j]) {
                dominates_list[i].push(j);
                dominated_by[j] += 1;
            } else if dominates(&points[j], &points[i]) {
                dominates_list[j].push(i);
                dominated_by[i] += 1;
            }
        }
    }
    let mut rank = vec![0usize; n];
    let mut current: Vec<usize> = (0..n).filter(|&i| dominated_by[i] == 0).collect();
    let mut r = 0;
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            rank[i] = r;
            for &j in &dominates_list[i] {
                dominated_by[j] -= 1;
                if dominated_by[j] == 0 {
                    next.push(j);
                }
            }
        }
        current = next;
        r += 1;
    }
    rank
}

/// Crowding distance of each point among the points of its own rank.
#[expect(
    clippy::needless_range_loop,
    reason = "d indexes a coordinate of several points at once"
)]
pub fn crowding(points: &[Vec<f64>], rank: &[usize]) -> Vec<f64> {
    let n = points.len();
    let mut distance = vec![0.0f64; n];
    let dims = points.first().map_or(0, Vec::len);
    let max_rank = rank.iter().copied().max().unwrap_or(0);
    for r in 0..=max_rank {
        let members: Vec<usize> = (0..n).filter(|&i| rank[i] == r).collect();
        for d in 0..dims {
            let mut sorted = members.clone();
            sorted.sort_by(|&a, &b| points[a][d].total_cmp(&points[b][d]));
            let (Some(&lo), Some(&hi)) = (sorted.first(), sorted.last()) else {
                continue;
            };
            let span = points[hi][d] - points[lo][d];
            distance[lo] = f64::INFINITY;
            distance[hi] = f64::INFINITY;
            if !(span.is_finite() && span > 0.0) {
                continue;
            }
            for w in sorted.windows(3) {
                distance[w[1]] += (points[w[2]][d] - points[w[0]][d]) / span;
            }
        }
    }
    distance
}

/// The indices of the first `n` points by rank, then by larger crowding
/// distance (ties by index, so the order is the population's): NSGA-II's
/// survivors. All of them when there are no more than `n`.
pub fn survivors(rank: &[usize], crowd: &[f64], n: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rank.len()).collect();
    order.sort_by(|&a, &b| {
        rank[a]
            .cmp(&rank[b])
            .then_with(|| crowd[b].total_cmp(&crowd[a]))
            .then_with(|| a.cmp(&b))
    });
    order.truncate(usize::try_from(n).unwrap_or(usize::MAX).max(1));
    order
}

impl SelectionPolicy for ParetoPolicy {
    fn select(
        &mut self,
        population: &dyn Population,
        rng: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        let mut front = population.query(&Query::ParetoFront(self.objectives.clone()));
        self.front = front.len();
        let parent = match self.params.mode {
            ParetoMode::Uniform => {
                if front.is_empty() {
                    return Err(SelectionError::Empty);
                }
                Arc::clone(&front[rng.random_range(0..front.len())])
            }
            ParetoMode::Nsga2 => {
                let valid: Vec<Arc<Genome>> = population
                    .query(&Query::All)
                    .into_iter()
                    .filter(|g| g.valid)
                    .collect();
                if valid.is_empty() {
                    return Err(SelectionError::Empty);
                }
                let points: Vec<Vec<f64>> = valid
                    .iter()
                    .map(|g| {
                        self.objectives
                            .iter()
                            .map(|o| o.signed(g).unwrap_or(f64::NEG_INFINITY))
                            .collect()
                    })
                    .collect();
                let rank = ranks(&points);
                let crowd = crowding(&points, &rank);
                let survivors = survivors(&rank, &crowd, self.params.survivors);
                let a = survivors[rng.random_range(0..survivors.len())];
                let b = survivors[rng.random_range(0..survivors.len())];
                let better = |x: usize, y: usize| {
                    rank[x] < rank[y] || (rank[x] == rank[y] && crowd[x] > crowd[y])
                };
                Arc::clone(&valid[if better(b, a) { b } else { a }])
            }
        };
        front.retain(|g| g.id != parent.id);
        front.shuffle(rng);
        front.truncate(usize::try_from(self.params.num_inspirations).unwrap_or(usize::MAX));
        Ok(Selection {
            parents: vec![parent],
            inspirations: front,
            island: None,
        })
    }

    fn status(&self) -> PolicyStatus {
        PolicyStatus {
            fields: vec![
                (
                    "objectives".to_owned(),
                    self.objectives
                        .iter()
                        .map(Objective::label)
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                ("front".to_owned(), self.front.to_string()),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::Direction;
    use crate::engine::population::{InMemoryParams, InMemoryPopulation};
    use crate::engine::rng::seeded;

    fn genome(id: u64, score: f64, cost: f64) -> Arc<Genome> {
        let mut g = Genome {
            id,
            valid: true,
            ..Genome::default()
        };
        g.scores.insert("combined_score".into(), score);
        g.scores.insert("cost".into(), cost);
        Arc::new(g)
    }

    fn objectives() -> Vec<Objective> {
        vec![
            Objective {
                metric: "combined_score".into(),
                direction: Direction::Max,
                reference: None,
            },
            Objective {
                metric: "cost".into(),
                direction: Direction::Min,
                reference: None,
            },
        ]
    }

    #[test]
    fn ranks_and_crowding_follow_nsga2() {
        // (score, -cost): a front of three, then two behind it, then one.
        let points = vec![
            vec![1.0, -10.0],
            vec![0.5, -5.0],
            vec![0.1, -1.0],
            vec![0.4, -6.0],
            vec![0.05, -2.0],
            vec![0.0, -20.0],
        ];
        assert_eq!(ranks(&points), vec![0, 0, 0, 1, 1, 2]);
        let c = crowding(&points, &ranks(&points));
        assert!(c[0].is_infinite() && c[2].is_infinite());
        assert!(c[1].is_finite() && c[1] > 0.0);
    }

    #[test]
    fn the_tournament_draws_from_the_survivors_only() {
        // A front of three, then 60 genomes each dominated by all of it.
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        for g in [
            genome(0, 1.0, 10.0),
            genome(1, 0.5, 5.0),
            genome(2, 0.1, 1.0),
        ] {
            pop.add(g);
        }
        for id in 3..63 {
            pop.add(genome(id, 0.05 - id as f64 * 1e-4, 30.0 + id as f64));
        }
        let mut policy = ParetoPolicy::new(
            ParetoParams {
                survivors: 4,
                ..ParetoParams::default()
            },
            objectives(),
        );
        let mut rng = seeded(7);
        let mut on_front = 0;
        for _ in 0..400 {
            let s = policy.select(&pop, &mut rng).unwrap();
            let id = s.parent().unwrap().id;
            // The survivors: the front, then the best of rank 1.
            assert!(id <= 3, "#{id} is not among the four survivors");
            on_front += u32::from(id <= 2);
        }
        // Only a pairing of #3 with itself leaves the front out: 1/16.
        assert!(on_front > 340, "{on_front}");
        let points = vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![0.5, 0.5],
            vec![0.2, 0.2],
        ];
        let rank = ranks(&points);
        let crowd = crowding(&points, &rank);
        assert_eq!(survivors(&rank, &crowd, 3), vec![0, 1, 2]);
        assert_eq!(survivors(&rank, &crowd, 10), vec![0, 1, 2, 3]);
    }

    #[test]
    fn parents_come_from_the_front_and_inspirations_show_it() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        for g in [
            genome(0, 1.0, 10.0),
            genome(1, 0.5, 5.0),
            genome(2, 0.1, 1.0),
            genome(3, 0.4, 6.0),
            genome(4, 0.0, 20.0),
        ] {
            pop.add(g);
        }
        for mode in [ParetoMode::Uniform, ParetoMode::Nsga2] {
            let mut policy = ParetoPolicy::new(
                ParetoParams {
                    mode,
                    num_inspirations: 4,
                    ..ParetoParams::default()
                },
                objectives(),
            );
            let mut rng = seeded(3);
            let mut parents = std::collections::BTreeMap::new();
            for _ in 0..300 {
                let s = policy.select(&pop, &mut rng).unwrap();
                *parents.entry(s.parent().unwrap().id).or_insert(0) += 1;
                assert!(
                    s.inspirations
                        .iter()
                        .all(|g| g.id <= 2 && g.id != s.parent().unwrap().id)
                );
            }
            if mode == ParetoMode::Uniform {
                assert_eq!(parents.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2]);
            } else {
                // The tournament favours the front; #4 (dominated by all) loses every draw but a self-pairing.
                let front: u32 = [0, 1, 2]
                    .iter()
                    .map(|i| parents.get(i).copied().unwrap_or(0))
                    .sum();
                assert!(front > 200, "{parents:?}");
            }
            assert_eq!(policy.status().fields[1].1, "3");
        }
    }
}
