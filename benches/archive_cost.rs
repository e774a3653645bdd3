//! Cost of recording one iteration in a run folder (`archive.sqlite` in WAL
//! mode with synchronous=NORMAL, one transaction per iteration, plus one
//! `genomes.jsonl` line), as the archive grows to N genomes. Printed, not
//! asserted.
//!
//! `cargo bench --bench archive_cost` (N = 10,000; `N=100000 cargo bench --bench archive_cost` for more).
//! Each genome is shaped like a real one from the benchmark task: program
//! text, diff, a ~4.5 KB prompt and the model's reply.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use galapagos::engine::archive::{Checkpoint, open_run_folder};
use galapagos::engine::card::Card;
use galapagos::engine::events::RunInfo;
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
        content: PROGRAM.replace("A = 1.0", &format!("A = {}", 1.0 + id as f64 * 1e-4)),
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
        }),
        ..Genome::default()
    }
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
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("temp dir: {e}");
            std::process::exit(1);
        }
    };
    let mut recorder = match open_run_folder(dir.path(), false) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let info = RunInfo {
        card_name: card.name.clone(),
        task_name: "task_quadratic".to_owned(),
        max_iterations: n,
        model: "archive_cost".to_owned(),
        offline: true,
        seed: 0,
        parallel: 1,
        run_dir: Some(dir.path().to_path_buf()),
    };
    if let Err(e) = recorder.begin(&info, &card, dir.path()) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let mut micros = Vec::with_capacity(n as usize);
    let started = Instant::now();
    for id in 0..n {
        let g = vec![Arc::new(genome(id))];
        let checkpoint = Checkpoint {
            iterations_done: id,
            last_iteration: id,
            next_id: id + 1,
            rng: galapagos::engine::rng::seeded(id),
            policy: serde_json::json!({"parent": id.saturating_sub(1), "uses": id % 5}),
            memory: serde_json::Value::Null,
            usage: TokenUsage::default(),
            valid: id + 1,
            invalid: 0,
        };
        let t = Instant::now();
        if let Err(e) = recorder.record_iteration(&g, &checkpoint) {
            eprintln!("{e}");
            std::process::exit(1);
        }
        micros.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let total = started.elapsed().as_secs_f64();
    println!("record_iteration (SQLite WAL + JSON line), one genome per iteration, {n} iterations");
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
    let bytes: u64 = std::fs::read_dir(dir.path())
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    println!(
        "total {total:.2} s ({:.1} us per iteration), run folder {:.1} MiB",
        total * 1e6 / n as f64,
        bytes as f64 / 1048576.0
    );
}
