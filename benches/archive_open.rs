//! Opening a large recorded run in the studio (not a timed test): writes an
//! archive of 100,000 genomes of about 2 KB each with the engine's
//! `SqliteRecorder` (batches of 1,000 per transaction, as a run would commit
//! them), then times the three steps of "open this run read-only":
//! `Archive::open` + `genomes()` (plus meta, checkpoint and log), building the
//! `RunHistory`, and the first frame of the run view with it loaded (layout
//! and tessellation, no GPU).
//!
//! `cargo bench --bench archive_open` (GENOMES=N to change the size).
//! Target: under 2 s in total at 100,000 genomes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::archive::{Archive, Checkpoint, RunRecorder, SqliteRecorder};
use galapagos::engine::card::Card;
use galapagos::engine::events::{RunInfo, RunStatus, RunSummary};
use galapagos::engine::genome::{FITNESS_KEY, Genome, GenomeMeta, Prompt, TokenUsage};
use galapagos::engine::rng::seeded;
use galapagos::studio::run::{RunHistory, RunView};

const SCREEN: egui::Vec2 = egui::vec2(1600.0, 1000.0);
const BATCH: u64 = 1_000;

fn program(i: u64) -> String {
    let mut s = String::from("# EVOLVE-BLOCK-START\nimport math\n\n");
    for k in 0..36 {
        s.push_str(&format!(
            "C{k} = {:.6}  # tuned constant {k}\n",
            ((i * 31 + k * 7) % 97) as f64 / 13.0
        ));
    }
    s.push_str("# EVOLVE-BLOCK-END\n\n\ndef run():\n    return [C0, C1, C2, C3]\n");
    s
}

/// A deterministic genome of about 2 KB as JSON.
fn genome(i: u64) -> Genome {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0xD1B5_4A32_D192_ED03;
    let valid = i == 0 || !h.is_multiple_of(10);
    let parent = if i == 0 { None } else { Some(h % i) };
    let mut scores = BTreeMap::new();
    if valid {
        let base = (i as f64 + 10.0).ln() / 12.0;
        scores.insert(FITNESS_KEY.to_owned(), base + (h % 1000) as f64 / 4000.0);
        scores.insert("mse".to_owned(), (h % 777) as f64 / 100.0);
    }
    Genome {
        id: i,
        parent_id: parent,
        inspiration_ids: Vec::new(),
        iteration: i,
        attempt: 0,
        valid,
        scores,
        diff: parent
            .map(|p| format!("--- parent\n+++ child\n@@ -4,1 +4,1 @@\n-C0 = {p}\n+C0 = {i}\n")),
        content: program(i),
        error: (!valid).then(|| "Traceback: ZeroDivisionError: division by zero".to_owned()),
        artifacts: BTreeMap::from([("stdout".to_owned(), format!("ran candidate {i}\n"))]),
        metadata: GenomeMeta {
            generation: 0,
            depth: (i % 17) as u32,
            island: None,
            model: Some("offline".to_owned()),
            patch_type: "diff".to_owned(),
            features: BTreeMap::new(),
        },
        prompt: parent.map(|_| Prompt {
            system: "You are an expert programmer improving a program.".to_owned(),
            user: format!("Improve program {i}. Keep the EVOLVE-BLOCK markers."),
        }),
        response: parent.map(|_| {
            "Raise C0.\n<<<<<<< SEARCH\nC0 = 1\n=======\nC0 = 2\n>>>>>>> REPLACE\n".to_owned()
        }),
        timings: Default::default(),
        usage: Some(TokenUsage {
            prompt_tokens: 800,
            completion_tokens: 120,
            cost_usd: None,
        }),
    }
}

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
    };
    rec.begin(&info, &card, std::path::Path::new("synthetic"))
        .map_err(|e| e.to_string())?;
    let mut bytes = 0u64;
    let mut next = 0u64;
    while next < n {
        let end = (next + BATCH).min(n);
        let batch: Vec<Arc<Genome>> = (next..end).map(|i| Arc::new(genome(i))).collect();
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
        best_id: None,
        best_score: None,
        initial_score: None,
        usage: TokenUsage::default(),
        wall_secs: 0.0,
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

    let t = Instant::now();
    let archive = Archive::open(&dir).map_err(|e| e.to_string())?;
    let contents = archive.contents().map_err(|e| e.to_string())?;
    drop(archive);
    let read = t.elapsed();
    let count = contents.genomes.len();

    let t = Instant::now();
    let history = RunHistory::from_archive(
        &dir,
        &contents.meta,
        contents.genomes,
        &contents.events,
        contents.checkpoint.as_ref(),
    );
    let build = t.elapsed();
    let best = history.best_id;

    let t = Instant::now();
    view.load_history(history);
    view.select(best);
    let load = t.elapsed();
    let first = frame(&ctx, &mut view, 1.0);
    let second = frame(&ctx, &mut view, 1.1);

    let total = read + build + load + first;
    println!("| step | ms |");
    println!("|---|---:|");
    println!(
        "| Archive::open + contents() ({count} genomes) | {:.0} |",
        ms(read)
    );
    println!("| RunHistory::from_archive | {:.0} |", ms(build));
    println!("| RunView::load_history + select best | {:.1} |", ms(load));
    println!("| first frame (layout + tessellation) | {:.0} |", ms(first));
    println!("| **total** | **{:.0}** |", ms(total));
    println!(
        "(second frame: {:.1} ms; target total < 2000 ms)",
        ms(second)
    );
    Ok(())
}
