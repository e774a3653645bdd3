//! The sandbox around an evaluation worker: the interpreter found outside
//! it, the dirs it hides and shows, and the bubblewrap command line that
//! puts the worker in it.
//!
//! The sandbox (`evaluator.sandbox: bwrap`, the default on Linux) is one
//! bubblewrap container per worker, so its start is paid once per run:
//! new user, pid, IPC, UTS and cgroup namespaces, no network namespace
//! shared with the machine unless the card sets `evaluator.network`, no
//! capabilities, a new session, and a file system that is the machine's,
//! read-only, with the user's home dirs, /tmp, /var/tmp and /run replaced by
//! empty read-only dirs, a fresh /dev and /proc, and only what the worker
//! needs bound back read-only: the task folder, the worker's code, the
//! interpreter's prefixes, the lane socket. Inside it, every candidate gets
//! namespaces, a private writable scratch dir and limits of its own (see
//! `assets/python/galapagos_sandbox.py`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::code_dir::CODE_FILES;
pub(crate) use super::run_as::{NOBODY, RunAs, as_user, run_as, stage_task};
use crate::engine::params::ParamError;

/// How candidates are isolated (`evaluator.sandbox`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sandbox {
    /// A bubblewrap sandbox per run, namespaces and limits per candidate.
    Bwrap,
    /// No sandbox: candidates run as you, with your files and network.
    None,
}

impl Default for Sandbox {
    /// `bwrap` on Linux, where bubblewrap exists; `none` elsewhere.
    fn default() -> Self {
        if cfg!(target_os = "linux") {
            Self::Bwrap
        } else {
            Self::None
        }
    }
}

/// Why a `read_paths` entry is refused, if it is: it would show the user's
/// whole home (or `/`, `/home`, `/root`) or the settings file.
pub(crate) fn refuse_read_path(path: &str) -> Option<String> {
    let p = expand_home(path);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let whole = [
        Some(PathBuf::from("/")),
        Some("/home".into()),
        Some("/root".into()),
        home,
    ];
    if whole.iter().flatten().any(|w| *w == p) {
        return Some(format!(
            "`{path}` would show all of it to candidates; name the dirs they need"
        ));
    }
    let settings = crate::engine::model::settings::user_settings_path();
    if settings.is_some_and(|s| s.starts_with(&p)) {
        return Some(format!("`{path}` holds galapagos's settings file"));
    }
    None
}

/// The first `read_paths` entry refused by [`refuse_read_path`].
pub(crate) fn check_read_paths(paths: &[String]) -> Result<(), ParamError> {
    for (i, path) in paths.iter().enumerate() {
        if let Some(reason) = refuse_read_path(path) {
            return Err(ParamError {
                key: format!("read_paths[{i}]"),
                reason,
            });
        }
    }
    Ok(())
}

/// `path` with a leading `~/` (or a lone `~`) replaced by `$HOME`.
pub(crate) fn expand_home(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    match (path.strip_prefix("~/"), path == "~") {
        (Some(rest), _) => home().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        (None, true) => home().unwrap_or_else(|| PathBuf::from(path)),
        _ => PathBuf::from(path),
    }
}

/// Where the user's own data lives: `/home`, `/root`, `$HOME`, and the dir
/// of galapagos's settings file (those that exist, never `/`).
pub(crate) fn private_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/home"), PathBuf::from("/root")];
    dirs.extend(std::env::var_os("HOME").map(PathBuf::from));
    dirs.extend(
        crate::engine::model::settings::user_settings_path()
            .and_then(|p| p.parent().map(Path::to_path_buf)),
    );
    dirs.retain(|d| d.is_absolute() && d.components().count() > 1 && d.is_dir());
    dirs
}

/// Where a sandboxed candidate can write: a fresh tmpfs per candidate,
/// holding its HOME (`home`) and TMPDIR (`tmp`).
pub(crate) const SCRATCH_ROOT: &str = "/tmp/galapagos";

/// Where a worker's candidates write: (HOME, TMPDIR, the dir their program
/// files go in). In the sandbox, a private tmpfs per candidate
/// ([`SCRATCH_ROOT`]); without it, the run's private dirs (`dir` is the
/// worker's own).
pub(crate) fn scratch_dirs(
    sandboxed: bool,
    setup: &super::code_dir::Setup,
    dir: &Path,
) -> (PathBuf, PathBuf, PathBuf) {
    let root = Path::new(SCRATCH_ROOT);
    if sandboxed {
        (root.join("home"), root.join("tmp"), root.join("tmp"))
    } else {
        (setup.home.clone(), setup.tmp.clone(), dir.to_path_buf())
    }
}

/// The worker configuration's `isolate` entry: what each candidate's
/// namespaces get (see `assets/python/galapagos_sandbox.py`).
/// Each candidate's scratch dir is one tmpfs of `quota_mib` (its
/// writable-space quota): HOME, TMPDIR, `/dev/shm` and its program's
/// folder, which nothing else it can write adds to.
pub(crate) fn isolation(network: bool, quota_mib: u64, lanes_dir: &Path) -> serde_json::Value {
    serde_json::json!({
        "network": network,
        "root": SCRATCH_ROOT,
        "tmp_mib": quota_mib,
        "hide": [lanes_dir],
    })
}

/// The interpreter the worker runs, as the interpreter itself reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Interpreter {
    /// `sys.executable`: the worker starts from it (no shim in between).
    pub executable: PathBuf,
    /// Dirs the interpreter reads its standard library and packages from.
    pub prefixes: Vec<PathBuf>,
}

/// Asks the interpreter where it lives (`-I -S`: no site, no environment
/// variables, so nothing but this code runs) and compiles the worker's code
/// in the code dir (argument 1) when its bytecode is missing or stale, so a
/// worker that cannot write there (in the sandbox) still starts from
/// bytecode.
const PROBE: &str = r#"import importlib.util, json, os, sys
prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))}
# A venv (found by its pyvenv.cfg; without `site`, sys.prefix is the base's).
venv = os.path.dirname(os.path.dirname(sys.executable))
if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
    prefixes.add(venv)
out = {"executable": sys.executable, "prefixes": sorted(prefixes)}
code = sys.argv[1]
for rel in sys.argv[2:]:
    src = os.path.join(code, rel)
    try:
        cached = importlib.util.cache_from_source(src)
        st = os.stat(src)
        try:
            with open(cached, "rb") as f:
                head = f.read(16)
        except OSError:
            head = b""
        fresh = (head[:4] == importlib.util.MAGIC_NUMBER and head[4:8] == bytes(4)
                 and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                 and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)
        if not fresh:
            import py_compile
            py_compile.compile(src, cfile=cached, doraise=True)
    except Exception as exc:
        out.setdefault("uncompiled", []).append(f"{rel}: {exc}")
print(json.dumps(out))
"#;

/// Run `python` (as the user named it: a name on PATH, a path, a
/// version-manager shim) outside the sandbox, from `cwd`, with the run's
/// environment (only this module's own code runs), to learn where it lives;
/// it also compiles the worker's `files` in `code_dir`.
pub(crate) async fn probe(
    python: &Path,
    cwd: &Path,
    code_dir: &Path,
    files: &[&str],
) -> Result<Interpreter, String> {
    #[derive(serde::Deserialize)]
    struct Found {
        executable: PathBuf,
        prefixes: Vec<PathBuf>,
    }
    let run = tokio::process::Command::new(python)
        .args(["-I", "-S", "-c", PROBE])
        .arg(code_dir)
        .args(files)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(Duration::from_secs(60), run).await {
        Err(_) => {
            return Err(format!(
                "the Python interpreter `{}` did not answer within 60 s",
                python.display()
            ));
        }
        Ok(Err(e)) => {
            return Err(format!(
                "cannot run the Python interpreter `{}`: {e} (set the evaluator's `python` parameter)",
                python.display()
            ));
        }
        Ok(Ok(o)) => o,
    };
    let text = String::from_utf8_lossy(&output.stdout);
    match serde_json::from_str::<Found>(text.trim()) {
        Ok(found) if output.status.success() && found.executable.is_absolute() => Ok(Interpreter {
            executable: found.executable,
            prefixes: found
                .prefixes
                .into_iter()
                .filter(|p| p.is_absolute())
                .collect(),
        }),
        _ => Err(format!(
            "the Python interpreter `{}` does not run ({}): {}",
            python.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// The interpreter `python` names, found without running it, when it is a
/// binary (the common case: a venv's, a pyenv version's, the system's, a
/// conda env's python): named by path, or by a name on `PATH`. None for a
/// script (a version manager's shim), a relative path, or anything not
/// found: [`probe`] asks the interpreter itself then.
pub(crate) fn locate(python: &str) -> Option<Interpreter> {
    let named = Path::new(python);
    let path = if named.is_absolute() {
        named.to_path_buf()
    } else if python.contains('/') {
        return None;
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(python))
            .find(|p| p.is_file())?
    };
    let mut head = [0u8; 4];
    std::io::Read::read_exact(&mut std::fs::File::open(&path).ok()?, &mut head).ok()?;
    if &head != b"\x7fELF" {
        return None;
    }
    let real = std::fs::canonicalize(&path).ok()?;
    let mut prefixes: Vec<PathBuf> = Vec::new();
    let mut add = |p: Option<&Path>| {
        if let Some(p) = p.filter(|p| p.components().count() > 1)
            && !prefixes.iter().any(|q| q == p)
        {
            prefixes.push(p.to_path_buf());
        }
    };
    add(path.parent());
    add(real.parent());
    add(real.parent().and_then(Path::parent));
    // A venv: its dir (pyvenv.cfg beside bin/) and the base it names.
    let venv = path.parent().and_then(Path::parent);
    if let Some(cfg) = venv.and_then(|v| std::fs::read_to_string(v.join("pyvenv.cfg")).ok()) {
        add(venv);
        let home = cfg.lines().find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "home").then(|| PathBuf::from(value.trim()))
        });
        if let Some(home) = home {
            add(Some(&home));
            add(home.parent());
        }
    }
    Some(Interpreter {
        executable: path,
        prefixes,
    })
}

/// The interpreter `python` names: [`locate`]d when it is a binary, else
/// [`probe`]d (outside any sandbox).
pub(crate) async fn find_interpreter(
    python: &str,
    cwd: &Path,
    code_dir: &Path,
) -> Result<Interpreter, String> {
    match locate(python) {
        Some(found) => Ok(found),
        None => probe(Path::new(python), cwd, code_dir, &CODE_FILES).await,
    }
}

/// Compile the worker's code for the next start (a worker in the sandbox
/// cannot write its bytecode): [`probe`] does, in the background, off this
/// run's path.
pub(crate) fn compile_in_background(python: &str, cwd: &Path, code_dir: &Path) {
    let (python, cwd, code) = (
        PathBuf::from(python),
        cwd.to_path_buf(),
        code_dir.to_path_buf(),
    );
    drop(tokio::spawn(async move {
        let _ = probe(&python, &cwd, &code, &CODE_FILES).await;
    }));
}

/// `bwrap` on PATH, or why there is none.
pub(crate) fn find_bwrap() -> Result<PathBuf, String> {
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

/// What the worker's sandbox shows.
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
    pub quota_mib: Option<u64>,
    /// One writable file system for the whole container (a container per
    /// candidate: the command evaluator's, a Slurm node's): `/dev/shm` of
    /// `quota_mib`, holding the scratch dir ([`SCRATCH_ROOT`] is a link to
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

/// The `bwrap` arguments that start `command` in the worker's sandbox.
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
        .quota_mib
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
            quota_mib: Some(512),
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
            quota_mib: None,
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

    #[test]
    fn a_binary_interpreter_is_located_without_running_it_and_a_script_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        let binary = std::env::current_exe().unwrap();
        std::os::unix::fs::symlink(&binary, venv.join("bin/python")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            "home = /opt/base/bin\nversion = 3.11\n",
        )
        .unwrap();
        let python = venv.join("bin/python");
        let found = locate(python.to_str().unwrap()).expect("an ELF binary");
        assert_eq!(
            found.executable, python,
            "the venv's path, not the link's target"
        );
        for p in [
            venv.clone(),
            venv.join("bin"),
            PathBuf::from("/opt/base/bin"),
            PathBuf::from("/opt/base"),
            binary.parent().unwrap().to_path_buf(),
        ] {
            assert!(found.prefixes.contains(&p), "{p:?} in {:?}", found.prefixes);
        }
        let shim = dir.path().join("python-shim");
        std::fs::write(&shim, "#!/bin/sh\nexec python3 \"$@\"\n").unwrap();
        assert_eq!(
            locate(shim.to_str().unwrap()),
            None,
            "a script is asked instead"
        );
        assert_eq!(locate("relative/python"), None);
        assert_eq!(locate("/nonexistent/python9"), None);
    }
}
