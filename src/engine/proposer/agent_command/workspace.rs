//! The agent's workspace: made from the parent's tree as a git repository
//! with the parent committed, and read back as the child once the agent's
//! processes are gone.
//!
//! A proposal's folder (`<root>/p<iteration>-<n>/`) holds two dirs:
//! `work/` (the parent's tree, committed: what the agent's workspace starts
//! as) and `info/` (shown read-only at `work/.galapagos/`). The folders live
//! under the run folder's `agent-workspaces/` (a run without a folder: a
//! temp dir of the proposer's), which is emptied when the proposer is
//! built, so a run killed mid-proposal and resumed leaves none behind; each
//! is removed when its proposal ends.
//!
//! The agent never writes there: its workspace is a copy of `work/` in the
//! sandbox's one writable file system, the writable-space quota
//! (`write_quota_mib`), at [`INSIDE`]`/work`, beside `out/` (shown at
//! `work/.galapagos/out/`, where the agent may name its parent and leave
//! notes). A write past the quota fails with "no space" and no byte of it
//! reaches the machine's disk. The run holds that file system open
//! ([`Left`]) from before the agent starts, so it reads the child from it
//! once the sandbox is gone, and frees it when the proposal ends.
//!
//! Git runs only before the agent does: once the agent has had the
//! workspace, its `.git` may hold hooks or configuration that would run
//! code, so the child is read by walking the files (no symbolic link is
//! followed, nothing but regular files is opened).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::engine::foreign::{EntryKind, Folder, Limit, Links, Refused, Why};
use crate::engine::genome::{GenomeId, Tree};
use crate::engine::task::program_folder::{EditOp, EditRules};
use crate::engine::tree::Blob;

/// The run folder's dir of workspaces.
pub(super) const DIR: &str = "agent-workspaces";

/// The name `.galapagos/` has in the workspace.
pub(super) const INFO: &str = ".galapagos";

/// Where the agent's `work/` and `out/` are inside its sandbox: in the
/// sandbox's one writable file system (`/dev/shm`, of the writable-space
/// quota; see `Jail::one_scratch`).
pub(super) const INSIDE: &str = "/dev/shm/.galapagos/workspace";

/// Where the workspaces are made.
pub(super) enum Root {
    /// The run folder's `agent-workspaces/`.
    Run(PathBuf),
    /// A temp dir of the proposer's own (a run without a folder).
    Temp(tempfile::TempDir),
}

impl Root {
    /// The workspaces' dir, emptied: what a killed run left is removed.
    pub(super) fn new(run_dir: Option<&Path>) -> Result<Self, String> {
        match run_dir {
            Some(run) => {
                let dir = run.join(DIR);
                if dir.exists() {
                    remove_all(&dir).map_err(|e| {
                        format!(
                            "cannot remove the agent workspaces a previous run left in {}: {e}",
                            dir.display()
                        )
                    })?;
                }
                std::fs::create_dir_all(&dir).map_err(|e| {
                    format!(
                        "cannot create the agent workspaces' dir {}: {e}",
                        dir.display()
                    )
                })?;
                Ok(Self::Run(dir))
            }
            None => tempfile::Builder::new()
                .prefix("galapagos-agent-")
                .tempdir()
                .map(Self::Temp)
                .map_err(|e| format!("cannot create a temp dir for the agent workspaces: {e}")),
        }
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            Self::Run(p) => p,
            Self::Temp(t) => t.path(),
        }
    }

    /// A new workspace named `name` holding `parent`, committed.
    pub(super) fn create(&self, name: &str, parent: &Tree) -> Result<Workspace, String> {
        let dir = self.path().join(name);
        let ws = Workspace {
            work: dir.join("work"),
            info: dir.join("info"),
            dir,
        };
        // `.galapagos/out` leads to the agent's `out/`, inside the sandbox.
        let made = std::fs::create_dir_all(&ws.work)
            .and_then(|()| std::fs::create_dir_all(&ws.info))
            .and_then(|()| crate::engine::platform::symlink(ws.out_inside(), ws.info.join("out")))
            .and_then(|()| parent.write_to(&ws.work));
        made.map_err(|e| format!("cannot write the workspace {}: {e}", ws.work.display()))?;
        commit(&ws.work)?;
        Ok(ws)
    }
}

/// One proposal's folder; removed when dropped.
pub(super) struct Workspace {
    pub(super) dir: PathBuf,
    /// What the workspace starts as: the parent's tree, a git repository
    /// (copied into the sandbox before the agent starts).
    pub(super) work: PathBuf,
    /// What `work/.galapagos/` shows, read-only.
    pub(super) info: PathBuf,
}

impl Workspace {
    /// The workspace as the agent sees it (its working dir).
    pub(super) fn work_inside(&self) -> PathBuf {
        Path::new(INSIDE).join("work")
    }

    /// `.galapagos/out/` as the agent sees it.
    pub(super) fn out_inside(&self) -> PathBuf {
        Path::new(INSIDE).join("out")
    }

    /// The prompt's file as the agent sees it.
    pub(super) fn prompt_file(&self) -> PathBuf {
        self.work_inside().join(INFO).join("prompt.md")
    }
}

/// The agent's workspace and `out/` as it left them: its sandbox's writable
/// file system ([`INSIDE`]), held open from before the agent started, so it
/// stays readable once the sandbox is gone (and is freed when this is
/// dropped).
pub(super) struct Left {
    /// [`INSIDE`], opened as a directory.
    dir: std::fs::File,
}

impl Left {
    /// Hold `dir` (the sandbox's [`INSIDE`], seen from outside).
    pub(super) fn open(dir: &Path) -> std::io::Result<Self> {
        let dir = std::fs::File::open(dir)?;
        if !dir.metadata()?.is_dir() {
            return Err(std::io::Error::other("not a directory"));
        }
        Ok(Self { dir })
    }

    /// The agent's workspace, as this process reaches it in [`INSIDE`]
    /// (through its open descriptor).
    pub(super) fn work(&self) -> PathBuf {
        crate::engine::platform::path_in_opened(&self.dir, "work")
    }

    /// The agent's `.galapagos/out/`, reached as [`Left::work`] is.
    pub(super) fn out(&self) -> PathBuf {
        crate::engine::platform::path_in_opened(&self.dir, "out")
    }

    /// Fill the workspace with `from` (the parent's tree, committed; made
    /// by the run, so only dirs and regular files), before the agent
    /// starts. A tree larger than the quota fails with "no space".
    pub(super) fn fill(&self, from: &Path) -> std::io::Result<()> {
        copy_tree(from, &self.work())
    }
}

/// Copy the dirs and regular files under `from` into `to` (which exists).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = remove_all(&self.dir);
    }
}

/// Remove `dir` and everything in it, making dirs the agent left without
/// write or search permission removable first.
pub(super) fn remove_all(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            open_up(dir);
            std::fs::remove_dir_all(dir)
        }
    }
}

fn open_up(dir: &Path) {
    let _ = crate::engine::platform::set_mode(dir, 0o700);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                open_up(&entry.path());
            }
        }
    }
}

/// `git init` and commit everything in `work` as the parent (outside the
/// sandbox, before the agent exists; no configuration of the user's or the
/// machine's is read).
fn commit(work: &Path) -> Result<(), String> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=galapagos",
                "-c",
                "user.email=galapagos@localhost",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
                "-c",
                "core.hooksPath=/dev/null",
            ])
            .args(args)
            .current_dir(work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("HOME", work)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                format!("cannot run git (the agent's workspace is a git repository): {e}")
            })?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "git {} failed in {}: {}",
                args.join(" "),
                work.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    git(&["init", "-q"])?;
    std::fs::write(work.join(".git/info/exclude"), format!("/{INFO}/\n")).map_err(|e| {
        format!(
            "cannot write {}: {e}",
            work.join(".git/info/exclude").display()
        )
    })?;
    git(&["add", "-A"])?;
    git(&["commit", "-q", "--allow-empty", "-m", "the parent program"])
}

/// Most files read back from a workspace.
const MAX_FILES: usize = 20_000;

/// The child read from a workspace, and what was dropped from it.
#[derive(Debug)]
pub(super) struct ReadBack {
    pub(super) child: Tree,
    /// `path: why` for every change not taken.
    pub(super) dropped: Vec<String>,
}

/// The workspace's files (not `.git/` nor `.galapagos/`), by path, read by
/// the rules of [`crate::engine::foreign`] (no link followed, regular files
/// only, each capped); what cannot be a program file (a link, a FIFO, a file
/// too big) is named in `odd`.
fn walk(
    ws: &Folder,
    rel: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
    odd: &mut Vec<(String, String)>,
) -> Result<(), Refused> {
    for entry in ws.entries(rel)? {
        let Some(name) = entry.name.to_str() else {
            odd.push((
                format!("{rel}/{}", entry.name.to_string_lossy()),
                "a file name that is not UTF-8".into(),
            ));
            continue;
        };
        if rel.is_empty() && (name == ".git" || name == INFO) {
            continue;
        }
        let path = if rel.is_empty() {
            name.to_owned()
        } else {
            format!("{rel}/{name}")
        };
        match entry.kind {
            EntryKind::Dir => walk(ws, &path, files, odd)?,
            EntryKind::Link => {
                odd.push((path, "a symbolic link (a program holds files only)".into()))
            }
            EntryKind::Other(what) => odd.push((path, format!("{what}, not a regular file"))),
            EntryKind::File if files.len() >= MAX_FILES => {
                odd.push((path, format!("more than {MAX_FILES} files")));
            }
            EntryKind::File => match ws.read(&path, Limit::WORKSPACE_FILE) {
                Ok(bytes) => {
                    files.insert(path, bytes);
                }
                Err(Refused {
                    why: why @ (Why::TooLarge { .. } | Why::NotRegular(_) | Why::Link),
                    ..
                }) => odd.push((path, why.to_string())),
                Err(e) => return Err(e),
            },
        }
    }
    Ok(())
}

/// The child the workspace holds: `parent` with every change the rules
/// allow (a single-file program: its one file's new text), and the changes
/// they refuse, named.
pub(super) fn read_back(left: &Left, parent: &Tree, rules: &EditRules) -> Result<ReadBack, String> {
    let work = left.work();
    let mut files = BTreeMap::new();
    let mut odd = Vec::new();
    Folder::open(&work, Links::Never)
        .and_then(|folder| walk(&folder, "", &mut files, &mut odd))
        .map_err(|e| format!("cannot read the agent's workspace: {e}"))?;
    let mut dropped: Vec<String> = odd
        .into_iter()
        .map(|(path, why)| format!("{path}: {why}"))
        .collect();
    let mut child: BTreeMap<String, Blob> = parent
        .files()
        .map(|(p, b)| (p.to_owned(), b.clone()))
        .collect();
    for (path, bytes) in files {
        let blob = Blob::from_bytes(bytes);
        let op = match parent.get(&path) {
            Some(old) if old.id() == blob.id() => continue,
            Some(_) => EditOp::Modify,
            None => EditOp::Add,
        };
        match rules.check(&path, op) {
            Ok(()) => {
                child.insert(path, blob);
            }
            Err(rule) => dropped.push(rule),
        }
    }
    let present = |path: &str| std::fs::symlink_metadata(work.join(path)).is_ok();
    for (path, _) in parent.files() {
        if !present(path) {
            match rules.check(path, EditOp::Delete) {
                Ok(()) => {
                    child.remove(path);
                }
                Err(rule) => dropped.push(format!("deleting {rule}")),
            }
        }
    }
    if let Err(e) = rules.check_count(child.len()) {
        return Err(format!("the agent's child is refused: {e}"));
    }
    let child = if parent.is_single() {
        match parent.files().next() {
            Some((path, _)) => match child.get(path).and_then(Blob::as_text) {
                Some(text) => parent.with_single_text(text),
                None => return Err(format!("the agent left {path} not UTF-8 text")),
            },
            None => parent.clone(),
        }
    } else {
        Tree::folder(child)
    };
    Ok(ReadBack { child, dropped })
}

/// The parent the agent named in `.galapagos/out/parent` (`12` or `#12`).
pub(super) fn said_parent(left: &Left) -> Option<GenomeId> {
    let text = read_small(&left.out().join("parent"), 200)?;
    text.trim().trim_start_matches('#').trim().parse().ok()
}

/// Most characters of notes taken from the agent.
const MAX_NOTES: usize = 8000;

/// The notes the agent left in `.galapagos/out/notes.md`, if any.
pub(super) fn notes(left: &Left) -> Option<String> {
    let text = read_small(&left.out().join("notes.md"), 4 * MAX_NOTES as u64)?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(text.chars().take(MAX_NOTES).collect())
}

/// A regular file's text, at most `max` bytes read (None: absent, not a
/// regular file, a link, not text).
fn read_small(path: &Path, max: u64) -> Option<String> {
    let folder = Folder::open(path.parent()?, Links::Never).ok()?;
    let limit = Limit {
        bytes: max,
        what: "a file an agent leaves for the run",
    };
    folder.read_text(path.file_name()?, limit).ok()
}
