//! `galapagos leaderboard` on the `model_bandit` card against a scripted
//! OpenAI-compatible endpoint on loopback that serves the card's two models
//! at different quality: `gpt-4.1` answers as the offline model does (it
//! tunes the program's constants), `gpt-4.1-mini` never proposes an edit.
//! The same batch with fixed equal weights is the comparison. The shares of
//! calls are read from the run folders the leaderboard wrote; the figures
//! printed are those of docs/programs-per-dollar.md.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a panic here is a failed test"
)]

mod common;

use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};

use common::llm_server::{LlmServer, Reply};
use common::*;
use serde_json::{Value, json};

const BETTER: &str = "gpt-4.1";
const WORSE: &str = "gpt-4.1-mini";
const SEEDS: u64 = 5;
const ITERATIONS: u64 = 100;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The endpoint: the better model's reply is the offline model's for the
/// same prompt (seeded by the prompt, so a batch is reproducible), the worse
/// model's a refusal to edit.
fn start_endpoint() -> LlmServer {
    LlmServer::start(|seen| {
        let body = &seen.body;
        let message = |role: &str| {
            body["messages"]
                .as_array()
                .and_then(|ms| ms.iter().find(|m| m["role"] == role))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let model = body["model"].as_str().unwrap_or_default();
        let text = if model == BETTER {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            message("user").hash(&mut h);
            galapagos::engine::model::OfflineModel::new().reply_text(
                &galapagos::engine::model::ModelRequest {
                    system: message("system"),
                    user: message("user"),
                    seed: h.finish(),
                },
            )
        } else {
            "I would leave the program as it is.".to_owned()
        };
        Reply::json(
            200,
            &json!({
                "id": "scripted",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
            }),
        )
    })
}

/// A HOME whose settings name the endpoint for both models (no key: a local
/// server needs none).
fn home_with_endpoint(home: &Path, base: &str) {
    let config = home.join(".config/galapagos");
    std::fs::create_dir_all(&config).unwrap();
    let settings = json!({"endpoints": [{
        "name": "scripted",
        "api_base": base,
        "api_key_env": "GALAPAGOS_TEST_NO_KEY",
        "models": [BETTER, WORSE],
    }]});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
}

/// Run the leaderboard of `card` into `out`; returns its leaderboard.json.
fn leaderboard(card: &Path, task: &Path, home: &Path, out: &Path) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("leaderboard")
        .arg(card)
        .arg("--task")
        .arg(task)
        .args(["--iterations", &ITERATIONS.to_string()])
        .args(["--seeds", &SEEDS.to_string(), "--parallel", "2"])
        .arg("--out")
        .arg(out)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap()).unwrap()
}

/// The better model's share of the calls of each run of `card` in `out`.
fn shares(out: &Path, card: &str) -> Vec<f64> {
    (0..SEEDS)
        .map(|seed| {
            let dir: PathBuf = out.join("runs").join(format!("{card}-seed{seed}"));
            let genomes =
                galapagos::engine::archive::read_genomes(&dir.join("genomes.jsonl")).unwrap();
            let calls: Vec<&str> = genomes
                .iter()
                .filter_map(|g| g.metadata.model.as_deref())
                .collect();
            assert!(calls.len() >= ITERATIONS as usize, "{card} seed {seed}");
            calls.iter().filter(|m| **m == BETTER).count() as f64 / calls.len() as f64
        })
        .collect()
}

#[test]
fn the_model_bandit_cards_leaderboard_moves_calls_to_the_better_model() {
    let server = start_endpoint();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    home_with_endpoint(&home, &server.base("/v1"));
    let task = temp_task(tmp.path());

    let adaptive_card = root().join("cards/model_bandit.yaml");
    let text = std::fs::read_to_string(&adaptive_card).unwrap();
    assert!(text.contains("weights: adaptive"));
    let fixed_text = text
        .replace("name: model_bandit\n", "name: model_bandit_fixed\n")
        .replace("weights: adaptive", "weights: fixed");
    let fixed_card = tmp.path().join("model_bandit_fixed.yaml");
    std::fs::write(&fixed_card, fixed_text).unwrap();

    let adaptive = leaderboard(&adaptive_card, &task, &home, &tmp.path().join("adaptive"));
    let fixed = leaderboard(&fixed_card, &task, &home, &tmp.path().join("fixed"));
    for lb in [&adaptive, &fixed] {
        let model = lb["model"].as_str().unwrap();
        assert!(model.contains("ensemble of 2"), "{model}");
        assert!(model.contains(&server.origin), "{model}");
    }
    assert!(
        adaptive["model"]
            .as_str()
            .unwrap()
            .contains("adaptive weights")
    );
    // Both models were asked, over HTTP.
    let asked: Vec<String> = server
        .seen()
        .iter()
        .filter_map(|s| s.body["model"].as_str().map(str::to_owned))
        .collect();
    assert!(asked.iter().any(|m| m == BETTER) && asked.iter().any(|m| m == WORSE));

    let a = shares(&tmp.path().join("adaptive"), "model_bandit");
    let f = shares(&tmp.path().join("fixed"), "model_bandit_fixed");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let best = |lb: &Value| lb["cards"][0]["best"]["mean"].as_f64().unwrap();
    println!(
        "model_bandit leaderboard, scripted endpoint ({BETTER}: the offline model's edits, {WORSE}: none), \
         {SEEDS} seeds x {ITERATIONS} iterations: {BETTER}'s share of calls {:.0}% adaptive (runs: {}), \
         {:.0}% fixed (runs: {}); best (mean) {:.4} adaptive, {:.4} fixed",
        100.0 * mean(&a),
        a.iter()
            .map(|s| format!("{:.0}%", 100.0 * s))
            .collect::<Vec<_>>()
            .join(" "),
        100.0 * mean(&f),
        f.iter()
            .map(|s| format!("{:.0}%", 100.0 * s))
            .collect::<Vec<_>>()
            .join(" "),
        best(&adaptive),
        best(&fixed),
    );
    assert!(mean(&a) >= 0.7, "{a:?}");
    assert!((mean(&f) - 0.5).abs() < 0.1, "{f:?}");
    // Each run learnt on its own: the first run of the batch and a later one
    // both start from the configured weights (an early share below the end's).
    for seed in 0..SEEDS {
        let dir = tmp
            .path()
            .join("adaptive/runs")
            .join(format!("model_bandit-seed{seed}"));
        let genomes = galapagos::engine::archive::read_genomes(&dir.join("genomes.jsonl")).unwrap();
        let first: Vec<&str> = genomes
            .iter()
            .filter_map(|g| g.metadata.model.as_deref())
            .take(8)
            .collect();
        assert!(
            first.contains(&WORSE),
            "seed {seed}: the first calls of a run explore both models: {first:?}"
        );
    }
}
