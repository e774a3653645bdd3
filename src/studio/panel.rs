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
