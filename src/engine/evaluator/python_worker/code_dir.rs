//! Where the worker's code and the candidates' files live: the worker's
//! code dir (in the user's cache dir, shared by runs of the same build) and a
//! private per-run dir.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The worker's code, written into the code dir (see [`code_dir`]) when missing.
const WORKER_SCRIPT: &str = include_str!("../../../../assets/python/galapagos_worker.py");
/// Per-candidate namespaces and privileges (imported in the sandbox only).
const SANDBOX_SCRIPT: &str = include_str!("../../../../assets/python/galapagos_sandbox.py");
/// Runs a candidate's code in a process of its own for an evaluator that
/// imports it (`import galapagos_eval`).
pub(crate) const EVAL_HELPER: &str = include_str!("../../../../assets/python/galapagos_eval.py");
/// `openevolve/__init__.py` of the compatibility shim.
const SHIM_INIT: &str = include_str!("../../../../assets/python/openevolve/__init__.py");
/// `openevolve/evaluation_result.py` of the compatibility shim.
const SHIM_RESULT: &str = include_str!("../../../../assets/python/openevolve/evaluation_result.py");

/// Where the worker's code and the candidates' files are.
pub(crate) struct Setup {
    /// Private per-run dir: candidates' program files (one subdir per worker).
    pub dir: tempfile::TempDir,
    /// `galapagos_worker.py`, `galapagos_eval.py` and the `openevolve` shim: the user's cache dir
    /// when it can be written (see [`code_dir`]), else `dir`.
    pub code: PathBuf,
    /// The worker's and candidates' `HOME` and `TMPDIR` (in `dir`).
    pub home: PathBuf,
    pub tmp: PathBuf,
}

/// Create the private dir, and find (or write) the worker's code.
///
/// Candidates' program files are written in the private dir, one per
/// evaluation, so it goes in RAM (`/dev/shm`) when that exists and `TMPDIR`
/// does not say otherwise: creating a file there costs a few microseconds
/// against a tenth of a millisecond or more on a journalled disk. Otherwise
/// the system temp dir is used.
pub(crate) fn prepare() -> Result<Setup, String> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("galapagos-eval-");
    let in_ram = std::env::var_os("TMPDIR")
        .is_none()
        .then(|| Path::new("/dev/shm"))
        .filter(|p| p.is_dir())
        .and_then(|p| builder.tempdir_in(p).ok());
    let dir = match in_ram {
        Some(dir) => dir,
        None => builder
            .tempdir()
            .map_err(|e| format!("cannot create a private temp dir for the evaluator: {e}"))?,
    };
    let code = match code_dir() {
        Some(code) if write_code(&code).is_ok() => {
            mark_used_and_prune(&code, STALE_CODE_DIR);
            code
        }
        _ => {
            let code = dir.path().to_path_buf();
            write_code(&code)?;
            code
        }
    };
    let home = dir.path().join("home");
    let tmp = dir.path().join("tmp");
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    Ok(Setup {
        dir,
        code,
        home,
        tmp,
    })
}

/// The worker's code files, by path inside the code dir.
pub(crate) const CODE: [(&str, &str); 5] = [
    ("galapagos_worker.py", WORKER_SCRIPT),
    ("galapagos_sandbox.py", SANDBOX_SCRIPT),
    ("galapagos_eval.py", EVAL_HELPER),
    ("openevolve/__init__.py", SHIM_INIT),
    ("openevolve/evaluation_result.py", SHIM_RESULT),
];

/// The worker's code files, by name in the code dir.
pub(crate) const CODE_FILES: [&str; CODE.len()] = {
    let mut names = [""; CODE.len()];
    let mut i = 0;
    while i < CODE.len() {
        names[i] = CODE[i].0;
        i += 1;
    }
    names
};

/// A code dir in the user's cache dir (`~/.cache/galapagos/worker-<hash>` on
/// Linux) that outlives the run, so Python compiles the 1,200-line worker
/// once (~8 ms) instead of at every run start. The hash of the code names
/// the dir, so builds with different workers never share one.
fn code_dir() -> Option<PathBuf> {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::hash::DefaultHasher::new();
    CODE.hash(&mut h);
    directories::ProjectDirs::from("org", "galapagos", "galapagos")
        .map(|d| d.cache_dir().join(format!("worker-{:016x}", h.finish())))
}

/// Code dirs of other galapagos builds unused for this long are removed when
/// a run starts; each run marks its own dir used.
const STALE_CODE_DIR: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Mark the code dir `code` used now (its modification time), then remove
/// the other `worker-*` dirs beside it that were not used for longer than
/// `stale`: every galapagos build leaves one (~140 KB). Best effort: a dir
/// that cannot be read or removed is left. A run of an old build that lasts
/// longer than `stale` does not depend on its dir staying: a replacement
/// worker rewrites the code first (see `SubprocessEvaluator::spawn_worker`).
pub(crate) fn mark_used_and_prune(code: &Path, stale: Duration) {
    let now = std::time::SystemTime::now();
    if let Ok(dir) = std::fs::File::open(code) {
        let _ = dir.set_modified(now);
    }
    let Some(Ok(entries)) = code.parent().map(std::fs::read_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == code || !entry.file_name().to_string_lossy().starts_with("worker-") {
            continue;
        }
        // `DirEntry::metadata` does not follow symlinks: only real dirs go.
        let unused_for = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok());
        if unused_for.is_some_and(|age| age > stale) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Make `code` hold exactly the worker's code. A file is (re)written only when
/// missing or different, through a temporary file and a rename, so runs
/// starting at once never see half a file and an unchanged file keeps the
/// modification time its cached bytecode was checked against. A missing dir
/// is created (a new private dir, or a code dir pruned meanwhile).
pub(crate) fn write_code(code: &Path) -> Result<(), String> {
    for (name, text) in CODE {
        let path = code.join(name);
        if std::fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
            continue;
        }
        let parent = path.parent().unwrap_or(code);
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)
            .map_err(|e| format!("cannot write in {}: {e}", parent.display()))?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        tmp.persist(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    open_to_all(code);
    Ok(())
}

/// Make the code (and its bytecode) readable by all, as installed code is:
/// a sandbox that runs as another user (galapagos as root) reads it. The
/// temporary files it is written through are the owner's only.
fn open_to_all(dir: &Path) {
    use crate::engine::platform;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let (want, path) = (if meta.is_dir() { 0o755 } else { 0o644 }, entry.path());
        if platform::mode_of(&meta) & 0o777 != want && (meta.is_dir() || meta.is_file()) {
            let _ = platform::set_mode(&path, want);
        }
        if meta.is_dir() {
            open_to_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_dirs_of_other_builds_unused_for_long_are_pruned() {
        let cache = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(24 * 60 * 60);
        let now = std::time::SystemTime::now();
        let make = |name: &str, age: Duration| {
            let dir = cache.path().join(name);
            std::fs::create_dir_all(dir.join("openevolve")).unwrap();
            std::fs::write(dir.join("galapagos_worker.py"), "x").unwrap();
            std::fs::File::open(&dir)
                .unwrap()
                .set_modified(now - age)
                .unwrap();
            dir
        };
        let current = make("worker-current", 90 * day);
        let old = make("worker-old", 31 * day);
        let recent = make("worker-recent", 29 * day);
        let not_ours = make("other-old", 90 * day);
        let file = cache.path().join("worker-file");
        std::fs::write(&file, "x").unwrap();
        std::fs::File::open(&file)
            .unwrap()
            .set_modified(now - 90 * day)
            .unwrap();

        mark_used_and_prune(&current, 30 * day);

        assert!(!old.exists(), "a build's dir unused for 31 days is removed");
        assert!(recent.is_dir() && not_ours.is_dir() && file.is_file());
        assert!(
            current.join("galapagos_worker.py").is_file(),
            "the current dir stays"
        );
        let age = now
            .duration_since(std::fs::metadata(&current).unwrap().modified().unwrap())
            .unwrap_or_default();
        assert!(age < day, "the current dir is marked used: {age:?}");
    }
}
