//! How a folder program (a repository task's genome) is shown to the model
//! and what it is asked to reply: the editable files in full, the read-only
//! context files while a character budget lasts, the rest listed by path;
//! edits that name their file, in any of the forms
//! [`crate::engine::text::tree_edits`] reads.

use std::fmt::Write as _;

use super::EditMode;
use crate::engine::task::Markers;
use crate::engine::task::program_folder::{EditOp, ProgramFiles};
use crate::engine::tree::Tree;

/// The fence tag for a file, from its extension.
fn tag_for(path: &str) -> &str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "py" => "python",
        "rs" => "rust",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "js" => "javascript",
        "ts" => "typescript",
        "md" => "markdown",
        "yml" => "yaml",
        "jl" => "julia",
        "sh" => "bash",
        other => other,
    }
}

/// `code` in a fence longer than any backtick run it holds.
pub(super) fn fence(language: &str, code: &str) -> String {
    let longest = code
        .lines()
        .map(|l| l.trim_start().chars().take_while(|c| *c == '`').count())
        .max()
        .unwrap_or(0);
    let ticks = "`".repeat(longest.max(2) + 1);
    format!(
        "{ticks}{language}\n{}\n{ticks}\n",
        code.trim_end_matches('\n')
    )
}

/// Whether the task lets `path` change (every text file when the task says
/// nothing).
fn editable(files: Option<&ProgramFiles>, path: &str) -> bool {
    files.is_none_or(|f| f.rules.check(path, EditOp::Modify).is_ok())
}

fn listed(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The "# Current Program" section for a folder program: each editable file
/// under a `## `path` (editable)` line, then the context files while
/// `context_budget` characters last, then the paths of the files not shown.
pub(super) fn current_program(
    tree: &Tree,
    files: Option<&ProgramFiles>,
    context_budget: usize,
) -> String {
    let mut editable_files = Vec::new();
    let mut context_files = Vec::new();
    let mut not_shown = Vec::new();
    for (path, blob) in tree.files() {
        match blob.as_text() {
            None => not_shown.push(format!("{path} (binary)")),
            Some(text) if text.trim().is_empty() => not_shown.push(format!("{path} (empty)")),
            Some(_) if editable(files, path) => editable_files.push(path.to_owned()),
            Some(_) if files.is_some_and(|f| f.context.iter().any(|c| c == path)) => {
                context_files.push(path.to_owned())
            }
            Some(_) => not_shown.push(path.to_owned()),
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Current Program\nThe program is a folder of {} files. The files you may change are shown in \
         full; read-only files are shown for context.\n",
        tree.len()
    );
    for path in &editable_files {
        let text = tree.text_of(path).unwrap_or_default();
        let _ = writeln!(out, "## `{path}` (editable)");
        out.push_str(&fence(tag_for(path), text));
        out.push('\n');
    }
    let mut left = context_budget;
    for path in context_files {
        let text = tree.text_of(&path).unwrap_or_default();
        let chars = text.chars().count();
        if chars > left {
            not_shown.push(path);
            continue;
        }
        left -= chars;
        let _ = writeln!(out, "## `{path}` (read-only)");
        out.push_str(&fence(tag_for(&path), text));
        out.push('\n');
    }
    if !not_shown.is_empty() {
        not_shown.sort();
        let _ = writeln!(out, "Other files (not shown): {}\n", listed(&not_shown));
    }
    out
}

/// Where files may be added or deleted, as the instructions say it.
fn add_delete_rule(files: Option<&ProgramFiles>) -> String {
    match files {
        Some(f) if !f.evolve_globs.is_empty() => format!(
            "Files may be added or deleted only where they match config.yaml's evolve globs ({}); \
             every other file is read-only.",
            listed(&f.evolve_globs)
        ),
        _ => "Files cannot be added or deleted; only the editable files may change.".to_owned(),
    }
}

/// The instructions for a folder program in `mode`.
pub(super) fn instructions(mode: EditMode, files: Option<&ProgramFiles>, tree: &Tree) -> String {
    let marked = tree
        .files()
        .filter_map(|(_, blob)| blob.as_text())
        .any(|text| Markers::of(text) != Markers::Missing);
    let marker_rule = match marked {
        false => "",
        true => {
            "- In a file with EVOLVE-BLOCK-START / EVOLVE-BLOCK-END markers, only the code between \
             them may change; never remove the markers.\n"
        }
    };
    let mut out = String::new();
    match mode {
        EditMode::Diff => {
            out.push_str(
                "Reply with edits that name their file, in any of these forms:\n\n\
1. SEARCH/REPLACE blocks, each right under a line that holds its file's path:\n\n\
path/of/the/file.py\n\
<<<<<<< SEARCH\n\
<lines copied exactly from that file>\n\
=======\n\
<the replacement lines>\n\
>>>>>>> REPLACE\n\n\
2. A unified diff with `--- a/path` / `+++ b/path` headers and `@@` hunks.\n\n\
3. A patch:\n\n\
*** Begin Patch\n\
*** Update File: path/of/the/file.py\n\
@@ a line the change comes after\n\
\x20context line\n\
-removed line\n\
+added line\n\
*** End Patch\n\n\
(`*** Add File: path` followed by `+` lines creates a file; `*** Delete File: path` removes one.)\n\n\
- Each SEARCH section, and each context or removed line, must match its file character for character, \
including indentation.\n",
            );
            let _ = writeln!(out, "- {}", add_delete_rule(files));
            out.push_str(marker_rule);
            out.push_str(
                "- Keep every edit small and focused; change several files when the idea needs it.\n\
- Briefly explain the idea before the edits.\n",
            );
        }
        EditMode::FullRewrite | EditMode::Crossover => {
            if mode == EditMode::Crossover {
                out.push_str(
                    "Combine the strengths of the current program and Inspiration Program 1 into one better \
program. ",
                );
            }
            out.push_str(
                "Reply with every file you change in full: a line with its path, then the whole file in a \
code block. Files you do not reply with stay as they are.\n",
            );
            let _ = writeln!(out, "- {}", add_delete_rule(files));
            out.push_str(marker_rule);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::engine::tree::Blob;

    fn tree() -> Tree {
        let mut files: BTreeMap<String, Blob> = BTreeMap::new();
        for (p, t) in [
            ("pkg/model.py", "W = 1.0\n"),
            ("pkg/features.py", "F = 2.0\n"),
            ("README.md", "# Readme\n"),
            ("tests/test_model.py", &"assert True\n".repeat(50)),
            ("setup.cfg", "[x]\n"),
        ] {
            files.insert(p.to_owned(), Blob::text(t));
        }
        files.insert(
            "logo.png".into(),
            Blob::from_bytes(vec![0x89, 0x50, 0, 0xff]),
        );
        Tree::folder(files)
    }

    #[test]
    fn editable_in_full_context_within_budget_the_rest_by_path() {
        let text = current_program(&tree(), None, 100);
        // Without task files every text file is editable.
        assert!(
            text.contains("## `README.md` (editable)\n```markdown\n# Readme\n```"),
            "{text}"
        );
        assert!(
            text.contains("Other files (not shown): `logo.png (binary)`"),
            "{text}"
        );
        assert!(text.starts_with("# Current Program\nThe program is a folder of 6 files."));
    }

    #[test]
    fn the_task_says_what_is_editable_and_what_is_context() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/fit_package");
        let task = crate::engine::task::Task::load(&dir).unwrap();
        let files = task.files.as_ref();
        let text = current_program(&task.initial_program, files, 100_000);
        assert!(
            text.contains("## `fitpkg/model.py` (editable)\n```python\n"),
            "{text}"
        );
        assert!(
            text.contains("## `README.md` (read-only)\n```markdown\n"),
            "{text}"
        );
        assert!(
            text.contains("## `tests/test_model.py` (read-only)"),
            "{text}"
        );
        // A budget too small for the tests: listed by path, the README shown.
        let readme = task
            .initial_program
            .text_of("README.md")
            .unwrap()
            .chars()
            .count();
        let text = current_program(&task.initial_program, files, readme);
        assert!(text.contains("## `README.md` (read-only)"), "{text}");
        assert!(!text.contains("## `tests/test_model.py`"), "{text}");
        assert!(
            text.contains(
                "Other files (not shown): `tests/__init__.py (empty)`, `tests/test_model.py`"
            ),
            "{text}"
        );
        // Editable files are shown whatever the budget.
        let text = current_program(&task.initial_program, files, 0);
        assert!(
            text.contains("## `fitpkg/features.py` (editable)"),
            "{text}"
        );
        let text = instructions(EditMode::Diff, files, &task.initial_program);
        assert!(text.contains("evolve globs (`fitpkg/*.py`)"), "{text}");
    }

    #[test]
    fn instructions_name_the_three_forms_and_the_rules() {
        let marked = Tree::from_texts(BTreeMap::from([(
            "a.py".to_owned(),
            "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n".to_owned(),
        )]));
        let text = instructions(EditMode::Diff, None, &marked);
        for form in [
            "<<<<<<< SEARCH",
            "--- a/path",
            "*** Begin Patch",
            "\n context line\n-removed line\n+added line\n",
            "*** Add File: path",
        ] {
            assert!(text.contains(form), "{form}: {text}");
        }
        assert!(text.contains("Files cannot be added or deleted"));
        assert!(text.contains("only the code between"));
        let text = instructions(EditMode::FullRewrite, None, &tree());
        assert!(text.contains("a line with its path, then the whole file"));
        assert!(!text.contains("EVOLVE-BLOCK"));
    }
}
