//! The desktop studio (eframe/egui): a block editor of the six slots, card
//! files and hub bundles, and a live run view with plot, archive table and
//! genome inspector. Everything here sits on top of [`crate::engine`]; the
//! engine never imports egui.

pub mod run;
