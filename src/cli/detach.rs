//! `--detach`: a run that outlives the terminal. The command checks
//! everything a run needs (card, task, model), makes the run folder, then
//! starts itself again with `--detached-into FOLDER`: a child with no
//! terminal (stdin from /dev/null, stdout and stderr appended to
//! `output.log` in the run folder) that puts itself in a session of its own
//! (`setsid`), so closing the terminal or an SSH logout does not end it.
//! The command prints the folder and returns at once; `galapagos runs`,
//! `attach` and `steer` find the run there.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

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
    if let Err(e) = crate::engine::platform::leave_session() {
        eprintln!(
            "warning: cannot start a session of its own ({e}); the run may end with the terminal"
        );
    }
}

/// Start this program detached with `args` (a command line of its own, as
/// `galapagos mcp` makes one: `run CARD --task TASK ...`, without
/// `--detach`) and `--detached-into DIR`. Returns the child (a process that
/// lives on should wait for it, or it stays a zombie once it ends).
pub fn spawn_with(dir: &Path, args: Vec<OsString>) -> Result<std::process::Child, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let log_path = dir.join(OUTPUT_LOG);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    std::process::Command::new(exe)
        .args(args)
        .arg(INTO_FLAG)
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start the detached run: {e}"))
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

/// A run started detached: its folder and its process.
pub(crate) struct Started {
    pub dir: PathBuf,
    pub child: std::process::Child,
}

/// Check the model, make the run folder (a new run's under `runs_root`; a
/// resumed run's is its own) and start the run detached in it with `args`
/// (`None`: this command's own arguments without `--detach`; see the
/// module documentation). The plan is dropped first: the detached run
/// takes the folder's lock. The error: what to say and the exit code.
pub(crate) fn launch(
    plan: RunPlan,
    model_args: &ModelArgs,
    runs_root: Option<&Path>,
    args: Option<Vec<OsString>>,
) -> Result<Started, (String, i32)> {
    if let Err(e) = resolve_model(plan.card(), model_args) {
        return Err((format!("model: {e}"), 2));
    }
    let dir = match (runs_root, plan.run_dir()) {
        (Some(root), _) => {
            crate::engine::archive::new_run_dir(root, &plan.card().name, &plan.task().name)
                .map_err(|e| (e.to_string(), 2))?
        }
        (None, Some(dir)) => dir.to_path_buf(),
        (None, None) => return Err(("a detached run needs a run folder".to_owned(), 2)),
    };
    drop(plan);
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let args = args.unwrap_or_else(|| {
        std::env::args_os()
            .skip(1)
            .filter(|a| a != "--detach")
            .collect()
    });
    match spawn_with(&dir, args) {
        Ok(child) => Ok(Started { dir, child }),
        Err(e) => {
            if runs_root.is_some() {
                // only the log the start made is in it
                std::fs::remove_file(dir.join(OUTPUT_LOG)).ok();
                std::fs::remove_dir(&dir).ok();
            }
            Err((e, 1))
        }
    }
}

/// `--detach`: [`launch`] with this command's arguments, then say where
/// the run is.
pub(super) fn start(plan: RunPlan, model_args: &ModelArgs, runs_root: Option<&Path>) -> i32 {
    match launch(plan, model_args, runs_root, None) {
        Ok(started) => {
            announce(&started.dir, started.child.id());
            0
        }
        Err((e, code)) => {
            eprintln!("error: {e}");
            code
        }
    }
}
