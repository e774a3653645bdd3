//! Text editing, shared by the proposers and the offline model: EVOLVE-BLOCK
//! markers, fenced code blocks, SEARCH/REPLACE patches and full rewrites,
//! edits across the files of a tree (SEARCH/REPLACE with paths, unified
//! diffs, the `*** Begin Patch` format, named rewrites), and the unified
//! diff a genome records against its parent.
//!
//! Everything here is a pure function of its inputs. Line endings are
//! normalised (CRLF → LF) before matching; the output always uses LF.

pub mod begin_patch;
pub mod fences;
pub mod hunks;
pub mod markers;
pub mod ngrams;
pub mod patch;
pub mod paths;
pub mod tree_edits;
pub mod udiff;

/// Replace CRLF (and stray CR) line endings by LF.
pub fn normalize_newlines(text: &str) -> String {
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_owned()
    }
}

/// Unified diff from `old` to `new` (3 lines of context, `--- parent` /
/// `+++ child` headers). Empty when the texts are equal.
pub fn unified_diff(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("parent", "child")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_has_headers_and_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        let d = unified_diff(old, new);
        assert!(d.starts_with("--- parent\n+++ child\n"), "{d}");
        assert!(d.contains("@@ -2,7 +2,7 @@"), "{d}");
        assert!(d.contains("-5\n+five\n"));
        assert!(!d.contains("\n 1\n"), "only 3 lines of context: {d}");
        assert_eq!(unified_diff(old, old), "");
    }
}
