//! The genealogy tree's layout: every genome placed under its parent, leaves
//! side by side in depth-first order (so edges never cross and each depth's
//! nodes are sorted by x), a parent centred over its first and last child, a
//! collapsed subtree one leaf. Plain data, rebuilt in O(n).

use std::collections::HashSet;

use egui::Color32;

use crate::engine::genome::GenomeId;
use crate::studio::run::history::RunHistory;
use crate::studio::theme::data;

/// No position.
pub const NONE: u32 = u32::MAX;

/// The cached layout: world x in leaf slots, world y in tree depths.
#[derive(Default)]
pub struct Layout {
    /// x of each genome (by position in the history); NaN when hidden.
    pub x: Vec<f32>,
    /// Depth of each genome; `NONE` when hidden.
    pub depth: Vec<u32>,
    /// Position of each genome's parent, `NONE` for a root.
    pub parent: Vec<u32>,
    /// Descendants hidden under a collapsed genome (0 otherwise).
    pub hidden: Vec<u32>,
    /// Fill colour of each genome.
    pub color: Vec<Color32>,
    /// Positions per depth, sorted by x.
    pub rows: Vec<Vec<u32>>,
    /// Whether any genome belongs to an island.
    pub has_islands: bool,
    /// Leaf slots used (the tree's width).
    pub width: f32,
    /// How many genomes the layout covers.
    pub len: usize,
    /// `history.version` it was built from.
    pub version: u64,
}

impl Layout {
    pub fn build(history: &RunHistory, collapsed: &HashSet<GenomeId>) -> Self {
        let genomes = &history.genomes;
        let n = genomes.len();
        let mut parent = vec![NONE; n];
        let mut child_count = vec![0u32; n];
        for (i, g) in genomes.iter().enumerate() {
            if let Some(p) = g.parent_id.and_then(|p| history.position(p))
                && p != i
            {
                parent[i] = p as u32;
                child_count[p] += 1;
            }
        }
        // Children in CSR form, in admission order.
        let mut start = vec![0u32; n + 1];
        for i in 0..n {
            start[i + 1] = start[i] + child_count[i];
        }
        let mut fill = start.clone();
        let mut children = vec![0u32; start[n] as usize];
        for (i, &p) in parent.iter().enumerate() {
            if p != NONE {
                let slot = &mut fill[p as usize];
                children[*slot as usize] = i as u32;
                *slot += 1;
            }
        }
        // Subtree sizes (parents come before children in admission order;
        // anything else only makes a badge count short).
        let mut size = vec![1u32; n];
        for i in (0..n).rev() {
            let p = parent[i];
            if p != NONE && (p as usize) < i {
                size[p as usize] += size[i];
            }
        }
        let (lo, hi) = genomes
            .iter()
            .filter_map(|g| g.fitness().filter(|f| f.is_finite()))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
                (a.min(f), b.max(f))
            });
        let span = if hi > lo { hi - lo } else { 1.0 };
        let has_islands = genomes.iter().any(|g| g.metadata.island.is_some());
        let color = genomes
            .iter()
            .map(|g| match g.fitness().filter(|f| f.is_finite() && g.valid) {
                Some(f) => data::score(((f - lo) / span) as f32),
                None if g.valid => data::score(0.0),
                None => data::BAD,
            })
            .collect();

        let mut x = vec![f32::NAN; n];
        let mut depth = vec![NONE; n];
        let mut hidden = vec![0u32; n];
        let mut rows: Vec<Vec<u32>> = Vec::new();
        let mut visited = vec![false; n];
        let mut next_leaf = 0.0f32;
        // Iterative DFS: (position, index of the next child to visit).
        let mut stack: Vec<(u32, u32)> = Vec::new();
        for root in 0..n {
            if parent[root] != NONE || visited[root] {
                continue;
            }
            stack.push((root as u32, 0));
            while let Some(top) = stack.len().checked_sub(1) {
                let d = top as u32;
                let (pos, next) = stack[top];
                let p = pos as usize;
                if next == 0 && !visited[p] {
                    visited[p] = true;
                    depth[p] = d;
                    if rows.len() <= d as usize {
                        rows.resize_with(d as usize + 1, Vec::new);
                    }
                    rows[d as usize].push(pos);
                    if collapsed.contains(&genomes[p].id) {
                        hidden[p] = size[p].saturating_sub(1);
                    }
                }
                let kids = &children[start[p] as usize..start[p + 1] as usize];
                let open = !collapsed.contains(&genomes[p].id);
                let child = if open {
                    kids.get(next as usize).copied()
                } else {
                    None
                };
                match child {
                    Some(c) => {
                        stack[top].1 += 1;
                        if !visited[c as usize] {
                            stack.push((c, 0));
                        }
                    }
                    None => {
                        let placed = |c: &&u32| !x[**c as usize].is_nan();
                        let first = kids.iter().find(placed).filter(|_| open);
                        let last = kids.iter().rev().find(placed).filter(|_| open);
                        x[p] = match (first, last) {
                            (Some(a), Some(b)) => (x[*a as usize] + x[*b as usize]) / 2.0,
                            _ => {
                                next_leaf += 1.0;
                                next_leaf - 1.0
                            }
                        };
                        stack.pop();
                    }
                }
            }
        }
        Self {
            x,
            depth,
            parent,
            hidden,
            color,
            rows,
            width: next_leaf.max(1.0),
            has_islands,
            len: n,
            version: history.version,
        }
    }

    pub fn is_placed(&self, pos: usize) -> bool {
        self.depth.get(pos).is_some_and(|d| *d != NONE)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::events::RunEvent;
    use crate::engine::genome::{FITNESS_KEY, Genome};
    use crate::engine::selection::PolicyStatus;

    fn history(parents: &[Option<GenomeId>]) -> RunHistory {
        let mut h = RunHistory::new();
        for (i, p) in parents.iter().enumerate() {
            let mut g = Genome {
                id: i as u64,
                parent_id: *p,
                iteration: i as u64,
                valid: i != 3,
                ..Genome::default()
            };
            g.scores.insert(FITNESS_KEY.into(), i as f64);
            h.apply(RunEvent::GenomeAdmitted {
                genome: Arc::new(g),
                best_id: None,
                best_score: None,
                iterations_done: i as u64,
                policy: PolicyStatus::default(),
                active: vec![],
            });
        }
        h
    }

    #[test]
    fn parents_sit_over_their_children_and_rows_are_sorted_without_crossings() {
        // 0 ─┬─ 1 ─┬─ 3
        //    │     └─ 4
        //    └─ 2 ─── 5 ─── 6
        let h = history(&[None, Some(0), Some(0), Some(1), Some(1), Some(2), Some(5)]);
        let l = Layout::build(&h, &HashSet::new());
        assert_eq!(l.depth, vec![0, 1, 1, 2, 2, 2, 3]);
        assert_eq!(l.rows[2], vec![3, 4, 5]);
        assert_eq!((l.x[3], l.x[4], l.x[6]), (0.0, 1.0, 2.0));
        assert_eq!(l.x[1], 0.5);
        assert_eq!(l.x[5], 2.0);
        assert_eq!(l.x[0], (0.5 + 2.0) / 2.0);
        assert_eq!(l.width, 3.0);
        for row in &l.rows {
            assert!(
                row.windows(2)
                    .all(|w| l.x[w[0] as usize] < l.x[w[1] as usize])
            );
            // no crossings: parents' x is monotone along the row
            let px: Vec<f32> = row
                .iter()
                .filter(|p| l.parent[**p as usize] != NONE)
                .map(|p| l.x[l.parent[*p as usize] as usize])
                .collect();
            assert!(px.windows(2).all(|w| w[0] <= w[1]), "{px:?}");
        }
        assert_eq!(l.color[3], data::BAD);
        assert_eq!(l.color[6], data::score(1.0));
    }

    #[test]
    fn a_collapsed_subtree_is_one_leaf_with_its_hidden_count() {
        let h = history(&[None, Some(0), Some(0), Some(1), Some(1), Some(2), Some(5)]);
        let l = Layout::build(&h, &HashSet::from([1]));
        assert_eq!(l.hidden[1], 2);
        assert!(!l.is_placed(3) && !l.is_placed(4));
        assert_eq!(l.rows[2], vec![5]);
        assert_eq!(l.width, 2.0);
    }
}
