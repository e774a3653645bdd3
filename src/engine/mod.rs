//! The Galapagos engine: the Genome, the six slot traits, the registry of
//! named implementations, scaffold cards and the run loop.
//!
//! This module never depends on the studio (egui).
//!
//! # What crosses the slots
//!
//! - `Population::query(&Query)`: the top k, everything, the active structure (a beam, the
//!   islands), one island, one MAP-Elites cell, or the Pareto frontier over named metrics
//!   (`Frontier`) or over objectives with directions (`ParetoFront`). Every population answers
//!   every query from its store (`population::query_store`); one with its own structure answers
//!   `Active`, `Island` and `Cell` from it.
//! - `SelectionPolicy::select` returns a `Selection`: parents (primary first) and inspirations. The
//!   identity policy returns the whole pool as parents and leaves the choice to the proposer.
//! - `Memory::read(&MemoryQuery)`: what a reader should know, for an island and within a character
//!   budget.
//! - `proposer::apply_reply` is the one place a model's reply becomes a child program: a single
//!   file through `text::patch`, a folder program through `text::tree_edits` (edits that name their
//!   files, each checked against the task's `EditRules`: a refusal names the path and the rule and
//!   is shown to the model on the next inner retry). The default prompt builder shows a folder
//!   program as `prompt/program.rs` lays it out: editable files in full, context files within a
//!   character budget, the rest by path.
//! - `Proposer::propose(ProposalRequest)`: the prompt, the primary parent, **every parent the
//!   policy chose**, the inspirations, a seed, and a `ProposerEnv` that exposes the run's
//!   **evaluator** (`env.evaluate`, a trial: the loop still scores what the proposal hands in) and
//!   **memory** (`env.read_memory`, `env.write_memory`). A proposal may name the parent it edited
//!   (`Proposal::parent_id`), which must be one it was handed. An autonomous agent that picks its
//!   own parent, tries its edits and reads notes is a proposer using these (`proposer/agent.rs`,
//!   kind `agent`), not a mode of the loop.
//!
//! # Fitness
//!
//! Fitness is the metric `combined_score`. When an evaluator reports no `combined_score`, a valid
//! genome's fitness is the mean of its finite metrics (as OpenEvolve does), and 0 when it has none;
//! a non-finite `combined_score` ranks lowest. Invalid genomes have no fitness: they are kept for
//! inspection but never chosen as parents or inspirations. An **unconfirmed** genome (a would-be
//! best whose re-evaluations disagreed, `evaluator.confirm`) is valid in the record but seen as
//! invalid by selection: the population and the policy get `Genome::for_selection()`, the one place
//! that rule lives.

pub mod agent_run;
pub mod archive;
pub mod builtin;
pub mod card;
pub mod component;
pub mod consent;
pub mod evaluator;
pub mod events;
pub mod foreign;
pub mod genome;
pub mod head;
pub mod hub;
pub mod launch;
pub mod leaderboard;
pub mod memory;
pub mod meter;
pub mod model;
pub mod params;
pub mod platform;
pub mod population;
pub mod prompt;
pub mod proposer;
pub mod provenance;
pub mod redact;
pub mod registry;
pub mod rng;
pub mod run_thread;
pub mod sandbox;
pub mod scaffold;
pub mod selection;
pub mod service;
pub mod steering;
pub mod suggest;
pub mod takeout;
pub mod task;
pub mod task_settings;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod tree;
pub mod usage;
