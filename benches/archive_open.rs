//! Opening a large recorded run in the studio (not a timed test): writes an
//! archive of 100,000 synthetic genomes (`common::genome`, about 2 KB each) with the engine's
//! `SqliteRecorder` (batches of 1,000 per transaction, as a run would commit
//! them), then times the three steps of "open this run read-only":
//! `read_archive` (the genomes' heads, meta, checkpoint and log, into the
//! `RunHistory` the studio holds; the bodies are read back when a genome is
//! looked at), loading it into the run view, and the first frame of the run
//! view with it loaded (layout and tessellation, no GPU); and the resident
//! memory the history adds.
//!
//! `cargo bench --bench archive_open` (GENOMES=N to change the size).
//! Targets: under 2 s in total and under 50 MB held at 100,000 genomes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::archive::{Checkpoint, RunRecorder, SqliteRecorder};
use galapagos::engine::card::Card;
use galapagos::engine::events::{RunInfo, RunStatus, RunSummary};
use galapagos::engine::genome::{Genome, TokenUsage};
use galapagos::engine::rng::seeded;
use galapagos::studio::run::{RunView, read_archive};

mod common;
#[path = "common/rss.rs"]
mod rss;
use rss::rss_mib;

const SCREEN: egui::Vec2 = egui::vec2(1600.0, 1000.0);
const BATCH: u64 = 1_000;

fn write_archive(dir: &std::path::Path, n: u64) -> Result<u64, String> {
    let mut rec = SqliteRecorder::create(dir).map_err(|e| e.to_string())?;
    let card = Card::new_default("bench");
    let info = RunInfo {
        card_name: "bench".to_owned(),
        task_name: "synthetic".to_owned(),
        max_iterations: n,
        model: "offline model (built-in, no network)".to_owned(),
        offline: true,
        seed: 0,
        parallel: 1,
        run_dir: Some(dir.to_path_buf()),
        unsandboxed: None,
        forked_from: None,
        clearance: None,
    };
    rec.begin(&info, &card, std::path::Path::new("synthetic"))
        .map_err(|e| e.to_string())?;
    let mut bytes = 0u64;
    let mut next = 0u64;
    while next < n {
        let end = (next + BATCH).min(n);
        let batch: Vec<Arc<Genome>> = (next..end).map(|i| Arc::new(common::genome(i))).collect();
        for g in &batch {
            bytes += serde_json::to_string(&**g).map_or(0, |s| s.len() as u64);
        }
        let ck = Checkpoint {
            iterations_done: end - 1,
            last_iteration: end - 1,
            next_id: end,
            rng: seeded(0),
            policy: serde_json::Value::Null,
            memory: serde_json::Value::Null,
            usage: TokenUsage::default(),
            valid: 0,
            invalid: 0,
            rejected: 0,
            wall_secs: 0.0,
            steering: Default::default(),
        };
        rec.record_iteration(&batch, &ck)
            .map_err(|e| e.to_string())?;
        next = end;
    }
    rec.finish(&RunSummary {
        status: RunStatus::Completed,
        iterations: n - 1,
        genomes: n,
        valid: 0,
        invalid: 0,
        rejected: 0,
        best_id: None,
        best_score: None,
        initial_score: None,
        usage: TokenUsage::default(),
        wall_secs: 0.0,
        run_wall_secs: 0.0,
    })
    .map_err(|e| e.to_string())?;
    Ok(bytes)
}

fn frame(ctx: &egui::Context, view: &mut RunView, t: f64) -> Duration {
    let start = Instant::now();
    let input = egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, SCREEN)),
        time: Some(t),
        ..Default::default()
    };
    let mut out = ctx.run_ui(input, |ui| {
        egui::Panel::bottom("status").show(ui, |ui| ui.horizontal(|ui| view.status_bar_ui(ui)));
        egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
    });
    let prims = ctx.tessellate(std::mem::take(&mut out.shapes), out.pixels_per_point);
    let took = start.elapsed();
    std::hint::black_box(prims);
    took
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), String> {
    let n: u64 = std::env::var("GENOMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().join("big-run");
    let t = Instant::now();
    let bytes = write_archive(&dir, n)?;
    let file = std::fs::metadata(dir.join("archive.sqlite")).map_or(0, |m| m.len());
    println!(
        "wrote {n} genomes ({:.2} KB of JSON each on average, archive {:.0} MB) in {:.1} s",
        bytes as f64 / n.max(1) as f64 / 1024.0,
        file as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // A warm studio: the context has drawn a frame before the run is opened.
    let ctx = egui::Context::default();
    let mut view = RunView::default();
    frame(&ctx, &mut view, 0.0);

    let before = rss_mib();
    let t = Instant::now();
    let run = read_archive(&dir)?;
    let read = t.elapsed();
    let held = rss_mib() - before;
    let count = run.history.genomes.len();
    let best = run.history.best_id;

    let t = Instant::now();
    view.show_archived(run);
    view.select(best);
    let load = t.elapsed();
    let first = frame(&ctx, &mut view, 1.0);
    let second = frame(&ctx, &mut view, 1.1);

    let total = read + load + first;
    println!("| step | ms |");
    println!("|---|---:|");
    println!(
        "| read_archive: the RunHistory of {count} genomes' heads | {:.0} |",
        ms(read)
    );
    println!("| RunView::show_archived + select best | {:.1} |", ms(load));
    println!("| first frame (layout + tessellation) | {:.0} |", ms(first));
    println!("| **total** | **{:.0}** |", ms(total));
    println!(
        "(second frame: {:.1} ms; target total < 2000 ms)",
        ms(second)
    );
    println!("memory added by holding the history (resident): {held:.0} MiB (target < 50 MB)");
    Ok(())
}
