//! Slot 1 — Population: the candidate store. A passive container that holds
//! genomes and answers `add` / `query` / `best`; all policy lives in the
//! SelectionPolicy.

mod store;
// implementations (one file each) are declared below the trait
mod beam;
pub mod diversity;
mod in_memory;

use std::sync::Arc;

pub use beam::{BeamParams, BeamPopulation, BeamStats, beam_score};
pub use in_memory::{InMemoryParams, InMemoryPopulation};
pub use store::GenomeStore;

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

/// The candidate store (seed 004, slot 1).
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
