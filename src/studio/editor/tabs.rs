//! The card's three tabs: Blocks (the canvas above the general settings),
//! Details (the card's descriptive fields, hub bundles and publishing to a
//! hub) and YAML (the card as it would be saved).

use std::path::PathBuf;

use egui::{RichText, Ui};

use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::canvas::{CanvasView, canvas_ui};
use crate::studio::editor::details::details_ui;
use crate::studio::editor::general::general_ui;
use crate::studio::editor::levers::levers_ui;
use crate::studio::editor::publish::PublishForm;
use crate::studio::panel::{TabCtx, TabPanel};
use crate::studio::theme;

/// The Blocks tab: the loop canvas and the general settings.
#[derive(Default)]
pub struct BlocksTab {
    /// The canvas's pan and zoom.
    pub canvas_view: CanvasView,
}

impl TabPanel for BlocksTab {
    fn ui(&mut self, ui: &mut Ui, ctx: &mut TabCtx<'_>, commands: &mut Commands) {
        // the canvas takes most of the height and zooms to fit it; the
        // general settings scroll below
        let canvas_h = (ui.available_height() * 0.7).clamp(180.0, 480.0);
        let width = ui.available_width();
        // a rect of its own: the zoomed canvas never widens the panel
        let (rect, _) = ui.allocate_exact_size(egui::vec2(width, canvas_h), egui::Sense::hover());
        let mut canvas = ui.new_child(egui::UiBuilder::new().max_rect(rect));
        canvas.set_clip_rect(rect.intersect(ui.clip_rect()));
        canvas_ui(&mut canvas, &ctx.card, commands, &mut self.canvas_view);
        ui.separator();
        egui::ScrollArea::vertical()
            .id_salt("editor-scroll")
            .show(ui, |ui| {
                ui.heading("General");
                ui.add_space(4.0);
                general_ui(ui, &ctx.card, &ctx.folders, commands);
                levers_ui(ui, &ctx.card, commands);
            });
    }
}

/// The Details tab: the card's descriptive fields, then hub bundle export
/// and import, and publishing to a hub.
#[derive(Default)]
pub struct DetailsTab {
    /// The hub-bundle path field (export folder or bundle to import).
    pub bundle_field: String,
    /// The leaderboard a hub export attaches as its README's "Results"
    /// section (a batch folder; empty: none).
    pub results_field: String,
    /// Publish to hub.
    pub publish: PublishForm,
}

impl TabPanel for DetailsTab {
    fn ui(&mut self, ui: &mut Ui, ctx: &mut TabCtx<'_>, commands: &mut Commands) {
        egui::ScrollArea::vertical()
            .id_salt("details-scroll")
            .show(ui, |ui| {
                details_ui(ui, &ctx.card, commands);
                ui.add_space(theme::SECTION_GAP);
                self.hub_ui(ui, ctx, commands);
                ui.add_space(theme::SECTION_GAP);
                self.publish.ui(ui, ctx, commands);
            });
    }
}

impl DetailsTab {
    fn hub_ui(&mut self, ui: &mut Ui, ctx: &TabCtx<'_>, commands: &mut Commands) {
        ui.heading("Hub bundle");
        ui.weak(
            "Export writes NAMESPACE/NAME/ with card.yaml and a README, plus a .tar.gz; \
             import reads such a folder or archive",
        );
        let blocker = ctx.card.problems.summary();
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
                commands.push(UiCommand::ExportBundle(typed.clone()));
            }
            if ui
                .add_enabled(has, egui::Button::new("Import bundle"))
                .on_hover_text("Import the bundle folder or .tar.gz at this path")
                .clicked()
            {
                commands.push(UiCommand::ImportBundle(typed));
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
                commands.push(UiCommand::BrowseExportResults);
            }
        });
    }
}

/// The YAML tab: the card as it would be saved, selectable.
#[derive(Default)]
pub struct YamlTab {
    /// The text, for the card revision it was made from.
    text: Option<(u64, String)>,
}

impl TabPanel for YamlTab {
    fn ui(&mut self, ui: &mut Ui, ctx: &mut TabCtx<'_>, _commands: &mut Commands) {
        let text = match &mut self.text {
            Some((revision, text)) if *revision == ctx.revision => text,
            stale => {
                let fresh = (ctx.revision, ctx.card.card.to_yaml());
                &mut stale.insert(fresh).1
            }
        };
        egui::ScrollArea::both()
            .id_salt("yaml-scroll")
            .show(ui, |ui| {
                // a long line stays one line (scrolled sideways): wrapped,
                // its rest would start at column 0 and read as a new key
                ui.add(
                    egui::Label::new(RichText::new(text.as_str()).monospace())
                        .selectable(true)
                        .extend(),
                );
            });
    }
}
