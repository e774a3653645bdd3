//! Process plumbing for evaluation processes: reading `/proc`, killing whole
//! process groups, and describing how a process ended.

/// The fields of `/proc/<pid>/stat` after the command name (state, ppid, …);
/// None when the process (or /proc) is not there.
pub(crate) fn proc_stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: split after the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The pids of `pid` in each pid namespace from the one /proc belongs to
/// down to its own (`NSpid` of `/proc/<pid>/status`); None when the process
/// (or that line) is not there.
pub(crate) fn ns_pids(pid: u32) -> Option<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    line.split_whitespace().map(|p| p.parse().ok()).collect()
}

#[cfg(test)]
/// Is `pid` a process that has not exited (from /proc; false without it)?
pub(crate) fn process_running(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|f| f.first().is_some_and(|state| state != "Z" && state != "X"))
}

/// The signal that ended a process, from its exit status: its own, or, for
/// a process in the sandbox (`sandboxed`: bubblewrap passes its child's
/// status on as a shell does), the N of an exit status 128 + N.
pub(crate) fn ending_signal(status: std::process::ExitStatus, sandboxed: bool) -> Option<i32> {
    crate::engine::platform::exit_signal(&status).or_else(|| {
        status
            .code()
            .filter(|c| sandboxed && (129..=128 + 64).contains(c))
            .map(|c| c - 128)
    })
}

/// A raw wait status of a process in the sandbox as the wait status of
/// what it reports: a kill by the signal N that bubblewrap passed on as
/// exit status 128 + N (any other status as it is).
pub(crate) fn through_sandbox(status: i32) -> i32 {
    if wait_signal(status).is_some() {
        return status;
    }
    match exit_code(status) {
        Some(c) if (129..=128 + 64).contains(&c) => c - 128,
        _ => status,
    }
}

/// The signal a raw wait status shows the process was killed by. Raw
/// statuses come from Linux (the Python worker's children, a Slurm node's
/// runner), so they are decoded as Linux lays them out (`WIFSIGNALED`,
/// `WTERMSIG`), on any machine.
pub(crate) fn wait_signal(status: i32) -> Option<i32> {
    let low = status & 0x7f;
    (low != 0 && low != 0x7f).then_some(low)
}

/// The exit code a raw wait status shows (`WIFEXITED`, `WEXITSTATUS`).
fn exit_code(status: i32) -> Option<i32> {
    (status & 0x7f == 0).then_some((status >> 8) & 0xff)
}

/// A wait status as the reason a candidate is invalid.
pub(crate) fn describe_status(status: i32) -> String {
    if let Some(sig) = wait_signal(status) {
        return format!(
            "candidate crashed: killed by {} (signal {sig})",
            signal_name(sig)
        );
    }
    let code = exit_code(status).unwrap_or(status);
    format!(
        "candidate exited with status {code} before the evaluator returned (os._exit or a crash)"
    )
}

pub(crate) fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    usize::try_from(sig)
        .ok()
        .and_then(|s| s.checked_sub(1))
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("signal {sig}"), |n| (*n).to_owned())
}

/// SIGKILL whole process groups (`killpg`; groups already gone are skipped).
pub(crate) fn kill_groups(groups: &[i64]) {
    for group in groups.iter().filter(|g| **g > 1) {
        if let Ok(leader) = u32::try_from(*group) {
            crate::engine::platform::kill_group(leader);
        }
    }
}

// Checked against the standard library's decoding, which is Linux's here.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    #[test]
    fn raw_wait_statuses_decode_as_the_kernel_lays_them_out() {
        for status in 0..=0xffff {
            let std = std::process::ExitStatus::from_raw(status);
            assert_eq!(wait_signal(status), std.signal(), "{status:#x}");
            assert_eq!(exit_code(status), std.code(), "{status:#x}");
            // What bubblewrap reports: a kill by N passed on as 128 + N.
            let reported = std
                .code()
                .filter(|c| std.signal().is_none() && (129..=192).contains(c))
                .map_or(status, |c| c - 128);
            assert_eq!(through_sandbox(status), reported, "{status:#x}");
        }
        assert_eq!(through_sandbox(137 << 8), 9);
        assert_eq!(
            describe_status(9),
            "candidate crashed: killed by SIGKILL (signal 9)"
        );
        assert!(describe_status(3 << 8).contains("exited with status 3"));
    }
}
