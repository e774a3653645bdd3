//! The command evaluator's sandbox: each candidate's command runs in a
//! bubblewrap container of its own, built by the isolation kit's
//! [`bwrap::bwrap_args`] (the same namespaces, read-only file system,
//! hidden home dirs and private scratch dir as the Python evaluator's), with
//! the limits applied through `prlimit` inside it ([`prlimit_args`]).
//!
//! Everything it can write is one file system of the writable-space quota
//! (`/dev/shm`, the scratch dir with HOME and TMPDIR in it, see
//! [`Jail::one_scratch`]): its folder (program and results) is copied
//! there from the run's, which it sees read-only, before the command
//! starts, and its results come back on a pipe once the command and
//! whatever it left have ended ([`AFTER`], [`Reported`]), so no host dir is
//! writable from inside.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::engine::sandbox::bwrap::{self, Jail};
use crate::engine::sandbox::interpreter::{self, Interpreter};
use crate::engine::sandbox::limits::Limits;
use crate::engine::sandbox::paths::{self, SCRATCH_ROOT};
use crate::engine::sandbox::prlimit::prlimit_args;
use crate::engine::sandbox::run_as::{self, RunAs};

/// What one candidate's sandbox shows and lets it write.
pub(super) struct Cell<'a> {
    pub network: bool,
    pub task_dir: &'a Path,
    /// `galapagos_eval`'s dir (read-only).
    pub helper_dir: &'a Path,
    /// The candidate's folder as the run wrote it (its program and an
    /// empty `results/`): shown read-only, copied to [`WORK`].
    pub candidate_dir: &'a Path,
    /// The interpreter `{python}` names, and the command's program.
    pub python: &'a str,
    pub program: &'a str,
    pub read_paths: &'a [String],
    /// Who the sandbox runs as when galapagos runs as root, and the task
    /// folder's copy that user can read (see [`run_as::stage_task`]).
    pub run_as: Option<RunAs>,
    /// The user and group ids of this process (the one who starts the
    /// container).
    pub ids: (u32, u32),
    pub task_copy: Option<&'a Path>,
    /// What the candidate may use: `prlimit`'s limits, and its
    /// writable-space quota, the size of the one file system it can write.
    pub limits: Limits,
}

/// The candidate's folder inside its sandbox: a copy of the run's, in the
/// scratch dir, so what it writes there counts against the quota.
pub(super) const WORK: &str = "/tmp/galapagos/work";

/// Where the run's folder for the candidate is shown, read-only.
const INBOX: &str = "/run/galapagos-candidate";

/// Before the command, as the sandbox's user: its folder copied in.
const COPY_IN: &str = "mkdir -p /tmp/galapagos/work && cp -R /run/galapagos-candidate/. /tmp/galapagos/work/ \
                       || { echo 'cannot copy the candidate folder into the sandbox' >&2; exit 125; }; exec \"$@\"";

/// After the command, as the sandbox's user: whatever it left killed, then
/// the result files it reads sent on stdout (the run's pipe), each as a
/// line `NAME BYTES` and its first [`super::json::MAX_RESULT_FILE`] + 1
/// bytes, or `NAME -` for one that is not a plain file (a link is not
/// followed).
const AFTER: &str = "kill -KILL -1 2>/dev/null; cd /tmp/galapagos/work/results || exit 0; \
                     for f in metrics.json correct.json; do \
                     if [ -h \"$f\" ] || { [ -e \"$f\" ] && [ ! -f \"$f\" ]; }; then printf \"%s -\\n\" \"$f\"; \
                     elif [ -f \"$f\" ]; then n=$(head -c 16777217 \"$f\" | wc -c); \
                     printf \"%s %s\\n\" \"$f\" $n; head -c 16777217 \"$f\"; fi; done";

/// What the command's sandbox sent back: each result file by name, its
/// bytes (more than the limit: too large; None: not a plain file).
#[derive(Debug, Default)]
pub(super) struct Reported(BTreeMap<String, Option<Vec<u8>>>);

impl Reported {
    /// Read `NAME BYTES` lines each followed by that many bytes; the last
    /// of a name counts (what the command wrote before its end cannot come
    /// after them).
    pub(super) fn parse(mut bytes: &[u8]) -> Self {
        let mut files = BTreeMap::new();
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
            let rest = &bytes[end + 1..];
            let Some((name, n)) = head.split_once(' ') else {
                break;
            };
            if n == "-" {
                files.insert(name.to_owned(), None);
                bytes = rest;
                continue;
            }
            let Ok(n) = n.trim().parse::<usize>() else {
                break;
            };
            if n > rest.len() {
                break;
            }
            files.insert(name.to_owned(), Some(rest[..n].to_vec()));
            bytes = &rest[n..];
        }
        Self(files)
    }

    /// The text of result file `name`, as [`super::json::read_limited`]
    /// reads one from a folder; None when it was not there.
    pub(super) fn text(&self, name: &str) -> Option<Result<String, String>> {
        self.0.get(name).map(|b| match b {
            Some(bytes) => super::json::text_limited(bytes.clone()),
            None => Err("it is not a plain file".to_owned()),
        })
    }
}

/// HOME and TMPDIR inside the sandbox (its private scratch tmpfs).
pub(super) fn private_home_and_tmp() -> (PathBuf, PathBuf) {
    let root = Path::new(SCRATCH_ROOT);
    (root.join("home"), root.join("tmp"))
}

/// The `bwrap` arguments that run `command` in a candidate's sandbox.
pub(super) fn bwrap_args(cell: &Cell<'_>, command: &[OsString]) -> Vec<OsString> {
    let interpreter = interpreter::locate(cell.python).unwrap_or_else(|| Interpreter {
        executable: PathBuf::from(cell.python),
        prefixes: Vec::new(),
    });
    let program = Path::new(cell.program);
    let extra = program
        .is_absolute()
        .then(|| program.to_path_buf())
        .into_iter()
        .chain(cell.read_paths.iter().map(|p| paths::expand_home(p)))
        .collect();
    let jail = Jail {
        network: cell.network,
        interpreter: &interpreter,
        task_dir: cell.task_dir,
        code_dir: cell.helper_dir,
        lanes_dir: cell.helper_dir,
        extra,
        writable: Vec::new(),
        private: paths::private_dirs(),
        uid: cell.ids.0,
        gid: cell.ids.1,
        run_as: cell.run_as,
        task_copy: cell.task_copy.map(Path::to_path_buf),
        write_quota_mib: cell.limits.write_quota_mib,
        one_scratch: true,
        shown: vec![(cell.candidate_dir.to_path_buf(), PathBuf::from(INBOX))],
    };
    // The command's shell is the container's pid 1, so bubblewrap waits
    // for it and the kernel adds its CPU time (and that of what it waited
    // for: the command) to bubblewrap's own children's, which the run
    // reads (`sandbox::supervise`).
    let mut args: Vec<OsString> = vec!["--as-pid-1".into()];
    args.extend(bwrap::bwrap_args(&jail, command));
    args
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

/// The script the container's pid 1 runs: the command (its arguments,
/// with stdin from /dev/null), then `after` (its results to stdin, the
/// run's pipe), then the command's status. A command killed by signal N is
/// status 128 + N.
fn pid1_shell(after: &[OsString]) -> String {
    let after: Vec<String> = after
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    format!(
        "\"$@\" 0</dev/null; s=$?; {} /bin/sh -c '{AFTER}' >&0 2>/dev/null; exit $s",
        after.join(" ")
    )
}

/// `argv` run through `prlimit` in the candidate's sandbox, under a shell
/// that is the container's pid 1 (its CPU time: `sandbox::supervise`).
pub(super) fn command(
    bwrap: &Path,
    prlimit: &Path,
    cell: &Cell<'_>,
    argv: &[String],
) -> tokio::process::Command {
    // As root, the shell stays root (it keeps bubblewrap's parent-death
    // signal, which a change of user clears, and the command cannot touch
    // it) and starts the command as the sandbox's user, in a user namespace
    // of its own, so the kernel counts its processes apart from other
    // candidates' (all run as that user).
    let mut inner: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), COPY_IN.into(), "sh".into()];
    if cell.run_as.is_some() {
        inner.extend(["unshare".into(), "--user".into(), "--".into()]);
    }
    inner.extend(prlimit_args(prlimit, cell.limits));
    inner.extend(argv.iter().map(Into::into));
    let mut command: Vec<OsString> = vec![
        "/bin/sh".into(),
        "-c".into(),
        pid1_shell(&run_as::as_user(cell.run_as, &[])).into(),
        "sh".into(),
    ];
    command.extend(run_as::as_user(cell.run_as, &inner));
    let mut cmd = tokio::process::Command::new(bwrap);
    cmd.args(bwrap_args(cell, &command));
    cmd
}
