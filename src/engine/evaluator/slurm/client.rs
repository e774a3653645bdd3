//! The Slurm client side of the `slurm` evaluator: its commands (with an
//! allowlisted environment and a time limit), reading the queue and a
//! finished job's state, cancelling, and the small formats around them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::process::Command;

use super::SlurmEvaluator;
use crate::engine::foreign::Limit;
use crate::engine::genome::Placement;
use crate::engine::sandbox::environment::Profile;

/// Slurm's client commands this backend uses.
pub(super) const COMMANDS: [&str; 6] = ["sbatch", "srun", "squeue", "scancel", "sinfo", "scontrol"];
/// Limit for one Slurm client command (the controller may be slow).
const COMMAND_LIMIT: Duration = Duration::from_secs(60);
/// How long cancelled work may take to leave the queue before the run goes on.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

impl SlurmEvaluator {
    /// A Slurm client command with the run's allowlisted environment.
    pub(super) fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env_clear();
        for (name, value) in std::env::vars_os() {
            let Some(text) = name.to_str() else { continue };
            let passed =
                Profile::SlurmClient.passes(text) || self.params.env.iter().any(|l| l == text);
            if passed {
                c.env(name, value);
            }
        }
        c.stdin(std::process::Stdio::null()).kill_on_drop(true);
        c
    }

    /// Run a Slurm client command to its end: its stdout, or its stderr as
    /// the error.
    pub(super) async fn slurm(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let mut c = self.command(program);
        c.args(args);
        match tokio::time::timeout(COMMAND_LIMIT, c.output()).await {
            Err(_) => Err(format!(
                "{program} did not answer within {} s",
                COMMAND_LIMIT.as_secs()
            )),
            Ok(Err(e)) => Err(format!("cannot run {program}: {e}")),
            Ok(Ok(out)) if out.status.success() => {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            }
            Ok(Ok(out)) => {
                // The last line says what went wrong (Slurm's clients print
                // their attempts before it).
                let err = String::from_utf8_lossy(&out.stderr);
                let last = err.lines().rev().map(str::trim).find(|l| !l.is_empty());
                Err(match last {
                    None => format!("{program} failed ({})", out.status),
                    Some(l) if l.contains("configuration source") => format!(
                        "{l} (no slurm.conf found: set SLURM_CONF to the cluster's configuration)"
                    ),
                    Some(l) => l.to_owned(),
                })
            }
        }
    }

    /// A job's state and node (`None`: no longer in the queue, or the
    /// scheduler did not answer).
    pub(super) async fn queue_state(&self, job: &str) -> Option<(String, String)> {
        let out = self
            .slurm("squeue", &["-h", "-j", job, "-o", "%T|%N"])
            .await
            .ok()?;
        let line = out.lines().next()?;
        let (state, node) = line.split_once('|')?;
        Some((state.trim().to_owned(), node.trim().to_owned()))
    }

    /// A finished job's state as `scontrol` remembers it.
    pub(super) async fn final_state(&self, job: &str) -> String {
        let out = self
            .slurm("scontrol", &["show", "job", job, "-o"])
            .await
            .unwrap_or_default();
        field(&out, "JobState").unwrap_or_else(|| "unknown".to_owned())
    }

    /// Cancel `job` (a job or `job.step`) and wait until it has left the
    /// queue, at most [`CANCEL_GRACE`].
    pub(super) async fn cancel(&self, job: &str) {
        let _ = self.slurm("scancel", &[job]).await;
        let started = Instant::now();
        while started.elapsed() < CANCEL_GRACE {
            let flag = if job.contains('.') { "-s" } else { "-h" };
            let listed = self
                .slurm(
                    "squeue",
                    &[
                        "-h",
                        flag,
                        "-j",
                        job.split('.').next().unwrap_or(job),
                        "-o",
                        "%i",
                    ],
                )
                .await
                .unwrap_or_default();
            if !listed.lines().any(|l| l.trim() == job) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Cancels a job when dropped (an evaluation abandoned by a stopped run).
pub(super) struct CancelOnDrop(pub(super) Option<String>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(job) = self.0.take() {
            let _ = std::process::Command::new("scancel")
                .arg(job)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// What the runner wrote when it started.
#[derive(Deserialize)]
pub(super) struct Started {
    #[serde(default)]
    job: String,
    #[serde(default)]
    step: Option<String>,
    #[serde(default)]
    pub(super) node: String,
}

impl Started {
    /// `job` or `job.step`.
    pub(super) fn id(&self) -> String {
        match &self.step {
            Some(step) if !step.is_empty() && step != "4294967294" => {
                format!("{}.{step}", self.job)
            }
            _ => self.job.clone(),
        }
    }
}

pub(super) fn started(dir: &Path) -> Option<Started> {
    let text = super::staged::read_text(dir, "started.json", Limit::STAGED_RESULT).ok()??;
    serde_json::from_str(&text).ok()
}

pub(super) fn placement(job: &str, node: &str) -> Placement {
    Placement {
        scheduler: "slurm".to_owned(),
        job_id: job.to_owned(),
        node: node.to_owned(),
        retries: Vec::new(),
    }
}

/// `gp-<run folder>-<hash of its path>`: the same for a run and its
/// resumption, different for two runs; a run that is not recorded gets one
/// of its own.
pub(super) fn job_name(run_dir: Option<&Path>) -> String {
    let (folder, key) = match run_dir {
        Some(dir) => {
            let full = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            let folder = full
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (folder, full.display().to_string())
        }
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            (
                "run".to_owned(),
                format!("{}-{}", std::process::id(), now.as_nanos()),
            )
        }
    };
    // FNV-1a: stable across builds, so a resumed run finds its jobs.
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let folder: String = folder
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
        .take(60)
        .collect();
    format!("gp-{folder}-{:08x}", hash & 0xffff_ffff)
}

pub(super) fn parse_job_id(out: &str) -> Result<String, String> {
    let id = out
        .lines()
        .next()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return Err(format!("sbatch gave no job id (it said {:?})", out.trim()));
    }
    Ok(id.to_owned())
}

/// `Key=value` from `scontrol -o` output.
pub(super) fn field(out: &str, key: &str) -> Option<String> {
    let prefix = format!("{key}=");
    out.split_whitespace()
        .find_map(|w| w.strip_prefix(&prefix))
        .map(str::to_owned)
}

pub(super) fn last_line(text: &str) -> &str {
    text.trim().lines().last().unwrap_or("no output from srun")
}

pub(super) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub(super) fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

pub(super) fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Copy the task folder `from` into `to` (the staging copy the nodes read),
/// leaving out `skip` (the staging area, when it is inside) and version
/// control and run folders.
pub(super) fn copy_tree(from: &Path, to: &Path, skip: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path == skip || name == ".git" || name == "runs" || name == "__pycache__" {
            continue;
        }
        let target = to.join(&name);
        let meta =
            std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if meta.is_dir() {
            copy_tree(&path, &target, skip)?;
        } else {
            std::fs::copy(&path, &target).map_err(|e| {
                format!(
                    "cannot copy {} to {}: {e}",
                    path.display(),
                    target.display()
                )
            })?;
        }
    }
    Ok(())
}
