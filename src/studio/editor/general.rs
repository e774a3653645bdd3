//! The loop-level settings (max_iterations, seed, inner_retry_times,
//! parallel, budgets) and the task and runs folders, edited with the same
//! typed, live-validated widgets as block parameters.

use egui::{RichText, Ui};

use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::field_error_ui;
use crate::studio::editor::params_ui::{float_field, int_field, text_field};
use crate::studio::panel::{CardCtx, Folders};

fn row(ui: &mut Ui, key: &str, doc: &str) -> egui::Id {
    ui.label(RichText::new(key).monospace())
        .on_hover_text(doc)
        .id
}

/// Draw the general settings grid.
pub fn general_ui(ui: &mut Ui, ctx: &CardCtx<'_>, folders: &Folders<'_>, commands: &mut Commands) {
    let g = &ctx.card.general;
    let problem = |key: &str| ctx.problems.at(&format!("general.{key}"));
    let error_cell = |ui: &mut Ui, key: &str| {
        if let Some(reason) = problem(key) {
            field_error_ui(ui, reason);
        }
    };
    // One labelled integer row: the field, then its error (if any) below it.
    let int_row = |ui: &mut Ui,
                   key: &str,
                   doc: &str,
                   value: i64,
                   (min, max): (i64, i64),
                   set: &mut dyn FnMut(i64)| {
        let id = row(ui, key, doc);
        ui.vertical(|ui| {
            if let Some(n) = int_field(ui, id, value, min, max) {
                set(n);
            }
            error_cell(ui, key);
        });
        ui.end_row();
    };
    egui::Grid::new("general-settings")
        .num_columns(2)
        .spacing([12.0, 8.0])
        .show(ui, |ui| {
            int_row(
                ui,
                "max_iterations",
                "Iterations to run (each selects once)",
                i64::try_from(g.max_iterations).unwrap_or(i64::MAX),
                (1, 10_000_000),
                &mut |n| {
                    let mut next = g.clone();
                    next.max_iterations = u64::try_from(n).unwrap_or(0);
                    commands.push(UiCommand::SetGeneral(next));
                },
            );

            let id = row(ui, "seed", "Seed of the run's random number generator");
            ui.vertical(|ui| {
                let v = i64::try_from(ctx.card.seed).unwrap_or(i64::MAX);
                if let Some(n) = int_field(ui, id, v, 0, i64::MAX) {
                    commands.push(UiCommand::SetSeed(u64::try_from(n.max(0)).unwrap_or(0)));
                }
                error_cell(ui, "seed");
            });
            ui.end_row();

            int_row(
                ui,
                "inner_retry_times",
                "Proposal resamples per iteration on a parse or evaluation failure",
                i64::from(g.inner_retry_times),
                (0, 100),
                &mut |n| {
                    let mut next = g.clone();
                    next.inner_retry_times = u32::try_from(n.max(0)).unwrap_or(u32::MAX);
                    commands.push(UiCommand::SetGeneral(next));
                },
            );

            int_row(
                ui,
                "parallel",
                "Iterations in flight at once (1 = sequential)",
                i64::from(g.parallel),
                (1, 256),
                &mut |n| {
                    let mut next = g.clone();
                    next.parallel = u32::try_from(n.max(0)).unwrap_or(u32::MAX);
                    commands.push(UiCommand::SetGeneral(next));
                },
            );

            int_row(
                ui,
                "max_response_bytes",
                "Bytes of a raw model reply kept on its genome (a longer one keeps its start and its length)",
                i64::try_from(g.max_response_bytes).unwrap_or(i64::MAX),
                (1024, 32 * 1024 * 1024),
                &mut |n| {
                    let mut next = g.clone();
                    next.max_response_bytes = u64::try_from(n.max(0)).unwrap_or(0);
                    commands.push(UiCommand::SetGeneral(next));
                },
            );

            let id = row(
                ui,
                "max_cost_usd",
                "Stop once the run has cost this much (USD)",
            );
            ui.vertical(|ui| {
                ui.horizontal(|ui| {
                    let mut on = g.max_cost_usd.is_some();
                    if ui.checkbox(&mut on, "set").changed() {
                        let mut next = g.clone();
                        next.max_cost_usd = on.then_some(1.0);
                        commands.push(UiCommand::SetGeneral(next));
                    } else if let Some(c) = g.max_cost_usd
                        && let Some(n) = float_field(ui, id, c, 0.0, 1e18)
                    {
                        let mut next = g.clone();
                        next.max_cost_usd = Some(n);
                        commands.push(UiCommand::SetGeneral(next));
                    }
                });
                error_cell(ui, "max_cost_usd");
            });
            ui.end_row();

            let id = row(
                ui,
                "max_tokens",
                "Stop once the run has used this many model tokens",
            );
            ui.vertical(|ui| {
                ui.horizontal(|ui| {
                    let mut on = g.max_tokens.is_some();
                    if ui.checkbox(&mut on, "set").changed() {
                        let mut next = g.clone();
                        next.max_tokens = on.then_some(1_000_000);
                        commands.push(UiCommand::SetGeneral(next));
                    } else if let Some(t) = g.max_tokens {
                        let v = i64::try_from(t).unwrap_or(i64::MAX);
                        if let Some(n) = int_field(ui, id, v, 1, i64::MAX) {
                            let mut next = g.clone();
                            next.max_tokens = Some(u64::try_from(n.max(0)).unwrap_or(0));
                            commands.push(UiCommand::SetGeneral(next));
                        }
                    }
                });
                error_cell(ui, "max_tokens");
            });
            ui.end_row();

            let id = row(
                ui,
                "temperature",
                "The model's sampling temperature (the card's llm.temperature; a model of the card \
                 may set its own); unset: the endpoint's or the provider's default. Changes in \
                 flight: pause, change it, Resume",
            );
            ui.vertical(|ui| {
                ui.horizontal(|ui| {
                    let t = ctx.card.llm.as_ref().and_then(|l| l.temperature);
                    let mut on = t.is_some();
                    if ui.checkbox(&mut on, "set").changed() {
                        commands.push(UiCommand::SetTemperature(on.then_some(0.7)));
                    } else if let Some(t) = t
                        && let Some(n) = float_field(ui, id, t, 0.0, 2.0)
                    {
                        commands.push(UiCommand::SetTemperature(Some(n)));
                    }
                });
                if let Some(reason) = ctx.problems.at("llm.temperature") {
                    field_error_ui(ui, reason);
                }
            });
            ui.end_row();

            let id = row(
                ui,
                "task folder",
                "A task folder: initial_program.* and evaluator.py (OpenEvolve), or initial.* and evaluate.py \
                 (ShinkaEvolve); or the name of a built-in task (circle_packing, fit_package, ...)",
            );
            ui.vertical(|ui| {
                // never wider than the room left: long paths and notes truncate
                ui.set_max_width(ui.available_width());
                ui.horizontal(|ui| {
                    if ui.button("Browse…").clicked() {
                        commands.push(UiCommand::BrowseTask);
                    }
                    ui.menu_button("Built-in tasks", |ui| {
                        for task in crate::engine::builtin::TASKS {
                            if ui.button(task.name).clicked() {
                                commands.push(UiCommand::SetTaskFolder(task.name.into()));
                                ui.close();
                            }
                        }
                    })
                    .response
                    .on_hover_text(
                        "The tasks shipped with galapagos (written out into your data folder when chosen); \
                         their names also work typed in the field",
                    );
                    let text = folders.task.display().to_string();
                    if let Some(t) = text_field(ui, id, &text) {
                        commands.push(UiCommand::SetTaskFolder(t.into()));
                    }
                });
                if let Some(reason) = folders.task_problem {
                    field_error_ui(ui, reason);
                }
                for note in folders.task_notes {
                    ui.add(egui::Label::new(RichText::new(note.as_str()).small().weak()).truncate().show_tooltip_when_elided(false))
                        .on_hover_text(note.as_str());
                }
                for warning in folders.task_warnings {
                    let text = format!("warning: {warning}");
                    ui.add(
                        egui::Label::new(
                            RichText::new(&text)
                                .small()
                                .color(ui.visuals().warn_fg_color),
                        )
                        .truncate().show_tooltip_when_elided(false),
                    )
                    .on_hover_text(text);
                }
            });
            ui.end_row();

            let id = row(
                ui,
                "runs folder",
                "Runs are recorded in <runs folder>/<card>-<task>-<time>",
            );
            let text = folders.runs.display().to_string();
            if let Some(t) = text_field(ui, id, &text) {
                commands.push(UiCommand::SetRunsFolder(t.into()));
            }
            ui.end_row();
        });
}
