//! The Run tab's panes: the search views (plot, tree, islands, beam...)
//! above, the genome table and the genome inspector side by side below.
//! Each pane keeps the size it was given, its share of the tab by default
//! ([`RunPanes`](crate::studio::state::RunPanes)) or wherever its divider was dragged, whatever its
//! content takes: a short beam grid or a narrow inspector page does not
//! shrink its pane (egui sizes a panel by its content otherwise, so the
//! panes jumped when a selection changed what they showed and stayed
//! squeezed).

use crate::engine::genome::GenomeId;
use crate::studio::panel::{divider_grip, set_panel_size};
use crate::studio::run::GenomeView;

use super::{Metric, RunView, SearchView, models, structure};

/// The least height of the search views' pane and the least width of the
/// inspector, in points.
const MIN_PLOT: f32 = 160.0;
const MIN_INSPECTOR: f32 = 260.0;

/// The panes' panels.
const PLOT_PANEL: &str = "run_plot_panel";
const INSPECTOR_PANEL: &str = "run_inspector_panel";

/// Fill `ui` to its whole room, so its panel keeps its size.
fn fill(ui: &mut egui::Ui) {
    ui.set_min_size(ui.available_size());
}

/// `text` cut short with "…" to at most `room` points in `font` (empty when
/// not even one character fits).
pub fn fit_text(ui: &egui::Ui, text: &str, font: &egui::FontId, room: f32) -> String {
    let width = |s: &str| {
        ui.fonts_mut(|f| {
            f.layout_no_wrap(s.to_owned(), font.clone(), egui::Color32::WHITE)
                .size()
                .x
        })
    };
    if width(text) <= room {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    for n in (1..chars.len()).rev() {
        let cut: String = chars[..n].iter().collect::<String>() + "…";
        if width(&cut) <= room {
            return cut;
        }
    }
    String::new()
}

/// The fitness plot's y label for the room `ui` has left below its
/// controls: the metric's whole label, else its bare name, else cut short,
/// so it never reaches past the plot's height into the controls above.
pub fn axis_label(ui: &egui::Ui, metric: &Metric, fitness: &str) -> String {
    let font = egui::TextStyle::Body.resolve(ui.style());
    // the x axis' tick labels and title take about two lines and a half
    let room = ui.available_height() - 2.5 * font.size - 8.0;
    let full = metric.label(fitness);
    let bare = match metric {
        Metric::Fitness => fitness,
        Metric::Named(name) => name.as_str(),
    };
    let shown = fit_text(ui, &full, &font, room);
    if shown == full {
        shown
    } else {
        fit_text(ui, bare, &font, room)
    }
}

impl RunView {
    /// The panes of a run with genomes. Returns the genome clicked in any
    /// of them.
    pub(super) fn panes_ui(&mut self, ui: &mut egui::Ui) -> Option<GenomeId> {
        let mut clicked: Option<GenomeId> = None;
        // a window (or tab) of another size: the panes take their shares of
        // it, not the points they had; so does the first frame (the points
        // egui kept are those of the last session's window, maybe 1920 px
        // wide)
        let room = ui.available_size();
        let resized = self
            .panes_room
            .is_none_or(|before| (before - room).length() > 0.5);
        self.panes_room = Some(room);
        let height = room.y;
        let max_plot = (height * 0.8).max(MIN_PLOT);
        let plot_height = (height * self.panes.plot_share).clamp(MIN_PLOT.min(max_plot), max_plot);
        if resized {
            set_panel_size(ui, PLOT_PANEL, plot_height, false);
        }
        let plot = egui::Panel::top(PLOT_PANEL)
            .resizable(true)
            .default_size(plot_height)
            .size_range(MIN_PLOT..=max_plot)
            .show(ui, |ui| {
                fill(ui);
                if let Some(id) = self.search_views_ui(ui) {
                    clicked = Some(id);
                }
            });
        // the shares follow a divider the person drags, and nothing else: a
        // frame where the room was too small for a pane's least size would
        // otherwise ratchet its share up for good
        let dragging = !resized && ui.input(|i| i.pointer.any_down());
        if height > 0.0 && dragging {
            self.panes.plot_share = plot.response.rect.height() / height;
        }
        self.inspector.live = self.is_running();
        self.inspector.pinned = self
            .history
            .steering
            .pins
            .iter()
            .map(|p| p.genome)
            .collect();
        self.inspector.fork_blocker = self
            .is_running()
            .then_some("Stop the run first: the studio runs one run at a time");
        let width = ui.available_width();
        let max_inspector = (width * 0.8).max(MIN_INSPECTOR);
        let inspector_width = (width * self.panes.inspector_share)
            .clamp(MIN_INSPECTOR.min(max_inspector), max_inspector);
        if resized {
            set_panel_size(ui, INSPECTOR_PANEL, inspector_width, true);
        }
        let history = &self.history;
        let selected = self.selected;
        let inspector = egui::Panel::right(INSPECTOR_PANEL)
            .resizable(true)
            .default_size(inspector_width)
            .size_range(MIN_INSPECTOR..=max_inspector)
            .show(ui, |ui| {
                fill(ui);
                if let Some(id) =
                    self.inspector
                        .ui(ui, history, selected, self.picked, &self.language)
                {
                    clicked = Some(id);
                }
            });
        if width > 0.0 && dragging {
            self.panes.inspector_share = inspector.response.rect.width() / width;
        }
        egui::CentralPanel::default().show(ui, |ui| {
            if let Some(id) = self.table.ui(ui, history, selected) {
                clicked = Some(id);
            }
        });
        // the dividers are dragged: say so
        let p = plot.response.rect;
        divider_grip(ui, egui::pos2(p.center().x, p.bottom()), false);
        let i = inspector.response.rect;
        divider_grip(ui, egui::pos2(i.left(), i.center().y), true);
        clicked
    }

    /// The view switch and the search view it names.
    fn search_views_ui(&mut self, ui: &mut egui::Ui) -> Option<GenomeId> {
        let history = &self.history;
        let selected = self.selected;
        let islands = self.structure.has_islands();
        let beam = self.structure.has_beam();
        let objectives = history.metric_names.len() >= 2;
        let models = models::ModelSharesView::model_count(history) >= 2;
        if (self.view == SearchView::Islands && !islands)
            || (self.view == SearchView::Beam && !beam)
            || (self.view == SearchView::Objectives && !objectives)
            || (self.view == SearchView::Models && !models)
        {
            self.view = SearchView::Plot;
        }
        ui.horizontal(|ui| {
            for v in [
                SearchView::Plot,
                SearchView::Tree,
                SearchView::Islands,
                SearchView::Beam,
                SearchView::Objectives,
                SearchView::Models,
            ] {
                let shown = match v {
                    SearchView::Islands => islands,
                    SearchView::Beam => beam,
                    SearchView::Objectives => objectives,
                    SearchView::Models => models,
                    _ => true,
                };
                if shown {
                    ui.selectable_value(&mut self.view, v, v.label())
                        .on_hover_text(v.hint());
                }
            }
        });
        if matches!(self.view, SearchView::Islands | SearchView::Beam)
            && self.structure.sync(history, structure::FEED_BUDGET)
        {
            ui.ctx().request_repaint();
        }
        let mut islands = structure::IslandGrids(&self.structure);
        let mut beam = structure::BeamHistory(&self.structure);
        let view: &mut dyn GenomeView = match self.view {
            SearchView::Plot => &mut self.plot,
            SearchView::Tree => &mut self.tree,
            SearchView::Islands => &mut islands,
            SearchView::Beam => &mut beam,
            SearchView::Objectives => &mut self.objectives,
            SearchView::Models => &mut self.models,
        };
        view.ui(ui, history, selected)
    }
}
