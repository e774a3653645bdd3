//! What one candidate's process may use: memory, CPU time, file size,
//! processes, writable space. The Python worker applies them (`apply_limits`
//! in `assets/python/galapagos_worker.py`), `prlimit` does in a container
//! ([`super::prlimit`]); the run says which one a candidate hit.

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

    /// The error naming the limit a candidate hit, when its `error` shows
    /// one: an exception the worker traced to a limit (`named`: `memory`,
    /// `file_size`, `processes`, `space`), or death by SIGXCPU / SIGXFSZ (or by
    /// SIGKILL after using its CPU time: SIGXCPU comes at the limit, SIGKILL
    /// a second later for a process that ignores it, as a sandboxed
    /// candidate, its pid namespace's pid 1, does; `cpu_secs` is what it
    /// used). None when no limit is shown.
    pub(crate) fn explain(
        self,
        error: &str,
        named: Option<&str>,
        cpu_secs: Option<f64>,
    ) -> Option<String> {
        let memory = |m: u64| format!("the {m} MiB memory limit");
        let file = |m: u64| format!("the {m} MiB file size limit");
        let quota = |m: u64| format!("the {m} MiB writable-space quota");
        let out_of_cpu = error.contains("SIGXCPU")
            || (error.contains("SIGKILL")
                && cpu_secs.is_some_and(|used| used + 0.5 >= self.cpu_secs));
        let limit = match named {
            Some("memory") => self.memory_mib.map(memory),
            Some("file_size") => self.file_size_mib.map(file),
            Some("processes") => self.processes.map(|n| format!("the {n}-process limit")),
            Some("space") => self.write_quota_mib.map(quota),
            _ if out_of_cpu => Some(format!("the {} s CPU time limit", self.cpu_secs)),
            _ if error.contains("SIGXFSZ") => self.file_size_mib.map(file),
            _ => None,
        };
        limit.map(|limit| format!("exceeded {limit} ({error})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_hit_is_named_with_its_value() {
        let limits = Limits {
            memory_mib: Some(4096),
            cpu_secs: 10.0,
            file_size_mib: Some(1024),
            processes: Some(256),
            write_quota_mib: Some(512),
        };
        let said = |(error, named, cpu): (&str, Option<&str>, Option<f64>)| {
            limits
                .explain(error, named, cpu)
                .unwrap_or_else(|| error.to_owned())
        };
        assert_eq!(
            said(("evaluator raised MemoryError", Some("memory"), None)),
            "exceeded the 4096 MiB memory limit (evaluator raised MemoryError)"
        );
        assert!(said(("x", Some("file_size"), None)).starts_with("exceeded the 1024 MiB file"));
        assert!(said(("x", Some("processes"), None)).starts_with("exceeded the 256-process"));
        assert_eq!(
            said((
                "evaluator raised OSError: [Errno 28] No space left on device",
                Some("space"),
                None
            )),
            "exceeded the 512 MiB writable-space quota (evaluator raised OSError: [Errno 28] No space left on device)"
        );
        let killed = "candidate crashed: killed by SIGKILL (signal 9)";
        assert!(said((killed, None, Some(10.2))).starts_with("exceeded the 10 s CPU time"));
        assert_eq!(
            said((killed, None, Some(0.3))),
            killed,
            "killed, not out of CPU"
        );
        let unlimited = Limits {
            memory_mib: None,
            ..limits
        };
        assert_eq!(
            unlimited.explain("evaluator raised MemoryError", Some("memory"), None),
            None
        );
    }
}
