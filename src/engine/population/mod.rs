//! Slot 1 — Population: the candidate store. A passive container that holds
//! genomes and answers `add` / `query` / `best`; all policy lives in the
//! SelectionPolicy.

mod store;
// implementations (one file each) are declared below the trait
mod beam;
pub mod diversity;
mod in_memory;
mod islands;

use std::sync::Arc;

pub use beam::{BeamParams, BeamPopulation, BeamStats, beam_score};
pub use in_memory::{InMemoryParams, InMemoryPopulation};
pub use islands::{IslandParams, IslandPopulation};
pub use store::GenomeStore;

use crate::engine::component::{Fills, Slot, SlotTrait};
use crate::engine::genome::{Genome, GenomeId};

/// What a caller asks a population for.
#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    /// The `k` fittest valid genomes, best first (ties: earliest admitted first).
    TopK(usize),
    /// Every genome, in admission order.
    All,
    /// The members of the population's active structure (the beam for a beam
    /// population); for flat populations, every valid genome.
    Active,
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

    /// Genomes matching `query`.
    fn query(&self, query: &Query) -> Vec<Arc<Genome>> {
        match query {
            Query::TopK(k) => self.store().top_k(*k),
            Query::All => self.store().all(),
            Query::Active => self.store().top_k(usize::MAX),
        }
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
