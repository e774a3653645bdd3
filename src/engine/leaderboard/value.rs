//! A task's raw objective against its best known value: what a leaderboard
//! reports on a task whose config names one (`best_known`, see
//! [`crate::engine::task::TaskConfig::best_known`]).
//!
//! The objective is the metric [`VALUE_METRIC`] as the task's evaluator
//! reports it (the papers' units), better in the record's direction. A run's
//! [`ValueTrack`] holds its best value so far per iteration, and the model
//! calls, tokens and cost it had spent by the first iteration whose best value
//! reached [`Goal::fraction`] of the record. Normalised, a value is value /
//! record when higher is better and record / value when lower is, so 1.0 is the
//! record whatever the direction (and what the shipped tasks' `combined_score`
//! is); the gap is how far a value is short of the record, in the objective's
//! units (positive: short of it, negative: beyond it).
//!
//! A card's [`ValueStats`] on a task: the means over seeds with their 95 %
//! bootstrap intervals ([`super::stats`]), the runs that reached the fraction,
//! and what reaching it cost, over the runs that did.

use serde::{Deserialize, Serialize};

use super::stats::{self, Estimate, estimate};
use crate::engine::genome::{Direction, Genome};
use crate::engine::task::config::BestKnown;

/// The metric the benchmark tasks report their raw objective as.
pub const VALUE_METRIC: &str = "value";

/// The fraction of the best known value a run must reach, unless told.
pub const DEFAULT_FRACTION: f64 = 0.99;

/// The seed of the bootstrap draws of [`ValueStats`] (fixed: the same runs
/// give the same intervals).
pub const BOOTSTRAP_SEED: u64 = 0xBE57_0F5E;

/// A task's best known value as a leaderboard records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub value: f64,
    pub direction: Direction,
    /// Where it was published.
    #[serde(default)]
    pub source: String,
}

impl From<BestKnown> for Record {
    fn from(b: BestKnown) -> Self {
        Self {
            value: b.value,
            direction: if b.higher_is_better {
                Direction::Max
            } else {
                Direction::Min
            },
            source: b.source,
        }
    }
}

impl Record {
    /// "max" or "min".
    pub fn direction_word(&self) -> &'static str {
        match self.direction {
            Direction::Max => "max",
            Direction::Min => "min",
        }
    }

    /// True when `a` is better than `b` in the record's direction.
    pub fn better(&self, a: f64, b: f64) -> bool {
        match self.direction {
            Direction::Max => a > b,
            Direction::Min => a < b,
        }
    }

    /// `value` over the record, in the direction that makes 1.0 the record
    /// and more better: value / record (max), record / value (min).
    /// `None` when that ratio means nothing: a record that is not positive,
    /// or (min) a value that is not.
    pub fn normalised(&self, value: f64) -> Option<f64> {
        if self.value.is_nan() || self.value <= 0.0 || !value.is_finite() {
            return None;
        }
        match self.direction {
            Direction::Max => Some(value / self.value),
            Direction::Min if value > 0.0 => Some(self.value / value),
            Direction::Min => None,
        }
    }

    /// How far `value` is short of the record, in the objective's units:
    /// record − value (max), value − record (min). Negative: beyond it.
    pub fn gap(&self, value: f64) -> f64 {
        match self.direction {
            Direction::Max => self.value - value,
            Direction::Min => value - self.value,
        }
    }
}

/// What the runs of a task aim at: its record and the fraction of it to
/// reach.
#[derive(Clone, Debug, PartialEq)]
pub struct Goal {
    pub record: Record,
    pub fraction: f64,
}

impl Goal {
    /// `value` reaches the fraction: normalised, at least the fraction.
    pub fn reached(&self, value: f64) -> bool {
        self.record
            .normalised(value)
            .is_some_and(|n| n >= self.fraction)
    }
}

/// What a run had spent when it reached the goal.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reached {
    /// The first iteration whose best value reached it.
    pub iteration: u64,
    /// Model calls (programs a model proposed) of iterations 0..=iteration.
    pub calls: u64,
    /// Their prompt and completion tokens.
    pub tokens: u64,
    /// Their cost, where prices are known.
    pub cost_usd: Option<f64>,
}

/// A run's raw objective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueTrack {
    /// The best value among valid programs of iterations 0..=i, for i in
    /// 0..=budget, in the record's direction (`None` before the first valid
    /// program reporting the metric; the last value is carried on).
    pub best_so_far: Vec<Option<f64>>,
    /// When and at what spend the run reached the goal; `None`: not reached.
    pub reached: Option<Reached>,
}

impl ValueTrack {
    /// The best value at the budget.
    pub fn best(&self) -> Option<f64> {
        self.best_so_far.last().copied().flatten()
    }

    /// The best value at the budget, normalised; 0 for a run without a
    /// valid program (what such a run scores).
    pub fn normalised_at(&self, record: &Record, i: usize) -> f64 {
        self.best_so_far
            .get(i)
            .or(self.best_so_far.last())
            .copied()
            .flatten()
            .and_then(|v| record.normalised(v))
            .unwrap_or(0.0)
    }
}

/// The model calls made by `genomes` (those a model proposed).
pub fn calls(genomes: &[Genome]) -> u64 {
    genomes
        .iter()
        .filter(|g| g.metadata.model.is_some())
        .count() as u64
}

/// A run's track of its `genomes` against `goal` over `budget` iterations.
pub fn track(genomes: &[Genome], budget: u64, goal: &Goal) -> ValueTrack {
    let record = &goal.record;
    let n = budget as usize + 1;
    let mut per_iteration: Vec<Option<f64>> = vec![None; n];
    for g in genomes.iter().filter(|g| g.valid) {
        if let Some(&v) = g.scores.get(VALUE_METRIC)
            && v.is_finite()
            && let Some(slot) = per_iteration.get_mut(g.iteration as usize)
        {
            *slot = Some(slot.map_or(v, |b: f64| if record.better(v, b) { v } else { b }));
        }
    }
    let mut best_so_far = Vec::with_capacity(n);
    let mut best: Option<f64> = None;
    for v in per_iteration {
        if let Some(v) = v
            && best.is_none_or(|b| record.better(v, b))
        {
            best = Some(v);
        }
        best_so_far.push(best);
    }
    let reached = best_so_far
        .iter()
        .position(|b| b.is_some_and(|b| goal.reached(b)))
        .map(|i| {
            let spent: Vec<&Genome> = genomes
                .iter()
                .filter(|g| g.iteration as usize <= i)
                .collect();
            let costs: Vec<f64> = spent
                .iter()
                .filter_map(|g| g.usage.and_then(|u| u.cost_usd))
                .collect();
            Reached {
                iteration: i as u64,
                calls: spent.iter().filter(|g| g.metadata.model.is_some()).count() as u64,
                tokens: spent
                    .iter()
                    .filter_map(|g| g.usage.map(|u| u.total_tokens()))
                    .sum(),
                cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
            }
        });
    ValueTrack {
        best_so_far,
        reached,
    }
}

/// A card's numbers on a task against its record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueStats {
    /// The best value at the budget: mean over the runs with a valid
    /// program, with its interval, and the best of them.
    pub best: Option<Estimate>,
    pub best_of_seeds: Option<f64>,
    /// The gap to the record at the budget (same runs).
    pub gap: Option<Estimate>,
    /// The best value normalised by the record, over every run (a run without
    /// a valid program scores 0).
    pub normalised: Option<Estimate>,
    /// Runs that reached the fraction, of `runs`.
    pub reached: u64,
    pub runs: u64,
    /// Over the runs that reached it: model calls, tokens and cost (where
    /// prices are known) until they did, and the iteration.
    pub calls_to_reach: Option<Estimate>,
    pub tokens_to_reach: Option<Estimate>,
    pub cost_to_reach: Option<Estimate>,
    pub iterations_to_reach: Option<Estimate>,
}

/// A card's [`ValueStats`] from its runs' tracks.
pub fn value_stats(tracks: &[&ValueTrack], record: &Record) -> ValueStats {
    let finals: Vec<f64> = tracks.iter().filter_map(|t| t.best()).collect();
    let gaps: Vec<f64> = finals.iter().map(|&v| record.gap(v)).collect();
    let normalised: Vec<f64> = tracks
        .iter()
        .map(|t| t.normalised_at(record, usize::MAX))
        .collect();
    let reached: Vec<Reached> = tracks.iter().filter_map(|t| t.reached).collect();
    let of = |f: &dyn Fn(&Reached) -> Option<f64>| -> Vec<f64> {
        reached.iter().filter_map(f).collect()
    };
    let best_of_seeds = finals
        .iter()
        .copied()
        .reduce(|a, b| if record.better(b, a) { b } else { a });
    ValueStats {
        best: estimate(&finals, BOOTSTRAP_SEED),
        best_of_seeds,
        gap: estimate(&gaps, BOOTSTRAP_SEED),
        normalised: estimate(&normalised, BOOTSTRAP_SEED),
        reached: reached.len() as u64,
        runs: tracks.len() as u64,
        calls_to_reach: estimate(&of(&|r| Some(r.calls as f64)), BOOTSTRAP_SEED),
        tokens_to_reach: estimate(&of(&|r| Some(r.tokens as f64)), BOOTSTRAP_SEED),
        cost_to_reach: estimate(&of(&|r| r.cost_usd), BOOTSTRAP_SEED),
        iterations_to_reach: estimate(&of(&|r| Some(r.iteration as f64)), BOOTSTRAP_SEED),
    }
}

/// A value in the objective's units, with the digits the papers print.
pub fn fmt_value(v: f64) -> String {
    format!("{v:.10}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_owned()
}

/// A value with its interval: `2.61 [2.59, 2.63]`.
pub fn fmt_estimate(e: Option<Estimate>, digits: usize) -> String {
    e.map_or_else(
        || "–".to_owned(),
        |e| {
            format!(
                "{:.digits$} [{:.digits$}, {:.digits$}]",
                e.mean, e.ci_low, e.ci_high
            )
        },
    )
}

/// What reaching the fraction cost, in a cell: the mean with its interval
/// over the runs that reached it, and how many did; "not reached" when none
/// did.
pub fn fmt_to_reach(e: Option<Estimate>, reached: u64, runs: u64, digits: usize) -> String {
    match e {
        _ if reached == 0 => "not reached".to_owned(),
        None => format!("– ({reached}/{runs})"),
        Some(e) if reached == runs => fmt_estimate(Some(e), digits),
        Some(e) => format!("{} ({reached}/{runs})", fmt_estimate(Some(e), digits)),
    }
}

/// The mean of normalised scores `per_seed` (one list per seed of the
/// scores of its runs): the mean per seed, then its interval over seeds.
pub fn score_over_seeds(per_seed: &[Vec<f64>], seed: u64) -> Option<Estimate> {
    let means: Vec<f64> = per_seed.iter().filter_map(|v| stats::mean(v)).collect();
    estimate(&means, seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::Genome;
    use crate::engine::usage::TokenUsage;

    fn record(value: f64, direction: Direction) -> Record {
        Record {
            value,
            direction,
            source: String::new(),
        }
    }

    fn genome(iteration: u64, value: Option<f64>, tokens: u64) -> Genome {
        let mut g = Genome {
            iteration,
            valid: value.is_some(),
            ..Genome::default()
        };
        if let Some(v) = value {
            g.scores.insert(VALUE_METRIC.to_owned(), v);
        }
        if iteration > 0 {
            g.metadata.model = Some("m".to_owned());
            g.usage = Some(TokenUsage {
                prompt_tokens: tokens,
                completion_tokens: 1,
                cost_usd: Some(0.5),
                ..TokenUsage::default()
            });
        }
        g
    }

    #[test]
    fn normalised_and_gap_follow_the_direction() {
        let max = record(2.0, Direction::Max);
        assert_eq!(max.normalised(1.5), Some(0.75));
        assert_eq!(max.gap(1.5), 0.5);
        assert_eq!(max.gap(2.5), -0.5);
        let min = record(1.5, Direction::Min);
        assert_eq!(min.normalised(3.0), Some(0.5));
        assert_eq!(min.gap(3.0), 1.5);
        assert_eq!(min.normalised(0.0), None);
        assert_eq!(record(0.0, Direction::Max).normalised(1.0), None);
        let goal = Goal {
            record: min,
            fraction: 0.99,
        };
        assert!(goal.reached(1.515) && !goal.reached(1.52));
    }

    #[test]
    fn a_track_keeps_the_best_in_the_direction_and_what_reaching_cost() {
        let goal = Goal {
            record: record(1.0, Direction::Min),
            fraction: 0.8,
        };
        // initial 2.0 (0.5), then invalid, 1.5 (0.67), 1.6 (worse), 1.2 (0.83: reached at 4)
        let genomes = [
            genome(0, Some(2.0), 0),
            genome(1, None, 10),
            genome(2, Some(1.5), 10),
            genome(3, Some(1.6), 10),
            genome(4, Some(1.2), 10),
            genome(5, Some(1.1), 10),
        ];
        let t = track(&genomes, 6, &goal);
        assert_eq!(
            t.best_so_far,
            [2.0, 2.0, 1.5, 1.5, 1.2, 1.1, 1.1].map(Some).to_vec()
        );
        assert_eq!(
            t.reached,
            Some(Reached {
                iteration: 4,
                calls: 4,
                tokens: 44,
                cost_usd: Some(2.0)
            })
        );
        let never = Goal {
            record: record(1.0, Direction::Min),
            fraction: 0.95,
        };
        assert_eq!(track(&genomes, 6, &never).reached, None);
        // a run without a valid program: no value, normalised 0
        let none = track(&[genome(0, None, 0)], 2, &goal);
        assert_eq!(none.best(), None);
        assert_eq!(none.normalised_at(&goal.record, usize::MAX), 0.0);
    }

    #[test]
    fn stats_cover_the_runs_and_the_ones_that_reached() {
        let rec = record(2.0, Direction::Max);
        let goal = Goal {
            record: rec.clone(),
            fraction: 0.9,
        };
        let a = track(
            &[genome(0, Some(1.0), 0), genome(1, Some(1.9), 7)],
            2,
            &goal,
        );
        let b = track(
            &[genome(0, Some(1.0), 0), genome(1, Some(1.2), 7)],
            2,
            &goal,
        );
        let c = track(&[genome(0, None, 0)], 2, &goal);
        let s = value_stats(&[&a, &b, &c], &rec);
        assert_eq!((s.reached, s.runs), (1, 3));
        let best = s.best.unwrap();
        assert!((best.mean - 1.55).abs() < 1e-12);
        assert_eq!(s.best_of_seeds, Some(1.9));
        assert!((s.gap.unwrap().mean - 0.45).abs() < 1e-12);
        // normalised: 0.95, 0.6 and 0 for the run without a valid program
        let n = s.normalised.unwrap();
        assert!((n.mean - 1.55 / 3.0).abs() < 1e-12, "{n:?}");
        let calls = s.calls_to_reach.unwrap();
        assert_eq!((calls.mean, calls.ci_low, calls.ci_high), (1.0, 1.0, 1.0));
        assert_eq!(s.tokens_to_reach.map(|e| e.mean), Some(8.0));
        assert_eq!(
            fmt_to_reach(s.calls_to_reach, 1, 3, 1),
            "1.0 [1.0, 1.0] (1/3)"
        );
        assert_eq!(fmt_to_reach(None, 0, 3, 1), "not reached");
        assert_eq!(fmt_value(2.6359830773881194), "2.6359830774");
        assert_eq!(fmt_value(1.5), "1.5");
    }
}
