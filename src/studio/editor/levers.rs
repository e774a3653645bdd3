//! The cost levers of a card's `general` section, below the loop settings:
//! early stopping (`stop`), the novelty gate (`novelty`) and several
//! objectives with the reference point of their hypervolume (`objectives`,
//! `reference_point`). Typed widgets, validated live like the rest; each
//! change is one `UiCommand::SetGeneral` (undo applies).

use egui::{RichText, Ui};

use crate::engine::card::{General, NoveltySettings};
use crate::engine::genome::Direction;
use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::field_error_ui;
use crate::studio::editor::params_ui::{float_field, int_field, text_field};
use crate::studio::panel::CardCtx;

/// A new value of `general` from the current one.
fn set(commands: &mut Commands, g: &General, change: impl FnOnce(&mut General)) {
    let mut next = g.clone();
    change(&mut next);
    commands.push(UiCommand::SetGeneral(next));
}

fn row(ui: &mut Ui, key: &str, doc: &str) -> egui::Id {
    ui.label(RichText::new(key).monospace())
        .on_hover_text(doc)
        .id
}

fn heading(ui: &mut Ui, text: &str) {
    ui.add_space(8.0);
    ui.label(RichText::new(text).strong());
}

/// Draw the three levers.
pub fn levers_ui(ui: &mut Ui, ctx: &CardCtx<'_>, commands: &mut Commands) {
    let g = &ctx.card.general;
    let errors = |ui: &mut Ui, field: &str| {
        if let Some(reason) = ctx.problems.at(field) {
            field_error_ui(ui, reason);
        }
    };
    heading(ui, "Early stopping (general.stop)");
    egui::Grid::new("general-stop")
        .num_columns(2)
        .spacing([12.0, 8.0])
        .show(ui, |ui| stop_rows(ui, g, commands, &errors));
    heading(ui, "Novelty gate (general.novelty)");
    egui::Grid::new("general-novelty")
        .num_columns(2)
        .spacing([12.0, 8.0])
        .show(ui, |ui| novelty_rows(ui, g, commands, &errors));
    heading(
        ui,
        "Objectives (general.objectives, general.reference_point)",
    );
    objectives_ui(ui, g, commands, &errors);
}

type Errors<'a> = dyn Fn(&mut Ui, &str) + 'a;

/// An optional float rule: a checkbox that sets it to `start`, then its field.
#[expect(clippy::too_many_arguments, reason = "one row's every part")]
fn optional_float(
    ui: &mut Ui,
    key: &str,
    doc: &str,
    toggle: &str,
    value: Option<f64>,
    (start, min, max): (f64, f64, f64),
    errors: &Errors<'_>,
    mut put: impl FnMut(Option<f64>),
) {
    let id = row(ui, key, doc);
    ui.vertical(|ui| {
        ui.horizontal(|ui| {
            let mut on = value.is_some();
            if ui.checkbox(&mut on, toggle).changed() {
                put(on.then_some(start));
            } else if let Some(v) = value
                && let Some(n) = float_field(ui, id, v, min, max)
            {
                put(Some(n));
            }
        });
        errors(ui, &format!("general.{key}"));
    });
    ui.end_row();
}

fn stop_rows(ui: &mut Ui, g: &General, commands: &mut Commands, errors: &Errors<'_>) {
    let stop = &g.stop;
    optional_float(
        ui,
        "stop.target_score",
        "End the run once the best fitness reaches this",
        "stop at a target score",
        stop.target_score,
        (1.0, -1e18, 1e18),
        errors,
        |v| set(commands, g, |n| n.stop.target_score = v),
    );
    let id = row(
        ui,
        "stop.patience",
        "End the run after this many iterations without a new best (counted from the iteration that found it)",
    );
    ui.vertical(|ui| {
        ui.horizontal(|ui| {
            let mut on = stop.patience.is_some();
            if ui.checkbox(&mut on, "stop when the best stalls").changed() {
                set(commands, g, |n| n.stop.patience = on.then_some(20));
            } else if let Some(p) = stop.patience {
                let v = i64::try_from(p).unwrap_or(i64::MAX);
                if let Some(x) = int_field(ui, id, v, 1, 10_000_000) {
                    set(commands, g, |n| {
                        n.stop.patience = Some(u64::try_from(x.max(0)).unwrap_or(0));
                    });
                }
            }
        });
        errors(ui, "general.stop.patience");
    });
    ui.end_row();
    optional_float(
        ui,
        "stop.max_cost_usd",
        "End the run (as stopped early) once it has cost this much, when prices are known",
        "stop at a cost",
        stop.max_cost_usd,
        (1.0, 0.0, 1e18),
        errors,
        |v| set(commands, g, |n| n.stop.max_cost_usd = v),
    );
    optional_float(
        ui,
        "stop.max_wall_secs",
        "End the run once it has taken this many seconds, over all its invocations (a resumed run counts its earlier time)",
        "stop at a wall time",
        stop.max_wall_secs,
        (3600.0, 0.0, 1e12),
        errors,
        |v| set(commands, g, |n| n.stop.max_wall_secs = v),
    );
}

fn novelty_rows(ui: &mut Ui, g: &General, commands: &mut Commands, errors: &Errors<'_>) {
    row(
        ui,
        "novelty",
        "Reject a child too similar to its parent or to one of the fittest programs before it is evaluated",
    );
    let mut on = g.novelty.is_some();
    if ui
        .checkbox(&mut on, "reject near-duplicates before evaluation")
        .changed()
    {
        set(commands, g, |n| {
            n.novelty = on.then(NoveltySettings::default);
        });
    }
    ui.end_row();
    let Some(novelty) = &g.novelty else {
        return;
    };
    let id = row(
        ui,
        "novelty.threshold",
        "A child at or above this similarity is rejected, in (0, 1]",
    );
    ui.vertical(|ui| {
        if let Some(x) = float_field(ui, id, novelty.threshold, 0.0, 1.0) {
            set(commands, g, |n| {
                if let Some(s) = &mut n.novelty {
                    s.threshold = x;
                }
            });
        }
        errors(ui, "general.novelty.threshold");
    });
    ui.end_row();
    let id = row(
        ui,
        "novelty.pool",
        "How many of the fittest programs a child is compared with besides its parent",
    );
    ui.vertical(|ui| {
        if let Some(x) = int_field(ui, id, i64::from(novelty.pool), 0, 1000) {
            set(commands, g, |n| {
                if let Some(s) = &mut n.novelty {
                    s.pool = u32::try_from(x.max(0)).unwrap_or(u32::MAX);
                }
            });
        }
        errors(ui, "general.novelty.pool");
    });
    ui.end_row();
    row(
        ui,
        "novelty.retry",
        "Retry a rejected proposal within its iteration, telling the model what it was too close to",
    );
    let mut retry = novelty.retry;
    if ui
        .checkbox(&mut retry, "retry a rejected proposal")
        .changed()
    {
        set(commands, g, |n| {
            if let Some(s) = &mut n.novelty {
                s.retry = retry;
            }
        });
    }
    ui.end_row();
    let id = row(
        ui,
        "novelty.embeddings_model",
        "Compare by the cosine of embeddings from an OpenAI-compatible /embeddings endpoint serving this model \
         (found as a chat model's endpoint is); off: the token similarity",
    );
    ui.vertical(|ui| {
        ui.horizontal(|ui| {
            let mut by_embeddings = novelty.embeddings_model.is_some();
            if ui
                .checkbox(&mut by_embeddings, "compare by embeddings")
                .changed()
            {
                set(commands, g, |n| {
                    if let Some(s) = &mut n.novelty {
                        s.embeddings_model =
                            by_embeddings.then(|| "text-embedding-3-small".to_owned());
                    }
                });
            } else if let Some(model) = &novelty.embeddings_model
                && let Some(t) = text_field(ui, id, model)
            {
                set(commands, g, |n| {
                    if let Some(s) = &mut n.novelty {
                        s.embeddings_model = Some(t);
                    }
                });
            }
        });
        errors(ui, "general.novelty.embeddings_model");
    });
    ui.end_row();
}

/// The objectives: one row each (its direction as a toggle, its reference
/// value, a remove button), then a field and a button to add one.
fn objectives_ui(ui: &mut Ui, g: &General, commands: &mut Commands, errors: &Errors<'_>) {
    if g.objectives.is_empty() {
        ui.label(
            RichText::new(
                "None: one fitness. Name two or more metrics for a multi-objective search (a task's \
                 config.yaml may name them instead, and then wins).",
            )
            .small()
            .weak(),
        );
    }
    egui::Grid::new("general-objectives")
        .num_columns(2)
        .spacing([12.0, 8.0])
        .show(ui, |ui| {
            for (metric, direction) in &g.objectives {
                let id = row(ui, metric, "An objective and which way is better");
                ui.vertical(|ui| {
                    // wrapped, so Remove stays in view in a narrow window
                    ui.horizontal_wrapped(|ui| {
                        let (now, other) = match direction {
                            Direction::Max => ("max", Direction::Min),
                            Direction::Min => ("min", Direction::Max),
                        };
                        if ui
                            .button(format!("{metric}: {now}"))
                            .on_hover_text("Click to turn the direction")
                            .clicked()
                        {
                            set(commands, g, |n| {
                                n.objectives.insert(metric.clone(), other);
                            });
                        }
                        let reference = g.reference_point.get(metric).copied();
                        let mut on = reference.is_some();
                        if ui
                            .checkbox(&mut on, format!("reference for {metric}"))
                            .on_hover_text(
                                "The reference point's value (one every useful program beats); \
                                 off: the initial program's value",
                            )
                            .changed()
                        {
                            set(commands, g, |n| {
                                if on {
                                    n.reference_point.insert(metric.clone(), 0.0);
                                } else {
                                    n.reference_point.remove(metric);
                                }
                            });
                        } else if let Some(v) = reference
                            && let Some(x) = float_field(ui, id, v, -1e18, 1e18)
                        {
                            set(commands, g, |n| {
                                n.reference_point.insert(metric.clone(), x);
                            });
                        }
                        if ui.button(format!("Remove {metric}")).clicked() {
                            set(commands, g, |n| {
                                n.objectives.remove(metric);
                                n.reference_point.remove(metric);
                            });
                        }
                    });
                    errors(ui, &format!("general.reference_point.{metric}"));
                });
                ui.end_row();
            }
            let id = row(
                ui,
                "new objective",
                "The name of a metric the evaluator reports (added as max; click its direction to turn it)",
            );
            ui.horizontal(|ui| {
                // the button first: the field takes the rest of the row
                let key = egui::Id::unique("new-objective-name");
                let name: String = ui.data(|d| d.get_temp(key)).unwrap_or_default();
                let metric = name.trim().to_owned();
                let addable = !metric.is_empty() && !g.objectives.contains_key(&metric);
                if ui
                    .add_enabled(addable, egui::Button::new("Add objective"))
                    .clicked()
                {
                    set(commands, g, |n| {
                        n.objectives.insert(metric, Direction::Max);
                    });
                    ui.data_mut(|d| d.remove::<String>(key));
                } else if let Some(t) = text_field(ui, id, &name) {
                    ui.data_mut(|d| d.insert_temp(key, t));
                }
            });
            ui.end_row();
        });
    errors(ui, "general.objectives");
}
