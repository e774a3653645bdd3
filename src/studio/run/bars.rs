//! The run view's bars: its toolbar (pause, stop, what is shown, the log
//! and memory toggles, the plot's metric), its log, and the run's progress
//! in the studio's status bar.

use egui::{Color32, RichText};

use super::{RunView, history};
use crate::engine::events::{LogLevel, RunStatus};
use crate::studio::run::RunAction;
use crate::studio::run::history::Metric;
use crate::studio::theme::data;

impl RunView {
    pub(super) fn toolbar_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            let running = self.is_running();
            if self.is_paused() {
                let label = if self.history.paused {
                    "Resume"
                } else {
                    "Pausing…"
                };
                if ui
                    .add_enabled(self.history.paused, egui::Button::new(label))
                    .on_hover_text(
                        "continue; settings changed on the Blocks tab meanwhile take effect \
                         from the next iteration when they can change in flight",
                    )
                    .clicked()
                {
                    self.actions.push(RunAction::Resume);
                }
            } else if ui
                .add_enabled(running, egui::Button::new("Pause"))
                .on_hover_text("finish the iterations in flight, then wait")
                .clicked()
            {
                self.actions.push(RunAction::Pause);
            }
            let stop_label = if self.stop_requested {
                "Stopping…"
            } else {
                "Stop"
            };
            if ui
                .add_enabled(
                    running && !self.stop_requested,
                    egui::Button::new(stop_label),
                )
                .on_hover_text("end the run now; iterations in flight are abandoned")
                .clicked()
            {
                self.actions.push(RunAction::Stop);
            }
            ui.separator();
            let state = self.history.state_label();
            let color = match self.history.summary.as_ref().map(|s| &s.status) {
                Some(RunStatus::Failed(_)) => ui.visuals().error_fg_color,
                Some(_) => ui.visuals().weak_text_color(),
                None => ui.visuals().strong_text_color(),
            };
            // The plot's controls take their room on the right first; the
            // run's state, card and hints share what is left, each text
            // truncated (whole on hover, and a failure's whole reason in the
            // log) instead of running under them.
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                let errors = self
                    .history
                    .logs
                    .iter()
                    .filter(|(l, _)| *l == LogLevel::Error)
                    .count();
                let text = if errors > 0 {
                    RichText::new(format!(
                        "Log ({}, {errors} errors)",
                        self.history.logs.len()
                    ))
                    .color(ui.visuals().error_fg_color)
                } else {
                    RichText::new(format!("Log ({})", self.history.logs.len()))
                };
                ui.toggle_value(&mut self.show_log, text);
                ui.toggle_value(&mut self.notes.open, "Notes").on_hover_text(
                    "Notes for the model (added to every following prompt) and the pinned inspirations",
                );
                if !self.history.memory_notes.is_empty() {
                    ui.toggle_value(&mut self.show_memory, "Memory")
                        .on_hover_text("What the run's memory holds now (e.g. the scratchpad the prompts include)");
                }
                let mut metric = self.plot.metric.clone();
                let fitness = self.history.fitness_basis();
                let combo = egui::ComboBox::from_id_salt("plot_metric")
                    .selected_text(metric.label(&fitness))
                    .show_ui(ui, |ui| {
                        ui.selectable_value(&mut metric, Metric::Fitness, Metric::Fitness.label(&fitness));
                        for name in &self.history.metric_names {
                            let m = Metric::Named(name.clone());
                            let text = m.label(&fitness);
                            ui.selectable_value(&mut metric, m, text);
                        }
                    })
                    .response;
                let label = ui.label("y axis:");
                combo.labelled_by(label.id);
                self.plot.metric = metric;
                ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                    if self.handle.is_some() || self.history.started_at.is_some() {
                        let shown = RichText::new(first_line(&state)).color(color).strong();
                        ui.add(egui::Label::new(shown).truncate().show_tooltip_when_elided(false))
                            .on_hover_text(&state);
                    }
                    if let Some(info) = &self.history.info {
                        let text = format!("{} on {}", info.card_name, info.task_name);
                        ui.add(egui::Label::new(&text).truncate().show_tooltip_when_elided(false)).on_hover_text(text);
                    }
                    if let Some(dir) = &self.viewing {
                        let name = dir.file_name().map_or_else(
                            || dir.display().to_string(),
                            |n| n.to_string_lossy().into_owned(),
                        );
                        ui.add(
                            egui::Label::new(
                                RichText::new(format!("viewing {name} (read-only)"))
                                    .color(ui.visuals().warn_fg_color),
                            )
                            .truncate().show_tooltip_when_elided(false),
                        )
                        .on_hover_text(dir.display().to_string());
                    }
                    if running {
                        let hint = if self.history.paused {
                            "settings changed on the Blocks tab apply on Resume"
                        } else {
                            "pause to change settings; card edits apply on Resume or to the next run"
                        };
                        ui.add(egui::Label::new(RichText::new(hint).weak().italics()).truncate());
                    }
                });
            });
        });
    }

    /// While the run waits on a failing model (an attempt failed and is
    /// retried), what the last warning said, in view without the log: one
    /// line, whole on hover.
    pub(super) fn warning_ui(&self, ui: &mut egui::Ui) {
        let Some(warning) = self.history.warning.as_deref() else {
            return;
        };
        if !self.is_running() {
            return;
        }
        let text = RichText::new(format!("Warning: {}", first_line(warning)))
            .color(ui.visuals().warn_fg_color);
        ui.add(
            egui::Label::new(text)
                .truncate()
                .show_tooltip_when_elided(false),
        )
        .on_hover_text(warning);
    }

    pub(super) fn log_ui(&self, ui: &mut egui::Ui) {
        egui::ScrollArea::vertical()
            .id_salt("run_log")
            .max_height(120.0)
            .stick_to_bottom(true)
            .show(ui, |ui| {
                if self.history.logs.is_empty() {
                    ui.label(RichText::new("no log lines").weak());
                }
                for (level, msg) in &self.history.logs {
                    let color = match level {
                        LogLevel::Info => ui.visuals().text_color(),
                        LogLevel::Warn => ui.visuals().warn_fg_color,
                        LogLevel::Error => ui.visuals().error_fg_color,
                    };
                    ui.label(RichText::new(msg).color(color).monospace());
                }
            });
    }

    /// Progress for the status bar: iteration i/N, valid/invalid, elapsed,
    /// ETA, tokens/cost where known, and an "offline model" badge.
    pub fn status_bar_ui(&mut self, ui: &mut egui::Ui) {
        // a followed run's connection first (rightmost)
        if let Some(link) = &self.remote {
            let text = link.label();
            let colour = match link.state {
                super::remote::LinkState::Reconnecting { .. } => ui.visuals().warn_fg_color,
                super::remote::LinkState::Failed(_) => ui.visuals().error_fg_color,
                _ => ui.visuals().text_color(),
            };
            let width = (ui.available_width() * 0.3).clamp(60.0, 320.0);
            ui.scope(|ui| {
                ui.set_max_width(width);
                ui.add(egui::Label::new(RichText::new(&text).color(colour)).truncate())
                    .on_hover_text(&text);
            });
            ui.separator();
        }
        let h = &self.history;
        if self.handle.is_none() && h.started_at.is_none() {
            ui.label(RichText::new("idle").weak());
            return;
        }
        let state = h.state_label();
        // a long reason (a failure's) truncates, whole on hover and in the
        // log, so the run's figures and the card's status stay in view
        let width = (ui.available_width() * 0.3).clamp(60.0, 280.0);
        ui.scope(|ui| {
            ui.set_max_width(width);
            ui.add(
                egui::Label::new(RichText::new(first_line(&state)).strong())
                    .truncate()
                    .show_tooltip_when_elided(false),
            )
            .on_hover_text(&state);
        });
        ui.separator();
        let total = h.max_iterations().map_or("?".to_owned(), |n| n.to_string());
        // the figures after the iteration, most wanted first: each shown
        // while the bar has room for it and the card's status on its left
        // (a narrow window drops the last ones; all of them on hover)
        let mut figures: Vec<(String, Option<Color32>, Option<Color32>, &str)> =
            vec![(format!("{} valid", h.valid), None, None, "")];
        figures.push((
            format!("{} invalid", h.invalid),
            (h.invalid > 0).then(|| ui.visuals().warn_fg_color),
            None,
            "",
        ));
        if h.rejected > 0 {
            figures.push((
                format!("({} rejected before evaluation)", h.rejected),
                None,
                None,
                "children the novelty gate found too close to a program already scored",
            ));
        }
        if let Some(best) = h.best_score {
            figures.push((format!("best {best:.5}"), None, None, ""));
        }
        figures.push((
            format!("elapsed {}", history::format_duration(h.elapsed())),
            None,
            None,
            "",
        ));
        if let Some(eta) = h.eta() {
            figures.push((
                format!("ETA {}", history::format_duration(eta)),
                None,
                None,
                "",
            ));
        }
        if h.usage_known {
            let cost = h
                .usage
                .cost_usd
                .map_or(String::new(), |c| format!(" · ${c:.4}"));
            figures.push((
                format!(
                    "{} tokens{cost}",
                    history::format_tokens(h.usage.total_tokens())
                ),
                None,
                None,
                "",
            ));
        }
        let unsandboxed = h.info.as_ref().and_then(|i| i.unsandboxed.as_deref());
        if let Some(warning) = unsandboxed {
            figures.push((
                " unsandboxed ".to_owned(),
                Some(Color32::WHITE),
                Some(data::UNSANDBOXED_BADGE),
                warning,
            ));
        }
        if h.info.as_ref().is_some_and(|i| i.offline) {
            figures.push((
                " offline model ".to_owned(),
                Some(Color32::BLACK),
                Some(data::OFFLINE_BADGE),
                "the built-in offline model: no endpoint configured; it only tunes numeric literals",
            ));
        }
        let all: Vec<&str> = figures.iter().map(|f| f.0.trim()).collect();
        ui.label(format!("iteration {}/{total}", h.iterations_done))
            .on_hover_text(all.join(" · "));
        let font = egui::TextStyle::Body.resolve(ui.style());
        for (text, colour, background, hover) in figures {
            let width = ui
                .painter()
                .layout_no_wrap(text.clone(), font.clone(), Color32::WHITE)
                .size()
                .x;
            if ui.available_width() < width + STATUS_RESERVE {
                break;
            }
            ui.separator();
            let mut rich = RichText::new(text);
            if let Some(c) = colour {
                rich = rich.color(c);
            }
            if let Some(b) = background {
                rich = rich.background_color(b);
            }
            let label = ui.label(rich);
            if !hover.is_empty() {
                label.on_hover_text(hover);
            }
        }
    }
}

/// What the status bar keeps for the card's status and the last message,
/// left of the run's figures, in points.
const STATUS_RESERVE: f32 = 240.0;

pub(super) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
