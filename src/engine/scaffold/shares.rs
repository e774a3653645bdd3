//! What each model of a run made of its calls: the outcome of every child a
//! model call made (told to the model, so an ensemble with adaptive weights
//! learns from it) and each model's share of the calls and success rate,
//! said in the run's log.
//!
//! # In the loop
//!
//! Every admitted genome that a model call made is told to the model as a `ModelOutcome` (its
//! member, improved on its parent or not, cost) through `LanguageModel::observe`, before it enters
//! the population; a resumed run tells the recorded genomes again, in order. An ensemble with
//! `llm.weights: adaptive` feeds them to its bandit (`model/bandit.rs`, Thompson or UCB1,
//! optionally per dollar), whose state is therefore a function of the outcomes in order. The loop
//! logs each model's share and success rate. A run starts from `LanguageModel::for_run` (an
//! adaptive ensemble: the same members with a fresh bandit), so runs that share a model (a
//! leaderboard batch's) learn each on its own.

use std::collections::BTreeMap;

use crate::engine::genome::Genome;
use crate::engine::model::ModelOutcome;

/// How often (in iterations) the shares are said in the log.
pub(super) const SHARES_EVERY: u64 = 25;

/// The outcome of `child`, made from `parent`, for the model that proposed
/// it: improved when valid and fitter than its parent. `None` for a genome
/// no model call made (the initial program, a call that failed without
/// naming its model).
pub(super) fn outcome(child: &Genome, parent: Option<&Genome>) -> Option<ModelOutcome> {
    let model = child.metadata.model.clone()?;
    let improved = match (child.fitness(), parent.and_then(Genome::fitness)) {
        (Some(c), Some(p)) => c > p,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let usage = child.usage.unwrap_or_default();
    Some(ModelOutcome {
        model,
        improved,
        cost_usd: usage.cost_usd,
        tokens: usage.total_tokens(),
    })
}

/// Calls and improvements per model.
#[derive(Debug, Default)]
pub(super) struct ModelShares {
    per_model: BTreeMap<String, (u64, u64)>,
}

impl ModelShares {
    pub(super) fn record(&mut self, o: &ModelOutcome) {
        let e = self.per_model.entry(o.model.clone()).or_default();
        e.0 += 1;
        e.1 += u64::from(o.improved);
    }

    /// "model shares over 100 calls: a 78% (improved 31%), b 22% (improved
    /// 5%)", once more than one model has answered.
    pub(super) fn line(&self) -> Option<String> {
        if self.per_model.len() < 2 {
            return None;
        }
        let total: u64 = self.per_model.values().map(|(c, _)| c).sum();
        let parts: Vec<String> = self
            .per_model
            .iter()
            .map(|(name, (calls, improved))| {
                format!(
                    "{name} {:.0}% (improved {:.0}%)",
                    100.0 * *calls as f64 / total as f64,
                    100.0 * *improved as f64 / (*calls).max(1) as f64
                )
            })
            .collect();
        Some(format!(
            "model shares over {total} calls: {}",
            parts.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::{GenomeMeta, TokenUsage};

    fn child(model: Option<&str>, score: Option<f64>) -> Genome {
        let mut g = Genome {
            valid: score.is_some(),
            metadata: GenomeMeta {
                model: model.map(str::to_owned),
                ..GenomeMeta::default()
            },
            usage: Some(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
                cost_usd: Some(0.01),
                ..TokenUsage::default()
            }),
            ..Genome::default()
        };
        if let Some(s) = score {
            g.scores.insert("combined_score".into(), s);
        }
        g
    }

    #[test]
    fn a_child_improves_when_fitter_than_its_parent() {
        let parent = child(None, Some(0.5));
        let up = outcome(&child(Some("a"), Some(0.6)), Some(&parent)).unwrap();
        assert!(up.improved);
        assert_eq!((up.tokens, up.cost_usd), (15, Some(0.01)));
        assert!(
            !outcome(&child(Some("a"), Some(0.5)), Some(&parent))
                .unwrap()
                .improved
        );
        assert!(
            !outcome(&child(Some("a"), None), Some(&parent))
                .unwrap()
                .improved
        );
        assert!(outcome(&child(None, Some(0.9)), Some(&parent)).is_none());

        let mut shares = ModelShares::default();
        shares.record(&up);
        assert_eq!(shares.line(), None, "one model: nothing to share");
        for _ in 0..3 {
            shares.record(&outcome(&child(Some("b"), None), Some(&parent)).unwrap());
        }
        assert_eq!(
            shares.line().as_deref(),
            Some("model shares over 4 calls: a 25% (improved 100%), b 75% (improved 0%)")
        );
    }
}
