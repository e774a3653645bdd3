//! Hypervolume: the size of the region of objective space that a set of
//! programs dominates, bounded by a reference point — one number for a whole
//! front, larger being better, that grows only when the front moves out.
//!
//! Points and the reference are in "higher is better" form
//! ([`Objective::signed`]); a point counts only where it beats the reference
//! on every objective. Exact, by slicing along the last objective (the
//! fronts of a run are small).

use crate::engine::genome::{Genome, Objective};

/// The hypervolume of `points` against `reference` (all of one dimension).
pub fn hypervolume(points: &[Vec<f64>], reference: &[f64]) -> f64 {
    let inside: Vec<&Vec<f64>> = points
        .iter()
        .filter(|p| p.len() == reference.len() && p.iter().zip(reference).all(|(x, r)| x > r))
        .collect();
    slice(&inside, reference)
}

fn slice(points: &[&Vec<f64>], reference: &[f64]) -> f64 {
    let d = reference.len();
    if points.is_empty() || d == 0 {
        return 0.0;
    }
    if d == 1 {
        return points
            .iter()
            .map(|p| p[0])
            .fold(f64::NEG_INFINITY, f64::max)
            - reference[0];
    }
    let last = d - 1;
    let mut sorted: Vec<&Vec<f64>> = points.to_vec();
    sorted.sort_by(|a, b| b[last].total_cmp(&a[last]));
    let mut total = 0.0;
    for i in 0..sorted.len() {
        let floor = sorted.get(i + 1).map_or(reference[last], |p| p[last]);
        let height = sorted[i][last] - floor;
        if height <= 0.0 {
            continue;
        }
        let projected: Vec<Vec<f64>> = sorted[..=i].iter().map(|p| p[..last].to_vec()).collect();
        let refs: Vec<&Vec<f64>> = projected.iter().collect();
        total += height * slice(&refs, &reference[..last]);
    }
    total
}

/// The reference point for `objectives`: each objective's `reference`, else
/// the initial program's value; signed. `None` when neither is known.
pub fn reference_point(objectives: &[Objective], initial: Option<&Genome>) -> Option<Vec<f64>> {
    objectives
        .iter()
        .map(|o| match o.reference {
            Some(r) => Some(match o.direction {
                crate::engine::genome::Direction::Max => r,
                crate::engine::genome::Direction::Min => -r,
            }),
            None => initial.and_then(|g| o.signed(g)),
        })
        .collect()
}

/// The hypervolume of the valid genomes of iterations `0..=i`, for each `i`
/// in `0..=budget` (genomes in any order).
pub fn curve(
    genomes: &[Genome],
    objectives: &[Objective],
    reference: &[f64],
    budget: u64,
) -> Vec<f64> {
    let mut by_iteration: Vec<Vec<Vec<f64>>> = vec![Vec::new(); budget as usize + 1];
    for g in genomes {
        let point: Option<Vec<f64>> = objectives.iter().map(|o| o.signed(g)).collect();
        if let (Some(p), Some(slot)) = (point, by_iteration.get_mut(g.iteration as usize)) {
            slot.push(p);
        }
    }
    let mut front: Vec<Vec<f64>> = Vec::new();
    let mut out = Vec::with_capacity(by_iteration.len());
    let mut value = 0.0;
    for points in by_iteration {
        let mut changed = false;
        for p in points {
            if front
                .iter()
                .any(|f| crate::engine::genome::dominates(f, &p) || *f == p)
            {
                continue;
            }
            front.retain(|f| !crate::engine::genome::dominates(&p, f));
            front.push(p);
            changed = true;
        }
        if changed {
            value = hypervolume(&front, reference);
        }
        out.push(value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_and_three_dimensions_match_the_areas_by_hand() {
        // Two points on a staircase against the origin: 2*1 + 1*(3-1) = 4.
        let pts = vec![vec![2.0, 1.0], vec![1.0, 3.0]];
        assert!((hypervolume(&pts, &[0.0, 0.0]) - 4.0).abs() < 1e-12);
        // A dominated point changes nothing; one outside the reference neither.
        let more = vec![
            vec![2.0, 1.0],
            vec![1.0, 3.0],
            vec![0.5, 0.5],
            vec![-1.0, 9.0],
        ];
        assert!((hypervolume(&more, &[0.0, 0.0]) - 4.0).abs() < 1e-12);
        // A unit cube and a box 2x1x1 overlapping it: volume 2.
        let cube = vec![vec![1.0, 1.0, 1.0], vec![2.0, 1.0, 1.0]];
        assert!((hypervolume(&cube, &[0.0, 0.0, 0.0]) - 2.0).abs() < 1e-12);
        let l = vec![vec![2.0, 1.0, 1.0], vec![1.0, 2.0, 1.0]];
        assert!((hypervolume(&l, &[0.0, 0.0, 0.0]) - 3.0).abs() < 1e-12);
        assert_eq!(hypervolume(&[], &[0.0, 0.0]), 0.0);
    }

    #[test]
    fn the_curve_grows_with_the_front_and_the_reference_follows_directions() {
        use crate::engine::genome::Direction;
        let objectives = vec![
            Objective {
                metric: "q".into(),
                direction: Direction::Max,
                reference: Some(0.0),
            },
            Objective {
                metric: "cost".into(),
                direction: Direction::Min,
                reference: None,
            },
        ];
        let g = |iteration: u64, q: f64, cost: f64| {
            let mut g = Genome {
                iteration,
                valid: true,
                ..Genome::default()
            };
            g.scores.insert("q".into(), q);
            g.scores.insert("cost".into(), cost);
            g
        };
        let genomes = vec![g(0, 1.0, 10.0), g(1, 2.0, 10.0), g(3, 1.0, 4.0)];
        let reference = reference_point(&objectives, genomes.first()).unwrap();
        assert_eq!(reference, vec![0.0, -10.0]);
        // iteration 0: the initial program sits on the reference's cost: 0.
        // iteration 1: still cost 10: 0. iteration 3: q 1 at cost 4: 1 * 6.
        assert_eq!(
            curve(&genomes, &objectives, &reference, 3),
            vec![0.0, 0.0, 0.0, 6.0]
        );
    }
}
