//! `--detach`: a run that outlives the terminal. The command checks
//! everything a run needs (card, task, model), makes the run folder, then
//! starts itself again with `--detached-into FOLDER`: a child with no
//! terminal (stdin from /dev/null, stdout and stderr appended to
//! `output.log` in the run folder) that puts itself in a session of its own
//! (`setsid`), so closing the terminal or an SSH logout does not end it.
//! The command prints the folder and returns at once; `galapagos runs`,
//! `attach` and `steer` find the run there.

use std::ffi::OsString;
use std::path::Path;

use super::{ModelArgs, resolve_model};
use crate::engine::launch::RunPlan;

/// The file in a run folder that a detached run's output goes to.
pub const OUTPUT_LOG: &str = "output.log";

/// The hidden flag the detached child is started with.
pub const INTO_FLAG: &str = "--detached-into";

/// This process was started detached: leave the terminal's session.
pub fn leave_session() {
    // Started as a child (not a group leader), setsid succeeds; a failure
    // leaves the run where it is, still writing its log.
    if let Err(e) = rustix::process::setsid() {
        eprintln!(
            "warning: cannot start a session of its own ({e}); the run may end with the terminal"
        );
    }
}

/// Start this command again, detached, recording into `dir`: the
/// arguments it was given without `--detach`, and `--detached-into DIR`.
/// Returns the child's process id.
pub fn spawn(dir: &Path) -> Result<u32, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let args: Vec<OsString> = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--detach")
        .collect();
    let log_path = dir.join(OUTPUT_LOG);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let child = std::process::Command::new(exe)
        .args(args)
        .arg(INTO_FLAG)
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start the detached run: {e}"))?;
    Ok(child.id())
}

/// What a detached start prints: the folder (first, alone on its line, for
/// scripts) and how to follow it.
pub fn announce(dir: &Path, pid: u32) {
    println!("{}", dir.display());
    eprintln!(
        "detached: running as process {pid}, output in {}; follow it with `galapagos attach {}`",
        dir.join(OUTPUT_LOG).display(),
        dir.display()
    );
}

/// `--detach`: check the model, make the run folder (a new run's; a
/// resumed run's is its own) and start the run detached in it
/// (see the module documentation). The plan is dropped first: the detached run takes the
/// folder's lock.
pub(super) fn start(plan: RunPlan, model_args: &ModelArgs, runs_root: Option<&Path>) -> i32 {
    if let Err(e) = resolve_model(plan.card(), model_args) {
        eprintln!("error: model: {e}");
        return 2;
    }
    let dir = match (runs_root, plan.run_dir()) {
        (Some(root), _) => {
            match crate::engine::archive::new_run_dir(root, &plan.card().name, &plan.task().name) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return 2;
                }
            }
        }
        (None, Some(dir)) => dir.to_path_buf(),
        (None, None) => {
            eprintln!("error: a detached run needs a run folder");
            return 2;
        }
    };
    drop(plan);
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    match spawn(&dir) {
        Ok(pid) => {
            announce(&dir, pid);
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            if runs_root.is_some() {
                std::fs::remove_dir(&dir).ok();
            }
            1
        }
    }
}
