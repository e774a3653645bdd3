//! The novelty gate's settings (`general.novelty`): a child too similar to
//! its parent or to one of the population's fittest is rejected before it
//! is evaluated. The gate itself runs in the loop (`scaffold/gate.rs`).

use serde::{Deserialize, Serialize};

use super::Problem;

/// `general.novelty` of a card: present = the gate is on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NoveltySettings {
    /// A child whose similarity to its parent or a compared genome is at or
    /// above this is rejected, in (0, 1].
    pub threshold: f64,
    /// How many of the population's fittest genomes a child is compared
    /// with besides its parent.
    pub pool: u32,
    /// Retry a rejected proposal within its iteration (one of its
    /// `1 + inner_retry_times` attempts), the prompt saying what it was too
    /// close to; `false` ends the iteration with the rejected child.
    pub retry: bool,
    /// Compare by the embeddings of this model, served by an OpenAI-compatible
    /// `/embeddings` endpoint found as a chat model's is (the user settings'
    /// endpoint that lists it, else `OPENAI_BASE_URL`): cosine similarity.
    /// Unset: the normalised token similarity (Jaccard index of the two
    /// programs' token sets, comments and formatting ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings_model: Option<String>,
}

impl Default for NoveltySettings {
    fn default() -> Self {
        Self {
            threshold: 0.98,
            pool: 8,
            retry: true,
            embeddings_model: None,
        }
    }
}

impl NoveltySettings {
    /// Problems with the values, each at its field.
    pub(super) fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if !(self.threshold.is_finite() && self.threshold > 0.0 && self.threshold <= 1.0) {
            out.push(Problem::new(
                "general.novelty.threshold",
                "must be in (0, 1]",
            ));
        }
        if self.pool > 1000 {
            out.push(Problem::new("general.novelty.pool", "must be at most 1000"));
        }
        if self
            .embeddings_model
            .as_deref()
            .is_some_and(|m| m.trim().is_empty())
        {
            out.push(Problem::new(
                "general.novelty.embeddings_model",
                "must not be empty (leave it out for the token similarity)",
            ));
        }
        out
    }
}
