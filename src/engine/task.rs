//! A task folder in OpenEvolve format: `initial_program.<ext>` (with
//! EVOLVE-BLOCK markers), `evaluator.py` exposing `evaluate(program_path)`,
//! and a description (`README.md`, `task.md`, `description.txt`, or the
//! `prompt.system_message` of an OpenEvolve `config.yaml`).

use std::path::{Path, PathBuf};

/// Why a task folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("task folder {0} does not exist or is not a folder")]
    NotAFolder(PathBuf),
    #[error(
        "task folder {dir}: no initial program (expected initial_program.py or initial_program.<ext>)"
    )]
    NoInitialProgram { dir: PathBuf },
    #[error("task folder {dir}: no evaluator.py")]
    NoEvaluator { dir: PathBuf },
    #[error("task folder {path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the task tells the prompt about itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskBrief {
    /// Task name (folder name).
    pub name: String,
    /// The task description shown to the model.
    pub description: String,
    /// Language of the evolved program (fence tag), e.g. `python`.
    pub language: String,
    /// Evaluator time limit in seconds, when known (for the timeout hint).
    pub timeout_secs: Option<f64>,
}

/// A loaded task.
#[derive(Clone, Debug)]
pub struct Task {
    /// Absolute path of the folder.
    pub dir: PathBuf,
    /// Folder name.
    pub name: String,
    /// The initial program's text.
    pub initial_program: String,
    /// File name of the initial program (`initial_program.py`).
    pub program_file: String,
    /// Extension including the dot (`.py`).
    pub suffix: String,
    /// Language tag for fences (`python`).
    pub language: String,
    /// Description shown to the model.
    pub description: String,
    /// Path of `evaluator.py`.
    pub evaluator_path: PathBuf,
}

fn language_for(suffix: &str) -> &'static str {
    match suffix {
        ".py" => "python",
        ".rs" => "rust",
        ".js" => "javascript",
        ".ts" => "typescript",
        ".c" | ".h" => "c",
        ".cpp" | ".cc" => "cpp",
        ".go" => "go",
        ".jl" => "julia",
        ".r" | ".R" => "r",
        ".java" => "java",
        ".txt" | ".md" => "text",
        _ => "",
    }
}

impl Task {
    /// Load and check a task folder.
    pub fn load(dir: &Path) -> Result<Self, TaskError> {
        if !dir.is_dir() {
            return Err(TaskError::NotAFolder(dir.to_path_buf()));
        }
        let dir = dir.canonicalize().map_err(|source| TaskError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| TaskError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        let mut program_file = None;
        let entries = std::fs::read_dir(&dir).map_err(|source| TaskError::Read {
            path: dir.clone(),
            source,
        })?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        if names.iter().any(|n| n == "initial_program.py") {
            program_file = Some("initial_program.py".to_owned());
        } else if let Some(n) = names.iter().find(|n| n.starts_with("initial_program.")) {
            program_file = Some(n.clone());
        }
        let Some(program_file) = program_file else {
            return Err(TaskError::NoInitialProgram { dir });
        };
        let evaluator_path = dir.join("evaluator.py");
        if !evaluator_path.is_file() {
            return Err(TaskError::NoEvaluator { dir });
        }
        let initial_program = read(&dir.join(&program_file))?;
        let suffix = program_file
            .rfind('.')
            .map_or_else(String::new, |i| program_file[i..].to_owned());
        let mut description = String::new();
        for name in ["task.md", "README.md", "description.txt", "description.md"] {
            let p = dir.join(name);
            if p.is_file() {
                description = read(&p)?;
                break;
            }
        }
        if description.trim().is_empty() {
            let cfg = dir.join("config.yaml");
            if cfg.is_file()
                && let Ok(text) = read(&cfg)
            {
                description = openevolve_system_message(&text).unwrap_or_default();
            }
        }
        let name = dir
            .file_name()
            .map_or_else(|| "task".to_owned(), |n| n.to_string_lossy().into_owned());
        if description.trim().is_empty() {
            description =
                format!("Improve the program for the task `{name}` so that it scores higher.");
        }
        Ok(Self {
            language: language_for(&suffix).to_owned(),
            dir,
            name,
            initial_program,
            program_file,
            suffix,
            description: description.trim().to_owned(),
            evaluator_path,
        })
    }

    /// The brief a prompt builder formats.
    pub fn brief(&self, timeout_secs: Option<f64>) -> TaskBrief {
        TaskBrief {
            name: self.name.clone(),
            description: self.description.clone(),
            language: self.language.clone(),
            timeout_secs,
        }
    }
}

/// The `prompt.system_message` of an OpenEvolve `config.yaml`, if any.
pub fn openevolve_system_message(text: &str) -> Option<String> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    value
        .get("prompt")?
        .get("system_message")?
        .as_str()
        .map(str::to_owned)
}
