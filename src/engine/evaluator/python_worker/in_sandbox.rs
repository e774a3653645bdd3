//! What the Python worker takes from the sandbox kit
//! ([`crate::engine::sandbox`]): its interpreter, found outside any sandbox
//! (and its code's bytecode compiled there, since the code dir is read-only
//! inside), where its candidates write, and the `isolate` entry of its
//! configuration, which `assets/python/galapagos_sandbox.py` applies to each
//! child.

use std::path::{Path, PathBuf};

use super::code_dir::{CODE_FILES, Setup};
use crate::engine::sandbox::interpreter::{Interpreter, locate, probe};
use crate::engine::sandbox::paths::SCRATCH_ROOT;

/// The interpreter `python` names: [`locate`]d when it is a binary, else
/// [`probe`]d (outside any sandbox).
pub(crate) async fn find_interpreter(
    python: &str,
    cwd: &Path,
    code_dir: &Path,
) -> Result<Interpreter, String> {
    match locate(python) {
        Some(found) => Ok(found),
        None => probe(Path::new(python), cwd, code_dir, &CODE_FILES).await,
    }
}

/// Compile the worker's code for the next start (a worker in the sandbox
/// cannot write its bytecode): [`probe`] does, in the background, off this
/// run's path.
pub(crate) fn compile_in_background(python: &str, cwd: &Path, code_dir: &Path) {
    let (python, cwd, code) = (
        PathBuf::from(python),
        cwd.to_path_buf(),
        code_dir.to_path_buf(),
    );
    drop(tokio::spawn(async move {
        let _ = probe(&python, &cwd, &code, &CODE_FILES).await;
    }));
}

/// Where a worker's candidates write: (HOME, TMPDIR, the dir their program
/// files go in). In the sandbox, a private tmpfs per candidate
/// ([`SCRATCH_ROOT`]); without it, the run's private dirs (`dir` is the
/// worker's own).
pub(crate) fn scratch_dirs(
    sandboxed: bool,
    setup: &Setup,
    dir: &Path,
) -> (PathBuf, PathBuf, PathBuf) {
    let root = Path::new(SCRATCH_ROOT);
    if sandboxed {
        (root.join("home"), root.join("tmp"), root.join("tmp"))
    } else {
        (setup.home.clone(), setup.tmp.clone(), dir.to_path_buf())
    }
}

/// The worker configuration's `isolate` entry: what each candidate's
/// namespaces get (see `assets/python/galapagos_sandbox.py`). Each
/// candidate's scratch dir is one tmpfs at `root` of the limits'
/// `write_quota_mib` (its writable-space quota): HOME, TMPDIR, `/dev/shm`
/// and its program's folder, which nothing else it can write adds to.
pub(crate) fn isolation(network: bool, lanes_dir: &Path) -> serde_json::Value {
    serde_json::json!({
        "network": network,
        "root": SCRATCH_ROOT,
        "hide": [lanes_dir],
    })
}
