//! Unified diffs in a model reply: `--- a/x` / `+++ b/x` file headers,
//! `@@ -l,c +l,c @@` hunks, several files in one reply, as `git diff` and
//! `diff -u` write them and as models imitate them (inside a fence or not,
//! with `diff --git` and `index` lines or without, `@@` with no numbers,
//! wrong line counts, blank context lines that lost their space).
//!
//! Parsing only; [`super::hunks`] applies the hunks.

use super::hunks::{Hunk, HunkLine};

/// The changes a unified diff makes to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDiff {
    /// The `---` path (`None` for `/dev/null`: the file is new).
    pub old_path: Option<String>,
    /// The `+++` path (`None` for `/dev/null`: the file is deleted).
    pub new_path: Option<String>,
    /// The hunks, in order.
    pub hunks: Vec<Hunk>,
}

/// Whether a file section starts at `lines[i]`: a `--- ` line followed by a
/// `+++ ` line.
pub fn starts_at(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// A header's path: `a/` or `b/` and a trailing timestamp dropped, quotes
/// removed; `None` for `/dev/null`.
fn header_path(rest: &str) -> Option<String> {
    let p = rest.split('\t').next().unwrap_or(rest).trim();
    let p = p
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(p);
    if p == "/dev/null" || p.is_empty() {
        return None;
    }
    let p = p
        .strip_prefix("a/")
        .or_else(|| p.strip_prefix("b/"))
        .unwrap_or(p);
    Some(p.to_owned())
}

/// `-l,c +l,c` of a hunk header: the old start (1-based) and counts.
fn hunk_header(line: &str) -> Option<(Option<usize>, Option<usize>, Option<usize>)> {
    let rest = line.strip_prefix("@@")?;
    let range = |token: Option<&str>, sign: char| -> (Option<usize>, Option<usize>) {
        let Some(spec) = token.and_then(|t| t.strip_prefix(sign)) else {
            return (None, None);
        };
        let mut parts = spec.split(',');
        let start = parts.next().and_then(|s| s.parse().ok());
        let count = match parts.next() {
            Some(c) => c.parse().ok(),
            None => start.map(|_| 1),
        };
        (start, count)
    };
    let mut tokens = rest.split_whitespace();
    let (old_start, old_count) = range(tokens.next(), '-');
    let (_, new_count) = range(tokens.next(), '+');
    Some((old_start, old_count, new_count))
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// Parse the file section starting at `lines[i]` (see [`starts_at`]).
/// Returns it and the index of the first line after it.
pub fn parse_file(lines: &[&str], i: usize) -> (FileDiff, usize) {
    let old_path = header_path(&lines[i][4..]);
    let new_path = header_path(&lines[i + 1][4..]);
    let mut hunks = Vec::new();
    let mut at = i + 2;
    while at < lines.len() && lines[at].starts_with("@@") {
        let (old_start, old_count, new_count) = hunk_header(lines[at]).unwrap_or_default();
        at += 1;
        let mut body: Vec<HunkLine> = Vec::new();
        // Counts are often wrong: they only end a hunk at a blank line once
        // met exactly (so a `- bullet` of prose after it is not taken in);
        // otherwise a hunk runs while its lines look like hunk lines.
        let (mut old_seen, mut new_seen) = (0usize, 0usize);
        while at < lines.len() {
            let line = lines[at];
            if line.starts_with("@@") || starts_at(lines, at) || is_fence(line) {
                break;
            }
            if let (Some(oc), Some(nc)) = (old_count, new_count)
                && old_seen == oc
                && new_seen == nc
                && line.is_empty()
            {
                break;
            }
            let parsed = if let Some(t) = line.strip_prefix(' ') {
                HunkLine::Context(t.to_owned())
            } else if let Some(t) = line.strip_prefix('-') {
                HunkLine::Remove(t.to_owned())
            } else if let Some(t) = line.strip_prefix('+') {
                HunkLine::Add(t.to_owned())
            } else if line.starts_with('\\') {
                // `\ No newline at end of file`
                at += 1;
                continue;
            } else if line.trim().is_empty() {
                HunkLine::Context(String::new())
            } else {
                break;
            };
            match parsed {
                HunkLine::Context(_) => {
                    old_seen += 1;
                    new_seen += 1;
                }
                HunkLine::Remove(_) => old_seen += 1,
                HunkLine::Add(_) => new_seen += 1,
            }
            body.push(parsed);
            at += 1;
        }
        // Blank lines that ended the hunk belong to the prose after it.
        while matches!(body.last(), Some(HunkLine::Context(t)) if t.is_empty())
            && lines[at - 1].trim().is_empty()
        {
            body.pop();
            at -= 1;
        }
        let hint = old_start.map(|s| match old_count {
            // `-5,0` inserts after line 5; `-5,3` starts at line 5.
            Some(0) => s,
            _ => s.saturating_sub(1),
        });
        hunks.push(Hunk {
            anchor: None,
            hint,
            lines: body,
            at_eof: false,
        });
        // Blank lines between hunks.
        let mut next = at;
        while next < lines.len() && lines[next].trim().is_empty() {
            next += 1;
        }
        if next < lines.len() && lines[next].starts_with("@@") {
            at = next;
        }
    }
    (
        FileDiff {
            old_path,
            new_path,
            hunks,
        },
        at,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<FileDiff> {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            if starts_at(&lines, i) {
                let (d, next) = parse_file(&lines, i);
                out.push(d);
                i = next;
            } else {
                i += 1;
            }
        }
        out
    }

    #[test]
    fn git_headers_paths_and_ranges() {
        let text = "diff --git a/src/x.py b/src/x.py\nindex 83db48f..bf269f4 100644\n--- a/src/x.py\t2024-01-01 10:00:00\n+++ b/src/x.py\n@@ -3,2 +3,2 @@ def f():\n     a = 1\n-    b = 2\n+    b = 3\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n";
        let d = parse(text);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].old_path.as_deref(), Some("src/x.py"));
        assert_eq!(d[0].new_path.as_deref(), Some("src/x.py"));
        assert_eq!(d[0].hunks.len(), 1);
        assert_eq!(d[0].hunks[0].hint, Some(2));
        assert_eq!(
            d[0].hunks[0].lines,
            vec![
                HunkLine::Context("    a = 1".into()),
                HunkLine::Remove("    b = 2".into()),
                HunkLine::Add("    b = 3".into()),
            ]
        );
        assert_eq!(d[1].old_path, None);
        assert_eq!(d[1].new_path.as_deref(), Some("new.py"));
        assert_eq!(d[1].hunks[0].hint, Some(0));
    }

    #[test]
    fn loose_hunks_blank_context_and_prose_after() {
        // `@@ ... @@` without numbers, a blank context line that lost its
        // space, and prose after a blank line.
        let text = "--- x.py\n+++ x.py\n@@ ... @@\n def f():\n\n-    return 1\n+    return 2\n\nThis makes f return 2.\n";
        let d = parse(text);
        assert_eq!(d[0].hunks[0].hint, None);
        assert_eq!(d[0].hunks[0].lines.len(), 4);
        assert_eq!(d[0].hunks[0].lines[1], HunkLine::Context(String::new()));
        // Counts met: a blank line ends the hunk, so a `- bullet` of prose
        // after it is not taken for a removed line.
        let text = "--- x.py\n+++ x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\n- shorter code\n";
        assert_eq!(parse(text)[0].hunks[0].lines.len(), 3);
        // Counts too small: the hunk runs on while its lines are hunk lines.
        let text = "--- x.py\n+++ x.py\n@@ -1,1 +1,1 @@\n a\n-b\n+c\n";
        assert_eq!(parse(text)[0].hunks[0].lines.len(), 3);
    }

    #[test]
    fn hunks_separated_by_blank_lines_and_a_fence_end() {
        let text =
            "```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\n@@ -9 +9 @@\n-y\n+z\n```\nDone.";
        let d = parse(text);
        assert_eq!(d[0].hunks.len(), 2);
        assert_eq!(d[0].hunks[1].hint, Some(8));
        assert_eq!(d[0].hunks[1].lines.len(), 2);
    }
}
