//! The cards and tasks shipped with galapagos, embedded in the binary so they
//! work from any folder: a card or task named on the command line resolves to
//! the built-in of that name when no such path exists, and the studio lists
//! the built-in cards whatever folder it was opened in.
//!
//! A card is text, loaded like a file (its origin reads `built-in:NAME`). A
//! task is a folder the evaluator runs in, so a built-in task is written out
//! once into the per-user data dir ([`data_dir`]) and used from there; a file
//! that differs from the embedded one is written again.
//!
//! [`resolve_card`] and [`resolve_task`] are the one rule for "a card or a
//! task given by name or path", which every entry point uses (`run`,
//! `validate`, `fork`, `leaderboard`, the studio's task field, its
//! Leaderboard tab's Task field, `galapagos studio --task`): a path that
//! exists is that path; else a built-in's name is the built-in; else, for a
//! card, `NAMESPACE/NAME[@VERSION]` is a hub card; else an error that says
//! so, with the nearest built-in name ("did you mean `best_of_n`?").

use std::path::{Path, PathBuf};

use crate::engine::leaderboard::suite::{self, Suite};
use crate::engine::provenance::Provenance;

/// One shipped card: its name (the file stem) and its YAML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltinCard {
    pub name: &'static str,
    pub yaml: &'static str,
}

impl BuiltinCard {
    /// This card, checked, with its provenance (built in).
    pub fn valid(
        &self,
        registry: &crate::engine::registry::Registry,
    ) -> Result<crate::engine::card::ValidCard, crate::engine::card::CardErrors> {
        crate::engine::card::ValidCard::from_yaml(
            self.yaml,
            &format!("built-in:{}", self.name),
            registry,
        )
        .map(|c| {
            c.with_provenance(Some(Provenance::BuiltIn {
                name: self.name.to_owned(),
            }))
        })
    }
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

/// Why a name or path given for a card or a task does not resolve.
#[derive(Debug, thiserror::Error)]
pub enum NameError {
    #[error(
        "{given}: no such file, built-in card or hub card (NAMESPACE/NAME[@VERSION]){hint} \
         (built-in cards: {known})"
    )]
    NoCard {
        given: String,
        hint: String,
        known: String,
    },
    #[error("{given}: no such folder or built-in task{hint} (built-in tasks: {known})")]
    NoTask {
        given: String,
        hint: String,
        known: String,
    },
    #[error("cannot write the built-in task {name} to {}: {source}", dir.display())]
    Install {
        name: &'static str,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A card named by a path or a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardArg {
    /// A file that exists.
    Path(PathBuf),
    /// A built-in card.
    Builtin(&'static BuiltinCard),
    /// `NAMESPACE/NAME[@VERSION]`, to pull from a hub.
    Hub(crate::engine::hub::pull::HubRef),
}

/// What a card argument names: the file when it exists, else the built-in
/// card of that name, else a hub card (`NAMESPACE/NAME[@VERSION]`), else an
/// error naming the nearest built-in card (a path with a folder in it is
/// taken as a file, for its loader to say it is not there).
pub fn resolve_card(arg: &Path) -> Result<CardArg, NameError> {
    if arg.exists() {
        return Ok(CardArg::Path(arg.to_path_buf()));
    }
    if let Some(card) = card_for_arg(arg) {
        return Ok(CardArg::Builtin(card));
    }
    if let Some(r) = arg
        .to_str()
        .and_then(crate::engine::hub::pull::HubRef::parse)
    {
        return Ok(CardArg::Hub(r));
    }
    // a path with a folder in it is a file that is not there: its loader says so
    let Some(word) = bare_name(arg, &[".yaml", ".yml"]) else {
        return Ok(CardArg::Path(arg.to_path_buf()));
    };
    Err(NameError::NoCard {
        given: arg.display().to_string(),
        hint: crate::engine::suggest::did_you_mean(word, CARDS.iter().map(|c| c.name)),
        known: CARDS.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
    })
}

/// A task folder named by a path or a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskArg {
    /// The folder.
    pub dir: PathBuf,
    /// The built-in task it is, written out under [`tasks_dir`].
    pub builtin: Option<&'static str>,
}

/// What a task argument names: the folder when the path exists, else the
/// built-in task of that name (written out under [`tasks_dir`]), else an
/// error naming the nearest built-in task (a path with a folder in it is
/// taken as a folder, for the task loader to say it is not there).
pub fn resolve_task(arg: &Path) -> Result<TaskArg, NameError> {
    resolve_task_in(arg, &tasks_dir())
}

/// [`resolve_task`] writing built-in tasks under `root`.
pub fn resolve_task_in(arg: &Path, root: &Path) -> Result<TaskArg, NameError> {
    if arg.exists() {
        return Ok(TaskArg {
            dir: arg.to_path_buf(),
            builtin: None,
        });
    }
    // a path with a folder in it is a folder that is not there: the task
    // loader says so
    let Some(word) = bare_name(arg, &[]) else {
        return Ok(TaskArg {
            dir: arg.to_path_buf(),
            builtin: None,
        });
    };
    match task(word) {
        Some(t) => install_task(t, root)
            .map(|dir| TaskArg {
                dir,
                builtin: Some(t.name),
            })
            .map_err(|source| NameError::Install {
                name: t.name,
                dir: root.to_path_buf(),
                source,
            }),
        None => Err(NameError::NoTask {
            given: arg.display().to_string(),
            hint: crate::engine::suggest::did_you_mean(word, TASKS.iter().map(|t| t.name)),
            known: TASKS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// The suite an argument names (`--suite`, the studio's Suite field): the
/// folder of task folders at that path, else the built-in suite of that name
/// ([`crate::engine::leaderboard::suite::SUITES`]), its tasks written out
/// under [`tasks_dir`].
pub fn resolve_suite(arg: &Path) -> Result<Suite, String> {
    if arg.exists() {
        return Suite::from_folder(arg);
    }
    let name = arg.to_str().unwrap_or_default();
    match suite::builtin(name) {
        Some(b) if !name.contains(['/', '\\']) => install_suite(b, &tasks_dir()),
        _ => Err(format!(
            "{}: no such folder, and no built-in suite of that name (built-in: {})",
            arg.display(),
            suite::SUITES
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The built-in suite `suite`, its tasks written out under `root`.
pub fn install_suite(suite: &suite::BuiltinSuite, root: &Path) -> Result<Suite, String> {
    let mut tasks = Vec::new();
    for name in suite.tasks {
        let builtin =
            task(name).ok_or_else(|| format!("suite {}: no built-in task {name}", suite.name))?;
        let dir = install_task(builtin, root)
            .map_err(|e| format!("suite {}: cannot write out {name}: {e}", suite.name))?;
        tasks.push(
            crate::engine::task::Task::load(&dir)
                .map_err(|e| format!("suite {}: {e}", suite.name))?,
        );
    }
    Ok(Suite {
        name: suite.name.to_owned(),
        dir: None,
        tasks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_math_suite_is_the_ten_tasks_each_with_its_record() {
        let tmp = tempfile::tempdir().unwrap();
        let suite = suite::builtin("math").unwrap();
        let s = install_suite(suite, tmp.path()).unwrap();
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
    fn a_suite_argument_is_a_folder_of_tasks_or_a_built_in_name() {
        let tmp = tempfile::tempdir().unwrap();
        let err = resolve_suite(&tmp.path().join("nonesuch")).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("no such folder") && e.contains("math")),
            "{err:?}"
        );
        let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/circle_packing");
        let suite_dir = tmp.path().join("two");
        for name in ["b_task", "a_task"] {
            let dir = suite_dir.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            for file in ["config.yaml", "evaluator.py", "initial_program.py"] {
                std::fs::copy(task.join(file), dir.join(file)).unwrap();
            }
        }
        std::fs::create_dir_all(suite_dir.join(".hidden")).unwrap();
        let s = resolve_suite(&suite_dir).unwrap();
        assert_eq!(s.name, "two");
        let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a_task", "b_task"]);
        std::fs::create_dir_all(suite_dir.join("notes")).unwrap();
        let err = resolve_suite(&suite_dir).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("notes: not a task folder")),
            "{err:?}"
        );
    }

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
    }

    #[test]
    fn names_and_paths_resolve_by_one_rule_and_a_near_miss_is_named() {
        let root = tempfile::tempdir().unwrap();
        let fit = resolve_task_in(Path::new("fit_package"), root.path()).unwrap();
        assert_eq!(fit.builtin, Some("fit_package"));
        assert!(fit.dir.join("initial_program/fitpkg/model.py").is_file());
        let same = resolve_task_in(&fit.dir, root.path()).unwrap();
        assert_eq!((same.dir, same.builtin), (fit.dir.clone(), None));
        let err = resolve_task_in(Path::new("circle_pack"), root.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "circle_pack: no such folder or built-in task; did you mean `circle_packing`?"
            ),
            "{err}"
        );
        assert!(matches!(
            resolve_card(Path::new("best_of_n")),
            Ok(CardArg::Builtin(c)) if c.name == "best_of_n"
        ));
        assert!(matches!(
            resolve_card(Path::new("team/topk@2")),
            Ok(CardArg::Hub(r)) if r.name == "topk"
        ));
        let err = resolve_card(Path::new("best_of_m"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean `best_of_n`?"), "{err}");
    }
}
