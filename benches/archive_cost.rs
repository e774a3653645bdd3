//! Cost of recording one iteration in a run folder (`archive.sqlite` in WAL
//! mode with synchronous=NORMAL, one transaction per iteration, plus one
//! `genomes.jsonl` line), as the archive grows to N genomes. Printed, not
//! asserted. Two passes: the commit itself (the recorders called directly, as
//! the writer thread calls them), and what the loop pays with the run
//! folder's standard recorder (`open_run_folder`: a hand-over to the writer
//! thread), plus how long that writer then takes to finish.
//!
//! `cargo bench --bench archive_cost` (N = 10,000; `N=100000 cargo bench --bench archive_cost` for more).
//! Each genome is shaped like a real one from the benchmark task: program
//! text, diff, a ~4.5 KB prompt and the model's reply.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use galapagos::engine::archive::{
    Checkpoint, JsonlRecorder, Recorders, RunRecorder, SqliteRecorder, open_run_folder,
};
use galapagos::engine::card::Card;
use galapagos::engine::events::{RunInfo, RunStatus, RunSummary};
use galapagos::engine::genome::{Genome, Prompt, Timings, TokenUsage};
use galapagos::engine::registry::Registry;

const PROGRAM: &str = "\"\"\"Toy task.\"\"\"\n\n# EVOLVE-BLOCK-START\nA = 1.0\nB = 0.0\nC = 0.0\nSHIFT = 0.0\n\n\ndef f(x):\n    return A * (x - SHIFT) ** 2 + B * x + C\n# EVOLVE-BLOCK-END\n\n\ndef run():\n    return [f(i / 10.0) for i in range(-20, 21)]\n";

fn genome(id: u64) -> Genome {
    let mut scores = std::collections::BTreeMap::new();
    let score = 1.0 / (2.0 + (id % 97) as f64);
    scores.insert("combined_score".to_owned(), score);
    scores.insert("mse".to_owned(), 1.0 / score - 1.0);
    Genome {
        id,
        parent_id: id.checked_sub(1),
        inspiration_ids: vec![id / 2, id / 3, id / 5],
        iteration: id,
        valid: true,
        scores,
        content: PROGRAM
            .replace("A = 1.0", &format!("A = {}", 1.0 + id as f64 * 1e-4))
            .into(),
        diff: Some(format!(
            "--- parent\n+++ child\n@@ -4,1 +4,1 @@\n-A = 1.0\n+A = {}\n",
            1.0 + id as f64 * 1e-4
        )),
        prompt: Some(Prompt {
            system: "You tune the numeric constants of a quadratic.".to_owned(),
            user: PROGRAM.repeat(10),
        }),
        response: Some("<<<<<<< SEARCH\nA = 1.0\n=======\nA = 1.1\n>>>>>>> REPLACE\n".to_owned()),
        timings: Timings {
            prompt_ms: 0.1,
            propose_ms: 1.0,
            evaluate_ms: 2.0,
        },
        usage: Some(TokenUsage {
            prompt_tokens: 900,
            completion_tokens: 30,
            cost_usd: None,
            ..TokenUsage::default()
        }),
        ..Genome::default()
    }
}

fn checkpoint(id: u64) -> Checkpoint {
    Checkpoint {
        iterations_done: id,
        last_iteration: id,
        next_id: id + 1,
        rng: galapagos::engine::rng::seeded(id),
        policy: serde_json::json!({"parent": id.saturating_sub(1), "uses": id % 5}),
        memory: serde_json::Value::Null,
        usage: TokenUsage::default(),
        valid: id + 1,
        invalid: 0,
        rejected: 0,
        wall_secs: 0.0,
        steering: Default::default(),
    }
}

/// Record `n` iterations, one every `pace` at most (a loop that does nothing
/// else would only measure the writer's back-pressure); the microseconds each
/// `record_iteration` call took, and the seconds `finish` took.
fn record(
    recorder: &mut dyn RunRecorder,
    card: &Card,
    dir: &Path,
    n: u64,
    pace: std::time::Duration,
) -> Result<(Vec<f64>, f64), String> {
    let info = RunInfo {
        card_name: card.name.clone(),
        task_name: "task_quadratic".to_owned(),
        max_iterations: n,
        model: "archive_cost".to_owned(),
        offline: true,
        seed: 0,
        parallel: 1,
        run_dir: Some(dir.to_path_buf()),
        unsandboxed: None,
        forked_from: None,
        clearance: None,
    };
    recorder
        .begin(&info, card, dir)
        .map_err(|e| e.to_string())?;
    let mut micros = Vec::with_capacity(n as usize);
    let mut next = Instant::now();
    for id in 0..n {
        let g = vec![Arc::new(genome(id))];
        let checkpoint = checkpoint(id);
        while Instant::now() < next {
            std::hint::spin_loop();
        }
        next = Instant::now() + pace;
        let t = Instant::now();
        recorder
            .record_iteration(&g, &checkpoint)
            .map_err(|e| e.to_string())?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let t = Instant::now();
    recorder
        .finish(&RunSummary::empty(RunStatus::Completed))
        .map_err(|e| e.to_string())?;
    Ok((micros, t.elapsed().as_secs_f64()))
}

fn table(title: &str, micros: &[f64]) {
    println!("{title}");
    println!(
        "{:>14} {:>10} {:>10} {:>10}",
        "genomes", "mean us", "median us", "p99 us"
    );
    for (lo, hi) in [
        (0usize, 100usize),
        (900, 1_000),
        (9_900, 10_000),
        (99_900, 100_000),
    ] {
        if hi > micros.len() {
            continue;
        }
        let mut w: Vec<f64> = micros[lo..hi].to_vec();
        w.sort_by(f64::total_cmp);
        let mean = w.iter().sum::<f64>() / w.len() as f64;
        println!(
            "{:>14} {mean:>10.1} {:>10.1} {:>10.1}",
            format!("{}-{}", lo + 1, hi),
            w[w.len() / 2],
            w[w.len() * 99 / 100]
        );
    }
}

fn folder_mib(dir: &Path) -> f64 {
    let bytes: u64 = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    bytes as f64 / 1_048_576.0
}

fn main() {
    let n: u64 = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let registry = Registry::builtin();
    let card = match Card::load(Path::new("cards/best_of_n.yaml"), &registry) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("run from the project folder: {e}");
            std::process::exit(2);
        }
    };
    let fail = |e: String| -> ! {
        eprintln!("{e}");
        std::process::exit(1);
    };
    let (Ok(direct_dir), Ok(std_dir)) = (tempfile::tempdir(), tempfile::tempdir()) else {
        fail("cannot create temp dirs".to_owned())
    };

    // 1. The commit: SQLite + JSON line, called directly.
    let sqlite = SqliteRecorder::create(direct_dir.path()).unwrap_or_else(|e| fail(e.to_string()));
    let mut direct = Recorders(vec![
        Box::new(sqlite),
        Box::new(JsonlRecorder::new(direct_dir.path(), false)),
    ]);
    let started = Instant::now();
    let (micros, _) = record(
        &mut direct,
        &card,
        direct_dir.path(),
        n,
        std::time::Duration::ZERO,
    )
    .unwrap_or_else(|e| fail(e));
    let total = started.elapsed().as_secs_f64();
    table(
        &format!(
            "commit of one iteration (SQLite WAL + JSON line), one genome each, {n} iterations"
        ),
        &micros,
    );
    println!(
        "total {total:.2} s ({:.1} us per iteration), run folder {:.1} MiB",
        total * 1e6 / n as f64,
        folder_mib(direct_dir.path())
    );

    // 2. What the loop pays: the run folder's recorder hands over to its
    // writer thread. One iteration per 0.5 ms, about the fastest loop the
    // side-by-side benchmark sees (P=4, no model latency, a 0.4 ms evaluator).
    let pace = std::time::Duration::from_micros(500);
    let mut standard =
        open_run_folder(std_dir.path(), false).unwrap_or_else(|e| fail(e.to_string()));
    let (micros, finish) =
        record(standard.as_mut(), &card, std_dir.path(), n, pace).unwrap_or_else(|e| fail(e));
    println!();
    table(
        &format!(
            "record_iteration as the loop calls it (hand-over to the writer thread), one every {} us, {n} iterations",
            pace.as_micros()
        ),
        &micros,
    );
    println!(
        "finish (waits for the writer to commit what is still queued): {:.2} ms",
        finish * 1e3
    );
}
