//! The statistics of a leaderboard: a percentile bootstrap confidence
//! interval of the mean (seeded, so the same runs give the same interval) and
//! the Mann–Whitney U test of one card's scores against the baseline's.

use rand::RngExt as _;

use crate::engine::rng::seeded;

/// Resamples drawn for a bootstrap interval.
pub const BOOTSTRAP_RESAMPLES: usize = 4000;

/// The significance level the verdict uses (two-sided).
pub const ALPHA: f64 = 0.05;

/// The arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// A mean with its 95 % bootstrap interval.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// The mean of `values` with its 95 % bootstrap interval drawn from a
/// generator seeded with `seed`; `None` for no values.
pub fn estimate(values: &[f64], seed: u64) -> Option<Estimate> {
    let mean = mean(values)?;
    let (ci_low, ci_high) = bootstrap_ci(values, seed)?;
    Some(Estimate {
        mean,
        ci_low,
        ci_high,
    })
}

/// The median; `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some(f64::midpoint(v[n / 2 - 1], v[n / 2])),
    }
}

/// A 95 % percentile bootstrap interval of the mean of `values`, drawn from
/// a generator seeded with `seed`. One value gives the point itself.
pub fn bootstrap_ci(values: &[f64], seed: u64) -> Option<(f64, f64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mut rng = seeded(seed);
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| (0..n).map(|_| values[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let i = (q * (means.len() - 1) as f64).round() as usize;
        means[i.min(means.len() - 1)]
    };
    Some((at(0.025), at(0.975)))
}

/// The outcome of comparing a card with the baseline.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    /// U of the card's sample (the number of pairs, card vs baseline, the
    /// card wins; a tie counts one half).
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// "exact" (every split of the pooled scores) or "normal approximation".
    pub method: String,
    /// "better", "worse" or "no difference at this budget".
    pub verdict: String,
}

/// Pooled samples up to this size get the exact permutation p-value.
const EXACT_UP_TO: usize = 20;

/// U of `a` against `b`: pairs `a` wins, ties counting one half.
fn u_statistic(a: &[f64], b: &[f64]) -> f64 {
    let mut u = 0.0;
    for x in a {
        for y in b {
            match x.total_cmp(y) {
                std::cmp::Ordering::Greater => u += 1.0,
                std::cmp::Ordering::Equal => u += 0.5,
                std::cmp::Ordering::Less => {}
            }
        }
    }
    u
}

/// The Mann–Whitney U test of `card` against `baseline` (higher is better),
/// two-sided. Small samples get the exact permutation distribution of U
/// (ties included); larger ones the normal approximation with the tie
/// correction. `None` when either sample is empty.
pub fn mann_whitney(card: &[f64], baseline: &[f64]) -> Option<Comparison> {
    let (n1, n2) = (card.len(), baseline.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let u = u_statistic(card, baseline);
    let centre = (n1 * n2) as f64 / 2.0;
    let (p_value, method) = if n1 + n2 <= EXACT_UP_TO {
        let pooled: Vec<f64> = card.iter().chain(baseline).copied().collect();
        let observed = (u - centre).abs();
        let (mut extreme, mut total) = (0u64, 0u64);
        for_each_split(pooled.len(), n1, &mut |chosen: &[bool]| {
            let (a, b): (Vec<f64>, Vec<f64>) = {
                let mut a = Vec::with_capacity(n1);
                let mut b = Vec::with_capacity(n2);
                for (v, &c) in pooled.iter().zip(chosen) {
                    if c { a.push(*v) } else { b.push(*v) }
                }
                (a, b)
            };
            total += 1;
            if (u_statistic(&a, &b) - centre).abs() >= observed - 1e-9 {
                extreme += 1;
            }
        });
        (extreme as f64 / total as f64, "exact")
    } else {
        let pooled: Vec<f64> = card.iter().chain(baseline).copied().collect();
        let n = pooled.len() as f64;
        let mut sorted = pooled.clone();
        sorted.sort_by(f64::total_cmp);
        let mut tie_term = 0.0;
        let mut i = 0;
        while i < sorted.len() {
            let j = sorted[i..]
                .iter()
                .take_while(|v| v.total_cmp(&sorted[i]).is_eq())
                .count();
            let t = j as f64;
            tie_term += t * t * t - t;
            i += j;
        }
        let variance = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
        let p = if variance <= 0.0 {
            1.0
        } else {
            let z = ((u - centre).abs() - 0.5).max(0.0) / variance.sqrt();
            (2.0 * normal_upper_tail(z)).min(1.0)
        };
        (p, "normal approximation")
    };
    let verdict = if p_value < ALPHA && u > centre {
        "better"
    } else if p_value < ALPHA && u < centre {
        "worse"
    } else {
        "no difference at this budget"
    };
    Some(Comparison {
        u,
        p_value,
        method: method.to_owned(),
        verdict: verdict.to_owned(),
    })
}

/// Call `f` with every way of choosing `k` of `n` items (as a mask).
fn for_each_split(n: usize, k: usize, f: &mut dyn FnMut(&[bool])) {
    fn go(at: usize, left: usize, mask: &mut Vec<bool>, f: &mut dyn FnMut(&[bool])) {
        if at == mask.len() {
            if left == 0 {
                f(mask);
            }
            return;
        }
        if mask.len() - at < left {
            return;
        }
        if left > 0 {
            mask[at] = true;
            go(at + 1, left - 1, mask, f);
            mask[at] = false;
        }
        go(at + 1, left, mask, f);
    }
    let mut mask = vec![false; n];
    go(0, k, &mut mask, f);
}

/// P(Z > z) for a standard normal Z (Abramowitz–Stegun 7.1.26 on erfc,
/// absolute error below 1.5e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_interval_holds_the_mean_and_is_reproducible() {
        let v = [0.8, 0.82, 0.9, 0.85, 0.7];
        let m = mean(&v).unwrap_or_default();
        let (lo, hi) = bootstrap_ci(&v, 7).unwrap_or_default();
        assert!(lo <= m && m <= hi && lo < hi, "{lo} {m} {hi}");
        assert_eq!(bootstrap_ci(&v, 7), Some((lo, hi)));
        assert_eq!(bootstrap_ci(&[3.0], 7), Some((3.0, 3.0)));
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }

    #[test]
    fn mann_whitney_matches_known_values() {
        // Completely separated 5 vs 5: U = 25, exact two-sided p = 2/252.
        let a = [6.0, 7.0, 8.0, 9.0, 10.0];
        let b = [1.0, 2.0, 3.0, 4.0, 5.0];
        let c = mann_whitney(&a, &b).unwrap_or_else(|| unreachable!());
        assert_eq!(c.u, 25.0);
        assert!((c.p_value - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(c.verdict, "better");
        let c = mann_whitney(&b, &a).unwrap_or_else(|| unreachable!());
        assert_eq!((c.u, c.verdict.as_str()), (0.0, "worse"));
        // Identical samples: no difference, p = 1.
        let c = mann_whitney(&a, &a).unwrap_or_else(|| unreachable!());
        assert_eq!(c.u, 12.5);
        assert!((c.p_value - 1.0).abs() < 1e-12);
        assert_eq!(c.verdict, "no difference at this budget");
        // Large samples: normal approximation; separated groups of 15
        // give z = (112.5 - 0.5) / sqrt(15*15*31/12) = 4.6455, p = erfc(z/√2) = 3.392e-6.
        let a: Vec<f64> = (0..15).map(f64::from).collect();
        let b: Vec<f64> = (15..30).map(f64::from).collect();
        let c = mann_whitney(&b, &a).unwrap_or_else(|| unreachable!());
        assert_eq!(c.method, "normal approximation");
        assert!((c.p_value - 3.392e-6).abs() < 1e-8, "{}", c.p_value);
    }
}
