//! `NullMemory`: keeps nothing (the default; plain evolutionary loops).

use super::{Knowledge, Memory};
use crate::engine::registry::ComponentInfo;

/// Keeps no cross-candidate knowledge.
#[derive(Debug, Default)]
pub struct NullMemory;

impl NullMemory {
    pub const INFO: ComponentInfo = ComponentInfo {
        kind: "none",
        type_name: "NullMemory",
        summary: "Keeps no cross-candidate knowledge (plain evolutionary loop)",
        params: &[],
    };
}

#[async_trait::async_trait]
impl Memory for NullMemory {
    fn read(&self) -> Knowledge {
        Knowledge::default()
    }
}
