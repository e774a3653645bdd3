//! Fitness over time: every genome a point (iteration vs the chosen metric),
//! invalid genomes as red crosses in a band below the valid ones (children
//! the novelty gate rejected unevaluated as violet diamonds there), the
//! best-so-far as a step line drawn on top. Point vectors are cached
//! (extended incrementally as genomes arrive) and what is drawn is binned per
//! pixel column (min and max kept) once the visible count is large. Density
//! controls: point opacity, a window of the most recent N genomes, and the x
//! axis as iteration, time or tokens spent. The legend sits above the plot,
//! never on the data.

use egui::{Color32, Vec2b};
use egui_plot::{Line, MarkerShape, Plot, PlotBounds, PlotPoint, PlotPoints, Points};

use crate::engine::genome::GenomeId;
use crate::studio::run::GenomeView;
use crate::studio::run::history::{Metric, RunHistory};
use crate::studio::theme::data;

/// Draw every point as is up to this many visible points; bin above it.
pub const DECIMATE_ABOVE: usize = 4000;

/// What the x axis measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XAxis {
    /// The genome's iteration.
    #[default]
    Iteration,
    /// Seconds since the run started when the genome arrived (a recorded
    /// run: the genomes' own timings summed in order).
    Time,
    /// Tokens spent up to and including the genome.
    Tokens,
}

impl XAxis {
    /// Axis label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Iteration => "iteration",
            Self::Time => "time (s)",
            Self::Tokens => "tokens",
        }
    }
}

/// Choices of the recent-N window (0: every genome).
pub const RECENT_CHOICES: [usize; 5] = [0, 100, 1000, 10_000, 100_000];

const VALID_NAME: &str = "valid";
const INVALID_NAME: &str = "invalid";
const REJECTED_NAME: &str = "rejected (near-duplicate)";
const BEST_NAME: &str = "best so far";
const PERSON_NAME: &str = "written by a person";

/// One cached point.
#[derive(Clone, Copy, Debug)]
struct Pt {
    x: f64,
    y: f64,
    id: GenomeId,
}

/// What is drawn this frame (after culling and binning).
#[derive(Default)]
struct Drawn {
    valid: Vec<PlotPoint>,
    valid_ids: Vec<GenomeId>,
    invalid: Vec<PlotPoint>,
    invalid_ids: Vec<GenomeId>,
    rejected: Vec<PlotPoint>,
    rejected_ids: Vec<GenomeId>,
    best: Vec<PlotPoint>,
}

/// Key of the drawn set: when it is unchanged, the last drawn set is reused.
#[derive(Clone, Debug, PartialEq)]
struct DrawnKey {
    data_version: u64,
    x_range: Option<(f64, f64)>,
    columns: u32,
    recent: usize,
}

/// The plot's cached state.
pub struct FitnessPlot {
    /// The metric on the y axis.
    pub metric: Metric,
    cached_metric: Metric,
    /// What the x axis measures.
    pub x_axis: XAxis,
    cached_x_axis: XAxis,
    /// Opacity of the points (0.05..=1).
    pub alpha: f32,
    /// Show only the most recent N genomes (0: all).
    pub recent: usize,
    /// Running sums for the time and tokens axes.
    tokens_sum: u64,
    time_sum: f64,
    /// How many genomes of the history are in the caches.
    processed: usize,
    /// Bumped when any cached vector changes.
    data_version: u64,
    valid: Vec<Pt>,
    invalid: Vec<Pt>,
    /// Children the novelty gate rejected unevaluated (drawn in the invalid
    /// band, apart from the invalid ones).
    rejected: Vec<Pt>,
    /// Children written by a person, drawn with their own marker on top
    /// (y: the metric, `None` in the invalid band).
    person: Vec<(Pt, bool)>,
    /// Step-line vertices (x monotone).
    best: Vec<Pt>,
    running_best: Option<f64>,
    max_x: f64,
    y_min: f64,
    y_max: f64,
    drawn: Drawn,
    drawn_key: Option<DrawnKey>,
    /// Plot bounds and auto-bounds flags of the last frame.
    last_bounds: Option<PlotBounds>,
    last_auto: Vec2b,
}

impl Default for FitnessPlot {
    fn default() -> Self {
        Self {
            metric: Metric::default(),
            cached_metric: Metric::default(),
            x_axis: XAxis::default(),
            cached_x_axis: XAxis::default(),
            alpha: 0.8,
            recent: 0,
            tokens_sum: 0,
            time_sum: 0.0,
            processed: 0,
            data_version: 0,
            valid: Vec::new(),
            invalid: Vec::new(),
            rejected: Vec::new(),
            person: Vec::new(),
            best: Vec::new(),
            running_best: None,
            max_x: 0.0,
            y_min: 0.0,
            y_max: 0.0,
            drawn: Drawn::default(),
            drawn_key: None,
            last_bounds: None,
            last_auto: Vec2b::default(),
        }
    }
}

/// The band where invalid genomes are drawn (below every valid point).
fn invalid_band(y_min: f64, y_max: f64) -> f64 {
    if y_min > y_max {
        return 0.0;
    }
    let span = (y_max - y_min).max(y_min.abs() * 0.1).max(1e-9);
    y_min - 0.08 * span
}

impl FitnessPlot {
    /// Bring the caches up to date with `history` (cheap when nothing changed;
    /// appends only the new genomes otherwise).
    pub fn sync(&mut self, history: &RunHistory) {
        let restart = self.processed == 0
            || self.cached_metric != self.metric
            || self.cached_x_axis != self.x_axis
            || history.genomes.len() < self.processed;
        if restart {
            self.valid.clear();
            self.invalid.clear();
            self.rejected.clear();
            self.person.clear();
            self.best.clear();
            self.running_best = None;
            self.processed = 0;
            self.max_x = 0.0;
            self.tokens_sum = 0;
            self.time_sum = 0.0;
            self.cached_x_axis = self.x_axis;
            self.y_min = f64::INFINITY;
            self.y_max = f64::NEG_INFINITY;
            self.cached_metric = self.metric.clone();
            self.data_version += 1;
        }
        if self.processed == history.genomes.len() {
            return;
        }
        for (i, g) in history.genomes.iter().enumerate().skip(self.processed) {
            self.tokens_sum += g.usage.map_or(0, |u| u.total_tokens());
            let t = &g.timings;
            self.time_sum += (t.prompt_ms + t.propose_ms + t.evaluate_ms) / 1000.0;
            let x = match self.x_axis {
                XAxis::Iteration => g.iteration as f64,
                XAxis::Tokens => self.tokens_sum as f64,
                XAxis::Time => history
                    .arrived_secs
                    .get(i)
                    .copied()
                    .unwrap_or(self.time_sum),
            };
            self.max_x = self.max_x.max(x);
            if g.is_by_person() {
                let y = self.metric.value(g);
                self.person.push((
                    Pt {
                        x,
                        y: y.unwrap_or(0.0),
                        id: g.id,
                    },
                    y.is_some(),
                ));
            }
            match self.metric.value(g) {
                Some(y) => {
                    self.valid.push(Pt { x, y, id: g.id });
                    self.y_min = self.y_min.min(y);
                    self.y_max = self.y_max.max(y);
                    // An unconfirmed genome is plotted, never the best.
                    if !g.unconfirmed() && self.running_best.is_none_or(|b| y > b) {
                        let step_x = self.max_x;
                        if let Some(prev) = self.running_best {
                            self.best.push(Pt {
                                x: step_x,
                                y: prev,
                                id: g.id,
                            });
                        }
                        self.best.push(Pt {
                            x: step_x,
                            y,
                            id: g.id,
                        });
                        self.running_best = Some(y);
                    }
                }
                None if g.rejected().is_some() => self.rejected.push(Pt {
                    x,
                    y: 0.0,
                    id: g.id,
                }),
                None => self.invalid.push(Pt {
                    x,
                    y: 0.0,
                    id: g.id,
                }),
            }
        }
        self.processed = history.genomes.len();
        self.data_version += 1;
    }

    /// Forget every cached point (a new run started); the metric is kept.
    pub fn reset(&mut self) {
        let metric = std::mem::take(&mut self.metric);
        *self = Self {
            metric,
            ..Self::default()
        };
    }

    /// Number of cached points (valid + invalid).
    pub fn point_count(&self) -> usize {
        self.valid.len() + self.invalid.len() + self.rejected.len()
    }

    /// Number of points drawn in the last frame.
    pub fn drawn_count(&self) -> usize {
        self.drawn.valid.len() + self.drawn.invalid.len() + self.drawn.rejected.len()
    }

    fn rebuild_drawn(&mut self, x_range: Option<(f64, f64)>, columns: u32, total: usize) {
        let key = DrawnKey {
            data_version: self.data_version,
            x_range,
            columns,
            recent: self.recent,
        };
        if self.drawn_key.as_ref() == Some(&key) {
            return;
        }
        let band = invalid_band(self.y_min, self.y_max);
        let cols = columns.max(1) as usize;
        let (x0, x1) = x_range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        // The recent-N window: genomes are admitted in id order.
        let first_id = if self.recent > 0 {
            total.saturating_sub(self.recent) as u64
        } else {
            0
        };
        let window_x0 = self
            .valid
            .iter()
            .chain(&self.invalid)
            .chain(&self.rejected)
            .filter(|p| p.id >= first_id)
            .map(|p| p.x)
            .fold(f64::INFINITY, f64::min);
        let visible = |p: &Pt| p.x >= x0 && p.x <= x1 && p.id >= first_id;
        let mut drawn = Drawn::default();
        let visible_count = self.valid.iter().filter(|p| visible(p)).count();
        let (lo, hi) = match x_range {
            Some(r) => r,
            None if self.recent > 0 && window_x0.is_finite() => (window_x0, self.max_x),
            None => (0.0, self.max_x),
        };
        let width = (hi - lo).max(1e-9);
        let col_of = |x: f64| -> usize {
            (((x - lo) / width) * cols as f64).clamp(0.0, (cols - 1) as f64) as usize
        };
        if visible_count <= DECIMATE_ABOVE {
            for p in self.valid.iter().filter(|p| visible(p)) {
                drawn.valid.push(PlotPoint::new(p.x, p.y));
                drawn.valid_ids.push(p.id);
            }
        } else {
            // Per column: the lowest and the highest point.
            let mut lo_hi: Vec<Option<(Pt, Pt)>> = vec![None; cols];
            for p in self.valid.iter().filter(|p| visible(p)) {
                let slot = &mut lo_hi[col_of(p.x)];
                match slot {
                    None => *slot = Some((*p, *p)),
                    Some((a, b)) => {
                        if p.y < a.y {
                            *a = *p;
                        }
                        if p.y > b.y {
                            *b = *p;
                        }
                    }
                }
            }
            for (a, b) in lo_hi.into_iter().flatten() {
                drawn.valid.push(PlotPoint::new(a.x, a.y));
                drawn.valid_ids.push(a.id);
                if b.id != a.id {
                    drawn.valid.push(PlotPoint::new(b.x, b.y));
                    drawn.valid_ids.push(b.id);
                }
            }
        }
        let invisible_count = self.invalid.iter().filter(|p| visible(p)).count();
        if invisible_count <= DECIMATE_ABOVE {
            for p in self.invalid.iter().filter(|p| visible(p)) {
                drawn.invalid.push(PlotPoint::new(p.x, band));
                drawn.invalid_ids.push(p.id);
            }
        } else {
            let mut seen = vec![false; cols];
            for p in self.invalid.iter().filter(|p| visible(p)) {
                let c = col_of(p.x);
                if !seen[c] {
                    seen[c] = true;
                    drawn.invalid.push(PlotPoint::new(p.x, band));
                    drawn.invalid_ids.push(p.id);
                }
            }
        }
        // Rejected children: few by nature (one per near-duplicate), each
        // drawn, or one per column when there are many.
        let mut seen = vec![false; cols];
        let many = self.rejected.len() > DECIMATE_ABOVE;
        for p in self.rejected.iter().filter(|p| visible(p)) {
            let c = col_of(p.x);
            if !many || !seen[c] {
                seen[c] = true;
                drawn.rejected.push(PlotPoint::new(p.x, band));
                drawn.rejected_ids.push(p.id);
            }
        }
        // The step line: keep the first and last vertex of each column, plus
        // one vertex on each side of the visible range.
        if self.recent > 0 && window_x0.is_finite() {
            // The step line from the window's start: the best at that point,
            // then every later step.
            let start = self.best.partition_point(|p| p.x < window_x0);
            if let Some(before) = start.checked_sub(1).and_then(|i| self.best.get(i)) {
                drawn.best.push(PlotPoint::new(window_x0, before.y));
            }
            drawn
                .best
                .extend(self.best[start..].iter().map(|p| PlotPoint::new(p.x, p.y)));
        } else if self.best.len() <= 2 * DECIMATE_ABOVE {
            drawn.best = self.best.iter().map(|p| PlotPoint::new(p.x, p.y)).collect();
        } else {
            let mut last_col = usize::MAX;
            let n = self.best.len();
            for (i, p) in self.best.iter().enumerate() {
                let c = col_of(p.x);
                let next_col = self.best.get(i + 1).map(|q| col_of(q.x));
                if c != last_col || next_col != Some(c) || i + 1 == n {
                    drawn.best.push(PlotPoint::new(p.x, p.y));
                }
                last_col = c;
            }
        }
        // Extend the step line to the latest iteration.
        if let Some(last) = self.best.last()
            && last.x < self.max_x
        {
            drawn.best.push(PlotPoint::new(self.max_x, last.y));
        }
        self.drawn = drawn;
        self.drawn_key = Some(key);
    }

    /// The density controls and the legend, in one row above the plot.
    fn controls_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal_wrapped(|ui| {
            let swatch = |ui: &mut egui::Ui, color: Color32, text: String| {
                let (rect, _) = ui.allocate_exact_size(egui::vec2(14.0, 8.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 2.0, color);
                ui.label(egui::RichText::new(text).small());
            };
            swatch(
                ui,
                data::VALID,
                format!("{VALID_NAME} ({})", self.valid.len()),
            );
            swatch(
                ui,
                data::BAD,
                format!("{INVALID_NAME} ({})", self.invalid.len()),
            );
            if !self.rejected.is_empty() {
                swatch(
                    ui,
                    data::REJECTED,
                    format!("{REJECTED_NAME} ({})", self.rejected.len()),
                );
            }
            swatch(ui, data::BEST, BEST_NAME.to_owned());
            ui.separator();
            let label = ui.label("x:");
            egui::ComboBox::from_id_salt("plot_x_axis")
                .selected_text(self.x_axis.label())
                .show_ui(ui, |ui| {
                    for x in [XAxis::Iteration, XAxis::Time, XAxis::Tokens] {
                        ui.selectable_value(&mut self.x_axis, x, x.label());
                    }
                })
                .response
                .labelled_by(label.id);
            let label = ui.label("recent:");
            let text = |n: usize| {
                if n == 0 {
                    "all".to_owned()
                } else {
                    n.to_string()
                }
            };
            egui::ComboBox::from_id_salt("plot_recent")
                .selected_text(text(self.recent))
                .show_ui(ui, |ui| {
                    for n in RECENT_CHOICES {
                        ui.selectable_value(&mut self.recent, n, text(n));
                    }
                })
                .response
                .labelled_by(label.id)
                .on_hover_text("Show only the most recent genomes");
            let label = ui.label("opacity:");
            ui.add(egui::Slider::new(&mut self.alpha, 0.05..=1.0).fixed_decimals(2))
                .labelled_by(label.id)
                .on_hover_text("Lower it to see where thousands of points pile up");
        });
    }
}

impl GenomeView for FitnessPlot {
    /// Draw the plot. Returns the genome clicked this frame, if any.
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        self.sync(history);
        let columns = ui.available_width().max(50.0) as u32;
        // Cull to the last frame's x range unless the plot follows the data.
        let x_range = match (&self.last_bounds, self.last_auto.x) {
            (Some(b), false) => Some((b.min()[0], b.max()[0])),
            _ => None,
        };
        self.rebuild_drawn(x_range, columns, history.genomes.len());

        let selected_point = selected.and_then(|id| history.get(id)).map(|g| {
            let y = self
                .metric
                .value(g)
                .unwrap_or_else(|| invalid_band(self.y_min, self.y_max));
            let x = match self.x_axis {
                XAxis::Iteration => g.iteration as f64,
                _ => self
                    .valid
                    .iter()
                    .chain(&self.invalid)
                    .chain(&self.rejected)
                    .find(|p| p.id == g.id)
                    .map_or(0.0, |p| p.x),
            };
            PlotPoint::new(x, y)
        });
        self.controls_ui(ui);
        let alpha = self.alpha.clamp(0.05, 1.0);
        let band = invalid_band(self.y_min, self.y_max);
        let first_id = if self.recent > 0 {
            history.genomes.len().saturating_sub(self.recent) as u64
        } else {
            0
        };
        let person: Vec<PlotPoint> = self
            .person
            .iter()
            .filter(|(p, _)| p.id >= first_id)
            .map(|(p, valid)| PlotPoint::new(p.x, if *valid { p.y } else { band }))
            .collect();
        let person_ids: Vec<GenomeId> = self
            .person
            .iter()
            .filter(|(p, _)| p.id >= first_id)
            .map(|(p, _)| p.id)
            .collect();
        let drawn = &self.drawn;
        // the y label runs along the plot's height: cut to fit it there
        let y_label = super::panes::axis_label(ui, &self.metric, &history.fitness_basis());
        let x_label = self.x_axis.label();
        let plot = crate::studio::ticks::value_axis(Plot::new("fitness_plot"))
            .x_axis_label(x_label)
            .y_axis_label(y_label.clone())
            .allow_double_click_reset(true)
            .label_formatter(|pos| match pos {
                egui_plot::HoverPosition::NearDataPoint {
                    plot_name,
                    position,
                    index,
                } => {
                    let (ids, valid) = match *plot_name {
                        VALID_NAME => (&drawn.valid_ids, true),
                        INVALID_NAME => (&drawn.invalid_ids, false),
                        PERSON_NAME => {
                            let id = person_ids.get(*index)?;
                            return Some(format!(
                                "genome #{id} (written by a person)\n{x_label} {}",
                                position.x
                            ));
                        }
                        REJECTED_NAME => {
                            let id = drawn.rejected_ids.get(*index)?;
                            return Some(format!(
                                "genome #{id} (rejected before evaluation: a near-duplicate)\n{x_label} {}",
                                position.x
                            ));
                        }
                        _ => return Some(format!("best so far\n{:.6}", position.y)),
                    };
                    let id = ids.get(*index)?;
                    Some(if valid {
                        format!(
                            "genome #{id}\nscore {:.6}\n{x_label} {}",
                            position.y, position.x
                        )
                    } else {
                        format!("genome #{id} (invalid)\n{x_label} {}", position.x)
                    })
                }
                egui_plot::HoverPosition::Elsewhere { .. } => None,
            });
        let response = plot.show(ui, |plot_ui| {
            plot_ui.points(
                Points::new(VALID_NAME, PlotPoints::Borrowed(&drawn.valid))
                    .color(data::VALID.gamma_multiply(alpha))
                    .radius(2.5)
                    .filled(true),
            );
            if !drawn.invalid.is_empty() {
                plot_ui.points(
                    Points::new(INVALID_NAME, PlotPoints::Borrowed(&drawn.invalid))
                        .color(data::BAD)
                        .shape(MarkerShape::Cross)
                        .radius(5.0),
                );
            }
            if !drawn.rejected.is_empty() {
                plot_ui.points(
                    Points::new(REJECTED_NAME, PlotPoints::Borrowed(&drawn.rejected))
                        .color(data::REJECTED)
                        .shape(MarkerShape::Diamond)
                        .radius(4.0),
                );
            }
            if !person.is_empty() {
                plot_ui.points(
                    Points::new(PERSON_NAME, PlotPoints::Borrowed(&person))
                        .color(data::PERSON)
                        .shape(MarkerShape::Square)
                        .filled(true)
                        .radius(5.0),
                );
            }
            // The best so far on top of the points.
            if !drawn.best.is_empty() {
                plot_ui.line(
                    Line::new(BEST_NAME, PlotPoints::Borrowed(&drawn.best))
                        .color(data::BEST)
                        .width(2.0)
                        .allow_band(false),
                );
            }

            if let Some(p) = selected_point {
                plot_ui.points(
                    Points::new("", PlotPoints::Owned(vec![p]))
                        .color(data::SELECTED)
                        .shape(MarkerShape::Circle)
                        .filled(false)
                        .radius(6.0)
                        .allow_hover(false),
                );
            }
            (plot_ui.plot_bounds(), plot_ui.auto_bounds())
        });
        response.response.widget_info(|| {
            let mut info = egui::WidgetInfo::labeled(egui::Role::Canvas, true, "Fitness plot");
            info.current_text_value = Some(format!("x: {x_label}; y: {y_label}"));
            info
        });
        let (bounds, auto) = response.inner;
        self.last_bounds = Some(bounds);
        self.last_auto = auto;
        if !response.response.clicked() {
            return None;
        }
        let pointer = response.response.interact_pointer_pos()?;
        let transform = &response.transform;
        let mut best: Option<(f32, GenomeId)> = None;
        let candidates = drawn
            .valid
            .iter()
            .zip(&drawn.valid_ids)
            .chain(drawn.invalid.iter().zip(&drawn.invalid_ids))
            .chain(drawn.rejected.iter().zip(&drawn.rejected_ids))
            .chain(person.iter().zip(&person_ids));
        for (p, id) in candidates {
            let d = transform.position_from_point(p).distance(pointer);
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, *id));
            }
        }
        best.filter(|(d, _)| *d <= 12.0).map(|(_, id)| id)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::events::RunEvent;
    use crate::engine::genome::{FITNESS_KEY, Genome};
    use crate::engine::selection::PolicyStatus;

    fn history(n: u64) -> RunHistory {
        let mut h = RunHistory::new();
        for i in 0..n {
            let mut g = Genome {
                id: i,
                iteration: i,
                valid: i % 7 != 3,
                ..Genome::default()
            };
            g.scores.insert(FITNESS_KEY.into(), ((i * 37) % 101) as f64);
            h.apply(RunEvent::GenomeAdmitted {
                genome: Arc::new(g),
                best_id: Some(0),
                best_score: Some(0.0),
                iterations_done: i,
                policy: PolicyStatus::default(),
                active: vec![],
            });
        }
        h
    }

    #[test]
    fn incremental_sync_matches_a_full_rebuild_and_the_step_line_is_monotone() {
        let full = history(500);
        let mut a = FitnessPlot::default();
        a.sync(&full);
        let mut partial = history(0);
        let mut b = FitnessPlot::default();
        for g in &full.genomes {
            partial.genomes.push_head(g.clone());
            partial.version += 1;
            b.sync(&partial);
        }
        assert_eq!(a.valid.len(), b.valid.len());
        assert_eq!(a.invalid.len(), (0..500).filter(|i| i % 7 == 3).count());
        let ys: Vec<f64> = b.best.iter().map(|p| p.y).collect();
        assert!(ys.windows(2).all(|w| w[0] <= w[1]));
        let xs: Vec<f64> = b.best.iter().map(|p| p.x).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(a.best.last().map(|p| p.y), b.best.last().map(|p| p.y));
        b.rebuild_drawn(None, 400, 0);
        assert_eq!(b.drawn.best.last().map(|p| p.x), Some(499.0));
    }

    #[test]
    fn binning_bounds_the_drawn_count_and_keeps_extremes() {
        let h = history(100_000);
        let mut p = FitnessPlot::default();
        p.sync(&h);
        p.rebuild_drawn(None, 800, 0);
        assert!(p.drawn.valid.len() <= 1600, "{}", p.drawn.valid.len());
        assert!(p.drawn.invalid.len() <= 800);
        let max_y = p
            .drawn
            .valid
            .iter()
            .map(|q| q.y)
            .fold(f64::NEG_INFINITY, f64::max);
        let min_y = p
            .drawn
            .valid
            .iter()
            .map(|q| q.y)
            .fold(f64::INFINITY, f64::min);
        assert_eq!((min_y, max_y), (0.0, 100.0));
        // Zoomed in on 1,000 iterations: everything there is drawn.
        p.rebuild_drawn(Some((1000.0, 1999.0)), 800, 0);
        assert_eq!(p.drawn.valid.len() + p.drawn.invalid.len(), 1000);
    }

    #[test]
    fn switching_metric_rebuilds() {
        let h = history(50);
        let mut p = FitnessPlot::default();
        p.sync(&h);
        assert!(!p.valid.is_empty());
        p.metric = Metric::Named("absent".into());
        p.sync(&h);
        assert!(p.valid.is_empty());
        assert_eq!(p.invalid.len(), 50);
    }

    #[test]
    fn the_recent_window_and_the_tokens_axis() {
        let h = history(500);
        let mut p = FitnessPlot {
            recent: 100,
            ..FitnessPlot::default()
        };
        p.sync(&h);
        p.rebuild_drawn(None, 800, h.genomes.len());
        assert_eq!(p.drawn.valid.len() + p.drawn.invalid.len(), 100);
        assert!(p.drawn.valid.iter().all(|q| q.x >= 400.0));
        // The step line starts at the window with the best seen before it.
        let first = p.drawn.best.first().copied().unwrap();
        assert_eq!(first.x, 400.0);
        assert!(
            p.drawn
                .best
                .windows(2)
                .all(|w| w[0].x <= w[1].x && w[0].y <= w[1].y)
        );
        // Tokens: x is the running total (no usage recorded here: all 0),
        // and switching the axis rebuilds the cache.
        p.x_axis = XAxis::Tokens;
        p.sync(&h);
        assert!(p.valid.iter().all(|q| q.x == 0.0));
        p.x_axis = XAxis::Iteration;
        p.sync(&h);
        assert_eq!(p.valid.last().map(|q| q.x), Some(499.0));
    }
}
