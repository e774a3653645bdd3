//! The card's details: name, namespace, title, summary, tags, license and
//! the texts the hub README is made of (overview, when to use, source).

use egui::{RichText, Ui};

use crate::studio::command::{CardMeta, Commands, UiCommand};
use crate::studio::editor::field_error_ui;
use crate::studio::editor::params_ui::{list_ui, text_field};
use crate::studio::panel::CardCtx;

type Getter = fn(&mut CardMeta) -> &mut String;

/// The single-line and multi-line text fields, in display order.
const FIELDS: [(&str, &str, bool, Getter); 9] = [
    (
        "name",
        "File and hub name: letters, digits, `_` or `-`",
        false,
        |m| &mut m.name,
    ),
    ("namespace", "Hub namespace (NAMESPACE/NAME)", false, |m| {
        &mut m.namespace
    }),
    (
        "title",
        "Display title (defaults to the name)",
        false,
        |m| &mut m.title,
    ),
    (
        "summary",
        "One-line summary (palette, library, README)",
        false,
        |m| &mut m.summary,
    ),
    ("license", "SPDX license id", false, |m| &mut m.license),
    (
        "description",
        "Algorithm notes (markdown; the README's Algorithm section)",
        true,
        |m| &mut m.description,
    ),
    (
        "overview",
        "README \"Overview\" section (markdown)",
        true,
        |m| &mut m.overview,
    ),
    (
        "when_to_use",
        "README \"When to use\" section (markdown)",
        true,
        |m| &mut m.when_to_use,
    ),
    (
        "source",
        "README \"Source\" section: papers, repositories",
        true,
        |m| &mut m.source,
    ),
];

/// Draw the details form.
pub fn details_ui(ui: &mut Ui, ctx: &CardCtx<'_>, commands: &mut Commands) {
    let meta = CardMeta::of(ctx.card);
    egui::Grid::new("card-details")
        .num_columns(2)
        .spacing([12.0, 8.0])
        .min_col_width(110.0)
        .show(ui, |ui| {
            for (key, doc, multiline, get) in FIELDS {
                let label = ui.label(RichText::new(key).monospace()).on_hover_text(doc);
                ui.vertical(|ui| {
                    let mut edited = meta.clone();
                    let field = get(&mut edited);
                    let changed = if multiline {
                        let mut text = field.clone();
                        let r = ui
                            .add(
                                egui::TextEdit::multiline(&mut text)
                                    .desired_rows(4)
                                    .desired_width(ui.available_width().max(200.0)),
                            )
                            .labelled_by(label.id);
                        (r.changed() && text != *field).then_some(text)
                    } else {
                        text_field(ui, label.id, field)
                    };
                    if let Some(text) = changed {
                        *get(&mut edited) = text;
                        commands.push(UiCommand::SetMeta(Box::new(edited)));
                    }
                    if let Some(reason) = ctx.problems.at(key) {
                        field_error_ui(ui, reason);
                    }
                });
                ui.end_row();
                if key == "summary" {
                    let label = ui
                        .label(RichText::new("tags").monospace())
                        .on_hover_text("Keywords for the hub");
                    let new_tags = list_ui(ui, &meta.tags, String::new(), |ui, v| {
                        let mut t = v.clone();
                        let r = ui
                            .add(egui::TextEdit::singleline(&mut t).desired_width(140.0))
                            .labelled_by(label.id);
                        (r.changed() && t != *v).then_some(t)
                    });
                    if let Some(tags) = new_tags {
                        let mut edited = meta.clone();
                        edited.tags = tags;
                        commands.push(UiCommand::SetMeta(Box::new(edited)));
                    }
                    ui.end_row();
                }
            }
        });
}
