//! The desktop studio (eframe/egui): a block editor of the six slots, card
//! files and hub bundles, a live run view with plot, archive table and
//! genome inspector, a Runs panel (reopen, compare, resume recorded runs) and
//! the model settings dialog. Everything here sits on top of [`crate::engine`]; the
//! engine never imports egui.

pub mod app;
pub mod command;
pub mod compare;
pub mod editor;
pub mod files;
pub mod help;
pub mod leaderboard;
pub mod library;
pub mod model_ui;
pub mod panel;
pub mod run;
pub mod runs;
pub mod state;
pub mod theme;

pub use app::{App, StudioLaunch, run_studio};
