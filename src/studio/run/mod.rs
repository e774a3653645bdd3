//! The run half of the studio: starts a scaffold on the worker thread, drains
//! its events each frame within a time budget, and shows the fitness plot,
//! the population archive and the genome inspector.
//!
//! Seam used by the studio app (owned by the editor half):
//! - [`RunView::start`] — start a run of a card on a task folder;
//! - [`RunView::logic`] — call once per frame from `App::logic` (drains events);
//! - [`RunView::ui`] — draw the run panel;
//! - [`RunView::status_bar_ui`] — draw progress into the status bar;
//! - [`RunView::is_running`] — true while a run is active (the editor disables
//!   edits that would affect it);
//! - [`RunView::show_archived`] / [`read_archive`] — show a recorded run
//!   read-only; [`RunView::continue_recorded`] — resume one live.
//!
//! Data flow: the worker reports [`RunEvent`]s into a plain [`RunHistory`]
//! that the panels read each frame; a finished run stays browsable until the
//! next [`RunView::start`]. The views of the genomes (plot, tree, table,
//! islands, beam) are [`GenomeView`]s; the toolbar, log and status bar are in
//! `bars.rs`, the resizable panes they are drawn in in `panes.rs`.
//!
//! # What the studio derives from a run
//!
//! - The run view reads only the `RunHistory` built from events (or from an archive). What the
//!   events do not carry, the studio derives: the genealogy from `parent_id` / `inspiration_ids`,
//!   and an island or beam population's structure by **replaying** the card's population block
//!   (`studio/run/structure.rs`): a population is a pure function of its `add` sequence (the
//!   property resume relies on), so feeding a fresh copy (built through the registry from the
//!   block's checked parameters, `Component::detached`) the run's genomes in order, as
//!   `Genome::for_selection` copies, gives the run's islands, MAP-Elites cells, migrations and
//!   beam. The copy is fed a few milliseconds per frame, only while a view needs it; the events
//!   stay small (no structure snapshot per genome).
//! - Views over many genomes cache and cull: the plot's point vectors grow incrementally and are
//!   binned per pixel column; the tree's layout (leaf order: rows sorted by x, edges never cross)
//!   is rebuilt at most every 0.5 s and drawn by binary search over each row, in one mesh.

mod actions;
pub mod agent_view;
mod bars;
pub mod bodies;
pub mod diff_view;
pub mod edit;
pub mod files_view;
pub mod genealogy;
pub mod genealogy_layout;
pub mod history;
pub mod inspector;
pub mod models;
pub mod objectives;
mod panes;
pub mod plot;
pub mod remote;
mod settings_change;
pub mod steer;
pub mod structure;
pub mod table;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui::{RichText, Ui};
use tokio::sync::mpsc::error::TryRecvError;

pub use actions::RunAction;
pub use genealogy::GenealogyView;
pub use history::{ArchivedRun, Metric, RunHistory, read_archive};
pub use inspector::{Inspector, InspectorTab};
pub use plot::FitnessPlot;
pub use table::{ArchiveTable, SortColumn};

use crate::engine::events::{RunCommand, RunEvent, RunStatus, RunSummary};
use crate::engine::genome::{GenomeId, TokenUsage};
use crate::engine::launch::RunPlan;
use crate::engine::model::LanguageModel;
use crate::engine::registry::Registry;
use crate::engine::run_thread::{RunHandle, start};
use crate::studio::command::Commands;
use crate::studio::panel::{TabCtx, TabPanel};

/// A view of a run's genomes (the fitness plot, the genealogy tree, the archive table, the islands and the
/// beam): it reports the genome clicked, which the run view selects everywhere. A new one is a `GenomeView` and a
/// [`SearchView`] variant.
pub trait GenomeView {
    /// Draw `history` into `ui`, marking the `selected` genome. Returns the
    /// genome clicked in this frame, if any.
    fn ui(
        &mut self,
        ui: &mut Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId>;
}

/// Time spent draining events per frame before yielding to drawing.
pub const DRAIN_BUDGET: Duration = Duration::from_millis(5);

/// What the run panel's upper half shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchView {
    /// Fitness over time.
    #[default]
    Plot,
    /// The genealogy tree.
    Tree,
    /// Islands and their MAP-Elites grids (island populations).
    Islands,
    /// The beam's membership over time (beam populations).
    Beam,
    /// Two objectives against each other with the front (two or more
    /// metrics).
    Objectives,
    /// Each model's share of the calls over time (two or more models).
    Models,
}

impl SearchView {
    /// Tab label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Plot => "Plot",
            Self::Tree => "Tree",
            Self::Islands => "Islands",
            Self::Beam => "Beam",
            Self::Objectives => "Objectives",
            Self::Models => "Models",
        }
    }

    /// What the tab shows (tooltip).
    pub fn hint(self) -> &'static str {
        match self {
            Self::Plot => "Fitness of every genome over time, with the best so far",
            Self::Tree => "The genealogy: every genome under its parent, coloured by score",
            Self::Islands => {
                "Each island's MAP-Elites grid, cells coloured by their elite's score; migrants marked"
            }
            Self::Beam => "Which genomes were in the beam, rank by rank, after every change",
            Self::Objectives => {
                "Any two metrics against each other, the non-dominated front drawn through its members"
            }
            Self::Models => {
                "Each model's share of the calls over the run, and how often its children improved"
            }
        }
    }
}

/// The run panel's runtime state (not persisted).
#[derive(Default)]
pub struct RunView {
    /// This frame's clicks on the run, applied after the view is drawn.
    actions: Vec<RunAction>,
    /// What the upper half shows.
    view: SearchView,
    tree: GenealogyView,
    /// The population's islands or beam, replayed from the genomes.
    structure: structure::StructureMirror,
    /// The blocks a card's population is replayed with.
    blocks: Blocks,
    handle: Option<RunHandle>,
    last_error: Option<String>,
    history: RunHistory,
    selected: Option<GenomeId>,
    /// A second genome picked to diff the selected one against.
    picked: Option<GenomeId>,
    plot: FitnessPlot,
    objectives: objectives::ObjectivesView,
    models: models::ModelSharesView,
    table: ArchiveTable,
    inspector: Inspector,
    /// File extension of the task's program (`py`), for highlighting.
    language: String,
    /// A pause was asked for and not yet acknowledged.
    pause_requested: bool,
    /// A stop was asked for and the run has not finished yet.
    stop_requested: bool,
    show_log: bool,
    /// Show what the memory (scratchpad) holds.
    show_memory: bool,
    /// Events applied in the last `logic` call (for tests and the bench).
    last_drained: usize,
    /// The run folder shown read-only, when the history came from an archive.
    viewing: Option<PathBuf>,
    /// The program editor (Edit in the inspector), when open.
    editor: Option<edit::ProgramEditor>,
    /// A genome to select once the events of this frame are applied.
    select_later: Option<GenomeId>,
    /// The notes box under the toolbar.
    notes: steer::NotesBox,
    /// How the plot, table and inspector share the tab (the studio keeps
    /// it with its persisted state).
    pub panes: crate::studio::state::RunPanes,
    /// The room the panes had last frame.
    panes_room: Option<egui::Vec2>,
    /// Which files of the live run's program may change.
    edit_rules: Option<crate::engine::task::program_folder::EditRules>,
    /// The live run's settings, to change them while paused.
    settings: settings_change::LiveSettings,
    /// A run followed through the run service (on a server, or served by
    /// another process here), when the view shows one.
    remote: Option<remote::RemoteLink>,
    /// Genomes whose bodies were asked for (of the server, or read from
    /// the run's archive on a thread) and have not arrived.
    bodies_asked: std::collections::BTreeSet<GenomeId>,
    /// Of those, the ones that could not be had (asked again once another
    /// genome is selected).
    bodies_failed: std::collections::BTreeSet<GenomeId>,
    /// Bodies read back from a run's archive, as they arrive.
    bodies_read: Option<bodies::BodiesRead>,
}

/// The registry a run view builds a card's population with to replay it:
/// the built-in one unless the studio gives its own
/// ([`RunView::with_registry`]).
struct Blocks(Arc<Registry>);

impl Default for Blocks {
    fn default() -> Self {
        Self(Arc::new(Registry::builtin()))
    }
}

fn language_of(task_dir: &Path) -> String {
    std::fs::read_dir(task_dir)
        .ok()
        .and_then(|entries| {
            entries.filter_map(Result::ok).find_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_prefix("initial_program.").map(str::to_owned)
            })
        })
        .unwrap_or_else(|| "py".to_owned())
}

impl RunView {
    /// A run view that replays populations with `registry`'s blocks (the
    /// studio's own, so a block registered beside the built-in ones is
    /// drawn too).
    pub fn with_registry(registry: Arc<Registry>) -> Self {
        Self {
            blocks: Blocks(registry),
            ..Self::default()
        }
    }

    /// Start a run; an error (e.g. thread spawn failure) is shown in the panel.
    /// A run already in progress is stopped; the previous history is
    /// replaced by the new run's.
    pub fn start(&mut self, plan: RunPlan, model: Arc<dyn LanguageModel>, ctx: &egui::Context) {
        if let Some(old) = self.handle.take() {
            old.send(RunCommand::Stop);
        }
        self.language = language_of(plan.task_dir());
        self.load_history(RunHistory::new());
        self.edit_rules = Some(plan.task().edit_rules());
        self.settings.track(&plan);
        self.set_population(&plan.card().population);
        self.objectives
            .set_objectives(plan.card().general.objectives());
        let waker_ctx = ctx.clone();
        match start(
            plan,
            model,
            Some(Arc::new(move || waker_ctx.request_repaint())),
        ) {
            Ok(h) => self.handle = Some(h),
            Err(e) => self.last_error = Some(format!("cannot start the run: {e}")),
        }
    }

    /// Show a recorded run read-only (any live run is stopped).
    pub fn show_archived(&mut self, run: ArchivedRun) {
        self.load_history(run.history);
        self.structure = structure::StructureMirror::for_card_yaml(&run.card_yaml, &self.blocks.0);
        let objectives =
            crate::engine::card::Card::from_yaml(&run.card_yaml, "archive", &self.blocks.0)
                .map(|c| c.general.objectives())
                .unwrap_or_default();
        self.objectives.set_objectives(objectives);
        self.language = language_of(&run.task_dir);
        self.viewing = Some(run.dir);
    }

    /// Continue a recorded run live: `history` is what its archive holds
    /// (from [`read_archive`]); `plan` continues it
    /// ([`RunPlan::resume`]). The view keeps the recorded genomes and adds
    /// the new ones as they arrive.
    pub fn continue_recorded(
        &mut self,
        mut history: RunHistory,
        plan: RunPlan,
        model: Arc<dyn LanguageModel>,
        ctx: &egui::Context,
    ) {
        self.language = language_of(plan.task_dir());
        history.reopen_for_resume();
        self.load_history(history);
        self.edit_rules = Some(plan.task().edit_rules());
        self.settings.track(&plan);
        self.set_population(&plan.card().population);
        self.objectives
            .set_objectives(plan.card().general.objectives());
        let waker_ctx = ctx.clone();
        match start(
            plan,
            model,
            Some(Arc::new(move || waker_ctx.request_repaint())),
        ) {
            Ok(h) => self.handle = Some(h),
            Err(e) => self.last_error = Some(format!("cannot resume the run: {e}")),
        }
    }

    /// The recorded run shown read-only, if any.
    pub fn viewing(&self) -> Option<&Path> {
        self.viewing.as_deref()
    }

    /// The folder the active run records into (`None` when idle or unrecorded).
    pub fn live_run_dir(&self) -> Option<&Path> {
        if !self.is_running() {
            return None;
        }
        self.history
            .info
            .as_ref()
            .and_then(|i| i.run_dir.as_deref())
    }

    /// Show a history that did not come from a live run (a synthetic one, or
    /// one replayed from a record). Any live run is stopped.
    pub fn load_history(&mut self, history: RunHistory) {
        if let Some(old) = self.handle.take() {
            old.send(RunCommand::Stop);
        }
        self.history = history;
        self.selected = None;
        self.picked = None;
        self.plot.reset();
        self.objectives.reset();
        self.models.reset();
        self.tree.reset();
        self.structure = structure::StructureMirror::default();
        self.table.reset();
        self.last_error = None;
        self.pause_requested = false;
        self.stop_requested = false;
        self.viewing = None;
        self.editor = None;
        self.notes.reset();
        self.edit_rules = None;
        self.remote = None;
        self.bodies_asked.clear();
        self.bodies_failed.clear();
        // a read under way for the history before is not taken
        self.bodies_read = None;
    }

    /// Apply an event as if the worker had sent it (replaying a recorded
    /// run, benchmarks).
    pub fn apply_event(&mut self, event: RunEvent) {
        self.history.apply(event);
    }

    /// True while a run is active (started and not finished): a run of
    /// this studio's, or a followed run that is live.
    pub fn is_running(&self) -> bool {
        (self.handle.is_some()
            || self
                .remote
                .as_ref()
                .is_some_and(remote::RemoteLink::is_live))
            && !self.history.is_finished()
    }

    /// Ask the run to pause after the iterations in flight.
    pub fn pause(&mut self) {
        if self.handle.is_some() || self.remote.is_some() {
            self.pause_requested = self.send(RunCommand::Pause);
        }
    }

    /// Continue a paused run.
    pub fn resume(&mut self) {
        if self.handle.is_some() || self.remote.is_some() {
            self.send(RunCommand::Resume);
            self.pause_requested = false;
        }
    }

    /// Stop the run: in-flight iterations are abandoned.
    pub fn stop(&mut self) {
        if self.handle.is_some() || self.remote.is_some() {
            self.stop_requested = self.send(RunCommand::Stop) || self.stop_requested;
        }
    }

    /// Send a program written by a person to the live run, as a child of
    /// `parent` (`outside_markers`: the person overrides the rule that only
    /// the lines between EVOLVE-BLOCK markers may change); false when there
    /// is no live run (or its queue is full).
    pub fn inject(
        &mut self,
        parent: GenomeId,
        program: crate::engine::genome::Tree,
        outside_markers: bool,
    ) -> bool {
        self.is_running()
            && self.send(RunCommand::Inject {
                parent,
                program,
                outside_markers,
            })
    }

    /// Send a steering command to the live run (notes, pin, unpin).
    fn steer(&mut self, cmd: RunCommand) -> bool {
        self.is_running() && self.send(cmd)
    }

    /// Replace the notes for the model (empty: clear them).
    pub fn set_notes(&mut self, text: impl Into<String>) -> bool {
        self.steer(RunCommand::SetNotes(text.into()))
    }

    /// Pin a genome as an inspiration every following selection shows.
    pub fn pin(&mut self, id: GenomeId) -> bool {
        self.steer(RunCommand::Pin(id))
    }

    /// Remove a pin.
    pub fn unpin(&mut self, id: GenomeId) -> bool {
        self.steer(RunCommand::Unpin(id))
    }

    /// Open the editor on genome `id`'s program (a followed run's once its
    /// body is here).
    pub fn open_editor(&mut self, id: GenomeId) {
        if !self.has_body(id) {
            self.last_error = Some(format!(
                "genome #{id}'s program is still being read; try again in a moment"
            ));
            return;
        }
        if let Some(g) = self.history.body(id) {
            self.editor = Some(edit::ProgramEditor::open(
                g,
                self.edit_rules.clone(),
                &self.language,
            ));
        }
    }

    /// The open editor.
    pub fn editor(&self) -> Option<&edit::ProgramEditor> {
        self.editor.as_ref()
    }

    /// The open editor, to change its text (tests, scripted use).
    pub fn editor_mut(&mut self) -> Option<&mut edit::ProgramEditor> {
        self.editor.as_mut()
    }

    /// The notes box, to write its draft (tests, scripted use).
    pub fn notes_box_mut(&mut self) -> &mut steer::NotesBox {
        &mut self.notes
    }

    /// Everything the current (or last) run reported.
    pub fn history(&self) -> &RunHistory {
        &self.history
    }

    /// The selected genome.
    pub fn selected(&self) -> Option<GenomeId> {
        self.selected
    }

    /// Select a genome everywhere (plot ring, table row, inspector).
    pub fn select(&mut self, id: Option<GenomeId>) {
        if id != self.selected {
            for failed in std::mem::take(&mut self.bodies_failed) {
                self.bodies_asked.remove(&failed);
            }
            if let Some(id) = id {
                self.table.scroll_to(id);
            }
        }
        self.selected = id;
    }

    /// The genome picked to diff the selected one against.
    pub fn picked(&self) -> Option<GenomeId> {
        self.picked
    }

    /// Pick a second genome: the inspector's Diff tab compares the selected
    /// genome against it.
    pub fn pick(&mut self, id: Option<GenomeId>) {
        self.picked = id;
        if id.is_some() {
            self.inspector.against_pick = true;
            self.inspector.tab = InspectorTab::Diff;
        }
    }

    /// The inspector's open tab.
    pub fn set_inspector_tab(&mut self, tab: InspectorTab) {
        self.inspector.tab = tab;
    }

    /// What the upper half shows.
    pub fn search_view(&self) -> SearchView {
        self.view
    }

    /// Show the plot, the tree, ...
    pub fn set_search_view(&mut self, view: SearchView) {
        self.view = view;
    }

    /// Replay this population block (a card's) for the islands and beam
    /// views; a flat population shows neither.
    pub fn set_population(&mut self, population: &crate::engine::card::SlotSpec) {
        self.structure = structure::StructureMirror::for_population(population, &self.blocks.0);
    }

    /// The replayed population structure.
    pub fn structure(&self) -> &structure::StructureMirror {
        &self.structure
    }

    /// The genealogy view (its last frame: where nodes were drawn, counts).
    pub fn tree(&self) -> &GenealogyView {
        &self.tree
    }

    /// Where genome `id` was drawn in the tree in the last frame.
    pub fn tree_node_pos(&self, id: GenomeId) -> Option<egui::Pos2> {
        self.tree.screen_pos(&self.history, id)
    }

    /// The plot's y metric.
    pub fn set_metric(&mut self, metric: Metric) {
        self.plot.metric = metric;
    }

    /// How many plot points were drawn in the last frame (after binning).
    pub fn plot_drawn_count(&self) -> usize {
        self.plot.drawn_count()
    }

    /// How many events the last [`Self::logic`] call applied.
    pub fn last_drained(&self) -> usize {
        self.last_drained
    }

    /// Take in one event of the run: what the view does about it, then
    /// the history.
    fn take_event(&mut self, event: RunEvent) {
        match &event {
            RunEvent::GenomeAdmitted { genome, .. }
                if genome.is_by_person()
                    && self
                        .editor
                        .as_ref()
                        .is_some_and(|e| e.pending && Some(e.parent) == genome.parent_id) =>
            {
                // The person's child is in: show it.
                self.editor = None;
                self.select_later = Some(genome.id);
            }
            RunEvent::Log {
                level: crate::engine::events::LogLevel::Error,
                message,
            } if message.starts_with(crate::engine::scaffold::PERSON_REFUSED) => {
                if let Some(e) = self.editor.as_mut().filter(|e| e.pending) {
                    e.pending = false;
                    e.error = Some(message.clone());
                }
            }
            RunEvent::Paused | RunEvent::Resumed => self.pause_requested = false,
            RunEvent::SettingsChanged(_) | RunEvent::SettingsRefused(_) => {
                self.settings.answered(&event);
            }
            RunEvent::Finished(_) => {
                self.pause_requested = false;
                self.stop_requested = false;
            }
            _ => {}
        }
        self.history.apply(event);
        self.last_drained += 1;
    }

    /// Drain events within [`DRAIN_BUDGET`]; ask for another frame if some
    /// remain. Never blocks. Call once per frame.
    pub fn logic(&mut self, ctx: &egui::Context) {
        self.last_drained = 0;
        if self.remote.is_some() {
            self.remote_logic(ctx);
            return;
        }
        if self.handle.is_none() {
            self.want_bodies(ctx);
            return;
        }
        let start = Instant::now();
        let mut disconnected = false;
        while let Some(handle) = self.handle.as_mut() {
            match handle.events.try_recv() {
                Ok(event) => self.take_event(event),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    disconnected = true;
                    break;
                }
            }
            if start.elapsed() >= DRAIN_BUDGET {
                ctx.request_repaint();
                break;
            }
        }
        if let Some(id) = self.select_later.take() {
            self.select(Some(id));
        }
        self.want_bodies(ctx);
        if disconnected {
            if !self.history.is_finished() {
                // The worker ended without its last event (it panicked).
                self.history.apply(RunEvent::Finished(RunSummary {
                    status: RunStatus::Failed("the run thread ended unexpectedly".to_owned()),
                    iterations: self.history.iterations_done,
                    genomes: self.history.genomes.len() as u64,
                    valid: self.history.valid,
                    invalid: self.history.invalid,
                    rejected: self.history.rejected,
                    best_id: self.history.best_id,
                    best_score: self.history.best_score,
                    initial_score: None,
                    usage: TokenUsage::default(),
                    wall_secs: self.history.elapsed().as_secs_f64(),
                    run_wall_secs: self.history.elapsed().as_secs_f64(),
                }));
            }
            self.handle = None;
            self.pause_requested = false;
            self.stop_requested = false;
        } else if self.is_running() {
            // Keep elapsed time ticking even when no event arrives.
            ctx.request_repaint_after(Duration::from_millis(500));
        }
    }

    /// The run panel: toolbar, plot above, archive table and inspector below.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        // A recorded beam run: its beam (shown above the table) comes from
        // the replayed population, as events are not there to carry it.
        if self.viewing.is_some() && self.structure.has_beam() {
            if self.structure.sync(&self.history, structure::FEED_BUDGET) {
                ui.ctx().request_repaint();
            } else if self.history.active.is_empty()
                && let Some(last) = self.structure.beam.last()
            {
                self.history.active = last.members.clone();
            }
        }
        if let Some(e) = &self.last_error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        self.toolbar_ui(ui);
        self.warning_ui(ui);
        self.refused_ui(ui);
        if self.notes.open {
            ui.separator();
            let live = self.is_running();
            match self.notes.ui(ui, &self.history.steering, live) {
                Some(steer::SteerAction::SetNotes(text)) => {
                    self.actions.push(RunAction::SetNotes(text))
                }
                Some(steer::SteerAction::Unpin(id)) => self.actions.push(RunAction::Unpin(id)),
                Some(steer::SteerAction::Select(id)) => self.actions.push(RunAction::Select(id)),
                None => {}
            }
        }
        self.editor_ui(ui.ctx());
        if self.show_log {
            ui.separator();
            self.log_ui(ui);
        }
        if self.show_memory && !self.history.memory_notes.is_empty() {
            ui.separator();
            egui::ScrollArea::vertical()
                .id_salt("run_memory")
                .max_height(160.0)
                .show(ui, |ui| {
                    for note in &self.history.memory_notes {
                        ui.label(RichText::new(note).monospace());
                    }
                });
        }
        ui.separator();
        if self.history.genomes.is_empty() {
            ui.add_space(12.0);
            let text = if self.viewing.is_some() {
                "This recorded run has no genomes."
            } else if self.is_running() {
                "Waiting for the initial program to be evaluated…"
            } else if self.history.is_finished() {
                "The run ended before any genome was admitted; see the log."
            } else {
                "No run yet. Press Start run to run the card on the selected task."
            };
            ui.label(RichText::new(text).weak());
            if self.history.is_finished() && !self.show_log {
                self.log_ui(ui);
            }
            self.apply_actions();
            return;
        }
        if let Some(id) = self.selected.filter(|&id| !self.has_body(id)) {
            ui.label(
                RichText::new(format!(
                    "genome #{id}: its program, prompt and reply are on their way…"
                ))
                .weak(),
            );
        }
        let clicked = self.panes_ui(ui);
        match self.inspector.action.take() {
            Some(inspector::InspectorAction::Edit(id)) => self.actions.push(RunAction::Edit(id)),
            Some(inspector::InspectorAction::Pin(id)) => self.actions.push(RunAction::Pin(id)),
            Some(inspector::InspectorAction::Unpin(id)) => self.actions.push(RunAction::Unpin(id)),
            None => {}
        }
        if let Some(id) = clicked {
            // Ctrl (or Shift) + click picks a second genome to diff against.
            let picking = ui.input(|i| {
                let held = |m: &egui::Modifiers| m.command || m.shift;
                held(&i.modifiers)
                    || i.events.iter().any(|e| {
                        matches!(e, egui::Event::PointerButton { modifiers, .. } if held(modifiers))
                    })
            });
            if picking && self.selected.is_some_and(|s| s != id) {
                self.pick(Some(id));
            } else {
                self.select(Some(id));
            }
        }
        self.apply_actions();
    }
}

/// The Run tab.
impl TabPanel for RunView {
    fn logic(&mut self, ctx: &egui::Context) {
        RunView::logic(self, ctx);
    }

    fn activity(&self) -> Option<&'static str> {
        if self.is_paused() {
            Some("paused")
        } else {
            self.is_running().then_some("running")
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, _ctx: &mut TabCtx<'_>, commands: &mut Commands) {
        self.settings.in_app = true;
        RunView::ui(self, ui);
        self.settings_commands(commands);
        if let Some(genome) = self.inspector.fork_clicked.take()
            && let Some(dir) = self.history.info.as_ref().and_then(|i| i.run_dir.clone())
        {
            commands.push(crate::studio::command::UiCommand::ForkRun { dir, genome });
        }
    }
}
