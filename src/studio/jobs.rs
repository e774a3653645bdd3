//! File work for the studio. Native dialogs (which may block for as long as
//! a person looks at them) run on short-lived named threads and report back
//! through a channel polled each frame; card files are small and are read and
//! written directly, bounded by [`MAX_CARD_BYTES`].

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::engine::card::{Card, CardError, CardErrors};
use crate::engine::registry::Registry;

/// Cards larger than this are refused (keeps reads well inside a frame).
pub const MAX_CARD_BYTES: u64 = 1024 * 1024;

/// What a file dialog was opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// A card file to open.
    OpenCard,
    /// Where to save the card.
    SaveCard,
    /// A task folder.
    TaskFolder,
    /// The folder a hub bundle is exported into.
    ExportFolder,
    /// A hub bundle to import (a `.tar.gz`; folders through the path field).
    ImportBundle,
    /// A leaderboard batch folder to show.
    LeaderboardFolder,
    /// A leaderboard batch folder whose results a hub export attaches.
    ExportResults,
}

/// What a finished job does to the studio that polls it (`T`: the studio's
/// `App`): the job hands back a closure, so the job system names no
/// payload and a new kind of job touches only the code that starts it.
pub type Done<T> = Box<dyn FnOnce(&mut T) + Send>;

/// Background jobs: each on a named thread of its own, its [`Done`]
/// collected by [`Self::poll`] each frame (never blocking).
pub struct Jobs<T> {
    tx: mpsc::Sender<Done<T>>,
    rx: mpsc::Receiver<Done<T>>,
    pending: usize,
}

impl<T> Default for Jobs<T> {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel();
        Self { tx, rx, pending: 0 }
    }
}

impl<T: 'static> Jobs<T> {
    /// Open a native dialog off the UI thread (`start`: the folder it opens
    /// in); `then` is given what was picked (`None`: cancelled, or no
    /// dialog could open).
    pub fn pick(
        &mut self,
        pick: Pick,
        start: Option<PathBuf>,
        ctx: &egui::Context,
        then: fn(&mut T, Pick, Option<PathBuf>),
    ) -> std::io::Result<()> {
        self.spawn("file-dialog", ctx, move || {
            let mut dialog = rfd::FileDialog::new();
            if let Some(dir) = start.filter(|d| d.is_dir()) {
                dialog = dialog.set_directory(dir);
            }
            let path = match pick {
                Pick::OpenCard => dialog
                    .add_filter("Scaffold card", &["yaml", "yml"])
                    .pick_file(),
                Pick::SaveCard => dialog
                    .add_filter("Scaffold card", &["yaml", "yml"])
                    .save_file(),
                Pick::TaskFolder
                | Pick::ExportFolder
                | Pick::LeaderboardFolder
                | Pick::ExportResults => dialog.pick_folder(),
                Pick::ImportBundle => dialog
                    .add_filter("Hub bundle", &["gz", "tgz", "yaml"])
                    .pick_file(),
            };
            Box::new(move |t: &mut T| then(t, pick, path))
        })
    }

    /// Run `job` on a thread named `studio-NAME`; the closure it returns
    /// is handed out by [`Self::poll`]. An error when no thread could start.
    pub fn spawn(
        &mut self,
        name: &str,
        ctx: &egui::Context,
        job: impl FnOnce() -> Done<T> + Send + 'static,
    ) -> std::io::Result<()> {
        let tx = self.tx.clone();
        let ctx = ctx.clone();
        std::thread::Builder::new()
            .name(format!("studio-{name}"))
            .spawn(move || {
                let done = job();
                tx.send(done).ok();
                ctx.request_repaint();
            })?;
        self.pending += 1;
        Ok(())
    }

    /// The jobs finished since the last call, to apply in order (never
    /// blocks).
    pub fn poll(&mut self) -> Vec<Done<T>> {
        let mut out = Vec::new();
        while let Ok(done) = self.rx.try_recv() {
            self.pending = self.pending.saturating_sub(1);
            out.push(done);
        }
        out
    }

    /// True while a job is running.
    pub fn busy(&self) -> bool {
        self.pending > 0
    }
}

fn io_error(path: &Path, message: String) -> CardErrors {
    CardErrors(vec![CardError {
        origin: path.display().to_string(),
        line: 0,
        col: 0,
        field: String::new(),
        message,
    }])
}

/// Read and check a card file (bounded size). Every error names
/// `file:line:col` and the field.
pub fn read_card(path: &Path, registry: &Registry) -> Result<Card, CardErrors> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(io_error(path, "not a file".to_owned()));
    }
    if meta.len() > MAX_CARD_BYTES {
        return Err(io_error(
            path,
            format!(
                "too large for a card ({} bytes, limit {MAX_CARD_BYTES})",
                meta.len()
            ),
        ));
    }
    crate::engine::hub::pull::load_card_file(path, registry)
        .map(crate::engine::card::ValidCard::into_card)
}

/// Save a card; adds `.yaml` when the path has no extension.
pub fn write_card(card: &Card, path: &Path) -> Result<PathBuf, String> {
    let path = if path.extension().is_none() {
        path.with_extension("yaml")
    } else {
        path.to_path_buf()
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(format!("folder {} does not exist", parent.display()));
    }
    card.save(&path)
        .map_err(|e| format!("cannot save {}: {e}", path.display()))?;
    Ok(path)
}

/// What the studio says about a task given by folder or built-in name
/// (resolved by the one rule, [`crate::engine::builtin::resolve_task`], and
/// loaded as a run loads it): why it cannot be used, else its layout and
/// description (`notes`) and what is wrong with it (`warnings`, e.g.
/// missing EVOLVE-BLOCK markers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskCheck {
    /// The folder a run uses (a built-in task's, written out, for a name).
    pub dir: PathBuf,
    /// The built-in task it is, if it is one.
    pub builtin: Option<&'static str>,
    pub problem: Option<String>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// Why a card whose evaluator runs the task's own `evaluator.py` cannot
    /// run it (the folder has no evaluator file).
    pub no_evaluator: Option<String>,
}

/// Check the task `arg` names, a folder or a built-in task's name (reads
/// its small files: the program, the description and config.yaml; writes a
/// built-in task out into the per-user data dir).
pub fn check_task_folder(arg: &Path) -> TaskCheck {
    check_task_folder_in(arg, &crate::engine::builtin::tasks_dir())
}

/// [`check_task_folder`] writing built-in tasks under `tasks_root`.
pub fn check_task_folder_in(arg: &Path, tasks_root: &Path) -> TaskCheck {
    if arg.as_os_str().is_empty() {
        return TaskCheck {
            problem: Some("choose a task folder".to_owned()),
            ..TaskCheck::default()
        };
    }
    let resolved = match crate::engine::builtin::resolve_task_in(arg, tasks_root) {
        Ok(t) => t,
        Err(e) => {
            return TaskCheck {
                dir: arg.to_path_buf(),
                problem: Some(e.to_string()),
                ..TaskCheck::default()
            };
        }
    };
    let dir = resolved.dir;
    let mut check = match crate::engine::task::Task::load(&dir) {
        Ok(task) => TaskCheck {
            notes: task.notices(),
            warnings: task.warnings(),
            no_evaluator: task.require_evaluator_file().err().map(|e| e.to_string()),
            ..TaskCheck::default()
        },
        Err(e) => TaskCheck {
            problem: Some(e.to_string()),
            ..TaskCheck::default()
        },
    };
    if let Some(name) = resolved.builtin {
        check.notes.insert(
            0,
            format!("built-in task {name}: its files are in {}", dir.display()),
        );
    }
    check.builtin = resolved.builtin;
    check.dir = dir;
    check
}

/// Why a task folder cannot be used, or `None` when it is a task.
pub fn task_folder_problem(dir: &Path) -> Option<String> {
    check_task_folder(dir).problem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_and_errors() {
        let registry = Registry::builtin();
        let dir = tempfile::tempdir().unwrap();
        let card = Card::new_default("t");
        let saved = write_card(&card, &dir.path().join("t")).unwrap();
        assert_eq!(saved.extension().unwrap(), "yaml");
        assert!(saved.is_file());
        // unknown kinds in the default card (empty registry) are reported, with positions
        let errs = read_card(&saved, &registry);
        if let Err(errs) = errs {
            assert!(errs.0.iter().all(|e| e.origin.ends_with("t.yaml")));
        }
        let missing = read_card(&dir.path().join("nope.yaml"), &registry).unwrap_err();
        assert!(missing.to_string().contains("cannot read"));
        let bad = write_card(&card, &dir.path().join("no/such/dir/x.yaml")).unwrap_err();
        assert!(bad.contains("does not exist"));
    }

    #[test]
    fn task_folder_checks() {
        let dir = tempfile::tempdir().unwrap();
        assert!(task_folder_problem(Path::new("")).is_some());
        assert!(
            task_folder_problem(&dir.path().join("x"))
                .unwrap()
                .contains("does not exist")
        );
        std::fs::write(dir.path().join("evaluator.py"), "").unwrap();
        assert!(
            task_folder_problem(dir.path())
                .unwrap()
                .contains("no initial program")
        );
        std::fs::write(dir.path().join("initial_program.py"), "x = 1\n").unwrap();
        let check = check_task_folder(dir.path());
        assert!(check.problem.is_none());
        assert!(check.notes[0].contains("OpenEvolve layout"), "{check:?}");
        assert!(check.warnings[0].contains("no EVOLVE-BLOCK"), "{check:?}");
    }

    #[test]
    fn a_job_hands_back_what_it_does_to_whoever_polls() {
        let ctx = egui::Context::default();
        let mut jobs: Jobs<Vec<String>> = Jobs::default();
        jobs.spawn("t", &ctx, || {
            let found = format!("read on {:?}", std::thread::current().name());
            Box::new(move |log: &mut Vec<String>| log.push(found))
        })
        .unwrap();
        assert!(jobs.busy());
        let mut log = Vec::new();
        for _ in 0..400 {
            for done in jobs.poll() {
                done(&mut log);
            }
            if !log.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(log, ["read on Some(\"studio-t\")"]);
        assert!(!jobs.busy());
    }
}
