#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! A real coding agent's tokens and cost, checked against a scripted price:
//! mini-swe-agent (from PyPI) proposes through the built-in card
//! `agent_mini_swe` on the repository task `fit_package`, against a scripted
//! endpoint on loopback whose every reply reports a known, different usage,
//! with a price table in the settings file for the model: over OpenAI Chat
//! Completions (cached input tokens and reasoning output tokens among the
//! usage) and over the Anthropic Messages API (cache reads and cache
//! writes, LiteLLM's `anthropic/` provider). Each
//! step's, each genome's and the run's tokens and cost (in the archive and
//! in `summary.json`) must be the sums of the scripted usage priced by hand.
//!
//! The agent is installed into a venv under the target dir (or taken from
//! `GALAPAGOS_AGENTS_DIR`, where `.ci/run` installs it). Under CI=true the
//! test fails when it cannot be installed; elsewhere it says so and passes
//! without running.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use galapagos::engine::archive::Archive;
use galapagos::engine::genome::TokenUsage;

mod common;

use common::scripted_upstream::{Received, ScriptedUpstream, Turn};
use serde_json::{Value, json};

const SECRET: &str = "sk-agent-costs-DO-NOT-LEAK-41c9d7";
const MODEL: &str = "scripted-coder";
/// USD per million tokens: uncached input, cached input, output
/// (reasoning included).
const PROMPT_PRICE: f64 = 2.5;
const CACHED_PRICE: f64 = 0.625;
const CACHE_WRITE_PRICE: f64 = 3.125;
const COMPLETION_PRICE: f64 = 10.0;

#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Chat,
    Anthropic,
}

/// The usage the scripted endpoint reports for its `n`th model request
/// (each different, so a miscounted or misattributed reply shows): what
/// each protocol has, cached input and reasoning output in Chat
/// Completions, cache reads and writes in Anthropic's.
fn scripted_usage(wire: Wire, n: usize) -> TokenUsage {
    let n = n as u64;
    let base = TokenUsage {
        prompt_tokens: 2_000 + 137 * n,
        cached_tokens: 1_024 + 64 * n,
        completion_tokens: 150 + 11 * n,
        ..TokenUsage::default()
    };
    match wire {
        Wire::Chat => TokenUsage {
            reasoning_tokens: 64 + 5 * n,
            ..base
        },
        Wire::Anthropic => TokenUsage {
            cache_write_tokens: 300 + 7 * n,
            ..base
        },
    }
}

/// The price of `u` by hand: uncached input, cache reads, cache writes and
/// output.
fn priced(u: &TokenUsage) -> f64 {
    let plain = u.prompt_tokens - u.cached_tokens - u.cache_write_tokens;
    (plain as f64 * PROMPT_PRICE
        + u.cached_tokens as f64 * CACHED_PRICE
        + u.cache_write_tokens as f64 * CACHE_WRITE_PRICE
        + u.completion_tokens as f64 * COMPLETION_PRICE)
        / 1e6
}

/// A whole reply in `wire`'s shape, as the provider writes it, that calls
/// mini-swe-agent's `bash` tool with `command` and reports `u`.
fn reply(wire: Wire, request: &Received, command: &str, u: &TokenUsage) -> Turn {
    assert_ne!(
        request.json()["stream"],
        true,
        "the scripted reply is a whole one: the agent must not ask for a stream"
    );
    let body = match wire {
        Wire::Chat => json!({"id": "chatcmpl-costs", "object": "chat.completion",
            "created": 1_700_000_000, "model": MODEL, "system_fingerprint": "fp_costs",
            "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "refusal": null,
                    "tool_calls": [{"id": "call_0001", "type": "function",
                        "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}]}}],
            "usage": {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                "total_tokens": u.prompt_tokens + u.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}}),
        // Anthropic's input_tokens leaves out the cache's reads and writes.
        Wire::Anthropic => json!({"id": "msg_costs", "type": "message", "role": "assistant",
            "model": MODEL, "stop_reason": "tool_use", "stop_sequence": null,
            "content": [{"type": "tool_use", "id": "toolu_costs", "name": "bash",
                "input": {"command": command}}],
            "usage": {"input_tokens": u.prompt_tokens - u.cached_tokens - u.cache_write_tokens,
                "cache_read_input_tokens": u.cached_tokens,
                "cache_creation_input_tokens": u.cache_write_tokens,
                "output_tokens": u.completion_tokens}}),
    };
    Turn::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: body.to_string(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-9)
}

fn assert_usage(what: &str, got: &TokenUsage, want: &TokenUsage) {
    assert_eq!(
        (
            got.prompt_tokens,
            got.cached_tokens,
            got.cache_write_tokens,
            got.completion_tokens,
            got.reasoning_tokens
        ),
        (
            want.prompt_tokens,
            want.cached_tokens,
            want.cache_write_tokens,
            want.completion_tokens,
            want.reasoning_tokens
        ),
        "{what}: tokens"
    );
    let (g, w) = (got.cost_usd.unwrap(), want.cost_usd.unwrap());
    assert!(close(g, w), "{what}: cost {g} against {w}");
}

#[test]
fn a_real_agents_tokens_and_cost_over_chat_completions_are_the_scripted_usage_priced() {
    check(Wire::Chat);
}

#[test]
fn a_real_agents_tokens_and_cost_over_anthropic_messages_are_the_scripted_usage_priced() {
    check(Wire::Anthropic);
}

fn check(wire: Wire) {
    let Some(bin) = common::agents::pypi("mini-swe-agent", "mini") else {
        return;
    };
    // Request n: a sed that changes the weights, then (once the agent has
    // seen its output) the command that ends its task.
    let sent: Arc<Mutex<Vec<TokenUsage>>> = Arc::default();
    let log = Arc::clone(&sent);
    let upstream = ScriptedUpstream::with(Arc::new(move |request: &Received, n: usize| {
        let answered = request.json().to_string().contains("returncode");
        let command = if answered {
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT".to_owned()
        } else {
            format!(
                "sed -i -E 's/WEIGHTS = \\[[^]]*\\]/WEIGHTS = [0.40, {:.2}]/' fitpkg/model.py",
                0.75 + 0.05 * n as f64
            )
        };
        let u = scripted_usage(wire, n);
        let mut log = log.lock().unwrap();
        assert_eq!(log.len(), n, "requests are numbered in order");
        log.push(u);
        reply(wire, request, &command, &u)
    }));

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let config = home.join(".config/galapagos");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        json!({"prices": {MODEL: {"prompt_per_million": PROMPT_PRICE,
            "cached_per_million": CACHED_PRICE, "cache_write_per_million": CACHE_WRITE_PRICE,
            "completion_per_million": COMPLETION_PRICE}}})
        .to_string(),
    )
    .unwrap();
    // The built-in card, its model provider LiteLLM's anthropic/ for the
    // Messages API.
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/agent_mini_swe.yaml"),
    )
    .unwrap();
    let card = dir.path().join("agent_mini_swe.yaml");
    std::fs::write(
        &card,
        match wire {
            Wire::Chat => shipped,
            Wire::Anthropic => shipped.replace("openai/{model}", "anthropic/{model}"),
        },
    )
    .unwrap();
    let out = dir.path().join("runs");
    let iterations = 3;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("GALAPAGOS_AGENT_KEY", SECRET)
        .stdin(Stdio::null())
        .arg("run")
        .arg(&card)
        .args(["--task", "fit_package", "--iterations"])
        .arg(iterations.to_string())
        .arg("--out")
        .arg(&out)
        .args(["--api-base", &upstream.base_url(), "--model", MODEL])
        .args(["--api-key-env", "GALAPAGOS_AGENT_KEY"]);
    if wire == Wire::Anthropic {
        cmd.args(["--provider", "anthropic"]);
    }
    let o = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    let sent = sent.lock().unwrap().clone();
    let archive = Archive::open(&run_dir).unwrap();
    let genomes = archive.genomes().unwrap();
    let children: Vec<_> = genomes.iter().filter(|g| g.iteration != 0).collect();
    assert_eq!(children.len(), iterations, "{stdout}");
    // One proposal at a time: the requests are the steps of the genomes in
    // their order.
    let mut next = 0;
    let mut run_total = TokenUsage::default();
    for g in &children {
        let agent = g.agent.as_ref().unwrap();
        assert!(g.valid, "the agent's child is scored: {:?}", g.error);
        assert!(!agent.steps.is_empty());
        let mut want = TokenUsage::default();
        for step in &agent.steps {
            let mut u = sent[next];
            u.cost_usd = Some(priced(&u));
            assert_usage(
                &format!("genome {} step {}", g.id, step.index),
                step.usage.as_ref().unwrap(),
                &u,
            );
            want.add(&u);
            next += 1;
        }
        assert!(want.cached_tokens > 0);
        match wire {
            Wire::Chat => assert!(want.reasoning_tokens > 0),
            Wire::Anthropic => assert!(want.cache_write_tokens > 0),
        }
        for step in &agent.steps {
            let expected = match wire {
                Wire::Chat => "chat_completions",
                Wire::Anthropic => "anthropic_messages",
            };
            assert_eq!(serde_json::to_value(step.wire).unwrap(), expected);
        }
        assert_usage(
            &format!("genome {}", g.id),
            g.usage.as_ref().unwrap(),
            &want,
        );
        run_total.add(g.usage.as_ref().unwrap());
    }
    assert_eq!(next, sent.len(), "every request is a step of a genome");
    assert_eq!(next as u64, upstream.model_requests());

    // The run's total is the sum over its genomes: in the archive's
    // checkpoint and in summary.json.
    let recorded = archive.checkpoint().unwrap().unwrap().usage;
    assert_usage("the archive's run total", &recorded, &run_total);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    // (A count of zero is left out of the file.)
    let count = |key: &str| summary[key].as_u64().unwrap_or(0);
    let from_summary = TokenUsage {
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
        cached_tokens: count("cached_tokens"),
        cache_write_tokens: count("cache_write_tokens"),
        reasoning_tokens: count("reasoning_tokens"),
        cost_usd: summary["cost_usd"].as_f64(),
    };
    assert_usage("summary.json", &from_summary, &run_total);
    // And by hand, from the scripted usage alone.
    let by_hand: f64 = sent.iter().map(priced).sum();
    assert!(close(run_total.cost_usd.unwrap(), by_hand));
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
}
