//! The bubblewrap command line ([`bwrap_args`]): what a sandbox's
//! container hides, shows and lets its process write ([`Jail`]), for the
//! Python worker's container per run, the command evaluator's and a Slurm
//! node's container per candidate, and the coding agent's per proposal.
//!
//! One container: new user, pid, IPC, UTS and cgroup namespaces, no network
//! namespace shared with the machine unless [`Jail::network`], no
//! capabilities, a new session, and a file system that is the machine's,
//! read-only, with the user's home dirs, /tmp, /var/tmp and /run replaced by
//! empty read-only dirs, a fresh /dev and /proc, and only what its process
//! needs bound back read-only (the task folder, the code dir, the
//! interpreter's prefixes, a socket's dir, `read_paths`). Linux only.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::interpreter::Interpreter;
use super::paths::SCRATCH_ROOT;
use super::run_as::{NOBODY, RunAs};
#[cfg(test)]
use super::run_as::{as_user, run_as};

/// `bwrap` on PATH, or why there is none.
pub(crate) fn find_bwrap() -> Result<PathBuf, String> {
    crate::engine::platform::runs_here()?;
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("bwrap"))
            .find(|p| p.is_file())
    });
    found.ok_or_else(|| {
        "the sandbox needs bubblewrap (`bwrap`), which is not installed: install it (Debian, Ubuntu: \
         `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`), \
         or set the evaluator's `sandbox: none` to run candidates without a sandbox (they can then read \
         and change your files and use the network)"
            .to_owned()
    })
}

/// What a container shows, hides and lets its process write.
pub(crate) struct Jail<'a> {
    /// Share the machine's network (`evaluator.network`).
    pub network: bool,
    pub interpreter: &'a Interpreter,
    pub task_dir: &'a Path,
    pub code_dir: &'a Path,
    /// The lane socket's dir.
    pub lanes_dir: &'a Path,
    /// More paths to show read-only when hidden (listed `PYTHONPATH`
    /// entries, `read_paths`).
    pub extra: Vec<PathBuf>,
    /// Dirs shown writable (a command evaluator's candidate folder).
    pub writable: Vec<PathBuf>,
    /// Dirs the user's data lives in, replaced by empty read-only dirs:
    /// `/home`, `/root`, `$HOME`, the settings file's dir.
    pub private: Vec<PathBuf>,
    /// The run's uid and gid (0 for root).
    pub uid: u32,
    pub gid: u32,
    /// Who the sandbox runs as when galapagos runs as root ([`run_as`]):
    /// bubblewrap then sets up the container with root's rights, keeping
    /// only what `setpriv` needs to start the command as this user (see
    /// [`as_user`]), so the kernel holds it to the process limit and to file
    /// permissions.
    pub run_as: Option<RunAs>,
    /// A copy of the task folder this user can read, shown at the task
    /// folder's path ([`stage_task`]).
    pub task_copy: Option<PathBuf>,
    /// The writable-space quota: the size of each file system the sandbox
    /// makes writable (its scratch dir, `/dev/shm`).
    pub write_quota_mib: Option<u64>,
    /// One writable file system for the whole container (a container per
    /// candidate: the command evaluator's, a Slurm node's): `/dev/shm` of
    /// `write_quota_mib`, holding the scratch dir ([`SCRATCH_ROOT`] is a link to
    /// [`SHARED_SCRATCH`] in it), so HOME, TMPDIR, `/dev/shm` and whatever
    /// the candidate's folder is copied to share one quota. Otherwise (the
    /// Python worker's container, whose candidates each mount a tmpfs of
    /// their own inside it) each is a file system of its own.
    pub one_scratch: bool,
    /// Host dirs shown read-only at another path inside: (host, inside).
    pub shown: Vec<(PathBuf, PathBuf)>,
}

/// Where [`SCRATCH_ROOT`] leads in a container of [`Jail::one_scratch`].
pub(crate) const SHARED_SCRATCH: &str = "/dev/shm/.galapagos";

/// Dirs every sandbox replaces by empty ones (writable only where noted in
/// [`bwrap_args`]).
const SCRATCH_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/run"];

/// The dirs a sandbox replaces by empty read-only ones: [`SCRATCH_DIRS`]
/// and `private`, each once (a dir inside another is covered by it).
pub(crate) fn hidden_dirs(private: &[PathBuf]) -> Vec<PathBuf> {
    let mut hidden: Vec<PathBuf> = SCRATCH_DIRS.iter().map(PathBuf::from).collect();
    for p in private {
        if !hidden.iter().any(|h| p.starts_with(h)) {
            hidden.retain(|h| !h.starts_with(p));
            hidden.push(p.clone());
        }
    }
    hidden
}

/// GPU device nodes passed into the sandbox when they exist.
fn gpu_devices() -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/dev") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("nvidia") || name == "dri" || name == "kfd" {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// The `bwrap` arguments that start `command` in the container `jail` describes.
pub(crate) fn bwrap_args(jail: &Jail<'_>, command: &[OsString]) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |items: &[&OsStr]| a.extend(items.iter().map(|i| i.to_os_string()));
    // As root, bubblewrap builds the container with root's rights and no
    // user namespace of its own, and `setpriv` starts the command as the
    // unprivileged user (a user namespace made by root would keep root's
    // uid on the machine, which the kernel exempts from the process limit).
    if jail.run_as.is_none() {
        push(&["--unshare-user".as_ref()]);
    }
    push(&[
        "--unshare-ipc".as_ref(),
        "--unshare-pid".as_ref(),
        "--unshare-uts".as_ref(),
        "--unshare-cgroup-try".as_ref(),
    ]);
    if !jail.network {
        push(&["--unshare-net".as_ref()]);
    }
    match jail.run_as {
        None => {
            // Inside, this user, or nobody for root (a Slurm node's sandbox):
            // a candidate's own user namespace maps its uid to itself, which
            // the kernel refuses for uid 0 without capabilities.
            let uid = if jail.uid == 0 { NOBODY.uid } else { jail.uid };
            let gid = if jail.gid == 0 { NOBODY.gid } else { jail.gid };
            let (uid, gid) = (uid.to_string(), gid.to_string());
            push(&[
                "--uid".as_ref(),
                uid.as_ref(),
                "--gid".as_ref(),
                gid.as_ref(),
                "--cap-drop".as_ref(),
                "ALL".as_ref(),
            ]);
        }
        // Only what `setpriv` needs to become the user, who then has none.
        Some(_) => push(&[
            "--cap-drop".as_ref(),
            "ALL".as_ref(),
            "--cap-add".as_ref(),
            "CAP_SETUID".as_ref(),
            "--cap-add".as_ref(),
            "CAP_SETGID".as_ref(),
        ]),
    }
    push(&[
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
    ]);
    for device in gpu_devices() {
        push(&[
            "--dev-bind-try".as_ref(),
            device.as_os_str(),
            device.as_os_str(),
        ]);
    }
    // /proc/sys and friends read-only: as root outside, the worker's uid is
    // root's, and a writable /proc/sys would let it change the machine.
    // The writable file systems the sandbox makes, each capped at the
    // writable-space quota.
    let size = jail
        .write_quota_mib
        .map(|q| q.saturating_mul(1 << 20).to_string());
    let sized = |a: &mut Vec<OsString>| {
        if let Some(bytes) = &size {
            a.extend(["--size".into(), bytes.into()]);
        }
    };
    // As root the sandbox's user is not the owner of what bubblewrap makes:
    // the shared scratch must be open to it (one user per container).
    let open = |a: &mut Vec<OsString>, mode: &str| {
        if jail.run_as.is_some() || mode == "01777" {
            a.extend(["--perms".into(), mode.into()]);
        }
    };
    if jail.one_scratch {
        open(&mut a, "01777");
    }
    sized(&mut a);
    a.extend(["--tmpfs".into(), "/dev/shm".into()]);
    if jail.one_scratch {
        let shared = Path::new(SHARED_SCRATCH);
        for dir in [
            shared.to_path_buf(),
            shared.join("home"),
            shared.join("tmp"),
        ] {
            open(&mut a, "0777");
            a.extend(["--dir".into(), dir.into_os_string()]);
        }
    }
    let mut push = |items: &[&OsStr]| a.extend(items.iter().map(|i| i.to_os_string()));
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    for p in ["/proc/sys", "/proc/sysrq-trigger"] {
        push(&["--ro-bind-try".as_ref(), p.as_ref(), p.as_ref()]);
    }
    let hidden = hidden_dirs(&jail.private);
    for dir in &hidden {
        push(&["--tmpfs".as_ref(), dir.as_os_str()]);
    }
    let scratch = Path::new(SCRATCH_ROOT);
    if jail.one_scratch {
        a.extend([
            "--symlink".into(),
            SHARED_SCRATCH.into(),
            scratch.as_os_str().to_os_string(),
        ]);
    } else {
        sized(&mut a);
        a.extend([
            "--tmpfs".into(),
            scratch.as_os_str().to_os_string(),
            "--dir".into(),
            scratch.join("home").into_os_string(),
            "--dir".into(),
            scratch.join("tmp").into_os_string(),
        ]);
    }
    let mut push = |items: &[&OsStr]| a.extend(items.iter().map(|i| i.to_os_string()));
    // Bound back read-only: what the worker reads that lives in a hidden dir.
    let wanted = [jail.task_dir, jail.code_dir, jail.lanes_dir]
        .into_iter()
        .map(Path::to_path_buf)
        .chain(jail.interpreter.prefixes.iter().cloned())
        .chain(std::iter::once(jail.interpreter.executable.clone()))
        .chain(jail.extra.iter().cloned());
    let mut binds: Vec<PathBuf> = Vec::new();
    for path in wanted {
        let real = std::fs::canonicalize(&path).ok();
        for p in std::iter::once(path).chain(real) {
            let covered = p.starts_with("/dev/shm") || hidden.iter().any(|h| p.starts_with(h));
            if covered && !binds.contains(&p) {
                binds.push(p);
            }
        }
    }
    binds.sort();
    // A dir bound already shows what is below it (and an ro bind takes no
    // mount point of its own).
    let mut kept: Vec<&PathBuf> = Vec::new();
    for p in &binds {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    if jail.run_as.is_some() {
        // Bubblewrap makes the dirs leading to a mount point owner-only:
        // the user the sandbox runs as must be able to pass them.
        let dests: Vec<&Path> = kept
            .iter()
            .map(|p| p.as_path())
            .chain(jail.writable.iter().map(PathBuf::as_path))
            .chain(jail.shown.iter().map(|(_, inside)| inside.as_path()))
            .chain(jail.task_copy.as_ref().map(|_| jail.task_dir))
            .collect();
        let tmpfs: Vec<&Path> = hidden
            .iter()
            .map(PathBuf::as_path)
            .chain(std::iter::once(Path::new("/dev/shm")))
            .collect();
        let mut passes: Vec<&Path> = dests
            .iter()
            .flat_map(|d| d.ancestors().skip(1))
            .filter(|a| tmpfs.iter().any(|t| a.starts_with(t) && a != t))
            .filter(|a| !dests.iter().any(|d| a.starts_with(d)))
            .collect();
        passes.sort();
        passes.dedup();
        for dir in passes {
            push(&[
                "--perms".as_ref(),
                "0755".as_ref(),
                "--dir".as_ref(),
                dir.as_os_str(),
            ]);
        }
    }
    for p in kept {
        if jail.task_copy.is_none() || p.as_path() != jail.task_dir {
            push(&["--ro-bind-try".as_ref(), p.as_os_str(), p.as_os_str()]);
        }
    }
    // The readable copy, over whatever shows the task folder.
    if let Some(copy) = &jail.task_copy {
        push(&[
            "--ro-bind".as_ref(),
            copy.as_os_str(),
            jail.task_dir.as_os_str(),
        ]);
    }
    for p in &jail.writable {
        push(&["--bind".as_ref(), p.as_os_str(), p.as_os_str()]);
    }
    for (host, inside) in &jail.shown {
        push(&["--ro-bind".as_ref(), host.as_os_str(), inside.as_os_str()]);
    }
    for dir in &hidden {
        push(&["--remount-ro".as_ref(), dir.as_os_str()]);
    }
    push(&[
        "--remount-ro".as_ref(),
        "/dev".as_ref(),
        "--chdir".as_ref(),
        jail.task_dir.as_os_str(),
        "--".as_ref(),
    ]);
    a.extend(command.iter().cloned());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_hides_the_users_data_and_binds_back_only_what_the_worker_reads() {
        let interpreter = Interpreter {
            executable: PathBuf::from("/nonexistent-venv/bin/python"),
            prefixes: vec![
                PathBuf::from("/root/.pyenv/versions/9.9"),
                PathBuf::from("/root/.pyenv/versions/9.9/bin"),
                PathBuf::from("/usr"),
            ],
        };
        let jail = Jail {
            network: false,
            interpreter: &interpreter,
            task_dir: Path::new("/home/me/tasks/t"),
            code_dir: Path::new("/home/me/.cache/galapagos/worker-1"),
            lanes_dir: Path::new("/dev/shm/galapagos-eval-x/w0"),
            extra: vec![],
            writable: vec![PathBuf::from("/dev/shm/galapagos-command-x/c1-0")],
            private: ["/home", "/root", "/home/me"]
                .iter()
                .map(PathBuf::from)
                .collect(),
            uid: 0,
            gid: 0,
            run_as: run_as(0, NOBODY),
            task_copy: Some(PathBuf::from("/dev/shm/galapagos-eval-x/task")),
            write_quota_mib: Some(512),
            one_scratch: false,
            shown: Vec::new(),
        };
        let command = as_user(jail.run_as, &["python".into(), "-c".into()]);
        let args: Vec<String> = bwrap_args(&jail, &command)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let text = args.join(" ");
        let has = |s: &str| text.contains(s);
        assert!(has("--unshare-net") && has("--cap-drop ALL") && has("--die-with-parent"));
        assert!(
            !has("--unshare-user")
                && !has("--uid ")
                && has("--cap-add CAP_SETUID --cap-add CAP_SETGID "),
            "as root, no user namespace that would keep root's uid: {text}"
        );
        assert!(
            has("--size 536870912 --tmpfs /dev/shm ")
                && has("--size 536870912 --tmpfs /tmp/galapagos "),
            "the scratch file systems capped at the quota: {text}"
        );
        assert!(
            has("--ro-bind /dev/shm/galapagos-eval-x/task /home/me/tasks/t "),
            "the readable copy shown at the task folder's path: {text}"
        );
        for hidden in ["/tmp", "/var/tmp", "/run", "/home", "/root"] {
            assert!(
                has(&format!("--tmpfs {hidden} ")),
                "{hidden} hidden: {text}"
            );
            assert!(
                has(&format!("--remount-ro {hidden} ")),
                "{hidden} read-only: {text}"
            );
        }
        assert!(!has("--tmpfs /home/me "), "/home covers $HOME: {text}");
        for shown in [
            "/home/me/.cache/galapagos/worker-1",
            "/dev/shm/galapagos-eval-x/w0",
            "/root/.pyenv/versions/9.9",
        ] {
            assert!(
                has(&format!("--ro-bind-try {shown} {shown} ")),
                "{shown}: {text}"
            );
        }
        assert!(!has("versions/9.9/bin"), "inside a bound dir: {text}");
        assert!(!has("--ro-bind-try /usr"), "not hidden: {text}");
        assert!(
            has("--bind /dev/shm/galapagos-command-x/c1-0 /dev/shm/galapagos-command-x/c1-0 "),
            "writable: {text}"
        );
        assert!(
            text.ends_with(
                "--chdir /home/me/tasks/t -- setpriv --reuid=65534 --regid=65534 --clear-groups \
                 --no-new-privs -- python -c"
            ),
            "root's sandbox runs its command as nobody: {text}"
        );
        let shared = Jail {
            network: true,
            uid: 1000,
            gid: 1000,
            run_as: run_as(1000, NOBODY),
            task_copy: None,
            write_quota_mib: None,
            ..jail
        };
        let text: Vec<String> = bwrap_args(&shared, &[])
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let text = text.join(" ");
        assert!(!text.contains("--unshare-net") && text.contains("--uid 1000 --gid 1000"));
        assert!(
            text.contains("--unshare-user")
                && !text.contains("setpriv")
                && !text.contains("CAP_SETUID"),
            "a normal user's sandbox is that user's: {text}"
        );
    }
}
