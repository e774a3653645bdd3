//! What one candidate's process may use: memory, CPU time, file size,
//! processes. The worker applies them (`apply_limits` in
//! `assets/python/galapagos_worker.py`); the run says which one a candidate
//! hit.

use super::protocol::Reply;

/// A candidate process's limits (None: no limit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    pub memory_mib: Option<u64>,
    pub cpu_secs: f64,
    pub file_size_mib: Option<u64>,
    pub processes: Option<u64>,
    /// The writable-space quota over the candidate's scratch (with the
    /// sandbox, which makes it one size-capped file system).
    pub write_quota_mib: Option<u64>,
}

impl Limits {
    /// As the worker's configuration names them.
    pub(crate) fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "memory_bytes": self.memory_mib.map(|m| m.saturating_mul(1 << 20)),
            "cpu_secs": self.cpu_secs,
            "file_bytes": self.file_size_mib.map(|m| m.saturating_mul(1 << 20)),
            "processes": self.processes,
        })
    }

    /// Say which limit a candidate hit, when its error shows one: an
    /// exception the worker traced to a limit (`MemoryError`, a file too
    /// large, no more processes), or death by SIGXCPU / SIGXFSZ (or by
    /// SIGKILL after using its CPU time: SIGXCPU comes at the limit, SIGKILL
    /// a second later for a process that ignores it, as a sandboxed
    /// candidate, its pid namespace's pid 1, does).
    pub(crate) fn explain(self, reply: &mut Reply) {
        let Some(error) = reply.error.as_deref() else {
            return;
        };
        let memory = |m: u64| format!("the {m} MiB memory limit");
        let file = |m: u64| format!("the {m} MiB file size limit");
        let quota = |m: u64| format!("the {m} MiB writable-space quota");
        let out_of_cpu = error.contains("SIGXCPU")
            || (error.contains("SIGKILL")
                && reply
                    .cpu_secs
                    .is_some_and(|used| used + 0.5 >= self.cpu_secs));
        let limit = match reply.limit.as_deref() {
            Some("memory") => self.memory_mib.map(memory),
            Some("file_size") => self.file_size_mib.map(file),
            Some("processes") => self.processes.map(|n| format!("the {n}-process limit")),
            Some("space") => self.write_quota_mib.map(quota),
            _ if out_of_cpu => Some(format!("the {} s CPU time limit", self.cpu_secs)),
            _ if error.contains("SIGXFSZ") => self.file_size_mib.map(file),
            _ => None,
        };
        if let Some(limit) = limit {
            reply.error = Some(format!("exceeded {limit} ({error})"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(error: &str, limit: Option<&str>, cpu: Option<f64>) -> Reply {
        Reply {
            error: Some(error.to_owned()),
            limit: limit.map(str::to_owned),
            cpu_secs: cpu,
            ..Reply::default()
        }
    }

    #[test]
    fn a_limit_hit_is_named_with_its_value() {
        let limits = Limits {
            memory_mib: Some(4096),
            cpu_secs: 10.0,
            file_size_mib: Some(1024),
            processes: Some(256),
            write_quota_mib: Some(512),
        };
        let said = |mut r: Reply| {
            limits.explain(&mut r);
            r.error.unwrap_or_default()
        };
        assert_eq!(
            said(reply("evaluator raised MemoryError", Some("memory"), None)),
            "exceeded the 4096 MiB memory limit (evaluator raised MemoryError)"
        );
        assert!(
            said(reply("x", Some("file_size"), None)).starts_with("exceeded the 1024 MiB file")
        );
        assert!(said(reply("x", Some("processes"), None)).starts_with("exceeded the 256-process"));
        assert_eq!(
            said(reply(
                "evaluator raised OSError: [Errno 28] No space left on device",
                Some("space"),
                None
            )),
            "exceeded the 512 MiB writable-space quota (evaluator raised OSError: [Errno 28] No space left on device)"
        );
        let killed = "candidate crashed: killed by SIGKILL (signal 9)";
        assert!(said(reply(killed, None, Some(10.2))).starts_with("exceeded the 10 s CPU time"));
        assert_eq!(
            said(reply(killed, None, Some(0.3))),
            killed,
            "killed, not out of CPU"
        );
        let unlimited = Limits {
            memory_mib: None,
            ..limits
        };
        let mut r = reply("evaluator raised MemoryError", Some("memory"), None);
        unlimited.explain(&mut r);
        assert_eq!(r.error.as_deref(), Some("evaluator raised MemoryError"));
    }
}
