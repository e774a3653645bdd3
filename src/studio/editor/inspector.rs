//! The inspector: the selected block's implementation and its parameters as
//! typed widgets, validated live.

use egui::{RichText, Ui};

use crate::engine::params::ParamValue;

use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::params_ui::{PARAM_COLUMNS, param_row_ui};
use crate::studio::editor::{also_switch_text, companions, field_error_ui, misfit, plain};
use crate::studio::panel::CardCtx;

/// Draw the inspector of `ctx.selected`.
pub fn inspector_ui(ui: &mut Ui, ctx: &CardCtx<'_>, commands: &mut Commands) {
    let slot = ctx.selected;
    let spec = ctx.card.slot(slot);
    ui.label(
        RichText::new(slot.title())
            .heading()
            .color(ctx.palette.slot(slot)),
    );
    ui.label(RichText::new(slot.role()).weak());
    ui.add_space(crate::studio::theme::SECTION_GAP);

    let infos: Vec<_> = ctx.registry.entries(slot).map(|e| e.info).collect();
    let info = infos.iter().find(|i| i.kind == spec.kind);
    let entry = ctx.registry.entry(slot, &spec.kind).ok();
    // the label above its box, so the box has the panel's whole width
    ui.vertical(|ui| {
        let label = ui.label("Implementation");
        let selected_text = info.map_or_else(
            || format!("{} (unknown)", spec.kind),
            |i| format!("{} · {}", i.type_name, i.kind),
        );
        let mut picked = None;
        let response = egui::ComboBox::from_id_salt(("implementation", slot.key()))
            .selected_text(selected_text)
            .width(ui.available_width().max(120.0))
            .truncate()
            .show_ui(ui, |ui| {
                for i in &infos {
                    // a choice that does not go with the other blocks says
                    // so, as the palette does
                    let unfit = (i.kind != spec.kind)
                        .then(|| misfit(ctx, slot, i.kind))
                        .flatten();
                    let name = format!("{} · {}", i.type_name, i.kind);
                    let (text, hover) = match &unfit {
                        Some((_, conflict)) => (
                            RichText::new(format!("{name} (does not fit)"))
                                .color(ui.visuals().warn_fg_color),
                            format!("{}\n{conflict}", plain(i.summary)),
                        ),
                        None => (RichText::new(name), plain(i.summary).into_owned()),
                    };
                    if ui
                        .selectable_label(i.kind == spec.kind, text)
                        .on_hover_text(hover)
                        .clicked()
                    {
                        picked = Some(i.kind.to_owned());
                    }
                }
            })
            .response;
        response.labelled_by(label.id);
        if let Some(kind) = picked {
            commands.push(UiCommand::SetKind { slot, kind });
        }
    });
    if let Some(reason) = ctx.problems.at(&format!("{}.kind", slot.key())) {
        field_error_ui(ui, reason);
    }
    // the one-click fix when this block and another do not go together
    let fix = companions(ctx, slot, &spec.kind);
    if !fix.is_empty() {
        let text = format!("Fix: {}", also_switch_text(&fix));
        if ui
            .button(text)
            .on_hover_text("Switch the other blocks so that this one fits (one undo step)")
            .clicked()
        {
            commands.push(UiCommand::SetKinds(
                fix.into_iter().map(|(s, k, _)| (s, k)).collect(),
            ));
        }
    }
    let Some(info) = info else {
        return;
    };
    ui.add(egui::Label::new(RichText::new(plain(info.summary)).italics()).wrap());
    ui.add_space(crate::studio::theme::SECTION_GAP);

    if info.params.is_empty() {
        ui.weak("This implementation takes no parameters");
    } else {
        ui.strong("Parameters");
        // a key may take up to about half of the inspector's width
        let key_width = ui.available_width() * 0.45;
        egui::Grid::new(("params", slot.key()))
            .num_columns(PARAM_COLUMNS)
            .spacing([12.0, 8.0])
            .striped(false)
            .show(ui, |ui| {
                for p in info.params {
                    let field = format!("{}.{}", slot.key(), p.key);
                    let default = entry
                        .and_then(|e| e.default_of(p.key))
                        .cloned()
                        .unwrap_or(ParamValue::Null);
                    param_row_ui(
                        ui,
                        slot,
                        p,
                        &default,
                        spec.params.get(p.key),
                        ctx.problems.at(&field),
                        key_width,
                        commands,
                    );
                }
            });
    }
    // problems not tied to a declared parameter (unknown keys)
    for problem in ctx.problems.under(slot.key()) {
        let known = problem.field.ends_with(".kind")
            || info
                .params
                .iter()
                .any(|p| problem.field == format!("{}.{}", slot.key(), p.key));
        if !known {
            let key = problem
                .field
                .strip_prefix(&format!("{}.", slot.key()))
                .unwrap_or(&problem.field)
                .to_owned();
            ui.horizontal(|ui| {
                field_error_ui(ui, &format!("{}: {}", problem.field, problem.message));
                if ui.small_button("Remove").clicked() {
                    commands.push(UiCommand::ResetParam { slot, key });
                }
            });
        }
    }
}
