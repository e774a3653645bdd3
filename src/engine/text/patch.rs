//! SEARCH/REPLACE patching: parse edit blocks out of a model reply, apply
//! them strictly to the parent program (EVOLVE-BLOCK regions enforced), and
//! fall back to a full rewrite taken from a fenced code block.
//!
//! Over 800 lines on purpose: more than a third is the tests pinning the
//! matching rules (whitespace and indentation tolerance, regions, markers,
//! rewrites), which read best next to the code they pin down.
//!
//! Everything here is a pure function of its inputs. Line endings are
//! normalised (CRLF → LF) in both the parent and the reply before matching;
//! the output always uses LF.

use std::fmt;

use similar::TextDiff;

use super::fences::pick_rewrite;
use super::markers::{
    EVOLVE_END, EVOLVE_START, Marker, Region, balanced, evolve_regions, marker_kind,
    marker_sequence, trailing_marker,
};
use super::normalize_newlines;

/// The edit-block markers, as the prompt shows them.
pub const SEARCH_MARKER: &str = "<<<<<<< SEARCH";
/// Separates the SEARCH and REPLACE halves of a block.
pub const DIVIDER_MARKER: &str = "=======";
/// Closes a block.
pub const REPLACE_MARKER: &str = ">>>>>>> REPLACE";

/// How a child was produced from its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// SEARCH/REPLACE blocks applied to the parent.
    Diff,
    /// A whole program taken from a fenced code block.
    Full,
}

impl PatchKind {
    /// The name stored in `GenomeMeta::patch_type` (`diff`, `full`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Diff => "diff",
            Self::Full => "full",
        }
    }
}

impl fmt::Display for PatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A successfully applied reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchResult {
    /// The child program (LF line endings).
    pub content: String,
    /// SEARCH/REPLACE blocks applied (0 for a full rewrite; blocks with an
    /// empty SEARCH and an empty REPLACE are not counted).
    pub blocks_applied: usize,
    /// Diff or full rewrite.
    pub kind: PatchKind,
}

/// How to treat a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatchOptions<'a> {
    /// The task's language tag (`python`); a fenced block with this tag is
    /// preferred for full rewrites.
    pub language: &'a str,
    /// Take a fenced code block as the whole new program when the reply has
    /// no SEARCH/REPLACE blocks.
    pub allow_full_rewrite: bool,
}

impl Default for PatchOptions<'_> {
    fn default() -> Self {
        Self {
            language: "",
            allow_full_rewrite: true,
        }
    }
}

/// One parsed SEARCH/REPLACE block, as lines (LF-split, no line endings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EditBlock {
    /// Lines to find in the program (empty = insertion).
    pub search: Vec<String>,
    /// Lines to put in their place.
    pub replace: Vec<String>,
}

/// Why a reply could not be turned into a child. The text is shown to the
/// model on retry, so every message says what to do differently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// No SEARCH/REPLACE block and no fenced code block in the reply.
    #[error(
        "no SEARCH/REPLACE blocks and no code block in the reply; answer with one or more \
         `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks"
    )]
    NoEdits,
    /// No SEARCH/REPLACE block, and full rewrites are disabled.
    #[error(
        "no SEARCH/REPLACE blocks in the reply (full-program rewrites are not accepted); answer with \
         one or more `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks"
    )]
    NoBlocks,
    /// A block whose markers are out of order or missing.
    #[error("SEARCH/REPLACE block {block} is malformed: {reason}")]
    Malformed {
        /// 1-based block number.
        block: usize,
        /// What is wrong with its markers.
        reason: String,
    },
    /// A SEARCH text that matches nowhere.
    #[error(
        "SEARCH/REPLACE block {block}: the SEARCH text was not found in the current program \
         (first SEARCH line: `{first_line}`).{hint} Copy the SEARCH lines exactly from the current \
         program, including indentation, and apply blocks in order (each block sees the result of \
         the previous ones)."
    )]
    NotFound {
        /// 1-based block number.
        block: usize,
        /// The first non-blank SEARCH line, trimmed.
        first_line: String,
        /// A sentence naming the closest program line, or empty.
        hint: String,
    },
    /// A SEARCH text that only matches outside every EVOLVE-BLOCK region.
    #[error(
        "SEARCH/REPLACE block {block}: edit outside EVOLVE-BLOCK (first SEARCH line: \
         `{first_line}`). Only the lines between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END \
         markers may change; the markers themselves and the code outside them must stay as they are."
    )]
    OutsideEvolveBlock {
        /// 1-based block number.
        block: usize,
        /// The first non-blank SEARCH line, trimmed.
        first_line: String,
    },
    /// A block whose SEARCH consists only of EVOLVE-BLOCK marker lines.
    #[error(
        "SEARCH/REPLACE block {block}: its SEARCH text contains only EVOLVE-BLOCK marker lines; \
         the markers cannot be edited. Search for code inside the block instead."
    )]
    MarkerOnlySearch {
        /// 1-based block number.
        block: usize,
    },
    /// The markers changed (count, order or balance) after the edit.
    #[error("the EVOLVE-BLOCK markers were broken by the edit: {0}; keep every marker line intact")]
    MarkersBroken(String),
    /// A full rewrite that dropped or changed the EVOLVE-BLOCK markers.
    #[error(
        "the full rewrite dropped or changed the EVOLVE-BLOCK markers (the current program has \
         {parent_regions} EVOLVE-BLOCK region(s), the rewrite has {rewrite_regions}); keep the \
         EVOLVE-BLOCK-START / EVOLVE-BLOCK-END lines and the code outside them unchanged"
    )]
    MarkersDropped {
        /// Regions in the parent.
        parent_regions: usize,
        /// Regions in the rewrite.
        rewrite_regions: usize,
    },
    /// A full rewrite with one of its region's two markers whose extent
    /// cannot be told from the current program.
    #[error(
        "the full rewrite has {present} but not {missing}, and {reason}; keep both \
         EVOLVE-BLOCK-START and EVOLVE-BLOCK-END lines, or send only the block's new contents"
    )]
    OneMarker {
        /// The marker the rewrite has.
        present: &'static str,
        /// The marker it lacks.
        missing: &'static str,
        /// Why the block's extent is not clear.
        reason: String,
    },
    /// The edit left the program unchanged.
    #[error("{0}")]
    NoOp(String),
}

impl PatchError {
    /// True for the no-op outcome (the edit applied but changed nothing).
    pub fn is_noop(&self) -> bool {
        matches!(self, Self::NoOp(_))
    }
}

// ---------------------------------------------------------------------------
// Documents as lines

/// A text split into lines, remembering whether it ended with a newline.
#[derive(Clone, Debug)]
pub(super) struct Doc {
    pub(super) lines: Vec<String>,
    pub(super) trailing_newline: bool,
}

impl Doc {
    pub(super) fn new(text: &str) -> Self {
        let text = normalize_newlines(text);
        let trailing_newline = text.ends_with('\n');
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let lines = if text.is_empty() {
            Vec::new()
        } else {
            body.split('\n').map(str::to_owned).collect()
        };
        Self {
            lines,
            trailing_newline,
        }
    }

    pub(super) fn render(&self) -> String {
        let mut out = self.lines.join("\n");
        if self.trailing_newline && !self.lines.is_empty() {
            out.push('\n');
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Parsing

pub(super) fn is_search_marker(line: &str) -> bool {
    let t = line.trim();
    let n = t.chars().take_while(|c| *c == '<').count();
    n >= 7 && t[n..].trim().eq_ignore_ascii_case("SEARCH")
}

pub(super) fn is_divider(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 7 && t.chars().all(|c| c == '=')
}

pub(super) fn is_replace_marker(line: &str) -> bool {
    let t = line.trim();
    let n = t.chars().take_while(|c| *c == '>').count();
    n >= 7 && t[n..].trim().eq_ignore_ascii_case("REPLACE")
}

/// Parse every SEARCH/REPLACE block of a reply, in order. Tolerates CRLF,
/// whitespace around markers, fences and prose between blocks. A reply with
/// no block gives an empty list; a block with missing or misplaced markers is
/// an error.
pub fn parse_blocks(reply: &str) -> Result<Vec<EditBlock>, PatchError> {
    enum State {
        Outside,
        Search(Vec<String>),
        Replace(Vec<String>, Vec<String>),
    }
    let text = normalize_newlines(reply);
    let mut blocks = Vec::new();
    let mut state = State::Outside;
    for line in text.split('\n') {
        let n = blocks.len() + 1;
        state = match state {
            State::Outside => {
                if is_search_marker(line) {
                    State::Search(Vec::new())
                } else {
                    State::Outside
                }
            }
            State::Search(mut search) => {
                if is_divider(line) {
                    State::Replace(search, Vec::new())
                } else if is_search_marker(line) {
                    return Err(PatchError::Malformed {
                        block: n,
                        reason: "a new `<<<<<<< SEARCH` started before `=======`".into(),
                    });
                } else if is_replace_marker(line) {
                    return Err(PatchError::Malformed {
                        block: n,
                        reason: "`>>>>>>> REPLACE` came before the `=======` divider".into(),
                    });
                } else {
                    search.push(line.to_owned());
                    State::Search(search)
                }
            }
            State::Replace(search, mut replace) => {
                if is_replace_marker(line) {
                    blocks.push(EditBlock { search, replace });
                    State::Outside
                } else if is_search_marker(line) {
                    return Err(PatchError::Malformed {
                        block: n,
                        reason: "a new `<<<<<<< SEARCH` started before `>>>>>>> REPLACE` closed \
                                 this block"
                            .into(),
                    });
                } else {
                    replace.push(line.to_owned());
                    State::Replace(search, replace)
                }
            }
        };
    }
    match state {
        State::Outside => Ok(blocks),
        State::Search(_) => Err(PatchError::Malformed {
            block: blocks.len() + 1,
            reason: "the reply ended before the `=======` divider".into(),
        }),
        State::Replace(..) => Err(PatchError::Malformed {
            block: blocks.len() + 1,
            reason: "the reply ended before `>>>>>>> REPLACE`".into(),
        }),
    }
}

// ---------------------------------------------------------------------------
// Matching and applying

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    Exact,
    TrailingWhitespace,
    Indentation,
}

pub(super) fn lines_match(a: &str, b: &str, level: Level) -> bool {
    match level {
        Level::Exact => a == b,
        Level::TrailingWhitespace => a.trim_end() == b.trim_end(),
        Level::Indentation => a.trim() == b.trim(),
    }
}

pub(super) fn match_at(lines: &[String], search: &[String], at: usize, level: Level) -> bool {
    at + search.len() <= lines.len()
        && search
            .iter()
            .zip(&lines[at..])
            .all(|(s, l)| lines_match(l, s, level))
}

pub(super) fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Re-indent `replace` by the difference between the indentation the SEARCH
/// text used (`from`) and the one the program has (`to`).
pub(super) fn reindent(replace: &[String], from: &str, to: &str) -> Vec<String> {
    replace
        .iter()
        .map(|line| {
            if line.trim().is_empty() {
                return line.clone();
            }
            if let Some(rest) = line.strip_prefix(from) {
                format!("{to}{rest}")
            } else if let Some(extra) = to.strip_suffix(from) {
                // The program is more indented: add the difference.
                format!("{extra}{line}")
            } else if from.ends_with(to) {
                // The program is less indented: remove up to the difference.
                let remove = from.len() - to.len();
                let ws = leading_ws(line);
                let cut = ws
                    .char_indices()
                    .map(|(i, c)| i + c.len_utf8())
                    .take_while(|end| *end <= remove)
                    .last()
                    .unwrap_or(0);
                line[cut..].to_owned()
            } else {
                line.clone()
            }
        })
        .collect()
}

fn strip_markers(lines: &[String]) -> (Vec<String>, bool) {
    let kept: Vec<String> = lines
        .iter()
        .filter(|l| marker_kind(l).is_none())
        .cloned()
        .collect();
    let removed = kept.len() != lines.len();
    (kept, removed)
}

pub(super) fn first_nonblank(lines: &[String]) -> String {
    lines
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .unwrap_or_default()
}

/// Trim leading/trailing blank lines of `search`, and the same number of
/// leading/trailing blank lines of `replace` where it has them.
fn trim_blank_edges(search: &[String], replace: &[String]) -> (Vec<String>, Vec<String>) {
    let lead = search.iter().take_while(|l| l.trim().is_empty()).count();
    if lead == search.len() {
        return (search.to_vec(), replace.to_vec());
    }
    let trail = search
        .iter()
        .rev()
        .take_while(|l| l.trim().is_empty())
        .count();
    let s = search[lead..search.len() - trail].to_vec();
    let r_lead = replace
        .iter()
        .take_while(|l| l.trim().is_empty())
        .count()
        .min(lead);
    let r_trail = replace[r_lead..]
        .iter()
        .rev()
        .take_while(|l| l.trim().is_empty())
        .count()
        .min(trail);
    let r = replace[r_lead..replace.len() - r_trail].to_vec();
    (s, r)
}

enum Found {
    /// Start line, number of lines matched, and the replacement.
    At(usize, usize, Vec<String>),
    Outside,
    Nowhere,
}

fn locate(lines: &[String], search: &[String], replace: &[String], regions: &[Region]) -> Found {
    let mut outside = false;
    let mut variants = vec![(search.to_vec(), replace.to_vec())];
    let trimmed = trim_blank_edges(search, replace);
    if trimmed.0 != search {
        variants.push(trimmed);
    }
    for (search, replace) in &variants {
        if search.is_empty() || search.len() > lines.len() {
            continue;
        }
        for level in [Level::Exact, Level::TrailingWhitespace, Level::Indentation] {
            for at in 0..=lines.len() - search.len() {
                if !match_at(lines, search, at, level) {
                    continue;
                }
                if !regions.is_empty() && !regions.iter().any(|r| r.contains_span(at, search.len()))
                {
                    outside = true;
                    continue;
                }
                let replacement = if level == Level::Indentation {
                    let k = search
                        .iter()
                        .position(|l| !l.trim().is_empty())
                        .unwrap_or(0);
                    reindent(replace, leading_ws(&search[k]), leading_ws(&lines[at + k]))
                } else {
                    replace.clone()
                };
                return Found::At(at, search.len(), replacement);
            }
        }
    }
    if outside {
        Found::Outside
    } else {
        Found::Nowhere
    }
}

pub(super) fn closest_line_hint(lines: &[String], regions: &[Region], needle: &str) -> String {
    if needle.is_empty() {
        return String::new();
    }
    let editable =
        |i: usize| regions.is_empty() || regions.iter().any(|r| r.interior().contains(&i));
    let mut best: Option<(f32, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() || !editable(i) || t.len() > 4 * needle.len() + 40 {
            continue;
        }
        let ratio = TextDiff::from_chars(needle, t).ratio();
        if best.is_none_or(|(r, _)| ratio > r) {
            best = Some((ratio, i));
        }
    }
    match best {
        Some((ratio, i)) if ratio >= 0.5 => format!(
            " The closest editable line is line {}: `{}`.",
            i + 1,
            lines[i].trim_end()
        ),
        _ => String::new(),
    }
}

/// Apply parsed blocks in order to `parent`, each against the already
/// modified text. Strict: every block must match, inside an EVOLVE-BLOCK
/// region when the parent has markers. An empty SEARCH inserts the
/// REPLACE text at the end of the last region (end of file without markers).
/// Returns the new text and the number of blocks applied.
pub fn apply_blocks(parent: &str, blocks: &[EditBlock]) -> Result<(String, usize), PatchError> {
    let mut doc = Doc::new(parent);
    let parent_markers = marker_sequence(&doc.lines);
    let mut applied = 0;
    for (i, block) in blocks.iter().enumerate() {
        let n = i + 1;
        let regions = evolve_regions(&doc.lines);
        let (search, search_had_markers) = strip_markers(&block.search);
        let (replace, _) = strip_markers(&block.replace);
        let search_is_empty = search.iter().all(|l| l.trim().is_empty());
        if search_is_empty {
            if search_had_markers {
                return Err(PatchError::MarkerOnlySearch { block: n });
            }
            if replace.iter().all(|l| l.trim().is_empty()) {
                continue;
            }
            let at = regions.last().map_or(doc.lines.len(), |r| r.end);
            doc.lines.splice(at..at, replace);
            applied += 1;
            continue;
        }
        match locate(&doc.lines, &search, &replace, &regions) {
            Found::At(at, len, replacement) => {
                doc.lines.splice(at..at + len, replacement);
                applied += 1;
            }
            Found::Outside => {
                return Err(PatchError::OutsideEvolveBlock {
                    block: n,
                    first_line: first_nonblank(&search),
                });
            }
            Found::Nowhere => {
                // A SEARCH that spanned a marker line matches only with
                // the marker kept: that is an edit outside the region.
                if search_had_markers
                    && !matches!(
                        locate(&doc.lines, &block.search, &block.replace, &[]),
                        Found::Nowhere
                    )
                {
                    return Err(PatchError::OutsideEvolveBlock {
                        block: n,
                        first_line: first_nonblank(&block.search),
                    });
                }
                let first_line = first_nonblank(&search);
                return Err(PatchError::NotFound {
                    block: n,
                    hint: closest_line_hint(&doc.lines, &regions, &first_line),
                    first_line,
                });
            }
        }
    }
    check_markers(&parent_markers, &doc.lines)?;
    Ok((doc.render(), applied))
}

fn check_markers(parent: &[Marker], child_lines: &[String]) -> Result<(), PatchError> {
    if parent.is_empty() {
        return Ok(());
    }
    let child = marker_sequence(child_lines);
    if child.len() != parent.len() {
        return Err(PatchError::MarkersBroken(format!(
            "the program had {} marker line(s), now it has {}",
            parent.len(),
            child.len()
        )));
    }
    if child != parent || (balanced(parent) && !balanced(&child)) {
        return Err(PatchError::MarkersBroken(
            "the START/END markers are no longer in order".into(),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Full rewrites

/// Whether `rewrite` repeats most of the parent's code outside its single
/// region (then it is a whole program that lost its markers).
fn contains_outside_code(parent: &[String], region: Region, rewrite: &[String]) -> bool {
    let outside: Vec<&str> = parent
        .iter()
        .enumerate()
        .filter(|(i, l)| !region.interior().contains(i) && marker_kind(l).is_none())
        .map(|(_, l)| l.trim())
        .filter(|t| t.len() > 3)
        .collect();
    if outside.is_empty() {
        return false;
    }
    let have: std::collections::HashSet<&str> = rewrite.iter().map(|l| l.trim()).collect();
    let found = outside.iter().filter(|t| have.contains(*t)).count();
    found * 2 > outside.len()
}

/// The lines of the rewrite's region `n` that replace the parent's region
/// `p`: its interior, plus code a rewrite's marker line carries before a
/// trailing marker (`    return y  # EVOLVE-BLOCK-END`) where the parent's
/// marker line has other code.
fn region_payload(parent: &[String], p: Region, rewrite: &[String], n: Region) -> Vec<String> {
    let mut payload = rewrite[n.interior()].to_vec();
    let carried = |lines: &[String], i: usize| {
        lines
            .get(i)
            .and_then(|l| trailing_marker(l))
            .map(|(code, _)| code.to_owned())
    };
    if let Some(code) = carried(rewrite, n.start)
        && carried(parent, p.start).as_deref() != Some(code.as_str())
    {
        payload.insert(0, code);
    }
    if let Some(code) = carried(rewrite, n.end)
        && carried(parent, p.end).as_deref() != Some(code.as_str())
    {
        payload.push(code);
    }
    payload
}

/// Non-blank lines of `lines`, trimmed, with their indices.
fn code_lines(lines: &[String]) -> Vec<(usize, &str)> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i, l.trim()))
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

/// The new contents of a single-region parent's region from a rewrite that
/// kept one of the two markers. With START only, the block runs from it to
/// the end of the rewrite, less the parent's code after the block when the
/// rewrite repeats it there; with END only, from the start of the rewrite
/// to it, less the parent's code before the block when repeated. Anything
/// else (the parent's code only partly repeated) is ambiguous and refused.
fn one_marker_payload(
    parent: &[String],
    r: Region,
    rewrite: &[String],
    marker: Marker,
) -> Result<Vec<String>, PatchError> {
    let at = rewrite
        .iter()
        .position(|l| marker_kind(l).is_some())
        .unwrap_or(0);
    let (present, missing) = match marker {
        Marker::Start => (EVOLVE_START, EVOLVE_END),
        Marker::End => (EVOLVE_END, EVOLVE_START),
    };
    let ambiguous = |reason: String| PatchError::OneMarker {
        present,
        missing,
        reason,
    };
    let mut payload = match marker {
        Marker::Start => {
            let tail = &rewrite[at + 1..];
            let after = &parent[(r.end + 1).min(parent.len())..];
            let (want, have) = (code_lines(after), code_lines(tail));
            let matched = want
                .iter()
                .rev()
                .zip(have.iter().rev())
                .take_while(|(w, h)| w.1 == h.1)
                .count();
            if matched == want.len() && matched > 0 {
                // Cut before the repeated code, and the blank lines the
                // parent has between its END line and that code.
                let mut cut = have[have.len() - matched].0;
                let gap = want[0].0;
                let mut dropped = 0;
                while cut > 0 && tail[cut - 1].trim().is_empty() && dropped < gap {
                    cut -= 1;
                    dropped += 1;
                }
                tail[..cut].to_vec()
            } else if matched == 0 {
                tail.to_vec()
            } else {
                return Err(ambiguous(format!(
                    "the code after it repeats only the last {matched} of the {} lines that follow \
                     the block in the current program",
                    want.len()
                )));
            }
        }
        Marker::End => {
            let head = &rewrite[..at];
            let before = &parent[..r.start];
            let (want, have) = (code_lines(before), code_lines(head));
            let matched = want
                .iter()
                .zip(&have)
                .take_while(|(w, h)| w.1 == h.1)
                .count();
            if matched == want.len() && matched > 0 {
                let mut from = have[matched - 1].0 + 1;
                let gap = before.len() - 1 - want[want.len() - 1].0;
                let mut dropped = 0;
                while from < head.len() && head[from].trim().is_empty() && dropped < gap {
                    from += 1;
                    dropped += 1;
                }
                head[from..].to_vec()
            } else if matched == 0 {
                head.to_vec()
            } else {
                return Err(ambiguous(format!(
                    "the code before it repeats only the first {matched} of the {} lines that \
                     precede the block in the current program",
                    want.len()
                )));
            }
        }
    };
    if contains_outside_code(parent, r, &payload) {
        return Err(ambiguous(
            "the block's new contents would repeat the current program's code outside the block"
                .into(),
        ));
    }
    if let Some((code, _)) = rewrite.get(at).and_then(|l| trailing_marker(l)) {
        match marker {
            Marker::Start => payload.insert(0, code.to_owned()),
            Marker::End => payload.push(code.to_owned()),
        }
    }
    Ok(payload)
}

/// Turn a rewritten program into the child. Without markers in the parent
/// the rewrite is the child. With markers, only the rewrite's region contents
/// are spliced into the parent (the code outside stays byte-identical); a
/// marker-less rewrite of a single-region parent is taken as that region's
/// new content unless it repeats the parent's outside code.
pub fn apply_full_rewrite(parent: &str, rewrite: &str) -> Result<String, PatchError> {
    let mut doc = Doc::new(parent);
    let new = Doc::new(rewrite);
    let parent_regions = evolve_regions(&doc.lines);
    if parent_regions.is_empty() {
        doc.lines = new.lines;
        if doc.lines.is_empty() || parent.is_empty() {
            doc.trailing_newline = true;
        }
        return Ok(doc.render());
    }
    let parent_markers = marker_sequence(&doc.lines);
    let new_markers = marker_sequence(&new.lines);
    let new_regions = evolve_regions(&new.lines);
    if new_markers.is_empty()
        && parent_regions.len() == 1
        && !contains_outside_code(&doc.lines, parent_regions[0], &new.lines)
    {
        let r = parent_regions[0];
        doc.lines.splice(r.interior(), new.lines);
    } else if new_regions.len() == parent_regions.len()
        && (balanced(&new_markers) || new_markers == parent_markers)
    {
        for (p, n) in parent_regions.iter().zip(&new_regions).rev() {
            let payload = region_payload(&doc.lines, *p, &new.lines, *n);
            doc.lines.splice(p.interior(), payload);
        }
    } else if parent_regions.len() == 1 && new_markers.len() == 1 {
        let r = parent_regions[0];
        let payload = one_marker_payload(&doc.lines, r, &new.lines, new_markers[0])?;
        doc.lines.splice(r.interior(), payload);
    } else {
        return Err(PatchError::MarkersDropped {
            parent_regions: parent_regions.len(),
            rewrite_regions: new_regions.len(),
        });
    }
    check_markers(&parent_markers, &doc.lines)?;
    Ok(doc.render())
}

// ---------------------------------------------------------------------------
// The whole reply

/// Turn a model reply into a child of `parent`: SEARCH/REPLACE blocks when
/// the reply has any, else (when allowed) a full rewrite from a fenced block.
/// A result equal to the parent is [`PatchError::NoOp`].
pub fn apply_reply(
    parent: &str,
    reply: &str,
    options: &PatchOptions<'_>,
) -> Result<PatchResult, PatchError> {
    let blocks = parse_blocks(reply)?;
    let (content, blocks_applied, kind) = if !blocks.is_empty() {
        let (content, applied) = apply_blocks(parent, &blocks)?;
        (content, applied, PatchKind::Diff)
    } else if !options.allow_full_rewrite {
        return Err(PatchError::NoBlocks);
    } else {
        let code = pick_rewrite(reply, options.language).ok_or(PatchError::NoEdits)?;
        (apply_full_rewrite(parent, &code)?, 0, PatchKind::Full)
    };
    if content == normalize_newlines(parent) {
        let what = match kind {
            PatchKind::Diff => "the SEARCH/REPLACE edits",
            PatchKind::Full => "the rewritten program",
        };
        return Err(PatchError::NoOp(format!(
            "no-op: {what} left the program unchanged; propose an edit that actually changes the code"
        )));
    }
    Ok(PatchResult {
        content,
        blocks_applied,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(search: &str, replace: &str) -> String {
        format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n")
    }

    fn diff(parent: &str, reply: &str) -> Result<PatchResult, PatchError> {
        apply_reply(
            parent,
            reply,
            &PatchOptions {
                language: "python",
                allow_full_rewrite: true,
            },
        )
    }

    const MARKED: &str = "import math\n# EVOLVE-BLOCK-START\ndef f(x):\n    y = x * 2\n    return y\n# EVOLVE-BLOCK-END\n\ndef run():\n    return f(3)\n";

    #[test]
    fn parses_blocks_with_prose_fences_crlf_and_loose_markers() {
        let reply = "I will change two things.\r\n```python\r\n  <<<<<<< SEARCH  \r\nold line 1\r\nold line 2\r\n =======\r\nnew line 1\r\nnew line 2\r\nnew line 3\r\n>>>>>>> REPLACE \r\n```\r\nAnd another:\r\n<<<<<<<< search\nc\n========\nd\n>>>>>>>> replace\n";
        let blocks = parse_blocks(reply).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].search, vec!["old line 1", "old line 2"]);
        assert_eq!(
            blocks[0].replace,
            vec!["new line 1", "new line 2", "new line 3"]
        );
        assert_eq!(blocks[1].search, vec!["c"]);
        assert_eq!(blocks[1].replace, vec!["d"]);
        assert!(parse_blocks("just prose, no edits").unwrap().is_empty());
    }

    #[test]
    fn malformed_blocks_are_errors_naming_the_block() {
        let err = parse_blocks(&format!("{}<<<<<<< SEARCH\nx\n", block("a", "b"))).unwrap_err();
        assert!(
            matches!(err, PatchError::Malformed { block: 2, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("======="));
        let err = parse_blocks("<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n").unwrap_err();
        assert!(err.to_string().contains("block 1"));
        let err = parse_blocks("<<<<<<< SEARCH\nx\n=======\ny\n").unwrap_err();
        assert!(err.to_string().contains(">>>>>>> REPLACE"));
    }

    #[test]
    fn applies_blocks_in_order_against_modified_text() {
        let parent = "line 1\nline 2\nline 3\n";
        let reply = format!(
            "{}{}",
            block("line 2", "replaced line 2"),
            block("replaced line 2\nline 3", "two\nthree")
        );
        let r = diff(parent, &reply).unwrap();
        assert_eq!(r.content, "line 1\ntwo\nthree\n");
        assert_eq!(r.blocks_applied, 2);
        assert_eq!(r.kind, PatchKind::Diff);
    }

    #[test]
    fn unmatched_search_is_strict_and_actionable() {
        let parent = "a = 1\nb = 2\n";
        let reply = format!("{}{}", block("a = 1", "a = 5"), block("c = 3", "c = 4"));
        let err = diff(parent, &reply).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, PatchError::NotFound { block: 2, .. }));
        assert!(msg.contains("block 2"), "{msg}");
        assert!(msg.contains("`c = 3`"), "{msg}");
        let err = diff("value = 10\n", &block("valeu = 10", "value = 11")).unwrap_err();
        assert!(
            err.to_string().contains("closest editable line is line 1"),
            "{err}"
        );
    }

    #[test]
    fn trailing_whitespace_and_indentation_tolerant() {
        let parent = "def f():\n    x = 1   \n    return x\n";
        let r = diff(parent, &block("    x = 1", "    x = 2")).unwrap();
        assert_eq!(r.content, "def f():\n    x = 2\n    return x\n");
        // The model dropped the indentation: the replacement is re-indented.
        let r = diff(
            parent,
            &block("x = 1\nreturn x", "x = 2\nif x:\n    x += 1\nreturn x"),
        )
        .unwrap();
        assert_eq!(
            r.content,
            "def f():\n    x = 2\n    if x:\n        x += 1\n    return x\n"
        );
        // Over-indented SEARCH: the replacement is de-indented.
        let r = diff(parent, &block("        x = 1", "        x = 3")).unwrap();
        assert_eq!(r.content, "def f():\n    x = 3\n    return x\n");
    }

    #[test]
    fn blank_edge_lines_in_search_are_tolerated() {
        let parent = "a = 1\nb = 2\n";
        let r = diff(parent, &block("\na = 1\n", "\na = 7\n")).unwrap();
        assert_eq!(r.content, "a = 7\nb = 2\n");
    }

    #[test]
    fn crlf_parent_and_reply_give_lf_output() {
        let parent = "a = 1\r\nb = 2\r\n";
        let reply = "<<<<<<< SEARCH\r\nb = 2\r\n=======\r\nb = 3\r\n>>>>>>> REPLACE\r\n";
        assert_eq!(diff(parent, reply).unwrap().content, "a = 1\nb = 3\n");
    }

    #[test]
    fn evolve_block_is_enforced() {
        let err = diff(MARKED, &block("def run():", "def main():")).unwrap_err();
        assert!(matches!(
            err,
            PatchError::OutsideEvolveBlock { block: 1, .. }
        ));
        assert!(err.to_string().contains("edit outside EVOLVE-BLOCK"));
        let r = diff(MARKED, &block("    y = x * 2", "    y = x * 3")).unwrap();
        assert!(r.content.contains("    y = x * 3\n"));
        assert!(r.content.starts_with("import math\n# EVOLVE-BLOCK-START\n"));
    }

    #[test]
    fn same_line_inside_and_outside_prefers_the_region() {
        let parent = "x = 1\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\nprint(x)\n";
        let r = diff(parent, &block("x = 1", "x = 2")).unwrap();
        assert_eq!(
            r.content,
            "x = 1\n# EVOLVE-BLOCK-START\nx = 2\n# EVOLVE-BLOCK-END\nprint(x)\n"
        );
    }

    #[test]
    fn markers_in_search_and_replace_cannot_be_removed() {
        // The model copied the START marker into SEARCH and dropped it from REPLACE.
        let reply = block("# EVOLVE-BLOCK-START\ndef f(x):", "def f(x, k=2):");
        let r = diff(MARKED, &reply).unwrap();
        assert!(r.content.contains("# EVOLVE-BLOCK-START\ndef f(x, k=2):\n"));
        // A SEARCH spanning the END marker into the harness is outside.
        let reply = block("    return y\n# EVOLVE-BLOCK-END\n", "    return y + 1\n");
        let r = diff(MARKED, &reply).unwrap();
        assert!(r.content.contains("    return y + 1\n# EVOLVE-BLOCK-END\n"));
        let reply = block(
            "    return y\n# EVOLVE-BLOCK-END\n\ndef run():",
            "    return 0",
        );
        let err = diff(MARKED, &reply).unwrap_err();
        assert!(
            matches!(err, PatchError::OutsideEvolveBlock { .. }),
            "{err}"
        );
        let err = diff(MARKED, &block("# EVOLVE-BLOCK-END", "")).unwrap_err();
        assert!(matches!(err, PatchError::MarkerOnlySearch { block: 1 }));
    }

    #[test]
    fn other_comment_prefixes_are_markers() {
        let parent = "int main() {\n  // EVOLVE-BLOCK-START\n  int n = 3;\n  // EVOLVE-BLOCK-END\n  return n;\n}\n";
        assert_eq!(evolve_regions(&Doc::new(parent).lines).len(), 1);
        let err = diff(parent, &block("  return n;", "  return 0;")).unwrap_err();
        assert!(matches!(err, PatchError::OutsideEvolveBlock { .. }));
        let r = diff(parent, &block("  int n = 3;", "  int n = 4;")).unwrap();
        assert!(r.content.contains("int n = 4;"));
        assert_eq!(marker_kind("-- EVOLVE-BLOCK-END"), Some(Marker::End));
        assert_eq!(
            marker_kind("<!-- EVOLVE-BLOCK-START -->"),
            Some(Marker::Start)
        );
        assert_eq!(marker_kind("x = 1"), None);
    }

    #[test]
    fn empty_search_inserts_at_end_of_last_region_or_file() {
        let r = diff(MARKED, &block("", "CONST = 5")).unwrap();
        assert!(
            r.content
                .contains("    return y\nCONST = 5\n# EVOLVE-BLOCK-END\n"),
            "{}",
            r.content
        );
        let r = diff("a = 1\n", &block("", "b = 2")).unwrap();
        assert_eq!(r.content, "a = 1\nb = 2\n");
        // Empty SEARCH and empty REPLACE is nothing: a no-op.
        let err = diff("a = 1\n", &block("", "")).unwrap_err();
        assert!(err.is_noop());
    }

    #[test]
    fn no_markers_means_whole_file_editable() {
        let r = diff(
            "def run():\n    return 1\n",
            &block("    return 1", "    return 2"),
        )
        .unwrap();
        assert_eq!(r.content, "def run():\n    return 2\n");
    }

    #[test]
    fn noop_edit_is_reported() {
        let err = diff("a = 1\n", &block("a = 1", "a = 1")).unwrap_err();
        assert!(err.is_noop());
        assert!(err.to_string().contains("unchanged"));
        // Only line endings differ: still a no-op.
        let err = diff("a = 1\r\n", &block("a = 1", "a = 1")).unwrap_err();
        assert!(err.is_noop());
    }

    #[test]
    fn full_rewrite_prefers_language_tag_then_any_fence() {
        let reply = "Here:\n```text\nnot this\n```\n```python\nx = 2\n```\n";
        let r = diff("x = 1\n", reply).unwrap();
        assert_eq!(r.content, "x = 2\n");
        assert_eq!(r.kind, PatchKind::Full);
        assert_eq!(r.blocks_applied, 0);
        let r = diff("x = 1\n", "```\nx = 3\n```").unwrap();
        assert_eq!(r.content, "x = 3\n");
        let r = diff("x = 1\n", "````py\nx = 4\n```not a closer\n````").unwrap();
        assert_eq!(r.content, "x = 4\n```not a closer\n");
        let err = diff("x = 1\n", "I have no idea.").unwrap_err();
        assert_eq!(err, PatchError::NoEdits);
        assert!(
            err.to_string()
                .contains("no SEARCH/REPLACE blocks and no code block")
        );
    }

    #[test]
    fn full_rewrite_can_be_disabled() {
        let err = apply_reply(
            "x = 1\n",
            "```python\nx = 2\n```",
            &PatchOptions {
                language: "python",
                allow_full_rewrite: false,
            },
        )
        .unwrap_err();
        assert_eq!(err, PatchError::NoBlocks);
    }

    #[test]
    fn full_rewrite_splices_regions_and_keeps_harness_identical() {
        let reply = "```python\nimport changed\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x * 9\n# EVOLVE-BLOCK-END\ndef run():\n    return 0\n```";
        let r = diff(MARKED, reply).unwrap();
        assert_eq!(
            r.content,
            "import math\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x * 9\n# EVOLVE-BLOCK-END\n\ndef run():\n    return f(3)\n"
        );
    }

    #[test]
    fn full_rewrite_without_markers_of_single_region() {
        // Just the region content: taken as the new region.
        let r = diff(MARKED, "```python\ndef f(x):\n    return x + 1\n```").unwrap();
        assert_eq!(
            r.content,
            "import math\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x + 1\n# EVOLVE-BLOCK-END\n\ndef run():\n    return f(3)\n"
        );
        // The whole program without markers: the markers were dropped.
        let reply = "```python\nimport math\ndef f(x):\n    return x + 1\n\ndef run():\n    return f(3)\n```";
        let err = diff(MARKED, reply).unwrap_err();
        assert!(matches!(
            err,
            PatchError::MarkersDropped {
                parent_regions: 1,
                rewrite_regions: 0
            }
        ));
        assert!(err.to_string().contains("dropped"));
    }

    /// ShinkaEvolve's cases: a rewrite that kept only one of the region's
    /// two markers is unambiguous when the parent has one region.
    const HEADED: &str =
        "# Header line\n# EVOLVE-BLOCK-START\nold_line()\n# EVOLVE-BLOCK-END\n# Footer line\n";
    const HEADED_NEW: &str =
        "# Header line\n# EVOLVE-BLOCK-START\nnew_line()\n# EVOLVE-BLOCK-END\n# Footer line\n";

    #[test]
    fn full_rewrite_with_the_start_marker_only() {
        let reply =
            "```python\n# Header line\n# EVOLVE-BLOCK-START\nnew_line()\n# Footer line\n```";
        assert_eq!(diff(HEADED, reply).unwrap().content, HEADED_NEW);
        // Without the footer: the rest of the rewrite is the block.
        let reply = "```python\n# EVOLVE-BLOCK-START\nnew_line()\nsecond()\n```";
        assert_eq!(
            diff(HEADED, reply).unwrap().content,
            HEADED_NEW.replace("new_line()\n", "new_line()\nsecond()\n")
        );
        // Blank lines the parent has between END and its footer are not
        // taken into the block.
        let r = diff(
            MARKED,
            "```python\nimport math\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x * 5\n\ndef run():\n    return f(3)\n```",
        )
        .unwrap();
        assert_eq!(
            r.content,
            MARKED.replace("    y = x * 2\n    return y\n", "    return x * 5\n")
        );
    }

    #[test]
    fn full_rewrite_with_the_end_marker_only() {
        let reply = "```python\n# Header line\nnew_line()\n# EVOLVE-BLOCK-END\n# Footer line\n```";
        assert_eq!(diff(HEADED, reply).unwrap().content, HEADED_NEW);
        let reply = "```python\nnew_line()\n# EVOLVE-BLOCK-END\n```";
        assert_eq!(diff(HEADED, reply).unwrap().content, HEADED_NEW);
    }

    #[test]
    fn one_marker_rewrite_that_is_ambiguous_is_refused_with_the_reason() {
        // The footer only partly repeated: where the block ends is unclear.
        let parent =
            "# EVOLVE-BLOCK-START\nold()\n# EVOLVE-BLOCK-END\nsetup_harness()\nrun_harness()\n";
        let reply = "```python\n# EVOLVE-BLOCK-START\nnew()\nchanged_setup()\nrun_harness()\n```";
        let err = diff(parent, reply).unwrap_err();
        assert!(matches!(err, PatchError::OneMarker { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("has EVOLVE-BLOCK-START but not EVOLVE-BLOCK-END"),
            "{msg}"
        );
        assert!(msg.contains("only the last 1 of the 2 lines"), "{msg}");
        // Two regions in the parent: which one the marker belongs to is unclear.
        let parent = "# EVOLVE-BLOCK-START\na = 1\n# EVOLVE-BLOCK-END\nmid\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n";
        let err = diff(parent, "```python\n# EVOLVE-BLOCK-START\na = 5\n```").unwrap_err();
        assert!(matches!(err, PatchError::MarkersDropped { .. }), "{err}");
    }

    #[test]
    fn a_trailing_end_marker_protects_the_code_after_it() {
        // ShinkaEvolve's case: `    y = 2# EVOLVE-BLOCK-END` closes the
        // block, so the harness after it stays out of reach.
        let parent = "# EVOLVE-BLOCK-START\ndef f():\n    x = 1\n    return x\n    y = 2# EVOLVE-BLOCK-END\ndef run():\n    return f()\n";
        let err = diff(parent, &block("def run():", "def main():")).unwrap_err();
        assert!(
            matches!(err, PatchError::OutsideEvolveBlock { .. }),
            "{err}"
        );
        let r = diff(parent, &block("    x = 1", "    x = 5")).unwrap();
        assert!(
            r.content
                .contains("    x = 5\n    return x\n    y = 2# EVOLVE-BLOCK-END\ndef run():")
        );
        // Insertion with an empty SEARCH goes before the END line.
        let r = diff(parent, &block("", "    z = 3")).unwrap();
        assert!(
            r.content
                .contains("    return x\n    z = 3\n    y = 2# EVOLVE-BLOCK-END\n"),
            "{}",
            r.content
        );
        // A full rewrite keeps the harness, and code a rewrite puts before its
        // own trailing END marker is kept in the block.
        let reply = "```python\n# EVOLVE-BLOCK-START\ndef f():\n    return 7  # EVOLVE-BLOCK-END\ndef run():\n    return 0\n```";
        let r = diff("# EVOLVE-BLOCK-START\ndef f():\n    return 1\n# EVOLVE-BLOCK-END\ndef run():\n    return f()\n", reply).unwrap();
        assert_eq!(
            r.content,
            "# EVOLVE-BLOCK-START\ndef f():\n    return 7\n# EVOLVE-BLOCK-END\ndef run():\n    return f()\n"
        );
    }

    #[test]
    fn full_rewrite_region_count_mismatch_is_an_error() {
        let parent = "# EVOLVE-BLOCK-START\na = 1\n# EVOLVE-BLOCK-END\nmid\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n";
        let reply = "```python\n# EVOLVE-BLOCK-START\na = 5\n# EVOLVE-BLOCK-END\n```";
        let err = diff(parent, reply).unwrap_err();
        assert!(matches!(
            err,
            PatchError::MarkersDropped {
                parent_regions: 2,
                rewrite_regions: 1
            }
        ));
        let reply = "```python\n# EVOLVE-BLOCK-START\na = 5\n# EVOLVE-BLOCK-END\nX\n# EVOLVE-BLOCK-START\nb = 6\n# EVOLVE-BLOCK-END\n```";
        let r = diff(parent, reply).unwrap();
        assert_eq!(
            r.content,
            "# EVOLVE-BLOCK-START\na = 5\n# EVOLVE-BLOCK-END\nmid\n# EVOLVE-BLOCK-START\nb = 6\n# EVOLVE-BLOCK-END\n"
        );
    }

    #[test]
    fn full_rewrite_identical_is_noop() {
        let err = diff("x = 1\n", "```python\nx = 1\n```").unwrap_err();
        assert!(err.is_noop());
    }

    #[test]
    fn marker_validation_catches_broken_markers() {
        let parent = ["# EVOLVE-BLOCK-START", "a", "# EVOLVE-BLOCK-END"];
        let seq = marker_sequence(&parent);
        assert!(balanced(&seq));
        let broken: Vec<String> = vec!["# EVOLVE-BLOCK-START".into(), "a".into()];
        assert!(matches!(
            check_markers(&seq, &broken),
            Err(PatchError::MarkersBroken(_))
        ));
        let swapped: Vec<String> = vec!["# EVOLVE-BLOCK-END".into(), "# EVOLVE-BLOCK-START".into()];
        assert!(check_markers(&seq, &swapped).is_err());
    }

    #[test]
    fn reindent_handles_tabs_and_deeper_lines() {
        let out = reindent(
            &["x = 1".to_owned(), "    y = 2".to_owned(), String::new()],
            "",
            "\t",
        );
        assert_eq!(out, vec!["\tx = 1", "\t    y = 2", ""]);
        let out = reindent(
            &["        a".to_owned(), "  b".to_owned()],
            "        ",
            "    ",
        );
        assert_eq!(out, vec!["    a", "b"]);
    }
}
