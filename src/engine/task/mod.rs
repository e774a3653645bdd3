//! A task folder: the program to evolve, the evaluator that scores it, and
//! what the model is told about it. Two layouts are read as their own tools
//! write them:
//!
//! - **OpenEvolve**: `initial_program.<ext>` and `evaluator.py` exposing
//!   `evaluate(program_path)`, with an optional `config.yaml` (its
//!   `prompt.system_message`, evaluator timeout, cascade and the other
//!   settings that mean something here are mapped onto the run, see
//!   [`crate::engine::task_settings`]).
//! - **ShinkaEvolve**: `initial.<ext>` and `evaluate.py`, run as
//!   `python evaluate.py --program_path P --results_dir D`, which writes
//!   `metrics.json` and `correct.json`; the author's system message is the
//!   `task_sys_msg` its `run_evo.py` passes (see [`run_evo`]).
//!
//! A folder with an initial program and no evaluator file is a task for a
//! card whose evaluator is a command (`evaluator: {kind: command, argv:
//! [...]}`). The initial program is one file, as in both tools, or a folder
//! (`initial_program/`, `initial/`): a repository task, whose `config.yaml`
//! says which files may change (see [`program_folder`]); the evaluator then gets the
//! candidate's folder as its program path.

pub mod config;
pub mod glob;
pub mod hidden;
pub mod program_folder;
pub mod run_evo;

use std::path::{Path, PathBuf};

use crate::engine::foreign::{EntryKind, Folder, Limit, Links};
use crate::engine::text::markers::{Marker, marker_kind};

pub use config::{ConfigError, TaskConfig};

/// Why a task folder cannot be used. Every message names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("task folder {0} does not exist or is not a folder")]
    NotAFolder(PathBuf),
    #[error(
        "task folder {dir}: no initial program (expected initial_program.<ext>, as OpenEvolve names it, \
         or initial.<ext>, as ShinkaEvolve does)"
    )]
    NoInitialProgram { dir: PathBuf },
    #[error(transparent)]
    Files(#[from] program_folder::FilesError),
    #[error(
        "task folder {dir}: no evaluator (expected evaluator.py with evaluate(program_path), as OpenEvolve \
         has it, or evaluate.py taking --program_path and --results_dir, as ShinkaEvolve has it; or run it \
         with a card whose evaluator is {{kind: command, argv: [...]}})"
    )]
    NoEvaluator { dir: PathBuf },
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A file of the folder refused (see [`crate::engine::foreign`]).
    #[error(transparent)]
    Refused(#[from] crate::engine::foreign::Refused),
    /// The task's hidden paths are declared wrong, or cover what the model
    /// or the run must see.
    #[error("task folder {dir}: hidden paths: {reason}")]
    Hidden { dir: PathBuf, reason: String },
}

/// Which tool's layout a task folder follows (detected from its files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskKind {
    /// `initial_program.<ext>` + `evaluator.py` with `evaluate(program_path)`.
    #[default]
    OpenEvolve,
    /// `initial.<ext>` + `evaluate.py` run as a command.
    ShinkaEvolve,
    /// An initial program and no evaluator file: the card's command
    /// evaluator scores it.
    ProgramOnly,
}

impl TaskKind {
    /// One line for the run's output.
    pub fn describe(self) -> &'static str {
        match self {
            Self::OpenEvolve => "OpenEvolve layout (evaluator.py with evaluate(program_path))",
            Self::ShinkaEvolve => {
                "ShinkaEvolve layout (evaluate.py run as a command with --program_path and --results_dir, \
                 reporting metrics.json and correct.json)"
            }
            Self::ProgramOnly => {
                "a program without an evaluator file (scored by the card's command evaluator)"
            }
        }
    }
}

/// The EVOLVE-BLOCK markers of the initial program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Markers {
    /// This many regions, each a START followed by its END.
    Regions(usize),
    /// No marker at all: every line may be edited.
    #[default]
    Missing,
    /// STARTs and ENDs that do not pair up.
    Unbalanced {
        starts: usize,
        ends: usize,
        /// 1-based line of the first marker out of place.
        line: usize,
    },
}

impl Markers {
    /// Check `program`'s markers.
    pub fn of(program: &str) -> Self {
        let (mut starts, mut ends, mut open, mut bad_line) = (0usize, 0usize, None, None);
        for (i, line) in program.lines().enumerate() {
            match marker_kind(line) {
                Some(Marker::Start) => {
                    starts += 1;
                    if open.is_some() {
                        bad_line.get_or_insert(i + 1);
                    }
                    open = Some(i + 1);
                }
                Some(Marker::End) => {
                    ends += 1;
                    if open.is_none() {
                        bad_line.get_or_insert(i + 1);
                    }
                    open = None;
                }
                None => {}
            }
        }
        if starts == 0 && ends == 0 {
            return Self::Missing;
        }
        match bad_line.or(open) {
            None => Self::Regions(starts),
            Some(line) => Self::Unbalanced { starts, ends, line },
        }
    }

    /// The warning for `file`, when the markers deserve one.
    pub fn warning(&self, file: &str) -> Option<String> {
        match self {
            Self::Regions(_) => None,
            Self::Missing => Some(format!(
                "{file} has no EVOLVE-BLOCK-START / EVOLVE-BLOCK-END markers: the whole file may be edited. \
                 Put the markers around the code to evolve to keep the rest fixed"
            )),
            Self::Unbalanced { starts, ends, line } => Some(format!(
                "{file}: unbalanced EVOLVE-BLOCK markers ({starts} START, {ends} END; the first out of place \
                 is at line {line}). Edits are limited to what the markers enclose (an unclosed START runs to \
                 the end of the file, an END without a START is ignored); pair each START with an END"
            )),
        }
    }
}

/// What the task tells the prompt about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskBrief {
    /// Task name (folder name).
    pub name: String,
    /// The task description shown to the model as context (empty when the
    /// task's own system message describes it).
    pub description: String,
    /// Language of the evolved program (fence tag), e.g. `python`.
    pub language: String,
    /// Evaluator time limit in seconds, when known (for the timeout hint).
    pub timeout_secs: Option<f64>,
    /// The metric the model is asked to raise (`combined_score`, or the one
    /// the task names as its fitness).
    pub fitness: String,
    /// The initial program's EVOLVE-BLOCK markers (the instructions say
    /// which lines may change).
    pub markers: Markers,
    /// A repository task's files: which may change and which are context
    /// (`None` for a single-file task).
    pub files: Option<program_folder::ProgramFiles>,
    /// The objectives of a multi-objective search (the card's
    /// `general.objectives`); empty for a single fitness.
    pub objectives: Vec<crate::engine::genome::Objective>,
}

impl Default for TaskBrief {
    /// No name or description, the fitness `combined_score`, one marked
    /// region.
    fn default() -> Self {
        Self {
            name: String::new(),
            description: String::new(),
            language: String::new(),
            timeout_secs: None,
            fitness: crate::engine::genome::FITNESS_KEY.to_owned(),
            markers: Markers::Regions(1),
            files: None,
            objectives: Vec::new(),
        }
    }
}

/// A loaded task.
#[derive(Clone, Debug, Default)]
pub struct Task {
    /// Absolute path of the folder.
    pub dir: PathBuf,
    /// Folder name.
    pub name: String,
    /// The layout the folder follows.
    pub kind: TaskKind,
    /// The initial program: one file's text, or a folder of files.
    pub initial_program: crate::engine::tree::Tree,
    /// File name of the initial program (`initial_program.py`).
    pub program_file: String,
    /// Extension including the dot (`.py`); candidates' files get it.
    pub suffix: String,
    /// Language tag for fences (`python`).
    pub language: String,
    /// Context shown to the model in the user message (the README), or
    /// empty when the task's own system message describes it.
    pub description: String,
    /// Where `description` came from (`README.md`), when it came from a file.
    pub description_source: Option<String>,
    /// The task author's system message (`prompt.system_message` of
    /// `config.yaml`; in a ShinkaEvolve folder without one, the
    /// `task_sys_msg` its `run_evo.py` passes).
    pub system_message: Option<String>,
    /// Where `system_message` came from, for the output
    /// (`config.yaml's prompt.system_message`).
    pub system_message_source: Option<String>,
    /// Why a message the task has was not used (`run_evo.py` builds its
    /// `task_sys_msg` at run time), for the output.
    pub system_message_note: Option<String>,
    /// The evaluator file (`evaluator.py`, `evaluate.py`); a path that does
    /// not exist for [`TaskKind::ProgramOnly`].
    pub evaluator_path: PathBuf,
    /// The settings of the folder's `config.yaml` (empty without one).
    pub config: TaskConfig,
    /// The initial program's EVOLVE-BLOCK markers.
    pub markers: Markers,
    /// A repository task's files: which may change and which the model is
    /// shown (`None` for a single-file task).
    pub files: Option<program_folder::ProgramFiles>,
    /// The objectives of a multi-objective search, with their directions and
    /// reference point: the card's `general.objectives`, set when a run is
    /// built (empty: one fitness).
    pub objectives: Vec<crate::engine::genome::Objective>,
}

/// File names read as the task description, in order.
const DESCRIPTION_FILES: [&str; 4] = ["task.md", "README.md", "description.txt", "description.md"];

/// ShinkaEvolve's order of preference among `initial.<ext>` files.
const SHINKA_EXTENSIONS: [&str; 15] = [
    ".py", ".go", ".sv", ".jl", ".rs", ".cpp", ".cc", ".cxx", ".cu", ".swift", ".json", ".f90",
    ".f95", ".f03", ".f08",
];

fn language_for(suffix: &str) -> &'static str {
    match suffix {
        ".py" => "python",
        ".rs" => "rust",
        ".js" => "javascript",
        ".ts" => "typescript",
        ".c" | ".h" => "c",
        ".cpp" | ".cc" | ".cxx" => "cpp",
        ".cu" => "cuda",
        ".go" => "go",
        ".jl" => "julia",
        ".r" | ".R" => "r",
        ".java" => "java",
        ".swift" => "swift",
        ".sv" => "verilog",
        ".f90" | ".f95" | ".f03" | ".f08" => "fortran",
        ".wl" => "wolfram",
        ".json" => "json",
        ".txt" | ".md" => "text",
        _ => "",
    }
}

/// The initial program among `names` (sorted): `initial_program.py`, else
/// the first `initial_program.<ext>`, else ShinkaEvolve's `initial.<ext>` by
/// its preference order. Also a bare `initial_program` / `initial` entry, so
/// that a folder of that name is reported as one.
fn find_program(names: &[String]) -> Option<&String> {
    let by = |f: &dyn Fn(&str) -> bool| names.iter().find(|n| f(n));
    by(&|n| n == "initial_program.py")
        .or_else(|| by(&|n| n.starts_with("initial_program.")))
        .or_else(|| by(&|n| n == "initial_program"))
        .or_else(|| {
            SHINKA_EXTENSIONS
                .iter()
                .find_map(|ext| by(&|n| n.strip_prefix("initial") == Some(ext)))
        })
        .or_else(|| by(&|n| n.starts_with("initial.")))
        .or_else(|| by(&|n| n == "initial"))
}

impl Task {
    /// Load and check a task folder: which layout it follows, its initial
    /// program (one file), its evaluator, its `config.yaml` and its
    /// description. A folder with an initial program and no evaluator loads
    /// as [`TaskKind::ProgramOnly`]; see [`Task::require_evaluator_file`].
    pub fn load(dir: &Path) -> Result<Self, TaskError> {
        Self::load_with(dir, None)
    }

    /// [`Task::load`], reading the config file `config` (relative to the
    /// folder, or absolute) instead of the one found in the folder.
    pub fn load_with(dir: &Path, config: Option<&Path>) -> Result<Self, TaskError> {
        if !dir.is_dir() {
            return Err(TaskError::NotAFolder(dir.to_path_buf()));
        }
        let dir = dir.canonicalize().map_err(|source| TaskError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        // A task folder comes from elsewhere: its files are read through
        // the rules of `foreign` (inside the folder, regular, capped).
        let folder = Folder::open(&dir, Links::Inside)?;
        let read = |name: &str, limit: Limit| folder.read_text(name, limit);
        let mut names: Vec<String> = folder
            .entries("")?
            .into_iter()
            .filter_map(|e| e.name.into_string().ok())
            .collect();
        names.sort();
        let Some(program_file) = find_program(&names).cloned() else {
            return Err(TaskError::NoInitialProgram { dir });
        };
        let program_path = dir.join(&program_file);
        let shinka_named = !program_file.starts_with("initial_program");
        let has = |n: &str| dir.join(n).is_file();
        let (kind, evaluator_file) = match (has("evaluator.py"), has("evaluate.py")) {
            (true, true) if shinka_named => (TaskKind::ShinkaEvolve, "evaluate.py"),
            (true, _) => (TaskKind::OpenEvolve, "evaluator.py"),
            (false, true) => (TaskKind::ShinkaEvolve, "evaluate.py"),
            (false, false) => (TaskKind::ProgramOnly, "evaluator.py"),
        };
        let config = match config {
            Some(name) => TaskConfig::load_named(&dir, name)?,
            None => TaskConfig::load(&dir)?,
        };
        let hidden = hidden::hidden_paths(&dir, &config).map_err(|reason| TaskError::Hidden {
            dir: dir.clone(),
            reason,
        })?;
        if hidden::is_hidden(&hidden, &program_path) {
            return Err(TaskError::Hidden {
                dir: dir.clone(),
                reason: format!(
                    "the initial program {} is among them, but the model is shown it",
                    program_path.display()
                ),
            });
        }
        // a link that leads out of the folder is refused here, by name
        let program_kind = folder.target_kind(&program_file)?;
        let (initial_program, program_files, markers, program_suffix) =
            if program_kind == Some(EntryKind::Dir) {
                let (tree, files) = program_folder::load(&program_path, &config)?;
                // the language of the editable files, when they share one
                let suffixes: std::collections::BTreeSet<String> = files
                    .editable
                    .iter()
                    .filter_map(|p| p.rfind('.').map(|i| p[i..].to_owned()))
                    .collect();
                let suffix = match suffixes.len() {
                    1 => suffixes.into_iter().next().unwrap_or_default(),
                    _ => String::new(),
                };
                let markers = files.markers.clone();
                (tree, Some(files), markers, suffix)
            } else {
                let text = read(&program_file, Limit::PROGRAM_FILE)?;
                let markers = Markers::of(&text);
                let suffix = program_file
                    .rfind('.')
                    .map_or_else(String::new, |i| program_file[i..].to_owned());
                (
                    crate::engine::tree::Tree::single(&program_file, text),
                    None,
                    markers,
                    suffix,
                )
            };
        let mut suffix = program_suffix;
        if let Some(s) = config.file_suffix() {
            suffix = s;
        }
        let language = config
            .language()
            .unwrap_or_else(|| language_for(&suffix).to_owned());
        let name = dir
            .file_name()
            .map_or_else(|| "task".to_owned(), |n| n.to_string_lossy().into_owned());
        let config_name = config
            .file()
            .map_or_else(|| "config.yaml".to_owned(), display_name);
        let mut system_message = config.system_message();
        let mut system_message_source = system_message
            .as_ref()
            .map(|_| format!("{config_name}'s prompt.system_message"));
        let mut system_message_note = None;
        if system_message.is_none() && kind == TaskKind::ShinkaEvolve && has("run_evo.py") {
            // ShinkaEvolve's runner passes the author's message as
            // `task_sys_msg`; it never reads the README.
            match run_evo::task_sys_msg(&read("run_evo.py", Limit::SCRIPT)?) {
                run_evo::RunEvoMessage::Text(text) if !text.trim().is_empty() => {
                    system_message = Some(text.trim().to_owned());
                    system_message_source = Some("run_evo.py's task_sys_msg".to_owned());
                }
                run_evo::RunEvoMessage::Computed => {
                    system_message_note = Some(
                        "run_evo.py builds its task_sys_msg when it runs (not read here)"
                            .to_owned(),
                    );
                }
                _ => {}
            }
        }
        // The task's system message describes it (OpenEvolve never reads
        // a README); without one, a description file is the context.
        let (mut description, mut description_source) = (String::new(), None);
        if system_message.is_none() {
            for file in DESCRIPTION_FILES {
                let p = dir.join(file);
                // A hidden file is never shown to the model; one that is
                // there is read by the rules (a link out of the folder, a
                // FIFO, an oversize file are refused, naming it).
                let there = !matches!(folder.kind(file)?, None | Some(EntryKind::Dir));
                if there && !hidden::is_hidden(&hidden, &p) {
                    let text = read(file, Limit::DESCRIPTION)?;
                    if !text.trim().is_empty() {
                        description = text.trim().to_owned();
                        description_source = Some(file.to_owned());
                        break;
                    }
                }
            }
        }
        if system_message.is_none() && description.is_empty() {
            description =
                format!("Improve the program for the task `{name}` so that it scores higher.");
        }
        Ok(Self {
            markers,
            initial_program,
            files: program_files,
            objectives: Vec::new(),
            language,
            kind,
            evaluator_path: dir.join(evaluator_file),
            dir,
            name,
            program_file,
            suffix,
            description,
            description_source,
            system_message,
            system_message_source,
            system_message_note,
            config,
        })
    }

    /// Which paths of the program may change (for a single-file task: its
    /// file, and nothing may be added or deleted).
    pub fn edit_rules(&self) -> program_folder::EditRules {
        match &self.files {
            Some(f) => f.rules.clone(),
            None => program_folder::EditRules::single(&self.program_file),
        }
    }

    /// Refuse a folder without an evaluator file (for an evaluator that
    /// runs the task's own).
    pub fn require_evaluator_file(&self) -> Result<(), TaskError> {
        if self.kind == TaskKind::ProgramOnly {
            Err(TaskError::NoEvaluator {
                dir: self.dir.clone(),
            })
        } else {
            Ok(())
        }
    }

    /// What the run's output says about the task: its layout, where its
    /// description comes from, and its warnings.
    pub fn notices(&self) -> Vec<String> {
        let mut out = vec![format!(
            "task {}: {} in {}",
            self.name,
            self.kind.describe(),
            self.dir.display()
        )];
        let config = self
            .config
            .file()
            .map_or_else(|| "config.yaml".to_owned(), display_name);
        match (&self.system_message, &self.description_source) {
            (Some(_), _) => {
                let unread: Vec<&str> = DESCRIPTION_FILES
                    .iter()
                    .copied()
                    .filter(|f| self.dir.join(f).is_file())
                    .collect();
                let source = self
                    .system_message_source
                    .clone()
                    .unwrap_or_else(|| format!("{config}'s prompt.system_message"));
                let mut line = format!("system prompt: {source} (the task author's)");
                if !unread.is_empty() {
                    let tool = if self.kind == TaskKind::ShinkaEvolve {
                        "ShinkaEvolve"
                    } else {
                        "OpenEvolve"
                    };
                    line.push_str(&format!(
                        "; {} not shown to the model ({tool} never reads it)",
                        unread.join(", ")
                    ));
                }
                out.push(line);
            }
            (None, Some(source)) => out.push(format!(
                "task description: {source}, shown to the model as context ({})",
                if let Some(note) = &self.system_message_note {
                    note.clone()
                } else if self.config.file().is_some() {
                    format!("{config} has no prompt.system_message")
                } else if self.kind == TaskKind::ShinkaEvolve {
                    "no config file with a system message and no task_sys_msg in run_evo.py".to_owned()
                } else {
                    "no config file with a system message was read".to_owned()
                }
            )),
            (None, None) => out.push(format!(
                "task description: none found (no {}, no config.yaml system message); the model is only told \
                 to improve the program",
                DESCRIPTION_FILES.join(", ")
            )),
        }
        if let Some(files) = &self.files {
            out.extend(files.describe(&self.program_file, &self.initial_program));
        }
        out
    }

    /// Warnings about the task folder (markers, a config left unread), one
    /// line each.
    pub fn warnings(&self) -> Vec<String> {
        // a repository task's markers are checked per file when it loads
        let mut out: Vec<String> = if self.files.is_some() {
            Vec::new()
        } else {
            self.markers
                .warning(&self.program_file)
                .into_iter()
                .collect()
        };
        if !self.config.candidates().is_empty() {
            out.push(format!(
                "several config files ({}): none is read; name one with --config FILE",
                self.config.candidates().join(", ")
            ));
        }
        out
    }

    /// The task's text for readers other than the prompt (a memory that
    /// summarises progress): the description, else the system message.
    pub fn summary_text(&self) -> &str {
        if self.description.is_empty() {
            self.system_message.as_deref().unwrap_or_default()
        } else {
            &self.description
        }
    }

    /// The brief a prompt builder formats.
    pub fn brief(&self, timeout_secs: Option<f64>) -> TaskBrief {
        TaskBrief {
            name: self.name.clone(),
            description: self.description.clone(),
            language: self.language.clone(),
            timeout_secs,
            fitness: self
                .config
                .fitness_metric()
                .unwrap_or_else(|| crate::engine::genome::FITNESS_KEY.to_owned()),
            markers: self.markers.clone(),
            files: self.files.clone(),
            objectives: self.objectives.clone(),
        }
    }
}

/// The last component of `path`, for messages.
fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (name, text) in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
        }
        dir
    }

    const PROGRAM: &str = "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n";

    #[test]
    fn markers_are_checked() {
        assert_eq!(Markers::of(PROGRAM), Markers::Regions(1));
        assert_eq!(Markers::of("x = 1\n"), Markers::Missing);
        assert_eq!(
            Markers::of("# EVOLVE-BLOCK-START\nx = 1\n"),
            Markers::Unbalanced {
                starts: 1,
                ends: 0,
                line: 1
            }
        );
        assert_eq!(
            Markers::of("x\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\ny\n# EVOLVE-BLOCK-END\n"),
            Markers::Unbalanced {
                starts: 1,
                ends: 2,
                line: 2
            }
        );
        let w = Markers::Missing
            .warning("initial_program.py")
            .unwrap_or_default();
        assert!(w.contains("initial_program.py has no EVOLVE-BLOCK"), "{w}");
        assert!(Markers::Regions(2).warning("p").is_none());
    }

    #[test]
    fn layouts_are_detected() {
        let oe = folder(&[("initial_program.py", PROGRAM), ("evaluator.py", "")]);
        let t = Task::load(oe.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.kind, TaskKind::OpenEvolve);
        assert!(t.evaluator_path.ends_with("evaluator.py"));
        let shinka = folder(&[("initial.go", PROGRAM), ("evaluate.py", "")]);
        let t = Task::load(shinka.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.kind, TaskKind::ShinkaEvolve);
        assert_eq!((t.suffix.as_str(), t.language.as_str()), (".go", "go"));
        assert!(t.evaluator_path.ends_with("evaluate.py"));
        assert!(t.notices()[0].contains("ShinkaEvolve layout"));
        let bare = folder(&[("initial_program.rs", PROGRAM)]);
        let t = Task::load(bare.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.kind, TaskKind::ProgramOnly);
        let e = t.require_evaluator_file().unwrap_err().to_string();
        assert!(
            e.contains("no evaluator") && e.contains("kind: command"),
            "{e}"
        );
    }

    #[test]
    fn a_folder_shaped_program_is_a_repository_task() {
        let dir = folder(&[("initial_program/main.py", PROGRAM), ("evaluator.py", "")]);
        let t = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!t.initial_program.is_single());
        assert_eq!(t.initial_program.text_of("main.py"), Some(PROGRAM));
        assert_eq!(
            t.files.as_ref().map(|f| f.editable.clone()),
            Some(vec!["main.py".to_owned()])
        );
        assert_eq!((t.suffix.as_str(), t.language.as_str()), (".py", "python"));
        let unmarked = folder(&[("initial/lib/a.py", "x = 1\n"), ("evaluate.py", "")]);
        let e = Task::load(unmarked.path()).unwrap_err().to_string();
        assert!(
            e.contains("no editable file") && e.contains("EVOLVE-BLOCK"),
            "{e}"
        );
        let none = folder(&[("evaluator.py", "")]);
        let e = Task::load(none.path()).unwrap_err().to_string();
        assert!(
            e.contains("no initial program") && e.contains("initial.<ext>"),
            "{e}"
        );
    }

    #[test]
    fn a_shinka_folder_takes_its_message_from_run_evo() {
        let files = |run_evo: &'static str| {
            folder(&[
                ("initial.py", PROGRAM),
                ("evaluate.py", ""),
                ("README.md", "Run `python run_evo.py` to start."),
                ("run_evo.py", run_evo),
            ])
        };
        let dir = files("msg = '''Fit exp.'''\nEvolutionConfig(task_sys_msg=msg)\n");
        let t = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.system_message.as_deref(), Some("Fit exp."));
        assert!(t.description.is_empty());
        let notes = t.notices().join("\n");
        assert!(
            notes.contains("system prompt: run_evo.py's task_sys_msg (the task author's); README.md not shown to the model (ShinkaEvolve never reads it)"),
            "{notes}"
        );
        // Built at run time: not guessed; the README is the context and the
        // output says why.
        let dir = files("EvolutionConfig(task_sys_msg=BASE + spec())\n");
        let t = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.system_message.is_none());
        assert!(t.description.contains("run_evo.py"));
        let notes = t.notices().join("\n");
        assert!(
            notes.contains("README.md, shown to the model as context (run_evo.py builds its task_sys_msg when it runs"),
            "{notes}"
        );
        // A config's message wins, as it does for OpenEvolve folders.
        std::fs::write(
            dir.path().join("config.yaml"),
            "prompt:\n  system_message: From the config.\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let t = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.system_message.as_deref(), Some("From the config."));
    }

    #[test]
    fn the_config_message_replaces_the_readme() {
        let dir = folder(&[
            ("initial_program.py", PROGRAM),
            ("evaluator.py", ""),
            ("README.md", "Run `openevolve-run.py` to start."),
            (
                "config.yaml",
                "prompt:\n  system_message: You pack circles.\n",
            ),
        ]);
        let t = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.system_message.as_deref(), Some("You pack circles."));
        assert!(t.description.is_empty());
        let notes = t.notices().join("\n");
        assert!(
            notes.contains("README.md not shown to the model"),
            "{notes}"
        );
        std::fs::write(dir.path().join("config.yaml"), "max_iterations: 3\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let t = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.system_message.is_none());
        assert!(t.description.contains("openevolve-run.py"));
        let notes = t.notices().join("\n");
        assert!(
            notes.contains("README.md, shown to the model as context (config.yaml has no prompt.system_message)"),
            "{notes}"
        );
    }
}
