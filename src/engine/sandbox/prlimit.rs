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

/// `prlimit`'s arguments for `limits` (each of [`Limits::rlimits`]; CPU
/// time: SIGXCPU at the limit, SIGKILL a second later), then `--`. The
/// process is in a user namespace of its own, so a limit counted per user
/// counts its processes alone.
pub(crate) fn prlimit_args(prlimit: &Path, limits: Limits) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![prlimit.into()];
    for rlimit in limits.rlimits() {
        a.push(format!("{}={}", rlimit.prlimit, rlimit.value).into());
    }
    let (soft, hard) = limits.cpu_soft_hard();
    a.push(format!("--cpu={soft}:{hard}").into());
    a.push("--".into());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_becomes_an_option() {
        let limits = Limits {
            memory_mib: Some(256),
            cpu_secs: 2.5,
            file_size_mib: None,
            processes: Some(16),
            write_quota_mib: Some(8),
        };
        let args: Vec<String> = prlimit_args(Path::new("/usr/bin/prlimit"), limits)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "/usr/bin/prlimit",
                "--core=0",
                "--data=268435456",
                "--nproc=16",
                "--cpu=3:4",
                "--"
            ]
        );
    }
}
