//! A line diff of two programs, unified or side by side, with line numbers
//! on both sides and three lines of context around each change.

use crate::studio::theme::data;
use egui::{Color32, RichText};
use similar::{Algorithm, DiffTag, capture_diff_slices, group_diff_ops};

/// Lines of context kept around each change.
pub const CONTEXT: usize = 3;

/// How a diff is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DiffMode {
    /// One column: removed lines (`-`) then added ones (`+`).
    #[default]
    Unified,
    /// Old on the left, new on the right, changed lines facing each other.
    SideBySide,
}

/// One side of a side-by-side row: a line number (1-based) and its text.
pub type Side<'a> = Option<(usize, &'a str)>;

/// One row of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row<'a> {
    /// A gap between two hunks (unchanged lines not shown).
    Gap,
    /// The same line on both sides.
    Same(usize, usize, &'a str),
    /// Side by side: a removed line (left), an added one (right), or both.
    Changed(Side<'a>, Side<'a>),
}

/// The diff of `old` against `new` as rows: unified (removed lines of a
/// change before its added ones, each on a row of its own) or side by side
/// (the k-th removed line facing the k-th added one).
pub fn rows<'a>(old: &'a str, new: &'a str, mode: DiffMode) -> Vec<Row<'a>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = capture_diff_slices(Algorithm::Myers, &a, &b);
    let mut out = Vec::new();
    for (k, group) in group_diff_ops(ops, CONTEXT).into_iter().enumerate() {
        if k > 0 || group.first().is_some_and(|op| op.old_range().start > 0) {
            out.push(Row::Gap);
        }
        for op in group {
            let (tag, ra, rb) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => {
                    for (i, j) in ra.zip(rb) {
                        out.push(Row::Same(i + 1, j + 1, a[i]));
                    }
                }
                _ => match mode {
                    DiffMode::Unified => {
                        for i in ra {
                            out.push(Row::Changed(Some((i + 1, a[i])), None));
                        }
                        for j in rb {
                            out.push(Row::Changed(None, Some((j + 1, b[j]))));
                        }
                    }
                    DiffMode::SideBySide => {
                        let n = ra.len().max(rb.len());
                        for k in 0..n {
                            let l = ra.clone().nth(k).map(|i| (i + 1, a[i]));
                            let r = rb.clone().nth(k).map(|j| (j + 1, b[j]));
                            out.push(Row::Changed(l, r));
                        }
                    }
                },
            }
        }
    }
    out
}

fn number(ui: &mut egui::Ui, n: Option<usize>) {
    ui.label(
        RichText::new(n.map_or_else(String::new, |n| n.to_string()))
            .monospace()
            .weak(),
    );
}

fn text(ui: &mut egui::Ui, s: &str, bg: Option<Color32>) {
    let mut t = RichText::new(s).monospace();
    if let Some(bg) = bg {
        t = t.background_color(bg);
    }
    ui.label(t);
}

/// Draw the diff of two programs, `old` against `new`. The caller puts it
/// in a scroll area.
pub fn diff_ui(ui: &mut egui::Ui, old: &str, new: &str, mode: DiffMode) {
    texts_diff_ui(ui, old, new, mode, "The two programs are identical.");
}

/// Draw the diff of `old` against `new`, or `identical` when they are.
pub fn texts_diff_ui(ui: &mut egui::Ui, old: &str, new: &str, mode: DiffMode, identical: &str) {
    let rows = rows(old, new, mode);
    if rows.is_empty() {
        ui.label(RichText::new(identical).weak());
        return;
    }
    let columns = match mode {
        DiffMode::Unified => 3,
        DiffMode::SideBySide => 4,
    };
    egui::Grid::new(("genome-diff", mode == DiffMode::Unified))
        .num_columns(columns)
        .spacing([8.0, 0.0])
        .show(ui, |ui| {
            for row in rows {
                match (row, mode) {
                    (Row::Gap, _) => {
                        for _ in 0..columns {
                            ui.label(RichText::new("…").weak());
                        }
                    }
                    (Row::Same(i, j, s), DiffMode::Unified) => {
                        number(ui, Some(i));
                        number(ui, Some(j));
                        text(ui, &format!("  {s}"), None);
                    }
                    (Row::Same(i, j, s), DiffMode::SideBySide) => {
                        number(ui, Some(i));
                        text(ui, s, None);
                        number(ui, Some(j));
                        text(ui, s, None);
                    }
                    (Row::Changed(l, r), DiffMode::Unified) => {
                        number(ui, l.map(|l| l.0));
                        number(ui, r.map(|r| r.0));
                        match (l, r) {
                            (Some((_, s)), _) => {
                                text(ui, &format!("- {s}"), Some(data::REMOVED_BG))
                            }
                            (None, Some((_, s))) => {
                                text(ui, &format!("+ {s}"), Some(data::ADDED_BG))
                            }
                            (None, None) => text(ui, "", None),
                        }
                    }
                    (Row::Changed(l, r), DiffMode::SideBySide) => {
                        number(ui, l.map(|l| l.0));
                        match l {
                            Some((_, s)) => text(ui, s, Some(data::REMOVED_BG)),
                            None => text(ui, "", None),
                        }
                        number(ui, r.map(|r| r.0));
                        match r {
                            Some((_, s)) => text(ui, s, Some(data::ADDED_BG)),
                            None => text(ui, "", None),
                        }
                    }
                }
                ui.end_row();
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    const NEW: &str = "a\nb\nC\nd\ne\nf\ng\nh\ni\nj\nk\n";

    #[test]
    fn unified_rows_number_both_sides_and_skip_far_context() {
        let r = rows(OLD, NEW, DiffMode::Unified);
        assert_eq!(r[0], Row::Same(1, 1, "a"));
        assert_eq!(r[2], Row::Changed(Some((3, "c")), None));
        assert_eq!(r[3], Row::Changed(None, Some((3, "C"))));
        assert_eq!(r[4], Row::Same(4, 4, "d"));
        // context d e f, then a gap before the second hunk (h i j + k)
        assert_eq!(r[7], Row::Gap);
        assert_eq!(r[8], Row::Same(8, 8, "h"));
        assert_eq!(r.last(), Some(&Row::Changed(None, Some((11, "k")))));
    }

    #[test]
    fn side_by_side_faces_changed_lines_and_identical_programs_have_no_rows() {
        let r = rows(OLD, NEW, DiffMode::SideBySide);
        assert_eq!(r[2], Row::Changed(Some((3, "c")), Some((3, "C"))));
        assert_eq!(r.last(), Some(&Row::Changed(None, Some((11, "k")))));
        assert!(rows(OLD, OLD, DiffMode::SideBySide).is_empty());
    }
}
