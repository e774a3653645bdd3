//! The genealogy view: every genome a node under its parent (tree depth
//! downwards, subtrees side by side), crossover's second parent as a dashed
//! edge, inspirations on hover. Nodes are filled by score (invalid ones red
//! with a cross), ringed by island; a click selects, a double click (or the
//! context menu) collapses a subtree; drag pans, the wheel zooms across,
//! Ctrl+wheel (or a pinch) zooms both ways.
//!
//! Fast at 100k genomes: the layout is cached (rebuilt when genomes arrive,
//! at most every [`RELAYOUT_SECS`], or at once when a subtree is collapsed),
//! and drawing is culled. Nodes of one depth are kept sorted by x, so the
//! visible ones are found by binary search; edges never cross (leaf-order
//! layout), so the edges crossing the view are a contiguous run of each row,
//! found by binary search too. Everything is drawn into one mesh, and
//! several nodes or edges falling on the same pixel column are drawn once.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui::epaint::{Mesh, Vertex, WHITE_UV};
use egui::{Color32, Pos2, Rect, RichText, Sense, Shape, Stroke, Vec2, pos2, vec2};

use crate::engine::genome::GenomeId;
use crate::studio::run::GenomeView;
use crate::studio::run::genealogy_layout::{Layout, NONE};
use crate::studio::run::history::RunHistory;
use crate::studio::theme::data;

/// Minimum time between two layouts caused only by new genomes.
pub const RELAYOUT_SECS: f64 = 0.5;
/// Margin around the tree inside the view, in points.
const MARGIN: f32 = 18.0;

/// The camera: world → screen is `origin + (world - center) * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Camera {
    center: Pos2,
    /// Points per leaf slot (x) and per depth (y).
    scale: Vec2,
}

impl Camera {
    fn to_screen(self, rect: Rect, w: Pos2) -> Pos2 {
        rect.center() + (w - self.center) * self.scale
    }

    fn to_world(self, rect: Rect, s: Pos2) -> Pos2 {
        self.center + (s - rect.center()) / self.scale
    }
}

/// What the cached mesh of nodes and edges depends on.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MeshKey {
    builds: u64,
    center: Pos2,
    scale: Vec2,
    rect: Rect,
    edge_color: Color32,
    by_island: bool,
}

/// What the view was asked to do this frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Select(GenomeId),
    Toggle(GenomeId),
}

/// The genealogy view's state.
pub struct GenealogyView {
    layout: Layout,
    built_at: Option<Instant>,
    /// How long the last layout took.
    build_time: Duration,
    /// Layouts built so far (a cache key).
    builds: u64,
    /// The nodes and edges of the last frame, reused while nothing they
    /// depend on changed.
    mesh: Option<(MeshKey, Arc<Mesh>, usize, usize)>,
    collapsed: HashSet<GenomeId>,
    relayout: bool,
    camera: Option<Camera>,
    /// Keep fitting the whole tree until the person pans or zooms.
    follow: bool,
    /// Draw the path from the root to the best genome.
    pub path_to_best: bool,
    /// Fill nodes with their island's colour instead of their score.
    pub color_by_island: bool,
    /// Genome whose context menu is open.
    menu: Option<GenomeId>,
    /// The selection the view last saw (to bring a new one into view).
    seen_selection: Option<GenomeId>,
    /// The last frame's view rectangle.
    rect: Rect,
    drawn_nodes: usize,
    drawn_edges: usize,
}

impl Default for GenealogyView {
    fn default() -> Self {
        Self {
            layout: Layout::default(),
            built_at: None,
            build_time: Duration::ZERO,
            builds: 0,
            mesh: None,
            collapsed: HashSet::new(),
            relayout: true,
            camera: None,
            follow: true,
            path_to_best: true,
            color_by_island: false,
            menu: None,
            seen_selection: None,
            rect: Rect::NOTHING,
            drawn_nodes: 0,
            drawn_edges: 0,
        }
    }
}

/// The range `lo..hi` of `row` whose item satisfies neither `before` (the
/// prefix) nor `after` (the suffix); both predicates must be monotone.
fn visible_range(
    row: &[u32],
    before: impl Fn(u32) -> bool,
    after: impl Fn(u32) -> bool,
) -> (usize, usize) {
    let lo = row.partition_point(|&p| before(p));
    let hi = row.partition_point(|&p| !after(p));
    (lo, hi.max(lo))
}

fn quad(mesh: &mut Mesh, a: Pos2, b: Pos2, half_width: f32, color: Color32) {
    let d = b - a;
    let len = d.length();
    let n = if len > 1e-6 {
        vec2(-d.y, d.x) / len * half_width
    } else {
        vec2(half_width, 0.0)
    };
    let i = mesh.vertices.len() as u32;
    for p in [a + n, a - n, b - n, b + n] {
        mesh.vertices.push(Vertex {
            pos: p,
            uv: WHITE_UV,
            color,
        });
    }
    mesh.indices
        .extend_from_slice(&[i, i + 1, i + 2, i, i + 2, i + 3]);
}

fn square(mesh: &mut Mesh, c: Pos2, r: f32, color: Color32) {
    mesh.add_colored_rect(Rect::from_center_size(c, Vec2::splat(2.0 * r)), color);
}

impl GenealogyView {
    /// Forget the layout and the camera (a new run is shown); collapsed
    /// subtrees are forgotten too.
    pub fn reset(&mut self) {
        *self = Self {
            path_to_best: self.path_to_best,
            ..Self::default()
        };
    }

    /// Nodes drawn in the last frame (after culling and merging).
    pub fn drawn_nodes(&self) -> usize {
        self.drawn_nodes
    }

    /// Edges drawn in the last frame (after culling and merging).
    pub fn drawn_edges(&self) -> usize {
        self.drawn_edges
    }

    /// Whether a genome's subtree is collapsed.
    pub fn is_collapsed(&self, id: GenomeId) -> bool {
        self.collapsed.contains(&id)
    }

    /// Collapse or expand a genome's subtree.
    pub fn set_collapsed(&mut self, id: GenomeId, collapsed: bool) {
        let changed = if collapsed {
            self.collapsed.insert(id)
        } else {
            self.collapsed.remove(&id)
        };
        self.relayout |= changed;
    }

    /// Where a genome was drawn in the last frame (its centre on screen), if
    /// it is laid out (not under a collapsed subtree).
    pub fn screen_pos(&self, history: &RunHistory, id: GenomeId) -> Option<Pos2> {
        let cam = self.camera?;
        let pos = history.position(id)?;
        self.world(pos).map(|w| cam.to_screen(self.rect, w))
    }

    fn world(&self, pos: usize) -> Option<Pos2> {
        if !self.layout.is_placed(pos) {
            return None;
        }
        Some(pos2(self.layout.x[pos], self.layout.depth[pos] as f32))
    }

    /// Bring the layout up to date (cheap when nothing changed).
    pub fn sync(&mut self, history: &RunHistory) {
        let stale =
            self.layout.version != history.version || self.layout.len != history.genomes.len();
        let shrunk = history.genomes.len() < self.layout.len;
        let due = history.is_finished() || self.layout.len == 0 || self.built_at.is_none();
        // A layout costs O(n): while genomes arrive it is rebuilt at most
        // every RELAYOUT_SECS, and never more than 1/20 of the time.
        let due = due
            || self.built_at.is_some_and(|t| {
                t.elapsed() >= self.build_time * 20 && t.elapsed().as_secs_f64() >= RELAYOUT_SECS
            });
        if self.relayout || shrunk || (stale && due) {
            let start = Instant::now();
            self.layout = Layout::build(history, &self.collapsed);
            self.build_time = start.elapsed();
            self.built_at = Some(Instant::now());
            self.builds += 1;
            self.relayout = false;
        }
    }

    fn fit(&self, rect: Rect) -> Camera {
        let rows = self.layout.rows.len().max(1) as f32;
        let inner = rect.shrink(MARGIN);
        let sx = inner.width() / self.layout.width.max(1.0);
        let sy = if rows > 1.0 {
            (inner.height() / (rows - 1.0)).min(80.0)
        } else {
            1.0
        };
        let sx = sx.clamp(1e-4, 60.0);
        let center = pos2((self.layout.width - 1.0) / 2.0, (rows - 1.0) / 2.0);
        Camera {
            center,
            scale: vec2(sx, sy),
        }
    }

    /// The placed genome nearest to `pointer` within `radius` points.
    fn hit(&self, cam: Camera, rect: Rect, pointer: Pos2, radius: f32) -> Option<usize> {
        let w = cam.to_world(rect, pointer);
        let row_r = (radius / cam.scale.y).max(0.5);
        let dx = radius / cam.scale.x;
        let mut best: Option<(f32, usize)> = None;
        let first = (w.y - row_r).floor().max(0.0) as usize;
        let last = (w.y + row_r).ceil().max(0.0) as usize;
        for d in first..=last {
            let Some(row) = self.layout.rows.get(d) else {
                continue;
            };
            let x = &self.layout.x;
            let (lo, hi) = visible_range(
                row,
                |p| x[p as usize] < w.x - dx,
                |p| x[p as usize] > w.x + dx,
            );
            for &p in &row[lo..hi] {
                let s = cam.to_screen(rect, pos2(x[p as usize], d as f32));
                let dist = s.distance(pointer);
                if dist <= radius && best.is_none_or(|(b, _)| dist < b) {
                    best = Some((dist, p as usize));
                }
            }
        }
        best.map(|(_, p)| p)
    }

    /// Expand every collapsed ancestor of `pos` (so it can be shown).
    fn reveal(&mut self, history: &RunHistory, id: GenomeId) {
        for ancestor in history.lineage(id) {
            if ancestor != id && self.collapsed.remove(&ancestor) {
                self.relayout = true;
            }
        }
    }

    /// The nodes and edges in view as one mesh; with the counts drawn.
    #[expect(clippy::too_many_arguments, reason = "the frame's view, passed once")]
    fn build_mesh(
        &self,
        cam: Camera,
        rect: Rect,
        history: &RunHistory,
        edge_color: Color32,
        radius: f32,
        (wx0, wx1): (f32, f32),
        (first_row, last_row): (usize, usize),
    ) -> (Mesh, usize, usize) {
        let layout = &self.layout;
        let x = &layout.x;
        let mut mesh = Mesh::default();
        let mut edges = 0usize;
        let mut nodes = 0usize;
        // Edges into rows first_row..=last_row+1 (an edge into the row below
        // the view still crosses it).
        for d in first_row.max(1)..=(last_row + 1).min(layout.rows.len().saturating_sub(1)) {
            let row = &layout.rows[d];
            let px = |p: u32| x[layout.parent[p as usize] as usize];
            let (lo, hi) = visible_range(
                row,
                |p| x[p as usize].max(px(p)) < wx0,
                |p| x[p as usize].min(px(p)) > wx1,
            );
            let mut last: Option<(i32, i32)> = None;
            for &p in &row[lo..hi] {
                let parent = layout.parent[p as usize];
                if parent == NONE {
                    continue;
                }
                let a = cam.to_screen(rect, pos2(x[parent as usize], d as f32 - 1.0));
                let b = cam.to_screen(rect, pos2(x[p as usize], d as f32));
                let key = (a.x as i32, b.x as i32);
                if last == Some(key) {
                    continue;
                }
                last = Some(key);
                quad(&mut mesh, a, b, 0.5, edge_color);
                edges += 1;
            }
        }
        for d in first_row..=last_row {
            let Some(row) = layout.rows.get(d) else {
                continue;
            };
            let (lo, hi) = visible_range(
                row,
                |p| x[p as usize] < wx0 - 1.0,
                |p| x[p as usize] > wx1 + 1.0,
            );
            let mut last_px = i32::MIN;
            for &p in &row[lo..hi] {
                let s = cam.to_screen(rect, pos2(x[p as usize], d as f32));
                let col = s.x as i32;
                // Several nodes on one pixel column: draw one (invalid last
                // drawn wins, so a column of failures stays visible).
                if col == last_px && radius <= 1.5 {
                    continue;
                }
                last_px = col;
                let fill = if self.color_by_island && layout.color[p as usize] != data::BAD {
                    history.genomes[p as usize]
                        .metadata
                        .island
                        .map_or(data::NO_GROUP, |i| data::series(i as usize))
                } else {
                    layout.color[p as usize]
                };
                square(&mut mesh, s, radius, fill);
                nodes += 1;
            }
        }
        (mesh, nodes, edges)
    }

    fn paint(
        &mut self,
        painter: &egui::Painter,
        visuals: &egui::Visuals,
        cam: Camera,
        rect: Rect,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) {
        let edge_color = visuals.weak_text_color().gamma_multiply(0.55);
        let left = cam.to_world(rect, rect.left_top());
        let right = cam.to_world(rect, rect.right_bottom());
        let (wx0, wx1) = (left.x, right.x);
        let first_row = left.y.floor().max(0.0) as usize;
        let last_row =
            (right.y.ceil().max(0.0) as usize).min(self.layout.rows.len().saturating_sub(1));
        let key = MeshKey {
            builds: self.builds,
            center: cam.center,
            scale: cam.scale,
            rect,
            edge_color,
            by_island: self.color_by_island,
        };
        let radius = (cam.scale.x * 0.35).clamp(1.0, 6.0);
        let (mesh, nodes, edges) = match &self.mesh {
            Some((k, mesh, nodes, edges)) if *k == key => (Arc::clone(mesh), *nodes, *edges),
            _ => {
                let (mesh, nodes, edges) = self.build_mesh(
                    cam,
                    rect,
                    history,
                    edge_color,
                    radius,
                    (wx0, wx1),
                    (first_row, last_row),
                );
                let mesh = Arc::new(mesh);
                self.mesh = Some((key, Arc::clone(&mesh), nodes, edges));
                (mesh, nodes, edges)
            }
        };
        let layout = &self.layout;
        let x = &layout.x;
        painter.add(Shape::Mesh(mesh));

        // Overlays drawn as shapes: crossover edges, islands, collapsed
        // badges, invalid crosses, the path to the best and the selection
        // (only for visible nodes, and only when zoomed in enough to see).
        if radius >= 2.5 {
            for d in first_row..=last_row {
                let Some(row) = layout.rows.get(d) else {
                    continue;
                };
                let (lo, hi) = visible_range(
                    row,
                    |p| x[p as usize] < wx0 - 1.0,
                    |p| x[p as usize] > wx1 + 1.0,
                );
                for &p in &row[lo..hi] {
                    let p = p as usize;
                    let g = &history.genomes[p];
                    let s = cam.to_screen(rect, pos2(x[p], d as f32));
                    if let Some(i) = g.metadata.island {
                        let c = data::series(i as usize);
                        painter.rect_stroke(
                            Rect::from_center_size(s, Vec2::splat(2.0 * radius + 3.0)),
                            1.0,
                            Stroke::new(1.5, c),
                            egui::StrokeKind::Middle,
                        );
                    }
                    if !g.valid {
                        let r = radius + 1.5;
                        let st = Stroke::new(1.5, Color32::WHITE);
                        painter.line_segment([s - vec2(r, r), s + vec2(r, r)], st);
                        painter.line_segment([s + vec2(-r, r), s + vec2(r, -r)], st);
                    }
                    if g.is_by_person() {
                        // a person's child: a square around its node
                        painter.rect_stroke(
                            Rect::from_center_size(s, Vec2::splat(2.0 * radius + 6.0)),
                            0.0,
                            Stroke::new(2.0, data::PERSON),
                            egui::StrokeKind::Middle,
                        );
                    }
                    if &*g.metadata.patch_type == "crossover"
                        && let Some(w) = g
                            .inspiration_ids
                            .first()
                            .and_then(|q| history.position(*q))
                            .and_then(|q| self.world(q))
                    {
                        painter.add(Shape::dashed_line(
                            &[cam.to_screen(rect, w), s],
                            Stroke::new(1.0, edge_color),
                            4.0,
                            3.0,
                        ));
                    }
                    if layout.hidden[p] > 0 {
                        painter.text(
                            s + vec2(radius + 3.0, 0.0),
                            egui::Align2::LEFT_CENTER,
                            format!("+{}", layout.hidden[p]),
                            egui::FontId::proportional(10.0),
                            visuals.text_color(),
                        );
                    }
                }
            }
        }
        let path = |id: Option<GenomeId>, color: Color32, width: f32| {
            let Some(id) = id else { return };
            let points: Vec<Pos2> = history
                .lineage(id)
                .into_iter()
                .filter_map(|a| history.position(a))
                .filter_map(|p| self.world(p))
                .map(|w| cam.to_screen(rect, w))
                .collect();
            if points.len() > 1 {
                painter.add(Shape::line(points.clone(), Stroke::new(width, color)));
            }
            if let Some(last) = points.last() {
                painter.circle_stroke(*last, radius + 3.0, Stroke::new(2.0, color));
            }
        };
        if self.path_to_best {
            path(history.best_id, data::BEST, 2.5);
        }
        path(selected, data::SELECTED, 1.5);
        self.drawn_nodes = nodes;
        self.drawn_edges = edges;
    }
}

impl GenomeView for GenealogyView {
    /// Toolbar and canvas. Returns the genome clicked this frame.
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        if selected != self.seen_selection
            && let Some(id) = selected
        {
            self.reveal(history, id);
        }
        self.sync(history);
        let mut fit_now = false;
        ui.horizontal(|ui| {
            if ui
                .button("Fit")
                .on_hover_text("Show the whole tree (and follow it as it grows)")
                .clicked()
            {
                fit_now = true;
            }
            if self.layout.has_islands {
                ui.checkbox(&mut self.color_by_island, "colour by island")
                    .on_hover_text("Fill nodes with their island's colour (invalid ones stay red)");
            }
            ui.checkbox(&mut self.path_to_best, "path to best")
                .on_hover_text("Highlight the lineage from the root to the best genome");
            if !self.collapsed.is_empty()
                && ui
                    .button(format!("Expand all ({})", self.collapsed.len()))
                    .clicked()
            {
                self.collapsed.clear();
                self.relayout = true;
            }
            ui.label(RichText::new("how?").small().weak())
                .on_hover_text(
                    "Click a node: inspect it. Ctrl+click: diff it against the selected one. \
                 Double-click or right-click: collapse or expand its subtree. Drag: pan. \
                 Wheel: zoom across. Ctrl+wheel: zoom.",
                );
        });
        if self.relayout {
            self.sync(history);
        }
        let (rect, response) = ui.allocate_exact_size(
            ui.available_size().max(vec2(50.0, 50.0)),
            Sense::click_and_drag(),
        );
        response
            .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "genealogy tree"));
        self.rect = rect;
        if fit_now || self.camera.is_none() {
            self.follow = true;
        }
        let mut cam = if self.follow {
            self.fit(rect)
        } else {
            self.camera.unwrap_or_else(|| self.fit(rect))
        };

        // Bring a selection made elsewhere into view.
        if selected != self.seen_selection {
            self.seen_selection = selected;
            if let Some(w) = selected
                .and_then(|id| history.position(id))
                .and_then(|p| self.world(p))
            {
                let s = cam.to_screen(rect, w);
                if !rect.shrink(MARGIN).contains(s) {
                    cam.center = w;
                    if cam.scale.x < 4.0 {
                        cam.scale.x = 12.0;
                    }
                    self.follow = false;
                }
            }
        }

        // Pan and zoom.
        if response.dragged() {
            cam.center -= response.drag_delta() / cam.scale;
            self.follow = false;
        }
        if let Some(pointer) = response.hover_pos() {
            let (scroll, zoom) = ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta()));
            let factor = if zoom != 1.0 {
                vec2(zoom, zoom)
            } else if scroll.y != 0.0 {
                vec2((scroll.y / 200.0).exp(), 1.0)
            } else {
                vec2(1.0, 1.0)
            };
            if factor != vec2(1.0, 1.0) {
                let before = cam.to_world(rect, pointer);
                cam.scale = (cam.scale * factor)
                    .max(vec2(1e-4, 2.0))
                    .min(vec2(400.0, 400.0));
                let after = cam.to_world(rect, pointer);
                cam.center += before - after;
                self.follow = false;
            }
        }
        self.camera = Some(cam);

        // Clicks.
        let mut action = None;
        if let Some(pointer) = response.interact_pointer_pos().or(response.hover_pos()) {
            let hit = self.hit(cam, rect, pointer, 9.0);
            if let Some(p) = hit {
                let id = history.genomes[p].id;
                if response.double_clicked() {
                    action = Some(Action::Toggle(id));
                } else if response.clicked() {
                    action = Some(Action::Select(id));
                } else if response.secondary_clicked() {
                    self.menu = Some(id);
                }
            }
        }
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
        self.paint(&painter, ui.visuals(), cam, rect, history, selected);

        // Hover: the genome and its inspirations.
        if let Some(pointer) = response.hover_pos()
            && let Some(p) = self.hit(cam, rect, pointer, 9.0)
        {
            let g = &history.genomes[p];
            let from = cam.to_screen(rect, self.world(p).unwrap_or(Pos2::ZERO));
            for &ins in &g.inspiration_ids {
                if let Some(w) = history.position(ins).and_then(|q| self.world(q)) {
                    painter.add(Shape::dashed_line(
                        &[from, cam.to_screen(rect, w)],
                        Stroke::new(1.5, data::INSPIRATION),
                        5.0,
                        4.0,
                    ));
                }
            }
            let score = g
                .fitness()
                .filter(|_| g.valid)
                .map_or_else(|| "invalid".to_owned(), |s| format!("score {s:.6}"));
            let mut text = format!("genome #{} · {score}\niteration {}", g.id, g.iteration);
            if let Some(i) = g.metadata.island {
                text.push_str(&format!(" · island {i}"));
            }
            if g.is_by_person() {
                text.push_str(" · written by a person");
            } else if !g.metadata.patch_type.is_empty() {
                text.push_str(&format!(" · {}", g.metadata.patch_type));
            }
            if !g.inspiration_ids.is_empty() {
                let ids: Vec<String> = g.inspiration_ids.iter().map(|i| format!("#{i}")).collect();
                text.push_str(&format!("\ninspirations {}", ids.join(" ")));
            }
            if self.layout.hidden[p] > 0 {
                text.push_str(&format!(
                    "\n{} descendants collapsed",
                    self.layout.hidden[p]
                ));
            }
            response.clone().on_hover_text_at_pointer(text);
        }

        if let Some(menu) = self.menu {
            let collapsed = self.collapsed.contains(&menu);
            let mut close = false;
            response.context_menu(|ui| {
                ui.label(RichText::new(format!("genome #{menu}")).strong());
                if ui.button("Inspect").clicked() {
                    action = Some(Action::Select(menu));
                    close = true;
                }
                let label = if collapsed {
                    "Expand subtree"
                } else {
                    "Collapse subtree"
                };
                if ui.button(label).clicked() {
                    action = Some(Action::Toggle(menu));
                    close = true;
                }
                if close {
                    ui.close();
                }
            });
            if close {
                self.menu = None;
            }
        }
        match action {
            Some(Action::Select(id)) => {
                self.seen_selection = Some(id);
                Some(id)
            }
            Some(Action::Toggle(id)) => {
                let on = !self.collapsed.contains(&id);
                self.set_collapsed(id, on);
                None
            }
            None => None,
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_range_finds_the_run_between_two_monotone_cuts() {
        let row = [0u32, 1, 2, 3, 4, 5];
        assert_eq!(visible_range(&row, |p| p < 2, |p| p > 4), (2, 5));
        assert_eq!(visible_range(&row, |p| p < 9, |p| p > 9), (6, 6));
    }
}
