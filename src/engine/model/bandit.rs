//! Adaptive ensemble weights (`llm.weights: adaptive`): a multi-armed bandit
//! over the ensemble's members that learns which model's children improve on
//! their parents, by UCB1 or Thompson sampling, optionally per dollar.
//!
//! A member's reward for one call is 1 when the child it proposed was valid
//! and fitter than its parent, else 0 (a parse failure, an invalid child, a
//! near-duplicate the novelty gate refused, a child no better than its
//! parent). The bandit starts from the configured weights: until every
//! member has `warm_up` outcomes, members are drawn by weight as a fixed
//! ensemble draws them. Its state is a pure function of the outcomes it was
//! told, in order, so a resumed run rebuilds it from its genomes.

use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use crate::engine::rng::SearchRng;

/// How an ensemble shares calls among its models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weights {
    /// Each call goes to a member drawn by its configured weight.
    #[default]
    Fixed,
    /// A bandit learns the shares (see the module docs).
    Adaptive,
}

impl Weights {
    pub fn is_fixed(&self) -> bool {
        *self == Self::Fixed
    }
}

/// The bandit's algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BanditPolicy {
    /// Draw each member's success rate from its Beta posterior, take the
    /// highest draw.
    #[default]
    Thompson,
    /// The highest upper confidence bound: mean + c·√(2 ln N / n).
    Ucb1,
}

/// `llm.bandit`: how adaptive weights learn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BanditSettings {
    pub policy: BanditPolicy,
    /// Rank members by success per dollar (per token when no price is
    /// known) instead of success per call.
    pub per_dollar: bool,
    /// Outcomes each member gets, drawn by the configured weights, before
    /// the bandit decides.
    pub warm_up: u32,
    /// UCB1's exploration constant c.
    pub exploration: f64,
}

impl Default for BanditSettings {
    fn default() -> Self {
        Self {
            policy: BanditPolicy::Thompson,
            per_dollar: false,
            warm_up: 2,
            exploration: 1.0,
        }
    }
}

impl BanditSettings {
    /// Problems with the values: `(field under llm.bandit, message)`.
    pub fn problems(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        if self.warm_up > 1000 {
            out.push(("warm_up", "must be at most 1000"));
        }
        if !(self.exploration.is_finite() && self.exploration >= 0.0 && self.exploration <= 100.0) {
            out.push(("exploration", "must be between 0 and 100"));
        }
        out
    }
}

/// What became of one call's child, told to the model that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOutcome {
    /// The member that answered (`ModelReply::model`).
    pub model: String,
    /// The child was valid and fitter than its parent.
    pub improved: bool,
    /// What the call cost, when a price is known.
    pub cost_usd: Option<f64>,
    pub tokens: u64,
}

/// One member's record.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Arm {
    pub calls: u64,
    pub successes: u64,
    pub cost_usd: f64,
    pub tokens: u64,
}

impl Arm {
    fn rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.successes as f64 / self.calls as f64
        }
    }
}

/// The bandit over an ensemble's members.
#[derive(Clone, Debug)]
pub struct Bandit {
    settings: BanditSettings,
    weights: Vec<f64>,
    arms: Vec<Arm>,
}

impl Bandit {
    /// The same bandit before any outcome (its settings and weights).
    #[must_use]
    pub fn fresh(&self) -> Self {
        Self::new(self.settings.clone(), self.weights.clone())
    }

    /// A bandit over members with these configured weights (all > 0).
    pub fn new(settings: BanditSettings, weights: Vec<f64>) -> Self {
        let arms = vec![Arm::default(); weights.len()];
        Self {
            settings,
            weights,
            arms,
        }
    }

    pub fn arms(&self) -> &[Arm] {
        &self.arms
    }

    pub fn observe(&mut self, arm: usize, outcome: &ModelOutcome) {
        if let Some(a) = self.arms.get_mut(arm) {
            a.calls += 1;
            a.successes += u64::from(outcome.improved);
            a.cost_usd += outcome.cost_usd.unwrap_or(0.0);
            a.tokens += outcome.tokens;
        }
    }

    /// The member for the next call; `rng` is the call's own generator.
    pub fn choose(&self, rng: &mut SearchRng) -> usize {
        let warm = self.settings.warm_up as u64;
        if self.arms.iter().any(|a| a.calls < warm) {
            return by_weight(&self.weights, rng.random::<f64>());
        }
        let costs = self.relative_costs();
        let total: u64 = self.arms.iter().map(|a| a.calls).sum();
        let mut best = (f64::NEG_INFINITY, 0);
        for (i, arm) in self.arms.iter().enumerate() {
            let value = match self.settings.policy {
                BanditPolicy::Thompson => beta(
                    1.0 + arm.successes as f64,
                    1.0 + (arm.calls - arm.successes) as f64,
                    rng,
                ),
                BanditPolicy::Ucb1 => {
                    if arm.calls == 0 {
                        f64::INFINITY
                    } else {
                        arm.rate()
                            + self.settings.exploration
                                * (2.0 * (total.max(1) as f64).ln() / arm.calls as f64).sqrt()
                    }
                }
            };
            let value = value / costs[i];
            // Ties go to the heavier configured weight, then the first.
            let tie = value == best.0 && self.weights[i] > self.weights[best.1];
            if value > best.0 || tie {
                best = (value, i);
            }
        }
        best.1
    }

    /// Each member's mean cost per call relative to the members' average
    /// (all 1 unless `per_dollar`): dollars when every member has a price,
    /// else tokens.
    fn relative_costs(&self) -> Vec<f64> {
        let n = self.arms.len();
        if !self.settings.per_dollar {
            return vec![1.0; n];
        }
        let priced = self.arms.iter().all(|a| a.cost_usd > 0.0);
        let per_call: Vec<f64> = self
            .arms
            .iter()
            .map(|a| {
                let spent = if priced { a.cost_usd } else { a.tokens as f64 };
                if a.calls == 0 {
                    0.0
                } else {
                    spent / a.calls as f64
                }
            })
            .collect();
        let known: Vec<f64> = per_call.iter().copied().filter(|c| *c > 0.0).collect();
        if known.is_empty() {
            return vec![1.0; n];
        }
        let mean = known.iter().sum::<f64>() / known.len() as f64;
        per_call
            .into_iter()
            .map(|c| if c > 0.0 { c / mean } else { 1.0 })
            .collect()
    }
}

/// Index drawn by `weights` for a uniform `u` in [0, 1).
pub fn by_weight(weights: &[f64], u: f64) -> usize {
    let total: f64 = weights.iter().sum();
    let target = u * total;
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if target < acc {
            return i;
        }
    }
    weights.len().saturating_sub(1)
}

/// A draw from Beta(a, b), a, b ≥ 1, as X / (X + Y) of two Gamma draws.
fn beta(a: f64, b: f64, rng: &mut SearchRng) -> f64 {
    let x = gamma(a, rng);
    let y = gamma(b, rng);
    if x + y > 0.0 { x / (x + y) } else { 0.5 }
}

/// A draw from Gamma(shape, 1) for shape ≥ 1 (Marsaglia and Tsang).
fn gamma(shape: f64, rng: &mut SearchRng) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u: f64 = rng.random();
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SearchRng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::seeded;

    fn outcome(improved: bool, cost: f64) -> ModelOutcome {
        ModelOutcome {
            model: String::new(),
            improved,
            cost_usd: Some(cost),
            tokens: 100,
        }
    }

    /// Calls to each member over `n` rounds where member i succeeds with
    /// probability `rates[i]` (drawn from a fixed generator).
    fn simulate(settings: BanditSettings, rates: &[f64], costs: &[f64], n: usize) -> Vec<u64> {
        let mut bandit = Bandit::new(settings, vec![1.0; rates.len()]);
        let mut world = seeded(7);
        for round in 0..n {
            let i = bandit.choose(&mut seeded(round as u64));
            let improved = world.random::<f64>() < rates[i];
            bandit.observe(i, &outcome(improved, costs[i]));
        }
        bandit.arms().iter().map(|a| a.calls).collect()
    }

    #[test]
    fn both_policies_move_calls_to_the_better_member() {
        for policy in [BanditPolicy::Thompson, BanditPolicy::Ucb1] {
            let settings = BanditSettings {
                policy,
                exploration: 0.5,
                ..BanditSettings::default()
            };
            let calls = simulate(settings, &[0.4, 0.05], &[1.0, 1.0], 300);
            assert!(calls[0] > 3 * calls[1], "{policy:?}: {calls:?}");
        }
    }

    #[test]
    fn per_dollar_prefers_the_cheaper_of_two_equally_good_members() {
        let settings = BanditSettings {
            per_dollar: true,
            ..BanditSettings::default()
        };
        let calls = simulate(settings, &[0.3, 0.3], &[0.01, 0.001], 300);
        assert!(calls[1] > 2 * calls[0], "{calls:?}");
    }

    #[test]
    fn warm_up_draws_by_the_configured_weights() {
        let bandit = Bandit::new(BanditSettings::default(), vec![3.0, 1.0]);
        let mut counts = [0u32; 2];
        for seed in 0..4000 {
            counts[bandit.choose(&mut seeded(seed))] += 1;
        }
        let share = f64::from(counts[0]) / 4000.0;
        assert!((share - 0.75).abs() < 0.03, "{counts:?}");
        assert_eq!(by_weight(&[1.0, 1.0], 0.999_999_999), 1);
    }

    #[test]
    fn beta_draws_have_the_right_mean() {
        let mut rng = seeded(1);
        let n = 20_000;
        let mean = (0..n).map(|_| beta(3.0, 7.0, &mut rng)).sum::<f64>() / f64::from(n);
        assert!((mean - 0.3).abs() < 0.01, "{mean}");
    }
}
