//! Comparing recorded runs: each ticked run's best-so-far curve, a summary
//! table (card, seed, best, valid %, tokens, cost, wall time) and the diff of
//! two runs' cards. Curves are read off the UI thread; a refresh of the runs
//! list keeps them on screen and reads them again, and a run keeps its
//! colour for as long as the studio is open.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use egui::{Color32, RichText, Ui};
use egui_plot::{Line, Plot, PlotPoints};

use crate::engine::archive::{Archive, timestamp};
use crate::studio::command::{Commands, UiCommand};
use crate::studio::run::diff_view::{self, DiffMode};
use crate::studio::run::history::{card_name_of, format_duration, format_tokens};
use crate::studio::theme;
use crate::studio::theme::data;

/// What the summary table shows of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunDigest {
    /// The card's name.
    pub card: String,
    /// The task folder's name.
    pub task: String,
    /// The card as run (YAML).
    pub card_yaml: String,
    pub seed: u64,
    /// Best fitness, if any genome was valid.
    pub best: Option<f64>,
    pub genomes: u64,
    pub valid: u64,
    /// Tokens over all genomes (`None`: the model reported none).
    pub tokens: Option<u64>,
    /// Cost over all genomes, where the price is known.
    pub cost: Option<f64>,
    /// Start to end (`None`: the record has no end).
    pub wall_secs: Option<u64>,
}

impl RunDigest {
    /// Share of valid genomes in percent.
    pub fn valid_percent(&self) -> Option<f64> {
        (self.genomes > 0).then(|| 100.0 * self.valid as f64 / self.genomes as f64)
    }
}

/// One run's best-so-far curve (iteration against the best fitness so far)
/// and its digest.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Legend text: card, task and start time.
    pub label: String,
    /// Step-line vertices (x = iteration, y = best fitness), x monotone.
    pub points: Vec<[f64; 2]>,
    /// The summary table's row.
    pub digest: RunDigest,
}

/// Read a run's curve and digest from its archive (read-only).
pub fn read_curve(dir: &Path) -> Result<Curve, String> {
    let archive = Archive::open(dir).map_err(|e| e.to_string())?;
    let meta = archive.meta().map_err(|e| e.to_string())?;
    let genomes = archive.genomes().map_err(|e| e.to_string())?;
    drop(archive);
    let task = meta
        .task_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut points: Vec<[f64; 2]> = Vec::new();
    let mut best: Option<f64> = None;
    let mut max_x = 0u64;
    let mut digest = RunDigest {
        card: card_name_of(&meta.card_yaml),
        task: task.clone(),
        card_yaml: meta.card_yaml.clone(),
        seed: meta.seed,
        genomes: genomes.len() as u64,
        wall_secs: meta
            .ended_unix
            .map(|end| end.saturating_sub(meta.started_unix)),
        ..RunDigest::default()
    };
    for g in &genomes {
        max_x = max_x.max(g.iteration);
        if g.valid {
            digest.valid += 1;
        }
        if let Some(u) = &g.usage {
            *digest.tokens.get_or_insert(0) += u.total_tokens();
            if let Some(c) = u.cost_usd {
                *digest.cost.get_or_insert(0.0) += c;
            }
        }
        let Some(f) = g.fitness().filter(|f| f.is_finite()) else {
            continue;
        };
        if best.is_none_or(|b| f > b) {
            let x = max_x as f64;
            if let Some(b) = best {
                points.push([x, b]);
            }
            points.push([x, f]);
            best = Some(f);
        }
    }
    if let Some(b) = best
        && points.last().is_some_and(|p| p[0] < max_x as f64)
    {
        points.push([max_x as f64, b]);
    }
    digest.best = best;
    Ok(Curve {
        label: run_label(&digest.card, &task, meta.started_unix),
        points,
        digest,
    })
}

/// The runs being compared: their curves, colours and the card diff's pair.
#[derive(Debug, Default)]
pub struct RunCompare {
    curves: BTreeMap<PathBuf, Result<Curve, String>>,
    /// Curves being read.
    loading: BTreeSet<PathBuf>,
    /// Curves shown but to be read again (the list was refreshed).
    stale: BTreeSet<PathBuf>,
    /// Colour index of every run ever ticked.
    colors: BTreeMap<PathBuf, usize>,
    /// The two runs whose cards are diffed (default: the first two ticked).
    pair: [Option<PathBuf>; 2],
}

impl RunCompare {
    /// The runs list was read again: keep showing the curves, read the
    /// ticked ones again, forget the runs that are gone.
    pub fn refreshed(&mut self, present: &BTreeSet<&Path>) {
        self.curves.retain(|d, _| present.contains(d.as_path()));
        self.stale = self.curves.keys().cloned().collect();
    }

    /// A run was ticked: it gets its colour (the one it had before, else the
    /// first no ticked run has).
    pub fn ticked(&mut self, dir: &Path, checked: &[PathBuf]) {
        if self.colors.contains_key(dir) {
            return;
        }
        let used: BTreeSet<usize> = checked
            .iter()
            .filter_map(|d| self.colors.get(d).copied())
            .collect();
        let free = (0..data::SERIES.len())
            .find(|i| !used.contains(i))
            .unwrap_or(self.colors.len() % data::SERIES.len());
        self.colors.insert(dir.to_path_buf(), free);
    }

    /// The colour of a run's curve.
    pub fn color_of(&self, dir: &Path) -> Color32 {
        data::series(self.colors.get(dir).copied().unwrap_or(0))
    }

    /// Ask for the curves of ticked runs that are missing or stale.
    pub fn request(&mut self, checked: &[PathBuf], commands: &mut Commands) {
        for dir in checked {
            let wanted = !self.curves.contains_key(dir) || self.stale.contains(dir);
            if wanted && self.loading.insert(dir.clone()) {
                self.stale.remove(dir);
                commands.push(UiCommand::LoadCurve(dir.clone()));
            }
        }
    }

    /// A curve read in the background arrived.
    pub fn set_curve(&mut self, dir: PathBuf, curve: Result<Curve, String>) {
        self.loading.remove(&dir);
        self.curves.insert(dir, curve);
    }

    /// Whether curves are being read.
    pub fn is_loading(&self) -> bool {
        !self.loading.is_empty()
    }

    /// A run's curve, once read.
    pub fn curve(&self, dir: &Path) -> Option<&Result<Curve, String>> {
        self.curves.get(dir)
    }

    /// The loaded curves of `checked`, in its order.
    pub fn loaded<'a>(&'a self, checked: &'a [PathBuf]) -> Vec<(&'a PathBuf, &'a Curve)> {
        checked
            .iter()
            .filter_map(|d| match self.curves.get(d) {
                Some(Ok(c)) => Some((d, c)),
                _ => None,
            })
            .collect()
    }

    /// The compare section: summary table, curves and card diff; `shown`
    /// is the height of the scrolled tab it is in, on screen.
    pub fn ui(
        &mut self,
        ui: &mut Ui,
        checked: &[PathBuf],
        labels: &BTreeMap<PathBuf, String>,
        error: Color32,
        shown: f32,
    ) {
        for dir in checked {
            if let Some(Err(e)) = self.curves.get(dir) {
                ui.label(RichText::new(format!("{}: {e}", dir.display())).color(error));
            }
        }
        if self.is_loading() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.weak("reading runs");
            });
        }
        let mut pair = std::mem::take(&mut self.pair);
        let loaded = self.loaded(checked);
        self.summary_ui(ui, &loaded, labels);
        ui.add_space(theme::SECTION_GAP);
        // the curves and the card diff take most of what is on screen (the
        // tab scrolls to them), never less than a usable height
        let height = (shown * 0.8).max(320.0);
        if ui.available_width() >= 900.0 {
            ui.columns(2, |cols| {
                self.plot_ui(&mut cols[0], &loaded, labels, height);
                card_diff_ui(&mut cols[1], &mut pair, &loaded, labels, height);
            });
        } else {
            // narrow: one under the other
            self.plot_ui(ui, &loaded, labels, height);
            ui.add_space(theme::SECTION_GAP);
            card_diff_ui(ui, &mut pair, &loaded, labels, height);
        }
        self.pair = pair;
    }

    fn summary_ui(
        &self,
        ui: &mut Ui,
        loaded: &[(&PathBuf, &Curve)],
        labels: &BTreeMap<PathBuf, String>,
    ) {
        egui::ScrollArea::horizontal()
            .id_salt("compare-summary-scroll")
            .show(ui, |ui| self.summary_grid_ui(ui, loaded, labels));
    }

    fn summary_grid_ui(
        &self,
        ui: &mut Ui,
        loaded: &[(&PathBuf, &Curve)],
        labels: &BTreeMap<PathBuf, String>,
    ) {
        egui::Grid::new("compare-summary")
            .num_columns(9)
            .striped(true)
            .spacing([14.0, 4.0])
            .show(ui, |ui| {
                for h in [
                    "",
                    "run",
                    "card",
                    "seed",
                    "best",
                    "valid %",
                    "tokens",
                    "cost",
                    "wall time",
                ] {
                    ui.label(RichText::new(h).strong());
                }
                ui.end_row();
                for (dir, c) in loaded {
                    let d = &c.digest;
                    let (rect, _) =
                        ui.allocate_exact_size(egui::vec2(18.0, 4.0), egui::Sense::hover());
                    ui.painter().rect_filled(rect, 1.0, self.color_of(dir));
                    let name = dir.file_name().map_or_else(
                        || dir.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    ui.label(name)
                        .on_hover_text(labels.get(*dir).cloned().unwrap_or_default());
                    ui.label(&d.card);
                    ui.label(d.seed.to_string());
                    ui.label(d.best.map_or_else(|| "—".to_owned(), |b| format!("{b:.5}")));
                    ui.label(
                        d.valid_percent()
                            .map_or_else(|| "—".to_owned(), |p| format!("{p:.1}")),
                    )
                    .on_hover_text(format!("{} of {} genomes", d.valid, d.genomes));
                    ui.label(d.tokens.map_or_else(|| "—".to_owned(), format_tokens));
                    ui.label(
                        d.cost
                            .map_or_else(|| "—".to_owned(), |c| format!("${c:.4}")),
                    );
                    ui.label(d.wall_secs.map_or_else(
                        || "—".to_owned(),
                        |s| format_duration(std::time::Duration::from_secs(s)),
                    ));
                    ui.end_row();
                }
            });
    }

    fn plot_ui(
        &self,
        ui: &mut Ui,
        loaded: &[(&PathBuf, &Curve)],
        labels: &BTreeMap<PathBuf, String>,
        height: f32,
    ) {
        let top = ui.cursor().top();
        ui.label(RichText::new("Best fitness so far").strong());
        // Legend drawn by hand above the plot, so it never covers a curve and
        // every entry is a plain, findable label.
        ui.horizontal_wrapped(|ui| {
            for (dir, _) in loaded {
                let Some(label) = labels.get(*dir) else {
                    continue;
                };
                let (rect, _) = ui.allocate_exact_size(egui::vec2(18.0, 4.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 1.0, self.color_of(dir));
                ui.label(label).on_hover_text(dir.display().to_string());
                ui.add_space(theme::SECTION_GAP);
            }
        });
        let used = ui.cursor().top() - top;
        crate::studio::ticks::value_axis(Plot::new("runs-compare"))
            .height((height - used - 8.0).max(140.0))
            .x_axis_label("iteration")
            .y_axis_label("best fitness so far")
            .allow_scroll(false)
            .show(ui, |plot| {
                for (dir, curve) in loaded {
                    let name = labels.get(*dir).cloned().unwrap_or_default();
                    plot.line(
                        Line::new(name, PlotPoints::from(curve.points.clone()))
                            .color(self.color_of(dir))
                            .width(2.0)
                            .allow_band(false),
                    );
                }
            })
            .response
            .widget_info(|| {
                egui::WidgetInfo::labeled(egui::Role::Canvas, true, "compared runs' best fitness")
            });
    }
}

/// The diff of two compared runs' cards, each picked from the compared runs
/// (by default the first two).
fn card_diff_ui(
    ui: &mut Ui,
    pair: &mut [Option<PathBuf>; 2],
    loaded: &[(&PathBuf, &Curve)],
    labels: &BTreeMap<PathBuf, String>,
    height: f32,
) {
    let top = ui.cursor().top();
    ui.label(RichText::new("Card diff").strong());
    let present = |p: &Option<PathBuf>| {
        p.as_ref()
            .is_some_and(|p| loaded.iter().any(|(d, _)| *d == p))
    };
    for k in 0..2 {
        if !present(&pair[k]) {
            let other = pair[1 - k].clone();
            pair[k] = loaded
                .iter()
                .map(|(d, _)| (*d).clone())
                .find(|d| Some(d) != other.as_ref());
        }
    }
    let name = |p: &Option<PathBuf>| {
        p.as_ref()
            .and_then(|p| p.file_name())
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    ui.horizontal(|ui| {
        for (k, side) in ["from", "to"].into_iter().enumerate() {
            ui.label(side);
            egui::ComboBox::from_id_salt(("card-diff", k))
                .selected_text(name(&pair[k]))
                .show_ui(ui, |ui| {
                    for (dir, _) in loaded {
                        let text = labels.get(*dir).cloned().unwrap_or_default();
                        ui.selectable_value(&mut pair[k], Some((*dir).clone()), text);
                    }
                });
        }
    });
    let yaml = |p: &Option<PathBuf>| {
        p.as_ref().and_then(|p| {
            loaded
                .iter()
                .find(|(d, _)| *d == p)
                .map(|(_, c)| c.digest.card_yaml.as_str())
        })
    };
    match (yaml(&pair[0]), yaml(&pair[1])) {
        (Some(_), Some(_)) if pair[0] == pair[1] => {
            ui.weak("From and to are the same run: pick another run to diff their cards.");
        }
        (Some(a), Some(b)) => {
            let used = ui.cursor().top() - top;
            egui::ScrollArea::both()
                .id_salt("card-diff-scroll")
                .max_height((height - used - 8.0).max(120.0))
                .show(ui, |ui| {
                    diff_view::texts_diff_ui(
                        ui,
                        a,
                        b,
                        DiffMode::Unified,
                        "The two runs' cards are identical.",
                    );
                });
        }
        _ => {
            ui.weak("Tick two runs to diff their cards.");
        }
    }
}
/// `YYYY-MM-DD HH:MM:SS` (UTC) of a unix time; empty for 0 (unknown).
pub fn format_started(unix: u64) -> String {
    if unix == 0 {
        return String::new();
    }
    let t = timestamp(unix);
    // YYYYMMDD-HHMMSS
    match (
        t.get(0..4),
        t.get(4..6),
        t.get(6..8),
        t.get(9..11),
        t.get(11..13),
        t.get(13..15),
    ) {
        (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(se)) => {
            format!("{y}-{mo}-{d} {h}:{mi}:{se}")
        }
        _ => t,
    }
}

/// The legend text of a run: `card · task · start time`.
pub fn run_label(card: &str, task: &str, started_unix: u64) -> String {
    format!("{card} · {task} · {}", format_started(started_unix))
}
