//! A task's hidden paths: files its evaluator reads and candidates must
//! not (a held-out test set, hidden test cases, reference answers). A task
//! declares them with a `hidden/` folder, or with `hidden:` globs in its
//! `config.yaml` (relative to the task folder, as [`super::glob`] reads
//! them; a glob that names a folder hides all of it). The model never sees them (a hidden description file is not shown),
//! and the evaluator's `galapagos_eval` runs candidates where they cannot be
//! read (see `assets/python/galapagos_eval.py`).

use std::path::{Path, PathBuf};

use super::config::TaskConfig;
use super::glob::Glob;

/// The `config.yaml` key that lists hidden globs.
pub const KEY: &str = "hidden";

/// The folder every file of which is hidden.
pub const FOLDER: &str = "hidden";

/// How many entries of a task folder are looked at, at most, for globs.
const WALK_LIMIT: usize = 200_000;

/// The hidden paths of the task folder `dir` (absolute, each once, sorted;
/// a folder stands for everything in it), or what is wrong with its
/// `hidden:` key.
pub fn hidden_paths(dir: &Path, config: &TaskConfig) -> Result<Vec<PathBuf>, String> {
    let mut found: Vec<PathBuf> = Vec::new();
    let folder = dir.join(FOLDER);
    if folder.is_dir() {
        found.push(folder);
    }
    let globs = globs(config)?;
    if !globs.is_empty() {
        let mut budget = WALK_LIMIT;
        walk(dir, dir, &globs, &mut found, &mut budget);
        if budget == 0 {
            return Err(format!(
                "{}: `{KEY}`: the task folder has more than {WALK_LIMIT} entries to match the globs \
                 against; put the hidden files in a `{FOLDER}/` folder instead",
                source(config)
            ));
        }
        for glob in &globs {
            if !found.iter().any(|p| glob.matches(&rel(dir, p))) {
                return Err(format!(
                    "{}: `{KEY}`: `{}` matches nothing in {}",
                    source(config),
                    glob.as_str(),
                    dir.display()
                ));
            }
        }
    }
    found.sort();
    found.dedup();
    // A path inside a hidden folder is covered by it.
    let covered: Vec<PathBuf> = found
        .iter()
        .filter(|p| found.iter().any(|q| q != *p && p.starts_with(q)))
        .cloned()
        .collect();
    found.retain(|p| !covered.contains(p));
    Ok(found)
}

/// Whether `path` is a hidden path or inside one.
pub fn is_hidden(hidden: &[PathBuf], path: &Path) -> bool {
    hidden.iter().any(|h| path.starts_with(h))
}

fn source(config: &TaskConfig) -> String {
    config
        .file()
        .map_or_else(|| "config.yaml".to_owned(), |f| f.display().to_string())
}

/// The `hidden:` globs (a string or a list of strings), checked.
fn globs(config: &TaskConfig) -> Result<Vec<Glob>, String> {
    let mut out = Vec::new();
    let mut add = |value: &serde_yaml::Value, key: &str| -> Result<(), String> {
        let Some(text) = value.as_str() else {
            return Err(format!(
                "{}: `{key}`: expected a glob (a string), found {}",
                source(config),
                super::config::show(value)
            ));
        };
        // `Glob` refuses a path outside the folder (`/` in front, `..`).
        let glob = Glob::new(text).map_err(|e| format!("{}: `{key}`: {e}", source(config)))?;
        out.push(glob);
        Ok(())
    };
    if let Some(value) = config.get(KEY) {
        match value {
            serde_yaml::Value::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    add(item, &format!("{KEY}[{i}]"))?;
                }
            }
            serde_yaml::Value::Null => {}
            other => add(other, KEY)?,
        }
    }
    Ok(out)
}

/// `path` relative to `dir`, with `/` between names.
fn rel(dir: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Collect under `at` every entry a glob matches (a matched folder is not
/// walked into).
fn walk(dir: &Path, at: &Path, globs: &[Glob], found: &mut Vec<PathBuf>, budget: &mut usize) {
    let Ok(entries) = std::fs::read_dir(at) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let name = rel(dir, &path);
        if globs.iter().any(|g| g.matches(&name)) {
            found.push(path);
        } else if path.is_dir() && !path.is_symlink() {
            walk(dir, &path, globs, found, budget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> TaskConfig {
        TaskConfig::parse(text, Path::new("config.yaml")).unwrap()
    }

    #[test]
    fn globs_and_a_hidden_folder_name_what_candidates_must_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in [
            "hidden/a.txt",
            "data/test_labels.csv",
            "data/train.csv",
            "x/y/answers.json",
            "evaluator.py",
        ] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), "x").unwrap();
        }
        let found = hidden_paths(
            d,
            &config("hidden: ['data/test_*', '**/answers.json', 'hidden/a.txt']\n"),
        )
        .unwrap();
        assert_eq!(
            found,
            vec![
                d.join("data/test_labels.csv"),
                d.join("hidden"),
                d.join("x/y/answers.json")
            ],
            "the folder covers what is in it"
        );
        assert!(
            is_hidden(&found, &d.join("hidden/a.txt"))
                && !is_hidden(&found, &d.join("data/train.csv"))
        );
        assert_eq!(
            hidden_paths(d, &TaskConfig::default()).unwrap(),
            vec![d.join("hidden")]
        );
        let one = hidden_paths(d, &config("hidden: data\n")).unwrap();
        assert!(one.contains(&d.join("data")), "{one:?}");
        for (bad, says) in [
            ("hidden: ['../etc/passwd']\n", "leaves the program's folder"),
            ("hidden: ['/etc']\n", "drop the leading /"),
            ("hidden: [3]\n", "expected a glob"),
            ("hidden: ['nothing_*']\n", "matches nothing"),
        ] {
            let err = hidden_paths(d, &config(bad)).unwrap_err();
            assert!(
                err.contains("config.yaml") && err.contains(says),
                "{bad}: {err}"
            );
        }
    }
}
