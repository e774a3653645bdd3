//! Two objectives against each other: every valid genome a point (any two
//! metrics, each with its direction), the non-dominated front over the two
//! drawn as a step line through its members. The directions start from the
//! card's `general.objectives` and can be flipped. Recomputed only when the
//! history or the choice changes.

use egui_plot::{Line, MarkerShape, Plot, PlotPoint, PlotPoints, Points};

use crate::engine::genome::{Direction, GenomeId, Objective, dominates};
use crate::studio::run::GenomeView;
use crate::studio::run::history::RunHistory;
use crate::studio::theme::data;

/// The scatter's state.
#[derive(Default)]
pub struct ObjectivesView {
    /// The card's objectives (the defaults of the axes and directions).
    objectives: Vec<Objective>,
    pub x: Option<String>,
    pub y: Option<String>,
    pub x_direction: Direction,
    pub y_direction: Direction,
    /// (history version, x, y, directions) the cache was built for.
    key: Option<(u64, String, String, Direction, Direction)>,
    points: Vec<PlotPoint>,
    ids: Vec<GenomeId>,
    front: Vec<PlotPoint>,
    front_ids: Vec<GenomeId>,
}

impl ObjectivesView {
    /// Start from these objectives (the first two are the axes: x the
    /// second, y the first).
    pub fn set_objectives(&mut self, objectives: Vec<Objective>) {
        *self = Self::default();
        if let [y, x, ..] = objectives.as_slice() {
            self.y = Some(y.metric.clone());
            self.x = Some(x.metric.clone());
            self.y_direction = y.direction;
            self.x_direction = x.direction;
        }
        self.objectives = objectives;
    }

    /// Forget the cache (another history is shown).
    pub fn reset(&mut self) {
        self.key = None;
    }

    /// The members of the front, in x order (for tests and the bench).
    pub fn front_ids(&self) -> &[GenomeId] {
        &self.front_ids
    }

    fn sync(&mut self, history: &RunHistory) {
        let names: Vec<&String> = history.metric_names.iter().collect();
        if self
            .y
            .as_ref()
            .is_none_or(|m| !history.metric_names.contains(m))
        {
            self.y = names.first().map(|s| (*s).clone());
        }
        if self
            .x
            .as_ref()
            .is_none_or(|m| !history.metric_names.contains(m))
        {
            self.x = names
                .iter()
                .find(|n| Some(**n) != self.y.as_ref())
                .map(|s| (*s).clone());
        }
        let (Some(x), Some(y)) = (self.x.clone(), self.y.clone()) else {
            return;
        };
        let key = (
            history.version,
            x.clone(),
            y.clone(),
            self.x_direction,
            self.y_direction,
        );
        if self.key.as_ref() == Some(&key) {
            return;
        }
        self.points.clear();
        self.ids.clear();
        let sign = |d: Direction| if d == Direction::Max { 1.0 } else { -1.0 };
        let mut signed: Vec<(Vec<f64>, PlotPoint, GenomeId)> = Vec::new();
        for g in history.genomes.iter().filter(|g| g.valid) {
            let (Some(vx), Some(vy)) = (g.scores.get(&x), g.scores.get(&y)) else {
                continue;
            };
            if !(vx.is_finite() && vy.is_finite()) {
                continue;
            }
            let p = PlotPoint::new(*vx, *vy);
            self.points.push(p);
            self.ids.push(g.id);
            signed.push((
                vec![vx * sign(self.x_direction), vy * sign(self.y_direction)],
                p,
                g.id,
            ));
        }
        let mut front: Vec<(PlotPoint, GenomeId)> = signed
            .iter()
            .filter(|(a, _, _)| !signed.iter().any(|(b, _, _)| dominates(b, a)))
            .map(|(_, p, id)| (*p, *id))
            .collect();
        front.sort_by(|a, b| a.0.x.total_cmp(&b.0.x));
        front.dedup_by(|a, b| a.0.x == b.0.x && a.0.y == b.0.y);
        self.front = front.iter().map(|(p, _)| *p).collect();
        self.front_ids = front.iter().map(|(_, id)| *id).collect();
        self.key = Some(key);
    }

    fn controls_ui(&mut self, ui: &mut egui::Ui, history: &RunHistory) {
        ui.horizontal_wrapped(|ui| {
            for (label, metric, direction, salt) in [
                ("x:", &mut self.x, &mut self.x_direction, "objectives_x"),
                ("y:", &mut self.y, &mut self.y_direction, "objectives_y"),
            ] {
                let l = ui.label(label);
                egui::ComboBox::from_id_salt(salt)
                    .selected_text(metric.clone().unwrap_or_else(|| "—".to_owned()))
                    .show_ui(ui, |ui| {
                        for name in &history.metric_names {
                            ui.selectable_value(metric, Some(name.clone()), name);
                        }
                    })
                    .response
                    .labelled_by(l.id);
                let text = match direction {
                    Direction::Max => "higher is better",
                    Direction::Min => "lower is better",
                };
                if ui
                    .small_button(text)
                    .on_hover_text("Click to flip which way is better on this axis")
                    .clicked()
                {
                    *direction = match direction {
                        Direction::Max => Direction::Min,
                        Direction::Min => Direction::Max,
                    };
                }
                ui.separator();
            }
            let (rect, _) = ui.allocate_exact_size(egui::vec2(14.0, 8.0), egui::Sense::hover());
            ui.painter().rect_filled(rect, 2.0, data::BEST);
            ui.label(
                egui::RichText::new(format!(
                    "front ({} of {})",
                    self.front.len(),
                    self.points.len()
                ))
                .small(),
            );
            if self.objectives.len() >= 2 {
                let names: Vec<String> = self.objectives.iter().map(Objective::label).collect();
                ui.label(egui::RichText::new(format!("objectives: {}", names.join(", "))).small());
            }
        });
    }
}

impl GenomeView for ObjectivesView {
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        self.sync(history);
        self.controls_ui(ui, history);
        if history.metric_names.len() < 2 {
            ui.label("The run's genomes report fewer than two metrics: nothing to put against each other.");
            return None;
        }
        let selected_point = selected
            .and_then(|id| self.ids.iter().position(|i| *i == id))
            .map(|i| self.points[i]);
        let x_label = self.x.clone().unwrap_or_default();
        let y_label = self.y.clone().unwrap_or_default();
        let ids = &self.ids;
        let front_ids = &self.front_ids;
        let response = Plot::new("objectives_plot")
            .x_axis_label(x_label.clone())
            .y_axis_label(y_label.clone())
            .label_formatter(move |pos| match pos {
                egui_plot::HoverPosition::NearDataPoint {
                    plot_name,
                    position,
                    index,
                } => {
                    let id = if *plot_name == "front" {
                        front_ids.get(*index)?
                    } else {
                        ids.get(*index)?
                    };
                    Some(format!(
                        "genome #{id}\n{x_label} {}\n{y_label} {}",
                        position.x, position.y
                    ))
                }
                egui_plot::HoverPosition::Elsewhere { .. } => None,
            })
            .show(ui, |plot_ui| {
                plot_ui.points(
                    Points::new("genomes", PlotPoints::Borrowed(&self.points))
                        .color(data::VALID.gamma_multiply(0.8))
                        .radius(2.5)
                        .filled(true),
                );
                if !self.front.is_empty() {
                    plot_ui.line(
                        Line::new("front", PlotPoints::Borrowed(&self.front))
                            .color(data::BEST)
                            .width(2.0),
                    );
                    plot_ui.points(
                        Points::new("front", PlotPoints::Borrowed(&self.front))
                            .color(data::BEST)
                            .shape(MarkerShape::Circle)
                            .radius(4.0)
                            .filled(true),
                    );
                }
                if let Some(p) = selected_point {
                    plot_ui.points(
                        Points::new("", PlotPoints::Owned(vec![p]))
                            .color(data::SELECTED)
                            .filled(false)
                            .radius(6.0)
                            .allow_hover(false),
                    );
                }
            });
        response.response.widget_info(|| {
            egui::WidgetInfo::labeled(egui::Role::Canvas, true, "Objectives scatter")
        });
        if !response.response.clicked() {
            return None;
        }
        let pointer = response.response.interact_pointer_pos()?;
        self.points
            .iter()
            .zip(&self.ids)
            .map(|(p, id)| {
                (
                    response.transform.position_from_point(p).distance(pointer),
                    *id,
                )
            })
            .filter(|(d, _)| *d <= 12.0)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, id)| id)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::events::RunEvent;
    use crate::engine::genome::Genome;
    use crate::engine::selection::PolicyStatus;

    #[test]
    fn the_front_follows_the_directions() {
        let mut h = RunHistory::new();
        for (id, (q, cost)) in [(1.0, 10.0), (2.0, 20.0), (1.5, 30.0), (0.5, 5.0)]
            .into_iter()
            .enumerate()
        {
            let mut g = Genome {
                id: id as u64,
                iteration: id as u64,
                valid: true,
                ..Genome::default()
            };
            g.scores.insert("q".into(), q);
            g.scores.insert("cost".into(), cost);
            h.apply(RunEvent::GenomeAdmitted {
                genome: Arc::new(g),
                best_id: None,
                best_score: None,
                iterations_done: id as u64,
                policy: PolicyStatus::default(),
                active: vec![],
            });
        }
        let mut view = ObjectivesView::default();
        view.set_objectives(vec![
            Objective {
                metric: "q".into(),
                direction: Direction::Max,
                reference: None,
            },
            Objective {
                metric: "cost".into(),
                direction: Direction::Min,
                reference: None,
            },
        ]);
        view.sync(&h);
        // x = cost (lower is better), y = q: #2 (1.5 at 30) is dominated by #1.
        assert_eq!(view.front_ids(), &[3, 0, 1]);
        view.x_direction = Direction::Max;
        view.sync(&h);
        // Both higher: #1 (2 at 20) and #2 (1.5 at 30).
        assert_eq!(view.front_ids(), &[1, 2]);
    }
}
