#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Metering a coding agent's spend against the proposal's caps and the
//! run's budget, through the command line on the built-in repository task
//! `fit_package`, with a scripted model endpoint on loopback behind the
//! run's relay that reports known usage, priced by the settings file.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::scripted_upstream::{ScriptedUpstream, Turn};

/// The run's key, in the run's environment only.
const SECRET: &str = "sk-metering-test-DO-NOT-LEAK-7d21f0";
const MODEL: &str = "metered-model";

/// USD per million tokens: 1,000 prompt tokens cost 1/128 dollar and 200
/// completion tokens 1/128 too, so each reply costs exactly 1/64 (sums of
/// such costs are exact in binary floating point).
const PROMPT_PER_MILLION: f64 = 7.8125;
const COMPLETION_PER_MILLION: f64 = 39.0625;
const PROMPT: u64 = 1000;
const COMPLETION: u64 = 200;
const PER_REPLY: f64 = 1.0 / 64.0;

/// A temp HOME whose settings file prices `MODEL`.
fn home_with_prices(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    let config = home.join(".config/galapagos");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        format!(
            r#"{{"prices": {{"{MODEL}": {{"prompt_per_million": {PROMPT_PER_MILLION}, "completion_per_million": {COMPLETION_PER_MILLION}}}}}}}"#
        ),
    )
    .unwrap();
    home
}

/// An agent that sends `requests` Chat Completions requests through the
/// relay (printing each status and the relay's error message), then
/// changes the program.
fn agent_script(requests: u32) -> String {
    format!(
        r##"for i in $(seq {requests}); do
  curl -s -o reply.json -w 'STATUS %{{http_code}}\n' -H "Authorization: Bearer $OPENAI_API_KEY" \
    -H 'Content-Type: application/json' -d '{{"model":"{MODEL}","messages":[{{"role":"user","content":"improve it"}}]}}' \
    "$OPENAI_BASE_URL/chat/completions"
  cat reply.json; echo; rm -f reply.json
done
echo "# tried at $(date +%s%N)" >> fitpkg/model.py
echo done"##
    )
}

fn card(dir: &Path, script: &str, proposer_extra: &str, general_extra: &str) -> PathBuf {
    let yaml = format!(
        "name: agent_metered\nnamespace: user\nsummary: a metered script as the agent\n\
         population:\n  kind: in_memory\n\
         selection_policy:\n  kind: identity\n\
         prompt_builder:\n  kind: default\n\
         proposer:\n  kind: agent_command\n  command: [/bin/bash, -c, {script:?}, agent]\n  timeout_secs: 300\n{proposer_extra}\
         evaluator:\n  kind: subprocess\n  timeout_secs: 60\n\
         memory:\n  kind: none\n\
         general:\n  max_iterations: 8\n  parallel: 1\n{general_extra}"
    );
    let path = dir.join("agent_metered.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

struct Ran {
    stdout: String,
    stderr: String,
    run_dir: PathBuf,
}

fn run(dir: &Path, card: &Path, upstream: &ScriptedUpstream) -> Ran {
    let home = home_with_prices(dir);
    let out = dir.join("runs");
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GALAPAGOS_METER_TEST_KEY", SECRET)
        .stdin(Stdio::null())
        .arg("run")
        .arg(card)
        .args(["--task", "fit_package", "--quiet", "--out"])
        .arg(&out)
        .args([
            "--api-base",
            &upstream.base_url(),
            "--model",
            MODEL,
            "--api-key-env",
            "GALAPAGOS_METER_TEST_KEY",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    Ran {
        stdout,
        stderr,
        run_dir,
    }
}

fn genomes(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn summary(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap()
}

/// The steps of `g` the relay refused, each as (cap, status, message the
/// agent got).
fn refusals(g: &serde_json::Value) -> Vec<(String, u64, String)> {
    g["agent"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["refused"].is_string())
        .map(|s| {
            let body: serde_json::Value = serde_json::from_str(s["response"].as_str().unwrap())
                .unwrap_or_else(|e| panic!("the refusal is JSON ({e}): {s}"));
            (
                s["cap"].as_str().unwrap_or("none").to_owned(),
                s["status"].as_u64().unwrap(),
                body["error"]["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn an_agent_cannot_spend_past_the_proposals_cap_or_the_runs_budget() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = ScriptedUpstream::start(vec![Turn::text("noted", PROMPT, COMPLETION)]);
    // Each proposal may spend two replies' worth, the run five: three
    // requests a proposal, so the first two proposals are stopped by their
    // own cap and the third by the run's budget after one reply.
    let card = card(
        dir.path(),
        &agent_script(3),
        &format!("  max_tokens: null\n  max_cost_usd: {}\n", 2.0 * PER_REPLY),
        &format!("  max_cost_usd: {}\n", 5.0 * PER_REPLY),
    );
    let ran = run(dir.path(), &card, &upstream);

    // The run stopped at its budget, well before its 8 iterations.
    let s = summary(&ran.run_dir);
    let status = s["status"].as_str().unwrap();
    assert!(status.starts_with("budget reached"), "{status}");
    assert_eq!(s["iterations"], 3, "{s}");
    assert_eq!(upstream.model_requests(), 5, "five replies forwarded");

    let all = genomes(&ran.run_dir);
    let children: Vec<&serde_json::Value> = all.iter().filter(|g| g["iteration"] != 0).collect();
    assert_eq!(children.len(), 3, "{all:?}");
    let mut total = 0.0;
    let mut tokens = 0;
    for (i, g) in children.iter().enumerate() {
        let said = g["agent"]["stdout"].as_str().unwrap();
        assert!(said.trim_end().ends_with("done"), "{said}");
        assert_eq!(g["valid"], true, "the agent's child is scored: {g}");
        let forwarded = if i < 2 { 2 } else { 1 };
        // Its usage is the scripted usage of the replies it got, priced.
        assert_eq!(g["usage"]["prompt_tokens"], forwarded * PROMPT, "{g}");
        assert_eq!(
            g["usage"]["completion_tokens"],
            forwarded * COMPLETION,
            "{g}"
        );
        let cost = g["usage"]["cost_usd"].as_f64().unwrap();
        assert_eq!(cost, forwarded as f64 * PER_REPLY, "{g}");
        total += cost;
        tokens += g["usage"]["prompt_tokens"].as_u64().unwrap()
            + g["usage"]["completion_tokens"].as_u64().unwrap();
        // The rest were refused in OpenAI's shape, naming the cap.
        let refused = refusals(g);
        assert_eq!(refused.len(), 3 - forwarded as usize, "{refused:?}");
        for (cap, status, message) in &refused {
            assert_eq!(*status, 429, "{message}");
            if i < 2 {
                assert_eq!(cap, "proposal_cost", "{message}");
                assert!(message.contains("this proposal's cost cap"), "{message}");
                assert!(message.contains("max_cost_usd"), "{message}");
            } else {
                assert_eq!(cap, "run_cost", "{message}");
                assert!(message.contains("the run's cost budget"), "{message}");
                assert!(message.contains("general.max_cost_usd"), "{message}");
            }
        }
        assert_eq!(
            said.matches("insufficient_quota").count(),
            2 * refused.len(),
            "the agent got each refusal (type and code): {said}"
        );
    }
    // The run's spend is the sum over its genomes, and exactly its budget.
    assert_eq!(total, 5.0 * PER_REPLY);
    assert_eq!(s["cost_usd"].as_f64().unwrap(), total, "{s}");
    assert_eq!(
        s["prompt_tokens"].as_u64().unwrap() + s["completion_tokens"].as_u64().unwrap(),
        tokens
    );
    // The key is in nothing the run wrote or printed.
    assert!(!ran.stdout.contains(SECRET) && !ran.stderr.contains(SECRET));
    assert!(
        !std::fs::read_to_string(ran.run_dir.join("genomes.jsonl"))
            .unwrap()
            .contains(SECRET)
    );
}

#[test]
fn the_runs_token_budget_stops_an_agent_inside_its_proposal() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = ScriptedUpstream::start(vec![Turn::text("noted", PROMPT, COMPLETION)]);
    // No cap of the proposal's; the run may use 3.5 replies' tokens: the
    // first proposal gets three replies, the second one (the budget is
    // still short by half a reply) and then is refused.
    let per = PROMPT + COMPLETION;
    let card = card(
        dir.path(),
        &agent_script(3),
        "  max_tokens: null\n  max_cost_usd: null\n",
        &format!("  max_tokens: {}\n", 3 * per + per / 2),
    );
    let ran = run(dir.path(), &card, &upstream);
    let s = summary(&ran.run_dir);
    let status = s["status"].as_str().unwrap();
    assert!(status.starts_with("budget reached"), "{status}");
    assert_eq!(upstream.model_requests(), 4);
    let all = genomes(&ran.run_dir);
    let children: Vec<&serde_json::Value> = all.iter().filter(|g| g["iteration"] != 0).collect();
    assert_eq!(children.len(), 2, "{all:?}");
    assert!(refusals(children[0]).is_empty());
    let refused = refusals(children[1]);
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (cap, status, message) in &refused {
        assert_eq!((cap.as_str(), *status), ("run_tokens", 429), "{message}");
        assert!(
            message.contains("the run's token budget") && message.contains("general.max_tokens"),
            "{message}"
        );
    }
    assert_eq!(
        s["prompt_tokens"].as_u64().unwrap() + s["completion_tokens"].as_u64().unwrap(),
        4 * per
    );
    assert_eq!(s["cost_usd"].as_f64().unwrap(), 4.0 * PER_REPLY, "{s}");
}

/// An agent that starts a streamed request in the background, waits for
/// its first bytes (bounded), changes the program and exits: the stream
/// is still in flight when the proposal ends.
fn agent_leaving_a_stream() -> String {
    format!(
        r##"curl -sN -o stream.txt -H "Authorization: Bearer $OPENAI_API_KEY" \
  -H 'Content-Type: application/json' \
  -d '{{"model":"{MODEL}","stream":true,"max_tokens":1000,"messages":[{{"role":"user","content":"think long"}}]}}' \
  "$OPENAI_BASE_URL/chat/completions" &
for i in $(seq 1200); do [ -s stream.txt ] && break; sleep 0.05; done
head -c 300 stream.txt; echo
rm -f stream.txt
echo "# tried at $(date +%s%N)" >> fitpkg/model.py
echo done"##
    )
}

#[test]
fn a_stream_in_flight_when_the_agent_exits_is_counted_on_the_genome_and_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let first = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hmm\"}}]}\n\n";
    let upstream = ScriptedUpstream::with(std::sync::Arc::new(
        move |req: &common::scripted_upstream::Received, _| {
            if req.json()["stream"] == true {
                Turn::Stall {
                    content_type: "text/event-stream".into(),
                    first: first.to_owned(),
                }
            } else {
                Turn::text("noted", PROMPT, COMPLETION)
            }
        },
    ));
    // The proposal may use 5,000 tokens; the stream it left is cut when the
    // proposal ends and counts as the rest of that cap.
    let card = card(
        dir.path(),
        &agent_leaving_a_stream(),
        "  max_tokens: 5000\n  max_cost_usd: null\n",
        "  max_iterations: 1\n",
    );
    let card_text = std::fs::read_to_string(&card)
        .unwrap()
        .replace("  max_iterations: 8\n", "");
    std::fs::write(&card, card_text).unwrap();
    let ran = run(dir.path(), &card, &upstream);
    let all = genomes(&ran.run_dir);
    let children: Vec<&serde_json::Value> = all.iter().filter(|g| g["iteration"] != 0).collect();
    assert_eq!(children.len(), 1, "{all:?}");
    let g = children[0];
    let said = g["agent"]["stdout"].as_str().unwrap();
    assert!(said.contains("hmm"), "the stream had started: {said}");
    let steps = g["agent"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "the stream in flight is a step: {g}");
    let tokens = |u: &serde_json::Value| {
        u["prompt_tokens"].as_u64().unwrap_or(0) + u["completion_tokens"].as_u64().unwrap_or(0)
    };
    assert_eq!(tokens(&steps[0]["usage"]), 5000, "{}", steps[0]);
    assert!(
        steps[0]["note"]
            .as_str()
            .unwrap_or("")
            .contains("could not be read"),
        "{}",
        steps[0]
    );
    assert_eq!(tokens(&g["usage"]), 5000, "the genome carries it: {g}");
    let s = summary(&ran.run_dir);
    assert_eq!(tokens(&s), 5000, "summary.json counts it: {s}");
    assert!(s["cost_usd"].as_f64().unwrap() > 0.0, "{s}");
}
