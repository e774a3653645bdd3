//! The studio application: the window's layout, its state, and the
//! end-of-frame application of commands. The UI lives in [`App::show`] so
//! tests can drive it without eframe; every mutation is a [`UiCommand`]
//! applied at the end of the frame by [`App::apply_commands`].
//!
//! Each part has a file of its own: the toolbar, tab strip, status bar and
//! shortcuts (`toolbar.rs`); each group of commands ([`CommandGroup`]) with
//! what it does (`card_files.rs`, `hub.rs`, `run.rs`, `model.rs`,
//! `leaderboard.rs`); and the tabs themselves are [`TabPanel`]s
//! (`editor/tabs.rs`, `run/`, `runs.rs`, `leaderboard/`), drawn through one
//! dispatch (`App::tab_ui`).

mod card_files;
mod consent;
mod help;
mod hub;
mod leaderboard;
mod model;
mod run;
mod toolbar;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use egui::Ui;

use crate::engine::card::{Card, CardErrors};
use crate::engine::component::{Feature, Slot};
use crate::engine::model::{LanguageModel, ModelSettings};
use crate::engine::registry::Registry;
use crate::studio::command::{CommandGroup, Commands, UiCommand, apply_card_edit};
use crate::studio::editor::canvas::CanvasView;
use crate::studio::editor::inspector::inspector_ui;
use crate::studio::editor::palette::{drag_preview_ui, palette_ui};
use crate::studio::editor::tabs::{BlocksTab, DetailsTab, YamlTab};
use crate::studio::help::HelpPage;
use crate::studio::jobs::{Done, Jobs, Pick, TaskCheck};
use crate::studio::leaderboard::{LeaderboardFrame, LeaderboardPanel};
use crate::studio::library::Library;
use crate::studio::model_ui::ModelDialog;
use crate::studio::panel::{CardCtx, Folders, Problems};
use crate::studio::panel::{TabCtx, TabPanel};
use crate::studio::run::RunView;
use crate::studio::runs::RunsPanel;
use crate::studio::state::{Document, State, Tab};
use crate::studio::theme::{self, Palette, ThemeChoice};

use card_files::Pending;
pub use toolbar::{PAUSE_SHORTCUT, START_SHORTCUT, STOP_SHORTCUT};

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

/// The block inspector's least width: a share of the window (where
/// beam_search's longest parameter name is whole at 1920) and points.
const INSPECTOR_MIN_SHARE: f32 = 0.22;
const INSPECTOR_MIN_POINTS: f32 = 220.0;

/// What the studio opens with (from the command line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StudioLaunch {
    /// A card file to open.
    pub card: Option<PathBuf>,
    /// A task folder to use.
    pub task: Option<PathBuf>,
}

/// A status-bar message.
#[derive(Clone, Debug)]
struct Message {
    text: String,
    error: bool,
    at: std::time::Instant,
}

/// The panel of a tab, field by field (so the rest of the app can be borrowed beside it): the one place a tab
/// is matched with its panel.
macro_rules! panel_of {
    ($app:expr, $tab:expr) => {
        match $tab {
            Tab::Editor => &mut $app.blocks,
            Tab::Details => &mut $app.details,
            Tab::Yaml => &mut $app.yaml,
            Tab::Run => &mut $app.run_view,
            Tab::Runs => &mut $app.runs,
            Tab::Leaderboard => &mut $app.leaderboard,
        }
    };
}

/// The editor's borrows of the app, field by field (so the command queue
/// can be borrowed mutably beside it).
macro_rules! card_ctx {
    ($app:expr, $palette:expr) => {
        CardCtx {
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

/// What the Leaderboard tab's model was resolved for: the ticked cards,
/// the settings' version and the runs at once.
type LeaderboardModelKey = (Vec<String>, u64, usize);

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
    /// The run half of the studio.
    pub run_view: RunView,
    /// The Runs panel (recorded runs: open, compare, resume).
    pub runs: RunsPanel,
    /// The Leaderboard tab (a batch of cards × seeds, its table and curves).
    pub leaderboard: LeaderboardPanel,
    /// The leaderboard's model for (ticked cards, settings version).
    lb_model: Option<(LeaderboardModelKey, ResolvedModel)>,
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
    jobs: Jobs<App>,
    commands: Commands,
    problems: Problems,
    problems_revision: Option<u64>,
    /// The task folder runs use (resolved from `task_field`).
    task_dir: PathBuf,
    /// The task as given: a folder, or a built-in task's name.
    task_field: PathBuf,
    /// Where built-in tasks are written out when named.
    tasks_root: PathBuf,
    task_check: TaskCheck,
    pending: Option<Pending>,
    /// The unsaved-changes question's "Save as" field (a card with no file).
    save_as_field: String,
    /// The next Save As goes on with the waiting action once it saved.
    save_then_continue: bool,
    /// A run held for the person's consent to its card's lowered
    /// isolation (the dialog asks).
    asking: Option<consent::Asking>,
    card_errors: Option<CardErrors>,
    message: Option<Message>,
    applied_theme: Option<ThemeChoice>,
    window_title: String,
    /// The window's width last frame (the block inspector keeps its share
    /// of it when it changes).
    last_window_width: Option<f32>,
    /// The Blocks tab (the canvas's pan and zoom).
    blocks: BlocksTab,
    /// The Details tab (the hub bundle and results fields).
    details: DetailsTab,
    /// The YAML tab (the card's text, per revision).
    yaml: YamlTab,
    /// The Help page shown, if any.
    help: Option<HelpPage>,
    ctx: Option<egui::Context>,
    /// How runs on servers are reached (the environment's ssh unless set:
    /// tests, embedding).
    connect_options: Option<crate::engine::service::ConnectOptions>,
    /// The Connect to a run dialog's address field, while it is open.
    connect_dialog: Option<String>,
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
            run_view: RunView::with_registry(Arc::clone(&registry)),
            runs,
            leaderboard: LeaderboardPanel::default(),
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
            task_dir: PathBuf::new(),
            task_field: PathBuf::new(),
            tasks_root: crate::engine::builtin::tasks_dir(),
            task_check: TaskCheck::default(),
            pending: None,
            save_as_field: String::new(),
            save_then_continue: false,
            asking: None,
            card_errors: None,
            message: None,
            applied_theme: None,
            window_title: String::new(),
            last_window_width: None,
            blocks: BlocksTab::default(),
            details: DetailsTab::default(),
            yaml: YamlTab::default(),
            help: None,
            ctx: None,
            connect_options: None,
            connect_dialog: None,
        };
        app.set_task_folder(task_dir);
        // the Leaderboard tab shows the batch its folder holds, as it was
        // when the studio was closed (read in the background)
        let batch = &app.state.leaderboard.out;
        if batch
            .join(crate::engine::leaderboard::LEADERBOARD_FILE)
            .is_file()
            || batch
                .join(crate::engine::leaderboard::suite_report::SUITE_FILE)
                .is_file()
        {
            app.commands
                .push(UiCommand::OpenLeaderboard(batch.to_path_buf()));
        }
        app
    }

    /// List these hubs' cards in the library instead of those of the user
    /// settings file (tests, embedding).
    pub fn set_hubs(&mut self, hubs: Vec<String>) {
        self.library.hubs.hubs_override = Some(hubs.clone());
        self.library.hubs.requested = false;
        self.details.publish.set_hubs(hubs);
    }

    /// Cache the cards opened from a hub in `dir` instead of the per-user
    /// cache (tests, embedding).
    pub fn set_hub_cache(&mut self, dir: PathBuf) {
        self.library.hubs.cache_override = Some(dir);
    }

    /// The library's hub cards, as last listed.
    pub fn hub_shelf(&self) -> &crate::studio::library::HubShelf {
        &self.library.hubs
    }

    /// Write built-in tasks out under `dir` when one is named, instead of
    /// the per-user data dir (tests, embedding).
    pub fn set_builtin_tasks_folder(&mut self, dir: PathBuf) {
        self.tasks_root = dir;
    }

    /// Scan a different folder for the library (tests, custom installs).
    pub fn set_library_folder(&mut self, folder: &Path) {
        let hubs = std::mem::take(&mut self.library.hubs);
        self.library = Library::scan(folder, &self.registry);
        self.library.hubs = hubs;
        self.lb_choices = None;
    }

    /// Apply the launch options: open the card and use the task folder; with
    /// nothing given, the built-in card and shipped task when they exist.
    pub fn launch(&mut self, launch: StudioLaunch) {
        let nothing_given = launch.card.is_none() && launch.task.is_none();
        match launch.card {
            // a name with no such file is the built-in card of that name,
            // else NAMESPACE/NAME[@VERSION] is pulled from the hubs
            Some(card) => match crate::engine::builtin::card_for_arg(&card) {
                Some(builtin) => self.open_builtin_now(builtin.name),
                None if !card.exists()
                    && card
                        .to_str()
                        .and_then(crate::engine::hub::pull::HubRef::parse)
                        .is_some() =>
                {
                    self.commands.push(UiCommand::OpenHubCard {
                        hub: None,
                        reference: card.display().to_string(),
                    });
                }
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
            // into the per-user data dir (the one rule for names and paths)
            self.set_task_folder(task);
        }
    }

    /// The block canvas's view: the part of the canvas shown.
    pub fn canvas_view(&self) -> CanvasView {
        self.blocks.canvas_view
    }

    /// The Details tab's Results field: the leaderboard the next hub export
    /// attaches (empty: none).
    pub fn results_field(&self) -> &str {
        &self.details.results_field
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
        if self.registry.provides(
            Slot::Evaluator,
            &self.doc.card.evaluator.kind,
            Feature::TaskEvaluatorFile,
        ) && let Some(p) = &self.task_check.no_evaluator
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

    fn poll_jobs(&mut self) {
        for done in self.jobs.poll() {
            done(self);
        }
    }

    /// Run `job` on a thread of its own; the closure it returns is applied
    /// to the studio when it is polled.
    fn spawn_job(
        &mut self,
        name: &str,
        ctx: &egui::Context,
        job: impl FnOnce() -> Done<App> + Send + 'static,
    ) {
        if let Err(e) = self.jobs.spawn(name, ctx, job) {
            self.error(format!("{name}: cannot start a thread: {e}"));
        }
    }

    /// Open a native dialog for `pick` off the UI thread.
    fn pick_path(&mut self, pick: Pick, start: Option<PathBuf>, ctx: &egui::Context) {
        if let Err(e) = self.jobs.pick(pick, start, ctx, App::picked) {
            self.error(format!("cannot open a file dialog: {e}"));
        }
    }

    /// A dialog closed with `path` (`None`: cancelled, or no dialog could
    /// open: the field that takes the path is named).
    fn picked(&mut self, pick: Pick, path: Option<PathBuf>) {
        let Some(path) = path else {
            // without a native dialog every path can still be typed: name the
            // field that takes this one
            let field = match pick {
                Pick::OpenCard | Pick::SaveCard => "the Card path field in the toolbar",
                Pick::TaskFolder => "the task folder field under General (Blocks tab)",
                Pick::ExportFolder | Pick::ImportBundle => {
                    "the Bundle path field on the Details tab"
                }
                Pick::LeaderboardFolder => "the Batch folder field on the Leaderboard tab",
                Pick::ExportResults => "the Results field on the Details tab",
            };
            if pick == Pick::SaveCard && std::mem::take(&mut self.save_then_continue) {
                self.info(
                    "No file chosen: type where to save the card in the question's Save as field",
                );
                return;
            }
            self.info(format!("No file chosen: type the path in {field} instead"));
            return;
        };
        self.commands.push(match pick {
            Pick::OpenCard => UiCommand::OpenCard(path),
            Pick::SaveCard => UiCommand::SaveAs(path),
            Pick::TaskFolder => UiCommand::SetTaskFolder(path),
            Pick::ExportFolder => UiCommand::ExportBundle(path),
            Pick::ImportBundle => UiCommand::ImportBundle(path),
            Pick::LeaderboardFolder => UiCommand::OpenLeaderboard(path),
            Pick::ExportResults => UiCommand::SetExportResults(path),
        });
    }

    /// Apply every queued command (called at the end of each frame).
    pub fn apply_commands(&mut self) {
        for command in self.commands.take() {
            self.apply(command);
        }
        self.refresh_problems();
    }

    /// Hand `command` to the file of its group.
    fn apply(&mut self, command: UiCommand) {
        match command.group() {
            CommandGroup::CardEdit => {
                if let Some((key, card)) = apply_card_edit(&self.doc.card, &command, &self.registry)
                {
                    self.doc.edit(&key, card);
                }
            }
            CommandGroup::View => self.apply_view_command(command),
            CommandGroup::File => self.apply_file_command(command),
            CommandGroup::Hub => self.apply_hub_command(command),
            CommandGroup::Leaderboard => self.apply_leaderboard_command(command),
            CommandGroup::Run => self.apply_run_command(command),
            CommandGroup::Model => self.apply_model_command(command),
        }
    }

    /// Apply a command of the view group.
    fn apply_view_command(&mut self, command: UiCommand) {
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
            UiCommand::DismissErrors => self.card_errors = None,
            UiCommand::DismissMessage => self.message = None,
            UiCommand::ShowHelp(page) => self.help = page,
            other => self.misrouted(&other),
        }
    }

    /// A command handed to a group's file that does not apply it: a
    /// mistake in [`UiCommand::group`], caught by the tests' debug builds.
    fn misrouted(&self, command: &UiCommand) {
        debug_assert!(
            false,
            "{command:?} is in {:?}, whose file does not apply it",
            command.group()
        );
    }

    /// The shown tab, through its [`TabPanel`].
    fn tab_ui(&mut self, ui: &mut Ui, palette: Palette) {
        let tab = self.state.tab;
        // the Run tab's panes are kept with the persisted state
        self.run_view.panes = self.state.layout.run;
        self.blocks.canvas_share = self.state.layout.canvas_share;
        if tab == Tab::Leaderboard {
            let (choices, model) = self.leaderboard_frame();
            self.leaderboard
                .prepare(LeaderboardFrame { choices, model });
        }
        let live_run_dir = self.run_view.live_run_dir().map(Path::to_path_buf);
        let mut ctx = TabCtx {
            card: card_ctx!(self, palette),
            revision: self.doc.revision,
            folders: Folders {
                task: &self.task_field,
                task_problem: self.task_check.problem.as_deref(),
                task_notes: &self.task_check.notes,
                task_warnings: &self.task_check.warnings,
                runs: &self.state.runs_folder,
            },
            live_run_dir: live_run_dir.as_deref(),
            leaderboard_form: &mut self.state.leaderboard,
        };
        let panel: &mut dyn TabPanel = panel_of!(self, tab);
        panel.ui(ui, &mut ctx, &mut self.commands);
        self.state.layout.run = self.run_view.panes;
        self.state.layout.canvas_share = self.blocks.canvas_share;
    }

    /// Per-frame work outside drawing: finished dialogs and run events.
    pub fn logic(&mut self, ctx: &egui::Context) {
        self.ctx = Some(ctx.clone());
        self.poll_jobs();
        for tab in Tab::ALL {
            self.panel_mut(tab).logic(ctx);
        }
    }

    /// The panel of `tab`.
    pub(super) fn panel_mut(&mut self, tab: Tab) -> &mut dyn TabPanel {
        panel_of!(self, tab)
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
        let card_tab = self.state.tab.shows_card();
        if self.state.layout.show_left && card_tab {
            let max = (window * 0.22).max(170.0);
            let r = egui::Panel::left("studio-left")
                .resizable(true)
                .default_size(self.state.layout.left_width.min(max))
                .size_range(170.0..=max)
                .show(ui, |ui| {
                    // The library and the palette scroll each on their own,
                    // one above the other (not one inside the other, where
                    // the wheel over the library moved the whole panel):
                    // the library in about two fifths of the panel, so the
                    // palette stays in view however many cards there are.
                    ui.add_space(4.0);
                    let room = ui.available_height();
                    let library_height = (room * 0.4).max(160.0).min(room * 0.6);
                    egui::ScrollArea::vertical()
                        .id_salt("library-scroll")
                        .max_height(library_height)
                        .auto_shrink([false, true])
                        .show(ui, |ui| {
                            self.library.ui(
                                ui,
                                &self.state.recent_cards,
                                self.doc.path.as_deref(),
                                &mut self.commands,
                            );
                        });
                    ui.add_space(theme::SECTION_GAP);
                    ui.separator();
                    egui::ScrollArea::both()
                        .id_salt("left-scroll")
                        .auto_shrink([false, false])
                        .show(ui, |ui| {
                            let ectx = card_ctx!(self, palette);
                            palette_ui(ui, &ectx, &mut self.commands);
                        });
                });
            self.state.layout.left_width = r.response.rect.width();
        }
        // the block inspector only where blocks are edited
        if self.state.layout.show_inspector && self.state.tab == Tab::Editor {
            // at least a fifth of a wide window, where long parameter names
            // fit whole, and never under 220 points; the bounds hold for
            // the width egui remembers too (a session that ended in a
            // narrow window left its points there)
            let max = (window * 0.26).max(INSPECTOR_MIN_POINTS);
            let min = (window * INSPECTOR_MIN_SHARE)
                .max(INSPECTOR_MIN_POINTS)
                .min(max);
            // the share it had of a window that changed size
            let mut width = self.state.layout.inspector_width;
            if let Some(before) = self.last_window_width.filter(|w| (w - window).abs() > 0.5) {
                width = self.state.layout.inspector_width * window / before;
                crate::studio::panel::set_panel_size(
                    ui,
                    "studio-inspector",
                    width.clamp(min, max),
                    true,
                );
            }
            let r = egui::Panel::right("studio-inspector")
                .resizable(true)
                .default_size(width.clamp(min, max))
                .size_range(min..=max)
                .show(ui, |ui| {
                    // both ways: a wide parameter row scrolls instead of
                    // widening the panel past its bounds; never narrower
                    // than the panel, which would shrink it to its rows
                    egui::ScrollArea::both()
                        .id_salt("inspector-scroll")
                        .auto_shrink([false, true])
                        .show(ui, |ui| {
                            ui.add_space(4.0);
                            let ectx = card_ctx!(self, palette);
                            inspector_ui(ui, &ectx, &mut self.commands);
                        });
                });
            self.state.layout.inspector_width = r.response.rect.width();
            self.last_window_width = Some(window);
        }
        egui::CentralPanel::default().show(ui, |ui| self.tab_ui(ui, palette));

        self.modals_ui(&ctx);
        self.consent_ui(&ctx);
        self.connect_dialog_ui(&ctx);
        self.model_dialog_ui(&ctx);
        self.help_ui(&ctx);
        drag_preview_ui(&ctx);
        self.apply_commands();
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
                .with_settings_path(crate::engine::model::user_settings::user_settings_path());
            app.launch(launch);
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("the studio window failed: {e}"))
}
