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
use crate::studio::panel::{TabCtx, TabPanel, divider_grip, set_panel_size};
use crate::studio::theme;

/// The Blocks tab: the loop canvas above, the general settings below, a
/// divider between them the person may drag.
#[derive(Default)]
pub struct BlocksTab {
    /// The canvas's pan and zoom.
    pub canvas_view: CanvasView,
    /// The canvas's share of the tab's height once the person dragged its
    /// divider (the studio keeps it with its persisted state).
    pub canvas_share: Option<f32>,
    /// The room the tab had last frame.
    room: Option<egui::Vec2>,
}

/// The canvas's panel, and its least height in points.
const CANVAS_PANEL: &str = "blocks_canvas_panel";
const MIN_CANVAS: f32 = 120.0;
/// The canvas's share of the tab until its divider is dragged, and the
/// most points that share gives it.
const CANVAS_SHARE: f32 = 0.7;
const MAX_DEFAULT_CANVAS: f32 = 480.0;

impl TabPanel for BlocksTab {
    fn ui(&mut self, ui: &mut Ui, ctx: &mut TabCtx<'_>, commands: &mut Commands) {
        // the canvas takes its share of the height and zooms to fit it; the
        // general settings scroll below. A window of another size: the
        // canvas takes its share of the new height, not the points it had
        let room = ui.available_size();
        let resized = self
            .room
            .is_none_or(|before| (before - room).length() > 0.5);
        self.room = Some(room);
        let max_canvas = (room.y - 60.0).max(MIN_CANVAS);
        let wanted = match self.canvas_share {
            Some(share) => room.y * share,
            None => (room.y * CANVAS_SHARE).min(MAX_DEFAULT_CANVAS),
        };
        let canvas_h = wanted.clamp(MIN_CANVAS.min(max_canvas), max_canvas);
        if resized {
            set_panel_size(ui, CANVAS_PANEL, canvas_h, false);
        }
        let panel = egui::Panel::top(CANVAS_PANEL)
            .resizable(true)
            .default_size(canvas_h)
            .size_range(MIN_CANVAS..=max_canvas)
            .frame(egui::Frame::NONE)
            .show(ui, |ui| {
                // a rect of its own: the zoomed canvas never widens the
                // panel. It stops short of the divider's grab zone: the
                // canvas's scene is a layer above the panel, whose drag
                // would pan the canvas instead of moving the divider
                let mut rect = ui.available_rect_before_wrap();
                ui.allocate_rect(rect, egui::Sense::hover());
                rect.max.y -= ui.style().interaction.resize_grab_radius_side + 1.0;
                let mut canvas = ui.new_child(egui::UiBuilder::new().max_rect(rect));
                canvas.set_clip_rect(rect.intersect(ui.clip_rect()));
                canvas_ui(&mut canvas, &ctx.card, commands, &mut self.canvas_view);
            });
        // the share follows the divider the person drags, and nothing else
        if !resized && room.y > 0.0 && ui.input(|i| i.pointer.any_down()) {
            self.canvas_share = Some(panel.response.rect.height() / room.y);
        }
        let p = panel.response.rect;
        divider_grip(ui, egui::pos2(p.center().x, p.bottom()), false);
        egui::CentralPanel::default()
            .frame(egui::Frame::NONE.inner_margin(egui::Margin {
                top: 6,
                ..egui::Margin::ZERO
            }))
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .id_salt("editor-scroll")
                    .show(ui, |ui| {
                        ui.heading("General");
                        ui.add_space(4.0);
                        general_ui(ui, &ctx.card, &ctx.folders, commands);
                        levers_ui(ui, &ctx.card, commands);
                    });
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
