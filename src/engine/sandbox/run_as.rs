//! Who the sandbox runs as when galapagos runs as root, and what that user
//! must be able to read. A user namespace made by root keeps root's uid on
//! the machine, which the kernel exempts from the process limit, so as root
//! bubblewrap builds the container without one and `setpriv` starts the
//! command in it as an unprivileged user ([`as_user`]); a task folder that
//! user cannot read is shown to it through a readable copy
//! ([`stage_task`]), and a folder it writes in is handed over to it
//! ([`hand_over`]). Linux only (`setpriv`, file ownership).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::engine::platform;

/// An unprivileged user and group the sandbox runs as when galapagos runs
/// as root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// `nobody` / `nogroup` (65534), the default [`RunAs`].
pub(crate) const NOBODY: RunAs = RunAs {
    uid: 65534,
    gid: 65534,
};

/// Who a sandbox started by `uid` runs as: `user` when `uid` is root, no
/// one else (a normal user's sandbox is that user's, mapped to itself).
pub(crate) fn run_as(uid: u32, user: RunAs) -> Option<RunAs> {
    (uid == 0).then_some(user)
}

/// The command that drops from root to `user` inside the sandbox (no
/// supplementary groups, no new privileges), then runs what follows it.
pub(crate) fn setpriv_prefix(user: RunAs) -> Vec<OsString> {
    vec![
        "setpriv".into(),
        format!("--reuid={}", user.uid).into(),
        format!("--regid={}", user.gid).into(),
        "--clear-groups".into(),
        "--no-new-privs".into(),
        "--".into(),
    ]
}

/// `command` run as `user` when there is one ([`setpriv_prefix`]), as is
/// otherwise. The caller of [`bwrap_args`] with a [`Jail::run_as`] puts it
/// where the drop from root belongs in its command.
pub(crate) fn as_user(user: Option<RunAs>, command: &[OsString]) -> Vec<OsString> {
    user.map(setpriv_prefix)
        .unwrap_or_default()
        .into_iter()
        .chain(command.iter().cloned())
        .collect()
}

/// Whether `user` can read the tree at `dir` (every dir listable and
/// enterable, every file readable, by owner, group or others' bits), looked
/// at through at most `budget` entries (more: no).
fn readable_by(user: RunAs, dir: &Path, budget: &mut usize) -> bool {
    let may = |m: &std::fs::Metadata, bits: u32| {
        let mode = platform::mode_of(m);
        let (uid, gid) = platform::owner_of(m);
        if uid == user.uid {
            mode & (bits << 6) == bits << 6
        } else if gid == user.gid {
            mode & (bits << 3) == bits << 3
        } else {
            mode & bits == bits
        }
    };
    let Ok(meta) = std::fs::metadata(dir) else {
        return false;
    };
    if !may(&meta, 0o5) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue; // a dangling link: nothing to read
        };
        if meta.is_dir() {
            if !readable_by(user, &path, budget) {
                return false;
            }
        } else if !may(&meta, 0o4) {
            return false;
        }
    }
    true
}

/// Copy the tree at `from` to `to` (dirs 0755, files 0644, links as they
/// are), for a user who may not read the original.
fn copy_readable(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    platform::set_mode(to, 0o755)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            platform::symlink(&std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_readable(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
            // readable by all; an executable (an evaluator script the card
            // runs) stays executable
            let exec = platform::mode_of(&entry.metadata()?) & 0o111 != 0;
            let mode = if exec { 0o755 } else { 0o644 };
            platform::set_mode(&dst, mode)?;
        }
    }
    Ok(())
}

/// As root, the task folder as the sandbox's `user` will see it: None when
/// that user can read it where it is, else a readable copy made under
/// `private` (the run's owner-only dir), shown at the task folder's path.
/// An error when a dir above the task folder that no sandbox dir replaces
/// keeps that user out.
pub(crate) fn stage_task(
    user: RunAs,
    task_dir: &Path,
    private: &Path,
    hidden: &[PathBuf],
) -> Result<Option<PathBuf>, String> {
    for dir in task_dir.ancestors().skip(1) {
        if hidden.iter().any(|h| dir.starts_with(h)) {
            break;
        }
        let enterable = std::fs::metadata(dir).is_ok_and(|m| {
            let mode = platform::mode_of(&m);
            mode & 0o1 != 0 || (platform::owner_of(&m).0 == user.uid && mode & 0o100 != 0)
        });
        if !enterable {
            return Err(format!(
                "galapagos runs as root, so the sandbox runs as the unprivileged user {}:{}, \
                 which cannot enter {} to reach the task folder {}: let others enter it \
                 (`chmod o+x {}`), or run galapagos as a normal user",
                user.uid,
                user.gid,
                dir.display(),
                task_dir.display(),
                dir.display()
            ));
        }
    }
    let mut budget = 100_000;
    if readable_by(user, task_dir, &mut budget) {
        return Ok(None);
    }
    let copy = private.join("task");
    let _ = std::fs::remove_dir_all(&copy);
    copy_readable(task_dir, &copy).map_err(|e| {
        format!(
            "galapagos runs as root and the sandbox's user {}:{} cannot read the task folder {}; \
             copying it to {} for that user failed: {e}",
            user.uid,
            user.gid,
            task_dir.display(),
            copy.display()
        )
    })?;
    Ok(Some(copy))
}

/// As root, give a folder the sandbox's process works in (a command
/// evaluator's candidate folder with its program and `results/`, a coding
/// agent's workspace), and everything in it, to the user the sandbox runs
/// as ([`run_as`]).
pub(crate) fn hand_over(dir: &Path, user: RunAs) -> std::io::Result<()> {
    platform::lchown(dir, user.uid, user.gid)?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            hand_over(&entry.path(), user)?;
        } else {
            platform::lchown(&entry.path(), user.uid, user.gid)?;
        }
    }
    Ok(())
}
