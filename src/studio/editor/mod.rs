//! The six-slot block editor: the loop canvas, the palette of
//! implementations, the inspector with typed parameter widgets, the general
//! settings and the card details. All of it reads the card and queues
//! [`UiCommand`](crate::studio::command::UiCommand)s; nothing here mutates the card.

pub mod canvas;
pub mod details;
pub mod general;
pub mod inspector;
pub mod levers;
pub mod palette;
pub mod params_ui;
pub mod publish;
pub mod tabs;

use crate::engine::component::Slot;
use crate::studio::panel::CardCtx;

/// A palette item being dragged onto a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DragKind {
    /// The slot the implementation belongs to.
    pub slot: Slot,
    /// Its card `kind`.
    pub kind: String,
}

/// The other slots to switch so that `kind` fits in `slot` with the card's
/// blocks, each as (slot, kind, type name): the one compatibility rule of the
/// engine ([`Registry::companions`]).
pub fn companions(ctx: &CardCtx<'_>, slot: Slot, kind: &str) -> Vec<(Slot, String, String)> {
    ctx.registry
        .companions(slot, kind, |s| ctx.card.slot(s).kind.as_str())
        .into_iter()
        .map(|(s, k)| {
            let name = ctx
                .registry
                .entry(s, k)
                .map_or_else(|_| k.to_owned(), |e| e.info.type_name.to_owned());
            (s, k.to_owned(), name)
        })
        .collect()
}

/// Why `kind` in `slot` would not go with the card's other blocks ("Does
/// not fit: needs a beam population"), and the whole conflict for a hover;
/// `None` when it fits. The palette and the Implementation dropdown say it
/// the same way.
pub fn misfit(ctx: &CardCtx<'_>, slot: Slot, kind: &str) -> Option<(String, String)> {
    let conflict = ctx
        .registry
        .conflicts(|s| {
            if s == slot {
                kind
            } else {
                ctx.card.slot(s).kind.as_str()
            }
        })
        .into_iter()
        .find(|c| c.slot == slot || c.need.slot == slot)?;
    let why = if conflict.slot == slot {
        format!("Does not fit: {}", conflict.need)
    } else {
        format!("Does not fit: {} {}", conflict.type_name, conflict.need)
    };
    Some((why, conflict.to_string()))
}

/// "also switch Population to BeamPopulation" for a list of companions.
pub fn also_switch_text(companions: &[(Slot, String, String)]) -> String {
    let parts: Vec<String> = companions
        .iter()
        .map(|(s, _, name)| format!("{} to {name}", s.title()))
        .collect();
    format!("also switch {}", parts.join(" and "))
}

/// A component's text as the studio's fonts can draw it: the default fonts
/// have no arrow glyphs, so `→` is written `->`.
pub fn plain(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('→') {
        std::borrow::Cow::Owned(text.replace('→', "->"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Show a reason in the error colour right under a field.
pub fn field_error_ui(ui: &mut egui::Ui, reason: &str) {
    ui.label(
        egui::RichText::new(reason.to_owned())
            .small()
            .color(ui.visuals().error_fg_color),
    );
}
