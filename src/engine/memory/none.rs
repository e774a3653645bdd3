//! `NoneMemory`: keeps nothing (the default; plain evolutionary loops).

use super::{Knowledge, Memory, MemoryQuery};
use crate::engine::component::{BuildContext, Component, ComponentInfo, NoParams};
use crate::engine::params::ParamError;

/// Keeps no cross-candidate knowledge.
#[derive(Debug, Default)]
pub struct NoneMemory;

impl Component for NoneMemory {
    type Slot = dyn Memory;
    type Params = NoParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "none",
        type_name: "NoneMemory",
        summary: "Keeps no cross-candidate knowledge (plain evolutionary loop)",
        params: &[],
    };

    fn build(_params: NoParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self)
    }
}

#[async_trait::async_trait]
impl Memory for NoneMemory {
    fn read(&self, _query: &MemoryQuery) -> Knowledge {
        Knowledge::default()
    }
}
