//! The host's memory while a run writes into in-memory file systems: a
//! thread reads `/proc/meminfo` every 10 ms (MemAvailable, the memory the
//! kernel can still hand out, and Shmem, what tmpfs and /dev/shm hold) from
//! [`HostMemory::watch`] until [`HostMemory::finish`]. It also guards the
//! machine: once MemAvailable falls below the floor it was given, it kills
//! the run registered with [`HostMemory::guard`] (SIGKILL: its sandboxes die
//! with it, and their file systems with them), so a quota that does not hold
//! fails the test after taking at most that much, not the machine's memory.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// `/proc/meminfo`'s `name` in MiB.
pub fn meminfo_mib(name: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text
        .lines()
        .find(|l| l.split(':').next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in /proc/meminfo"));
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

struct Shared {
    done: AtomicBool,
    min_available: AtomicU64,
    max_shmem: AtomicU64,
    samples: AtomicU64,
    breached: AtomicBool,
    /// The run's pid while it runs (0: none).
    guarded: Mutex<u32>,
}

/// A sampler of the host's memory, see the module's doc.
pub struct HostMemory {
    start_available: u64,
    start_shmem: u64,
    floor: u64,
    shared: Arc<Shared>,
    thread: std::thread::JoinHandle<()>,
}

/// What the sampler saw, in MiB.
#[derive(Debug)]
pub struct Seen {
    pub start_available: u64,
    pub min_available: u64,
    pub start_shmem: u64,
    pub max_shmem: u64,
    /// MemAvailable at the start less what the caller allowed.
    pub floor: u64,
    /// MemAvailable fell below the floor (and the guarded run was killed).
    pub breached: bool,
    pub samples: u64,
}

impl HostMemory {
    /// Start sampling; the floor is MemAvailable now less `allowed_mib`.
    pub fn watch(allowed_mib: u64) -> Self {
        let start_available = meminfo_mib("MemAvailable");
        let start_shmem = meminfo_mib("Shmem");
        let floor = start_available.saturating_sub(allowed_mib);
        let shared = Arc::new(Shared {
            done: AtomicBool::new(false),
            min_available: AtomicU64::new(start_available),
            max_shmem: AtomicU64::new(start_shmem),
            samples: AtomicU64::new(0),
            breached: AtomicBool::new(false),
            guarded: Mutex::new(0),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            while !s.done.load(Ordering::SeqCst) {
                let available = meminfo_mib("MemAvailable");
                s.min_available.fetch_min(available, Ordering::SeqCst);
                s.max_shmem
                    .fetch_max(meminfo_mib("Shmem"), Ordering::SeqCst);
                s.samples.fetch_add(1, Ordering::SeqCst);
                if available < floor {
                    s.breached.store(true, Ordering::SeqCst);
                    kill(*s.guarded.lock().unwrap());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self {
            start_available,
            start_shmem,
            floor,
            shared,
            thread,
        }
    }

    /// Kill `pid` (SIGKILL) should MemAvailable fall below the floor.
    pub fn guard(&self, pid: u32) {
        *self.shared.guarded.lock().unwrap() = pid;
    }

    /// No longer kill anything (the guarded run has ended).
    pub fn unguard(&self) {
        *self.shared.guarded.lock().unwrap() = 0;
    }

    /// Whether MemAvailable has fallen below the floor (the guarded run
    /// was then killed).
    pub fn breached(&self) -> bool {
        self.shared.breached.load(Ordering::SeqCst)
    }

    /// Stop sampling; what was seen.
    pub fn finish(self) -> Seen {
        self.shared.done.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
        let s = &self.shared;
        Seen {
            start_available: self.start_available,
            min_available: s.min_available.load(Ordering::SeqCst),
            start_shmem: self.start_shmem,
            max_shmem: s.max_shmem.load(Ordering::SeqCst),
            floor: self.floor,
            breached: s.breached.load(Ordering::SeqCst),
            samples: s.samples.load(Ordering::SeqCst),
        }
    }
}

/// SIGKILL `pid`: the guard is Linux's, as /proc/meminfo is (elsewhere it
/// never sees the memory run low, so it kills nothing).
fn kill(pid: u32) {
    #[cfg(target_os = "linux")]
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}
