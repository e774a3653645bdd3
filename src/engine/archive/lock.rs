//! One writer per run folder, and fresh run folders that two runs started in
//! the same second cannot share.
//!
//! A writer holds an exclusive `flock` on `run.lock` in the folder for as
//! long as it may write there, with its PID written inside for whoever is
//! refused. The kernel drops the lock when the process ends in any way
//! (`kill -9` included), so a stale file never blocks a resume; readers (the
//! studio's run list, `export-run`) never take it.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use super::ArchiveError;

/// The lock file inside a run folder.
pub const LOCK_FILE: &str = "run.lock";

/// How long a refused writer waits for the holder's PID to appear in the
/// lock file (the holder writes it right after taking the lock).
const PID_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// The exclusive right to write one run folder, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    /// Keeps the lock: closing the file releases it.
    _file: File,
    dir: PathBuf,
}

impl RunLock {
    /// Take the lock of the run folder `dir` (which must exist), or say which
    /// process holds it ([`ArchiveError::Locked`]).
    pub fn acquire(dir: &Path) -> Result<Self, ArchiveError> {
        let path = dir.join(LOCK_FILE);
        let io = |e: std::io::Error| ArchiveError::Io {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ArchiveError::Locked {
                    dir: dir.to_path_buf(),
                    pid: holder_pid(&mut file),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(Self {
            _file: file,
            dir: dir.to_path_buf(),
        })
    }

    /// True when a process holds the writer lock of run folder `dir` (a
    /// run is writing it). Asked with a shared lock taken and dropped at
    /// once; a writer starting in that instant is refused as if the folder
    /// were in use, and says so.
    pub fn is_held(dir: &Path) -> bool {
        let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
            return false;
        };
        match file.try_lock_shared() {
            Ok(()) => {
                file.unlock().ok();
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        }
    }

    /// The folder this lock is for.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The PID the holder wrote into the lock file, waiting briefly for a holder
/// that has just taken the lock.
fn holder_pid(file: &mut File) -> Option<u32> {
    let deadline = std::time::Instant::now() + PID_WAIT;
    loop {
        let mut text = String::new();
        let read = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_string(&mut text));
        if read.is_ok()
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            return Some(pid);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Make a fresh run folder under `root` named `<base>`, or `<base>-2`,
/// `<base>-3`... when taken. Each name is claimed by creating the folder,
/// which succeeds for one caller only, so runs started at the same moment
/// (several processes, or one studio and one command line) never share one.
pub fn reserve_run_dir(root: &Path, base: &str) -> Result<PathBuf, ArchiveError> {
    std::fs::create_dir_all(root).map_err(|e| ArchiveError::Io {
        path: root.to_path_buf(),
        message: e.to_string(),
    })?;
    for n in 1u32.. {
        let dir = if n == 1 {
            root.join(base)
        } else {
            root.join(format!("{base}-{n}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(ArchiveError::Io {
                    path: dir,
                    message: e.to_string(),
                });
            }
        }
    }
    Err(ArchiveError::Io {
        path: root.to_path_buf(),
        message: "no free run folder name".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = RunLock::acquire(dir.path()).unwrap();
        // flock locks belong to an open file: a second open in this process
        // is refused as another process would be.
        let e = RunLock::acquire(dir.path()).unwrap_err();
        match &e {
            ArchiveError::Locked { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("expected Locked, got {other:?}"),
        }
        assert!(
            e.to_string()
                .contains(&format!("(PID {})", std::process::id())),
            "{e}"
        );
        drop(held);
        let again = RunLock::acquire(dir.path()).expect("free once the holder is gone");
        assert_eq!(again.dir(), dir.path());
    }

    #[test]
    fn names_are_claimed_once_across_threads() {
        let root = tempfile::tempdir().unwrap();
        let claimed: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|_| s.spawn(|| reserve_run_dir(root.path(), "card-task-20260101-000000")))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect()
        });
        let mut unique = claimed.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 16, "{claimed:?}");
        assert!(claimed.contains(&root.path().join("card-task-20260101-000000")));
        assert!(claimed.contains(&root.path().join("card-task-20260101-000000-16")));
    }
}
