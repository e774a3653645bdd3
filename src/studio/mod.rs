//! The desktop studio (eframe/egui): a block editor of the six slots, card
//! files and hub bundles, and a live run view with plot, archive table and
//! genome inspector. Everything here sits on top of [`crate::engine`]; the
//! engine never imports egui.

pub mod app;
pub mod command;
pub mod editor;
pub mod files;
pub mod library;
pub mod run;
pub mod state;
pub mod theme;

pub use app::{App, StudioLaunch, run_studio};
