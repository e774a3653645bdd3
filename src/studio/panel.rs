//! The two shapes a part of the studio's window takes.
//!
//! - A [`TabPanel`] fills the central area when its tab is shown (Blocks,
//!   Details, YAML, Run, Runs, Leaderboard). It reads what it needs from the
//!   rest of the studio in a [`TabCtx`] and says what it wants changed as
//!   [`UiCommand`](crate::studio::command::UiCommand)s; the app applies them
//!   at the end of the frame.
//! - A [`GenomeView`] shows a run's genomes (the fitness plot, the genealogy
//!   tree, the archive table, the islands and the beam) and reports the genome
//!   clicked, which the run view selects everywhere.
//!
//! A new tab is a type implementing [`TabPanel`], a [`Tab`](crate::studio::state::Tab)
//! variant and its line in the app's dispatch; a new run view is a
//! [`GenomeView`] and a [`SearchView`](crate::studio::run::SearchView) variant.

use std::path::Path;

use egui::Ui;

use crate::engine::genome::GenomeId;
use crate::studio::command::Commands;
use crate::studio::editor::EditorCtx;
use crate::studio::editor::general::Folders;
use crate::studio::leaderboard::LeaderboardCtx;
use crate::studio::run::RunHistory;
use crate::studio::state::LeaderboardForm;

/// What a tab reads from the rest of the studio in one frame.
pub struct TabCtx<'a> {
    /// The card, the registry, the card's problems, the selected block,
    /// colours, and whether a run is active.
    pub editor: EditorCtx<'a>,
    /// The card's revision (bumped by every edit).
    pub revision: u64,
    /// The task and runs folders, and what is known about the task folder.
    pub folders: Folders<'a>,
    /// The folder the active run records into, if a run is active.
    pub live_run_dir: Option<&'a Path>,
    /// The Leaderboard tab's cards and model (worked out only while that tab
    /// is shown).
    pub leaderboard: Option<LeaderboardCtx<'a>>,
    /// The Leaderboard tab's form (persisted with the studio's state).
    pub leaderboard_form: &'a mut LeaderboardForm,
}

/// The central area of one tab.
pub trait TabPanel {
    /// Draw the tab into `ui`; what should change goes into `commands`.
    fn ui(&mut self, ui: &mut Ui, ctx: &mut TabCtx<'_>, commands: &mut Commands);
}

/// A view of a run's genomes.
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

/// Set the size along its axis of the panel `salt` that `ui` shows next,
/// as egui remembers it (a drag sets it the same way). For a tab or window
/// that changed size: the pane takes its share of the new size instead of
/// keeping its points. egui keys a panel's state by its parent's scope id
/// and its salt; a panel not shown yet has none and starts at its default.
pub fn set_panel_size(ui: &egui::Ui, salt: &str, size: f32, width: bool) {
    let id = ui.scope_id().with(salt);
    if let Some(mut state) = egui::PanelState::load(ui.ctx(), id) {
        if width {
            state.outer_rect.set_width(size);
        } else {
            state.outer_rect.set_height(size);
        }
        ui.ctx().data_mut(|d| d.insert_persisted(id, state));
    }
}
