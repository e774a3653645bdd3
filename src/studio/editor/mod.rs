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

use crate::engine::card::{Card, Problem};
use crate::engine::component::Slot;
use crate::engine::registry::Registry;
use crate::studio::theme::Palette;

/// A palette item being dragged onto a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DragKind {
    /// The slot the implementation belongs to.
    pub slot: Slot,
    /// Its card `kind`.
    pub kind: String,
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

/// What the editor's panels borrow each frame.
pub struct EditorCtx<'a> {
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

/// The other slots to switch so that `kind` fits in `slot` with the card's
/// blocks, each as (slot, kind, type name): the one compatibility rule of the
/// engine ([`Registry::companions`]).
pub fn companions(ctx: &EditorCtx<'_>, slot: Slot, kind: &str) -> Vec<(Slot, String, String)> {
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
pub fn misfit(ctx: &EditorCtx<'_>, slot: Slot, kind: &str) -> Option<(String, String)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_lookup() {
        let p = Problems(vec![
            Problem {
                field: "selection_policy.n".into(),
                message: "too big".into(),
            },
            Problem {
                field: "selection_policy_x".into(),
                message: "other".into(),
            },
            Problem {
                field: "general.parallel".into(),
                message: "bad".into(),
            },
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
