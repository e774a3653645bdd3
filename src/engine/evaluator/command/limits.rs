//! How a command ended, and which of the sandbox's limits it hit.
//!
//! The sandbox reports a command killed by signal N as exit status 128 + N
//! (bubblewrap passes its child's status on that way, as shells do), so
//! the exit status alone cannot tell `kill -XCPU` from `exit 152`: the
//! isolation kit's one explainer ([`Limits::hit`]) names a limit only on
//! evidence, the CPU time used and the command's stderr included, and only
//! for a candidate that is invalid anyway.

use std::process::ExitStatus;

use crate::engine::platform;
use crate::engine::sandbox::limits::{Evidence, Limits};
use crate::engine::sandbox::process::{ending_signal, signal_name};

/// How a command ended: its exit status, and the CPU time it and the
/// processes it waited for used (None when unknown).
#[derive(Clone, Copy, Debug)]
pub(super) struct Ending {
    pub status: ExitStatus,
    pub cpu_secs: Option<f64>,
    /// Through the sandbox (which reports a signal N as status 128 + N).
    pub sandboxed: bool,
}

impl Ending {
    /// The signal that ended the command: its own, or the sandbox's
    /// 128 + N.
    fn signal(&self) -> Option<i32> {
        ending_signal(self.status, self.sandboxed)
    }

    /// The command's failure in words ("the evaluator command exited with
    /// status 3", "... was killed by SIGXCPU (signal 24)", "... ended with
    /// status 152 (as the sandbox reports a kill by SIGXCPU, signal 24)").
    pub(super) fn describe(&self) -> String {
        if let Some(sig) = platform::exit_signal(&self.status) {
            return format!(
                "the evaluator command was killed by {} (signal {sig})",
                signal_name(sig)
            );
        }
        let code = self.status.code().unwrap_or(-1);
        match self.signal() {
            Some(sig) => format!(
                "the evaluator command ended with status {code} (as the sandbox reports a kill by \
                 {}, signal {sig})",
                signal_name(sig)
            ),
            None => format!("the evaluator command exited with status {code}"),
        }
    }
}

/// `error` (the failed command's) with the limit it hit named first
/// ("exceeded the 256 MiB memory limit (the evaluator command exited with
/// status 1; stderr: MemoryError)"), when how it ended (`ending`; None: it
/// never ended on its own, a timeout), its `stderr` or `error` show one
/// ([`Limits::hit`]). None when no limit is shown.
pub(super) fn name_limit(
    limits: Limits,
    ending: Option<Ending>,
    stderr: &str,
    error: &str,
) -> Option<String> {
    let ending = ending?;
    if ending.status.success() && error.is_empty() {
        return None;
    }
    let evidence = Evidence {
        signal: ending.signal(),
        // Status 152 is also a command's own `exit 152`: a kill by SIGXCPU
        // only with the time used (none counted: none used).
        cpu_secs: Some(ending.cpu_secs.unwrap_or(0.0)),
        said: &[stderr, error],
        // As root, the sandbox runs the command as an unprivileged user in
        // a user namespace of its own, whom the kernel holds to the limit.
        processes_unenforced: false,
        ..Evidence::default()
    };
    limits.hit(&evidence).map(|hit| hit.name(error))
}

// The wait statuses these tests build are Linux's.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    const LIMITS: Limits = Limits {
        memory_mib: Some(256),
        cpu_secs: 2.0,
        file_size_mib: Some(1),
        processes: Some(16),
        write_quota_mib: Some(8),
    };

    fn named(code: i32, cpu: f64, stderr: &str) -> Option<String> {
        let ending = Ending {
            status: ExitStatus::from_raw(code << 8),
            cpu_secs: Some(cpu),
            sandboxed: true,
        };
        let error = if code == 0 { "" } else { "failed" };
        name_limit(LIMITS, Some(ending), stderr, error)
    }

    #[test]
    fn a_sandboxed_status_is_read_as_the_signal_it_reports() {
        assert_eq!(
            named(152, 2.1, "").as_deref(),
            Some(
                "exceeded the 2 s CPU time limit (failed); to allow more, raise `cpu_limit_secs` in \
                 the card"
            )
        );
        assert_eq!(named(152, 0.2, ""), None, "exit 152 without the CPU time");
        assert_eq!(
            named(153, 0.0, "").as_deref(),
            Some(
                "exceeded the 1 MiB file size limit (failed); to allow more, raise \
                 `file_size_limit_mib` in the card"
            )
        );
        assert_eq!(
            named(1, 0.0, "Traceback ...\nMemoryError\n").as_deref(),
            Some(
                "exceeded the 256 MiB memory limit (failed; stderr: MemoryError); to allow more, \
                 raise `memory_limit_mib` in the card"
            )
        );
        assert_eq!(named(0, 5.0, "MemoryError"), None, "it succeeded");
        assert_eq!(
            name_limit(LIMITS, None, "MemoryError", "timeout"),
            None,
            "it never ended on its own"
        );
    }

    #[test]
    fn a_sandboxed_signal_is_described_as_the_sandbox_reports_it() {
        let e = Ending {
            status: ExitStatus::from_raw(152 << 8),
            cpu_secs: None,
            sandboxed: true,
        };
        assert_eq!(
            e.describe(),
            "the evaluator command ended with status 152 (as the sandbox reports a kill by SIGXCPU, \
             signal 24)"
        );
        let plain = Ending {
            sandboxed: false,
            ..e
        };
        assert_eq!(
            plain.describe(),
            "the evaluator command exited with status 152"
        );
        let killed = Ending {
            status: ExitStatus::from_raw(9),
            ..plain
        };
        assert_eq!(
            killed.describe(),
            "the evaluator command was killed by SIGKILL (signal 9)"
        );
    }
}
