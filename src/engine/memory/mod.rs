//! Slot 6 — Memory: cross-candidate free-form knowledge (notes, scratchpad),
//! read by the prompt builder and written after evaluation.

mod none;
mod scratchpad;

use std::sync::Arc;

pub use none::NoneMemory;
pub use scratchpad::{ScratchpadMemory, ScratchpadParams};

use crate::engine::component::{Fills, RestoreError, Slot, SlotTrait};
use crate::engine::genome::Genome;
use crate::engine::population::Population;

/// Free-form knowledge handed to the prompt builder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Knowledge {
    /// Notes, each rendered as its own paragraph in the prompt.
    pub notes: Vec<String>,
}

impl Knowledge {
    pub fn is_empty(&self) -> bool {
        self.notes.iter().all(|n| n.trim().is_empty())
    }
}

/// What a reader asks memory for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryQuery {
    /// The island the reader works on, when the population has islands (a
    /// memory that keeps knowledge per island answers for this one; the
    /// shipped memories keep one body of knowledge for the whole run).
    pub island: Option<u32>,
    /// At most this many characters of notes in all (`None`: as much as the
    /// memory gives).
    pub max_chars: Option<usize>,
}

impl MemoryQuery {
    /// Everything, for the whole run.
    pub fn all() -> Self {
        Self::default()
    }
}

/// The memory slot (slot 6 of the loop, see ARCHITECTURE.md).
#[async_trait::async_trait]
pub trait Memory: Send + Sync {
    /// What a reader should know now, as `query` asks for it (the loop reads
    /// once per iteration for the prompt; a proposer may read through its
    /// [`crate::engine::proposer::ProposerEnv`]).
    fn read(&self, query: &MemoryQuery) -> Knowledge;

    /// Record knowledge learned late in the loop.
    fn write(&mut self, _knowledge: Knowledge) {}

    /// Called by the loop after each admitted iteration with that iteration's
    /// genomes. A learning memory (e.g. a scratchpad that asks a model to
    /// summarise what worked) does its work here; returns true when what
    /// [`Memory::read`] returns has changed.
    async fn after_iteration(
        &mut self,
        _admitted: &[Arc<Genome>],
        _population: &dyn Population,
    ) -> bool {
        false
    }

    /// State to checkpoint for resume (default: none).
    fn checkpoint(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restore what [`Memory::checkpoint`] saved.
    fn restore(&mut self, _state: &serde_json::Value) -> Result<(), RestoreError> {
        Ok(())
    }
}

impl SlotTrait for dyn Memory {
    const SLOT: Slot = Slot::Memory;
}

impl<T: Memory + 'static> Fills<dyn Memory> for T {
    fn boxed(self) -> Box<dyn Memory> {
        Box::new(self)
    }
}
