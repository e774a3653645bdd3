//! Edits across the files of a program that is a tree of files: a model
//! reply turned into changes of a path → text map. (Over 800 lines on
//! purpose: about half is the tests, realistic model replies in each form,
//! which read best next to the rules they pin down.)
//!
//! Four forms are read, in the order they appear in the reply (several may
//! be mixed):
//!
//! - SEARCH/REPLACE blocks with the file's path on a line above them
//!   (aider's convention: the path alone on its line, maybe in backticks or
//!   bold, maybe above the opening fence); a block without a path edits the
//!   file the previous block named, or the only editable file. An empty
//!   SEARCH on a file that does not exist creates it.
//! - Unified diffs (`--- a/x` / `+++ b/x`, several files), applied with the
//!   tolerance of [`super::hunks`]; `/dev/null` adds or deletes a file.
//! - The `*** Begin Patch` format ([`super::begin_patch`]).
//! - When none of those is there: full rewrites, a fenced block whose path
//!   is named above it or in its info string (` ```python src/x.py `); an
//!   unnamed block rewrites the only editable file.
//!
//! Every path must stay inside the tree ([`super::paths::clean_path`]); a
//! file may change, be added or be deleted only where the caller's
//! `editable` predicate allows, which gives the rule to tell the model when
//! it refuses. Binary files and symlinks are never edited. A file with
//! EVOLVE-BLOCK markers keeps everything outside its blocks, whatever the
//! form. Pure: nothing here touches a disk.

use std::collections::{BTreeMap, BTreeSet};

use super::begin_patch::{self, FileOp};
use super::hunks::{Hunk, HunkError, HunkLine, apply_hunks};
use super::markers::{evolve_regions, marker_sequence};
use super::normalize_newlines;
use super::patch::{
    Doc, EditBlock, PatchError, PatchKind, apply_blocks, apply_full_rewrite, is_divider,
    is_replace_marker, is_search_marker,
};
use super::paths::{PathError, clean_path, path_in_line};
use super::udiff;

/// A file of the tree that is not text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opaque {
    /// Bytes that are not UTF-8 text: carried unchanged, never shown.
    Binary,
    /// A symbolic link: carried as it is, never followed or edited.
    Symlink,
}

impl Opaque {
    fn describe(self) -> &'static str {
        match self {
            Self::Binary => "a binary file",
            Self::Symlink => "a symbolic link",
        }
    }
}

/// The files of a program, as an edit sees them.
#[derive(Clone, Copy, Debug)]
pub struct TreeView<'a> {
    /// Text files by path (`/`-separated, relative).
    pub files: &'a BTreeMap<String, String>,
    /// Files that are not text, by path.
    pub opaque: &'a BTreeMap<String, Opaque>,
}

/// What an edit does to a file, as the editable rule is asked about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditAction {
    /// An existing file's text changes.
    Change,
    /// A new file is added.
    Add,
    /// A file is removed.
    Delete,
}

impl EditAction {
    fn gerund(self) -> &'static str {
        match self {
            Self::Change => "changing",
            Self::Add => "adding",
            Self::Delete => "deleting",
        }
    }
}

/// The editable rule: whether an action on the file at a path is allowed;
/// the error is the rule that refuses it (`editable files match
/// src/**/*.py`), told to the model.
pub type Editable<'a> = &'a dyn Fn(&str, EditAction) -> Result<(), String>;

/// What an edit may do.
#[derive(Clone, Copy)]
pub struct EditRules<'a> {
    /// The editable rule.
    pub editable: Editable<'a>,
    /// Most files the tree may hold after the edit (opaque ones included).
    pub max_files: usize,
    /// The language's fence tag, preferred for an unnamed full rewrite.
    pub language: &'a str,
    /// Whether fenced blocks are taken as full rewrites when the reply has
    /// no edits.
    pub allow_full_rewrite: bool,
}

impl std::fmt::Debug for EditRules<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditRules")
            .field("max_files", &self.max_files)
            .field("language", &self.language)
            .field("allow_full_rewrite", &self.allow_full_rewrite)
            .finish_non_exhaustive()
    }
}

/// What happens to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileChange {
    /// The file's new text (LF line endings), new or changed.
    Write(String),
    /// The file is removed.
    Delete,
}

/// The forms of edit a reply can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EditFormat {
    /// SEARCH/REPLACE blocks.
    SearchReplace,
    /// Unified diff.
    UnifiedDiff,
    /// `*** Begin Patch`.
    BeginPatch,
    /// A whole file in a fenced block.
    FullRewrite,
}

/// A reply applied to a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEdit {
    /// Every file that changes, by path.
    pub changes: BTreeMap<String, FileChange>,
    /// The forms the reply used.
    pub formats: BTreeSet<EditFormat>,
    /// How many edits (blocks, file sections, patch operations, rewrites)
    /// were applied.
    pub edits: usize,
}

impl TreeEdit {
    /// `Full` when every edit was a full rewrite, else `Diff`.
    pub fn kind(&self) -> PatchKind {
        if self.formats.iter().all(|f| *f == EditFormat::FullRewrite) {
            PatchKind::Full
        } else {
            PatchKind::Diff
        }
    }

    /// The changes applied to `files`.
    pub fn apply_to(&self, files: &mut BTreeMap<String, String>) {
        for (path, change) in &self.changes {
            match change {
                FileChange::Write(text) => {
                    files.insert(path.clone(), text.clone());
                }
                FileChange::Delete => {
                    files.remove(path);
                }
            }
        }
    }
}

/// Why a reply could not be applied. Every message names the file and says
/// what to do differently: it is shown to the model on retry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeEditError {
    /// A path that is not inside the tree.
    #[error("refused: {0}")]
    Path(#[from] PathError),
    /// The editable rule refuses the file.
    #[error("refused: {action} `{path}` is not allowed: {rule}")]
    Refused {
        path: String,
        /// `changing`, `adding`, `deleting`.
        action: &'static str,
        /// The rule, as the predicate gave it.
        rule: String,
    },
    /// A binary file or symlink.
    #[error(
        "refused: `{path}` is {kind}: it is kept unchanged and cannot be edited, replaced or deleted"
    )]
    Opaque { path: String, kind: &'static str },
    /// An added file over the file-count limit.
    #[error(
        "refused: adding `{path}` would make {count} files, over this task's limit of {limit}; \
         change existing files instead"
    )]
    TooManyFiles {
        path: String,
        count: usize,
        limit: usize,
    },
    /// An edit of a file that does not exist.
    #[error("`{path}` is not a file of the program; the files are: {files}")]
    NoSuchFile { path: String, files: String },
    /// An added file whose path clashes with a folder or file of the tree.
    #[error("refused: adding `{path}` clashes with `{other}`, which is already in the program")]
    Clash { path: String, other: String },
    /// A SEARCH/REPLACE block or rewrite whose file cannot be told.
    #[error(
        "{what} does not say which file it edits; put the file's path on its own line right above \
         it (the editable files are: {files})"
    )]
    NoPath { what: String, files: String },
    /// Deleting a file whose EVOLVE-BLOCK markers protect part of it.
    #[error(
        "refused: deleting `{0}` is not allowed: it has EVOLVE-BLOCK markers, so only the lines \
         between them may change"
    )]
    DeleteMarked(String),
    /// A hunk or added text that changes a marked file outside its blocks.
    #[error(
        "refused: the edit changes `{path}` outside its EVOLVE-BLOCK regions (line {line}: \
         `{text}`); only the lines between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END may change, \
         the marker lines included"
    )]
    OutsideRegion {
        path: String,
        line: usize,
        text: String,
    },
    /// A SEARCH/REPLACE block or full rewrite that failed in its file.
    #[error("in `{path}`: {error}")]
    File { path: String, error: PatchError },
    /// A hunk that failed in its file.
    #[error("in `{path}`: {error}")]
    Hunk { path: String, error: HunkError },
    /// SEARCH/REPLACE markers out of order.
    #[error("{0}")]
    Malformed(PatchError),
    /// A `*** Begin Patch` that cannot be parsed.
    #[error("{0}")]
    BeginPatch(#[from] begin_patch::ParseError),
    /// Nothing in the reply is an edit.
    #[error(
        "no edit found in the reply; name each file on its own line above its \
         `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks, or send a unified diff \
         (`--- a/path` / `+++ b/path`), or a `*** Begin Patch` … `*** End Patch`{rewrite}"
    )]
    NoEdits { rewrite: &'static str },
    /// The edits changed nothing.
    #[error("no-op: the edits left every file unchanged; propose an edit that changes the code")]
    NoOp,
}

impl TreeEditError {
    /// True for the no-op outcome (the edits applied but changed nothing).
    pub fn is_noop(&self) -> bool {
        matches!(
            self,
            Self::NoOp
                | Self::File {
                    error: PatchError::NoOp(_),
                    ..
                }
        )
    }
}

/// One edit found in a reply, before it is checked and applied.
#[derive(Clone, Debug)]
enum Op {
    Block {
        path: Option<String>,
        block: EditBlock,
        number: usize,
    },
    Hunks {
        path: String,
        hunks: Vec<Hunk>,
        format: EditFormat,
    },
    Add {
        path: String,
        content: String,
        format: EditFormat,
    },
    Delete {
        path: String,
        format: EditFormat,
    },
    Move {
        from: String,
        to: String,
        hunks: Vec<Hunk>,
        format: EditFormat,
    },
    Rewrite {
        path: Option<String>,
        content: String,
    },
}

impl Op {
    fn format(&self) -> EditFormat {
        match self {
            Self::Block { .. } => EditFormat::SearchReplace,
            Self::Rewrite { .. } => EditFormat::FullRewrite,
            Self::Hunks { format, .. }
            | Self::Add { format, .. }
            | Self::Delete { format, .. }
            | Self::Move { format, .. } => *format,
        }
    }
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// A path in a fence's info string (` ```python src/x.py `,
/// ` ```python:src/x.py `, ` ```src/x.py `).
fn fence_path(line: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    let info = line.trim().trim_start_matches('`');
    info.split(|c: char| c.is_whitespace() || c == ':')
        .filter(|t| !t.is_empty())
        .find_map(|t| {
            let t = t.strip_prefix("title=").unwrap_or(t).trim_matches('"');
            (t.contains('/') || t.contains('.') || known(t))
                .then(|| path_in_line(t, known))
                .flatten()
        })
}

/// The path named right above line `i`: up to three lines back, across
/// blank lines and opening fences (whose info string may hold it).
fn path_above(lines: &[&str], i: usize, known: &dyn Fn(&str) -> bool) -> Option<String> {
    for j in (i.saturating_sub(3)..i).rev() {
        let l = lines[j];
        if l.trim().is_empty() {
            continue;
        }
        if is_fence(l) {
            if let Some(p) = fence_path(l, known) {
                return Some(p);
            }
            continue;
        }
        if is_replace_marker(l) {
            return None;
        }
        return path_in_line(l, known);
    }
    None
}

/// Parse one SEARCH/REPLACE block whose `<<<<<<< SEARCH` is `lines[i]`.
fn parse_block(lines: &[&str], i: usize, number: usize) -> Result<(EditBlock, usize), PatchError> {
    let malformed = |reason: &str| PatchError::Malformed {
        block: number,
        reason: reason.to_owned(),
    };
    let mut block = EditBlock::default();
    let mut at = i + 1;
    let mut in_replace = false;
    while at < lines.len() {
        let line = lines[at];
        if is_search_marker(line) {
            return Err(malformed(if in_replace {
                "a new `<<<<<<< SEARCH` started before `>>>>>>> REPLACE` closed this block"
            } else {
                "a new `<<<<<<< SEARCH` started before `=======`"
            }));
        }
        if !in_replace && is_divider(line) {
            in_replace = true;
        } else if is_replace_marker(line) {
            if !in_replace {
                return Err(malformed(
                    "`>>>>>>> REPLACE` came before the `=======` divider",
                ));
            }
            return Ok((block, at + 1));
        } else if in_replace {
            block.replace.push(line.to_owned());
        } else {
            block.search.push(line.to_owned());
        }
        at += 1;
    }
    Err(malformed(if in_replace {
        "the reply ended before `>>>>>>> REPLACE`"
    } else {
        "the reply ended before the `=======` divider"
    }))
}

/// The edits of a reply, in order: SEARCH/REPLACE blocks, unified diffs
/// and `*** Begin Patch` operations.
fn scan_edits(lines: &[&str], known: &dyn Fn(&str) -> bool) -> Result<Vec<Op>, TreeEditError> {
    let mut ops = Vec::new();
    let mut current: Option<String> = None;
    let mut blocks = 0;
    let mut i = 0;
    while i < lines.len() {
        if begin_patch::starts_at(lines[i]) {
            let (file_ops, next) = begin_patch::parse(lines, i)?;
            let format = EditFormat::BeginPatch;
            for op in file_ops {
                ops.push(match op {
                    FileOp::Add { path, content } => Op::Add {
                        path,
                        content,
                        format,
                    },
                    FileOp::Delete { path } => Op::Delete { path, format },
                    FileOp::Update {
                        path,
                        move_to: Some(to),
                        hunks,
                    } => Op::Move {
                        from: path,
                        to,
                        hunks,
                        format,
                    },
                    FileOp::Update {
                        path,
                        move_to: None,
                        hunks,
                    } => Op::Hunks {
                        path,
                        hunks,
                        format,
                    },
                });
            }
            i = next;
        } else if is_search_marker(lines[i]) {
            blocks += 1;
            if let Some(p) = path_above(lines, i, known) {
                current = Some(p);
            }
            let (block, next) = parse_block(lines, i, blocks).map_err(TreeEditError::Malformed)?;
            ops.push(Op::Block {
                path: current.clone(),
                block,
                number: blocks,
            });
            i = next;
        } else if udiff::starts_at(lines, i) {
            let (diff, next) = udiff::parse_file(lines, i);
            let format = EditFormat::UnifiedDiff;
            let added = |hunks: &[Hunk]| -> String {
                let mut s = String::new();
                for l in hunks.iter().flat_map(|h| &h.lines) {
                    if let HunkLine::Add(t) | HunkLine::Context(t) = l {
                        s.push_str(t);
                        s.push('\n');
                    }
                }
                s
            };
            match (diff.old_path, diff.new_path) {
                (None, Some(path)) => ops.push(Op::Add {
                    content: added(&diff.hunks),
                    path,
                    format,
                }),
                (Some(path), None) => ops.push(Op::Delete { path, format }),
                (Some(old), Some(new)) if old != new && known(&old) && !known(&new) => {
                    ops.push(Op::Move {
                        from: old,
                        to: new,
                        hunks: diff.hunks,
                        format,
                    })
                }
                (Some(_), Some(path)) => ops.push(Op::Hunks {
                    path,
                    hunks: diff.hunks,
                    format,
                }),
                (None, None) => {}
            }
            i = next;
        } else {
            i += 1;
        }
    }
    Ok(ops)
}

/// Full rewrites: fenced blocks whose path is named; when none is, the one
/// block [`super::fences::pick_rewrite`] picks, for the only editable file.
fn scan_rewrites(
    reply: &str,
    lines: &[&str],
    known: &dyn Fn(&str) -> bool,
    language: &str,
) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        let ticks = t.chars().take_while(|c| *c == '`').count();
        if ticks < 3 || t[ticks..].contains('`') {
            i += 1;
            continue;
        }
        let path = fence_path(lines[i], known).or_else(|| path_above(lines, i, known));
        let mut body = Vec::new();
        let mut at = i + 1;
        let mut closed = false;
        while at < lines.len() {
            let c = lines[at].trim();
            if c.len() >= ticks && c.chars().all(|ch| ch == '`') {
                closed = true;
                break;
            }
            body.push(lines[at]);
            at += 1;
        }
        if closed && let Some(path) = path {
            let mut content = body.join("\n");
            content.push('\n');
            ops.push(Op::Rewrite {
                path: Some(path),
                content,
            });
        }
        i = at + 1;
    }
    if ops.is_empty()
        && let Some(code) = super::fences::pick_rewrite(reply, language)
    {
        ops.push(Op::Rewrite {
            path: None,
            content: code,
        });
    }
    ops
}

/// The text files `rules` lets change, in path order.
pub fn editable_files(tree: &TreeView<'_>, rules: &EditRules<'_>) -> Vec<String> {
    tree.files
        .keys()
        .filter(|p| (rules.editable)(p, EditAction::Change).is_ok())
        .cloned()
        .collect()
}

fn list(paths: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut s = paths
        .iter()
        .take(SHOWN)
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        s.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    if s.is_empty() {
        s.push_str("none");
    }
    s
}

/// Whether the text `new` keeps everything of `old` outside its
/// EVOLVE-BLOCK regions, the marker lines included (the rule every edit of
/// a marked file is held to): the first line of `old` (1-based) that
/// changed, with its text, when it does not. A text without markers may
/// change anywhere.
pub fn outside_markers_kept(old: &str, new: &str) -> Result<(), (usize, String)> {
    let (old, new) = (super::patch::Doc::new(old), super::patch::Doc::new(new));
    outside_kept(&old.lines, &new.lines)
}

/// Check that `new` keeps everything of `old` outside its EVOLVE-BLOCK
/// regions (marker lines included). Returns the first line (1-based, in
/// `old`) that changed, with its text.
fn outside_kept(old: &[String], new: &[String]) -> Result<(), (usize, String)> {
    let regions = evolve_regions(old);
    if regions.is_empty() {
        return Ok(());
    }
    let new_regions = evolve_regions(new);
    let first_marker_diff = || {
        regions
            .iter()
            .flat_map(|r| [r.start, r.end])
            .find(|&i| i < old.len())
            .map(|i| (i + 1, old[i].trim().to_owned()))
            .unwrap_or((1, String::new()))
    };
    if marker_sequence(old) != marker_sequence(new) || new_regions.len() != regions.len() {
        return Err(first_marker_diff());
    }
    // The fixed segments: before the first region's interior, between
    // regions, after the last.
    let segments = |rs: &[super::markers::Region], len: usize| {
        let mut out = Vec::new();
        let mut from = 0;
        for r in rs {
            out.push(from..(r.start + 1).min(len));
            from = r.end;
        }
        out.push(from.min(len)..len);
        out
    };
    for (a, b) in segments(&regions, old.len())
        .into_iter()
        .zip(segments(&new_regions, new.len()))
    {
        let (sa, sb) = (&old[a.clone()], &new[b]);
        if let Some(k) = (0..sa.len().max(sb.len())).find(|&k| sa.get(k) != sb.get(k)) {
            let line = a.start + k.min(sa.len().saturating_sub(1));
            return Err((
                line + 1,
                old.get(line)
                    .map(|l| l.trim().to_owned())
                    .unwrap_or_default(),
            ));
        }
    }
    Ok(())
}

/// The state of an edit in progress.
struct Work<'a> {
    tree: &'a TreeView<'a>,
    rules: &'a EditRules<'a>,
    files: BTreeMap<String, String>,
}

impl Work<'_> {
    fn allowed(&self, path: &str, action: EditAction) -> Result<(), TreeEditError> {
        (self.rules.editable)(path, action).map_err(|rule| TreeEditError::Refused {
            path: path.to_owned(),
            action: action.gerund(),
            rule,
        })
    }

    /// The checked path of an edit: inside the tree, not opaque.
    fn path(&self, raw: &str) -> Result<String, TreeEditError> {
        let path = clean_path(raw)?;
        if let Some(kind) = self.tree.opaque.get(&path) {
            return Err(TreeEditError::Opaque {
                path,
                kind: kind.describe(),
            });
        }
        Ok(path)
    }

    /// The path of an edit that names none: the only editable file.
    fn default_path(&self, path: Option<String>, what: String) -> Result<String, TreeEditError> {
        if let Some(p) = path {
            return self.path(&p);
        }
        let editable = editable_files(self.tree, self.rules);
        match editable.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(TreeEditError::NoPath {
                what,
                files: list(&editable),
            }),
        }
    }

    fn no_such_file(&self, path: String) -> TreeEditError {
        let files: Vec<String> = self.files.keys().cloned().collect();
        TreeEditError::NoSuchFile {
            path,
            files: list(&files),
        }
    }

    fn add(&mut self, path: String, content: &str) -> Result<(), TreeEditError> {
        if self.files.contains_key(&path) {
            return self.rewrite(path, content);
        }
        let under = format!("{path}/");
        let clash = self
            .files
            .keys()
            .chain(self.tree.opaque.keys())
            .find(|other| other.starts_with(&under) || path.starts_with(&format!("{other}/")));
        if let Some(other) = clash {
            return Err(TreeEditError::Clash {
                path,
                other: other.clone(),
            });
        }
        self.allowed(&path, EditAction::Add)?;
        let count = self.files.len() + self.tree.opaque.len() + 1;
        if count > self.rules.max_files {
            return Err(TreeEditError::TooManyFiles {
                path,
                count,
                limit: self.rules.max_files,
            });
        }
        self.files.insert(path, normalize_newlines(content));
        Ok(())
    }

    fn rewrite(&mut self, path: String, content: &str) -> Result<(), TreeEditError> {
        let Some(old) = self.files.get(&path) else {
            return self.add(path, content);
        };
        self.allowed(&path, EditAction::Change)?;
        let new = apply_full_rewrite(old, content).map_err(|error| TreeEditError::File {
            path: path.clone(),
            error,
        })?;
        self.files.insert(path, new);
        Ok(())
    }

    fn delete(&mut self, path: String) -> Result<(), TreeEditError> {
        let Some(old) = self.files.get(&path) else {
            return Err(self.no_such_file(path));
        };
        self.allowed(&path, EditAction::Delete)?;
        if !marker_sequence(&Doc::new(old).lines).is_empty() {
            return Err(TreeEditError::DeleteMarked(path));
        }
        self.files.remove(&path);
        Ok(())
    }

    fn hunks(&mut self, path: String, hunks: &[Hunk]) -> Result<(), TreeEditError> {
        let Some(old) = self.files.get(&path) else {
            if hunks.iter().all(|h| h.old().is_empty()) {
                let mut content = String::new();
                for l in hunks.iter().flat_map(|h| &h.lines) {
                    if let HunkLine::Add(t) = l {
                        content.push_str(t);
                        content.push('\n');
                    }
                }
                return self.add(path, &content);
            }
            return Err(self.no_such_file(path));
        };
        self.allowed(&path, EditAction::Change)?;
        let mut doc = Doc::new(old);
        let before = doc.lines.clone();
        apply_hunks(&mut doc.lines, hunks).map_err(|error| TreeEditError::Hunk {
            path: path.clone(),
            error,
        })?;
        if doc.lines.is_empty() {
            doc.trailing_newline = false;
        } else if before.is_empty() {
            doc.trailing_newline = true;
        }
        outside_kept(&before, &doc.lines).map_err(|(line, text)| TreeEditError::OutsideRegion {
            path: path.clone(),
            line,
            text,
        })?;
        self.files.insert(path, doc.render());
        Ok(())
    }

    fn block(
        &mut self,
        path: String,
        block: &EditBlock,
        number: usize,
    ) -> Result<(), TreeEditError> {
        let Some(old) = self.files.get(&path) else {
            if block.search.iter().all(|l| l.trim().is_empty()) {
                let mut content = block.replace.join("\n");
                content.push('\n');
                return self.add(path, &content);
            }
            return Err(self.no_such_file(path));
        };
        self.allowed(&path, EditAction::Change)?;
        let renumber = |e: PatchError| match e {
            PatchError::Malformed { reason, .. } => PatchError::Malformed {
                block: number,
                reason,
            },
            PatchError::NotFound {
                first_line, hint, ..
            } => PatchError::NotFound {
                block: number,
                first_line,
                hint,
            },
            PatchError::OutsideEvolveBlock { first_line, .. } => PatchError::OutsideEvolveBlock {
                block: number,
                first_line,
            },
            PatchError::MarkerOnlySearch { .. } => PatchError::MarkerOnlySearch { block: number },
            other => other,
        };
        let (new, _) =
            apply_blocks(old, std::slice::from_ref(block)).map_err(|e| TreeEditError::File {
                path: path.clone(),
                error: renumber(e),
            })?;
        self.files.insert(path, new);
        Ok(())
    }

    fn apply(&mut self, op: Op) -> Result<(), TreeEditError> {
        match op {
            Op::Block {
                path,
                block,
                number,
            } => {
                let path = self.default_path(path, format!("SEARCH/REPLACE block {number}"))?;
                self.block(path, &block, number)
            }
            Op::Hunks { path, hunks, .. } => {
                let path = self.path(&path)?;
                self.hunks(path, &hunks)
            }
            Op::Add { path, content, .. } => {
                let path = self.path(&path)?;
                self.add(path, &content)
            }
            Op::Delete { path, .. } => {
                let path = self.path(&path)?;
                self.delete(path)
            }
            Op::Move {
                from, to, hunks, ..
            } => {
                let (from, to) = (self.path(&from)?, self.path(&to)?);
                if !hunks.is_empty() {
                    self.hunks(from.clone(), &hunks)?;
                }
                let text = self.files.get(&from).cloned().unwrap_or_default();
                self.delete(from)?;
                self.add(to, &text)
            }
            Op::Rewrite { path, content } => {
                let path = self.default_path(path, "the code block".to_owned())?;
                self.rewrite(path, &content)
            }
        }
    }
}

/// Apply a model reply to `tree`: the edits it holds, in order, checked
/// against `rules`. The result lists every file that changes; a reply that
/// changes nothing is [`TreeEditError::NoOp`].
pub fn apply_tree_reply(
    tree: &TreeView<'_>,
    reply: &str,
    rules: &EditRules<'_>,
) -> Result<TreeEdit, TreeEditError> {
    let text = normalize_newlines(reply);
    let lines: Vec<&str> = text.split('\n').collect();
    let known = |p: &str| tree.files.contains_key(p) || tree.opaque.contains_key(p);
    let mut ops = scan_edits(&lines, &known)?;
    if ops.is_empty() {
        if !rules.allow_full_rewrite {
            return Err(TreeEditError::NoEdits { rewrite: "" });
        }
        ops = scan_rewrites(&text, &lines, &known, rules.language);
        if ops.is_empty() {
            return Err(TreeEditError::NoEdits {
                rewrite: ", or a whole file in a code block with its path on the line above",
            });
        }
    }
    let mut work = Work {
        tree,
        rules,
        files: tree.files.clone(),
    };
    let mut formats = BTreeSet::new();
    let edits = ops.len();
    for op in ops {
        formats.insert(op.format());
        work.apply(op)?;
    }
    let mut changes = BTreeMap::new();
    for (path, text) in &work.files {
        if tree.files.get(path) != Some(text) {
            changes.insert(path.clone(), FileChange::Write(text.clone()));
        }
    }
    for path in tree.files.keys() {
        if !work.files.contains_key(path) {
            changes.insert(path.clone(), FileChange::Delete);
        }
    }
    if changes.is_empty() {
        return Err(TreeEditError::NoOp);
    }
    Ok(TreeEdit {
        changes,
        formats,
        edits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCORE: &str = "from src.helper import weight\n\n\ndef score(xs):\n    total = 0\n    for x in xs:\n        total += weight(x) * x\n    return total\n";
    const HELPER: &str = "import math\n\n# EVOLVE-BLOCK-START\ndef weight(x):\n    return 1.0\n# EVOLVE-BLOCK-END\n\n\ndef clamp(v):\n    return max(0.0, min(1.0, v))\n";
    const TEST: &str =
        "from src.score import score\n\n\ndef test_score():\n    assert score([1, 2]) == 3\n";

    struct Fixture {
        files: BTreeMap<String, String>,
        opaque: BTreeMap<String, Opaque>,
    }

    fn fixture() -> Fixture {
        let files = [
            ("src/score.py", SCORE),
            ("src/helper.py", HELPER),
            ("tests/test_score.py", TEST),
            ("README.md", "# Scorer\n\nRun `pytest`.\n"),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_owned(), t.to_owned()))
        .collect();
        let opaque = [
            ("data/weights.bin".to_owned(), Opaque::Binary),
            ("src/latest.py".to_owned(), Opaque::Symlink),
        ]
        .into_iter()
        .collect();
        Fixture { files, opaque }
    }

    fn src_py(path: &str, _: EditAction) -> Result<(), String> {
        if path.starts_with("src/") && path.ends_with(".py") {
            Ok(())
        } else {
            Err("editable files match `src/**/*.py`".into())
        }
    }

    fn apply_with(f: &Fixture, reply: &str, max_files: usize) -> Result<TreeEdit, TreeEditError> {
        let tree = TreeView {
            files: &f.files,
            opaque: &f.opaque,
        };
        let rules = EditRules {
            editable: &src_py,
            max_files,
            language: "python",
            allow_full_rewrite: true,
        };
        apply_tree_reply(&tree, reply, &rules)
    }

    fn apply(reply: &str) -> Result<TreeEdit, TreeEditError> {
        apply_with(&fixture(), reply, 50)
    }

    fn written<'a>(edit: &'a TreeEdit, path: &str) -> &'a str {
        match edit.changes.get(path) {
            Some(FileChange::Write(t)) => t,
            other => panic!("{path}: {other:?} in {:?}", edit.changes.keys()),
        }
    }

    #[test]
    fn search_replace_blocks_named_the_ways_models_name_them() {
        // aider's layout: the path alone above the fence; then a bold path,
        // prose in between, a block that inherits the path, CRLF.
        let reply = "I'll weight by the square and cap the total.\r\n\r\nsrc/helper.py\r\n```python\r\n<<<<<<< SEARCH\r\n    return 1.0\r\n=======\r\n    return x * x\r\n>>>>>>> REPLACE\r\n```\r\n\r\nNow the scorer:\r\n\r\n**src/score.py**\r\n```python\r\n<<<<<<< SEARCH\r\n    return total\r\n=======\r\n    return min(total, 100)\r\n>>>>>>> REPLACE\r\n```\r\n\r\n```python\r\n<<<<<<< SEARCH\r\n    total = 0\r\n=======\r\n    total = 0.0\r\n>>>>>>> REPLACE\r\n```\r\n";
        let e = apply(reply).unwrap();
        assert_eq!(e.edits, 3);
        assert_eq!(e.formats, BTreeSet::from([EditFormat::SearchReplace]));
        assert_eq!(e.kind(), PatchKind::Diff);
        assert_eq!(e.changes.len(), 2);
        assert!(
            written(&e, "src/helper.py")
                .contains("def weight(x):\n    return x * x\n# EVOLVE-BLOCK-END")
        );
        let score = written(&e, "src/score.py");
        assert!(
            score.contains("    total = 0.0\n") && score.contains("return min(total, 100)\n"),
            "{score}"
        );
        assert!(!score.contains('\r'));

        // A path in backticks inside a heading, and one in the fence's info
        // string (```python src/x.py).
        for header in [
            "### `src/score.py`\n```python\n",
            "```python src/score.py\n",
            "In `src/score.py`:\n\n```\n",
        ] {
            let reply = format!(
                "{header}<<<<<<< SEARCH\n    return total\n=======\n    return -total\n>>>>>>> REPLACE\n```\n"
            );
            let e = apply(&reply).unwrap();
            assert!(
                written(&e, "src/score.py").contains("return -total"),
                "{header}"
            );
        }
    }

    #[test]
    fn a_block_without_a_path_needs_a_single_editable_file() {
        let reply = "<<<<<<< SEARCH\n    return total\n=======\n    return 0\n>>>>>>> REPLACE\n";
        let err = apply(reply).unwrap_err();
        assert!(matches!(err, TreeEditError::NoPath { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("SEARCH/REPLACE block 1")
                && msg.contains("`src/helper.py`, `src/score.py`"),
            "{msg}"
        );
        // With one editable file, the block is for it (a single-file task).
        let mut f = fixture();
        f.files.remove("src/helper.py");
        let e = apply_with(&f, reply, 50).unwrap();
        assert!(written(&e, "src/score.py").ends_with("    return 0\n"));
    }

    #[test]
    fn block_errors_name_the_file_and_the_block() {
        let reply = "src/score.py\n<<<<<<< SEARCH\n    total = 0\n=======\n    total = 1\n>>>>>>> REPLACE\n\nsrc/helper.py\n<<<<<<< SEARCH\ndef clamp(v):\n=======\ndef clamp(v, lo=0.0):\n>>>>>>> REPLACE\n";
        let err = apply(reply).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "in `src/helper.py`: SEARCH/REPLACE block 2: edit outside EVOLVE-BLOCK"
            ),
            "{msg}"
        );
        let reply =
            "src/score.py\n<<<<<<< SEARCH\n    totl = 0\n=======\n    total = 1\n>>>>>>> REPLACE\n";
        let msg = apply(reply).unwrap_err().to_string();
        assert!(
            msg.contains("in `src/score.py`") && msg.contains("closest editable line is line 5"),
            "{msg}"
        );
        let msg = apply("src/score.py\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("block 1 is malformed"), "{msg}");
    }

    #[test]
    fn an_empty_search_adds_a_file_where_the_rule_allows() {
        let reply = "src/util.py\n```python\n<<<<<<< SEARCH\n=======\ndef double(x):\n    return 2 * x\n>>>>>>> REPLACE\n```\n";
        let e = apply(reply).unwrap();
        assert_eq!(
            written(&e, "src/util.py"),
            "def double(x):\n    return 2 * x\n"
        );
        let reply = reply.replace("src/util.py", "tests/test_util.py");
        let msg = apply(&reply).unwrap_err().to_string();
        assert_eq!(
            msg,
            "refused: adding `tests/test_util.py` is not allowed: editable files match `src/**/*.py`"
        );
    }

    #[test]
    fn unified_diffs_across_files_with_wrong_numbers_and_an_added_file() {
        let reply = "Here is the patch:\n\n```diff\ndiff --git a/src/score.py b/src/score.py\nindex 1a2b3c4..5d6e7f8 100644\n--- a/src/score.py\n+++ b/src/score.py\n@@ -20,4 +20,5 @@ def score(xs):\n     total = 0\n     for x in xs:\n-        total += weight(x) * x\n+        w = weight(x)\n+        total += w * x\n     return total\n--- a/src/helper.py\n+++ b/src/helper.py\n@@ -4,2 +4,2 @@\n def weight(x):\n-    return 1.0\n+    return 0.5 + x / 10\n--- /dev/null\n+++ b/src/extra.py\n@@ -0,0 +1,2 @@\n+def extra():\n+    return 1\n```\n\nThe weights now grow with x.";
        let e = apply(reply).unwrap();
        assert_eq!(e.formats, BTreeSet::from([EditFormat::UnifiedDiff]));
        assert_eq!(e.edits, 3);
        assert!(
            written(&e, "src/score.py")
                .contains("        w = weight(x)\n        total += w * x\n    return total\n")
        );
        assert!(written(&e, "src/helper.py").contains("    return 0.5 + x / 10\n"));
        assert_eq!(written(&e, "src/extra.py"), "def extra():\n    return 1\n");
    }

    #[test]
    fn a_unified_diff_keeps_a_marked_file_outside_its_blocks() {
        let reply = "--- a/src/helper.py\n+++ b/src/helper.py\n@@ -9,2 +9,2 @@\n def clamp(v):\n-    return max(0.0, min(1.0, v))\n+    return v\n";
        let msg = apply(reply).unwrap_err().to_string();
        assert!(
            msg.contains("changes `src/helper.py` outside its EVOLVE-BLOCK regions (line 10"),
            "{msg}"
        );
        // Dropping a marker line is refused too.
        let reply = "--- a/src/helper.py\n+++ b/src/helper.py\n@@ -5,2 +5,1 @@\n     return 1.0\n-# EVOLVE-BLOCK-END\n";
        let err = apply(reply).unwrap_err();
        assert!(matches!(err, TreeEditError::OutsideRegion { .. }), "{err}");
        // Deleting the file is refused.
        let reply = "--- a/src/helper.py\n+++ /dev/null\n@@ -1,10 +0,0 @@\n-import math\n";
        let msg = apply(reply).unwrap_err().to_string();
        assert!(
            msg.contains("deleting `src/helper.py` is not allowed: it has EVOLVE-BLOCK markers"),
            "{msg}"
        );
    }

    #[test]
    fn begin_patch_updates_adds_moves_and_deletes() {
        let reply = "I'll restructure slightly.\n\n*** Begin Patch\n*** Update File: src/score.py\n@@ def score(xs):\n-    total = 0\n+    total = 0.0\n@@\n-    return total\n+    return round(total, 6)\n*** Update File: src/helper.py\n@@ def weight(x):\n-    return 1.0\n+    return math.sqrt(abs(x))\n*** Add File: src/constants.py\n+SCALE = 2.0\n+\n+OFFSET = 0.1\n*** End Patch\n";
        let e = apply(reply).unwrap();
        assert_eq!(e.formats, BTreeSet::from([EditFormat::BeginPatch]));
        assert_eq!(e.edits, 3);
        let score = written(&e, "src/score.py");
        assert!(
            score.contains("    total = 0.0\n") && score.ends_with("    return round(total, 6)\n"),
            "{score}"
        );
        assert!(
            written(&e, "src/helper.py")
                .contains("    return math.sqrt(abs(x))\n# EVOLVE-BLOCK-END")
        );
        assert_eq!(
            written(&e, "src/constants.py"),
            "SCALE = 2.0\n\nOFFSET = 0.1\n"
        );

        let mut f = fixture();
        f.files.insert("src/old.py".into(), "A = 1\n".into());
        let reply = "*** Begin Patch\n*** Update File: src/old.py\n*** Move to: src/new.py\n@@\n-A = 1\n+A = 2\n*** End Patch";
        let e = apply_with(&f, reply, 50).unwrap();
        assert_eq!(e.changes.get("src/old.py"), Some(&FileChange::Delete));
        assert_eq!(written(&e, "src/new.py"), "A = 2\n");
        let reply = "*** Begin Patch\n*** Delete File: src/old.py\n*** End Patch";
        let e = apply_with(&f, reply, 50).unwrap();
        assert_eq!(e.changes.get("src/old.py"), Some(&FileChange::Delete));
        // A hunk that does not match names its file and hunk.
        let reply = "*** Begin Patch\n*** Update File: src/score.py\n@@\n-    total = 42\n+    total = 0\n*** End Patch";
        let msg = apply(reply).unwrap_err().to_string();
        assert!(
            msg.starts_with(
                "in `src/score.py`: hunk 1: its context and removed lines were not found"
            ),
            "{msg}"
        );
    }

    #[test]
    fn full_rewrites_of_named_files() {
        let new_score = "def score(xs):\n    return sum(xs)\n";
        for reply in [
            format!("Simpler:\n\nsrc/score.py\n```python\n{new_score}```\n"),
            format!("```python src/score.py\n{new_score}```\n"),
            format!("**`src/score.py`**\n\n```py\n{new_score}```\n"),
        ] {
            let e = apply(&reply).unwrap();
            assert_eq!(e.kind(), PatchKind::Full);
            assert_eq!(e.formats, BTreeSet::from([EditFormat::FullRewrite]));
            assert_eq!(written(&e, "src/score.py"), new_score, "{reply}");
        }
        // A rewrite of a marked file keeps its harness.
        let reply = "src/helper.py\n```python\nimport os\n# EVOLVE-BLOCK-START\ndef weight(x):\n    return 2.0\n# EVOLVE-BLOCK-END\n```\n";
        let e = apply(reply).unwrap();
        assert_eq!(
            written(&e, "src/helper.py"),
            HELPER.replace("return 1.0", "return 2.0")
        );
        // An unnamed block with two editable files is ambiguous.
        let msg = apply("```python\nx = 1\n```").unwrap_err().to_string();
        assert!(
            msg.contains("the code block does not say which file it edits"),
            "{msg}"
        );
    }

    #[test]
    fn refusals_name_the_path_and_the_rule() {
        let f = fixture();
        let cases: Vec<(&str, &str)> = vec![
            (
                "tests/test_score.py\n<<<<<<< SEARCH\n    assert score([1, 2]) == 3\n=======\n    assert True\n>>>>>>> REPLACE\n",
                "refused: changing `tests/test_score.py` is not allowed: editable files match `src/**/*.py`",
            ),
            (
                "*** Begin Patch\n*** Add File: ../outside.py\n+x = 1\n*** End Patch",
                "refused: `../outside.py` leaves the program's folder (`..`)",
            ),
            (
                "*** Begin Patch\n*** Add File: /etc/cron.d/job\n+x = 1\n*** End Patch",
                "refused: `/etc/cron.d/job` is an absolute path",
            ),
            (
                "--- a/data/weights.bin\n+++ b/data/weights.bin\n@@ -1 +1 @@\n-a\n+b\n",
                "refused: `data/weights.bin` is a binary file: it is kept unchanged",
            ),
            (
                "*** Begin Patch\n*** Delete File: src/latest.py\n*** End Patch",
                "refused: `src/latest.py` is a symbolic link",
            ),
            (
                "*** Begin Patch\n*** Delete File: README.md\n*** End Patch",
                "refused: deleting `README.md` is not allowed: editable files match `src/**/*.py`",
            ),
            (
                "*** Begin Patch\n*** Update File: src/nope.py\n@@\n-a\n+b\n*** End Patch",
                "`src/nope.py` is not a file of the program; the files are: `README.md`, `src/helper.py`",
            ),
            (
                "*** Begin Patch\n*** Add File: src/score.py/inner.py\n+x = 1\n*** End Patch",
                "refused: adding `src/score.py/inner.py` clashes with `src/score.py`",
            ),
        ];
        for (reply, want) in cases {
            let msg = apply_with(&f, reply, 50).unwrap_err().to_string();
            assert!(msg.starts_with(want), "{msg}\nwanted: {want}");
        }
        // Six files now (two opaque): a seventh is over a limit of 6.
        let reply = "*** Begin Patch\n*** Add File: src/more.py\n+x = 1\n*** End Patch";
        let msg = apply_with(&f, reply, 6).unwrap_err().to_string();
        assert_eq!(
            msg,
            "refused: adding `src/more.py` would make 7 files, over this task's limit of 6; change existing files instead"
        );
        assert!(apply_with(&f, reply, 7).is_ok());
    }

    #[test]
    fn mixed_forms_apply_in_order() {
        let reply = "First the helper:\n\nsrc/helper.py\n<<<<<<< SEARCH\n    return 1.0\n=======\n    return 3.0\n>>>>>>> REPLACE\n\nThen the scorer:\n\n```diff\n--- a/src/score.py\n+++ b/src/score.py\n@@ -8 +8 @@\n-    return total\n+    return total / 3\n```\n";
        let e = apply(reply).unwrap();
        assert_eq!(
            e.formats,
            BTreeSet::from([EditFormat::SearchReplace, EditFormat::UnifiedDiff])
        );
        assert!(written(&e, "src/helper.py").contains("return 3.0"));
        assert!(written(&e, "src/score.py").ends_with("return total / 3\n"));
    }

    #[test]
    fn nothing_to_apply() {
        let err = apply("I think the code is fine as it is.").unwrap_err();
        assert!(matches!(err, TreeEditError::NoEdits { .. }));
        assert!(err.to_string().contains("*** Begin Patch"), "{err}");
        let err = apply("src/score.py\n<<<<<<< SEARCH\n    total = 0\n=======\n    total = 0\n>>>>>>> REPLACE\n").unwrap_err();
        assert!(err.is_noop(), "{err}");
        let mut edit = apply("src/score.py\n<<<<<<< SEARCH\n    total = 0\n=======\n    total = 1\n>>>>>>> REPLACE\n").unwrap();
        let mut files = fixture().files;
        edit.apply_to(&mut files);
        assert!(files["src/score.py"].contains("total = 1"));
        edit.changes.insert("README.md".into(), FileChange::Delete);
        edit.apply_to(&mut files);
        assert!(!files.contains_key("README.md"));
    }
}
