//! Slot 1 — Population: the candidate store. A passive container that holds
//! genomes and answers `add` / `query` / `best`; all policy lives in the
//! SelectionPolicy.

mod store;
// implementations (one file each) are declared below the trait
mod beam;
mod in_memory;
mod islands;

use std::sync::Arc;

pub use beam::{BeamParams, BeamPopulation, BeamStats};
pub use in_memory::{InMemoryParams, InMemoryPopulation};
pub use islands::{IslandsParams, IslandsPopulation};
pub use store::GenomeStore;

use crate::engine::component::{Fills, Slot, SlotTrait};
use crate::engine::genome::{FITNESS_KEY, Genome, GenomeId, Objective, dominates};

/// What a caller asks a population for. Every answer holds valid genomes
/// best first, except [`Query::All`].
#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    /// The `k` fittest valid genomes (ties: earliest admitted first).
    TopK(usize),
    /// Every genome, valid or not, in admission order.
    All,
    /// The members of the population's active structure (the beam for a beam
    /// population, the islands' members for an island population); for flat
    /// populations, every valid genome.
    Active,
    /// The members of island `i` (for populations without islands: the
    /// genomes whose `metadata.island` is `i`).
    Island(u32),
    /// The elite of one MAP-Elites cell of island `island`: at most one
    /// genome; nothing for populations without a grid.
    Cell { island: u32, coords: Vec<usize> },
    /// The Pareto frontier over `metrics`, higher being better: the valid
    /// genomes no other valid genome matches or beats on every metric while
    /// beating it on one. A missing or non-finite metric counts as the worst
    /// value. With no metrics, over `combined_score`.
    Frontier(Vec<String>),
    /// The Pareto frontier over objectives with their directions (a `min`
    /// objective's lower values are better); a missing or non-finite value
    /// counts as the worst.
    ParetoFront(Vec<Objective>),
}

/// The answer to `query` from a store alone: what every population gives
/// unless its own structure says more (see [`Population::query`]).
pub fn query_store(store: &GenomeStore, query: &Query) -> Vec<Arc<Genome>> {
    match query {
        Query::TopK(k) => store.top_k(*k),
        Query::All => store.all(),
        Query::Active => store.top_k(usize::MAX),
        Query::Island(i) => store
            .iter_ranked()
            .filter(|g| g.metadata.island == Some(*i))
            .cloned()
            .collect(),
        Query::Cell { .. } => Vec::new(),
        Query::Frontier(metrics) => {
            let fitness = [FITNESS_KEY.to_owned()];
            let metrics = if metrics.is_empty() {
                &fitness[..]
            } else {
                metrics
            };
            pareto_frontier(store.iter_ranked(), |g| {
                metrics
                    .iter()
                    .map(|m| {
                        g.scores
                            .get(m)
                            .copied()
                            .filter(|v| v.is_finite())
                            .unwrap_or(f64::NEG_INFINITY)
                    })
                    .collect()
            })
        }
        Query::ParetoFront(objectives) => pareto_frontier(store.iter_ranked(), |g| {
            objectives
                .iter()
                .map(|o| o.signed(g).unwrap_or(f64::NEG_INFINITY))
                .collect()
        }),
    }
}

/// The non-dominated genomes of `ranked` (valid, best first) by `point`
/// (each coordinate higher being better), in the order given. O(n log n +
/// n·f) for a frontier of f genomes.
fn pareto_frontier<'a>(
    ranked: impl Iterator<Item = &'a Arc<Genome>>,
    point: impl Fn(&Genome) -> Vec<f64>,
) -> Vec<Arc<Genome>> {
    let mut points: Vec<(Vec<f64>, usize, &Arc<Genome>)> = ranked
        .enumerate()
        .map(|(rank, g)| (point(g), rank, g))
        .collect();
    // A genome can only be dominated by one that comes before it in
    // descending lexicographic order, so one scan against the frontier found
    // so far suffices.
    points.sort_by(|a, b| {
        b.0.iter()
            .zip(&a.0)
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    let mut frontier: Vec<(Vec<f64>, usize, &Arc<Genome>)> = Vec::new();
    for p in points {
        let dominated = frontier.iter().any(|(f, _, _)| dominates(f, &p.0));
        if !dominated {
            frontier.push(p);
        }
    }
    frontier.sort_by_key(|(_, rank, _)| *rank);
    frontier
        .into_iter()
        .map(|(_, _, g)| Arc::clone(g))
        .collect()
}

/// The shape a population gives the search space, for policies that need it
/// and for the studio to draw.
#[derive(Clone, Debug, PartialEq)]
pub enum Structure {
    /// A flat keep-all archive.
    Flat,
    /// A fixed-width beam inside a keep-all store.
    Beam(BeamView),
    /// Islands, each with a MAP-Elites grid, plus a global elite archive.
    Islands(IslandsView),
}

/// A read-only view of a beam.
#[derive(Clone, Debug, PartialEq)]
pub struct BeamView {
    /// Ids in the active beam, best first (by depth-penalised score).
    pub members: Vec<GenomeId>,
    pub width: usize,
    /// Weight `w` of the diversity term (also read by beam selection).
    pub diversity_weight: f64,
    pub depth_penalty: f64,
}

/// A read-only view of an island population.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IslandsView {
    /// One entry per island, in ring order (island `i` migrates to `i + 1`).
    pub islands: Vec<IslandView>,
    /// The global elite archive (cell elites of every island), best first.
    pub archive: Vec<GenomeId>,
    /// Names of the MAP-Elites feature dimensions.
    pub feature_dimensions: Vec<String>,
    /// Bins per feature dimension.
    pub feature_bins: usize,
    /// Island generations between migrations.
    pub migration_interval: u64,
    /// Migrations performed so far.
    pub migrations: u64,
}

/// One island of an [`IslandsView`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IslandView {
    /// Every valid genome placed on (or migrated to) the island, best first.
    pub members: Vec<GenomeId>,
    /// The island's fittest member.
    pub best: Option<GenomeId>,
    /// The occupants of the island's MAP-Elites cells, best first.
    pub elites: Vec<GenomeId>,
    /// Number of occupied MAP-Elites cells (= `elites.len()`).
    pub cells: usize,
    /// Children produced on this island so far (island generations).
    pub generation: u64,
    /// The island generation at the last migration.
    pub last_migration: u64,
}

/// The candidate store (slot 1 of the loop, see ARCHITECTURE.md).
///
/// `add` is the one verb an implementation must write; reads go through the
/// shared [`GenomeStore`] unless the implementation has its own structure.
pub trait Population: Send + Sync {
    /// Admit a scored genome (valid or not). Invalid genomes are kept for
    /// inspection but never ranked.
    fn add(&mut self, genome: Arc<Genome>);

    /// The keep-all store underneath.
    fn store(&self) -> &GenomeStore;

    /// Genomes matching `query` (by default answered from the store, see
    /// [`query_store`]; a population with its own structure answers
    /// `Active`, `Island` and `Cell` from it).
    fn query(&self, query: &Query) -> Vec<Arc<Genome>> {
        query_store(self.store(), query)
    }

    /// The fittest valid genome (ties: earliest admitted).
    fn best(&self) -> Option<Arc<Genome>> {
        self.store().best()
    }

    /// A genome by id, if it is (still) a member.
    fn get(&self, id: GenomeId) -> Option<Arc<Genome>> {
        self.store().get(id).cloned()
    }

    fn len(&self) -> usize {
        self.store().len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The population's structure (flat, beam, islands...).
    fn structure(&self) -> Structure {
        Structure::Flat
    }

    /// Migrations between the population's parts so far (an island ring's);
    /// 0 for a population without parts. An observer replaying the
    /// population (the studio) notices a migration by this count.
    fn migrations(&self) -> u64 {
        0
    }

    /// The MAP-Elites cell a member occupies, for a population with a
    /// feature grid (`None` for one without, or a genome not placed).
    fn cell_of(&self, _id: GenomeId) -> Option<&[usize]> {
        None
    }

    /// Search-tree depth of a member, where the population tracks it.
    fn depth(&self, id: GenomeId) -> Option<u32> {
        self.store().get(id).map(|g| g.metadata.depth)
    }
}

impl SlotTrait for dyn Population {
    const SLOT: Slot = Slot::Population;
}

impl<T: Population + 'static> Fills<dyn Population> for T {
    fn boxed(self) -> Box<dyn Population> {
        Box::new(self)
    }
}

/// The beam score of a genome: `fitness × exp(−penalty × depth)` (raw
/// fitness when the penalty is 0). Shared by the beam population and the beam selection policy.
pub fn beam_score(fitness: f64, depth: u32, penalty: f64) -> f64 {
    if penalty > 0.0 && depth > 0 {
        fitness * (-penalty * f64::from(depth)).exp()
    } else {
        fitness
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(id: GenomeId, island: Option<u32>, scores: &[(&str, f64)]) -> Arc<Genome> {
        let mut genome = Genome {
            id,
            valid: true,
            ..Genome::default()
        };
        genome.metadata.island = island;
        for (k, v) in scores {
            genome.scores.insert((*k).to_owned(), *v);
        }
        Arc::new(genome)
    }

    fn ids(v: &[Arc<Genome>]) -> Vec<GenomeId> {
        v.iter().map(|g| g.id).collect()
    }

    #[test]
    fn a_flat_population_answers_island_cell_and_frontier_queries() {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        let m = |c: f64, acc: f64, cost: f64| {
            vec![(FITNESS_KEY, c), ("accuracy", acc), ("neg_cost", cost)]
        };
        pop.add(g(0, None, &m(0.5, 0.5, -5.0)));
        pop.add(g(1, Some(2), &m(0.9, 0.9, -9.0)));
        pop.add(g(2, Some(2), &m(0.3, 0.4, -1.0)));
        // dominated by 0 on both metrics
        pop.add(g(3, None, &m(0.2, 0.4, -6.0)));
        // equal to 0 on both: neither dominates the other
        pop.add(g(4, Some(1), &m(0.1, 0.5, -5.0)));
        // no accuracy: worst on it, but the cheapest
        pop.add(g(5, None, &[(FITNESS_KEY, 0.05), ("neg_cost", -0.5)]));
        let mut broken = (*g(6, Some(2), &m(1.0, 1.0, 0.0))).clone();
        broken.valid = false;
        pop.add(Arc::new(broken));

        assert_eq!(ids(&pop.query(&Query::Island(2))), vec![1, 2]);
        assert!(pop.query(&Query::Island(9)).is_empty());
        assert!(
            pop.query(&Query::Cell {
                island: 0,
                coords: vec![0]
            })
            .is_empty()
        );
        let metrics = vec!["accuracy".to_owned(), "neg_cost".to_owned()];
        assert_eq!(
            ids(&pop.query(&Query::Frontier(metrics))),
            vec![1, 0, 2, 4, 5]
        );
        // over combined_score alone: the best
        assert_eq!(ids(&pop.query(&Query::Frontier(Vec::new()))), vec![1]);
        // with directions: the same front when `neg_cost` is maximised, and
        // only #1 (the most accurate and the most "costly") when minimised
        let objective = |metric: &str, direction| Objective {
            metric: metric.to_owned(),
            direction,
            reference: None,
        };
        use crate::engine::genome::Direction::{Max, Min};
        assert_eq!(
            ids(&pop.query(&Query::ParetoFront(vec![
                objective("accuracy", Max),
                objective("neg_cost", Max)
            ]))),
            vec![1, 0, 2, 4, 5]
        );
        assert_eq!(
            ids(&pop.query(&Query::ParetoFront(vec![
                objective("accuracy", Max),
                objective("neg_cost", Min)
            ]))),
            vec![1]
        );
    }
}
