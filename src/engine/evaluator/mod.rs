//! Slot 5 — Evaluator: the deterministic verifiable scorer, supplied by the
//! task. Maps a candidate to a metric dict plus artifacts.

use std::collections::BTreeMap;

mod subprocess;

use crate::engine::component::{Fills, Slot, SlotTrait};
pub use subprocess::{SubprocessEvaluator, SubprocessParams};

/// A candidate to score.
#[derive(Clone, Debug, Default)]
pub struct Candidate {
    /// Id the genome will get (for temp-file names and logs).
    pub id: u64,
    pub content: String,
}

/// The evaluator's verdict.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// False when the candidate crashed, timed out, or the evaluator reported
    /// an error; the genome is kept but never selected.
    pub valid: bool,
    /// Numeric metrics (non-finite values are rejected and make it invalid).
    pub scores: BTreeMap<String, f64>,
    /// Side output: stdout, stderr, traceback, custom artifacts.
    pub artifacts: BTreeMap<String, String>,
    /// Why it is invalid.
    pub error: Option<String>,
}

/// The evaluator slot (slot 5 of the loop, see ARCHITECTURE.md). `evaluate`
/// is the one required verb.
/// Implementations never panic and never hang: a crash or timeout is an
/// invalid `Evaluation` with the reason.
#[async_trait::async_trait]
pub trait Evaluator: Send + Sync {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation;

    /// The per-candidate time limit, when there is one (shown in prompts).
    fn timeout_secs(&self) -> Option<f64> {
        None
    }

    /// Get ready for the first `evaluate` (start a process, import the task's
    /// code) while the run sets up its record, so that start-up overlaps.
    /// Optional; a failure here is reported by the first `evaluate`.
    async fn warm_up(&self) {}
}

impl SlotTrait for dyn Evaluator {
    const SLOT: Slot = Slot::Evaluator;
}

impl<T: Evaluator + 'static> Fills<dyn Evaluator> for T {
    fn boxed(self) -> Box<dyn Evaluator> {
        Box::new(self)
    }
}
