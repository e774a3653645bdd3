//! Studio frame benchmark (not a timed test): CPU time of one frame of the run
//! view (toolbar, fitness plot, archive table, inspector on a selected genome,
//! status bar; layout plus tessellation, no GPU) with 1,000, 10,000 and
//! 100,000 synthetic genomes (`common::genome`) loaded, once with the fitness
//! plot in the upper half and once with the genealogy tree (the whole tree
//! fitted in view). Three cases per size and view: the first frame (caches
//! built), steady frames with the pointer moving over the plot or tree, and
//! "live" frames where one genome is admitted before each frame.
//!
//! `cargo bench --bench studio_frame` (FRAMES=N to change the sample size).
//! Target: under 8 ms per frame at 100,000 genomes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::events::{RunEvent, RunInfo};
use galapagos::engine::genome::Genome;
use galapagos::engine::selection::PolicyStatus;
use galapagos::studio::run::{RunView, SearchView};

mod common;

const SCREEN: egui::Vec2 = egui::vec2(1600.0, 1000.0);

fn admitted(g: Genome, best: &mut (u64, f64)) -> RunEvent {
    if let Some(f) = g.fitness()
        && f > best.1
    {
        *best = (g.id, f);
    }
    RunEvent::GenomeAdmitted {
        genome: Arc::new(g),
        best_id: Some(best.0),
        best_score: Some(best.1),
        iterations_done: 0,
        policy: PolicyStatus {
            fields: vec![
                ("current parent".to_owned(), "#0".to_owned()),
                ("uses".to_owned(), "2/5".to_owned()),
            ],
        },
        active: Vec::new(),
    }
}

fn input(t: f64, pointer: egui::Pos2) -> egui::RawInput {
    egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, SCREEN)),
        time: Some(t),
        events: vec![egui::Event::PointerMoved(pointer)],
        ..Default::default()
    }
}

struct Bench {
    ctx: egui::Context,
    view: RunView,
    t: f64,
}

impl Bench {
    fn frame(&mut self, pointer: egui::Pos2) -> Duration {
        self.t += 1.0 / 60.0;
        let start = Instant::now();
        let view = &mut self.view;
        let mut out = self.ctx.run_ui(input(self.t, pointer), |ui| {
            egui::Panel::bottom("status").show(ui, |ui| ui.horizontal(|ui| view.status_bar_ui(ui)));
            egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
        });
        let shapes = std::mem::take(&mut out.shapes);
        let prims = self.ctx.tessellate(shapes, out.pixels_per_point);
        let took = start.elapsed();
        std::hint::black_box(prims);
        out.textures_delta.clear();
        took
    }
}

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len().max(1) as f64;
    let p50 = v.get(v.len() / 2).map_or(0.0, |d| ms(*d));
    let p95 = v.get(v.len() * 95 / 100).map_or(0.0, |d| ms(*d));
    (mean, p50, p95)
}

fn main() {
    let frames: usize = std::env::var("FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    println!(
        "studio run view, one frame = layout + tessellation at {}x{} (no GPU), {frames} frames per case",
        SCREEN.x, SCREEN.y
    );
    println!(
        "| view | genomes | first frame ms | steady mean ms | steady p50 | steady p95 | live mean ms (1 genome/frame) | live p95 | drawn |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (view_kind, n) in [
        (SearchView::Plot, 1_000u64),
        (SearchView::Plot, 10_000),
        (SearchView::Plot, 100_000),
        (SearchView::Tree, 1_000),
        (SearchView::Tree, 10_000),
        (SearchView::Tree, 100_000),
    ] {
        let mut view = RunView::default();
        let mut best = (0, f64::NEG_INFINITY);
        view.apply_event(RunEvent::Started(RunInfo {
            card_name: "best_of_n".to_owned(),
            task_name: "synthetic".to_owned(),
            max_iterations: n * 2,
            model: "offline".to_owned(),
            offline: true,
            seed: 0,
            parallel: 1,
            run_dir: None,
            unsandboxed: None,
            forked_from: None,
            clearance: None,
        }));
        for i in 0..n {
            view.apply_event(admitted(common::genome(i), &mut best));
        }
        view.select(Some(best.0));
        view.set_search_view(view_kind);
        let mut b = Bench {
            ctx: egui::Context::default(),
            view,
            t: 0.0,
        };
        let first = b.frame(egui::pos2(400.0, 200.0));
        // Warm-up (fonts, highlighting caches), then steady frames with the
        // pointer sweeping across the plot (hover search every frame).
        for _ in 0..5 {
            b.frame(egui::pos2(400.0, 200.0));
        }
        let steady: Vec<Duration> = (0..frames)
            .map(|k| {
                b.frame(egui::pos2(
                    100.0 + (k % 100) as f32 * 12.0,
                    150.0 + (k % 7) as f32 * 20.0,
                ))
            })
            .collect();
        let mut next = n;
        let live: Vec<Duration> = (0..frames)
            .map(|k| {
                b.view
                    .apply_event(admitted(common::genome(next), &mut best));
                next += 1;
                b.frame(egui::pos2(100.0 + (k % 100) as f32 * 12.0, 200.0))
            })
            .collect();
        let (sm, s50, s95) = stats(steady);
        let (lm, _, l95) = stats(live);
        let drawn = match view_kind {
            SearchView::Plot => format!("{} points", b.view.plot_drawn_count()),
            _ => format!(
                "{} nodes, {} edges",
                b.view.tree().drawn_nodes(),
                b.view.tree().drawn_edges()
            ),
        };
        println!(
            "| {} | {n} | {:.2} | {sm:.2} | {s50:.2} | {s95:.2} | {lm:.2} | {l95:.2} | {drawn} |",
            view_kind.label(),
            first.as_secs_f64() * 1e3,
        );
    }
}
