//! The palette: per slot, every registered implementation with its one-line
//! summary. Click one to put it in its slot, or drag it onto the block.

use egui::{RichText, Sense, Ui};

use crate::engine::component::Slot;
use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::{DragKind, also_switch_text, companions, misfit, plain};
use crate::studio::panel::CardCtx;

/// Draw the palette of all six slots.
pub fn palette_ui(ui: &mut Ui, ctx: &CardCtx<'_>, commands: &mut Commands) {
    ui.strong("Palette");
    ui.weak("Click to use, or drag onto a block");
    for slot in Slot::ALL {
        let current = &ctx.card.slot(slot).kind;
        let infos: Vec<_> = ctx.registry.entries(slot).map(|e| e.info).collect();
        let header = RichText::new(format!("{}  ({})", slot.title(), infos.len()))
            .color(ctx.palette.slot(slot));
        egui::CollapsingHeader::new(header)
            .id_salt(("palette", slot.key()))
            .default_open(slot == ctx.selected)
            .show(ui, |ui| {
                if infos.is_empty() {
                    ui.weak("No implementations registered");
                }
                for info in &infos {
                    let selected = info.kind == current.as_str();
                    let response = ui
                        .add(
                            egui::Button::selectable(selected, info.type_name)
                                .sense(Sense::click_and_drag()),
                        )
                        .on_hover_text(format!("kind: {}\n{}", info.kind, plain(info.summary)));
                    response.dnd_set_drag_payload(DragKind {
                        slot,
                        kind: info.kind.to_owned(),
                    });
                    if response.clicked() {
                        commands.push(UiCommand::SetKind {
                            slot,
                            kind: info.kind.to_owned(),
                        });
                        commands.push(UiCommand::SelectSlot(slot));
                    }
                    ui.add(
                        egui::Label::new(
                            RichText::new(format!("{} — {}", info.kind, plain(info.summary)))
                                .color(ctx.palette.weak),
                        )
                        .wrap(),
                    );
                    // a block that does not go with the card's other blocks:
                    // say what it needs and offer to switch those too
                    let companions = companions(ctx, slot, info.kind);
                    if let Some((why, conflict)) = misfit(ctx, slot, info.kind) {
                        ui.add(
                            egui::Label::new(RichText::new(why).color(ui.visuals().warn_fg_color))
                                .wrap(),
                        );
                        if !companions.is_empty() {
                            let text =
                                format!("{}: {}", info.type_name, also_switch_text(&companions));
                            if ui.small_button(text).on_hover_text(conflict).clicked() {
                                let mut kinds = vec![(slot, info.kind.to_owned())];
                                kinds.extend(companions.into_iter().map(|(s, k, _)| (s, k)));
                                commands.push(UiCommand::SetKinds(kinds));
                                commands.push(UiCommand::SelectSlot(slot));
                            }
                        }
                    }
                    ui.add_space(2.0);
                }
            });
    }
}

/// While a palette item is dragged, draw its name at the pointer.
pub fn drag_preview_ui(ctx: &egui::Context) {
    let Some(payload) = egui::DragAndDrop::payload::<DragKind>(ctx) else {
        return;
    };
    let Some(pos) = ctx.pointer_interact_pos() else {
        return;
    };
    egui::Area::new(egui::Id::unique("palette-drag-preview"))
        .order(egui::Order::Tooltip)
        .fixed_pos(pos + egui::vec2(12.0, 8.0))
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.label(format!("{} into {}", payload.kind, payload.slot.title()));
            });
        });
}
