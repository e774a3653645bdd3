//! Slot 5 — Evaluator: the deterministic verifiable scorer, supplied by the
//! task. Maps a candidate to a metric dict plus artifacts.

use std::collections::BTreeMap;

mod command;
mod subprocess;
pub(crate) mod worker;

use crate::engine::component::{Fills, Slot, SlotTrait};
pub use command::{CommandEvaluator, CommandParams};
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
    /// Metrics the evaluator keeps from the model (ShinkaEvolve's
    /// `private`): recorded, never shown in a prompt.
    pub private: BTreeMap<String, String>,
    /// The evaluator itself could not run (its file does not import, its
    /// interpreter is missing, its process could not start): no candidate
    /// can score, whatever it is. `error` says why.
    pub evaluator_failed: bool,
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

/// What an evaluator backend observed for one candidate, before the
/// validity rule: the scores and artifacts it reported, the metrics that
/// were not finite, an error (the evaluator raised, the candidate crashed),
/// and whether the time limit was hit.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub scores: BTreeMap<String, f64>,
    pub nonfinite: Vec<String>,
    pub artifacts: BTreeMap<String, String>,
    pub error: Option<String>,
    pub timeout: bool,
}

impl Observed {
    /// The validity rule (its one owner). A candidate is **invalid** when:
    /// there is an error (the evaluator raised, the candidate crashed or
    /// exited early, evaluator.py cannot be imported, the worker stopped
    /// answering); the time limit was hit; any metric is NaN or infinite
    /// ("non-finite score <key>"); an `error` artifact is a non-empty string;
    /// a `validity` (or `valid`) score is present and <= 0; or a `timeout`
    /// score is true. Everything else is valid, even with a low score.
    pub(crate) fn judge(self) -> Evaluation {
        let Self {
            mut scores,
            nonfinite,
            artifacts,
            error,
            timeout,
            ..
        } = self;
        let mut nonfinite = nonfinite;
        nonfinite.extend(
            scores
                .iter()
                .filter(|(_, v)| !v.is_finite())
                .map(|(k, _)| k.clone()),
        );
        scores.retain(|_, v| v.is_finite());
        let reason = error
            .filter(|e| !e.trim().is_empty())
            .or_else(|| timeout.then(|| "timeout".to_owned()))
            .or_else(|| nonfinite.first().map(|k| format!("non-finite score {k}")))
            .or_else(|| {
                artifacts
                    .get("error")
                    .filter(|e| !e.trim().is_empty())
                    .map(|e| format!("evaluator reported an error: {}", first_line(e)))
            })
            .or_else(|| {
                ["validity", "valid"].iter().find_map(|key| {
                    scores
                        .get(*key)
                        .filter(|v| **v <= 0.0)
                        .map(|v| format!("evaluator marked the candidate invalid ({key} = {v})"))
                })
            })
            .or_else(|| {
                scores
                    .get("timeout")
                    .filter(|v| **v > 0.0)
                    .map(|_| "evaluator reported a timeout".to_owned())
            });
        Evaluation {
            valid: reason.is_none(),
            scores,
            artifacts,
            error: reason,
            ..Evaluation::default()
        }
    }
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(scores: &[(&str, f64)]) -> Observed {
        Observed {
            scores: scores.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            ..Observed::default()
        }
    }

    #[test]
    fn validity_rule() {
        let ok = reply(&[("combined_score", 0.4)]).judge();
        assert!(ok.valid, "{ok:?}");
        assert_eq!(ok.scores["combined_score"], 0.4);

        let v = reply(&[("combined_score", 0.4), ("validity", 0.0)]).judge();
        assert!(!v.valid);
        assert!(v.error.unwrap_or_default().contains("validity = 0"));

        let v = reply(&[("valid", 1.0)]).judge();
        assert!(v.valid);

        let v = reply(&[("timeout", 1.0)]).judge();
        assert!(!v.valid);

        let mut r = reply(&[("combined_score", 1.0)]);
        r.nonfinite = vec!["sum".to_owned()];
        let v = r.judge();
        assert_eq!(v.error.as_deref(), Some("non-finite score sum"));

        let mut r = reply(&[("combined_score", 1.0)]);
        r.artifacts
            .insert("error".to_owned(), "overlap\nmore".to_owned());
        let v = r.judge();
        assert!(!v.valid);
        assert_eq!(
            v.error.as_deref(),
            Some("evaluator reported an error: overlap")
        );

        let mut r = reply(&[("combined_score", 1.0)]);
        r.artifacts.insert("error".to_owned(), "  ".to_owned());
        assert!(r.judge().valid);

        let mut r = reply(&[]);
        r.timeout = true;
        r.error = Some("timeout: evaluation exceeded 1 s and was killed".to_owned());
        let v = r.judge();
        assert!(!v.valid);
        assert!(v.error.unwrap_or_default().starts_with("timeout"));
    }
}
