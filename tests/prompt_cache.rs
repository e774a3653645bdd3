//! What prompt caching saves: 100-iteration runs against a scripted endpoint
//! that speaks the Anthropic Messages API and reports cache usage as
//! Anthropic does (a prefix marked `cache_control` of at least 1024 tokens
//! is written on first use and read afterwards; `input_tokens` counts only
//! what was not cached), priced as Claude Sonnet 4.5 ($3 input, $0.30 cache
//! read, $3.75 cache write, $15 output per million tokens). The same run
//! with caching on and off, with a task description of a realistic length
//! and with the one-line description of the test task (below the minimum
//! Anthropic caches).
//!
//! `cargo test --test prompt_cache -- --nocapture` prints the table the
//! user guide quotes (docs/models.md).
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::llm_server::{LlmServer, Reply, Seen};
use galapagos::engine::events::RunSummary;
use galapagos::engine::genome::TokenUsage;
use galapagos::engine::model::openai::KeyHeader;
use galapagos::engine::model::{
    ModelRequest, OfflineModel, OpenAiConfig, OpenAiModel, Price, Protocol,
};
use serde_json::{Value, json};

/// Anthropic's smallest cacheable prefix for Sonnet models, in tokens.
const MIN_CACHEABLE: u64 = 1024;

fn tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The scripted endpoint: answers as the offline model, reports usage as
/// Anthropic does.
fn server() -> LlmServer {
    let cache: Arc<Mutex<HashSet<String>>> = Arc::default();
    LlmServer::start(move |s: &Seen| {
        let (system, marked) = match &s.body["system"] {
            Value::String(t) => (t.clone(), false),
            Value::Array(blocks) => (
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<String>(),
                blocks.iter().any(|b| b.get("cache_control").is_some()),
            ),
            _ => (String::new(), false),
        };
        let user = s.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let (mut read, mut write) = (0, 0);
        let mut input = tokens(&user);
        if marked && tokens(&system) >= MIN_CACHEABLE {
            let mut cache = cache.lock().unwrap();
            if cache.contains(&system) {
                read = tokens(&system);
            } else {
                write = tokens(&system);
                cache.insert(system.clone());
            }
        } else {
            input += tokens(&system);
        }
        let text = OfflineModel::new().reply_text(&ModelRequest {
            system,
            user: user.clone(),
            seed: tokens(&user),
        });
        Reply::json(
            200,
            &json!({"id": "msg_1", "type": "message", "role": "assistant",
                "model": s.body["model"], "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                          "cache_read_input_tokens": read, "output_tokens": tokens(&text)}}),
        )
    })
}

/// A task brief of the length real ones have: what the program does, the
/// target, the rules of the evaluation and what has been tried.
fn long_description() -> String {
    let mut d = String::from(
        "# Fitting four constants\n\nThe program returns four numbers A, B, C and SHIFT that \
         parameterise a cubic response curve used by a downstream simulator. The evaluator \
         compares them with a hidden target and scores 1 / (1 + mean squared error).\n\n",
    );
    for (i, topic) in [
        "Background",
        "What the simulator does with the constants",
        "Constraints on each constant",
        "How the evaluator scores a candidate",
        "Numerical stability",
        "What earlier searches found",
        "Failure modes to avoid",
        "Style of the edits",
    ]
    .iter()
    .enumerate()
    {
        d.push_str(&format!("## {topic}\n\n"));
        for j in 0..2 {
            d.push_str(&format!(
                "Point {}.{}: keep every constant finite and within the range the simulator \
                 accepts; a value outside it is clamped and the candidate loses accuracy. \
                 Small, reasoned steps have worked better than large jumps, and a change that \
                 lowers the error on one constant while raising it on another is usually not \
                 worth keeping. Report nothing on standard output; the evaluator reads only \
                 the returned list.\n\n",
                i + 1,
                j + 1
            ));
        }
    }
    d
}

struct Outcome {
    usage: TokenUsage,
    summary: RunSummary,
}

fn run(server: &LlmServer, task: &Path, cache: bool, out: &Path) -> Outcome {
    let registry = common::registry();
    let mut card = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    card.general.max_iterations = 100;
    card.general.parallel = 1;
    let mut c = OpenAiConfig::new("claude-sonnet-4-5", &server.base("/v1"));
    c.protocol = Protocol::AnthropicMessages;
    c.key_header = KeyHeader::XApiKey;
    c.key_required = false;
    c.api_key_env = "GALAPAGOS_TEST_NO_KEY".into();
    c.prompt_cache = cache;
    c.price = Some(Price::new(3.0, 15.0).with_cache(0.3, 3.75));
    let model = Arc::new(OpenAiModel::new(c, 2).unwrap());
    let handle = common::spawn_with(
        common::plan_in(card, task, Some(out.to_path_buf()), &registry),
        model,
    );
    let (genomes, summary) = common::collect(handle, |_, _| {});
    let mut usage = TokenUsage::default();
    for g in &genomes {
        if let Some(u) = &g.usage {
            usage.add(u);
        }
    }
    assert_eq!(summary.iterations, 100);
    Outcome { usage, summary }
}

#[test]
fn caching_the_stable_prefix_cuts_the_cost_of_a_100_iteration_run() {
    let server = server();
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let short = tmp.path().join("short");
    std::fs::create_dir_all(&short).unwrap();
    for f in ["initial_program.py", "evaluator.py", "README.md"] {
        std::fs::copy(task.join(f), short.join(f)).unwrap();
    }
    std::fs::write(task.join("README.md"), long_description()).unwrap();

    println!(
        "| task description | caching | input tokens | of which cache reads | cache writes | output tokens | cost (USD) |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut costs = Vec::new();
    for (label, dir) in [("long", &task), ("one line", &short)] {
        let desc_tokens = tokens(&std::fs::read_to_string(dir.join("README.md")).unwrap());
        for cache in [false, true] {
            let o = run(
                &server,
                dir,
                cache,
                &tmp.path().join(format!("{label}-{cache}")),
            );
            let u = o.usage;
            let cost = o.summary.usage.cost_usd.unwrap();
            println!(
                "| {label} (~{desc_tokens} tokens) | {} | {} | {} | {} | {} | {cost:.4} |",
                if cache { "on" } else { "off" },
                u.prompt_tokens,
                u.cached_tokens,
                u.cache_write_tokens,
                u.completion_tokens,
            );
            costs.push((label, cache, cost, u));
        }
    }
    let (_, _, long_off, off_usage) = costs[0];
    let (_, _, long_on, on_usage) = costs[1];
    // Caching on: the prefix is written once and read 99 times or more.
    assert_eq!(off_usage.cached_tokens, 0);
    assert!(on_usage.cache_write_tokens > 0);
    assert!(
        on_usage.cached_tokens >= 99 * on_usage.cache_write_tokens,
        "{on_usage:?}"
    );
    assert!(long_on < long_off * 0.7, "{long_on} vs {long_off}");
    println!(
        "long description: caching saves {:.0}% ({long_off:.4} -> {long_on:.4} USD)",
        100.0 * (1.0 - long_on / long_off)
    );
    // Below Anthropic's minimum nothing is cached, and marking costs nothing.
    let (_, _, short_off, _) = costs[2];
    let (_, _, short_on, short_usage) = costs[3];
    assert_eq!(
        short_usage.cached_tokens + short_usage.cache_write_tokens,
        0
    );
    assert!(
        (short_on - short_off).abs() < short_off * 0.05,
        "{short_on} vs {short_off}"
    );
}
