//! A folder genome (a repository task's program) in the inspector: its files
//! as a list, changed ones marked with their + / − line counts against the
//! genome diffed with (the parent or a picked genome); the whole tree's diff,
//! one changed file's diff, or any file's text.

use egui::RichText;

use super::diff_view::{self, DiffMode};
use crate::engine::tree::{ChangeKind, FileChange, Tree};
use crate::studio::theme::data;

/// Which file the inspector shows (`None`: the whole tree).
pub type FileChoice = Option<String>;

/// One row of the file list: the path, its change (if any) and whether it
/// is binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRow {
    pub path: String,
    pub change: Option<FileChange>,
}

/// The rows of `tree`'s file list against `base`: every file of `tree`,
/// plus the ones it deleted, in path order.
pub fn file_rows(tree: &Tree, base: Option<&Tree>) -> Vec<FileRow> {
    let changes = base.map(|b| tree.changes_from(b)).unwrap_or_default();
    let mut rows: Vec<FileRow> = tree
        .files()
        .map(|(path, _)| FileRow {
            path: path.to_owned(),
            change: changes.iter().find(|c| c.path == path).cloned(),
        })
        .collect();
    for c in changes.iter().filter(|c| c.kind == ChangeKind::Deleted) {
        rows.push(FileRow {
            path: c.path.clone(),
            change: Some(c.clone()),
        });
    }
    rows.sort_by(|a, b| a.path.cmp(&b.path));
    rows
}

/// The file list; a click chooses a file (the first row chooses the whole
/// tree). `diffing`: the list is for a diff, and lists the changed files
/// only (every file is in the Program tab's list).
fn list_ui(ui: &mut egui::Ui, rows: &[FileRow], choice: &mut FileChoice, diffing: bool) {
    let changed = rows.iter().filter(|r| r.change.is_some()).count();
    egui::ScrollArea::vertical()
        .id_salt("genome-files")
        .max_height(120.0)
        .auto_shrink([false, true])
        .show(ui, |ui| {
            let whole = if diffing {
                format!("whole tree ({changed} changed of {} files)", rows.len())
            } else {
                format!("whole tree ({} files)", rows.len())
            };
            if ui.selectable_label(choice.is_none(), whole).clicked() {
                *choice = None;
            }
            for row in rows.iter().filter(|r| !diffing || r.change.is_some()) {
                ui.horizontal(|ui| {
                    let mark = match row.change.as_ref().map(|c| c.kind) {
                        Some(ChangeKind::Added) => {
                            RichText::new("A").color(data::ADDED).monospace()
                        }
                        Some(ChangeKind::Deleted) => {
                            RichText::new("D").color(data::REMOVED).monospace()
                        }
                        Some(ChangeKind::Modified) => RichText::new("M").strong().monospace(),
                        None => RichText::new(" ").monospace(),
                    };
                    ui.label(mark);
                    let selected = choice.as_deref() == Some(row.path.as_str());
                    let text = if row.change.is_some() {
                        RichText::new(&row.path).strong()
                    } else {
                        RichText::new(&row.path)
                    };
                    if ui.selectable_label(selected, text).clicked() {
                        *choice = Some(row.path.clone());
                    }
                    if let Some(c) = &row.change {
                        if c.binary {
                            ui.label(RichText::new("binary").weak());
                        } else {
                            ui.label(RichText::new(format!("+{}", c.added)).color(data::ADDED));
                            ui.label(RichText::new(format!("−{}", c.removed)).color(data::REMOVED));
                        }
                    }
                });
            }
        });
}

fn text_of(tree: &Tree, path: &str) -> Option<String> {
    match tree.get(path) {
        Some(b) => b.as_text().map(str::to_owned),
        None => Some(String::new()),
    }
}

/// The diff of a folder genome against `base` (the parent or a picked
/// genome): the file list, then the whole tree's changed files or the
/// chosen file.
pub fn diff_ui(
    ui: &mut egui::Ui,
    tree: &Tree,
    base: &Tree,
    choice: &mut FileChoice,
    mode: DiffMode,
) {
    let rows = file_rows(tree, Some(base));
    list_ui(ui, &rows, choice, true);
    ui.separator();
    let shown: Vec<&FileRow> = match choice.as_deref() {
        Some(path) => rows.iter().filter(|r| r.path == path).collect(),
        None => rows.iter().filter(|r| r.change.is_some()).collect(),
    };
    if shown.is_empty() || shown.iter().all(|r| r.change.is_none()) && choice.is_none() {
        ui.label(RichText::new("No file differs.").weak());
        return;
    }
    for row in shown {
        ui.push_id(&row.path, |ui| {
            ui.label(RichText::new(&row.path).strong().monospace());
            match (text_of(base, &row.path), text_of(tree, &row.path)) {
                _ if row.change.is_none() => {
                    ui.label(RichText::new("unchanged").weak());
                }
                (Some(old), Some(new)) => diff_view::diff_ui(ui, &old, &new, mode),
                _ => {
                    ui.label(RichText::new("a binary file: changed, not shown").weak());
                }
            }
            ui.add_space(6.0);
        });
    }
}

/// A folder genome's files and the text of the chosen one (the whole tree:
/// every text file under its path).
pub fn program_ui(
    ui: &mut egui::Ui,
    tree: &Tree,
    base: Option<&Tree>,
    choice: &mut FileChoice,
    language: &str,
) {
    let rows = file_rows(tree, base);
    list_ui(ui, &rows, choice, false);
    ui.separator();
    let theme = egui_extras::syntax_highlighting::CodeTheme::from_memory(ui.ctx(), ui.style());
    match choice.as_deref() {
        None => {
            egui_extras::syntax_highlighting::code_view_ui(ui, &theme, &tree.text(), language);
        }
        Some(path) => match tree.get(path) {
            Some(blob) => match blob.as_text() {
                Some(text) => {
                    let lang = path.rsplit_once('.').map_or(language, |(_, ext)| ext);
                    egui_extras::syntax_highlighting::code_view_ui(ui, &theme, text, lang);
                }
                None => {
                    ui.label(
                        RichText::new(format!(
                            "{path}: a binary file of {} bytes, not shown",
                            blob.len()
                        ))
                        .weak(),
                    );
                }
            },
            None => {
                ui.label(RichText::new(format!("{path}: deleted in this genome")).weak());
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_mark_changes_and_list_deleted_files() {
        let parent = Tree::from_texts(
            [("a.py", "1\n2\n"), ("b.py", "b\n"), ("gone.py", "g\n")]
                .into_iter()
                .map(|(p, t)| (p.to_owned(), t.to_owned()))
                .collect(),
        );
        let mut texts = parent.texts();
        texts.insert("a.py".into(), "1\nTWO\n3\n".into());
        texts.remove("gone.py");
        texts.insert("new.py".into(), "n\n".into());
        let child = parent.with_texts(texts);
        let rows = file_rows(&child, Some(&parent));
        type Counted = Option<(ChangeKind, usize, usize)>;
        let summary: Vec<(&str, Counted)> = rows
            .iter()
            .map(|r| {
                (
                    r.path.as_str(),
                    r.change.as_ref().map(|c| (c.kind, c.added, c.removed)),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a.py", Some((ChangeKind::Modified, 2, 1))),
                ("b.py", None),
                ("gone.py", Some((ChangeKind::Deleted, 0, 1))),
                ("new.py", Some((ChangeKind::Added, 1, 0))),
            ]
        );
        assert!(file_rows(&child, None).iter().all(|r| r.change.is_none()));
    }
}
