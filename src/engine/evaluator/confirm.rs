//! Confirming a new best: a candidate that would become the run's best is
//! evaluated `confirm` more times, each in a fresh candidate process, before
//! it is admitted. Every evaluation's metrics are kept on the genome; its
//! metrics become their mean or their minimum (`confirm_aggregate`); a
//! fitness spread above `confirm_tolerance` marks it unconfirmed, and
//! selection never takes an unconfirmed genome as a parent.
//!
//! This guards against false elites: a noisy evaluator's lucky draw, and a
//! candidate whose score depends on state it can change (a file it leaves,
//! a cache, a count of runs) rather than on its program.
//!
//! # In the loop
//!
//! When the evaluator's `confirmation()` asks for k > 0, a child whose fitness beats the
//! population's best at dispatch is evaluated k more times inside its iteration (fresh processes),
//! its metrics become the evaluations' mean or minimum and `Genome::confirmation` keeps every run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Candidate, Evaluation, Evaluator};
use crate::engine::genome::{Confirmation, Genome};
use crate::engine::params::{ParamError, ParamSpec, ParamType};

/// How the evaluations of a confirmed genome make its metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// Each metric's mean over the evaluations.
    #[default]
    Mean,
    /// Each metric's minimum: the pessimistic choice.
    Min,
}

impl Aggregate {
    /// The card's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Min => "min",
        }
    }

    fn of(self, values: &[f64]) -> f64 {
        match self {
            Self::Mean => values.iter().sum::<f64>() / values.len().max(1) as f64,
            Self::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        }
    }
}

/// An evaluator's confirmation settings (`evaluator.confirm`,
/// `confirm_aggregate`, `confirm_tolerance`): a fragment an evaluator's
/// parameters flatten in (`#[serde(flatten)]`), with [`SPECS`] in its table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Confirm {
    /// Evaluations more for a would-be best (0: off).
    #[serde(rename = "confirm")]
    pub times: u32,
    /// A confirmed candidate's metrics: the evaluations' mean or minimum.
    #[serde(rename = "confirm_aggregate")]
    pub aggregate: Aggregate,
    /// Largest fitness spread (max − min over the evaluations) allowed,
    /// relative to the magnitude of the mean fitness (at least 1e-9).
    #[serde(rename = "confirm_tolerance")]
    pub tolerance: f64,
}

impl Default for Confirm {
    fn default() -> Self {
        Self {
            times: 0,
            aggregate: Aggregate::Mean,
            tolerance: 0.05,
        }
    }
}

/// Largest `confirm`.
pub const MAX_CONFIRM: i64 = 20;

/// The three card parameters, for an evaluator's parameter table.
pub const SPECS: &[ParamSpec] = &[
    ParamSpec {
        key: "confirm",
        doc: "Evaluate a candidate that would become the new best this many more times, each in a fresh \
              process, before it counts (0: off); for noisy evaluators and state-dependent scores",
        ty: ParamType::Int {
            min: 0,
            max: MAX_CONFIRM,
        },
    },
    ParamSpec {
        key: "confirm_aggregate",
        doc: "A confirmed candidate's metrics: the mean or the minimum of its evaluations",
        ty: ParamType::Choice(&["mean", "min"]),
    },
    ParamSpec {
        key: "confirm_tolerance",
        doc: "Largest fitness spread (max - min of the evaluations, relative to the mean's size) a \
              confirmed candidate may show; above it, it is unconfirmed and never a parent",
        ty: ParamType::Float { min: 0.0, max: 1e9 },
    },
];

/// Confirmation re-runs a candidate in a fresh process: a reused process
/// (`candidates_per_process` > 1) would carry the state it means to rule
/// out.
pub(crate) fn check_fresh(confirm: u32, candidates_per_process: u32) -> Result<(), ParamError> {
    if confirm > 0 && candidates_per_process > 1 {
        return Err(ParamError {
            key: "confirm".to_owned(),
            reason: format!(
                "re-evaluates in a fresh process, but candidates_per_process is \
                 {candidates_per_process}: set it to 1, or confirm to 0"
            ),
        });
    }
    Ok(())
}

/// The fitness `template` would have with these metrics and validity.
fn fitness_of(template: &Genome, e: &Evaluation) -> Option<f64> {
    Genome {
        valid: e.valid,
        scores: e.scores.clone(),
        fitness_metric: template.fitness_metric.clone(),
        ..Genome::default()
    }
    .fitness()
}

/// Re-evaluate `candidate` `settings.times` more times (each evaluation
/// starts a fresh candidate process) and fold the results into `genome`,
/// which holds the first evaluation's: every evaluation's metrics go to
/// `genome.confirmation`, the genome's metrics become their aggregate, and
/// a spread above the tolerance, or a re-evaluation that failed, marks it
/// unconfirmed (the reason in `confirmation.note`).
pub async fn confirm(
    evaluator: &dyn Evaluator,
    candidate: &Candidate,
    genome: &mut Genome,
    settings: Confirm,
) {
    let Some(first) = genome.fitness() else {
        return;
    };
    let mut runs: Vec<BTreeMap<String, f64>> = vec![genome.scores.clone()];
    let mut fitness = vec![first];
    let mut failures: Vec<String> = Vec::new();
    for _ in 0..settings.times {
        let e = evaluator.evaluate(candidate).await;
        match fitness_of(genome, &e) {
            Some(f) if e.valid => {
                fitness.push(f);
                runs.push(e.scores);
            }
            _ => failures.push(
                e.error
                    .unwrap_or_else(|| "invalid without a reason".to_owned()),
            ),
        }
    }
    // Every metric every valid evaluation reported, aggregated.
    let mut scores = BTreeMap::new();
    for key in runs[0].keys() {
        let values: Vec<f64> = runs.iter().filter_map(|r| r.get(key).copied()).collect();
        if values.len() == runs.len() {
            scores.insert(key.clone(), settings.aggregate.of(&values));
        }
    }
    let max = fitness.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = fitness.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = fitness.iter().sum::<f64>() / fitness.len() as f64;
    let spread = max - min;
    let allowed = settings.tolerance * mean.abs().max(1e-9);
    let note = if !failures.is_empty() {
        Some(format!(
            "{} of {} re-evaluations failed: {}",
            failures.len(),
            settings.times,
            failures.join("; ")
        ))
    } else if spread.is_nan() || spread > allowed {
        Some(format!(
            "fitness spread {spread:.6} over {} evaluations exceeds the tolerance ({} x |mean| = {allowed:.6})",
            fitness.len(),
            settings.tolerance
        ))
    } else {
        None
    };
    genome.scores = scores;
    genome.confirmation = Some(Confirmation {
        runs,
        fitness,
        aggregate: settings.aggregate.name().to_owned(),
        spread: spread.is_finite().then_some(spread),
        unconfirmed: note.is_some(),
        note,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Scores each evaluation with the next value of a list.
    struct Sequence(Mutex<Vec<Option<f64>>>);

    #[async_trait::async_trait]
    impl Evaluator for Sequence {
        async fn evaluate(&self, _candidate: &Candidate) -> Evaluation {
            let next = self.0.lock().map(|mut v| v.remove(0)).unwrap_or(None);
            match next {
                Some(v) => Evaluation {
                    valid: true,
                    scores: BTreeMap::from([("combined_score".to_owned(), v)]),
                    ..Evaluation::default()
                },
                None => Evaluation {
                    error: Some("crashed".to_owned()),
                    ..Evaluation::default()
                },
            }
        }
    }

    fn scored(v: f64) -> Genome {
        Genome {
            valid: true,
            scores: BTreeMap::from([("combined_score".to_owned(), v)]),
            ..Genome::default()
        }
    }

    fn run(first: f64, rest: Vec<Option<f64>>, aggregate: Aggregate, tolerance: f64) -> Genome {
        let times = rest.len() as u32;
        let evaluator = Sequence(Mutex::new(rest));
        let mut g = scored(first);
        let settings = Confirm {
            times,
            aggregate,
            tolerance,
        };
        let rt = tokio::runtime::Builder::new_current_thread().build();
        if let Ok(rt) = rt {
            rt.block_on(confirm(&evaluator, &Candidate::default(), &mut g, settings));
        }
        g
    }

    #[test]
    fn the_metrics_are_the_mean_or_the_minimum_and_every_score_is_kept() {
        let g = run(1.0, vec![Some(0.98), Some(1.02)], Aggregate::Mean, 0.05);
        let c = g.confirmation.clone().unwrap_or_default();
        assert_eq!(c.fitness, [1.0, 0.98, 1.02]);
        assert_eq!(c.runs.len(), 3);
        assert!(!c.unconfirmed, "{:?}", c.note);
        assert!((g.fitness().unwrap_or(0.0) - 1.0).abs() < 1e-12);
        let g = run(1.0, vec![Some(0.98), Some(1.02)], Aggregate::Min, 0.05);
        assert_eq!(g.fitness(), Some(0.98));
    }

    #[test]
    fn a_spread_above_the_tolerance_or_a_failed_rerun_is_unconfirmed() {
        // A state-dependent hack: 100 the first time, then 1.
        let g = run(100.0, vec![Some(1.0), Some(1.0)], Aggregate::Mean, 0.05);
        let c = g.confirmation.clone().unwrap_or_default();
        assert!(
            c.unconfirmed && c.note.as_deref().unwrap_or("").contains("spread 99"),
            "{c:?}"
        );
        assert!(g.unconfirmed());
        let g = run(1.0, vec![Some(1.0), None], Aggregate::Mean, 0.05);
        let c = g.confirmation.clone().unwrap_or_default();
        assert!(
            c.unconfirmed && c.note.as_deref().unwrap_or("").contains("crashed"),
            "{c:?}"
        );
        assert_eq!(c.fitness, [1.0, 1.0], "the failed run has no fitness");
    }

    #[test]
    fn confirmation_needs_a_fresh_process_per_evaluation() {
        assert!(check_fresh(2, 4).is_err());
        assert!(check_fresh(2, 1).is_ok() && check_fresh(0, 4).is_ok());
    }
}
