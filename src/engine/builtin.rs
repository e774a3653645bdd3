//! The cards and tasks shipped with galapagos, embedded in the binary so they
//! work from any folder: a card or task named on the command line resolves to
//! the built-in of that name when no such path exists, and the studio lists
//! the built-in cards whatever folder it was opened in.
//!
//! A card is text, loaded like a file (its origin reads `built-in:NAME`). A
//! task is a folder the evaluator runs in, so a built-in task is written out
//! once into the per-user data dir ([`data_dir`]) and used from there; a file
//! that differs from the embedded one is written again.

use std::path::{Path, PathBuf};

/// One shipped card: its name (the file stem) and its YAML.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinCard {
    pub name: &'static str,
    pub yaml: &'static str,
}

/// One shipped task: its folder name and its files (path inside the folder,
/// text); a repository task's program is the files under `initial_program/`.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinTask {
    pub name: &'static str,
    pub files: &'static [(&'static str, &'static str)],
}

macro_rules! card {
    ($name:literal) => {
        BuiltinCard {
            name: $name,
            yaml: include_str!(concat!("../../cards/", $name, ".yaml")),
        }
    };
}

macro_rules! task {
    ($name:literal, [$($file:literal),+ $(,)?]) => {
        BuiltinTask {
            name: $name,
            files: &[$(($file, include_str!(concat!("../../assets/tasks/", $name, "/", $file)))),+],
        }
    };
}

/// Every shipped card, by name.
pub const CARDS: &[BuiltinCard] = &[
    card!("adaevolve"),
    card!("agent_aider"),
    card!("agent_claude_code"),
    card!("agent_codex"),
    card!("agent_mini_swe"),
    card!("beam_search"),
    card!("best_of_n"),
    card!("best_of_n_attempts"),
    card!("best_of_n_slurm"),
    card!("early_stop"),
    card!("model_bandit"),
    card!("novelty_gate"),
    card!("openevolve"),
    card!("pareto"),
    card!("repository"),
    card!("shinka"),
    card!("topk"),
];

/// Every shipped task, by name.
pub const TASKS: &[BuiltinTask] = &[
    task!(
        "autocorrelation_first",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "circle_packing",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "circle_packing_32",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "circles_rectangle_21",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "curve_fitting",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py",
            "targets.json"
        ]
    ),
    task!(
        "erdos_min_overlap",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "exp_poly_shinka",
        ["README.md", "evaluate.py", "initial.py", "run_evo.py"]
    ),
    task!(
        "fit_package",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program/README.md",
            "initial_program/fitpkg/__init__.py",
            "initial_program/fitpkg/features.py",
            "initial_program/fitpkg/model.py",
            "initial_program/tests/__init__.py",
            "initial_program/tests/test_model.py",
        ]
    ),
    task!(
        "function_minimization",
        ["README.md", "evaluator.py", "initial_program.py"]
    ),
    task!(
        "hash_rust",
        ["README.md", "evaluator.py", "initial_program.rs"]
    ),
    task!(
        "heilbronn_convex_13",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "heilbronn_triangle_11",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "min_max_distance_14_3d",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "min_max_distance_16_2d",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "prime_count_cpp",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program/README.md",
            "initial_program/bench/main.cpp",
            "initial_program/include/primes.hpp",
            "initial_program/src/count.cpp",
            "initial_program/src/primality.cpp",
        ]
    ),
    task!(
        "quadrature",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
    task!(
        "sums_differences",
        [
            "README.md",
            "config.yaml",
            "evaluator.py",
            "initial_program.py"
        ]
    ),
];

/// The bare name a command-line argument gives, when it is one: `best_of_n`
/// or `best_of_n.yaml`, never a path with a folder in it.
fn bare_name<'a>(arg: &'a Path, extensions: &[&str]) -> Option<&'a str> {
    let text = arg.to_str()?;
    if text.contains(['/', '\\']) {
        return None;
    }
    Some(
        extensions
            .iter()
            .find_map(|ext| text.strip_suffix(ext))
            .unwrap_or(text),
    )
}

/// The built-in card named `name` (`best_of_n`).
pub fn card(name: &str) -> Option<&'static BuiltinCard> {
    CARDS.iter().find(|c| c.name == name)
}

/// The built-in task named `name` (`circle_packing`).
pub fn task(name: &str) -> Option<&'static BuiltinTask> {
    TASKS.iter().find(|t| t.name == name)
}

/// The built-in card an argument names, when no file of that name exists.
pub fn card_for_arg(arg: &Path) -> Option<&'static BuiltinCard> {
    if arg.exists() {
        return None;
    }
    bare_name(arg, &[".yaml", ".yml"]).and_then(card)
}

/// The per-user data dir (`~/.local/share/galapagos` on Linux): built-in
/// tasks are written out here, and the studio records its runs here unless
/// a folder is chosen. Without a home, a folder in the temp dir.
pub fn data_dir() -> PathBuf {
    directories::ProjectDirs::from("org", "galapagos", "galapagos").map_or_else(
        || std::env::temp_dir().join("galapagos"),
        |d| d.data_dir().to_path_buf(),
    )
}

/// Where built-in tasks are written out.
pub fn tasks_dir() -> PathBuf {
    data_dir().join("tasks")
}

/// Write `task` out under `root` (as `root/NAME/`), rewriting only files
/// that differ from the embedded ones; returns the folder.
pub fn install_task(task: &BuiltinTask, root: &Path) -> std::io::Result<PathBuf> {
    let dir = root.join(task.name);
    std::fs::create_dir_all(&dir)?;
    for (file, text) in task.files {
        let path = dir.join(file);
        if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
            let parent = path.parent().unwrap_or(&dir);
            std::fs::create_dir_all(parent)?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            let tmp = parent.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, text)?;
            std::fs::rename(&tmp, &path)?;
        }
    }
    Ok(dir)
}

/// The task folder an argument names: the path itself when it exists, else
/// the built-in task of that name written out under [`tasks_dir`] (`Ok(None)`
/// when it is neither: the caller reports the missing folder).
pub fn task_dir_for_arg(arg: &Path) -> std::io::Result<Option<PathBuf>> {
    if arg.exists() {
        return Ok(Some(arg.to_path_buf()));
    }
    match bare_name(arg, &[]).and_then(task) {
        Some(t) => install_task(t, &tasks_dir()).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of `cards/` and `assets/tasks/` is embedded, so a new one
    /// cannot be forgotten here.
    #[test]
    fn every_shipped_card_and_task_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk: Vec<String> = std::fs::read_dir(root.join("cards"))
            .unwrap()
            .flatten()
            .filter_map(|e| {
                e.path()
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = CARDS.iter().map(|c| c.name).collect();
        assert_eq!(on_disk, embedded);
        fn files_under(dir: &Path, rel: &str, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let path = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                if e.path().is_dir() {
                    files_under(&e.path(), &path, out);
                } else {
                    out.push(path);
                }
            }
        }
        for t in TASKS {
            let mut files = Vec::new();
            files_under(&root.join("assets/tasks").join(t.name), "", &mut files);
            files.sort();
            let embedded: Vec<&str> = t.files.iter().map(|(f, _)| *f).collect();
            assert_eq!(files, embedded, "{}", t.name);
        }
        let tasks: usize = std::fs::read_dir(root.join("assets/tasks"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(tasks, TASKS.len());
    }

    #[test]
    fn names_resolve_to_built_ins_only_when_no_such_path_exists() {
        assert_eq!(
            card_for_arg(Path::new("best_of_n")).map(|c| c.name),
            Some("best_of_n")
        );
        assert_eq!(
            card_for_arg(Path::new("topk.yaml")).map(|c| c.name),
            Some("topk")
        );
        assert!(card_for_arg(Path::new("cards/best_of_n.yaml")).is_none());
        assert!(card_for_arg(Path::new("nope")).is_none());
        assert!(card_for_arg(Path::new("some/dir/best_of_n")).is_none());

        let root = tempfile::tempdir().unwrap();
        let t = task("circle_packing").unwrap();
        let dir = install_task(t, root.path()).unwrap();
        assert_eq!(dir, root.path().join("circle_packing"));
        let evaluator = dir.join("evaluator.py");
        assert_eq!(std::fs::read_to_string(&evaluator).unwrap(), t.files[2].1);
        // a changed file is put back; a second install changes nothing else
        std::fs::write(&evaluator, "broken").unwrap();
        install_task(t, root.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&evaluator).unwrap(), t.files[2].1);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 4);
        // an existing path is used as it is
        assert_eq!(
            task_dir_for_arg(root.path()).unwrap(),
            Some(root.path().to_path_buf())
        );
        assert_eq!(task_dir_for_arg(Path::new("no_such_task")).unwrap(), None);
    }
}
