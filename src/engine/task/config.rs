//! A task folder's OpenEvolve `config.yaml`: read once, as written, into its
//! keys (dotted paths) and values. Which keys mean something here, and what,
//! is the table in [`crate::engine::task_settings`], which maps them onto a
//! run.
//!
//! Which file: `config.yaml` (or `.yml`) in the task folder; without one, the
//! only `config*.yaml` there (OpenEvolve's examples also ship
//! `config_phase_1.yaml` and the like, passed to it with `--config`). With
//! several candidates none is read unless one is named
//! ([`TaskConfig::load_named`]); the run's output says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::engine::params::ParamValue;

/// A `config.yaml` that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{col}: not valid YAML: {message}")]
    Yaml {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
    },
    #[error("{path}: the top level must be a mapping of settings")]
    NotAMapping { path: PathBuf },
    #[error("{0}: the config file named does not exist")]
    Missing(PathBuf),
    /// The file is not one a task folder may hand us (see
    /// [`crate::engine::foreign`]).
    #[error(transparent)]
    Refused(#[from] crate::engine::foreign::Refused),
}

/// A task's config file as written: its keys (dotted paths to leaves, in
/// file order) and values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskConfig {
    file: Option<PathBuf>,
    /// Every leaf, in the order of the file.
    values: Vec<(String, serde_yaml::Value)>,
    /// Config files found when none was read because there were several.
    candidates: Vec<String>,
}

impl TaskConfig {
    /// The config of the task folder `dir` (see the module docs for which
    /// file); empty without one.
    pub fn load(dir: &Path) -> Result<Self, ConfigError> {
        use crate::engine::foreign::{EntryKind, Folder, Links};
        let folder = Folder::open(dir, Links::Inside)?;
        for name in ["config.yaml", "config.yml"] {
            if !matches!(folder.kind(name)?, None | Some(EntryKind::Dir)) {
                return Self::read_in(&folder, name);
            }
        }
        let mut candidates: Vec<String> = folder
            .entries("")?
            .into_iter()
            .filter(|e| matches!(e.kind, EntryKind::File | EntryKind::Link))
            .filter_map(|e| e.name.into_string().ok())
            .filter(|n| n.starts_with("config") && (n.ends_with(".yaml") || n.ends_with(".yml")))
            .collect();
        candidates.sort();
        match candidates.as_slice() {
            [only] => Self::read_in(&folder, only),
            _ => Ok(Self {
                candidates,
                ..Self::default()
            }),
        }
    }

    /// The config file `name` (relative to the task folder `dir`, and then
    /// inside it, or absolute: a file a person named).
    pub fn load_named(dir: &Path, name: &Path) -> Result<Self, ConfigError> {
        let path = if name.is_absolute() {
            name.to_path_buf()
        } else {
            dir.join(name)
        };
        if !path.is_file() {
            return Err(ConfigError::Missing(path));
        }
        if name.is_absolute() {
            return Self::read(&path);
        }
        let folder =
            crate::engine::foreign::Folder::open(dir, crate::engine::foreign::Links::Inside)?;
        Self::read_in(&folder, name)
    }

    /// Parse the file `name` of the task folder `folder`.
    fn read_in(
        folder: &crate::engine::foreign::Folder,
        name: impl AsRef<Path>,
    ) -> Result<Self, ConfigError> {
        let text = folder.read_text(name.as_ref(), crate::engine::foreign::Limit::TASK_CONFIG)?;
        Self::parse(&text, &folder.path_of(name))
    }

    /// Parse the file at `path` (a file a person named).
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = crate::engine::foreign::read_named_text(
            path,
            crate::engine::foreign::Limit::TASK_CONFIG,
        )?;
        Self::parse(&text, path)
    }

    /// Parse `text`, the contents of `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| {
            let (line, col) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            let mut message = e.to_string();
            if let Some(i) = message.find(" at line ") {
                message.truncate(i);
            }
            ConfigError::Yaml {
                path: path.to_path_buf(),
                line,
                col,
                message,
            }
        })?;
        let mut values = Vec::new();
        match value {
            serde_yaml::Value::Null => {}
            serde_yaml::Value::Mapping(map) => flatten("", &map, &mut values),
            _ => {
                return Err(ConfigError::NotAMapping {
                    path: path.to_path_buf(),
                });
            }
        }
        Ok(Self {
            file: Some(path.to_path_buf()),
            values,
            candidates: Vec::new(),
        })
    }

    /// The file read, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The config files found when none was read because there were
    /// several (pick one with `--config`).
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// Every key and its value, in file order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &serde_yaml::Value)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `key`, when set (a `null` counts as not set).
    pub fn get(&self, key: &str) -> Option<&serde_yaml::Value> {
        self.values
            .iter()
            .find(|(k, v)| k == key && !v.is_null())
            .map(|(_, v)| v)
    }

    fn text(&self, key: &str) -> Option<String> {
        self.get(key)
            .and_then(serde_yaml::Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }

    /// `prompt.system_message`, when set to text. OpenEvolve's own default
    /// names its built-in template (`system_message`); that is not the
    /// task's message.
    pub fn system_message(&self) -> Option<String> {
        self.text("prompt.system_message")
            .filter(|m| m != "system_message")
    }

    /// `fitness_metric`: the metric the task names as its fitness.
    pub fn fitness_metric(&self) -> Option<String> {
        self.text("fitness_metric")
    }

    /// `best_known`: the best value published for the task's `value`
    /// metric (`best_known.value`), whether higher or lower is better
    /// (`best_known.direction`: `max` or `min`) and where it was published
    /// (`best_known.source`). `None` unless the value is a finite number
    /// and the direction is `max` or `min`.
    pub fn best_known(&self) -> Option<BestKnown> {
        let value = self
            .get("best_known.value")?
            .as_f64()
            .filter(|v| v.is_finite())?;
        let higher_is_better = match self.text("best_known.direction")?.as_str() {
            "max" => true,
            "min" => false,
            _ => return None,
        };
        Some(BestKnown {
            value,
            higher_is_better,
            source: self.text("best_known.source").unwrap_or_default(),
        })
    }

    /// `language`, the program's fence tag.
    pub fn language(&self) -> Option<String> {
        self.text("language")
    }

    /// `file_suffix`, with its dot.
    pub fn file_suffix(&self) -> Option<String> {
        self.text("file_suffix").map(|s| {
            if s.starts_with('.') {
                s
            } else {
                format!(".{s}")
            }
        })
    }
}

/// A task's best known value (its config's `best_known`): what the shipped
/// mathematical tasks' `combined_score` is normalised by.
#[derive(Clone, Debug, PartialEq)]
pub struct BestKnown {
    /// The best value published for the task's `value` metric.
    pub value: f64,
    /// Whether a higher `value` is better (`direction: max`).
    pub higher_is_better: bool,
    /// Where it was published.
    pub source: String,
}

/// Leaves of `map` (mappings are walked; anything else, lists included, is a
/// leaf) as `prefix.key` paths.
fn flatten(prefix: &str, map: &serde_yaml::Mapping, out: &mut Vec<(String, serde_yaml::Value)>) {
    for (key, value) in map {
        let key = match key {
            serde_yaml::Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
        };
        let path = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            serde_yaml::Value::Mapping(inner) if !inner.is_empty() => {
                flatten(&path, inner, out);
            }
            _ => out.push((path, value.clone())),
        }
    }
}

/// A YAML leaf as a card parameter value (`None` for a mapping, or a list
/// holding one).
pub fn param_value(value: &serde_yaml::Value) -> Option<ParamValue> {
    Some(match value {
        serde_yaml::Value::Null => ParamValue::Null,
        serde_yaml::Value::Bool(b) => ParamValue::Bool(*b),
        serde_yaml::Value::Number(n) => match n.as_i64() {
            Some(i) => ParamValue::Int(i),
            None => ParamValue::Float(n.as_f64()?),
        },
        serde_yaml::Value::String(s) => ParamValue::Str(s.clone()),
        serde_yaml::Value::Sequence(items) => {
            ParamValue::List(items.iter().map(param_value).collect::<Option<_>>()?)
        }
        serde_yaml::Value::Mapping(_) | serde_yaml::Value::Tagged(_) => return None,
    })
}

/// A YAML leaf for messages (one line).
pub fn show(value: &serde_yaml::Value) -> String {
    match value {
        serde_yaml::Value::String(s) => {
            let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() > 60 {
                let head: String = one_line.chars().take(57).collect();
                format!("\"{head}...\" ({} characters)", s.chars().count())
            } else {
                format!("\"{one_line}\"")
            }
        }
        serde_yaml::Value::Sequence(items) => {
            format!(
                "[{}]",
                items.iter().map(show).collect::<Vec<_>>().join(", ")
            )
        }
        other => serde_yaml::to_string(other)
            .map(|s| s.trim().replace('\n', " "))
            .unwrap_or_default(),
    }
}

/// Group dotted keys by their first component for a compact listing:
/// `database.population_size, database.similarity_threshold` becomes
/// `database.{population_size, similarity_threshold}`.
pub fn compact(keys: &[&str]) -> String {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for key in keys {
        let (head, rest) = key.split_once('.').unwrap_or((key, ""));
        if !groups.contains_key(head) {
            order.push(head);
        }
        groups.entry(head).or_default().push(rest);
    }
    order
        .iter()
        .map(|head| {
            let rest: Vec<&str> = groups[head]
                .iter()
                .copied()
                .filter(|r| !r.is_empty())
                .collect();
            match rest.as_slice() {
                [] => (*head).to_owned(),
                [one] => format!("{head}.{one}"),
                many => format!("{head}.{{{}}}", many.join(", ")),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENEVOLVE: &str = "max_iterations: 10\ncheckpoint_interval: 5\nllm:\n  primary_model: m\n  api_base: https://x\n  temperature: 0.7\n  max_tokens: 16000\nprompt:\n  system_message: \"You minimise.\"\ndatabase:\n  population_size: 50\n  similarity_threshold: 0.99\nevaluator:\n  timeout: 60\n  cascade_thresholds: [1.3]\ndiff_based_evolution: true\n";

    #[test]
    fn keys_are_read_in_file_order_and_sorted_into_meanings() {
        let c = TaskConfig::parse(OPENEVOLVE, Path::new("config.yaml"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.system_message().as_deref(), Some("You minimise."));
        assert_eq!(
            c.get("evaluator.cascade_thresholds").and_then(param_value),
            Some(ParamValue::List(vec![ParamValue::Float(1.3)]))
        );
        let keys: Vec<&str> = c.entries().map(|(k, _)| k).collect();
        assert_eq!(
            keys[..3],
            ["max_iterations", "checkpoint_interval", "llm.primary_model"]
        );
        assert_eq!(keys.len(), 12);
        assert_eq!(
            compact(&["checkpoint_interval", "database.a", "database.b", "x.y"]),
            "checkpoint_interval, database.{a, b}, x.y"
        );
    }

    #[test]
    fn best_known_needs_a_finite_value_and_a_direction() {
        let read = |text: &str| {
            TaskConfig::parse(text, Path::new("config.yaml"))
                .unwrap_or_else(|e| panic!("{e}"))
                .best_known()
        };
        assert_eq!(
            read("best_known:\n  value: 1.5\n  direction: min\n  source: a paper\n"),
            Some(BestKnown {
                value: 1.5,
                higher_is_better: false,
                source: "a paper".into()
            })
        );
        assert!(
            read("best_known:\n  value: 2\n  direction: max\n").is_some_and(|b| b.higher_is_better)
        );
        assert_eq!(read("best_known:\n  value: 1.5\n"), None);
        assert_eq!(read("best_known:\n  value: .nan\n  direction: max\n"), None);
        assert_eq!(read("best_known:\n  value: 1\n  direction: up\n"), None);
    }

    #[test]
    fn bad_yaml_names_the_file_and_line() {
        let e = TaskConfig::parse("a: 1\n b: [\n", Path::new("/t/config.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/t/config.yaml:"), "{e}");
        assert!(e.contains("not valid YAML"), "{e}");
        let e = TaskConfig::parse("- 1\n", Path::new("/t/config.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be a mapping"), "{e}");
    }

    #[test]
    fn which_file_is_read() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let write = |n: &str| {
            std::fs::write(dir.path().join(n), "max_iterations: 1\n")
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert!(
            TaskConfig::load(dir.path())
                .unwrap_or_default()
                .file()
                .is_none()
        );
        write("config_phase_1.yaml");
        let one = TaskConfig::load(dir.path()).unwrap_or_default();
        assert!(
            one.file()
                .is_some_and(|f| f.ends_with("config_phase_1.yaml"))
        );
        write("config_phase_2.yaml");
        let two = TaskConfig::load(dir.path()).unwrap_or_default();
        assert!(two.file().is_none());
        assert_eq!(
            two.candidates(),
            ["config_phase_1.yaml", "config_phase_2.yaml"]
        );
        let named = TaskConfig::load_named(dir.path(), Path::new("config_phase_2.yaml"))
            .unwrap_or_default();
        assert!(
            named
                .file()
                .is_some_and(|f| f.ends_with("config_phase_2.yaml"))
        );
        write("config.yaml");
        assert!(
            TaskConfig::load(dir.path())
                .unwrap_or_default()
                .file()
                .is_some_and(|f| f.ends_with("config.yaml"))
        );
    }
}
