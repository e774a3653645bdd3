//! The Galapagos engine: the Genome, the six slot traits, the registry of
//! named implementations, scaffold cards and the run loop.
//!
//! This module never depends on the studio (egui).

pub mod agent_run;
pub mod archive;
pub mod builtin;
pub mod card;
pub mod component;
pub mod evaluator;
pub mod events;
pub mod genome;
pub mod hub;
pub mod launch;
pub mod leaderboard;
pub mod memory;
pub mod meter;
pub mod model;
pub mod params;
pub mod population;
pub mod prompt;
pub mod proposer;
pub mod redact;
pub mod registry;
pub mod rng;
pub mod run_thread;
pub mod scaffold;
pub mod selection;
pub mod steering;
pub mod takeout;
pub mod task;
pub mod task_settings;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod tree;
pub mod usage;
