//! Typed widgets for one parameter ([`ParamSpec`]): drag values with ranges
//! for numbers, a dropdown for choices, a checkbox for booleans, a "set"
//! toggle for optional values, text fields and list editors. Typed values are
//! kept as typed (a person may type an out-of-range number; the field then
//! shows why it is invalid, and Save/Run say they are disabled).

use egui::{DragValue, Id, Ui};

use crate::engine::component::Slot;
use crate::engine::params::{ParamSpec, ParamType, ParamValue};
use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::field_error_ui;

/// Upper bounds at or above this are "unbounded" (no range hint, slow drag).
const UNBOUNDED: f64 = 1e15;

/// Drag speed for a numeric range: about 1/200 of the span, at least `floor`.
fn drag_speed(min: f64, max: f64, floor: f64) -> f64 {
    if max >= UNBOUNDED || min <= -UNBOUNDED {
        floor
    } else {
        ((max - min) / 200.0).max(floor)
    }
}

/// Hover text describing a numeric range.
pub fn range_hint(min: f64, max: f64) -> String {
    if max >= UNBOUNDED {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    }
}

/// An integer field. Dragging stays inside `min..=max`; typing may leave it
/// (the caller shows the reason). Returns the new value when it changed.
pub fn int_field(ui: &mut Ui, label: Id, value: i64, min: i64, max: i64) -> Option<i64> {
    let mut v = value;
    let response = ui
        .add(DragValue::new(&mut v).speed(drag_speed(min as f64, max as f64, 0.05)))
        .labelled_by(label)
        .on_hover_text(range_hint(min as f64, max as f64));
    if response.dragged() {
        v = v.clamp(min, max);
    }
    (v != value).then_some(v)
}

/// A float field, as [`int_field`].
pub fn float_field(ui: &mut Ui, label: Id, value: f64, min: f64, max: f64) -> Option<f64> {
    let mut v = value;
    let response = ui
        .add(
            DragValue::new(&mut v)
                .speed(drag_speed(min, max, 0.001))
                .max_decimals(6),
        )
        .labelled_by(label)
        .on_hover_text(range_hint(min, max));
    if response.dragged() {
        v = v.clamp(min, max);
    }
    (v != value && !(v.is_nan() && value.is_nan())).then_some(v)
}

/// A text field; multi-line when the text is long or has line breaks.
pub fn text_field(ui: &mut Ui, label: Id, value: &str) -> Option<String> {
    let mut text = value.to_owned();
    let multiline = text.contains('\n') || text.len() > 60;
    let edit = if multiline {
        egui::TextEdit::multiline(&mut text).desired_rows(3)
    } else {
        egui::TextEdit::singleline(&mut text)
    };
    let response = ui
        .add(edit.desired_width(ui.available_width().max(80.0)))
        .labelled_by(label);
    (response.changed() && text != value).then_some(text)
}

fn as_i64(value: &ParamValue) -> Option<i64> {
    match value {
        ParamValue::Int(i) => Some(*i),
        ParamValue::Float(f) if f.fract() == 0.0 && f.is_finite() => Some(*f as i64),
        _ => None,
    }
}

/// Number of columns [`param_row_ui`] uses in a grid.
pub const PARAM_COLUMNS: usize = 2;

/// One parameter as a grid row: its key (hover: doc and default), its typed
/// widget, a reset button when set explicitly, and the reason when invalid.
/// `key_width` is the room the key may take (from the inspector's width).
#[expect(
    clippy::too_many_arguments,
    reason = "the row's parts come from the card, the registry, the problems and the panel"
)]
pub fn param_row_ui(
    ui: &mut Ui,
    slot: Slot,
    spec: &ParamSpec,
    default: &ParamValue,
    explicit: Option<&ParamValue>,
    problem: Option<&str>,
    key_width: f32,
    commands: &mut Commands,
) {
    let value = explicit.cloned().unwrap_or_else(|| default.clone());
    let key_text = egui::RichText::new(spec.key).monospace();
    let key_text = if problem.is_some() {
        key_text.color(ui.visuals().error_fg_color)
    } else if explicit.is_some() {
        key_text.strong()
    } else {
        key_text
    };
    // a long key (suggest_simplification_after_chars) is cut short, so the
    // value stays in view in a narrow inspector; the whole key on hover.
    // Its room is the inspector's (`key_width`), not the grid cell's, which
    // is only as wide as the last frame's cut keys
    let key_max = key_width.max(60.0);
    let natural = ui
        .painter()
        .layout_no_wrap(
            spec.key.to_owned(),
            egui::TextStyle::Monospace.resolve(ui.style()),
            egui::Color32::WHITE,
        )
        .size()
        .x;
    // the key takes its own width (up to its room), so the grid's column is
    // never held at a width an earlier frame cut it to
    let size = egui::vec2(natural.min(key_max), ui.spacing().interact_size.y);
    let label = ui
        .scope(|ui| {
            ui.add_sized(
                size,
                egui::Label::new(key_text)
                    .truncate()
                    .show_tooltip_when_elided(false),
            )
        })
        .inner
        .on_hover_text(format!(
            "{}\n\n{}\ndefault: {}",
            spec.key,
            spec.doc,
            default.display()
        ));
    let mut set = |v: ParamValue| {
        commands.push(UiCommand::SetParam {
            slot,
            key: spec.key.to_owned(),
            value: v,
        });
    };
    let mut reset = false;
    ui.vertical(|ui| {
        ui.horizontal(|ui| {
            // the value takes what the Reset button leaves of the row, so
            // the button stays inside the inspector
            let reset_room = if explicit.is_some() {
                reset_width(ui)
            } else {
                0.0
            };
            let room = (ui.available_width() - reset_room).max(60.0);
            ui.scope(|ui| {
                ui.set_max_width(room);
                value_ui(ui, spec.ty, label.id, &value, default, &mut set);
            });
            if explicit.is_some()
                && ui
                    .small_button("Reset")
                    .on_hover_text(format!("Reset to the default ({})", default.display()))
                    .clicked()
            {
                reset = true;
            }
        });
        if let Some(reason) = problem {
            field_error_ui(ui, reason);
        }
    });
    if reset {
        commands.push(UiCommand::ResetParam {
            slot,
            key: spec.key.to_owned(),
        });
    }
    ui.end_row();
}

/// The room a small Reset button takes in a row, its spacing included.
fn reset_width(ui: &Ui) -> f32 {
    let text = ui
        .painter()
        .layout_no_wrap(
            "Reset".to_owned(),
            egui::TextStyle::Button.resolve(ui.style()),
            egui::Color32::WHITE,
        )
        .size()
        .x;
    text + 2.0 * ui.spacing().button_padding.x + ui.spacing().item_spacing.x + 2.0
}

fn value_ui(
    ui: &mut Ui,
    ty: ParamType,
    label: Id,
    value: &ParamValue,
    default: &ParamValue,
    set: &mut impl FnMut(ParamValue),
) {
    match ty {
        ParamType::Int { min, max } => {
            let v = as_i64(value).or_else(|| as_i64(default)).unwrap_or(min);
            if let Some(n) = int_field(ui, label, v, min, max) {
                set(ParamValue::Int(n));
            }
        }
        ParamType::Float { min, max } => {
            let v = value.as_f64().or_else(|| default.as_f64()).unwrap_or(min);
            if let Some(n) = float_field(ui, label, v, min, max) {
                set(ParamValue::Float(n));
            }
        }
        ParamType::Bool => {
            let mut b = matches!(value, ParamValue::Bool(true));
            let text = if b { "on" } else { "off" };
            if ui.checkbox(&mut b, text).labelled_by(label).changed() {
                set(ParamValue::Bool(b));
            }
        }
        ParamType::Choice(options) => {
            let current = match value {
                ParamValue::Str(s) => s.clone(),
                other => other.display(),
            };
            let mut picked = None;
            // as wide as its text and arrow, at most the room left
            let natural = ui
                .painter()
                .layout_no_wrap(
                    current.clone(),
                    egui::TextStyle::Button.resolve(ui.style()),
                    egui::Color32::WHITE,
                )
                .size()
                .x
                + ui.spacing().icon_width
                + 3.0 * ui.spacing().button_padding.x;
            let width = natural
                .max(ui.spacing().combo_width)
                .min(ui.available_width());
            let response = egui::ComboBox::from_id_salt(label.with("choice"))
                .selected_text(current.as_str())
                .width(width)
                .truncate()
                .show_ui(ui, |ui| {
                    for option in options {
                        if ui.selectable_label(current == *option, *option).clicked() {
                            picked = Some((*option).to_owned());
                        }
                    }
                })
                .response;
            response.labelled_by(label);
            if let Some(p) = picked.filter(|p| *p != current) {
                set(ParamValue::Str(p));
            }
        }
        ParamType::OptionalInt { min, max } => {
            let mut on = !matches!(value, ParamValue::Null);
            if ui
                .checkbox(&mut on, "set")
                .on_hover_text("Unset means the implementation decides (null)")
                .changed()
            {
                set(if on {
                    ParamValue::Int(min.max(0).min(max))
                } else {
                    ParamValue::Null
                });
            } else if on {
                let v = as_i64(value).unwrap_or(min);
                if let Some(n) = int_field(ui, label, v, min, max) {
                    set(ParamValue::Int(n));
                }
            }
        }
        ParamType::OptionalFloat { min, max } => {
            let mut on = !matches!(value, ParamValue::Null);
            if ui
                .checkbox(&mut on, "set")
                .on_hover_text("Unset means the implementation decides (null)")
                .changed()
            {
                set(if on {
                    ParamValue::Float(min.max(0.0).min(max))
                } else {
                    ParamValue::Null
                });
            } else if on {
                let v = value.as_f64().unwrap_or(min);
                if let Some(n) = float_field(ui, label, v, min, max) {
                    set(ParamValue::Float(n));
                }
            }
        }
        ParamType::Text => {
            let current = match value {
                ParamValue::Str(s) => s.clone(),
                ParamValue::Null => String::new(),
                other => other.display(),
            };
            if let Some(t) = text_field(ui, label, &current) {
                set(ParamValue::Str(t));
            }
        }
        ParamType::FloatList { min, max } => {
            let items: Vec<f64> = match value {
                ParamValue::List(items) => {
                    items.iter().map(|i| i.as_f64().unwrap_or(min)).collect()
                }
                _ => Vec::new(),
            };
            if let Some(new) = list_ui(ui, &items, min.max(0.0).min(max), |ui, v| {
                float_field(ui, label, *v, min, max)
            }) {
                set(ParamValue::List(
                    new.into_iter().map(ParamValue::Float).collect(),
                ));
            }
        }
        ParamType::TextList => {
            let items: Vec<String> = match value {
                ParamValue::List(items) => items.iter().map(ParamValue::display).collect(),
                _ => Vec::new(),
            };
            if let Some(new) = list_ui(ui, &items, String::new(), |ui, v| {
                let mut t = v.clone();
                let r = ui
                    .add(egui::TextEdit::singleline(&mut t).desired_width(120.0))
                    .labelled_by(label);
                (r.changed() && t != *v).then_some(t)
            }) {
                set(ParamValue::List(
                    new.into_iter().map(ParamValue::Str).collect(),
                ));
            }
        }
    }
}

/// A list editor: one widget per item with a remove button, and an add
/// button. Returns the new list when it changed.
pub fn list_ui<T: Clone>(
    ui: &mut Ui,
    items: &[T],
    fresh: T,
    mut item_ui: impl FnMut(&mut Ui, &T) -> Option<T>,
) -> Option<Vec<T>> {
    let mut out: Option<Vec<T>> = None;
    ui.vertical(|ui| {
        for (i, item) in items.iter().enumerate() {
            ui.horizontal(|ui| {
                if let Some(v) = item_ui(ui, item) {
                    let list = out.get_or_insert_with(|| items.to_vec());
                    if let Some(slot) = list.get_mut(i) {
                        *slot = v;
                    }
                }
                if ui
                    .small_button("×")
                    .on_hover_text("Remove this item")
                    .clicked()
                {
                    let mut list = out.take().unwrap_or_else(|| items.to_vec());
                    if i < list.len() {
                        list.remove(i);
                    }
                    out = Some(list);
                }
            });
        }
        if ui.small_button("+ add").clicked() {
            let mut list = out.take().unwrap_or_else(|| items.to_vec());
            list.push(fresh.clone());
            out = Some(list);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_and_hints() {
        assert!((drag_speed(0.0, 200.0, 0.05) - 1.0).abs() < 1e-9);
        assert!((drag_speed(0.0, 1e18, 0.05) - 0.05).abs() < 1e-9);
        assert_eq!(range_hint(1.0, 1e18), "at least 1");
        assert_eq!(range_hint(0.0, 1.0), "0 to 1");
        assert_eq!(as_i64(&ParamValue::Float(3.0)), Some(3));
        assert_eq!(as_i64(&ParamValue::Float(3.5)), None);
    }
}
