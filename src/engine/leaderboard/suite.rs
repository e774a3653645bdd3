//! A suite: the tasks a leaderboard runs every card on, named on the command
//! line (`--suite`) or in the studio as a folder of task folders, or as a
//! built-in suite's name ([`SUITES`]: `math`, the ten mathematical benchmark
//! tasks) when no such folder exists. A built-in suite's tasks are written out
//! with the other built-in tasks ([`crate::engine::builtin::install_task`]).

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
    /// The suite an argument names: the folder of task folders at that
    /// path, else the built-in suite of that name (its tasks written out
    /// under [`crate::engine::builtin::tasks_dir`]).
    pub fn resolve(arg: &Path) -> Result<Self, String> {
        if arg.exists() {
            return Self::from_folder(arg);
        }
        let name = arg.to_str().unwrap_or_default();
        match builtin(name) {
            Some(b) if !name.contains(['/', '\\']) => {
                Self::builtin(b, &crate::engine::builtin::tasks_dir())
            }
            _ => Err(format!(
                "{}: no such folder, and no built-in suite of that name (built-in: {})",
                arg.display(),
                SUITES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The built-in suite `suite`, its tasks written out under `root`.
    pub fn builtin(suite: &BuiltinSuite, root: &Path) -> Result<Self, String> {
        let mut tasks = Vec::new();
        for name in suite.tasks {
            let task = crate::engine::builtin::task(name)
                .ok_or_else(|| format!("suite {}: no built-in task {name}", suite.name))?;
            let dir = crate::engine::builtin::install_task(task, root)
                .map_err(|e| format!("suite {}: cannot write out {name}: {e}", suite.name))?;
            tasks.push(Task::load(&dir).map_err(|e| format!("suite {}: {e}", suite.name))?);
        }
        Ok(Self {
            name: suite.name.to_owned(),
            dir: None,
            tasks,
        })
    }

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
    fn the_math_suite_is_the_ten_tasks_each_with_its_record() {
        let tmp = tempfile::tempdir().unwrap();
        let suite = builtin("math").unwrap();
        let s = Suite::builtin(suite, tmp.path()).unwrap();
        let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, suite.tasks);
        for t in &s.tasks {
            assert!(
                t.config.best_known().is_some(),
                "{} has no best_known",
                t.name
            );
        }
    }

    #[test]
    fn a_folder_suite_names_every_folder_that_is_not_a_task() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Suite::resolve(&tmp.path().join("nonesuch")).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("no such folder") && e.contains("math")),
            "{err:?}"
        );
        let err = Suite::from_folder(tmp.path()).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("no task folders")),
            "{err:?}"
        );
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks");
        let task = root.join("circle_packing");
        let err = Suite::from_folder(&task).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("task folder, not a suite")),
            "{err:?}"
        );
        let suite_dir = tmp.path().join("two");
        for name in ["b_task", "a_task"] {
            let dir = suite_dir.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            for file in ["config.yaml", "evaluator.py", "initial_program.py"] {
                std::fs::copy(task.join(file), dir.join(file)).unwrap();
            }
        }
        std::fs::create_dir_all(suite_dir.join(".hidden")).unwrap();
        let s = Suite::resolve(&suite_dir).unwrap();
        assert_eq!(s.name, "two");
        let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a_task", "b_task"]);
        std::fs::create_dir_all(suite_dir.join("notes")).unwrap();
        let err = Suite::resolve(&suite_dir).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("notes: not a task folder")),
            "{err:?}"
        );
    }
}
