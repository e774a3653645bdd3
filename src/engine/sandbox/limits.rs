//! What a sandboxed process may use (memory, CPU time, processes, file size,
//! writable space) and which limit it hit, in one place: the card's keys
//! ([`Allowance`] and its [`SPECS`], with `read_paths` and the output kept),
//! their values for one process
//! ([`Limits`]), how each is enforced ([`Limits::rlimits`], which `prlimit`
//! applies in a container and the Python worker in its children, and the
//! quota, which is the size of the sandbox's writable file systems), and
//! the one explainer ([`Limits::hit`]) that names the limit a failed process
//! hit from raw facts: how it ended (its signal, the CPU time the kernel
//! counted), what its Python code raised (exception classes and `errno`, as
//! the worker reports them) and what it said (its stderr).
//!
//! A limit is named only on evidence, only when it is set, and only for a
//! process that failed anyway:
//!
//! - **CPU time**: killed by SIGXCPU (as the sandbox reports it: status 152;
//!   or `SIGXCPU` / a shell's "CPU time limit exceeded" in its stderr) after
//!   using at least the limit (the soft limit: the limit rounded up to a
//!   whole second; a SIGXCPU whose time was not counted, as on a Slurm
//!   node's sandbox, is taken as the kernel's); or killed by SIGKILL after using the hard limit (the
//!   soft one plus a second), which is when the kernel kills a process that
//!   ignores SIGXCPU (as a sandboxed candidate, its pid namespace's pid 1,
//!   does).
//! - **File size**: killed by SIGXFSZ (only the kernel sends it, at the
//!   limit); an `EFBIG` raised; or its stderr shows a write refused as too
//!   large ("File too large"; Python ignores SIGXFSZ and gets that) or a
//!   shell's "File size limit exceeded".
//! - **Memory**: a `MemoryError` (or `ENOMEM`) raised, or its stderr shows an
//!   allocation that failed: Python's `MemoryError`, `ENOMEM` ("Cannot
//!   allocate memory"), C++'s `std::bad_alloc`, Rust's "memory allocation of
//!   N bytes failed", "out of memory" (Go, Node), Java's `OutOfMemoryError`,
//!   never a line about a GPU's memory. The limit caps each process's data
//!   segment, so an allocation past it fails; the kernel's OOM killer (a
//!   SIGKILL with no such message) is not this limit and is not named.
//! - **Writable space**: an `ENOSPC` / `EDQUOT` raised, or its stderr shows a
//!   write refused for want of space: the sandbox's writable file systems
//!   are capped at the quota.
//! - **Processes**: an `EAGAIN` raised while starting a process, or its
//!   stderr shows `EAGAIN` ("Resource temporarily unavailable") from
//!   starting a process or thread (the same stderr mentions fork, spawn,
//!   Popen, a subprocess or `pthread_create`), or Python's "can't start new
//!   thread". Never where the kernel does not enforce the limit (galapagos
//!   runs as root and the command is not in a user namespace of its own).
//!
//! Wall time (`timeout_secs`) is a timeout of its own, and captured output is
//! cut, not failed.
//!
//! Adding a limit: a field of [`Allowance`] (its default, its entry in
//! [`SPECS`]), of [`Limits`] (and [`Allowance::resolve`]), its row in
//! [`Limits::rlimits`] and its evidence in [`Limits::hit`], all in this file;
//! `prlimit` ([`super::prlimit`]) and the Python worker (`apply_limits`) apply
//! every row as it comes, and every block that flattens [`Allowance`] takes
//! the key.

use serde::{Deserialize, Serialize};

use crate::engine::params::{ParamError, ParamSpec, ParamType};

/// What a sandboxed process may read and use, and how much of its output is
/// kept, as a card sets it: each a key of its own beside the block's (every
/// block that runs code in the sandbox flattens it in, the evaluators and the
/// coding-agent proposer alike).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Allowance {
    /// More paths shown, read-only, inside the sandbox (data sets,
    /// toolchains, an agent's installation under your home); `~/` is your
    /// home.
    pub read_paths: Vec<String>,
    /// Memory a process may allocate (RLIMIT_DATA), in MiB; null: no limit.
    pub memory_limit_mib: Option<u64>,
    /// CPU time a process may use, in seconds; null: twice the block's
    /// `timeout_secs` (at least 10 s).
    pub cpu_limit_secs: Option<f64>,
    /// Processes the sandbox's user may run at once (with the sandbox, which
    /// runs them as nobody when galapagos runs as root); null: no limit.
    pub process_limit: Option<u64>,
    /// Largest file a process may write, in MiB; null: no limit.
    pub file_size_limit_mib: Option<u64>,
    /// Space a sandboxed process may fill in what it can write (its scratch
    /// dir: HOME, TMPDIR, `/dev/shm`, a candidate's program folder), in MiB,
    /// in memory or not; a write past it fails with "no space".
    pub write_quota_mib: u64,
    /// Bytes of each of its stdout and stderr kept (its first and last
    /// halves), in KB.
    pub output_limit_kb: u64,
}

impl Default for Allowance {
    fn default() -> Self {
        Self {
            read_paths: Vec::new(),
            memory_limit_mib: Some(4096),
            cpu_limit_secs: None,
            process_limit: Some(256),
            file_size_limit_mib: Some(1024),
            write_quota_mib: 512,
            output_limit_kb: 20,
        }
    }
}

/// The table of [`Allowance`]'s keys, in the order the studio shows them.
pub const SPECS: &[ParamSpec] = &[
    ParamSpec {
        key: "read_paths",
        doc: "More files or dirs shown, read-only, inside the sandbox to candidates and the evaluator \
              (or a coding agent): a data set, a toolchain or an installation under your home such as \
              ~/.rustup; ~/ is your home. On Slurm the nodes must see them",
        ty: ParamType::TextList,
    },
    ParamSpec {
        key: "memory_limit_mib",
        doc: "Memory each process of a candidate's evaluation (or of a coding agent) may allocate, in \
              MiB (null: no limit)",
        ty: ParamType::OptionalInt {
            min: 16,
            max: 1 << 30,
        },
    },
    ParamSpec {
        key: "cpu_limit_secs",
        doc: "CPU seconds each process of a candidate's evaluation (or of a coding agent) may use (null: \
              twice timeout_secs, at least 10)",
        ty: ParamType::OptionalFloat { min: 1.0, max: 1e7 },
    },
    ParamSpec {
        key: "process_limit",
        doc: "Processes a candidate may run at once, itself included (1: it may start none; with the \
              sandbox, which runs candidates as nobody when galapagos runs as root; not on Slurm nodes \
              whose jobs run as root; null: no limit)",
        ty: ParamType::OptionalInt {
            min: 1,
            max: 1 << 22,
        },
    },
    ParamSpec {
        key: "file_size_limit_mib",
        doc: "Largest file a candidate (or a coding agent) may write, in MiB (null: no limit)",
        ty: ParamType::OptionalInt {
            min: 1,
            max: 1 << 30,
        },
    },
    ParamSpec {
        key: "write_quota_mib",
        doc: "Space a candidate may fill in everything it can write (HOME, TMPDIR, /dev/shm, its \
              program's folder; a coding agent: all but its workspace), in MiB, held in memory or not; \
              a write past it fails with no space left, named on the genome (with the sandbox)",
        ty: ParamType::Int {
            min: 1,
            max: 1 << 30,
        },
    },
    ParamSpec {
        key: "output_limit_kb",
        doc: "KB of each of a candidate's (or a coding agent's) stdout and stderr kept (the first and \
              last halves; the rest is counted)",
        ty: ParamType::Int {
            min: 1,
            max: 100_000,
        },
    },
];

/// One process's limits (None: no limit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    pub memory_mib: Option<u64>,
    pub cpu_secs: f64,
    pub file_size_mib: Option<u64>,
    pub processes: Option<u64>,
    /// The writable-space quota: the size of each file system the sandbox
    /// makes writable (with the sandbox only).
    pub write_quota_mib: Option<u64>,
}

impl Allowance {
    /// The bytes of each output stream kept.
    pub(crate) fn output_bytes(&self) -> usize {
        usize::try_from(self.output_limit_kb.saturating_mul(1000)).unwrap_or(usize::MAX)
    }

    /// `read_paths` may not show a whole home, `/` or the settings file.
    pub(crate) fn check(&self) -> Result<(), ParamError> {
        super::paths::check_read_paths(&self.read_paths)
    }

    /// The limits of a process whose block's wall-clock limit is
    /// `timeout_secs`.
    pub(crate) fn resolve(&self, timeout_secs: f64) -> Limits {
        Limits {
            memory_mib: self.memory_limit_mib,
            cpu_secs: self
                .cpu_limit_secs
                .unwrap_or((2.0 * timeout_secs).max(10.0)),
            file_size_mib: self.file_size_limit_mib,
            processes: self.process_limit,
            write_quota_mib: Some(self.write_quota_mib),
        }
    }
}

/// One resource limit the kernel enforces on a process (the CPU time's
/// soft and hard limits are [`Limits::cpu_soft_hard`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rlimit {
    /// Its name in Python's `resource` module (and the kernel's).
    pub resource: &'static str,
    /// `prlimit`'s option for it.
    pub prlimit: &'static str,
    pub value: u64,
    /// Counted per user: applied only to a process in a user namespace of
    /// its own (else it would count every process of the user's).
    pub per_user: bool,
}

const MIB: u64 = 1 << 20;

impl Limits {
    /// The resource limits that enforce these limits, CPU time apart: no
    /// core files, and each one set.
    pub(crate) fn rlimits(self) -> Vec<Rlimit> {
        let row = |resource, prlimit, value: Option<u64>, per_user| {
            value.map(|value| Rlimit {
                resource,
                prlimit,
                value,
                per_user,
            })
        };
        [
            row("RLIMIT_CORE", "--core", Some(0), false),
            row(
                "RLIMIT_DATA",
                "--data",
                self.memory_mib.map(|m| m.saturating_mul(MIB)),
                false,
            ),
            row(
                "RLIMIT_FSIZE",
                "--fsize",
                self.file_size_mib.map(|m| m.saturating_mul(MIB)),
                false,
            ),
            row("RLIMIT_NPROC", "--nproc", self.processes, true),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The CPU time's soft limit (SIGXCPU: the limit rounded up to a whole
    /// second, at least one) and hard one (SIGKILL, a second later).
    pub(crate) fn cpu_soft_hard(self) -> (u64, u64) {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a positive number of seconds far below u64::MAX"
        )]
        let soft = (self.cpu_secs.ceil() as u64).max(1);
        (soft, soft + 1)
    }

    /// As the Python worker's configuration takes them (`apply_limits` in
    /// `assets/python/galapagos_worker.py` applies each rlimit; the quota
    /// sizes each candidate's scratch tmpfs).
    pub(crate) fn to_json(self) -> serde_json::Value {
        let rlimits: Vec<serde_json::Value> = self
            .rlimits()
            .into_iter()
            .map(|r| serde_json::json!([r.resource, r.value, r.per_user]))
            .collect();
        serde_json::json!({
            "rlimits": rlimits,
            "cpu_secs": self.cpu_secs,
            "write_quota_mib": self.write_quota_mib,
        })
    }

    /// The limit `evidence` shows the process hit, if it shows one (see the
    /// module docs for the rules).
    pub(crate) fn hit(self, evidence: &Evidence<'_>) -> Option<Hit> {
        let named = |(limit, key): (String, &'static str)| Hit {
            limit,
            key,
            line: None,
        };
        let said = |(limit, key): (String, &'static str), line: &str| Hit {
            limit,
            key,
            line: Some(line.to_owned()),
        };
        let memory = self
            .memory_mib
            .map(|m| (format!("the {m} MiB memory limit"), "memory_limit_mib"));
        let file = self.file_size_mib.map(|m| {
            (
                format!("the {m} MiB file size limit"),
                "file_size_limit_mib",
            )
        });
        let space = self.write_quota_mib.map(|m| {
            (
                format!("the {m} MiB writable-space quota"),
                "write_quota_mib",
            )
        });
        let processes = self
            .processes
            .filter(|_| !evidence.processes_unenforced)
            .map(|n| (format!("the {n}-process limit"), "process_limit"));
        // What its Python code raised, the first in the chain that a limit
        // explains.
        for raised in evidence.raised {
            let errno = raised.errno;
            let limit = if raised.is("MemoryError") || errno == Some(ENOMEM) {
                memory.clone()
            } else if errno == Some(EFBIG) {
                file.clone()
            } else if errno == Some(ENOSPC) || errno == Some(EDQUOT) {
                space.clone()
            } else if errno == Some(EAGAIN) && raised.starting_process {
                processes.clone()
            } else {
                None
            };
            if let Some(limit) = limit {
                return Some(named(limit));
            }
        }
        let found = |phrases: &[&str]| evidence.said.iter().find_map(|t| line_with(t, phrases));
        // CPU time: a kill at the soft limit (SIGXCPU) or the hard one
        // (SIGKILL), after using that much.
        let (soft, hard) = self.cpu_soft_hard();
        #[expect(clippy::cast_precision_loss, reason = "seconds far below 2^52")]
        let (soft, hard) = (soft as f64, hard as f64);
        let used = evidence.cpu_secs.unwrap_or(0.0);
        let cpu = (
            format!("the {} s CPU time limit", self.cpu_secs),
            "cpu_limit_secs",
        );
        // The kernel's SIGXCPU, when no count says the time was not used.
        let counted = evidence.cpu_secs.is_none_or(|used| used + 0.5 >= soft);
        if evidence.signal == Some(SIGXCPU) && counted {
            return Some(named(cpu));
        }
        if evidence.signal == Some(SIGKILL) && used + 0.5 >= hard {
            return Some(named(cpu));
        }
        // A process that says it was killed by SIGXCPU (a candidate's own
        // child, as `galapagos_eval` reports it) is taken at its word under
        // the same rule: unless a count says the time was not used.
        if let Some(line) = found(&CPU).filter(|_| counted) {
            return Some(said(cpu, line));
        }
        if let Some(file) = file {
            if evidence.signal == Some(SIGXFSZ) {
                return Some(named(file));
            }
            if let Some(line) = found(&FILE_SIZE) {
                return Some(said(file, line));
            }
        }
        let allocation = evidence.said.iter().find_map(|t| {
            t.lines()
                .map(str::trim)
                .find(|l| {
                    MEMORY.iter().any(|p| l.contains(p)) && !GPU.iter().any(|g| l.contains(g))
                })
                .map(|l| cut(l, 160))
        });
        if let (Some(memory), Some(line)) = (memory, allocation) {
            return Some(said(memory, line));
        }
        if let (Some(space), Some(line)) = (space, found(&NO_SPACE)) {
            return Some(said(space, line));
        }
        if let Some(processes) = processes {
            let refused = evidence
                .said
                .iter()
                .filter(|t| STARTING.iter().any(|w| t.contains(w)))
                .find_map(|t| line_with(t, &[EAGAIN_TEXT]))
                .or_else(|| found(&["can't start new thread"]));
            if let Some(line) = refused {
                return Some(said(processes, line));
            }
        }
        None
    }
}

/// What a failed process showed about how it ended: the raw facts
/// [`Limits::hit`] reads.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Evidence<'a> {
    /// The signal that ended it (its own, or the one the sandbox reports as
    /// status 128 + N; None: it exited, or it is unknown).
    pub signal: Option<i32>,
    /// The CPU seconds it used, as the kernel counted them (None: not
    /// counted; a SIGXCPU is then taken as the kernel's, at the limit).
    pub cpu_secs: Option<f64>,
    /// What its Python code raised, the exception first and what it came
    /// from after it (the Python worker's report).
    pub raised: &'a [Raised],
    /// What it said: its stderr, an error it reported.
    pub said: &'a [&'a str],
    /// The process limit does not hold for it (galapagos runs as root and
    /// the process has no user namespace of its own).
    pub processes_unenforced: bool,
}

/// One exception a process's Python code raised, as the worker reports it
/// (`exception_facts` in `assets/python/galapagos_worker.py`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct Raised {
    /// Its class and the classes it derives from, by name.
    #[serde(default)]
    pub types: Vec<String>,
    /// Its `errno` (an `OSError`).
    #[serde(default)]
    pub errno: Option<i32>,
    /// It was raised while starting a process or thread (`os.fork`,
    /// `subprocess`, `multiprocessing`, a thread's start).
    #[serde(default)]
    pub starting_process: bool,
}

impl Raised {
    fn is(&self, class: &str) -> bool {
        self.types.iter().any(|t| t == class)
    }
}

/// The limit a process hit, as an error names it ("the 256 MiB memory
/// limit"), the card's key that sets it, and the line of its stderr that
/// shows it (None when how it ended or what it raised does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    pub limit: String,
    /// The key of [`Allowance`] that sets it.
    pub key: &'static str,
    pub line: Option<String>,
}

impl Hit {
    /// `error` with the limit named first, and the key that raises it:
    /// "exceeded the 256 MiB memory limit (the evaluator command exited
    /// with status 1; stderr: MemoryError); to allow more, raise
    /// `memory_limit_mib` in the card".
    pub(crate) fn name(&self, error: &str) -> String {
        let (limit, key) = (&self.limit, self.key);
        let raise = format!("to allow more, raise `{key}` in the card");
        match &self.line {
            Some(line) if !error.contains(line.as_str()) => {
                format!("exceeded {limit} ({error}; stderr: {line}); {raise}")
            }
            _ => format!("exceeded {limit} ({error}); {raise}"),
        }
    }
}

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
const SIGXFSZ: i32 = 25;

const EAGAIN: i32 = 11;
const ENOMEM: i32 = 12;
const EFBIG: i32 = 27;
const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;

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

/// Stderr phrases of a write refused for want of space.
const NO_SPACE: [&str; 3] = ["No space left on device", "ENOSPC", "Disk quota exceeded"];

/// `EAGAIN`, as `strerror` says it.
const EAGAIN_TEXT: &str = "Resource temporarily unavailable";

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

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        memory_mib: Some(256),
        cpu_secs: 2.0,
        file_size_mib: Some(1),
        processes: Some(16),
        write_quota_mib: Some(8),
    };

    /// The limit a process that ended with `signal` after `cpu` seconds,
    /// saying `stderr`, hit.
    fn said(signal: Option<i32>, cpu: f64, stderr: &str, root: bool) -> Option<String> {
        let evidence = Evidence {
            signal,
            cpu_secs: Some(cpu),
            said: &[stderr],
            processes_unenforced: root,
            ..Evidence::default()
        };
        LIMITS.hit(&evidence).map(|hit| hit.limit)
    }

    fn raised(types: &[&str], errno: Option<i32>, starting_process: bool) -> Raised {
        Raised {
            types: types.iter().map(|t| (*t).to_owned()).collect(),
            errno,
            starting_process,
        }
    }

    #[test]
    fn a_limit_is_named_only_on_evidence() {
        let cpu = Some("the 2 s CPU time limit".to_owned());
        assert_eq!(said(Some(24), 2.1, "", false), cpu, "SIGXCPU after 2 s");
        assert_eq!(
            said(Some(24), 0.2, "", false),
            None,
            "SIGXCPU without the CPU time"
        );
        assert_eq!(
            said(Some(9), 3.0, "", false),
            cpu,
            "SIGKILL at the hard limit"
        );
        assert_eq!(
            said(Some(9), 2.1, "", false),
            None,
            "SIGKILL before the hard limit"
        );
        assert_eq!(
            said(Some(9), 0.1, "", false),
            None,
            "a kill is not the memory limit"
        );
        let sh = "sh: 1: CPU time limit exceeded";
        assert_eq!(said(None, 2.0, sh, false), cpu);
        let file = Some("the 1 MiB file size limit".to_owned());
        assert_eq!(said(Some(25), 0.0, "", false), file);
        assert_eq!(
            said(None, 0.0, "OSError: [Errno 27] File too large", false),
            file
        );
        let memory = Some("the 256 MiB memory limit".to_owned());
        assert_eq!(
            said(None, 0.0, "Traceback ...\nMemoryError\n", false),
            memory
        );
        assert_eq!(
            said(
                Some(6),
                0.0,
                "memory allocation of 1073741824 bytes failed",
                false
            ),
            memory
        );
        let fork = "  File \"x.py\", line 3, in <module>\n    os.fork()\n\
                    BlockingIOError: [Errno 11] Resource temporarily unavailable";
        assert_eq!(
            said(None, 0.0, fork, false),
            Some("the 16-process limit".to_owned())
        );
        assert_eq!(said(None, 0.0, fork, true), None, "not enforced for root");
        let socket = "Exception in thread Thread-1:\n  File \"x.py\", line 9, in run\n    \
                      sock.recv(1)\nBlockingIOError: [Errno 11] Resource temporarily unavailable";
        assert_eq!(said(None, 0.0, socket, false), None, "EAGAIN from a socket");
        let gpu = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
        assert_eq!(said(None, 0.0, gpu, false), None, "a GPU's memory");
        assert_eq!(
            said(
                None,
                0.0,
                "OSError: [Errno 28] No space left on device",
                false
            ),
            Some("the 8 MiB writable-space quota".to_owned())
        );
    }

    #[test]
    fn what_python_raised_is_named_with_its_value() {
        let hit = |chain: &[Raised]| {
            let evidence = Evidence {
                raised: chain,
                ..Evidence::default()
            };
            LIMITS.hit(&evidence).map(|hit| hit.limit)
        };
        let memory = Some("the 256 MiB memory limit".to_owned());
        assert_eq!(
            hit(&[raised(&["MemoryError", "Exception"], None, false)]),
            memory
        );
        assert_eq!(
            hit(&[raised(&["_ArrayMemoryError", "MemoryError"], None, false)]),
            memory,
            "a subclass of MemoryError"
        );
        assert_eq!(hit(&[raised(&["OSError"], Some(12), false)]), memory);
        assert_eq!(
            hit(&[raised(&["OSError"], Some(27), false)]),
            Some("the 1 MiB file size limit".to_owned())
        );
        assert_eq!(
            hit(&[raised(&["OSError"], Some(28), false)]),
            Some("the 8 MiB writable-space quota".to_owned())
        );
        assert_eq!(
            hit(&[raised(&["BlockingIOError", "OSError"], Some(11), true)]),
            Some("the 16-process limit".to_owned())
        );
        assert_eq!(
            hit(&[raised(&["BlockingIOError", "OSError"], Some(11), false)]),
            None,
            "EAGAIN not from starting a process"
        );
        assert_eq!(
            hit(&[
                raised(&["ValueError"], None, false),
                raised(&["OSError"], Some(27), false),
                raised(&["MemoryError"], None, false),
            ]),
            Some("the 1 MiB file size limit".to_owned()),
            "the first in the chain a limit explains"
        );
        let unlimited = Limits {
            memory_mib: None,
            ..LIMITS
        };
        let evidence = Evidence {
            raised: &[raised(&["MemoryError"], None, false)],
            ..Evidence::default()
        };
        assert_eq!(unlimited.hit(&evidence), None, "no limit, none named");
        let ok = Evidence {
            signal: Some(9),
            cpu_secs: Some(0.3),
            ..Evidence::default()
        };
        assert_eq!(LIMITS.hit(&ok), None, "killed, not out of CPU");
        let uncounted = Evidence {
            signal: Some(24),
            ..Evidence::default()
        };
        assert_eq!(
            LIMITS.hit(&uncounted).map(|hit| hit.limit).as_deref(),
            Some("the 2 s CPU time limit"),
            "a SIGXCPU whose time was not counted"
        );
        let uncounted_kill = Evidence {
            signal: Some(9),
            ..Evidence::default()
        };
        assert_eq!(
            LIMITS.hit(&uncounted_kill),
            None,
            "a SIGKILL needs the count"
        );
    }

    #[test]
    fn the_rlimits_and_the_configuration_come_from_one_table() {
        let rlimits = LIMITS.rlimits();
        let names: Vec<&str> = rlimits.iter().map(|r| r.resource).collect();
        assert_eq!(
            names,
            ["RLIMIT_CORE", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NPROC"]
        );
        assert_eq!(rlimits[1].value, 256 << 20);
        assert!(rlimits[3].per_user && !rlimits[1].per_user);
        let none = Limits {
            memory_mib: None,
            file_size_mib: None,
            processes: None,
            ..LIMITS
        };
        assert_eq!(none.rlimits().len(), 1, "no core files, always");
        assert_eq!(LIMITS.cpu_soft_hard(), (2, 3));
        assert_eq!(
            Limits {
                cpu_secs: 0.2,
                ..LIMITS
            }
            .cpu_soft_hard(),
            (1, 2)
        );
        let json = LIMITS.to_json();
        assert_eq!(json["write_quota_mib"], 8);
        assert_eq!(
            json["rlimits"][3],
            serde_json::json!(["RLIMIT_NPROC", 16, true])
        );
        let hit = Hit {
            limit: "the 1 MiB file size limit".to_owned(),
            key: "file_size_limit_mib",
            line: Some("File too large".to_owned()),
        };
        assert_eq!(
            hit.name("x"),
            "exceeded the 1 MiB file size limit (x; stderr: File too large); to allow more, \
             raise `file_size_limit_mib` in the card"
        );
        assert_eq!(
            hit.name("x: File too large"),
            "exceeded the 1 MiB file size limit (x: File too large); to allow more, raise \
             `file_size_limit_mib` in the card"
        );
    }

    #[test]
    fn the_cpu_limit_defaults_to_twice_the_wall_clock_limit() {
        let settings = Allowance::default();
        assert_eq!(settings.resolve(60.0).cpu_secs, 120.0);
        assert_eq!(settings.resolve(1.0).cpu_secs, 10.0);
        let set = Allowance {
            cpu_limit_secs: Some(3.0),
            ..settings
        };
        assert_eq!(set.resolve(60.0).cpu_secs, 3.0);
        assert_eq!(set.resolve(60.0).write_quota_mib, Some(512));
    }
}
