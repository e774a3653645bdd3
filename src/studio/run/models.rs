//! Each model's share of the calls over the run (an ensemble, adaptive or
//! not): for every model, the share of the last `window` calls that went to
//! it, against the iteration, with each model's calls and success rate (a
//! valid child fitter than its parent) in the legend. Derived from the
//! genomes (each names the model that proposed it); recomputed when the
//! history changes.

use std::collections::BTreeMap;

use egui_plot::{Legend, Line, Plot, PlotPoints};

use crate::engine::genome::GenomeId;
use crate::studio::run::GenomeView;
use crate::studio::run::history::RunHistory;
use crate::studio::theme::data;

/// The shares view's state.
pub struct ModelSharesView {
    /// Calls the moving share is taken over.
    pub window: usize,
    key: Option<(u64, usize)>,
    /// Per model: (iteration, share) points, calls, improved.
    series: BTreeMap<String, (Vec<[f64; 2]>, u64, u64)>,
}

impl Default for ModelSharesView {
    fn default() -> Self {
        Self {
            window: 20,
            key: None,
            series: BTreeMap::new(),
        }
    }
}

impl ModelSharesView {
    /// How many models answered in `history` (the view is offered from two).
    pub fn model_count(history: &RunHistory) -> usize {
        let mut names: Vec<&str> = Vec::new();
        for g in &history.genomes {
            if let Some(m) = g.metadata.model.as_deref()
                && !names.contains(&m)
            {
                names.push(m);
                if names.len() > 1 {
                    break;
                }
            }
        }
        names.len()
    }

    /// Forget the cache (another history is shown).
    pub fn reset(&mut self) {
        self.key = None;
    }

    /// Each model's calls and improvements, as last computed.
    pub fn totals(&self) -> Vec<(String, u64, u64)> {
        self.series
            .iter()
            .map(|(name, (_, calls, improved))| (name.clone(), *calls, *improved))
            .collect()
    }

    fn sync(&mut self, history: &RunHistory) {
        let key = (history.version, self.window);
        if self.key == Some(key) {
            return;
        }
        self.series.clear();
        let calls: Vec<(&str, u64, bool)> = history
            .genomes
            .iter()
            .filter_map(|g| {
                let model = g.metadata.model.as_deref()?;
                let parent = g.parent_id.and_then(|id| history.get(id));
                let improved = match (g.fitness(), parent.and_then(|p| p.fitness())) {
                    (Some(c), Some(p)) => c > p,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                Some((model, g.iteration, improved))
            })
            .collect();
        let window = self.window.max(1);
        let names: Vec<&str> = {
            let mut v: Vec<&str> = calls.iter().map(|c| c.0).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for name in names {
            let mut points = Vec::new();
            let mut in_window = 0usize;
            for (i, (model, iteration, _)) in calls.iter().enumerate() {
                if *model == name {
                    in_window += 1;
                }
                if i >= window && calls[i - window].0 == name {
                    in_window -= 1;
                }
                let seen = (i + 1).min(window);
                points.push([*iteration as f64, in_window as f64 / seen as f64]);
            }
            let mine: Vec<&(&str, u64, bool)> = calls.iter().filter(|c| c.0 == name).collect();
            let improved = mine.iter().filter(|c| c.2).count() as u64;
            self.series
                .insert(name.to_owned(), (points, mine.len() as u64, improved));
        }
        self.key = Some(key);
    }
}

impl GenomeView for ModelSharesView {
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        _selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        self.sync(history);
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("share of the last");
            ui.add(egui::DragValue::new(&mut self.window).range(1..=10_000))
                .labelled_by(l.id);
            ui.label("calls");
            ui.separator();
            for (name, (_, calls, improved)) in &self.series {
                ui.label(
                    egui::RichText::new(format!(
                        "{name}: {calls} calls, {:.0}% improved",
                        100.0 * *improved as f64 / (*calls).max(1) as f64
                    ))
                    .small(),
                );
            }
        });
        let response = Plot::new("model_shares_plot")
            .x_axis_label("iteration")
            .y_axis_label("share of calls")
            .include_y(0.0)
            .include_y(1.0)
            .legend(Legend::default())
            .show(ui, |plot_ui| {
                for (i, (name, (points, _, _))) in self.series.iter().enumerate() {
                    plot_ui.line(
                        Line::new(name.as_str(), PlotPoints::from(points.clone()))
                            .color(data::series(i))
                            .width(2.0),
                    );
                }
            });
        response
            .response
            .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "Model shares"));
        None
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::events::RunEvent;
    use crate::engine::genome::{Genome, GenomeMeta};
    use crate::engine::selection::PolicyStatus;

    #[test]
    fn shares_are_taken_over_the_window_and_successes_counted() {
        let mut h = RunHistory::new();
        // #0 the initial program, then a, b, a, a (a improves twice).
        for (id, model, score) in [
            (0u64, None, 0.1),
            (1, Some("a"), 0.2),
            (2, Some("b"), 0.05),
            (3, Some("a"), 0.15),
            (4, Some("a"), 0.3),
        ] {
            let mut g = Genome {
                id,
                iteration: id,
                parent_id: (id > 0).then_some(0),
                valid: true,
                metadata: GenomeMeta {
                    model: model.map(str::to_owned),
                    ..GenomeMeta::default()
                },
                ..Genome::default()
            };
            g.scores.insert("combined_score".into(), score);
            h.apply(RunEvent::GenomeAdmitted {
                genome: Arc::new(g),
                best_id: None,
                best_score: None,
                iterations_done: id,
                policy: PolicyStatus::default(),
                active: vec![],
            });
        }
        assert_eq!(ModelSharesView::model_count(&h), 2);
        let mut view = ModelSharesView {
            window: 2,
            ..ModelSharesView::default()
        };
        view.sync(&h);
        assert_eq!(
            view.totals(),
            vec![("a".to_owned(), 3, 3), ("b".to_owned(), 1, 0)]
        );
        // a's share over the last two calls: 1, 1/2, 1/2, 1.
        let a = &view.series["a"].0;
        assert_eq!(
            a.iter().map(|p| p[1]).collect::<Vec<_>>(),
            vec![1.0, 0.5, 0.5, 1.0]
        );
    }
}
