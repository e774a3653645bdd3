//! The desktop studio (eframe/egui): a block editor of the six slots, card
//! files and hub bundles, a live run view with plot, archive table and
//! genome inspector, a Runs panel (reopen, compare, resume recorded runs) and
//! the model settings dialog. Everything here sits on top of [`crate::engine`]; the
//! engine never imports egui.
//!
//! # How the studio is built
//!
//! The studio (`src/studio/`) is a set of panels around one `App`, in the immediate-mode style of
//! egui: every frame each panel draws from the state it is given and says what should change as a
//! `UiCommand`; the app applies the frame's commands at its end, so no panel mutates the card or
//! the app while another is drawing.
//!
//! - **Two panel shapes.** A tab's central area is a `TabPanel` (`panel.rs`: `ui(ui, &mut TabCtx,
//!   &mut Commands)`): Blocks, Details and YAML (`editor/tabs.rs`), Run (`run::RunView`), Runs
//!   (`runs::RunsPanel`) and Leaderboard (`leaderboard::LeaderboardPanel`). `TabCtx` is what every
//!   tab may read of the rest of the studio in that frame (the card, registry and problems as a
//!   `CardCtx`, the `Folders`, the live run's folder, the Leaderboard's persisted form); `panel.rs`
//!   names no tab, and what only one tab needs the app hands to that panel (the Leaderboard's cards
//!   and model, `LeaderboardPanel::prepare`). A view of a run's genomes is a `GenomeView`
//!   (`run/mod.rs`: `ui(ui, &RunHistory, selected) -> Option<GenomeId>`): the fitness plot, the
//!   genealogy tree, the archive table, and the islands and beam of the replayed population; the
//!   run view draws the one chosen through the trait and selects what it returns everywhere. A new
//!   run view is a `GenomeView` and a `SearchView` variant; what a new tab takes is in
//!   ARCHITECTURE.md (The studio).
//! - **The app** (`app/mod.rs`): the window's layout (toolbar, status bar, the library and palette
//!   on the left, the block inspector on the right, the tab in the middle), the state the panels
//!   share, finished background jobs, and `apply`, which hands each command to its group's file by
//!   `UiCommand::group` (one arm per command, so a new command must be given a group): card edits
//!   go to `command::apply_card_edit` (undo lives there), the view group stays in `app/mod.rs`, and
//!   `app/card_files.rs` (card files, folders, the unsaved-changes question), `app/hub.rs` (bundles,
//!   publishing to a hub folder, listing the hubs' cards and pulling one), `app/run.rs` (the live
//!   and recorded runs), `app/model.rs` (the model runs use and its settings dialog) and
//!   `app/leaderboard.rs` each apply theirs. `app/toolbar.rs` draws the menus, the toolbar, the tab
//!   strip and the status bar and turns the keyboard shortcuts into commands.
//! - **Panes that keep their size.** egui sizes a panel by what was drawn in it last frame, so a
//!   pane whose content takes less than its room (a short beam grid, a one-line inspector page)
//!   would shrink, and a dragged divider would snap back to the content. The Run tab's panes
//!   (`run/panes.rs`: the search views above, the table and the genome inspector below) fill their
//!   room every frame, start at their share of the tab (`state::RunPanes`, persisted with `State`)
//!   and write back the share their divider was dragged to; when the room changes (the window is
//!   resized) they are set to their shares of it through egui's own panel state
//!   (`panel::set_panel_size`), as the block inspector is. Texts that must fit a pane's size rather
//!   than set it (the plot's y label along a squeezed plot, a long choice in the block inspector,
//!   which must leave room for its Reset) are measured and cut to the room, the whole text on
//!   hover; code and diffs keep their lines and scroll.
//! - The run view's steering (`run/edit.rs`: the program editor, a modal; `run/steer.rs`: the notes
//!   box; `run/inspector.rs`: the inspector's Edit / Pin buttons) sends `RunCommand`s to the live run's handle, as
//!   Pause and Stop do; what is in force is what the run reports back (`RunEvent::Steered`, kept in
//!   `RunHistory::steering`, or a recorded run's checkpoint), and the editor closes on the
//!   admission of its child or shows the run's refusal.
//! - Settings while paused (`run/settings_change.rs`): the Run tab's Resume is a `PauseOrResume` command,
//!   and the app resumes a paused run with the Blocks tab's card (its General settings include the
//!   model's temperature, `UiCommand::SetTemperature`, the card's `llm.temperature`)
//!   (`RunView::resume_with`, the model built as for Start run). The view keeps the card the live
//!   run runs (`LiveSettings`) and compares first, so a change that cannot be made keeps the run
//!   paused and is named under the toolbar with **Fork instead** (`UiCommand::ForkInstead`: the app
//!   stops the run and forks it from the selected or best genome with the Blocks card); a change
//!   sent becomes the card compared with once the run reports `SettingsChanged`.
//! - Slow work (file dialogs, reading an archive or a batch folder, import and export) runs on a
//!   thread of `jobs::Jobs` and comes back as a closure that the app applies to itself when it polls, each frame; a run
//!   and a leaderboard batch run on the engine's own threads and are drained within a time budget
//!   per frame.

pub mod app;
pub mod command;
pub mod compare;
pub mod editor;
pub mod help;
pub mod jobs;
pub mod leaderboard;
pub mod library;
pub mod model_ui;
pub mod panel;
pub mod run;
pub mod runs;
pub mod state;
pub mod theme;
mod ticks;

pub use app::{App, StudioLaunch, run_studio};
