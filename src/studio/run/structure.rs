//! The population's own structure, replayed in the studio: a population is a
//! pure function of the genomes added to it, in order, so the studio builds
//! its own copy of the card's population block (checked and built through the
//! registry, without a run: `Component::detached`) when the block keeps
//! islands or a beam (`Feature::Islands`, `Feature::Beam`), and feeds it the
//! run's genomes (a few milliseconds' worth per frame, never blocking): with
//! their programs (where a population's features come from: the history's
//! bodies, or a recorded run's archive read on a thread of its own), without
//! their transcripts. From
//! it come the island / MAP-Elites grid view (cells coloured by their elite's
//! score, per island, migrants marked, the migrations counted) and the beam's
//! membership over time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui::{Color32, Rect, RichText, Sense, Stroke, Vec2, pos2, vec2};

use crate::engine::card::SlotSpec;
use crate::engine::component::{Feature, Slot};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::population::{IslandsView, Population, Structure};
use crate::engine::registry::{Configured, Registry};
use crate::studio::run::GenomeView;
use crate::studio::run::bodies::BodySource;
use crate::studio::run::history::RunHistory;
use crate::studio::theme::data;

/// Time spent feeding genomes to the copy per frame.
pub const FEED_BUDGET: Duration = Duration::from_millis(3);
/// Minimum time between two island views taken while genomes arrive.
pub const VIEW_SECS: f64 = 0.5;
/// Beam snapshots kept (oldest dropped first).
pub const MAX_SNAPSHOTS: usize = 5000;

/// The population being replayed: the card's block, built from its checked
/// parameters alone ([`Component::detached`](crate::engine::component::Component::detached)).
struct Copy {
    /// The block's checked parameters (a new copy is built from them when
    /// the history changes).
    checked: Configured,
    population: Box<dyn Population>,
    /// It keeps islands with MAP-Elites grids.
    islands: bool,
    /// It keeps a beam.
    beam: bool,
}

/// The beam after a change: the iteration and its members, best first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeamSnapshot {
    pub iteration: u64,
    pub members: Vec<GenomeId>,
}

/// A replayed island or beam population and what the views read from it.
#[derive(Default)]
pub struct StructureMirror {
    copy: Option<Copy>,
    /// The card's block keeps islands (the islands view is offered, with
    /// the reason when it cannot be replayed).
    keeps_islands: bool,
    /// The card's block keeps a beam.
    keeps_beam: bool,
    /// Why the card's population block could not be replayed, if so.
    problem: Option<String>,
    /// Genomes of the history fed so far.
    fed: usize,
    /// Beam membership after every change.
    pub beam: Vec<BeamSnapshot>,
    /// The islands as of the last view taken, and when.
    islands: Option<IslandsView>,
    islands_at: Option<Instant>,
    islands_fed: usize,
    /// Iterations at which a migration happened.
    pub migrations: Vec<u64>,
    /// Each genome's cell, per island view (`None`: not placed).
    cells: BTreeMap<GenomeId, Vec<usize>>,
    /// The programs of a recorded run the history does not hold.
    feed: Option<ArchiveFeed>,
}

/// A recorded run's genomes with their programs, read from its archive in
/// id order on a thread of its own, a few hundred ahead at most.
struct ArchiveFeed {
    dir: std::path::PathBuf,
    genomes: std::sync::mpsc::Receiver<Genome>,
    /// Read, not yet fed.
    ahead: Option<Genome>,
}

/// What the feed has for a genome.
enum Fed {
    Genome(Box<Genome>),
    /// Not read yet: try again next frame.
    Later,
    /// The archive has it not (or cannot be read): its head it is.
    Never,
}

impl ArchiveFeed {
    fn start(dir: &std::path::Path, first: GenomeId) -> Self {
        let (tx, genomes) = std::sync::mpsc::sync_channel(256);
        let d = dir.to_path_buf();
        std::thread::Builder::new()
            .name("galapagos-replay".to_owned())
            .spawn(move || {
                if let Ok(a) = crate::engine::archive::Archive::open(&d) {
                    // ends when the mirror drops the feed
                    a.programs_from(first, |g| tx.send(g).is_ok()).ok();
                }
            })
            .ok();
        Self {
            dir: dir.to_path_buf(),
            genomes,
            ahead: None,
        }
    }

    /// Genome `id`, when it has been read.
    fn take(&mut self, id: GenomeId) -> Fed {
        loop {
            let next = match self.ahead.take() {
                Some(g) => g,
                None => match self.genomes.try_recv() {
                    Ok(g) => g,
                    Err(std::sync::mpsc::TryRecvError::Empty) => return Fed::Later,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => return Fed::Never,
                },
            };
            match next.id.cmp(&id) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return Fed::Genome(Box::new(next)),
                std::cmp::Ordering::Greater => {
                    self.ahead = Some(next);
                    return Fed::Never;
                }
            }
        }
    }
}

impl StructureMirror {
    /// A mirror of `population` (a card's population block), checked and
    /// built through `registry`; a population that keeps neither islands nor
    /// a beam has nothing to mirror.
    pub fn for_population(population: &SlotSpec, registry: &Registry) -> Self {
        let Ok(entry) = registry.entry(Slot::Population, &population.kind) else {
            return Self::default();
        };
        let islands = entry.provides.contains(&Feature::Islands);
        let beam = entry.provides.contains(&Feature::Beam);
        if !islands && !beam {
            return Self::default();
        }
        let problem = |why: String| Self {
            problem: Some(format!("population.{}: {why}", population.kind)),
            keeps_islands: islands,
            keeps_beam: beam,
            ..Self::default()
        };
        let checked = match entry.check(&population.params) {
            Ok(c) => c,
            Err(errors) => {
                let why: Vec<String> = errors.iter().map(ToString::to_string).collect();
                return problem(why.join("; "));
            }
        };
        let Some(copy) = Copy::new(checked, islands, beam) else {
            return problem("this population cannot be built outside a run".to_owned());
        };
        Self {
            copy: Some(copy),
            keeps_islands: islands,
            keeps_beam: beam,
            ..Self::default()
        }
    }

    /// The population block of a card's YAML (as an archive records it).
    pub fn for_card_yaml(yaml: &str, registry: &Registry) -> Self {
        let block = serde_yaml::from_str::<serde_yaml::Value>(yaml)
            .ok()
            .and_then(|v| v.get("population").cloned())
            .and_then(|p| serde_yaml::from_value::<SlotSpec>(p).ok());
        block.map_or_else(Self::default, |b| Self::for_population(&b, registry))
    }

    /// True for an island population.
    pub fn has_islands(&self) -> bool {
        self.keeps_islands
    }

    /// True for a beam population.
    pub fn has_beam(&self) -> bool {
        self.keeps_beam
    }

    /// Genomes replayed so far.
    pub fn fed(&self) -> usize {
        self.fed
    }

    /// The latest island view.
    pub fn islands(&self) -> Option<&IslandsView> {
        self.islands.as_ref()
    }

    /// Feed the copy the history's new genomes within `budget`. Returns true
    /// while genomes are left (ask for another frame).
    pub fn sync(&mut self, history: &RunHistory, budget: Duration) -> bool {
        let Some(copy) = self.copy.as_mut() else {
            return false;
        };
        if history.genomes.len() < self.fed {
            // A different history: start over.
            let restarted = Copy::new(copy.checked.clone(), copy.islands, copy.beam);
            *self = Self {
                copy: restarted,
                keeps_islands: self.keeps_islands,
                keeps_beam: self.keeps_beam,
                ..Self::default()
            };
            return self.sync(history, budget);
        }
        let p = &mut copy.population;
        let start = Instant::now();
        while self.fed < history.genomes.len() {
            let g = &history.genomes[self.fed];
            // the population is fed what it was fed in the run: the genome
            // with its program (its features may come from it)
            let genome = match (history.body(g.id), history.body_source()) {
                (Some(body), _) => body.without_transcript(),
                (None, BodySource::Archive(dir)) => {
                    if self.feed.as_ref().is_none_or(|f| f.dir != *dir) {
                        self.feed = Some(ArchiveFeed::start(dir, g.id));
                    }
                    match self.feed.as_mut().map(|f| f.take(g.id)) {
                        Some(Fed::Genome(genome)) => *genome,
                        Some(Fed::Later) => break,
                        _ => g.to_genome(),
                    }
                }
                // a followed run's programs stay on the server
                (None, _) => g.to_genome(),
            };
            let seen: Arc<Genome> = Arc::new(if g.unconfirmed() {
                genome.for_selection()
            } else {
                genome
            });
            let before = p.migrations();
            p.add(seen);
            if p.migrations() > before {
                self.migrations.push(g.iteration);
            }
            if copy.beam
                && let Structure::Beam(b) = p.structure()
                && self.beam.last().is_none_or(|s| s.members != b.members)
            {
                if self.beam.len() >= MAX_SNAPSHOTS {
                    self.beam.drain(..MAX_SNAPSHOTS / 4);
                }
                self.beam.push(BeamSnapshot {
                    iteration: g.iteration,
                    members: b.members,
                });
            }
            self.fed += 1;
            if start.elapsed() >= budget {
                break;
            }
        }
        if copy.islands {
            let due = self.fed == history.genomes.len()
                || self
                    .islands_at
                    .is_none_or(|t| t.elapsed().as_secs_f64() >= VIEW_SECS);
            if self.islands_fed != self.fed && due {
                if let Structure::Islands(v) = p.structure() {
                    self.cells.clear();
                    for isl in &v.islands {
                        for id in &isl.elites {
                            if let Some(c) = p.cell_of(*id) {
                                self.cells.insert(*id, c.to_vec());
                            }
                        }
                    }
                    self.islands = Some(v);
                }
                self.islands_at = Some(Instant::now());
                self.islands_fed = self.fed;
            }
        }
        self.fed < history.genomes.len()
    }

    /// The island / MAP-Elites grid view. Returns a genome clicked.
    fn islands_ui(
        &self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        if let Some(p) = &self.problem {
            ui.colored_label(ui.visuals().error_fg_color, p);
            return None;
        }
        let Some(view) = &self.islands else {
            ui.weak("Replaying the island population…");
            return None;
        };
        let mut clicked = None;
        ui.horizontal_wrapped(|ui| {
            ui.label(
                RichText::new(format!(
                    "{} islands · MAP-Elites over {} × {} bins · ring migration (island i to i + 1) every {} generations: {} so far",
                    view.islands.len(),
                    view.feature_dimensions.join(" × "),
                    view.feature_bins,
                    view.migration_interval,
                    view.migrations,
                ))
                .small(),
            );
            // on the same line where it fits, leaving the grids the room
            if let Some(last) = self.migrations.last() {
                ui.label(
                    RichText::new(format!("· last at iteration {last}"))
                        .small()
                        .weak(),
                );
            }
            if self.fed < history.genomes.len() {
                ui.weak(format!("replaying {} / {}", self.fed, history.genomes.len()));
            }
        });
        let (lo, hi) = score_range(history);
        let span = if hi > lo { hi - lo } else { 1.0 };
        score_legend(ui, lo, hi, &history.fitness_basis());
        let bins = view.feature_bins.max(1);
        let dims = view.feature_dimensions.len();
        let (cols, rows) = match dims {
            0 => (1, 1),
            1 => (bins, 1),
            _ => (bins, bins),
        };
        let n = view.islands.len().max(1);
        let avail = ui.available_size();
        // Island cards in a grid: as many per row as gives the largest cells
        // (the title and the counts take about 40 points above each grid,
        // the axes' names about 18 below).
        let layout = |per_row: usize| {
            let card_w = avail.x / per_row as f32 - 8.0;
            let lines = n.div_ceil(per_row);
            let card_h = (avail.y - 4.0) / lines as f32 - 8.0;
            // the title and counts above each grid, its axes' names below
            let cell = ((card_w - 8.0) / cols as f32).min((card_h - 58.0) / rows as f32);
            (cell, card_w)
        };
        let per_row = (1..=n)
            .max_by(|a, b| layout(*a).0.total_cmp(&layout(*b).0))
            .unwrap_or(n);
        let (cell, card_w) = layout(per_row);
        let cell = cell.max(2.0);
        let card_w = card_w.max(cols as f32 * cell).max(150.0);
        egui::ScrollArea::vertical()
            .id_salt("islands-scroll")
            .auto_shrink(false)
            .show(ui, |ui| {
                egui::Grid::new("islands-grid")
                    .num_columns(per_row)
                    .spacing([8.0, 8.0])
                    .show(ui, |ui| {
                        for (i, isl) in view.islands.iter().enumerate() {
                            let color = data::series(i);
                            ui.vertical(|ui| {
                                ui.set_width(card_w);
                                let migrants = isl
                                    .members
                                    .iter()
                                    .filter(|id| {
                                        history
                                            .get(**id)
                                            .and_then(|g| g.metadata.island)
                                            .is_some_and(|home| home as usize % n != i)
                                    })
                                    .count();
                                ui.label(
                                    RichText::new(format!("Island {i}")).strong().color(color),
                                );
                                ui.label(
                                    RichText::new(format!(
                                        "{} members · {} cells · gen {} · {migrants} migrants",
                                        isl.members.len(),
                                        isl.cells,
                                        isl.generation
                                    ))
                                    .small(),
                                );
                                let size = vec2(cols as f32 * cell, rows as f32 * cell);
                                let (rect, response) = ui.allocate_exact_size(size, Sense::click());
                                response.widget_info(|| {
                                    egui::WidgetInfo::labeled(
                                        egui::Role::Grid,
                                        true,
                                        format!("island {i} grid"),
                                    )
                                });
                                let painter = ui.painter_at(rect);
                                painter.rect_filled(rect, 0.0, ui.visuals().extreme_bg_color);
                                let mut at: BTreeMap<(usize, usize), GenomeId> = BTreeMap::new();
                                for id in &isl.elites {
                                    let Some(c) = self.cells.get(id) else {
                                        continue;
                                    };
                                    let key = (
                                        c.first().copied().unwrap_or(0).min(cols - 1),
                                        c.get(1).copied().unwrap_or(0).min(rows - 1),
                                    );
                                    // elites are best first: keep the best per drawn cell
                                    at.entry(key).or_insert(*id);
                                }
                                let cell_rect =
                                    |x: usize, y: usize| {
                                        Rect::from_min_size(
                                            pos2(
                                                rect.left() + x as f32 * cell,
                                                rect.bottom() - (y + 1) as f32 * cell,
                                            ),
                                            Vec2::splat(cell),
                                        )
                                        .shrink(if cell > 6.0 { 0.5 } else { 0.0 })
                                    };
                                for ((x, y), id) in &at {
                                    let Some(g) = history.get(*id) else { continue };
                                    let t = g.fitness().map_or(0.0, |f| ((f - lo) / span) as f32);
                                    let r = cell_rect(*x, *y);
                                    painter.rect_filled(r, 0.0, data::score(t));
                                    let migrant = g
                                        .metadata
                                        .island
                                        .is_some_and(|home| home as usize % n != i);
                                    if migrant && cell >= 6.0 {
                                        painter.circle_filled(
                                            r.center(),
                                            cell * 0.18,
                                            Color32::WHITE,
                                        );
                                    }
                                    if selected == Some(*id) {
                                        painter.rect_stroke(
                                            r,
                                            0.0,
                                            Stroke::new(2.0, Color32::WHITE),
                                            egui::StrokeKind::Inside,
                                        );
                                    }
                                }
                                painter.rect_stroke(
                                    rect,
                                    0.0,
                                    Stroke::new(1.0, color),
                                    egui::StrokeKind::Outside,
                                );
                                if let Some(axes) = axes_text(&view.feature_dimensions) {
                                    ui.label(RichText::new(axes).small().weak()).on_hover_text(
                                        format!(
                                            "Cells are {bins} bins per feature, low to high from the bottom left corner; \
                                             each shows its elite's score by colour"
                                        ),
                                    );
                                }
                                if let Some(p) = response.hover_pos() {
                                    let x = ((p.x - rect.left()) / cell) as usize;
                                    let y = ((rect.bottom() - p.y) / cell) as usize;
                                    if let Some(id) = at.get(&(x, y)) {
                                        let text = history.get(*id).map_or_else(String::new, |g| {
                                            let home =
                                                g.metadata.island.map_or(String::new(), |h| {
                                                    if h as usize % n == i {
                                                        String::new()
                                                    } else {
                                                        format!("\nmigrant from island {h}")
                                                    }
                                                });
                                            format!(
                                                "cell ({x}, {y}) elite #{} · score {}{home}",
                                                g.id,
                                                g.fitness().map_or("—".to_owned(), |f| format!(
                                                    "{f:.6}"
                                                ))
                                            )
                                        });
                                        response.clone().on_hover_text_at_pointer(text);
                                        if response.clicked() {
                                            clicked = Some(*id);
                                        }
                                    }
                                }
                            });
                            if (i + 1) % per_row == 0 {
                                ui.end_row();
                            }
                        }
                    });
            });
        clicked
    }

    /// The beam's membership over time: one column per change of the beam
    /// (newest right), one row per rank, cells coloured by score; the
    /// selected genome is outlined wherever it was a member. Returns a
    /// genome clicked.
    fn beam_ui(
        &self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        if let Some(p) = &self.problem {
            ui.colored_label(ui.visuals().error_fg_color, p);
            return None;
        }
        if self.beam.is_empty() {
            ui.weak("Replaying the beam…");
            return None;
        }
        let width = self
            .beam
            .iter()
            .map(|s| s.members.len())
            .max()
            .unwrap_or(1)
            .max(1);
        ui.label(
            RichText::new(format!(
                "Beam membership over time: {} changes, newest on the right; rows are ranks (best at the top), colour is score; the selected genome is outlined",
                self.beam.len()
            ))
            .small(),
        );
        let (lo, hi) = score_range(history);
        score_legend(ui, lo, hi, &history.fitness_basis());
        let avail = ui.available_size();
        let cell_h = ((avail.y - 24.0) / width as f32).clamp(3.0, 28.0);
        let cell_w = 10.0f32.min(avail.x / self.beam.len() as f32).max(3.0);
        let shown = ((avail.x / cell_w) as usize).min(self.beam.len()).max(1);
        let first = self.beam.len() - shown;
        let (rect, response) =
            ui.allocate_exact_size(vec2(avail.x, cell_h * width as f32 + 16.0), Sense::click());
        response.widget_info(|| {
            egui::WidgetInfo::labeled(egui::Role::Grid, true, "beam membership over time")
        });
        let painter = ui.painter_at(rect);
        let span = if hi > lo { hi - lo } else { 1.0 };
        let cell_rect = |col: usize, rank: usize| {
            Rect::from_min_size(
                pos2(
                    rect.left() + col as f32 * cell_w,
                    rect.top() + rank as f32 * cell_h,
                ),
                vec2(cell_w, cell_h),
            )
        };
        for (col, snap) in self.beam[first..].iter().enumerate() {
            for (rank, id) in snap.members.iter().enumerate() {
                let t = history
                    .get(*id)
                    .and_then(|g| g.fitness())
                    .map_or(0.0, |f| ((f - lo) / span) as f32);
                let r = cell_rect(col, rank);
                painter.rect_filled(r.shrink(0.3), 0.0, data::score(t));
                if selected == Some(*id) {
                    painter.rect_stroke(
                        r,
                        0.0,
                        Stroke::new(1.5, Color32::WHITE),
                        egui::StrokeKind::Inside,
                    );
                }
            }
        }
        if let (Some(a), Some(b)) = (self.beam.get(first), self.beam.last()) {
            let y = rect.top() + cell_h * width as f32 + 2.0;
            let font = egui::FontId::proportional(10.0);
            let color = ui.visuals().weak_text_color();
            painter.text(
                pos2(rect.left(), y),
                egui::Align2::LEFT_TOP,
                format!("iteration {}", a.iteration),
                font.clone(),
                color,
            );
            painter.text(
                pos2(rect.left() + shown as f32 * cell_w, y),
                egui::Align2::RIGHT_TOP,
                format!("iteration {}", b.iteration),
                font,
                color,
            );
        }
        let mut clicked = None;
        if let Some(p) = response.hover_pos() {
            let col = ((p.x - rect.left()) / cell_w) as usize;
            let rank = ((p.y - rect.top()) / cell_h) as usize;
            if let Some(id) = self.beam.get(first + col).and_then(|s| s.members.get(rank)) {
                let snap = &self.beam[first + col];
                let text = format!(
                    "#{id} · rank {} of {} after iteration {}",
                    rank + 1,
                    snap.members.len(),
                    snap.iteration
                );
                response.clone().on_hover_text_at_pointer(text);
                if response.clicked() {
                    clicked = Some(*id);
                }
            }
        }
        clicked
    }
}

/// The lowest and highest score of the history's valid genomes (infinite
/// when there are none).
fn score_range(history: &RunHistory) -> (f64, f64) {
    history
        .genomes
        .iter()
        .filter_map(|g| g.fitness().filter(|f| f.is_finite() && g.valid))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
            (a.min(f), b.max(f))
        })
}

/// The names of a MAP-Elites grid's axes: x the first feature, y the
/// second (`None` without features).
fn axes_text(dimensions: &[String]) -> Option<String> {
    match dimensions {
        [] => None,
        [x] => Some(format!("x: {x}")),
        [x, y, ..] => Some(format!("x: {x} · y: {y}")),
    }
}

/// What the cells' colour means: the score scale from the run's lowest to
/// its highest score, as a colour bar between the two figures.
fn score_legend(ui: &mut egui::Ui, lo: f64, hi: f64, basis: &str) {
    ui.horizontal(|ui| {
        ui.label(RichText::new(format!("colour: score ({basis})")).small());
        if lo > hi {
            ui.label(RichText::new("no valid genome yet").small().weak());
            return;
        }
        ui.label(RichText::new(format!("{lo:.4}")).small());
        let (rect, response) = ui.allocate_exact_size(vec2(120.0, 10.0), Sense::hover());
        response.widget_info(|| {
            egui::WidgetInfo::labeled(egui::Role::Image, true, "score colour scale")
        });
        let painter = ui.painter_at(rect);
        let steps = 24;
        let w = rect.width() / steps as f32;
        for k in 0..steps {
            let t = (k as f32 + 0.5) / steps as f32;
            let r = Rect::from_min_size(
                pos2(rect.left() + k as f32 * w, rect.top()),
                vec2(w + 0.5, rect.height()),
            );
            painter.rect_filled(r, 0.0, data::score(t));
        }
        ui.label(RichText::new(format!("{hi:.4}")).small());
    });
}

/// A mirror's islands and their MAP-Elites grids, as a run view.
pub struct IslandGrids<'a>(pub &'a StructureMirror);

impl GenomeView for IslandGrids<'_> {
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        self.0.islands_ui(ui, history, selected)
    }
}

/// A mirror's beam membership over time, as a run view.
pub struct BeamHistory<'a>(pub &'a StructureMirror);

impl GenomeView for BeamHistory<'_> {
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        self.0.beam_ui(ui, history, selected)
    }
}

impl Copy {
    /// A fresh copy of the checked block; `None` when it cannot be built
    /// outside a run.
    fn new(checked: Configured, islands: bool, beam: bool) -> Option<Self> {
        let population = checked.detached::<dyn Population>()?;
        Some(Self {
            checked,
            population,
            islands,
            beam,
        })
    }
}
