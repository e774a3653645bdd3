//! The studio application: panels, toolbar, shortcuts and dialogs around the
//! block editor and the run view. The UI lives in [`App::show`] so tests can
//! drive it without eframe; every mutation is a [`UiCommand`] applied at the
//! end of the frame by [`App::apply_commands`].
//!
//! Over 800 lines on purpose: this is the one place the studio's state meets
//! its toolbar, dialogs, shortcuts and the end-of-frame command application;
//! the panels themselves live in `editor/`, `run/`, `runs.rs`, `leaderboard/` and
//! `model_ui.rs` (the Leaderboard tab's app side in `app/leaderboard.rs`).

mod leaderboard;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use egui::{Key, KeyboardShortcut, Modifiers, RichText, Ui};

use crate::engine::card::{Card, CardErrors};
use crate::engine::component::Slot;
use crate::engine::launch::RunPlan;
use crate::engine::model::{LanguageModel, ModelOverrides, ModelSettings};
use crate::engine::registry::Registry;
use crate::studio::command::{Commands, UiCommand, apply_card_edit};
use crate::studio::editor::canvas::{CanvasView, canvas_ui};
use crate::studio::editor::details::details_ui;
use crate::studio::editor::general::{Folders, general_ui};
use crate::studio::editor::inspector::inspector_ui;
use crate::studio::editor::palette::{drag_preview_ui, palette_ui};
use crate::studio::editor::{EditorCtx, Problems};
use crate::studio::files::{
    JobResult, Jobs, Pick, TaskCheck, check_task_folder, read_card, write_card,
};
use crate::studio::leaderboard::LeaderboardPanel;
use crate::studio::library::Library;
use crate::studio::model_ui::{ModelDialog, ModelDialogCtx};
use crate::studio::run::{RunView, read_archive};
use crate::studio::runs::{RunsCtx, RunsPanel, read_curve};
use crate::studio::state::{Document, State, Tab};
use crate::studio::theme::{self, Palette, ThemeChoice};

/// Window title.
pub const APP_TITLE: &str = "Galapagos Studio";
/// Built-in card opened when nothing is given.
pub const DEFAULT_CARD: &str = "cards/best_of_n.yaml";
/// Shipped task opened when nothing is given.
pub const DEFAULT_TASK: &str = "assets/tasks/circle_packing";
/// Folder of cards listed in the library beside the built-in ones.
pub const CARDS_FOLDER: &str = "cards";
/// Built-in card opened when nothing is given outside a checkout.
pub const DEFAULT_BUILTIN_CARD: &str = "best_of_n";
/// Built-in task used when nothing is given outside a checkout.
pub const DEFAULT_BUILTIN_TASK: &str = "circle_packing";

/// Start a run (listed in the Run menu).
pub const START_SHORTCUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F5);
/// Pause or resume the live run.
pub const PAUSE_SHORTCUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F6);
/// Stop the live run.
pub const STOP_SHORTCUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::SHIFT, Key::F5);
/// Ctrl+1 .. Ctrl+6 show the tabs in [`Tab::ALL`] order.
const TAB_KEYS: [Key; 6] = [
    Key::Num1,
    Key::Num2,
    Key::Num3,
    Key::Num4,
    Key::Num5,
    Key::Num6,
];

/// What the studio opens with (from the command line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StudioLaunch {
    /// A card file to open.
    pub card: Option<PathBuf>,
    /// A task folder to use.
    pub task: Option<PathBuf>,
}

/// An action that would discard unsaved changes, waiting for a yes.
#[derive(Clone, Debug, PartialEq)]
enum Pending {
    New,
    Open(PathBuf),
    Builtin(String),
    Import(Box<Card>),
}

/// A status-bar message.
#[derive(Clone, Debug)]
struct Message {
    text: String,
    error: bool,
    at: std::time::Instant,
}

/// How long an information message stays in the status bar (an error stays
/// until the next message, or a click on it).
const INFO_SHOWN_FOR: std::time::Duration = std::time::Duration::from_secs(8);

/// The editor's borrows of the app, field by field (so the command queue
/// can be borrowed mutably beside it).
macro_rules! editor_ctx {
    ($app:expr, $palette:expr) => {
        EditorCtx {
            card: &$app.doc.card,
            registry: &$app.registry,
            problems: &$app.problems,
            selected: $app.selected,
            palette: $palette,
            running: $app.run_view.is_running(),
        }
    };
}

/// The model a run will use and its description, or why there is none.
type ResolvedModel = Result<(Arc<dyn LanguageModel>, String), String>;

/// The studio.
pub struct App {
    /// What persists between sessions.
    pub state: State,
    /// The card being edited.
    pub doc: Document,
    /// The selected block.
    pub selected: Slot,
    /// The text of the card-path field (the dialog-free way to open and save).
    pub path_field: String,
    /// The text of the hub-bundle path field (export folder or bundle to import).
    pub bundle_field: String,
    /// The run half of the studio.
    pub run_view: RunView,
    /// The Runs panel (recorded runs: open, compare, resume).
    pub runs: RunsPanel,
    /// The Leaderboard tab (a batch of cards × seeds, its table and curves).
    pub leaderboard: LeaderboardPanel,
    /// The leaderboard a hub export attaches as its README's "Results"
    /// section (a batch folder; empty: none).
    pub results_field: String,
    /// The leaderboard's model for (ticked cards, settings version).
    lb_model: Option<((Vec<String>, u64), ResolvedModel)>,
    /// The cards the Leaderboard tab offers, for the recent cards they were
    /// listed with (dropped when the library is scanned again).
    lb_choices: Option<(Vec<PathBuf>, Vec<crate::studio::leaderboard::CardChoice>)>,
    registry: Arc<Registry>,
    /// A model fixed by the host (tests); otherwise the settings decide.
    fixed_model: Option<Arc<dyn LanguageModel>>,
    /// Where the model settings are read from and saved to.
    settings_path: Option<PathBuf>,
    settings: ModelSettings,
    /// Why the settings file could not be loaded, if so.
    settings_error: Option<String>,
    /// Bumped whenever `settings` change.
    settings_version: u64,
    /// The run model for (card revision, settings version).
    resolved: Option<(u64, u64, ResolvedModel)>,
    model_dialog: ModelDialog,
    library: Library,
    jobs: Jobs,
    commands: Commands,
    problems: Problems,
    problems_revision: Option<u64>,
    yaml: (u64, String),
    task_dir: PathBuf,
    task_check: TaskCheck,
    pending: Option<Pending>,
    card_errors: Option<CardErrors>,
    message: Option<Message>,
    applied_theme: Option<ThemeChoice>,
    window_title: String,
    /// The block canvas's pan and zoom.
    canvas_view: CanvasView,
    ctx: Option<egui::Context>,
}

impl App {
    /// A studio with `state`, editing a new card, using `registry`.
    pub fn new(state: State, registry: Arc<Registry>) -> Self {
        let library = Library::scan(Path::new(CARDS_FOLDER), &registry);
        let task_dir = state.last_task_folder.clone().unwrap_or_default();
        let runs = RunsPanel::new(&state.runs_folder);
        let mut app = Self {
            state,
            doc: Document::new(Card::new_default("untitled"), None),
            selected: Slot::SelectionPolicy,
            path_field: String::new(),
            bundle_field: String::new(),
            run_view: RunView::default(),
            runs,
            leaderboard: LeaderboardPanel::default(),
            results_field: String::new(),
            lb_model: None,
            lb_choices: None,
            registry,
            fixed_model: None,
            settings_path: None,
            settings: ModelSettings::default(),
            settings_error: None,
            settings_version: 0,
            resolved: None,
            model_dialog: ModelDialog::default(),
            library,
            jobs: Jobs::default(),
            commands: Commands::default(),
            problems: Problems::default(),
            problems_revision: None,
            yaml: (u64::MAX, String::new()),
            task_dir: PathBuf::new(),
            task_check: TaskCheck::default(),
            pending: None,
            card_errors: None,
            message: None,
            applied_theme: None,
            window_title: String::new(),
            canvas_view: CanvasView::default(),
            ctx: None,
        };
        app.set_task_folder(task_dir);
        app
    }

    /// Use this language model for every run, whatever the settings say
    /// (tests, embedding). Without it, runs use the model the settings and
    /// the card choose ([`crate::engine::model::build_model`]).
    #[must_use]
    pub fn with_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.fixed_model = Some(model);
        self.resolved = None;
        self
    }

    /// Read and save the model settings at `path` (the user's settings file
    /// in the real studio; a temporary file in tests). `None`: no file, the
    /// settings start empty and cannot be saved.
    #[must_use]
    pub fn with_settings_path(mut self, path: Option<PathBuf>) -> Self {
        self.set_settings_path(path);
        self
    }

    /// See [`Self::with_settings_path`]; reloads the settings.
    pub fn set_settings_path(&mut self, path: Option<PathBuf>) {
        let loaded = path.as_deref().map_or_else(
            || Ok(ModelSettings::default()),
            crate::engine::model::settings::load_settings_from,
        );
        match loaded {
            Ok(s) => {
                self.settings = s;
                self.settings_error = None;
            }
            Err(e) => {
                self.settings = ModelSettings::default();
                self.settings_error = Some(e.to_string());
            }
        }
        self.settings_path = path;
        self.settings_version += 1;
        self.resolved = None;
    }

    /// The model settings in use (as last loaded or saved).
    pub fn model_settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// Whether the model dialog is open.
    pub fn model_dialog_open(&self) -> bool {
        self.model_dialog.open
    }

    /// Which model a run of the current card will use (its description), or
    /// why it cannot be built.
    pub fn model_description(&mut self) -> Result<String, String> {
        self.resolve_model().map(|(_, d)| d)
    }

    fn build_run_model(&self, card: &Card) -> ResolvedModel {
        if let Some(m) = &self.fixed_model {
            return Ok((Arc::clone(m), m.describe()));
        }
        if let Some(e) = &self.settings_error {
            return Err(format!("model settings: {e}"));
        }
        crate::engine::model::build_model(
            card.llm.as_ref(),
            &ModelOverrides::default(),
            &self.settings,
            crate::engine::model::default_model(),
        )
        .map_err(|e| e.to_string())
    }

    /// The run model of the current card (cached per card revision and
    /// settings version).
    fn resolve_model(&mut self) -> ResolvedModel {
        let key = (self.doc.revision, self.settings_version);
        if let Some((rev, ver, r)) = &self.resolved
            && (*rev, *ver) == key
        {
            return r.clone();
        }
        let r = self.build_run_model(&self.doc.card);
        self.resolved = Some((key.0, key.1, r.clone()));
        r
    }

    /// Scan a different folder for the library (tests, custom installs).
    pub fn set_library_folder(&mut self, folder: &Path) {
        self.library = Library::scan(folder, &self.registry);
        self.lb_choices = None;
    }

    /// Apply the launch options: open the card and use the task folder; with
    /// nothing given, the built-in card and shipped task when they exist.
    pub fn launch(&mut self, launch: StudioLaunch) {
        let nothing_given = launch.card.is_none() && launch.task.is_none();
        match launch.card {
            // a name with no such file is the built-in card of that name
            Some(card) => match crate::engine::builtin::card_for_arg(&card) {
                Some(builtin) => self.open_builtin_now(builtin.name),
                None => self.open_now(&card),
            },
            None if nothing_given => {
                let checkout = PathBuf::from(DEFAULT_CARD);
                if checkout.is_file() {
                    self.open_now(&checkout);
                } else {
                    self.open_builtin_now(DEFAULT_BUILTIN_CARD);
                }
            }
            None => {}
        }
        let task = launch.task.or_else(|| {
            nothing_given.then(|| {
                let checkout = PathBuf::from(DEFAULT_TASK);
                if checkout.is_dir() {
                    checkout
                } else {
                    PathBuf::from(DEFAULT_BUILTIN_TASK)
                }
            })
        });
        if let Some(task) = task {
            // a name with no such folder is the built-in task, written out
            // into the per-user data dir
            match crate::engine::builtin::task_dir_for_arg(&task) {
                Ok(Some(dir)) => self.set_task_folder(dir),
                Ok(None) => self.set_task_folder(task),
                Err(e) => {
                    self.error(format!("cannot write the built-in task: {e}"));
                    self.set_task_folder(task);
                }
            }
        }
    }

    /// The block canvas's view: the part of the canvas shown.
    pub fn canvas_view(&self) -> CanvasView {
        self.canvas_view
    }

    /// The card's live problems (refreshed each frame).
    pub fn problems(&self) -> &Problems {
        &self.problems
    }

    /// The errors of the last card that failed to open, if shown.
    pub fn card_errors(&self) -> Option<&CardErrors> {
        self.card_errors.as_ref()
    }

    /// The task folder in use.
    pub fn task_dir(&self) -> &Path {
        &self.task_dir
    }

    /// Whether a discard confirmation is open.
    pub fn confirming_discard(&self) -> bool {
        self.pending.is_some()
    }

    /// The last status message.
    pub fn message(&self) -> Option<&str> {
        self.message.as_ref().map(|m| m.text.as_str())
    }

    /// Why Save is disabled, if it is.
    pub fn save_blocker(&self) -> Option<String> {
        self.problems
            .summary()
            .map(|s| format!("Fix the card first: {s}"))
    }

    /// Why Run is disabled, if it is.
    pub fn run_blocker(&self) -> Option<String> {
        if self.run_view.is_running() {
            return Some("A run is in progress".to_owned());
        }
        if let Some(s) = self.problems.summary() {
            return Some(format!("Fix the card first: {s}"));
        }
        if let Some(p) = &self.task_check.problem {
            return Some(p.clone());
        }
        if self.doc.card.evaluator.kind == "subprocess"
            && let Some(p) = &self.task_check.no_evaluator
        {
            return Some(p.clone());
        }
        match &self.resolved {
            Some((_, _, Err(e))) => Some(format!("Model: {e}")),
            Some(_) => None,
            None => Some("The model is not resolved yet".to_owned()),
        }
    }

    fn refresh_problems(&mut self) {
        if self.problems_revision != Some(self.doc.revision) {
            self.problems = Problems::of(&self.doc.card, &self.registry);
            self.problems_revision = Some(self.doc.revision);
        }
        // Builds the model (cheap, no network) only when the card or the
        // settings changed.
        let _ = self.resolve_model();
    }

    fn set_task_folder(&mut self, dir: PathBuf) {
        self.task_check = check_task_folder(&dir);
        if self.task_check.problem.is_none() {
            self.state.last_task_folder = Some(dir.clone());
        }
        self.task_dir = dir;
    }

    fn info(&mut self, text: impl Into<String>) {
        self.message = Some(Message {
            text: text.into(),
            error: false,
            at: std::time::Instant::now(),
        });
    }

    fn error(&mut self, text: impl Into<String>) {
        self.message = Some(Message {
            text: text.into(),
            error: true,
            at: std::time::Instant::now(),
        });
    }

    fn open_now(&mut self, path: &Path) {
        match read_card(path, &self.registry) {
            Ok(card) => {
                self.set_doc(Document::new(card, Some(path.to_path_buf())));
                self.problems_revision = None;
                self.state.remember_card(path);
                self.card_errors = None;
                self.info(format!("Opened {}", path.display()));
            }
            Err(errors) => {
                self.error(format!(
                    "{} could not be opened ({} error{})",
                    path.display(),
                    errors.0.len(),
                    if errors.0.len() == 1 { "" } else { "s" }
                ));
                self.card_errors = Some(errors);
            }
        }
    }

    /// Edit another card: the path field follows its file (empty for a card
    /// never saved), so "Save to path" never writes over the previous file.
    fn set_doc(&mut self, doc: Document) {
        self.path_field = doc
            .path
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string());
        self.doc = doc;
    }

    /// Open the built-in card `name` as a new card (not tied to a file).
    fn open_builtin_now(&mut self, name: &str) {
        let Some(builtin) = crate::engine::builtin::card(name) else {
            return self.error(format!("There is no built-in card {name}"));
        };
        match Card::from_yaml(builtin.yaml, &format!("built-in:{name}"), &self.registry) {
            Ok(card) => {
                self.set_doc(Document::new(card, None));
                self.problems_revision = None;
                self.card_errors = None;
                self.info(format!(
                    "Opened the built-in card {name} (Save asks where to keep it)"
                ));
            }
            Err(errors) => {
                self.error(format!("The built-in card {name} could not be opened"));
                self.card_errors = Some(errors);
            }
        }
    }

    fn new_now(&mut self) {
        self.set_doc(Document::new(Card::new_default("untitled"), None));
        self.problems_revision = None;
        self.info("New card");
    }

    /// Save the card at `path`; false (and why, in the status bar) when not.
    fn save_to(&mut self, path: &Path) -> bool {
        self.refresh_problems();
        if let Some(why) = self.save_blocker() {
            self.error(why);
            return false;
        }
        match write_card(&self.doc.card, path) {
            Ok(saved) => {
                self.state.remember_card(&saved);
                self.path_field = saved.display().to_string();
                self.info(format!("Saved {}", saved.display()));
                self.doc.mark_saved(saved);
                true
            }
            Err(e) => {
                self.error(e);
                false
            }
        }
    }

    /// Where "Save" would write without asking: the card's file, else the
    /// path typed in the card path field.
    fn save_target(&self) -> Option<PathBuf> {
        self.doc.path.clone().or_else(|| {
            let typed = self.path_field.trim();
            (!typed.is_empty()).then(|| PathBuf::from(typed))
        })
    }

    fn import_now(&mut self, card: Card) {
        self.info(format!(
            "Imported {}/{} (not saved yet)",
            card.namespace, card.name
        ));
        self.set_doc(Document::unsaved(card));
        self.problems_revision = None;
    }

    fn export_bundle(&mut self, dir: PathBuf) {
        self.refresh_problems();
        if let Some(why) = self.save_blocker() {
            self.error(why);
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let card = self.doc.card.clone();
        let registry = self.registry.clone();
        let results = Some(self.results_field.trim())
            .filter(|r| !r.is_empty())
            .map(PathBuf::from);
        self.jobs.spawn("export", &ctx, move || JobResult::Done {
            what: "export".to_owned(),
            outcome: leaderboard::export_with_results(&card, &registry, &dir, results.as_deref()),
        });
    }

    fn start_run(&mut self) {
        self.refresh_problems();
        if let Some(why) = self.run_blocker() {
            self.error(why);
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let model = match self.resolve_model() {
            Ok((m, _)) => m,
            Err(e) => {
                self.error(format!("Model: {e}"));
                return;
            }
        };
        let card = match self.doc.card.clone().check(&self.registry) {
            Ok(c) => c,
            Err(problems) => {
                let first = problems
                    .first()
                    .map(|p| format!("{}: {}", p.field, p.message));
                return self.error(format!("Fix the card first: {}", first.unwrap_or_default()));
            }
        };
        let plan = match crate::engine::task::Task::load(&self.task_dir)
            .map_err(crate::engine::launch::LaunchError::from)
            .and_then(|task| RunPlan::new_in(card, task, &self.state.runs_folder, &self.registry))
        {
            Ok(p) => p,
            Err(e) => return self.error(format!("Cannot start: {e}")),
        };
        self.run_view.start(plan, model, &ctx);
        self.state.tab = Tab::Run;
    }

    fn open_run(&mut self, dir: PathBuf) {
        if self.run_view.is_running() {
            self.error("A run is in progress; stop it before opening a recorded run");
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        self.info(format!("Reading {}", dir.display()));
        self.jobs.spawn("open-run", &ctx, move || {
            JobResult::OpenedRun(read_archive(&dir).map(Box::new))
        });
    }

    /// Continue the recorded run in `dir` live up to `iterations` total: the
    /// archive's own card with the budget raised, on its recorded task
    /// folder, appending to the same folder (the engine's [`RunPlan::resume`],
    /// as the CLI's `resume`).
    fn resume_run(&mut self, dir: &Path, iterations: u64) {
        if self.run_view.is_running() {
            self.error("A run is in progress; stop it before resuming another");
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let plan = match RunPlan::resume(dir, Some(iterations), &self.registry) {
            Ok(p) => p,
            Err(e) => return self.error(format!("resume: {e}")),
        };
        let run = match read_archive(dir) {
            Ok(r) => r,
            Err(e) => return self.error(format!("resume: {e}")),
        };
        let model = match self.build_run_model(plan.card()) {
            Ok((m, _)) => m,
            Err(e) => return self.error(format!("resume: model: {e}")),
        };
        self.run_view
            .continue_recorded(run.history, plan, model, &ctx);
        self.state.tab = Tab::Run;
        self.info(format!(
            "Resuming {} up to {iterations} iterations",
            dir.display()
        ));
    }

    fn save_model_settings(&mut self, settings: ModelSettings) {
        let Some(path) = self.settings_path.clone() else {
            return self.error("There is no settings file to save to");
        };
        match crate::engine::model::settings::save_settings_to(&path, &settings) {
            Ok(()) => {
                self.settings = settings;
                self.settings_error = None;
                self.settings_version += 1;
                self.resolved = None;
                self.model_dialog.open = false;
                self.info(format!("Saved the model settings to {}", path.display()));
            }
            Err(e) => self.error(format!("model settings: {e}")),
        }
    }

    fn poll_jobs(&mut self) {
        for result in self.jobs.poll() {
            let mut result = Some(result);
            if self.leaderboard_job(&mut result) {
                continue;
            }
            let Some(result) = result else {
                continue;
            };
            match result {
                JobResult::Picked { pick, path: None } => {
                    // without a native dialog every path can still be typed:
                    // name the field that takes this one
                    let field = match pick {
                        Pick::OpenCard | Pick::SaveCard => "the Card path field in the toolbar",
                        Pick::TaskFolder => "the task folder field under General (Blocks tab)",
                        Pick::ExportFolder | Pick::ImportBundle => {
                            "the Bundle path field on the Details tab"
                        }
                        Pick::LeaderboardFolder => "the Batch folder field on the Leaderboard tab",
                        Pick::ExportResults => "the Results field on the Details tab",
                    };
                    self.info(format!("No file chosen: type the path in {field} instead"));
                }
                JobResult::Picked {
                    pick,
                    path: Some(path),
                } => self.commands.push(match pick {
                    Pick::OpenCard => UiCommand::OpenCard(path),
                    Pick::SaveCard => UiCommand::SaveAs(path),
                    Pick::TaskFolder => UiCommand::SetTaskFolder(path),
                    Pick::ExportFolder => UiCommand::ExportBundle(path),
                    Pick::ImportBundle => UiCommand::ImportBundle(path),
                    Pick::LeaderboardFolder => UiCommand::OpenLeaderboard(path),
                    Pick::ExportResults => UiCommand::SetExportResults(path),
                }),
                JobResult::Imported(Ok(card)) => {
                    if self.doc.dirty {
                        self.pending = Some(Pending::Import(card));
                    } else {
                        self.import_now(*card);
                    }
                }
                JobResult::Imported(Err(e)) => self.error(format!("import: {e}")),
                JobResult::OpenedRun(Ok(run)) => {
                    if self.run_view.is_running() {
                        self.error("A run started meanwhile; the recorded run was not opened");
                    } else {
                        let dir = run.dir.display().to_string();
                        self.run_view.show_archived(*run);
                        self.state.tab = Tab::Run;
                        self.info(format!("Opened {dir} (read-only)"));
                    }
                }
                JobResult::OpenedRun(Err(e)) => self.error(format!("open run: {e}")),
                JobResult::Curve { dir, curve } => self.runs.set_curve(dir, curve),
                // handled by leaderboard_job above
                JobResult::OpenedLeaderboard { .. } => {}
                JobResult::Done { what, outcome } => match outcome {
                    Ok(text) => self.info(text),
                    Err(e) => self.error(format!("{what}: {e}")),
                },
            }
        }
    }

    fn dialog_start(&self) -> Option<PathBuf> {
        self.doc
            .path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .or_else(|| std::env::current_dir().ok())
    }

    /// Apply every queued command (called at the end of each frame).
    pub fn apply_commands(&mut self) {
        for command in self.commands.take() {
            self.apply(command);
        }
        self.refresh_problems();
    }

    fn apply(&mut self, command: UiCommand) {
        if self.apply_leaderboard_command(&command) {
            return;
        }
        if command.is_card_edit() {
            if let Some((key, card)) = apply_card_edit(&self.doc.card, &command, &self.registry) {
                self.doc.edit(&key, card);
            }
            return;
        }
        match command {
            UiCommand::Undo => {
                if !self.doc.undo() {
                    self.info("Nothing to undo");
                }
            }
            UiCommand::Redo => {
                if !self.doc.redo() {
                    self.info("Nothing to redo");
                }
            }
            UiCommand::SelectSlot(slot) => self.selected = slot,
            UiCommand::ShowTab(tab) => {
                if tab == Tab::Runs && self.state.tab != Tab::Runs {
                    self.runs.refresh();
                }
                self.state.tab = tab;
            }
            UiCommand::SetTheme(t) => self.state.theme = t,
            UiCommand::ToggleLeftPanel => self.state.layout.show_left ^= true,
            UiCommand::ToggleInspector => self.state.layout.show_inspector ^= true,
            UiCommand::NewCard => {
                if self.doc.dirty {
                    self.pending = Some(Pending::New);
                } else {
                    self.new_now();
                }
            }
            UiCommand::OpenCard(path) => {
                if self.doc.dirty {
                    self.pending = Some(Pending::Open(path));
                } else {
                    self.open_now(&path);
                }
            }
            UiCommand::OpenBuiltin(name) => {
                if self.doc.dirty {
                    self.pending = Some(Pending::Builtin(name));
                } else {
                    self.open_builtin_now(&name);
                }
            }
            UiCommand::BrowseOpen => {
                if let Some(ctx) = self.ctx.clone() {
                    self.jobs.pick(Pick::OpenCard, self.dialog_start(), &ctx);
                }
            }
            UiCommand::Save => match self.save_target() {
                Some(path) => {
                    self.save_to(&path);
                }
                None => self.commands.push(UiCommand::BrowseSaveAs),
            },
            UiCommand::SaveAs(path) => {
                self.save_to(&path);
            }
            UiCommand::SaveAndContinue => {
                // save, then do what was waiting; a failed save keeps the
                // question open (the status bar says why)
                if let Some(path) = self.save_target()
                    && self.save_to(&path)
                {
                    self.commands.push(UiCommand::ConfirmDiscard);
                }
            }
            UiCommand::BrowseSaveAs => {
                if let Some(why) = self.save_blocker() {
                    self.error(why);
                } else if let Some(ctx) = self.ctx.clone() {
                    self.jobs.pick(Pick::SaveCard, self.dialog_start(), &ctx);
                }
            }
            UiCommand::BrowseTask => {
                if let Some(ctx) = self.ctx.clone() {
                    let start = self.task_dir.parent().map(Path::to_path_buf);
                    self.jobs.pick(Pick::TaskFolder, start, &ctx);
                }
            }
            UiCommand::SetTaskFolder(dir) => self.set_task_folder(dir),
            UiCommand::SetRunsFolder(dir) => {
                self.runs.folder = dir.display().to_string();
                self.state.runs_folder = dir;
            }
            UiCommand::RefreshLibrary => {
                self.library = Library::scan(&self.library.folder.clone(), &self.registry);
                self.lb_choices = None;
            }
            UiCommand::ConfirmDiscard => match self.pending.take() {
                Some(Pending::New) => self.new_now(),
                Some(Pending::Open(path)) => self.open_now(&path),
                Some(Pending::Builtin(name)) => self.open_builtin_now(&name),
                Some(Pending::Import(card)) => self.import_now(*card),
                None => {}
            },
            UiCommand::CancelDiscard => self.pending = None,
            UiCommand::DismissErrors => self.card_errors = None,
            UiCommand::DismissMessage => self.message = None,
            UiCommand::StartRun => self.start_run(),
            UiCommand::PauseOrResume => {
                if !self.run_view.is_running() {
                    self.info("No run is in progress");
                } else if self.run_view.history().paused {
                    self.run_view.resume();
                } else if !self.run_view.is_paused() {
                    self.run_view.pause();
                }
            }
            UiCommand::StopRun => {
                if self.run_view.is_running() {
                    self.run_view.stop();
                } else {
                    self.info("No run is in progress");
                }
            }
            UiCommand::RefreshRuns => self.runs.refresh(),
            UiCommand::OpenRun(dir) => self.open_run(dir),
            UiCommand::LoadCurve(dir) => {
                if let Some(ctx) = self.ctx.clone() {
                    self.jobs.spawn("curve", &ctx, move || {
                        let curve = read_curve(&dir);
                        JobResult::Curve { dir, curve }
                    });
                }
            }
            UiCommand::ResumeRun { dir, iterations } => self.resume_run(&dir, iterations),
            UiCommand::OpenModelSettings => self.model_dialog.open_with(&self.settings),
            UiCommand::CloseModelSettings => self.model_dialog.open = false,
            UiCommand::SaveModelSettings(settings) => self.save_model_settings(*settings),
            UiCommand::ExportBundle(dir) => self.export_bundle(dir),
            UiCommand::ImportBundle(path) => {
                if let Some(ctx) = self.ctx.clone() {
                    let registry = self.registry.clone();
                    self.jobs.spawn("import", &ctx, move || {
                        JobResult::Imported(
                            crate::engine::hub::import_bundle(&path, &registry)
                                .map(Box::new)
                                .map_err(|e| e.to_string()),
                        )
                    });
                }
            }
            UiCommand::BrowseExport => {
                if let Some(ctx) = self.ctx.clone() {
                    self.jobs
                        .pick(Pick::ExportFolder, self.dialog_start(), &ctx);
                }
            }
            UiCommand::BrowseImport => {
                if let Some(ctx) = self.ctx.clone() {
                    self.jobs
                        .pick(Pick::ImportBundle, self.dialog_start(), &ctx);
                }
            }
            // card edits and the leaderboard's commands were handled above
            UiCommand::StartLeaderboard
            | UiCommand::StopLeaderboard
            | UiCommand::OpenLeaderboard(_)
            | UiCommand::BrowseLeaderboard
            | UiCommand::SetExportResults(_)
            | UiCommand::BrowseExportResults
            | UiCommand::SetKind { .. }
            | UiCommand::SetKinds(_)
            | UiCommand::SetParam { .. }
            | UiCommand::ResetParam { .. }
            | UiCommand::SetGeneral(_)
            | UiCommand::SetSeed(_)
            | UiCommand::SetMeta(_) => {}
        }
    }

    /// Per-frame work outside drawing: finished dialogs and run events.
    pub fn logic(&mut self, ctx: &egui::Context) {
        self.ctx = Some(ctx.clone());
        self.poll_jobs();
        self.run_view.logic(ctx);
        self.leaderboard.logic(ctx);
    }

    fn shortcuts(&mut self, ctx: &egui::Context) {
        let cmd = Modifiers::COMMAND;
        let shift = Modifiers::COMMAND | Modifiers::SHIFT;
        let typing = ctx.text_edit_focused();
        ctx.input_mut(|i| {
            if i.consume_shortcut(&KeyboardShortcut::new(shift, Key::S)) {
                self.commands.push(UiCommand::BrowseSaveAs);
            }
            if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::S)) {
                self.commands.push(UiCommand::Save);
            }
            if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::N)) {
                self.commands.push(UiCommand::NewCard);
            }
            if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::O)) {
                self.commands.push(UiCommand::BrowseOpen);
            }
            // runs: F5 start, F6 pause / resume, Shift+F5 stop (listed in the Run menu)
            if i.consume_shortcut(&STOP_SHORTCUT) {
                self.commands.push(UiCommand::StopRun);
            }
            if i.consume_shortcut(&START_SHORTCUT) {
                self.commands.push(UiCommand::StartRun);
            }
            if i.consume_shortcut(&PAUSE_SHORTCUT) {
                self.commands.push(UiCommand::PauseOrResume);
            }
            // tabs: Ctrl+1 .. Ctrl+6 (listed in the View menu)
            for (tab, key) in Tab::ALL.into_iter().zip(TAB_KEYS) {
                if i.consume_shortcut(&KeyboardShortcut::new(cmd, key)) {
                    self.commands.push(UiCommand::ShowTab(tab));
                }
            }
            // text fields keep their own undo while focused
            if !typing {
                if i.consume_shortcut(&KeyboardShortcut::new(shift, Key::Z))
                    || i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::Y))
                {
                    self.commands.push(UiCommand::Redo);
                }
                if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::Z)) {
                    self.commands.push(UiCommand::Undo);
                }
            }
        });
    }

    /// Draw the whole studio into `ui` and apply the frame's commands.
    pub fn show(&mut self, ui: &mut Ui) {
        let ctx = ui.ctx().clone();
        self.ctx = Some(ctx.clone());
        if self.applied_theme != Some(self.state.theme) {
            theme::apply(&ctx, self.state.theme);
            self.applied_theme = Some(self.state.theme);
        }
        self.poll_jobs();
        self.refresh_problems();
        self.shortcuts(&ctx);
        let title = format!("{} — {APP_TITLE}", self.doc.title());
        if title != self.window_title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.window_title = title;
        }

        egui::Panel::top("studio-top")
            .frame(
                egui::Frame::side_top_panel(ui.style())
                    .inner_margin(egui::Margin::symmetric(theme::PANEL_MARGIN, 6)),
            )
            .show(ui, |ui| self.top_bar_ui(ui));
        egui::Panel::bottom("studio-status")
            .frame(
                egui::Frame::side_top_panel(ui.style())
                    .inner_margin(egui::Margin::symmetric(theme::PANEL_MARGIN, 4)),
            )
            .show(ui, |ui| self.status_bar_ui(ui));
        let palette = Palette::of(self.state.theme);
        // Side panels shrink with the window, so the central area keeps at
        // least about half of it (1024 px wide: all six blocks and the run
        // view fit); their widths are resizable within those bounds.
        let window = ui.available_width();
        // the library and palette beside the card's tabs; the run views get
        // the whole width
        let card_tab = matches!(self.state.tab, Tab::Editor | Tab::Details | Tab::Yaml);
        if self.state.layout.show_left && card_tab {
            let max = (window * 0.22).max(170.0);
            let r = egui::Panel::left("studio-left")
                .resizable(true)
                .default_size(self.state.layout.left_width.min(max))
                .size_range(170.0..=max)
                .show(ui, |ui| {
                    egui::ScrollArea::both()
                        .id_salt("left-scroll")
                        .show(ui, |ui| {
                            ui.add_space(4.0);
                            self.library.ui(
                                ui,
                                &self.state.recent_cards,
                                self.doc.path.as_deref(),
                                &mut self.commands,
                            );
                            ui.add_space(theme::SECTION_GAP);
                            ui.separator();
                            let ectx = editor_ctx!(self, palette);
                            palette_ui(ui, &ectx, &mut self.commands);
                        });
                });
            self.state.layout.left_width = r.response.rect.width();
        }
        // the block inspector only where blocks are edited
        if self.state.layout.show_inspector && self.state.tab == Tab::Editor {
            let max = (window * 0.26).max(220.0);
            let r = egui::Panel::right("studio-inspector")
                .resizable(true)
                .default_size(self.state.layout.inspector_width.min(max))
                .size_range(220.0..=max)
                .show(ui, |ui| {
                    // both ways: a wide parameter row scrolls instead of
                    // widening the panel past its bounds
                    egui::ScrollArea::both()
                        .id_salt("inspector-scroll")
                        .show(ui, |ui| {
                            ui.add_space(4.0);
                            let ectx = editor_ctx!(self, palette);
                            inspector_ui(ui, &ectx, &mut self.commands);
                        });
                });
            self.state.layout.inspector_width = r.response.rect.width();
        }
        egui::CentralPanel::default().show(ui, |ui| self.central_ui(ui, palette));

        self.modals_ui(&ctx);
        let fixed = self.fixed_model.as_ref().map(|m| m.describe());
        let dctx = ModelDialogCtx {
            path: self.settings_path.as_deref(),
            load_error: self.settings_error.as_deref(),
            card_llm: self.doc.card.llm.as_ref(),
            card_revision: self.doc.revision,
            fixed_model: fixed.as_deref(),
        };
        self.model_dialog.ui(&ctx, &dctx, &mut self.commands);
        drag_preview_ui(&ctx);
        self.apply_commands();
    }

    fn top_bar_ui(&mut self, ui: &mut Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui
                    .add(egui::Button::new("New card").shortcut_text("Ctrl+N"))
                    .clicked()
                {
                    self.commands.push(UiCommand::NewCard);
                }
                if ui
                    .add(egui::Button::new("Open card…").shortcut_text("Ctrl+O"))
                    .clicked()
                {
                    self.commands.push(UiCommand::BrowseOpen);
                }
                if ui
                    .add(egui::Button::new("Save card").shortcut_text("Ctrl+S"))
                    .clicked()
                {
                    self.commands.push(UiCommand::Save);
                }
                if ui
                    .add(egui::Button::new("Save card as…").shortcut_text("Ctrl+Shift+S"))
                    .clicked()
                {
                    self.commands.push(UiCommand::BrowseSaveAs);
                }
                ui.separator();
                if ui.button("Export hub bundle…").clicked() {
                    self.commands.push(UiCommand::BrowseExport);
                }
                if ui.button("Import hub bundle…").clicked() {
                    self.commands.push(UiCommand::BrowseImport);
                }
                ui.separator();
                if ui.button("Model settings…").clicked() {
                    self.commands.push(UiCommand::OpenModelSettings);
                }
            });
            ui.menu_button("Edit", |ui| {
                if ui
                    .add_enabled(
                        self.doc.can_undo(),
                        egui::Button::new("Undo edit").shortcut_text("Ctrl+Z"),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::Undo);
                }
                if ui
                    .add_enabled(
                        self.doc.can_redo(),
                        egui::Button::new("Redo edit").shortcut_text("Ctrl+Shift+Z"),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::Redo);
                }
            });
            ui.menu_button("Run", |ui| {
                let blocker = self.run_blocker();
                let start = ui
                    .add_enabled(
                        blocker.is_none(),
                        egui::Button::new("Start run")
                            .shortcut_text(ui.ctx().format_shortcut(&START_SHORTCUT)),
                    )
                    .on_disabled_hover_text(blocker.unwrap_or_default());
                if start.clicked() {
                    self.commands.push(UiCommand::StartRun);
                }
                let running = self.run_view.is_running();
                let pause = if self.run_view.history().paused {
                    "Resume run"
                } else {
                    "Pause run"
                };
                if ui
                    .add_enabled(
                        running,
                        egui::Button::new(pause)
                            .shortcut_text(ui.ctx().format_shortcut(&PAUSE_SHORTCUT)),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::PauseOrResume);
                }
                if ui
                    .add_enabled(
                        running,
                        egui::Button::new("Stop run")
                            .shortcut_text(ui.ctx().format_shortcut(&STOP_SHORTCUT)),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::StopRun);
                }
            });
            ui.menu_button("View", |ui| {
                for (tab, key) in Tab::ALL.into_iter().zip(TAB_KEYS) {
                    let shortcut = KeyboardShortcut::new(Modifiers::COMMAND, key);
                    if ui
                        .add(
                            egui::Button::selectable(self.state.tab == tab, tab.label())
                                .shortcut_text(ui.ctx().format_shortcut(&shortcut)),
                        )
                        .clicked()
                    {
                        self.commands.push(UiCommand::ShowTab(tab));
                    }
                }
                ui.separator();
                for t in [ThemeChoice::Dark, ThemeChoice::Light] {
                    if ui.radio(self.state.theme == t, t.label()).clicked() {
                        self.commands.push(UiCommand::SetTheme(t));
                    }
                }
                ui.separator();
                if ui
                    .checkbox(
                        &mut self.state.layout.show_left.clone(),
                        "Library and palette",
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::ToggleLeftPanel);
                }
                if ui
                    .checkbox(&mut self.state.layout.show_inspector.clone(), "Inspector")
                    .clicked()
                {
                    self.commands.push(UiCommand::ToggleInspector);
                }
            });
            ui.separator();
            let title = RichText::new(self.doc.card.display_title()).strong();
            ui.label(title);
            let file = RichText::new(self.doc.title()).weak();
            let file = if self.doc.dirty {
                file.color(ui.visuals().warn_fg_color)
            } else {
                file
            };
            ui.label(file).on_hover_text(
                self.doc
                    .path
                    .as_ref()
                    .map_or_else(|| "Not saved yet".to_owned(), |p| p.display().to_string()),
            );
        });
        ui.add_space(2.0);
        // The run's actions first (right-aligned, and first in the focus
        // order), then the card's, which wrap onto a second row in a narrow
        // window instead of running under the Model button.
        ui.horizontal(|ui| {
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                let blocker = self.run_blocker();
                let model_text = match self.resolved.as_ref().map(|r| &r.2) {
                    Some(Ok((_, desc))) => desc.clone(),
                    Some(Err(e)) => e.clone(),
                    None => String::new(),
                };
                let run = ui.add_enabled(
                    blocker.is_none(),
                    egui::Button::new(RichText::new("Start run").strong()),
                );
                let run = match &blocker {
                    Some(why) => run.on_disabled_hover_text(why),
                    None => run.on_hover_text(format!(
                        "Run on {} ({})",
                        self.task_dir.display(),
                        ui.ctx().format_shortcut(&START_SHORTCUT)
                    )),
                };
                if run.clicked() {
                    self.commands.push(UiCommand::StartRun);
                }
                let short = model_text.split(" (").next().unwrap_or_default();
                let model = ui.scope(|ui| {
                    ui.set_max_width((ui.available_width() * 0.3).clamp(120.0, 280.0));
                    ui.add(egui::Button::new(format!("Model: {short}")).truncate())
                });
                if model
                    .inner
                    .on_hover_text(format!(
                        "Runs will use: {model_text}\nClick to edit the model settings"
                    ))
                    .clicked()
                {
                    self.commands.push(UiCommand::OpenModelSettings);
                }
                ui.separator();
                ui.with_layout(
                    egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true),
                    |ui| {
                        if ui
                            .button("New")
                            .on_hover_text("New card (Ctrl+N)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::NewCard);
                        }
                        if ui
                            .button("Open…")
                            .on_hover_text("Open a card with a file dialog (Ctrl+O)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::BrowseOpen);
                        }
                        let save_blocker = self.save_blocker();
                        let can_save = save_blocker.is_none();
                        let save = ui
                            .add_enabled(can_save, egui::Button::new("Save"))
                            .on_hover_text("Save the card (Ctrl+S)");
                        let save = match &save_blocker {
                            Some(why) => save.on_disabled_hover_text(why),
                            None => save,
                        };
                        if save.clicked() {
                            self.commands.push(UiCommand::Save);
                        }
                        let save_as = ui.add_enabled(can_save, egui::Button::new("Save As…"));
                        let save_as = match &save_blocker {
                            Some(why) => save_as.on_disabled_hover_text(why),
                            None => {
                                save_as.on_hover_text("Save under a new name with a file dialog")
                            }
                        };
                        if save_as.clicked() {
                            self.commands.push(UiCommand::BrowseSaveAs);
                        }
                        ui.separator();
                        let label = ui.label("Card path");
                        ui.add(
                            egui::TextEdit::singleline(&mut self.path_field)
                                .hint_text("path/to/card.yaml")
                                .desired_width((ui.available_width() * 0.3).clamp(120.0, 260.0)),
                        )
                        .labelled_by(label.id);
                        let typed = PathBuf::from(self.path_field.trim());
                        let has_path = !self.path_field.trim().is_empty();
                        if ui
                            .add_enabled(has_path, egui::Button::new("Open path"))
                            .on_hover_text("Open the card at this path")
                            .clicked()
                        {
                            self.commands.push(UiCommand::OpenCard(typed.clone()));
                        }
                        let save_path =
                            ui.add_enabled(has_path && can_save, egui::Button::new("Save to path"));
                        let save_path = match &save_blocker {
                            Some(why) => save_path.on_disabled_hover_text(why),
                            None => save_path.on_hover_text("Save the card at this path"),
                        };
                        if save_path.clicked() {
                            self.commands.push(UiCommand::SaveAs(typed));
                        }
                        ui.separator();
                        if ui
                            .add_enabled(self.doc.can_undo(), egui::Button::new("Undo"))
                            .on_hover_text("Undo the last card edit (Ctrl+Z)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::Undo);
                        }
                        if ui
                            .add_enabled(self.doc.can_redo(), egui::Button::new("Redo"))
                            .on_hover_text("Redo (Ctrl+Shift+Z or Ctrl+Y)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::Redo);
                        }
                    },
                );
            });
        });
        ui.add_space(2.0);
        // the tabs, above the side panels: reached right after the toolbar
        ui.horizontal(|ui| {
            for (tab, key) in Tab::ALL.into_iter().zip(TAB_KEYS) {
                let running = match tab {
                    Tab::Run => self.run_view.is_running(),
                    Tab::Leaderboard => self.leaderboard.is_running(),
                    _ => false,
                };
                let text = if running {
                    format!("{} (running)", tab.label())
                } else {
                    tab.label().to_owned()
                };
                let shortcut = KeyboardShortcut::new(Modifiers::COMMAND, key);
                if ui
                    .selectable_label(self.state.tab == tab, text)
                    .on_hover_text(ui.ctx().format_shortcut(&shortcut))
                    .clicked()
                {
                    self.commands.push(UiCommand::ShowTab(tab));
                }
            }
        });
    }

    fn status_bar_ui(&mut self, ui: &mut Ui) {
        let palette = Palette::of(self.state.theme);
        // the run's status on the right first; the card's status and the
        // last message share what is left, each truncated (full on hover)
        ui.horizontal(|ui| {
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                self.run_view.status_bar_ui(ui);
                if self.jobs.busy() {
                    ui.spinner();
                }
                ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                    if self.problems.is_empty() {
                        ui.label(RichText::new("Card is valid").color(palette.ok));
                    } else {
                        let n = self.problems.len();
                        let first = self.problems.summary().unwrap_or_default();
                        let text = format!("{n} problem{}: {first}", if n == 1 { "" } else { "s" });
                        let lines: Vec<String> = self
                            .problems
                            .0
                            .iter()
                            .map(|p| format!("{}: {}", p.field, p.message))
                            .collect();
                        let half = ui.available_width() * 0.6;
                        ui.scope(|ui| {
                            ui.set_max_width(half);
                            ui.add(
                                egui::Label::new(RichText::new(text).color(palette.error))
                                    .truncate(),
                            )
                            .on_hover_text(lines.join("\n"));
                        });
                    }
                    // an information message goes stale: it leaves after a while
                    if let Some(m) = &self.message
                        && !m.error
                    {
                        let age = m.at.elapsed();
                        if age >= INFO_SHOWN_FOR {
                            self.message = None;
                        } else {
                            ui.ctx().request_repaint_after(INFO_SHOWN_FOR - age);
                        }
                    }
                    if let Some(m) = &self.message {
                        ui.separator();
                        let text = RichText::new(&m.text);
                        let text = if m.error {
                            text.color(palette.error)
                        } else {
                            text.weak()
                        };
                        let label = ui
                            .add(
                                egui::Label::new(text)
                                    .truncate()
                                    .sense(egui::Sense::click()),
                            )
                            .on_hover_text(format!("{}\n(click to dismiss)", m.text));
                        if label.clicked() {
                            self.commands.push(UiCommand::DismissMessage);
                        }
                    }
                });
            });
        });
    }

    fn central_ui(&mut self, ui: &mut Ui, palette: Palette) {
        match self.state.tab {
            Tab::Editor => {
                // the canvas takes most of the height and zooms to fit it;
                // the general settings scroll below
                let ectx = editor_ctx!(self, palette);
                let canvas_h = (ui.available_height() * 0.7).clamp(180.0, 480.0);
                let width = ui.available_width();
                // a rect of its own: the zoomed canvas never widens the panel
                let (rect, _) =
                    ui.allocate_exact_size(egui::vec2(width, canvas_h), egui::Sense::hover());
                let mut canvas = ui.new_child(egui::UiBuilder::new().max_rect(rect));
                canvas.set_clip_rect(rect.intersect(ui.clip_rect()));
                canvas_ui(
                    &mut canvas,
                    &ectx,
                    &mut self.commands,
                    &mut self.canvas_view,
                );
                ui.separator();
                egui::ScrollArea::vertical()
                    .id_salt("editor-scroll")
                    .show(ui, |ui| {
                        ui.heading("General");
                        ui.add_space(4.0);
                        let folders = Folders {
                            task: &self.task_dir,
                            task_problem: self.task_check.problem.as_deref(),
                            task_notes: &self.task_check.notes,
                            task_warnings: &self.task_check.warnings,
                            runs: &self.state.runs_folder,
                        };
                        general_ui(ui, &ectx, &folders, &mut self.commands);
                    });
            }
            Tab::Details => {
                egui::ScrollArea::vertical()
                    .id_salt("details-scroll")
                    .show(ui, |ui| {
                        let ectx = editor_ctx!(self, palette);
                        details_ui(ui, &ectx, &mut self.commands);
                        ui.add_space(theme::SECTION_GAP);
                        ui.heading("Hub bundle");
                        ui.weak(
                            "Export writes NAMESPACE/NAME/ with card.yaml and a README, plus a .tar.gz; \
                             import reads such a folder or archive",
                        );
                        let blocker = self.problems.summary();
                        ui.horizontal(|ui| {
                            let label = ui.label("Bundle path");
                            ui.add(
                                egui::TextEdit::singleline(&mut self.bundle_field)
                                    .hint_text("folder to export into, or bundle to import")
                                    .desired_width(320.0),
                            )
                            .labelled_by(label.id);
                            let typed = PathBuf::from(self.bundle_field.trim());
                            let has = !self.bundle_field.trim().is_empty();
                            let export = ui.add_enabled(
                                has && blocker.is_none(),
                                egui::Button::new("Export to folder"),
                            );
                            let export = match &blocker {
                                Some(why) => export.on_disabled_hover_text(format!("Fix the card first: {why}")),
                                None => export.on_hover_text("Export the card as a hub bundle into this folder"),
                            };
                            if export.clicked() {
                                self.commands.push(UiCommand::ExportBundle(typed.clone()));
                            }
                            if ui
                                .add_enabled(has, egui::Button::new("Import bundle"))
                                .on_hover_text("Import the bundle folder or .tar.gz at this path")
                                .clicked()
                            {
                                self.commands.push(UiCommand::ImportBundle(typed));
                            }
                        });
                        ui.horizontal(|ui| {
                            let label = ui.label("Results");
                            ui.add(
                                egui::TextEdit::singleline(&mut self.results_field)
                                    .hint_text("leaderboard folder (optional)")
                                    .desired_width(320.0),
                            )
                            .labelled_by(label.id)
                            .on_hover_text(
                                "A leaderboard batch folder the card is on: Export appends its table, \
                                 task, budget, seeds and model to the README as a Results section",
                            );
                            if ui
                                .button("Browse results…")
                                .on_hover_text("Pick a leaderboard batch folder with a dialog")
                                .clicked()
                            {
                                self.commands.push(UiCommand::BrowseExportResults);
                            }
                        });
                    });
            }
            Tab::Yaml => {
                if self.yaml.0 != self.doc.revision || self.yaml.1.is_empty() {
                    self.yaml = (self.doc.revision, self.doc.card.to_yaml());
                }
                egui::ScrollArea::both()
                    .id_salt("yaml-scroll")
                    .show(ui, |ui| {
                        ui.add(
                            egui::Label::new(RichText::new(&self.yaml.1).monospace())
                                .selectable(true),
                        );
                    });
            }
            Tab::Run => self.run_view.ui(ui),
            Tab::Runs => {
                let busy = self
                    .run_view
                    .is_running()
                    .then_some("A run is in progress; stop it first");
                let rctx = RunsCtx {
                    busy,
                    live_dir: self.run_view.live_run_dir(),
                    error: palette.error,
                };
                self.runs.ui(ui, &rctx, &mut self.commands);
            }
            Tab::Leaderboard => self.leaderboard_tab_ui(ui, palette),
        }
    }

    fn modals_ui(&mut self, ctx: &egui::Context) {
        if let Some(pending) = &self.pending {
            let what = match pending {
                Pending::New => "start a new card".to_owned(),
                Pending::Open(p) => format!("open {}", p.display()),
                Pending::Builtin(name) => format!("open the built-in card {name}"),
                Pending::Import(c) => format!("import {}/{}", c.namespace, c.name),
            };
            let title = self.doc.title();
            let response = egui::Modal::new(egui::Id::unique("confirm-discard")).show(ctx, |ui| {
                ui.set_max_width(420.0);
                ui.heading("Unsaved changes");
                ui.label(format!(
                    "{title} has unsaved changes. Discard them to {what}?"
                ));
                ui.add_space(theme::SECTION_GAP);
                ui.horizontal(|ui| {
                    let target = self.save_target();
                    let save = ui.add_enabled(
                        target.is_some() && self.problems.is_empty(),
                        egui::Button::new("Save and continue"),
                    );
                    let save = match (&target, self.problems.summary()) {
                        (_, Some(why)) => save.on_disabled_hover_text(format!("Fix the card first: {why}")),
                        (None, None) => save.on_disabled_hover_text(
                            "This card has no file yet: type one in the Card path field, or keep editing and use Save As",
                        ),
                        (Some(p), None) => save.on_hover_text(format!("Save to {}", p.display())),
                    };
                    if save.clicked() {
                        self.commands.push(UiCommand::SaveAndContinue);
                    }
                    if ui.button("Discard changes").clicked() {
                        self.commands.push(UiCommand::ConfirmDiscard);
                    }
                    if ui.button("Keep editing").clicked() {
                        self.commands.push(UiCommand::CancelDiscard);
                    }
                });
            });
            if response.should_close() {
                self.commands.push(UiCommand::CancelDiscard);
            }
        }
        if let Some(errors) = &self.card_errors {
            let response = egui::Modal::new(egui::Id::unique("card-errors")).show(ctx, |ui| {
                ui.set_max_width(640.0);
                ui.heading("The card could not be opened");
                ui.label(format!(
                    "{} error{}; nothing was opened",
                    errors.0.len(),
                    if errors.0.len() == 1 { "" } else { "s" }
                ));
                ui.add_space(6.0);
                egui::ScrollArea::vertical()
                    .max_height(320.0)
                    .show(ui, |ui| {
                        for e in &errors.0 {
                            ui.add(
                                egui::Label::new(
                                    RichText::new(e.to_string())
                                        .monospace()
                                        .color(ui.visuals().error_fg_color),
                                )
                                .wrap(),
                            );
                        }
                    });
                ui.add_space(theme::SECTION_GAP);
                if ui.button("Close").clicked() {
                    self.commands.push(UiCommand::DismissErrors);
                }
            });
            if response.should_close() {
                self.commands.push(UiCommand::DismissErrors);
            }
        }
    }
}

impl eframe::App for App {
    fn logic(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        App::logic(self, ctx);
    }

    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.show(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
    }
}

/// Open the studio window (blocks until it is closed).
pub fn run_studio(launch: StudioLaunch) -> anyhow::Result<()> {
    let options = eframe::NativeOptions {
        renderer: eframe::Renderer::Wgpu,
        viewport: egui::ViewportBuilder::default()
            .with_title(APP_TITLE)
            .with_app_id("galapagos-studio")
            .with_inner_size([1400.0, 880.0])
            .with_min_inner_size([960.0, 600.0]),
        ..Default::default()
    };
    eframe::run_native(
        APP_TITLE,
        options,
        Box::new(move |cc| {
            let state: State = cc
                .storage
                .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
                .unwrap_or_default();
            let mut app = App::new(state, Arc::new(Registry::builtin()))
                .with_settings_path(crate::engine::model::settings::user_settings_path());
            app.launch(launch);
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("the studio window failed: {e}"))
}
