//! A repository task's program: a folder (`initial_program/`, `initial/`)
//! read into a [`Tree`], and the rules for which of its files may change and
//! which the model is shown.
//!
//! The task's `config.yaml` says it with globs (see [`super::glob`]):
//! `evolve: ["src/**/*.py"]` (the files that may change, and where files may
//! be added or deleted), `context: ["README.md", "tests/*.py"]` (read-only
//! files the model is shown), `exclude: [...]` (never part of the program).
//! Without `evolve`, every text file with EVOLVE-BLOCK markers may change
//! and nothing may be added or deleted. `.gitignore` files in the folder are
//! honoured, and `.git/` is never read. Binary files are carried unchanged
//! and never shown to a model.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::Markers;
use super::glob::{Gitignore, Glob};
use crate::engine::foreign::{EntryKind, Folder, Limit, Links, Refused, Why};
use crate::engine::tree::{Blob, Tree, check_path};

/// Largest file a program folder may hold.
pub const MAX_FILE_BYTES: u64 = Limit::PROGRAM_FILE.bytes;
/// Most files a program folder may hold (also the most a child may have).
pub const MAX_FILES: usize = 5_000;
/// Largest total size of a program folder.
pub const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a program folder cannot be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: a symlink to {target}, outside the program folder; copy the file in or exclude it"
    )]
    SymlinkOutside { path: PathBuf, target: PathBuf },
    #[error("{path}: a symlink to a folder; copy the folder in or exclude it")]
    SymlinkedFolder { path: PathBuf },
    #[error(
        "{path}: {size} bytes, over the {limit}-byte limit for one file; exclude it (config.yaml's exclude) or make it smaller"
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error(
        "{dir}: more than {limit} files; exclude what the program does not need (config.yaml's exclude, .gitignore)"
    )]
    TooMany { dir: PathBuf, limit: usize },
    #[error(
        "{dir}: over {limit} bytes in all; exclude what the program does not need (config.yaml's exclude, .gitignore)"
    )]
    TooBig { dir: PathBuf, limit: u64 },
    #[error("{config}: {key}: {reason}")]
    BadRule {
        config: String,
        key: String,
        reason: String,
    },
    #[error("{config}: {key}: {glob:?} matches no {what} in {dir}")]
    GlobMatchesNothing {
        config: String,
        key: String,
        glob: String,
        what: &'static str,
        dir: PathBuf,
    },
    #[error(
        "{path}: unbalanced EVOLVE-BLOCK markers ({starts} START, {ends} END; the first out of place is at line {line}); pair each START with an END"
    )]
    UnbalancedMarkers {
        path: PathBuf,
        starts: usize,
        ends: usize,
        line: usize,
    },
    #[error("{dir}: no editable file: {why}")]
    NothingEditable { dir: PathBuf, why: String },
    /// A file of the folder refused (see [`crate::engine::foreign`]).
    #[error(transparent)]
    Refused(#[from] crate::engine::foreign::Refused),
}

/// Which paths of a program may change: the one predicate every edit goes
/// through ([`EditRules::check`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EditRules {
    /// `evolve` globs (empty: marker mode).
    evolve: Vec<Glob>,
    exclude: Vec<Glob>,
    /// The files that may change, as loaded.
    editable: BTreeSet<String>,
    /// Binary files (never edited).
    binary: BTreeSet<String>,
    /// Most files a child may have.
    max_files: usize,
}

/// What an edit does to a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditOp {
    Modify,
    Add,
    Delete,
}

impl EditRules {
    /// Rules for a single-file program: its one file may change, nothing
    /// may be added or deleted.
    pub fn single(path: &str) -> Self {
        Self {
            editable: BTreeSet::from([path.to_owned()]),
            max_files: 1,
            ..Self::default()
        }
    }

    /// Whether `op` on `path` is allowed; the refusal names the path and
    /// the rule (it is shown to the model on retry).
    pub fn check(&self, path: &str, op: EditOp) -> Result<(), String> {
        check_path(path)
            .map_err(|e| format!("{e}: edits name files inside the program's folder"))?;
        if self.binary.contains(path) {
            return Err(format!(
                "{path}: a binary file; binary files are carried unchanged and cannot be edited"
            ));
        }
        if self.exclude.iter().any(|g| g.covers(path)) {
            let g = self
                .exclude
                .iter()
                .find(|g| g.covers(path))
                .map(Glob::as_str)
                .unwrap_or("");
            return Err(format!(
                "{path}: excluded from the program by config.yaml's exclude glob {g:?}"
            ));
        }
        let listed = || {
            let shown: Vec<&str> = self.editable.iter().map(String::as_str).take(12).collect();
            let more = self.editable.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("{}{more}", shown.join(", "))
        };
        match op {
            EditOp::Modify if self.editable.contains(path) => Ok(()),
            EditOp::Modify | EditOp::Delete | EditOp::Add if !self.evolve.is_empty() => {
                if self.evolve.iter().any(|g| g.matches(path)) {
                    Ok(())
                } else {
                    let globs: Vec<&str> = self.evolve.iter().map(Glob::as_str).collect();
                    Err(format!(
                        "{path}: outside the editable files (config.yaml's evolve globs: {}); edit only {}",
                        globs.join(", "),
                        listed()
                    ))
                }
            }
            EditOp::Modify => Err(format!(
                "{path}: read-only (only files with EVOLVE-BLOCK markers may change: {})",
                listed()
            )),
            EditOp::Add | EditOp::Delete => Err(format!(
                "{path}: files cannot be added or deleted in this task (config.yaml has no evolve globs; \
                 only the files with EVOLVE-BLOCK markers may change: {})",
                listed()
            )),
        }
    }

    /// Whether a child with `count` files is within the limit.
    pub fn check_count(&self, count: usize) -> Result<(), String> {
        if count > self.max_files {
            Err(format!(
                "the edit leaves {count} files, over the limit of {}; add fewer files",
                self.max_files
            ))
        } else {
            Ok(())
        }
    }

    /// Most files a child may have.
    pub fn max_files(&self) -> usize {
        self.max_files
    }

    /// The files that may change, as loaded.
    pub fn editable(&self) -> &BTreeSet<String> {
        &self.editable
    }
}

/// A program folder, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgramFiles {
    /// The files that may change.
    pub editable: Vec<String>,
    /// Read-only files the model is shown.
    pub context: Vec<String>,
    /// Binary files (carried unchanged, never shown).
    pub binary: Vec<String>,
    /// The globs, as the config wrote them (empty: marker mode).
    pub evolve_globs: Vec<String>,
    pub context_globs: Vec<String>,
    pub exclude_globs: Vec<String>,
    /// The edit rules built from them.
    pub rules: EditRules,
    /// The EVOLVE-BLOCK markers of the editable files, together.
    pub markers: Markers,
}

impl ProgramFiles {
    /// What the run's output and the studio's task panel say about the
    /// program folder: its files, the globs and what they match.
    pub fn describe(&self, folder: &str, tree: &Tree) -> Vec<String> {
        let list = |paths: &[String]| -> String {
            const SHOWN: usize = 8;
            let mut text = paths
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if paths.len() > SHOWN {
                text.push_str(&format!(" and {} more", paths.len() - SHOWN));
            }
            if text.is_empty() {
                "none".to_owned()
            } else {
                text
            }
        };
        let rule = |globs: &[String], default: &str| -> String {
            if globs.is_empty() {
                default.to_owned()
            } else {
                globs.join(", ")
            }
        };
        let mut out = vec![format!(
            "program folder {folder}/: {} files, {} bytes{}",
            tree.len(),
            tree.bytes(),
            if self.binary.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} binary (carried unchanged, never shown)",
                    self.binary.len()
                )
            }
        )];
        out.push(format!(
            "editable ({}): {}",
            rule(&self.evolve_globs, "files with EVOLVE-BLOCK markers"),
            list(&self.editable)
        ));
        out.push(format!(
            "context, shown read-only ({}): {}",
            rule(&self.context_globs, "no context globs"),
            list(&self.context)
        ));
        if !self.exclude_globs.is_empty() {
            out.push(format!(
                "left out (exclude): {}",
                self.exclude_globs.join(", ")
            ));
        }
        out
    }
}

fn globs(
    config: &super::TaskConfig,
    key: &str,
    config_name: &str,
) -> Result<Vec<Glob>, FilesError> {
    let bad = |reason: String| FilesError::BadRule {
        config: config_name.to_owned(),
        key: key.to_owned(),
        reason,
    };
    let Some(value) = config.get(key) else {
        return Ok(Vec::new());
    };
    let items: Vec<&serde_yaml::Value> = match value {
        serde_yaml::Value::Sequence(items) => items.iter().collect(),
        serde_yaml::Value::String(_) => vec![value],
        other => {
            return Err(bad(format!(
                "a list of globs, not {}",
                super::config::show(other)
            )));
        }
    };
    items
        .into_iter()
        .map(|v| {
            let text = v.as_str().ok_or_else(|| {
                bad(format!(
                    "{} is not a glob (a string)",
                    super::config::show(v)
                ))
            })?;
            Glob::new(text).map_err(|e| bad(e.to_string()))
        })
        .collect()
}

/// Read the program folder `root` with the task's config.
pub fn load(root: &Path, config: &super::TaskConfig) -> Result<(Tree, ProgramFiles), FilesError> {
    let config_name = config.file().and_then(|f| f.file_name()).map_or_else(
        || "config.yaml".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let evolve = globs(config, "evolve", &config_name)?;
    let context = globs(config, "context", &config_name)?;
    let exclude = globs(config, "exclude", &config_name)?;
    let root = root.canonicalize().map_err(|source| FilesError::Read {
        path: root.to_path_buf(),
        source,
    })?;
    let folder = Folder::open(&root, Links::Inside)?;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    let mut ignores: Vec<Gitignore> = Vec::new();
    walk(&folder, "", &exclude, &mut ignores, &mut files, &mut total)?;
    let tree = Tree::folder(files);

    let matches_nothing =
        |key: &str, glob: &Glob, what: &'static str| FilesError::GlobMatchesNothing {
            config: config_name.clone(),
            key: key.to_owned(),
            glob: glob.as_str().to_owned(),
            what,
            dir: root.clone(),
        };
    for g in &exclude {
        // an exclude glob that matched nothing is a typo the user should know of
        if !walked_paths_match(&root, g) {
            return Err(matches_nothing("exclude", g, "file"));
        }
    }
    let text_files: Vec<(&str, &str)> = tree
        .files()
        .filter_map(|(p, b)| b.as_text().map(|t| (p, t)))
        .collect();
    let binary: Vec<String> = tree
        .files()
        .filter(|(_, b)| b.is_binary())
        .map(|(p, _)| p.to_owned())
        .collect();
    let mut editable = BTreeSet::new();
    let mut markers_total = 0usize;
    let mut all_marked = true;
    let check_markers = |path: &str, text: &str| -> Result<Markers, FilesError> {
        match Markers::of(text) {
            Markers::Unbalanced { starts, ends, line } => Err(FilesError::UnbalancedMarkers {
                path: PathBuf::from(path),
                starts,
                ends,
                line,
            }),
            m => Ok(m),
        }
    };
    if evolve.is_empty() {
        for (path, text) in &text_files {
            if let Markers::Regions(n) = check_markers(path, text)? {
                editable.insert((*path).to_owned());
                markers_total += n;
            }
        }
        if editable.is_empty() {
            return Err(FilesError::NothingEditable {
                dir: root,
                why: format!(
                    "no text file has EVOLVE-BLOCK markers, and {config_name} names no evolve globs; mark the \
                     code to evolve with EVOLVE-BLOCK-START / EVOLVE-BLOCK-END, or list the files in evolve: [...]"
                ),
            });
        }
    } else {
        for g in &evolve {
            let mut any = false;
            for (path, text) in &text_files {
                if g.matches(path) {
                    any = true;
                    editable.insert((*path).to_owned());
                    match check_markers(path, text)? {
                        Markers::Regions(n) => markers_total += n,
                        _ => all_marked = false,
                    }
                }
            }
            if !any {
                return Err(matches_nothing("evolve", g, "text file"));
            }
        }
    }
    let mut shown = BTreeSet::new();
    for g in &context {
        let mut any = false;
        for (path, _) in &text_files {
            if g.matches(path) {
                any = true;
                if !editable.contains(*path) {
                    shown.insert((*path).to_owned());
                }
            }
        }
        if !any {
            return Err(matches_nothing("context", g, "text file"));
        }
    }
    let markers = if all_marked && markers_total > 0 {
        Markers::Regions(markers_total)
    } else {
        Markers::Missing
    };
    let rules = EditRules {
        evolve: evolve.clone(),
        exclude: exclude.clone(),
        editable: editable.clone(),
        binary: binary.iter().cloned().collect(),
        max_files: MAX_FILES,
    };
    let text = |gs: &[Glob]| gs.iter().map(|g| g.as_str().to_owned()).collect();
    Ok((
        tree,
        ProgramFiles {
            editable: editable.into_iter().collect(),
            context: shown.into_iter().collect(),
            binary,
            evolve_globs: text(&evolve),
            context_globs: text(&context),
            exclude_globs: text(&exclude),
            rules,
            markers,
        },
    ))
}

/// Whether any entry under `root` (files and folders, `.git` aside) matches
/// `glob` (for an exclude glob, which removed what it matched).
fn walked_paths_match(root: &Path, glob: &Glob) -> bool {
    fn go(dir: &Path, rel: &str, glob: &Glob) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                return false;
            }
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            glob.matches(&path)
                || (e.file_type().is_ok_and(|t| t.is_dir()) && go(&e.path(), &path, glob))
        })
    }
    go(root, "", glob)
}

/// Read the folder `rel` of the program folder (its files through the rules
/// of [`crate::engine::foreign`]: inside the folder, regular, capped).
fn walk(
    folder: &Folder,
    rel: &str,
    exclude: &[Glob],
    ignores: &mut Vec<Gitignore>,
    files: &mut BTreeMap<String, Blob>,
    total: &mut u64,
) -> Result<(), FilesError> {
    let root = folder.root();
    let join = |name: &str| {
        if rel.is_empty() {
            name.to_owned()
        } else {
            format!("{rel}/{name}")
        }
    };
    let pushed = {
        let gi = join(".gitignore");
        if folder.is_file(&gi) {
            // capped before it is read: a huge one is refused, not parsed
            let text = folder.read_text(&gi, Limit::GITIGNORE)?;
            ignores.push(Gitignore::parse(&text, rel));
            true
        } else {
            false
        }
    };
    for entry in folder.entries(rel)? {
        let name = entry.name.to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let rel_path = join(&name);
        let path = root.join(&rel_path);
        let (is_dir, is_file) = match entry.kind {
            EntryKind::Link => {
                let kind = match folder.target_kind(&rel_path) {
                    Ok(k) => k,
                    Err(Refused {
                        why: Why::Outside(_),
                        ..
                    }) => {
                        let target = folder.read_link(&rel_path).unwrap_or_default();
                        return Err(FilesError::SymlinkOutside { path, target });
                    }
                    Err(e) => return Err(e.into()),
                };
                if kind == Some(EntryKind::Dir) {
                    if exclude.iter().any(|g| g.covers(&rel_path)) {
                        continue;
                    }
                    return Err(FilesError::SymlinkedFolder { path });
                }
                (false, kind == Some(EntryKind::File))
            }
            EntryKind::Dir => (true, false),
            EntryKind::File => (false, true),
            EntryKind::Other(_) => (false, false),
        };
        let ignored = ignores
            .iter()
            .rev()
            .find_map(|g| g.verdict(&rel_path, is_dir))
            .unwrap_or(false);
        if ignored || exclude.iter().any(|g| g.covers(&rel_path)) {
            continue;
        }
        // not a path a program may hold (a nested `.git`, a name git takes
        // for it): never read
        if check_path(&rel_path).is_err() {
            continue;
        }
        if is_dir {
            walk(folder, &rel_path, exclude, ignores, files, total)?;
        } else if is_file {
            let bytes = match folder.read(&rel_path, Limit::PROGRAM_FILE) {
                Ok(b) => b,
                Err(Refused {
                    why: Why::TooLarge { size, .. },
                    ..
                }) => {
                    return Err(FilesError::TooLarge {
                        path,
                        size,
                        limit: MAX_FILE_BYTES,
                    });
                }
                Err(e) => return Err(e.into()),
            };
            *total += bytes.len() as u64;
            if *total > MAX_TREE_BYTES {
                return Err(FilesError::TooBig {
                    dir: root.to_path_buf(),
                    limit: MAX_TREE_BYTES,
                });
            }
            if files.len() >= MAX_FILES {
                return Err(FilesError::TooMany {
                    dir: root.to_path_buf(),
                    limit: MAX_FILES,
                });
            }
            files.insert(rel_path, Blob::from_bytes(bytes));
        }
    }
    if pushed {
        ignores.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::task::TaskConfig;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (p, t) in files {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, t).unwrap();
        }
    }

    fn config(text: &str) -> TaskConfig {
        TaskConfig::parse(text, Path::new("config.yaml")).unwrap()
    }

    const MARKED: &str = "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n";

    #[test]
    fn markers_decide_without_globs_and_gitignore_and_binaries_are_honoured() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("pkg/a.py", MARKED),
                ("pkg/b.py", "y = 2\n"),
                ("README.md", "readme"),
                (".gitignore", "*.log\nbuild/\n"),
                ("run.log", "noise"),
                ("build/out.txt", "built"),
            ],
        );
        std::fs::write(dir.path().join("logo.png"), [0x89u8, 0, 1, 2]).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref").unwrap();
        let (tree, files) = load(dir.path(), &TaskConfig::default()).unwrap();
        let paths: Vec<&str> = tree.files().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            vec![
                ".gitignore",
                "README.md",
                "logo.png",
                "pkg/a.py",
                "pkg/b.py"
            ]
        );
        assert_eq!(files.editable, vec!["pkg/a.py"]);
        assert_eq!(files.binary, vec!["logo.png"]);
        assert_eq!(files.markers, Markers::Regions(1));
        let r = &files.rules;
        assert!(r.check("pkg/a.py", EditOp::Modify).is_ok());
        let e = r.check("pkg/b.py", EditOp::Modify).unwrap_err();
        assert!(
            e.contains("pkg/b.py: read-only") && e.contains("pkg/a.py"),
            "{e}"
        );
        let e = r.check("pkg/c.py", EditOp::Add).unwrap_err();
        assert!(e.contains("cannot be added"), "{e}");
        let e = r.check("logo.png", EditOp::Modify).unwrap_err();
        assert!(e.contains("binary"), "{e}");
        assert!(
            r.check("../x.py", EditOp::Add)
                .unwrap_err()
                .contains("leaves the program's folder")
        );
        assert!(
            r.check("/etc/passwd", EditOp::Add)
                .unwrap_err()
                .contains("absolute")
        );
    }

    #[test]
    fn globs_choose_editable_and_context_files() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("src/a.py", "a = 1\n"),
                ("src/sub/b.py", "b = 1\n"),
                ("tests/t.py", "t"),
                ("README.md", "r"),
                ("data/big.csv", "1,2"),
            ],
        );
        let cfg = config(
            "evolve: [\"src/**/*.py\"]\ncontext: [README.md, \"tests/*.py\"]\nexclude: [data]\n",
        );
        let (tree, files) = load(dir.path(), &cfg).unwrap();
        assert!(tree.get("data/big.csv").is_none());
        assert_eq!(files.editable, vec!["src/a.py", "src/sub/b.py"]);
        assert_eq!(files.context, vec!["README.md", "tests/t.py"]);
        let r = &files.rules;
        assert!(r.check("src/new/c.py", EditOp::Add).is_ok());
        assert!(r.check("src/a.py", EditOp::Delete).is_ok());
        let e = r.check("tests/t.py", EditOp::Modify).unwrap_err();
        assert!(e.contains("src/**/*.py") && e.contains("tests/t.py"), "{e}");
        let e = r.check("data/x.csv", EditOp::Add).unwrap_err();
        assert!(e.contains("exclude"), "{e}");
        assert!(r.check_count(MAX_FILES + 1).is_err());
        let said = files.describe("initial_program", &tree).join("\n");
        assert!(
            said.contains("program folder initial_program/: 4 files"),
            "{said}"
        );
        assert!(
            said.contains("editable (src/**/*.py): src/a.py, src/sub/b.py"),
            "{said}"
        );
        assert!(
            said.contains(
                "context, shown read-only (README.md, tests/*.py): README.md, tests/t.py"
            ),
            "{said}"
        );
        assert!(said.contains("left out (exclude): data"), "{said}");

        let e = load(dir.path(), &config("evolve: [\"lib/*.py\"]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("evolve") && e.contains("lib/*.py") && e.contains("matches no text file"),
            "{e}"
        );
        let e = load(
            dir.path(),
            &config("evolve: [\"src/*.py\"]\ncontext: [nope.md]\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("context") && e.contains("nope.md"), "{e}");
        let e = load(dir.path(), &config("evolve: 3\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("evolve") && e.contains("a list of globs"), "{e}");
    }

    #[test]
    fn bad_folders_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("a.py", "x = 1\n")]);
        let e = load(dir.path(), &TaskConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no editable file") && e.contains("EVOLVE-BLOCK"),
            "{e}"
        );

        write(dir.path(), &[("src/x.py", "# EVOLVE-BLOCK-START\nx = 1\n")]);
        let e = load(dir.path(), &TaskConfig::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("src/x.py") && e.contains("unbalanced"), "{e}");
        std::fs::remove_file(dir.path().join("src/x.py")).unwrap();

        write(dir.path(), &[("m.py", MARKED)]);
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), &[("secret.txt", "s")]);
        crate::engine::platform::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("link.txt"),
        )
        .unwrap();
        let e = load(dir.path(), &TaskConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("link.txt") && e.contains("outside the program folder"),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("link.txt")).unwrap();

        let big = vec![b'a'; (MAX_FILE_BYTES + 1) as usize];
        std::fs::write(dir.path().join("huge.txt"), big).unwrap();
        let e = load(dir.path(), &TaskConfig::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("huge.txt") && e.contains("limit"), "{e}");
    }
}
