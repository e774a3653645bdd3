//! The command evaluator's sandbox: each candidate's command runs in a
//! bubblewrap container of its own, built by the worker's
//! [`sandbox::bwrap_args`] (the same namespaces, read-only file system,
//! hidden home dirs and private scratch dir as the Python evaluator's), with
//! its results folder the only writable place it shares with the run, and
//! the worker's limits applied through `prlimit` inside it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::engine::evaluator::worker::limits::Limits;
use crate::engine::evaluator::worker::sandbox::{self, Interpreter, Jail, SCRATCH_ROOT};

/// `prlimit` on PATH, or why there is none.
pub(super) fn find_prlimit() -> Result<PathBuf, String> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("prlimit"))
            .find(|p| p.is_file())
    });
    found.ok_or_else(|| {
        "the sandbox applies the evaluator's limits with `prlimit`, which is not installed: install \
         util-linux, or set the limits to null"
            .to_owned()
    })
}

/// `prlimit`'s arguments for `limits` (no core files; CPU time: SIGXCPU at
/// the limit, SIGKILL a second later), then `--`.
pub(super) fn prlimit_args(prlimit: &Path, limits: Limits) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![prlimit.into(), "--core=0".into()];
    if let Some(m) = limits.memory_mib {
        a.push(format!("--data={}", m.saturating_mul(1 << 20)).into());
    }
    if let Some(m) = limits.file_size_mib {
        a.push(format!("--fsize={}", m.saturating_mul(1 << 20)).into());
    }
    if let Some(n) = limits.processes {
        a.push(format!("--nproc={n}").into());
    }
    // A whole second at least, rounded up (as the Python worker does).
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive number of seconds far below u64::MAX"
    )]
    let soft = (limits.cpu_secs.ceil() as u64).max(1);
    a.push(format!("--cpu={soft}:{}", soft + 1).into());
    a.push("--".into());
    a
}

/// What one candidate's sandbox shows and lets it write.
pub(super) struct Cell<'a> {
    pub network: bool,
    pub task_dir: &'a Path,
    /// `galapagos_eval`'s dir (read-only).
    pub helper_dir: &'a Path,
    /// The candidate's own folder (its program and results): writable.
    pub candidate_dir: &'a Path,
    /// The interpreter `{python}` names, and the command's program.
    pub python: &'a str,
    pub program: &'a str,
    pub read_paths: &'a [String],
}

/// HOME and TMPDIR inside the sandbox (its private scratch tmpfs).
pub(super) fn private_home_and_tmp() -> (PathBuf, PathBuf) {
    let root = Path::new(SCRATCH_ROOT);
    (root.join("home"), root.join("tmp"))
}

/// The `bwrap` arguments that run `command` in a candidate's sandbox.
pub(super) fn bwrap_args(cell: &Cell<'_>, command: &[OsString]) -> Vec<OsString> {
    let interpreter = sandbox::locate(cell.python).unwrap_or_else(|| Interpreter {
        executable: PathBuf::from(cell.python),
        prefixes: Vec::new(),
    });
    let program = Path::new(cell.program);
    let extra = program
        .is_absolute()
        .then(|| program.to_path_buf())
        .into_iter()
        .chain(cell.read_paths.iter().map(|p| sandbox::expand_home(p)))
        .collect();
    let jail = Jail {
        network: cell.network,
        interpreter: &interpreter,
        task_dir: cell.task_dir,
        code_dir: cell.helper_dir,
        lanes_dir: cell.helper_dir,
        extra,
        writable: vec![cell.candidate_dir.to_path_buf()],
        private: sandbox::private_dirs(),
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
    };
    sandbox::bwrap_args(&jail, command)
}

/// Whether the command `exe` (a path, or a name on PATH) exists, as a spawn
/// outside the sandbox would find it (inside, a missing command is only an
/// exit status).
pub(super) fn exists(exe: &str) -> bool {
    if exe.contains('/') {
        return Path::new(exe).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(exe).is_file()))
}

/// The file in a candidate's folder where the sandbox's shell writes the
/// CPU time the command used (`times`).
const CPU_FILE: &str = ".galapagos-cpu-time";

/// The shell script that runs the command (its arguments) and then writes
/// its CPU time to the file `$0` names; its status is the command's. The
/// sandbox does not pass on the CPU time of what runs in it, so the shell
/// counts it.
const COUNTING_SHELL: &str = "\"$@\"; s=$?; times >\"$0\" 2>/dev/null; exit $s";

/// The CPU time (user + system, seconds) the command run in
/// `candidate_dir` and the processes it waited for used, as the sandbox's
/// shell wrote it (None when it did not: killed at the timeout, say).
pub(super) fn cpu_used(candidate_dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(candidate_dir.join(CPU_FILE)).ok()?;
    // `times`: the shell's own user and system time, then its children's,
    // each as `1m2.345s`.
    let children = text.lines().nth(1)?;
    let secs = |t: &str| -> Option<f64> {
        let (m, s) = t.strip_suffix('s')?.split_once('m')?;
        Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
    };
    let mut total = 0.0;
    for t in children.split_whitespace() {
        total += secs(t)?;
    }
    Some(total)
}

/// `argv` run through `prlimit` in the candidate's sandbox, under a shell
/// that counts its CPU time ([`cpu_used`]).
pub(super) fn command(
    bwrap: &Path,
    prlimit: &Path,
    cell: &Cell<'_>,
    limits: Limits,
    argv: &[String],
) -> tokio::process::Command {
    let mut command: Vec<OsString> = vec![
        "/bin/sh".into(),
        "-c".into(),
        COUNTING_SHELL.into(),
        cell.candidate_dir.join(CPU_FILE).into(),
    ];
    command.extend(prlimit_args(prlimit, limits));
    command.extend(argv.iter().map(Into::into));
    let mut cmd = tokio::process::Command::new(bwrap);
    cmd.args(bwrap_args(cell, &command));
    cmd
}
