//! Hunks: runs of context, removed and added lines, as unified diffs and the
//! `*** Begin Patch` format carry them, applied to a file with the tolerance
//! `git apply` and GNU patch have for what models get wrong:
//!
//! - the line numbers of a `@@ -l,c +l,c @@` header are a hint: the old text
//!   is looked for anywhere, the match nearest the hint (shifted by what the
//!   earlier hunks added or removed) wins, and a hunk's line counts are not
//!   trusted;
//! - lines match exactly, else ignoring trailing whitespace, else ignoring
//!   indentation, else also ignoring typographic punctuation (`“ ” – ’`)
//!   and runs of inner whitespace; context lines keep the file's text and
//!   added lines are re-indented by the difference the match found;
//! - a hunk whose context does not match is retried without up to two
//!   context lines at either end (GNU patch's fuzz factor 2).
//!
//! Everything here is a pure function of its inputs.

use super::patch::{Level, closest_line_hint, leading_ws, reindent};

/// One line of a hunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HunkLine {
    /// A line kept as it is (` ` prefix).
    Context(String),
    /// A line removed (`-`).
    Remove(String),
    /// A line added (`+`).
    Add(String),
}

/// A run of changed lines and their context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hunk {
    /// A line the hunk comes after (`@@ def f():` in the `*** Begin Patch`
    /// format): it is found first, and the hunk is looked for below it.
    pub anchor: Option<String>,
    /// 0-based line where the old text starts (or after which an insertion
    /// goes), as the diff's header says: a hint, not a requirement.
    pub hint: Option<usize>,
    /// The hunk's lines, in order.
    pub lines: Vec<HunkLine>,
    /// The old text ends at the end of the file (`*** End of File`).
    pub at_eof: bool,
}

impl Hunk {
    /// The lines the hunk expects in the file (context and removed).
    pub fn old(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// Whether the hunk changes anything.
    pub fn changes(&self) -> bool {
        self.lines
            .iter()
            .any(|l| !matches!(l, HunkLine::Context(_)))
    }

    /// The first removed line, else the first context line (for messages).
    fn first_line(&self) -> String {
        let removed = self.lines.iter().find_map(|l| match l {
            HunkLine::Remove(t) if !t.trim().is_empty() => Some(t.as_str()),
            _ => None,
        });
        removed
            .or_else(|| self.old().into_iter().find(|t| !t.trim().is_empty()))
            .map(|t| t.trim().to_owned())
            .unwrap_or_default()
    }
}

/// Why a hunk could not be applied. Messages are shown to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HunkError {
    /// The anchor line (`@@ def f():`) is not in the file.
    #[error(
        "hunk {hunk}: the line `{anchor}` after `@@` is not in the file; after `@@` put a line \
         copied from the file (a function or class header) or nothing"
    )]
    Anchor {
        /// 1-based hunk number.
        hunk: usize,
        /// The anchor, trimmed.
        anchor: String,
    },
    /// The hunk's old lines (context and removed) are not in the file.
    #[error(
        "hunk {hunk}: its context and removed lines were not found in the file (first line: \
         `{first_line}`).{hint} Copy the ` ` and `-` lines exactly from the current file"
    )]
    NotFound {
        /// 1-based hunk number.
        hunk: usize,
        /// The first removed (else context) line, trimmed.
        first_line: String,
        /// A sentence naming the closest line of the file, or empty.
        hint: String,
    },
}

const LEVELS: [Level; 3] = [Level::Exact, Level::TrailingWhitespace, Level::Indentation];

/// Typographic punctuation and odd spaces as ASCII, inner whitespace runs as
/// one space, ends trimmed: the last resort of matching.
fn loose(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2018}'..='\u{201B}' => '\'',
            '\u{201C}'..='\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How close two lines must be: the three levels of SEARCH/REPLACE
/// matching, then [`loose`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tolerance {
    Strict(Level),
    Loose,
}

fn same(file_line: &str, hunk_line: &str, t: Tolerance) -> bool {
    match t {
        Tolerance::Strict(level) => super::patch::lines_match(file_line, hunk_line, level),
        Tolerance::Loose => loose(file_line) == loose(hunk_line),
    }
}

fn tolerances() -> impl Iterator<Item = Tolerance> {
    LEVELS
        .into_iter()
        .map(Tolerance::Strict)
        .chain(std::iter::once(Tolerance::Loose))
}

/// Every position where `pattern` matches `lines` at tolerance `t`.
fn positions(lines: &[String], pattern: &[&str], t: Tolerance) -> Vec<usize> {
    if pattern.is_empty() || pattern.len() > lines.len() {
        return Vec::new();
    }
    (0..=lines.len() - pattern.len())
        .filter(|&at| pattern.iter().zip(&lines[at..]).all(|(p, l)| same(l, p, t)))
        .collect()
}

/// The match to take among `found`: the one ending the file for an
/// end-of-file hunk, else the one nearest `want` (at or after `cursor`
/// first), else the first at or after `cursor`, else the first.
fn choose(
    found: &[usize],
    len: usize,
    lines: usize,
    cursor: usize,
    want: Option<usize>,
    eof: bool,
) -> Option<usize> {
    if eof && let Some(&at) = found.iter().find(|&&at| at + len == lines) {
        return Some(at);
    }
    let after: Vec<usize> = found.iter().copied().filter(|&at| at >= cursor).collect();
    let pool = if after.is_empty() { found } else { &after };
    match want {
        Some(w) => pool.iter().copied().min_by_key(|&at| at.abs_diff(w)),
        None => pool.first().copied(),
    }
}

/// The hunk without `lead` context lines at its start and `trail` at its
/// end, or `None` when it has fewer context lines there.
fn trimmed(lines: &[HunkLine], lead: usize, trail: usize) -> Option<Vec<HunkLine>> {
    let ctx = |l: &HunkLine| matches!(l, HunkLine::Context(_));
    let leading = lines.iter().take_while(|l| ctx(l)).count();
    let trailing = lines.iter().rev().take_while(|l| ctx(l)).count();
    if lead > leading || trail > trailing || lead + trail >= lines.len() {
        return None;
    }
    Some(lines[lead..lines.len() - trail].to_vec())
}

/// Apply `hunks` in order to `lines` (a file split into lines, no line
/// endings). Each hunk is looked for in the file as the earlier ones left it.
pub fn apply_hunks(lines: &mut Vec<String>, hunks: &[Hunk]) -> Result<(), HunkError> {
    let mut cursor = 0usize;
    let mut delta = 0isize;
    for (i, hunk) in hunks.iter().enumerate() {
        let n = i + 1;
        if let Some(anchor) = hunk.anchor.as_deref().filter(|a| !a.trim().is_empty()) {
            let pattern = [anchor];
            let at = tolerances().find_map(|t| {
                let found = positions(lines, &pattern, t);
                choose(&found, 1, lines.len(), cursor, None, false)
            });
            match at {
                Some(at) => cursor = at + 1,
                None => {
                    return Err(HunkError::Anchor {
                        hunk: n,
                        anchor: anchor.trim().to_owned(),
                    });
                }
            }
        }
        let want = hunk
            .hint
            .map(|h| h.saturating_add_signed(delta).min(lines.len()));
        if hunk.old().is_empty() {
            let at = if hunk.anchor.is_some() {
                cursor
            } else {
                want.unwrap_or(lines.len())
            };
            let added: Vec<String> = hunk
                .lines
                .iter()
                .filter_map(|l| match l {
                    HunkLine::Add(t) => Some(t.clone()),
                    _ => None,
                })
                .collect();
            let len = added.len();
            lines.splice(at..at, added);
            cursor = at + len;
            delta += len as isize;
            continue;
        }
        let Some((at, body)) = locate(lines, hunk, cursor, want) else {
            let first_line = hunk.first_line();
            return Err(HunkError::NotFound {
                hunk: n,
                hint: closest_line_hint(lines, &[], &first_line),
                first_line,
            });
        };
        let (old_len, replacement) = replacement(lines, at, &body);
        let new_len = replacement.len();
        lines.splice(at..at + old_len, replacement);
        cursor = at + new_len;
        delta += new_len as isize - old_len as isize;
    }
    Ok(())
}

/// Where the hunk's old text is, with the hunk lines that matched there (the
/// whole hunk, or the hunk less some context at its ends), and the
/// tolerance that matched.
fn locate(
    lines: &[String],
    hunk: &Hunk,
    cursor: usize,
    want: Option<usize>,
) -> Option<(usize, (Vec<HunkLine>, Tolerance))> {
    // The hunk as given, then without trailing blank context (a blank line
    // between a diff and the prose after it), then with fuzz.
    let mut variants: Vec<Vec<HunkLine>> = vec![hunk.lines.clone()];
    let blank_tail = hunk
        .lines
        .iter()
        .rev()
        .take_while(|l| matches!(l, HunkLine::Context(t) if t.trim().is_empty()))
        .count();
    if blank_tail > 0 && blank_tail < hunk.lines.len() {
        variants.push(hunk.lines[..hunk.lines.len() - blank_tail].to_vec());
    }
    for fuzz in 1..=2 {
        for (lead, trail) in [(fuzz, 0), (0, fuzz), (fuzz, fuzz)] {
            if let Some(v) = trimmed(&hunk.lines, lead, trail) {
                variants.push(v);
            }
        }
    }
    for body in variants {
        let old: Vec<&str> = body
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect();
        if old.is_empty() || old.iter().all(|l| l.trim().is_empty()) {
            continue;
        }
        // A hint shifted by the context lines fuzz dropped at the start.
        let dropped = hunk.lines.len() - body.len();
        let shifted = want.map(|w| w + dropped.min(2));
        for t in tolerances() {
            let found = positions(lines, &old, t);
            if let Some(at) = choose(&found, old.len(), lines.len(), cursor, shifted, hunk.at_eof) {
                return Some((at, (body, t)));
            }
        }
    }
    None
}

/// The lines that replace the match at `at`: context lines as the file has
/// them, added lines re-indented when the match ignored indentation. Returns
/// the number of file lines replaced and the replacement.
fn replacement(
    lines: &[String],
    at: usize,
    (body, tolerance): &(Vec<HunkLine>, Tolerance),
) -> (usize, Vec<String>) {
    let reindent_by = match tolerance {
        Tolerance::Strict(Level::Exact | Level::TrailingWhitespace) => None,
        _ => {
            let mut pos = at;
            let mut pair = None;
            for l in body {
                if let HunkLine::Context(t) | HunkLine::Remove(t) = l {
                    if !t.trim().is_empty() {
                        pair = Some((leading_ws(t).to_owned(), leading_ws(&lines[pos]).to_owned()));
                        break;
                    }
                    pos += 1;
                }
            }
            pair
        }
    };
    let mut out = Vec::new();
    let mut pos = at;
    for l in body {
        match l {
            HunkLine::Context(_) => {
                out.push(lines[pos].clone());
                pos += 1;
            }
            HunkLine::Remove(_) => pos += 1,
            HunkLine::Add(t) => match &reindent_by {
                Some((from, to)) => out.extend(reindent(std::slice::from_ref(t), from, to)),
                None => out.push(t.clone()),
            },
        }
    }
    (pos - at, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    fn hunk(spec: &str) -> Hunk {
        Hunk {
            lines: spec
                .lines()
                .map(|l| match l.split_at(1) {
                    ("-", t) => HunkLine::Remove(t.to_owned()),
                    ("+", t) => HunkLine::Add(t.to_owned()),
                    (_, t) => HunkLine::Context(t.to_owned()),
                })
                .collect(),
            ..Hunk::default()
        }
    }

    #[test]
    fn nearest_match_to_the_shifted_hint_wins() {
        let mut file = lines("x = 1\ny = 2\nx = 1\ny = 2\nx = 1\ny = 2\n");
        let mut h = hunk(" x = 1\n-y = 2\n+y = 3");
        h.hint = Some(4);
        apply_hunks(&mut file, &[h]).unwrap();
        assert_eq!(file, lines("x = 1\ny = 2\nx = 1\ny = 2\nx = 1\ny = 3\n"));
        // A second hunk's hint is shifted by what the first added.
        let mut file = lines("a\nb\nc\nd\ne\nf\n");
        let mut h1 = hunk(" a\n+a2\n+a3");
        h1.hint = Some(0);
        let mut h2 = hunk(" e\n-f\n+F");
        h2.hint = Some(4);
        apply_hunks(&mut file, &[h1, h2]).unwrap();
        assert_eq!(file, lines("a\na2\na3\nb\nc\nd\ne\nF\n"));
    }

    #[test]
    fn whitespace_and_punctuation_are_tolerated_and_context_keeps_the_file_text() {
        let mut file = lines("def f():\n    s = \"it’s\"   \n    return s\n");
        // The model dropped the indentation and typed an ASCII quote.
        let h = hunk(" s = \"it's\"\n-return s\n+return s.upper()\n+# done");
        apply_hunks(&mut file, &[h]).unwrap();
        assert_eq!(
            file,
            lines("def f():\n    s = \"it’s\"   \n    return s.upper()\n    # done\n")
        );
    }

    #[test]
    fn fuzz_drops_up_to_two_context_lines_at_each_end() {
        let mut file = lines("one\ntwo\nthree\nfour\nfive\n");
        let h = hunk(" zero (not in the file)\n two\n-three\n+THREE\n four\n six (nor this)");
        apply_hunks(&mut file, &[h]).unwrap();
        assert_eq!(file, lines("one\ntwo\nTHREE\nfour\nfive\n"));
        let mut file = lines("one\ntwo\nthree\n");
        let h = hunk(" a\n b\n c\n-two\n+2");
        let err = apply_hunks(&mut file, &[h]).unwrap_err();
        assert!(matches!(err, HunkError::NotFound { hunk: 1, .. }), "{err}");
        assert!(err.to_string().contains("`two`"), "{err}");
    }

    #[test]
    fn anchors_narrow_the_search_and_pure_additions_insert() {
        let mut file = lines("def f():\n    pass\ndef g():\n    pass\n");
        let mut h = hunk("-    pass\n+    return 1");
        h.anchor = Some("def g():".into());
        apply_hunks(&mut file, &[h]).unwrap();
        assert_eq!(file, lines("def f():\n    pass\ndef g():\n    return 1\n"));
        let mut h = hunk("+    # first");
        h.anchor = Some("def f():".into());
        apply_hunks(&mut file, &[h]).unwrap();
        assert_eq!(file[1], "    # first");
        // No anchor and no hint: at the end of the file.
        apply_hunks(&mut file, &[hunk("+# end")]).unwrap();
        assert_eq!(file.last().map(String::as_str), Some("# end"));
        let mut h = hunk("-x");
        h.anchor = Some("def nowhere():".into());
        let err = apply_hunks(&mut file, &[h]).unwrap_err();
        assert_eq!(
            err,
            HunkError::Anchor {
                hunk: 1,
                anchor: "def nowhere():".into()
            }
        );
    }

    #[test]
    fn end_of_file_hunks_prefer_the_last_match() {
        let mut file = lines("x\nend\nx\nend\n");
        let mut h = hunk(" x\n-end\n+END");
        h.at_eof = true;
        apply_hunks(&mut file, &[h]).unwrap();
        assert_eq!(file, lines("x\nend\nx\nEND\n"));
    }
}
