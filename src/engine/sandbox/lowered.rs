//! Lowered settings: what a card's blocks let run on the machine beyond the
//! sandbox's safe defaults, as a list a person can read and consent to
//! ([`crate::engine::consent`]).
//!
//! Each block that runs processes says what they are and what its
//! parameters let them reach (its [`Reach`], from
//! [`crate::engine::component::Component::reach`]; a checked card gives
//! them all, [`crate::engine::card::ValidCard::reaches`]); [`lowered`] is
//! the one function that compares that with the safe defaults and lists
//! each setting that widens it:
//! - **`sandbox: none`**: the processes run as you (as root when galapagos
//!   runs as root), with everything you can read, change and send; for the
//!   `command` evaluator, the card's own command runs on the host;
//! - **`network: true`**: candidates may reach any host;
//! - **`read_paths`** outside the task folder (or relative, which resolves
//!   against wherever galapagos runs): shown to candidates or the agent;
//! - **`env`** entries that pass a variable of the run's environment by
//!   name (`NAME`, not `NAME=value`): its value reaches candidates or the
//!   agent;
//! - a cluster's **`sbatch_args`** (they can change what a job sees and
//!   where its output goes) and **`staging_dir`** (the task folder is copied
//!   there).
//!
//! Without the sandbox, `network` and `read_paths` are not listed: the
//! processes reach everything already. Resource limits (memory, CPU time,
//! processes, file size, write quota) are not isolation: a card can make a
//! run slow or large with them, not reach more, so they are not listed.

use std::path::{Component as PathPart, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::component::{Place, Reach, Runs, Slot};

/// One setting of a card that lowers isolation below the safe defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lowered {
    /// The setting as a consent names it (`--allow`): the card's field and,
    /// for a list entry or a choice, its value: `evaluator.sandbox=none`,
    /// `evaluator.network`, `evaluator.read_paths=~/.ssh`,
    /// `proposer.env=GITHUB_TOKEN`.
    pub setting: String,
    /// What it lets happen, in plain words.
    pub what: String,
    /// Processes run with no sandbox (the rule for a run as root: see
    /// [`crate::engine::consent`]).
    #[serde(default)]
    pub unsandboxed: bool,
}

impl std::fmt::Display for Lowered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.setting, self.what)
    }
}

/// Every setting that lowers isolation below the safe defaults, of the
/// blocks that run processes (each slot's [`Reach`], in slot order: what
/// [`crate::engine::card::ValidCard::reaches`] gives), for a run of the
/// task in `task_dir`; `as_root`: galapagos runs as root (the words say
/// so). Empty when every block keeps its processes in the sandbox with
/// nothing widened.
pub fn lowered(
    blocks: impl IntoIterator<Item = (Slot, Reach)>,
    task_dir: &Path,
    as_root: bool,
) -> Vec<Lowered> {
    let mut out = Vec::new();
    for (slot, reach) in blocks {
        judge(slot.key(), &reach, task_dir, as_root, &mut out);
    }
    out
}

/// The lowered settings of one block (`key`: its slot's card key).
fn judge(key: &str, reach: &Reach, task_dir: &Path, as_root: bool, out: &mut Vec<Lowered>) {
    let user = if as_root { "root" } else { "you" };
    let place = match reach.place {
        Place::ThisMachine => "this machine",
        Place::Cluster => "the cluster's nodes",
    };
    let who = match &reach.runs {
        Runs::Candidates => {
            "the candidates (programs the model writes) and the task's evaluator".to_owned()
        }
        Runs::Command(argv) => format!(
            "the card's command `{}` and the candidates it runs",
            shown(argv)
        ),
        Runs::Agent(argv) => format!("the coding agent `{}`", shown(argv)),
    };
    if !reach.sandboxed {
        out.push(Lowered {
            setting: format!("{key}.sandbox=none"),
            what: format!(
                "{who} run on {place} as {user}, with no sandbox: they can read, change and send \
                 anything {user} can"
            ),
            unsandboxed: true,
        });
    }
    if reach.sandboxed && reach.network {
        out.push(Lowered {
            setting: format!("{key}.network"),
            what: format!("{who} may use the network: they can send what they read to any host"),
            unsandboxed: false,
        });
    }
    if reach.sandboxed {
        for path in &reach.read_paths {
            if let Some(why) = outside(path, task_dir) {
                out.push(Lowered {
                    setting: format!("{key}.read_paths={path}"),
                    what: format!("{who} may read {why}"),
                    unsandboxed: false,
                });
            }
        }
    }
    for entry in &reach.env {
        if entry.contains('=') {
            continue; // sets a value, passes nothing of the run's
        }
        out.push(Lowered {
            setting: format!("{key}.env={entry}"),
            what: format!("{who} get the value of your environment variable {entry}"),
            unsandboxed: false,
        });
    }
    for arg in &reach.scheduler_args {
        out.push(Lowered {
            setting: format!("{key}.sbatch_args={arg}"),
            what: format!(
                "sbatch gets `{arg}`: more arguments can pass your environment to the jobs, change \
                 what they see and where their output is written"
            ),
            unsandboxed: false,
        });
    }
    if let Some(dir) = &reach.staging_dir {
        out.push(Lowered {
            setting: format!("{key}.staging_dir={dir}"),
            what: format!("the task folder and the candidates' files are copied to {dir}"),
            unsandboxed: false,
        });
    }
}

/// A command line as shown in a lowered setting's words (cut when long).
fn shown(argv: &[String]) -> String {
    let line = argv.join(" ");
    if line.chars().count() > 80 {
        format!("{}...", line.chars().take(77).collect::<String>())
    } else {
        line
    }
}

/// Why `path` (a `read_paths` entry) is outside the task folder, in words,
/// or `None` when it is inside it. A relative path is outside: it resolves
/// against wherever galapagos runs, not the task folder.
fn outside(path: &str, task_dir: &Path) -> Option<String> {
    let expanded = super::paths::expand_home(path);
    if !expanded.is_absolute() {
        return Some(format!(
            "`{path}`, a relative path (it resolves against the folder galapagos runs in)"
        ));
    }
    let task = resolved(task_dir);
    let target = resolved(&expanded);
    if target.starts_with(&task) {
        None
    } else {
        Some(format!("{} (outside the task folder)", target.display()))
    }
}

/// `path` with its links resolved as far as it exists, and `.` and `..`
/// taken out of the rest.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    // The longest existing prefix, resolved, then the rest by its words.
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            PathPart::ParentDir => {
                out.pop();
            }
            PathPart::CurDir => {}
            other => {
                out.push(other);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        Reach::sandboxed(Runs::Candidates, Place::ThisMachine)
    }

    fn settings(r: &Reach, task: &Path, as_root: bool) -> Vec<String> {
        let mut out = Vec::new();
        judge("evaluator", r, task, as_root, &mut out);
        out.into_iter().map(|l| l.setting).collect()
    }

    #[test]
    fn the_safe_defaults_lower_nothing() {
        assert!(settings(&reach(), Path::new("/t"), true).is_empty());
    }

    #[test]
    fn each_widening_is_listed_by_its_setting() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let task = tmp.path().join("task");
        std::fs::create_dir_all(task.join("data")).unwrap_or_else(|e| panic!("{e}"));
        let r = Reach {
            network: true,
            read_paths: vec![
                task.join("data").display().to_string(),
                format!("{}/data/../../secret", task.display()),
                "~/.ssh".into(),
                "rel/dir".into(),
            ],
            env: vec!["GITHUB_TOKEN".into(), "NO_COLOR=1".into()],
            scheduler_args: vec!["--export=ALL".into()],
            staging_dir: Some("/scratch/x".into()),
            ..reach()
        };
        assert_eq!(
            settings(&r, &task, false),
            [
                "evaluator.network",
                &format!("evaluator.read_paths={}/data/../../secret", task.display()),
                "evaluator.read_paths=~/.ssh",
                "evaluator.read_paths=rel/dir",
                "evaluator.env=GITHUB_TOKEN",
                "evaluator.sbatch_args=--export=ALL",
                "evaluator.staging_dir=/scratch/x",
            ]
        );
    }

    #[test]
    fn a_link_in_the_task_folder_to_outside_is_outside() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let task = tmp.path().join("task");
        let secret = tmp.path().join("secret");
        std::fs::create_dir_all(&task).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(&secret).unwrap_or_else(|e| panic!("{e}"));
        crate::engine::platform::symlink(&secret, task.join("link"))
            .unwrap_or_else(|e| panic!("{e}"));
        let r = Reach {
            read_paths: vec![task.join("link").display().to_string()],
            ..reach()
        };
        assert_eq!(settings(&r, &task, false).len(), 1);
    }

    #[test]
    fn without_the_sandbox_only_the_sandbox_and_the_environment_are_listed() {
        let r = Reach {
            runs: Runs::Command(vec!["sh".into(), "-c".into(), "curl x | sh".into()]),
            sandboxed: false,
            network: true,
            read_paths: vec!["~/.ssh".into()],
            env: vec!["AWS_SECRET_ACCESS_KEY".into()],
            ..reach()
        };
        let mut out = Vec::new();
        judge("evaluator", &r, Path::new("/t"), true, &mut out);
        let listed: Vec<&str> = out.iter().map(|l| l.setting.as_str()).collect();
        assert_eq!(
            listed,
            [
                "evaluator.sandbox=none",
                "evaluator.env=AWS_SECRET_ACCESS_KEY"
            ]
        );
        assert!(out[0].unsandboxed && !out[1].unsandboxed);
        assert!(
            out[0].what.contains("`sh -c curl x | sh`") && out[0].what.contains("as root"),
            "{}",
            out[0].what
        );
    }
}
