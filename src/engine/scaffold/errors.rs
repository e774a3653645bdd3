//! Why a scaffold cannot be built from a card, or a recorded run cannot be
//! continued.

use crate::engine::component::{RegistryError, RestoreError};
use crate::engine::model::ConfigError;

/// Why a recorded run cannot be continued.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("the archive has no genomes; start a new run instead")]
    NoGenomes,
    #[error("the archive's genome ids are not contiguous at {at} (found {found})")]
    Gap { at: u64, found: u64 },
    #[error("the checkpoint expects {expected} genomes but the archive has {found}")]
    Count { expected: u64, found: u64 },
    #[error("selection policy state: {0}")]
    Policy(RestoreError),
    #[error("memory state: {0}")]
    Memory(RestoreError),
    #[error("memory state: the memory is in use")]
    MemoryBusy,
}

/// Why a scaffold could not be built from a card.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Registry(#[from] RegistryError),
    /// The novelty gate's embeddings model cannot be set up.
    #[error("general.novelty: {0}")]
    Novelty(#[from] ConfigError),
}
