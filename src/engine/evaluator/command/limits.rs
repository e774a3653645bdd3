//! How a command ended, and which of the sandbox's limits it hit.
//!
//! The sandbox reports a command killed by signal N as exit status 128 + N
//! (bubblewrap passes its child's status on that way, as shells do), so
//! the exit status alone cannot tell `kill -XCPU` from `exit 152`. A limit
//! is named on the genome only when the evidence points to it, the limit is
//! set, and the candidate is invalid anyway:
//!
//! - **CPU time**: killed by SIGXCPU (status 152, `SIGXCPU` in its stderr,
//!   or a shell's "CPU time limit exceeded") and its processes used at
//!   least the limit's CPU time (as the sandbox's shell counts it,
//!   [`super::sandboxed::cpu_used`]); or
//!   killed by SIGKILL (status 137) after using the hard limit (the soft
//!   one plus a second), which is when the kernel kills a process that
//!   ignores SIGXCPU.
//! - **File size**: killed by SIGXFSZ (status 153; only the kernel sends
//!   it, at the limit), or its stderr shows a write refused as too large
//!   (`EFBIG`, "File too large"; Python ignores SIGXFSZ and gets that) or a
//!   shell's "File size limit exceeded".
//! - **Memory**: its stderr (or `correct.json`'s error) shows an
//!   allocation that failed: Python's `MemoryError`, `ENOMEM` ("Cannot
//!   allocate memory"), C++'s `std::bad_alloc`, Rust's "memory allocation
//!   of N bytes failed", "out of memory" (Go, Node), Java's
//!   `OutOfMemoryError`. The limit caps each process's data segment, so an
//!   allocation past it fails; the kernel's OOM killer (a SIGKILL with no
//!   such message) is not this limit and is not named.
//! - **Writable space**: its stderr shows a write refused for want of
//!   space ("No space left on device", `ENOSPC`): the sandbox's scratch
//!   file systems are capped at the writable-space quota.
//! - **Processes**: its stderr shows `EAGAIN` ("Resource temporarily
//!   unavailable") from starting a process or thread (the same stderr
//!   mentions fork, spawn, Popen, a subprocess or `pthread_create`), or
//!   Python's "can't start new thread". Never when galapagos runs as root:
//!   the kernel does not enforce the limit for root, so such a failure has
//!   another cause.
//!
//! Wall time (`timeout_secs`) is a timeout of its own, and captured output
//! is cut, not failed.

use std::process::ExitStatus;

use crate::engine::sandbox::limits::Limits;
use crate::engine::sandbox::process::signal_name;

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
const SIGXFSZ: i32 = 25;

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
        use std::os::unix::process::ExitStatusExt as _;
        self.status.signal().or_else(|| {
            self.status
                .code()
                .filter(|c| self.sandboxed && (129..=128 + 64).contains(c))
                .map(|c| c - 128)
        })
    }

    /// The command's failure in words ("the evaluator command exited with
    /// status 3", "... was killed by SIGXCPU (signal 24)", "... ended with
    /// status 152 (as the sandbox reports a kill by SIGXCPU, signal 24)").
    pub(super) fn describe(&self) -> String {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(sig) = self.status.signal() {
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

/// What a failed candidate's command showed: how it ended (None: it never
/// ended on its own, a timeout), its stderr and the error recorded so far.
pub(super) struct Evidence<'a> {
    pub ending: Option<Ending>,
    pub stderr: &'a str,
    pub error: &'a str,
    /// galapagos runs as root (the process limit is not enforced).
    pub root: bool,
}

/// Stderr phrases of an allocation that failed.
const MEMORY: [&str; 8] = [
    "MemoryError",
    "Cannot allocate memory",
    "cannot allocate memory",
    "std::bad_alloc",
    "memory allocation of ",
    "out of memory",
    "Out of memory",
    "OutOfMemoryError",
];

/// Words of a line about a GPU's memory (not this limit's).
const GPU: [&str; 3] = ["CUDA", "cuda", "GPU"];

/// Stderr phrases of a write refused at the file size limit.
const FILE_SIZE: [&str; 3] = ["File too large", "File size limit exceeded", "SIGXFSZ"];

/// Stderr phrases of a process killed at its CPU time limit.
const CPU: [&str; 2] = ["CPU time limit exceeded", "SIGXCPU"];

/// `EAGAIN`, as `strerror` says it.
const EAGAIN: &str = "Resource temporarily unavailable";

/// Words that place an `EAGAIN` at starting a process or thread.
const STARTING: [&str; 7] = [
    "fork",
    "spawn",
    "Popen",
    "subprocess",
    "pthread_create",
    "start_new_thread",
    "clone",
];

/// The first line of `text` holding one of `phrases`, trimmed and cut.
fn line_with<'t>(text: &'t str, phrases: &[&str]) -> Option<&'t str> {
    text.lines()
        .map(str::trim)
        .find(|l| phrases.iter().any(|p| l.contains(p)))
        .map(|l| cut(l, 160))
}

fn cut(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The limit `evidence` shows was hit, as the error's prefix says it ("the
/// 256 MiB memory limit"), with the stderr line that shows it (None when
/// the ending says it). None when no limit is shown.
/// A write refused for want of space: the writable-space quota, whose
/// file systems are the only place a sandboxed command can fill.
const NO_SPACE: [&str; 3] = ["No space left on device", "ENOSPC", "Disk quota exceeded"];

pub(super) fn limit_hit(
    limits: Limits,
    evidence: &Evidence<'_>,
) -> Option<(String, Option<String>)> {
    let ending = evidence.ending?;
    if ending.status.success() && evidence.error.is_empty() {
        return None;
    }
    let texts = [evidence.stderr, evidence.error];
    let found = |phrases: &[&str]| texts.iter().find_map(|t| line_with(t, phrases));
    let signal = ending.signal();
    // CPU time: a kill at the soft limit (SIGXCPU) or the hard one (SIGKILL).
    let soft = limits.cpu_secs.ceil().max(1.0);
    let used = ending.cpu_secs.unwrap_or(0.0);
    let cpu = format!("the {} s CPU time limit", limits.cpu_secs);
    if signal == Some(SIGXCPU) && used + 0.5 >= soft {
        return Some((cpu, None));
    }
    if signal == Some(SIGKILL) && used + 0.5 >= soft + 1.0 {
        return Some((cpu, None));
    }
    if let Some(line) = found(&CPU).filter(|_| used + 0.5 >= soft) {
        return Some((cpu, Some(line.to_owned())));
    }
    if let Some(m) = limits.file_size_mib {
        let file = format!("the {m} MiB file size limit");
        if signal == Some(SIGXFSZ) {
            return Some((file, None));
        }
        if let Some(line) = found(&FILE_SIZE) {
            return Some((file, Some(line.to_owned())));
        }
    }
    let memory = texts.iter().find_map(|t| {
        t.lines()
            .map(str::trim)
            .find(|l| MEMORY.iter().any(|p| l.contains(p)) && !GPU.iter().any(|g| l.contains(g)))
            .map(|l| cut(l, 160))
    });
    if let Some(m) = limits.memory_mib
        && let Some(line) = memory
    {
        return Some((format!("the {m} MiB memory limit"), Some(line.to_owned())));
    }
    if let Some(q) = limits.write_quota_mib
        && let Some(line) = found(&NO_SPACE)
    {
        return Some((
            format!("the {q} MiB writable-space quota"),
            Some(line.to_owned()),
        ));
    }
    if let Some(n) = limits.processes
        && !evidence.root
    {
        let refused = texts
            .iter()
            .filter(|t| STARTING.iter().any(|w| t.contains(w)))
            .find_map(|t| line_with(t, &[EAGAIN]))
            .or_else(|| found(&["can't start new thread"]));
        if let Some(line) = refused {
            return Some((format!("the {n}-process limit"), Some(line.to_owned())));
        }
    }
    None
}

/// `error` with the limit hit named first: "exceeded the 256 MiB memory
/// limit (the evaluator command exited with status 1; stderr: MemoryError)".
pub(super) fn name_limit(error: &str, limit: &str, line: Option<&str>) -> String {
    match line {
        Some(line) if !error.contains(line) => {
            format!("exceeded {limit} ({error}; stderr: {line})")
        }
        _ => format!("exceeded {limit} ({error})"),
    }
}

#[cfg(test)]
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

    fn hit(code: i32, cpu: f64, stderr: &str, root: bool) -> Option<String> {
        let ending = Ending {
            status: ExitStatus::from_raw(code << 8),
            cpu_secs: Some(cpu),
            sandboxed: true,
        };
        let evidence = Evidence {
            ending: Some(ending),
            stderr,
            error: "",
            root,
        };
        limit_hit(LIMITS, &evidence).map(|(limit, _)| limit)
    }

    #[test]
    fn a_limit_is_named_only_on_evidence() {
        let cpu = Some("the 2 s CPU time limit".to_owned());
        assert_eq!(hit(152, 2.1, "", false), cpu, "SIGXCPU after 2 s");
        assert_eq!(
            hit(152, 0.2, "", false),
            None,
            "exit 152 without the CPU time"
        );
        assert_eq!(hit(137, 3.0, "", false), cpu, "SIGKILL at the hard limit");
        assert_eq!(
            hit(137, 2.1, "", false),
            None,
            "SIGKILL before the hard limit"
        );
        assert_eq!(
            hit(137, 0.1, "", false),
            None,
            "exit 137 is not the memory limit"
        );
        let sh = "sh: 1: CPU time limit exceeded";
        assert_eq!(hit(1, 2.0, sh, false), cpu);
        let file = Some("the 1 MiB file size limit".to_owned());
        assert_eq!(hit(153, 0.0, "", false), file);
        assert_eq!(
            hit(1, 0.0, "OSError: [Errno 27] File too large", false),
            file
        );
        let memory = Some("the 256 MiB memory limit".to_owned());
        assert_eq!(hit(1, 0.0, "Traceback ...\nMemoryError\n", false), memory);
        assert_eq!(
            hit(
                134,
                0.0,
                "memory allocation of 1073741824 bytes failed",
                false
            ),
            memory
        );
        let fork = "  File \"x.py\", line 3, in <module>\n    os.fork()\n\
                    BlockingIOError: [Errno 11] Resource temporarily unavailable";
        assert_eq!(
            hit(1, 0.0, fork, false),
            Some("the 16-process limit".to_owned())
        );
        assert_eq!(hit(1, 0.0, fork, true), None, "not enforced for root");
        let socket = "Exception in thread Thread-1:\n  File \"x.py\", line 9, in run\n    \
                      sock.recv(1)\nBlockingIOError: [Errno 11] Resource temporarily unavailable";
        assert_eq!(hit(1, 0.0, socket, false), None, "EAGAIN from a socket");
        assert_eq!(hit(0, 5.0, "MemoryError", false), None, "it succeeded");
        let gpu = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
        assert_eq!(hit(1, 0.0, gpu, false), None, "a GPU's memory");
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
        assert_eq!(
            name_limit("x", "the 1 MiB file size limit", Some("File too large")),
            "exceeded the 1 MiB file size limit (x; stderr: File too large)"
        );
    }
}
