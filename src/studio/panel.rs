//! The two shapes a part of the studio's window takes.
//!
//! - A [`TabPanel`] fills the central area when its tab is shown (Blocks,
//!   Details, YAML, Run, Runs, Leaderboard). It reads what it needs from the
//!   rest of the studio in a [`TabCtx`] and says what it wants changed as
//!   [`UiCommand`](crate::studio::command::UiCommand)s; the app applies them
//!   at the end of the frame.
//!
//! What every tab reads ([`TabCtx`]: the card being edited as a [`CardCtx`], the [`Folders`]) is defined here,
//! below the tabs: this module names no tab, so the tabs can import it without a circle. What only one tab needs
//! it keeps itself (the Leaderboard tab's cards and model are handed to that panel by the app).

use std::path::Path;

use egui::Ui;

use crate::engine::card::{Card, Problem};
use crate::engine::component::Slot;
use crate::engine::registry::Registry;
use crate::studio::command::Commands;
use crate::studio::state::LeaderboardForm;
use crate::studio::theme::Palette;

/// What a tab reads from the rest of the studio in one frame.
pub struct TabCtx<'a> {
    /// The card, the registry, the card's problems, the selected block,
    /// colours, and whether a run is active.
    pub card: CardCtx<'a>,
    /// The card's revision (bumped by every edit).
    pub revision: u64,
    /// The task and runs folders, and what is known about the task folder.
    pub folders: Folders<'a>,
    /// The folder the active run records into, if a run is active.
    pub live_run_dir: Option<&'a Path>,
    /// The Leaderboard tab's form (persisted with the studio's state).
    pub leaderboard_form: &'a mut LeaderboardForm,
}

/// The live validation result of the card, looked up by field path.
#[derive(Clone, Debug, Default)]
pub struct Problems(pub Vec<Problem>);

impl Problems {
    /// Validate a card.
    pub fn of(card: &Card, registry: &Registry) -> Self {
        Self(card.validate(registry))
    }

    /// The reason at exactly this field (`selection_policy.n`).
    pub fn at(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|p| p.field == field)
            .map(|p| p.message.as_str())
    }

    /// Every problem under a prefix (`selection_policy`).
    pub fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Problem> + 'a {
        self.0.iter().filter(move |p| {
            p.field == prefix
                || p.field
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }

    /// Whether the card is valid.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// One line for disabled buttons: the first problem and how many more.
    pub fn summary(&self) -> Option<String> {
        let first = self.0.first()?;
        let more = self.0.len() - 1;
        let head = format!("{}: {}", first.field, first.message);
        Some(if more == 0 {
            head
        } else {
            format!("{head} (and {more} more)")
        })
    }
}

/// The card being edited as the tabs read it each frame.
pub struct CardCtx<'a> {
    /// The card being edited.
    pub card: &'a Card,
    /// The implementations.
    pub registry: &'a Registry,
    /// The card's live problems.
    pub problems: &'a Problems,
    /// The selected block.
    pub selected: Slot,
    /// Colours.
    pub palette: Palette,
    /// True while a run is active (edits are still allowed; they affect the next run).
    pub running: bool,
}

/// Where the task and run folders are, for the settings panel.
pub struct Folders<'a> {
    /// The task as typed: a folder, or a built-in task's name.
    pub task: &'a Path,
    /// Why the task folder cannot be used, if so.
    pub task_problem: Option<&'a str>,
    /// What the task folder is (its layout, where its description comes from).
    pub task_notes: &'a [String],
    /// What is wrong with it (missing EVOLVE-BLOCK markers, ...).
    pub task_warnings: &'a [String],
    /// Where runs are recorded.
    pub runs: &'a Path,
}

/// The central area of one tab.
pub trait TabPanel {
    /// Draw the tab into `ui`; what should change goes into `commands`.
    fn ui(&mut self, ui: &mut Ui, ctx: &mut TabCtx<'_>, commands: &mut Commands);

    /// Work outside drawing, every frame, whether the tab is shown or not (taking a worker's events).
    fn logic(&mut self, _ctx: &egui::Context) {}

    /// What the tab's background work is doing, shown beside its label ("running", "paused"); `None` when idle.
    fn activity(&self) -> Option<&'static str> {
        None
    }
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

/// Mark the divider of a resizable panel as something to drag: a short
/// grip across the middle of its edge (egui draws the divider itself as a
/// faint line, the same as a fixed one's). `at` is the middle of the edge;
/// `vertical_divider`: it runs up and down (a side panel's), the grip's
/// dots stack along it.
pub fn divider_grip(ui: &egui::Ui, at: egui::Pos2, vertical_divider: bool) {
    let color = ui.visuals().widgets.inactive.fg_stroke.color;
    let painter = ui.painter();
    for k in -2..=2 {
        let offset = k as f32 * 5.0;
        let p = if vertical_divider {
            at + egui::vec2(0.0, offset)
        } else {
            at + egui::vec2(offset, 0.0)
        };
        painter.circle_filled(p, 1.6, color);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_lookup() {
        let p = Problems(vec![
            Problem::new("selection_policy.n", "too big"),
            Problem::new("selection_policy_x", "other"),
            Problem::new("general.parallel", "bad"),
        ]);
        assert_eq!(p.at("selection_policy.n"), Some("too big"));
        assert_eq!(p.under("selection_policy").count(), 1);
        assert_eq!(p.len(), 3);
        assert_eq!(
            p.summary().unwrap(),
            "selection_policy.n: too big (and 2 more)"
        );
        assert!(Problems::default().summary().is_none());
    }
}
