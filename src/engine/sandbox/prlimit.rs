//! `prlimit`, which applies a sandboxed process's [`Limits`] inside its
//! container (the command evaluator's candidates, a coding agent): memory
//! as RLIMIT_DATA, CPU time (SIGXCPU at the limit, SIGKILL a second later),
//! file size, processes, no core files. Linux only (util-linux).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::limits::Limits;

/// `prlimit` on PATH, or why there is none.
pub(crate) fn find_prlimit() -> Result<PathBuf, String> {
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
pub(crate) fn prlimit_args(prlimit: &Path, limits: Limits) -> Vec<OsString> {
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
