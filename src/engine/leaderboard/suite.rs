//! A suite: the tasks a leaderboard runs every card on, named on the command
//! line (`--suite`) or in the studio as a folder of task folders, or as a
//! built-in suite's name ([`SUITES`]: `math`, the ten mathematical benchmark
//! tasks) when no such folder exists. A built-in suite's tasks are written out
//! with the other built-in tasks (`crate::engine::builtin::resolve_suite`, which
//! resolves an argument by that rule).

use std::path::{Path, PathBuf};

use crate::engine::task::Task;

/// A suite shipped with galapagos: its name and its tasks' names, in the
/// order its tables list them.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinSuite {
    pub name: &'static str,
    pub summary: &'static str,
    pub tasks: &'static [&'static str],
}

/// Every built-in suite.
pub const SUITES: &[BuiltinSuite] = &[BuiltinSuite {
    name: "math",
    summary: "the ten mathematical benchmark tasks from AlphaEvolve's results and their successors",
    tasks: &[
        "circle_packing",
        "circle_packing_32",
        "circles_rectangle_21",
        "heilbronn_triangle_11",
        "heilbronn_convex_13",
        "min_max_distance_16_2d",
        "min_max_distance_14_3d",
        "autocorrelation_first",
        "erdos_min_overlap",
        "sums_differences",
    ],
}];

/// The built-in suite named `name`.
pub fn builtin(name: &str) -> Option<&'static BuiltinSuite> {
    SUITES.iter().find(|s| s.name == name)
}

/// The tasks of a suite, loaded.
#[derive(Clone)]
pub struct Suite {
    /// The built-in suite's name, or the folder's.
    pub name: String,
    /// The folder the suite was read from (`None`: a built-in suite).
    pub dir: Option<PathBuf>,
    /// In the order the tables list them; names differ.
    pub tasks: Vec<Task>,
}

impl Suite {
    /// The suite of the task folders in `dir` (each folder not starting with
    /// `.`, by name). Every folder must load as a task: the error names each
    /// one that does not.
    pub fn from_folder(dir: &Path) -> Result<Self, String> {
        if !dir.is_dir() {
            return Err(format!(
                "{}: not a folder (a suite is a folder of task folders)",
                dir.display()
            ));
        }
        if Task::load(dir).is_ok() {
            return Err(format!(
                "{}: this is a task folder, not a suite; run it with --task, or put it in a folder of task folders",
                dir.display()
            ));
        }
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut folders: Vec<PathBuf> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && entry.path().is_dir() {
                folders.push(entry.path());
            }
        }
        folders.sort();
        if folders.is_empty() {
            return Err(format!(
                "{}: no task folders in it (a suite is a folder of task folders)",
                dir.display()
            ));
        }
        let mut tasks = Vec::new();
        let mut problems = Vec::new();
        for f in &folders {
            match Task::load(f) {
                Ok(t) => tasks.push(t),
                Err(e) => problems.push(format!("{}: not a task folder: {e}", f.display())),
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        Ok(Self {
            name,
            dir: Some(dir.to_path_buf()),
            tasks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_no_suite_says_why() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Suite::from_folder(tmp.path()).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("no task folders")),
            "{err:?}"
        );
        let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/circle_packing");
        let err = Suite::from_folder(&task).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("task folder, not a suite")),
            "{err:?}"
        );
    }
}
