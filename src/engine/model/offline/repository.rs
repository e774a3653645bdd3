//! The offline model on a folder program (a repository task): the prompt
//! shows the current program's files, either as one block of
//! `=== path ===` sections or as one fenced block per file, each after a
//! line that names its path. The model tunes numeric literals inside the
//! EVOLVE-BLOCKs of one or two files and replies with SEARCH/REPLACE blocks,
//! each preceded by its file's path (aider's convention). It learns from
//! the other programs the prompt shows, by their scores: a value of one that
//! scored at least as well may be borrowed, and a value one that scored
//! worse has in place of the current one is stepped the other way.

use std::fmt::Write as _;

use rand::RngExt as _;
use rand::seq::SliceRandom as _;

use super::{Edit, Others, propose_edits};
use crate::engine::rng::SearchRng;
use crate::engine::text::fences::FencedBlock;
use crate::engine::tree::check_path;

/// One file of the current program, as the prompt shows it.
#[derive(Clone, Debug)]
pub(super) struct ShownFile {
    pub path: String,
    pub block: FencedBlock,
}

/// The fence tag for a file, from its extension.
fn tag_for(path: &str) -> String {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "py" => "python",
        "rs" => "rust",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" => "cpp",
        "js" => "javascript",
        "ts" => "typescript",
        "go" => "go",
        "jl" => "julia",
        other => other,
    }
    .to_owned()
}

/// `=== path ===` → `path`.
fn section_header(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix("=== ")?.strip_suffix(" ===")?;
    check_path(inner).is_ok().then_some(inner)
}

/// A program block made of `=== path ===` sections, split into its files.
pub(super) fn sections(block: &FencedBlock) -> Option<Vec<ShownFile>> {
    let mut out: Vec<ShownFile> = Vec::new();
    for line in block.content.split('\n') {
        if let Some(path) = section_header(line) {
            out.push(ShownFile {
                path: path.to_owned(),
                block: FencedBlock {
                    tag: tag_for(path),
                    content: String::new(),
                },
            });
        } else if let Some(file) = out.last_mut() {
            if !file.block.content.is_empty() {
                file.block.content.push('\n');
            }
            file.block.content.push_str(line);
        } else if !line.trim().is_empty() {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The path a line before a block names (`## fitpkg/model.py`,
/// `File: src/a.rs (editable)`, `` `x.py` ``), if it names one.
pub(super) fn label_path(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches('#').trim();
    let t = t
        .strip_prefix("File:")
        .or_else(|| t.strip_prefix("file:"))
        .unwrap_or(t)
        .trim();
    let word = t.split_whitespace().next()?;
    let word = word.trim_matches(|c| matches!(c, '`' | '*' | '"' | '\'' | ':' | ','));
    (check_path(word).is_ok()
        && (word.contains('.') || word.contains('/'))
        && !word.contains("..."))
    .then(|| word.to_owned())
}

/// A reply that tunes literals in one or two of `files` (those with
/// something to tune), or `None` when none has.
pub(super) fn reply(
    files: &[ShownFile],
    inspirations: &Others<'_>,
    rng: &mut SearchRng,
) -> Option<String> {
    let mut order: Vec<usize> = (0..files.len())
        .filter(|i| files[*i].block.content.contains("EVOLVE-BLOCK-START"))
        .collect();
    if order.is_empty() {
        order = (0..files.len()).collect();
    }
    order.shuffle(rng);
    let want = if order.len() > 1 && rng.random_bool(0.5) {
        2
    } else {
        1
    };
    let mut chosen: Vec<(&str, Vec<Edit>)> = Vec::new();
    for i in order {
        if chosen.len() == want {
            break;
        }
        if let Some(edits) = propose_edits(&files[i].block, inspirations, rng) {
            chosen.push((&files[i].path, edits));
        }
    }
    if chosen.is_empty() {
        return None;
    }
    chosen.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::new();
    let names: Vec<String> = chosen
        .iter()
        .map(|(path, edits)| {
            let what: Vec<String> = edits
                .iter()
                .map(|e| {
                    let name = e
                        .name
                        .as_deref()
                        .map_or_else(|| "a constant".to_owned(), |n| format!("`{n}`"));
                    format!("{name} {} -> {}", e.old_literal, e.new_literal)
                })
                .collect();
            format!("in {path}: {}", what.join(", "))
        })
        .collect();
    let _ = writeln!(
        out,
        "I will tune numeric parameters {}.\n",
        names.join("; ")
    );
    for (path, edits) in &chosen {
        for e in edits {
            let _ = write!(
                out,
                "{path}\n<<<<<<< SEARCH\n{}\n=======\n{}\n>>>>>>> REPLACE\n\n",
                e.old_line, e.new_line
            );
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_paths() {
        assert_eq!(
            label_path("## fitpkg/model.py").as_deref(),
            Some("fitpkg/model.py")
        );
        assert_eq!(
            label_path("File: src/a.rs (editable)").as_deref(),
            Some("src/a.rs")
        );
        assert_eq!(label_path("`x.py`:").as_deref(), Some("x.py"));
        assert_eq!(label_path("# Current Program"), None);
        assert_eq!(label_path("../etc/passwd"), None);
    }
}
