//! Galapagos Studio: LLM-driven test-time program search as six composable
//! blocks (Population, SelectionPolicy, PromptBuilder, Proposer, Evaluator,
//! Memory) around one loop.

pub mod cli;
pub mod engine;
#[cfg(feature = "studio")]
pub mod studio;
