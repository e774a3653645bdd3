//! Slot 6 — Memory: cross-candidate free-form knowledge (notes, scratchpad),
//! read by the prompt builder and written after evaluation.

mod null;

pub use null::NullMemory;

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

/// The memory slot (seed 004, slot 6).
pub trait Memory: Send + Sync {
    /// What the prompt builder should know now.
    fn read(&self) -> Knowledge;

    /// Record knowledge learned late in the loop.
    fn write(&mut self, _knowledge: Knowledge) {}

    /// State to checkpoint for resume (default: none).
    fn checkpoint(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restore what [`Memory::checkpoint`] saved.
    fn restore(&mut self, _state: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
}
