//! Early stopping (`general.stop`): end a run before its iteration budget
//! once it has reached a target score, stalled for a number of iterations,
//! or spent a cost or wall-time cap. The reason becomes the run's end status
//! (`RunStatus::EarlyStop`), which the summary, the studio and the
//! leaderboard show.
//!
//! The rules read only what the loop knows after each admitted iteration
//! ([`Progress`]), and patience counts from the iteration that found the
//! current best, so a resumed run applies them exactly as one that never
//! stopped.
//!
//! # In the loop
//!
//! After each admitted iteration the loop checks the rules against `Progress` (iterations done, the
//! best and the iteration that found it, cost, wall time); the first met ends the run as
//! `RunStatus::EarlyStop(reason)` after the iterations in flight. Patience is measured from the
//! best genome's iteration, not a counter, so a resumed run needs no extra state. The wall-time cap
//! counts the run's time over its invocations: `Checkpoint::wall_secs` holds it at every recorded
//! iteration (and, updated by the archive's `finish`, at a clean end), and a resumed loop adds its
//! own time to it (`LoopState::run_wall_secs`).

use serde::{Deserialize, Serialize};

use super::Problem;

/// The `general.stop` section of a card; every rule is optional and the
/// first one met ends the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StopRules {
    /// Stop once the best fitness is at least this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_score: Option<f64>,
    /// Stop after this many iterations without a new best.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patience: Option<u64>,
    /// Stop once the run has cost this much (USD), when prices are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Stop once the run has taken this many seconds of wall time, counted
    /// over every invocation of it (a resumed run starts from the time its
    /// archive recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wall_secs: Option<f64>,
}

/// What the rules are checked against, after an admitted iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Iterations done (the initial program not counted).
    pub iterations_done: u64,
    /// The best fitness so far and the iteration of the genome holding it.
    pub best: Option<(f64, u64)>,
    pub cost_usd: Option<f64>,
    pub wall_secs: f64,
}

impl StopRules {
    /// True when no rule is set (the section is then left out of a saved card).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Why the run should stop now, or `None`: "target score 0.9 reached
    /// (0.93 at iteration 12)", "no new best for 20 iterations (best 0.71 at
    /// iteration 8)", "$0.52 spent, cap $0.50", "61 s, cap 60 s".
    pub fn reason(&self, p: &Progress) -> Option<String> {
        if let (Some(target), Some((best, at))) = (self.target_score, p.best)
            && best >= target
        {
            return Some(format!(
                "target score {target} reached ({best:.6} at iteration {at})"
            ));
        }
        if let Some(patience) = self.patience {
            let since = p.best.map_or(0, |(_, at)| at);
            let stalled = p.iterations_done.saturating_sub(since);
            if stalled >= patience {
                let best = p.best.map_or_else(
                    || "no valid genome".to_owned(),
                    |(b, at)| format!("best {b:.6} at iteration {at}"),
                );
                return Some(format!(
                    "no new best for {stalled} iterations, patience {patience} ({best})"
                ));
            }
        }
        if let (Some(cap), Some(cost)) = (self.max_cost_usd, p.cost_usd)
            && cost >= cap
        {
            return Some(format!("${cost:.4} spent, cost cap ${cap:.2}"));
        }
        if let Some(cap) = self.max_wall_secs
            && p.wall_secs >= cap
        {
            return Some(format!("{:.1} s, wall-time cap {cap} s", p.wall_secs));
        }
        None
    }

    /// Problems with the rules' values, each at its field.
    pub(super) fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Some(t) = self.target_score
            && !t.is_finite()
        {
            out.push(Problem::new(
                "general.stop.target_score",
                "must be a finite number",
            ));
        }
        if self.patience == Some(0) {
            out.push(Problem::new("general.stop.patience", "must be at least 1"));
        }
        for (field, v) in [
            ("general.stop.max_cost_usd", self.max_cost_usd),
            ("general.stop.max_wall_secs", self.max_wall_secs),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                out.push(Problem::new(field, "must be a positive number"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(iterations_done: u64, best: Option<(f64, u64)>) -> Progress {
        Progress {
            iterations_done,
            best,
            ..Progress::default()
        }
    }

    #[test]
    fn each_rule_fires_at_its_threshold_and_not_before() {
        let none = StopRules::default();
        assert!(none.is_empty());
        assert_eq!(none.reason(&at(1000, Some((9.0, 1)))), None);

        let target = StopRules {
            target_score: Some(0.9),
            ..StopRules::default()
        };
        assert_eq!(target.reason(&at(5, Some((0.89, 5)))), None);
        assert_eq!(
            target.reason(&at(6, Some((0.93, 6)))).as_deref(),
            Some("target score 0.9 reached (0.930000 at iteration 6)")
        );

        let patience = StopRules {
            patience: Some(3),
            ..StopRules::default()
        };
        assert_eq!(patience.reason(&at(10, Some((0.5, 8)))), None);
        let why = patience.reason(&at(11, Some((0.5, 8)))).unwrap();
        assert!(why.starts_with("no new best for 3 iterations"), "{why}");

        let cost = StopRules {
            max_cost_usd: Some(0.5),
            ..StopRules::default()
        };
        let mut p = at(3, None);
        assert_eq!(cost.reason(&p), None, "no prices, no cost cap");
        p.cost_usd = Some(0.49);
        assert_eq!(cost.reason(&p), None);
        p.cost_usd = Some(0.5);
        assert_eq!(
            cost.reason(&p).as_deref(),
            Some("$0.5000 spent, cost cap $0.50")
        );

        let wall = StopRules {
            max_wall_secs: Some(60.0),
            ..StopRules::default()
        };
        p.wall_secs = 59.9;
        assert_eq!(wall.reason(&p), None);
        p.wall_secs = 61.0;
        assert_eq!(
            wall.reason(&p).as_deref(),
            Some("61.0 s, wall-time cap 60 s")
        );
    }

    #[test]
    fn bad_values_are_problems_at_their_fields() {
        let rules = StopRules {
            target_score: Some(f64::NAN),
            patience: Some(0),
            max_cost_usd: Some(-1.0),
            max_wall_secs: Some(0.0),
        };
        let fields: Vec<String> = rules.problems().into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "general.stop.target_score",
                "general.stop.patience",
                "general.stop.max_cost_usd",
                "general.stop.max_wall_secs"
            ]
        );
    }
}
