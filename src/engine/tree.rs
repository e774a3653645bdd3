//! A genome's program: a tree of files, each a (path, contents) pair, with a
//! hash of the whole tree.
//!
//! A single-file task's program is a one-entry tree ([`Tree::single`]); a
//! repository task's is a folder of files ([`Tree::folder`]). Selection,
//! population, memory and novelty see the same type for both. File contents
//! are [`Blob`]s: immutable, shared (`Arc`) between a parent and its children
//! so that a child that changes one file of a 200-file tree costs one file,
//! and named by the SHA-256 of their bytes, which is how the archive stores
//! them once ([`crate::engine::archive`]).
//!
//! Paths are relative, `/`-separated, without `.` or `..` components
//! ([`check_path`]). Text files are UTF-8 without NUL bytes; anything else is
//! binary: carried unchanged, never shown to a model.
//!
//! Serialized (the genome's `content` in JSON), a single-file tree is its
//! text, exactly as records of single-file runs have always held it; a
//! folder is `{"tree": id, "files": {path: text}, "binary": {path: base64}}`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The hex SHA-256 of a blob's bytes, or of a tree's manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Digest(String);

impl Digest {
    /// The SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let d = ring::digest::digest(&ring::digest::SHA256, bytes);
        let mut hex = String::with_capacity(64);
        for b in d.as_ref() {
            write!(hex, "{b:02x}").ok();
        }
        Self(hex)
    }

    /// A digest read back from a record; `None` unless 64 hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        (text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| Self(text.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 hex digits, for labels.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(12)]
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Data {
    Text(String),
    Binary(Vec<u8>),
}

#[derive(Debug)]
struct BlobInner {
    id: Digest,
    data: Data,
}

/// One file's contents: text or binary, with its digest. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Blob(Arc<BlobInner>);

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for Blob {}

impl Blob {
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        let id = Digest::of(text.as_bytes());
        Self(Arc::new(BlobInner {
            id,
            data: Data::Text(text),
        }))
    }

    /// Text when the bytes are UTF-8 without NUL, binary otherwise.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let id = Digest::of(&bytes);
        let data = if bytes.contains(&0) {
            Data::Binary(bytes)
        } else {
            match String::from_utf8(bytes) {
                Ok(text) => Data::Text(text),
                Err(e) => Data::Binary(e.into_bytes()),
            }
        };
        Self(Arc::new(BlobInner { id, data }))
    }

    pub fn id(&self) -> &Digest {
        &self.0.id
    }

    /// The text, or `None` for a binary file.
    pub fn as_text(&self) -> Option<&str> {
        match &self.0.data {
            Data::Text(t) => Some(t),
            Data::Binary(_) => None,
        }
    }

    pub fn is_binary(&self) -> bool {
        matches!(self.0.data, Data::Binary(_))
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.0.data {
            Data::Text(t) => t.as_bytes(),
            Data::Binary(b) => b,
        }
    }

    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a path cannot name a file of a tree (the rules of
/// [`crate::engine::foreign::RelPath`]).
pub use crate::engine::foreign::PathRefused as PathError;

/// Check that `path` is relative, `/`-separated, stays inside the tree and
/// names no git metadata (a [`crate::engine::foreign::RelPath`]).
pub fn check_path(path: &str) -> Result<(), PathError> {
    crate::engine::foreign::RelPath::new(path).map(|_| ())
}

/// How a file of a child differs from its parent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One changed file: its path, how, and the lines added and removed (0 for
/// a binary file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    pub added: usize,
    pub removed: usize,
    pub binary: bool,
}

/// A program: one file (a single-file task) or a folder of files.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    files: BTreeMap<String, Blob>,
    single: bool,
    id: Digest,
}

impl PartialEq for Tree {
    fn eq(&self, other: &Self) -> bool {
        self.single == other.single && self.id == other.id
    }
}

/// A program as one text ([`Tree::text`]).
impl std::fmt::Display for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// A single-file program equals its text (a folder equals no text).
impl PartialEq<str> for Tree {
    fn eq(&self, other: &str) -> bool {
        self.single_text() == Some(other)
    }
}

impl PartialEq<&str> for Tree {
    fn eq(&self, other: &&str) -> bool {
        self.single_text() == Some(*other)
    }
}

/// The path a single-file tree read back from a record has (a record keeps
/// a single-file program as its text; its task names the file).
pub const SINGLE_FILE: &str = "program";

impl Tree {
    /// A single-file program: one entry named `path` (the task's program
    /// file).
    pub fn single(path: impl Into<String>, text: impl Into<String>) -> Self {
        let mut files = BTreeMap::new();
        files.insert(path.into(), Blob::text(text));
        Self::make(files, true)
    }

    /// A folder of files. Paths are checked by whoever made them (task
    /// loading, edits); see [`check_path`].
    pub fn folder(files: BTreeMap<String, Blob>) -> Self {
        Self::make(files, false)
    }

    /// A folder of text files.
    pub fn from_texts(texts: BTreeMap<String, String>) -> Self {
        Self::folder(texts.into_iter().map(|(p, t)| (p, Blob::text(t))).collect())
    }

    fn make(files: BTreeMap<String, Blob>, single: bool) -> Self {
        let id = if single {
            // a single-file program is its text, whatever its file is called
            let blob = files.values().next().map(|b| b.id().as_str()).unwrap_or("");
            Digest::of(format!("single\0{blob}").as_bytes())
        } else {
            let mut manifest = String::with_capacity(files.len() * 96);
            for (path, blob) in &files {
                manifest.push_str(path);
                manifest.push('\0');
                manifest.push_str(blob.id().as_str());
                manifest.push('\n');
            }
            Digest::of(manifest.as_bytes())
        };
        Self { files, single, id }
    }

    /// The hash of the tree: equal trees have equal ids.
    pub fn id(&self) -> &Digest {
        &self.id
    }

    /// True for a single-file task's program.
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// The text of a single-file program (`None` for a folder).
    pub fn single_text(&self) -> Option<&str> {
        if self.single {
            self.files.values().next().and_then(Blob::as_text)
        } else {
            None
        }
    }

    /// The program's text as one string: a single file's text, or every
    /// text file of a folder under a `=== path ===` line, in path order
    /// (for measures over whole programs: lengths, similarity, novelty).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        if let Some(text) = self.single_text() {
            return std::borrow::Cow::Borrowed(text);
        }
        let mut out = String::new();
        for (path, blob) in &self.files {
            if let Some(text) = blob.as_text() {
                out.push_str("=== ");
                out.push_str(path);
                out.push_str(" ===\n");
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// Every file, in path order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &Blob)> {
        self.files.iter().map(|(p, b)| (p.as_str(), b))
    }

    pub fn get(&self, path: &str) -> Option<&Blob> {
        self.files.get(path)
    }

    /// A text file's text.
    pub fn text_of(&self, path: &str) -> Option<&str> {
        self.files.get(path).and_then(Blob::as_text)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The characters of the longest text file (a program's length, which
    /// `max_code_length` limits per file).
    pub fn longest_text_chars(&self) -> usize {
        self.files
            .values()
            .filter_map(Blob::as_text)
            .map(|t| t.chars().count())
            .max()
            .unwrap_or(0)
    }

    /// Total bytes of every file.
    pub fn bytes(&self) -> usize {
        self.files.values().map(Blob::len).sum()
    }

    /// The text files as a path → text map (what the edit functions take).
    pub fn texts(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .filter_map(|(p, b)| b.as_text().map(|t| (p.clone(), t.to_owned())))
            .collect()
    }

    /// This tree with its text files replaced by `texts`: a path in `texts`
    /// gets that text (changed or added), a text file missing from it is
    /// deleted, binary files are carried unchanged (a path in `texts` that
    /// is binary here is refused by the caller's edit rules, not here: it
    /// becomes text). A file whose text is unchanged keeps its blob, so the
    /// parent and the child share it. A single-file program stays single
    /// when `texts` still names its one file.
    pub fn with_texts(&self, texts: BTreeMap<String, String>) -> Self {
        let mut files: BTreeMap<String, Blob> = self
            .files
            .iter()
            .filter(|(p, b)| b.is_binary() && !texts.contains_key(*p))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect();
        for (path, text) in texts {
            let blob = match self.files.get(&path) {
                Some(old) if old.as_text() == Some(text.as_str()) => old.clone(),
                _ => Blob::text(text),
            };
            files.insert(path, blob);
        }
        let single = self.single && files.len() == 1 && files.keys().eq(self.files.keys());
        Self::make(files, single)
    }

    /// A single-file program with this text, keeping the file's name (a
    /// folder's edits go through [`Tree::with_texts`]).
    pub fn with_single_text(&self, text: impl Into<String>) -> Self {
        let path = self
            .files
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| SINGLE_FILE.to_owned());
        Self::single(path, text)
    }

    /// This tree with `f` applied to every text file: `None` when `f`
    /// changed none (it returns `None` for a file it leaves as it is).
    pub fn map_texts(&self, mut f: impl FnMut(&str) -> Option<String>) -> Option<Self> {
        let mut changed = false;
        let files = self
            .files
            .iter()
            .map(|(p, b)| {
                let blob = match b.as_text().and_then(&mut f) {
                    Some(text) => {
                        changed = true;
                        Blob::text(text)
                    }
                    None => b.clone(),
                };
                (p.clone(), blob)
            })
            .collect();
        changed.then(|| Self::make(files, self.single))
    }

    /// The files that differ from `parent`, in path order.
    pub fn changes_from(&self, parent: &Tree) -> Vec<FileChange> {
        let mut out = Vec::new();
        let counts = |old: Option<&Blob>, new: Option<&Blob>| -> (usize, usize, bool) {
            match (text_or_empty(old), text_or_empty(new)) {
                (Some(o), Some(n)) => {
                    let diff = similar::TextDiff::from_lines(o, n);
                    let (mut a, mut r) = (0, 0);
                    for change in diff.iter_all_changes() {
                        match change.tag() {
                            similar::ChangeTag::Insert => a += 1,
                            similar::ChangeTag::Delete => r += 1,
                            similar::ChangeTag::Equal => {}
                        }
                    }
                    (a, r, false)
                }
                _ => (0, 0, true),
            }
        };
        let same_single = self.single && parent.single;
        for (path, blob) in &self.files {
            let old = if same_single {
                parent.files.values().next()
            } else {
                parent.files.get(path)
            };
            match old {
                Some(o) if o.id() == blob.id() => {}
                _ => {
                    let (added, removed, binary) = counts(old, Some(blob));
                    out.push(FileChange {
                        path: path.clone(),
                        kind: if old.is_some() {
                            ChangeKind::Modified
                        } else {
                            ChangeKind::Added
                        },
                        added,
                        removed,
                        binary,
                    });
                }
            }
        }
        if !same_single {
            for (path, blob) in &parent.files {
                if !self.files.contains_key(path) {
                    let (added, removed, binary) = counts(Some(blob), None);
                    out.push(FileChange {
                        path: path.clone(),
                        kind: ChangeKind::Deleted,
                        added,
                        removed,
                        binary,
                    });
                }
            }
            out.sort_by(|a, b| a.path.cmp(&b.path));
        }
        out
    }

    /// The unified diff from `parent`: for single-file programs the diff of
    /// their texts (`--- parent` / `+++ child`, as always), for folders one
    /// section per changed file with `--- a/path` / `+++ b/path` headers
    /// (`/dev/null` for an added or deleted file), as `git diff` writes it.
    pub fn diff_from(&self, parent: &Tree) -> String {
        if let (Some(old), Some(new)) = (parent.single_text(), self.single_text()) {
            return crate::engine::text::unified_diff(old, new);
        }
        let mut out = String::new();
        for change in self.changes_from(parent) {
            out.push_str(&file_diff(
                parent.get(&change.path),
                self.get(&change.path),
                &change.path,
            ));
        }
        out
    }

    /// Write every file under `dir` (created), as the tree holds it: each
    /// path checked again and written through a
    /// [`crate::engine::foreign::Target`] (no link in `dir` is followed).
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        let target = crate::engine::foreign::Target::create(dir)?;
        for (path, blob) in &self.files {
            let rel = crate::engine::foreign::RelPath::new(path).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{}: refused: {e}", dir.display()),
                )
            })?;
            target.write(&rel, blob.bytes())?;
        }
        Ok(())
    }

    /// Write every file under `dir` (created) as a hard link to a read-only
    /// copy of its blob in `store` (one file per blob, named by its hash,
    /// written once, mode 0444; on `dir`'s file system). A link allocates no
    /// inode and copies no data, which is most of a write's cost on a disk
    /// (see `benches/tree_storage.rs`). The copies are shared: only for a
    /// folder nothing writes, such as a Slurm candidate's staging folder,
    /// which the runner reads and the candidate never sees. A file that
    /// cannot be linked (another file system, a link limit) is written.
    /// Paths are checked and written as by [`Tree::write_to`].
    pub fn link_into(&self, dir: &Path, store: &Path) -> std::io::Result<()> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        std::fs::create_dir_all(store)?;
        let target = crate::engine::foreign::Target::create(dir)?;
        let store_dir = cap_std::fs::Dir::open_ambient_dir(store, cap_std::ambient_authority())?;
        for (path, blob) in &self.files {
            let rel = crate::engine::foreign::RelPath::new(path).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{}: refused: {e}", dir.display()),
                )
            })?;
            let stored = store.join(blob.id().as_str());
            if !stored.exists() {
                // Through a unique temporary name: evaluations in flight
                // may store the same blob at once.
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let temp = store.join(format!(".{}-{}-{n}", blob.id().short(), std::process::id()));
                std::fs::write(&temp, blob.bytes())?;
                crate::engine::platform::set_mode(&temp, 0o444)?;
                std::fs::rename(&temp, &stored)?;
            }
            target.link_or_write(&rel, &store_dir, blob.id().as_str(), blob.bytes())?;
        }
        Ok(())
    }
}

/// A single-file program named [`SINGLE_FILE`] (tests and doubles).
impl From<String> for Tree {
    fn from(text: String) -> Self {
        Self::single(SINGLE_FILE, text)
    }
}

impl From<&str> for Tree {
    fn from(text: &str) -> Self {
        Self::single(SINGLE_FILE, text)
    }
}

/// A file's text, `""` for no file, `None` for a binary one.
fn text_or_empty(b: Option<&Blob>) -> Option<&str> {
    b.map_or(Some(""), Blob::as_text)
}

/// The unified diff of one file between two versions (`None`: absent).
pub fn file_diff(old: Option<&Blob>, new: Option<&Blob>, path: &str) -> String {
    let a = old.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{path}"));
    let b = new.map_or_else(|| "/dev/null".to_owned(), |_| format!("b/{path}"));
    match (text_or_empty(old), text_or_empty(new)) {
        (Some(o), Some(n)) => similar::TextDiff::from_lines(o, n)
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string(),
        _ => format!("Binary files {a} and {b} differ\n"),
    }
}

impl Serialize for Tree {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Some(text) = self.single_text() {
            return s.serialize_str(text);
        }
        #[derive(Serialize)]
        struct Folder<'a> {
            tree: &'a Digest,
            files: BTreeMap<&'a str, &'a str>,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            binary: BTreeMap<&'a str, String>,
        }
        let mut folder = Folder {
            tree: &self.id,
            files: BTreeMap::new(),
            binary: BTreeMap::new(),
        };
        for (path, blob) in &self.files {
            match blob.as_text() {
                Some(t) => {
                    folder.files.insert(path, t);
                }
                None => {
                    folder.binary.insert(
                        path,
                        base64::engine::general_purpose::STANDARD.encode(blob.bytes()),
                    );
                }
            }
        }
        folder.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Single(String),
            Folder {
                #[serde(default)]
                files: BTreeMap<String, String>,
                #[serde(default)]
                binary: BTreeMap<String, String>,
            },
        }
        match Form::deserialize(d)? {
            Form::Single(text) => Ok(Self::single(SINGLE_FILE, text)),
            Form::Folder { files, binary } => {
                let mut out: BTreeMap<String, Blob> = BTreeMap::new();
                for (path, text) in files {
                    check_path(&path).map_err(serde::de::Error::custom)?;
                    out.insert(path, Blob::text(text));
                }
                for (path, b64) in binary {
                    check_path(&path).map_err(serde::de::Error::custom)?;
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map_err(|e| serde::de::Error::custom(format!("{path}: {e}")))?;
                    out.insert(path, Blob::from_bytes(bytes));
                }
                Ok(Self::folder(out))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(entries: &[(&str, &str)]) -> Tree {
        Tree::from_texts(
            entries
                .iter()
                .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn a_single_file_serializes_as_its_text_and_reads_back() {
        let t = Tree::single("initial_program.py", "x = 1\n");
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"x = 1\\n\"");
        let back: Tree = serde_json::from_str("\"x = 1\\n\"").unwrap();
        assert!(back.is_single());
        assert_eq!(back.single_text(), Some("x = 1\n"));
        // the file's name is not part of a single-file program's identity
        assert_eq!(back, t);
        assert_eq!(back.id(), t.id());
    }

    #[test]
    fn a_folder_round_trips_with_binary_files() {
        let mut files = BTreeMap::new();
        files.insert("src/a.py".to_owned(), Blob::text("a = 1\n"));
        files.insert(
            "data/x.bin".to_owned(),
            Blob::from_bytes(vec![0, 159, 146, 150]),
        );
        let t = Tree::folder(files);
        let json = serde_json::to_string(&t).unwrap();
        let back: Tree = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert!(back.get("data/x.bin").unwrap().is_binary());
        assert_eq!(back.get("data/x.bin").unwrap().bytes(), &[0, 159, 146, 150]);
        assert_eq!(back.texts().len(), 1, "binary files are not text");
        let bad = r#"{"files": {"../x": "y"}}"#;
        let err = serde_json::from_str::<Tree>(bad).unwrap_err().to_string();
        assert!(err.contains("leaves the program's folder"), "{err}");
    }

    #[test]
    fn with_texts_shares_unchanged_blobs_and_keeps_binaries() {
        let mut files = BTreeMap::new();
        files.insert("a.py".to_owned(), Blob::text("a\n"));
        files.insert("b.py".to_owned(), Blob::text("b\n"));
        files.insert("img.png".to_owned(), Blob::from_bytes(vec![0x89, 0, 1]));
        let parent = Tree::folder(files);
        let mut texts = parent.texts();
        texts.insert("b.py".into(), "B\n".into());
        texts.remove("a.py");
        texts.insert("c/new.py".into(), "n\n".into());
        let child = parent.with_texts(texts);
        assert!(child.get("img.png").unwrap().is_binary());
        assert!(child.get("a.py").is_none());
        let changes = child.changes_from(&parent);
        let summary: Vec<(&str, ChangeKind, usize, usize)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.kind, c.added, c.removed))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a.py", ChangeKind::Deleted, 0, 1),
                ("b.py", ChangeKind::Modified, 1, 1),
                ("c/new.py", ChangeKind::Added, 1, 0),
            ]
        );
        let same = parent.with_texts(parent.texts());
        assert_eq!(same, parent);
        assert!(Arc::ptr_eq(
            &same.get("a.py").unwrap().0,
            &parent.get("a.py").unwrap().0
        ));
        let diff = child.diff_from(&parent);
        assert!(diff.contains("--- a/b.py\n+++ b/b.py\n"), "{diff}");
        assert!(diff.contains("--- /dev/null\n+++ b/c/new.py\n"), "{diff}");
        assert!(diff.contains("--- a/a.py\n+++ /dev/null\n"), "{diff}");
    }

    #[test]
    fn tree_ids_follow_paths_and_contents() {
        let a = folder(&[("x.py", "1"), ("y.py", "2")]);
        assert_eq!(a.id(), folder(&[("y.py", "2"), ("x.py", "1")]).id());
        assert_ne!(a.id(), folder(&[("x.py", "2"), ("y.py", "1")]).id());
        assert_ne!(a.id(), folder(&[("x.py", "1"), ("z.py", "2")]).id());
        assert_eq!(Digest::of(b"").as_str().len(), 64);
        assert!(Digest::parse(a.id().as_str()).is_some());
        assert!(Digest::parse("zz").is_none());
    }

    #[test]
    fn paths_are_checked() {
        assert!(check_path("src/a.py").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../b",
            "a//b",
            "./a",
            "a\\b",
            "C:/x",
        ] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tree_is_written_to_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let t = folder(&[
            ("pkg/a.py", "a\n"),
            ("pkg/sub/b.py", "b\n"),
            ("top.txt", "t"),
        ]);
        t.write_to(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pkg/sub/b.py")).unwrap(),
            "b\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("top.txt")).unwrap(),
            "t"
        );
        assert_eq!(
            t.text(),
            "=== pkg/a.py ===\na\n=== pkg/sub/b.py ===\nb\n=== top.txt ===\nt\n"
        );
    }
}
