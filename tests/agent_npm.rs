#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Real coding agents from npm as the proposer of a run on the built-in
//! repository task `fit_package`, through their shipped cards, against a
//! scripted model endpoint on loopback that answers in each protocol's real
//! shape, streamed as the agents ask: Claude Code
//! (`@anthropic-ai/claude-code`) over the Anthropic Messages API, with
//! `tool_use` blocks for its own Read and Edit tools, and the Codex CLI
//! (`@openai/codex`) over the OpenAI Responses API, with function calls of
//! its `exec_command` tool (a `cat`, then its `apply_patch`).
//!
//! Each is installed with `npm install --prefix` under
//! `GALAPAGOS_AGENTS_DIR` (where `.ci/run` installs them) or the target
//! dir. Under CI=true a test fails when its agent cannot be installed or
//! does not run; elsewhere it says so and passes without running. What
//! each run must show is in [`common::agents::run_and_check`].

mod common;

use std::sync::Arc;

use common::agents::{COMPLETION_TOKENS, PROMPT_TOKENS, card, new_weights, npm, run_and_check};
use common::scripted_upstream::{Received, ScriptedUpstream, Turn};
use serde_json::{Value, json};

/// The first line in `text` from `WEIGHTS = [` to its end (the program's
/// weights as the agent last read them).
fn weights_line(text: &str) -> Option<String> {
    let at = text.rfind("WEIGHTS = [")?;
    let line = &text[at..];
    Some(line[..line.find('\n').unwrap_or(line.len())].to_owned())
}

/// The names of the tools a request offers.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The working directory Claude Code tells the model (its environment
/// section, in the system prompt or, in later versions, a message), from
/// the raw body: the path ends at the escaped newline after it.
fn working_dir(body: &str) -> Option<String> {
    let label = "Primary working directory: ";
    let at = body.find(label)? + label.len();
    let rest = &body[at..];
    let end = rest.find(['\\', '"'])?;
    Some(rest[..end].trim().to_owned())
}

/// The text of the tool results in an Anthropic conversation, in order.
fn tool_results(body: &Value) -> Vec<String> {
    let blocks = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten();
    blocks
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect()
}

/// Claude Code: its Read tool on the model's file, then its Edit tool on
/// the weights line that Read showed, then a closing text (`end_turn`).
/// A request without Claude Code's tools (a side request) gets text.
fn claude_turns(request: &Received, n: usize) -> Turn {
    let body = request.json();
    let tools = tool_names(&body);
    let done = || {
        Turn::text(
            "I changed the periodic weight.",
            PROMPT_TOKENS,
            COMPLETION_TOKENS,
        )
    };
    if !(tools.iter().any(|t| t == "Read") && tools.iter().any(|t| t == "Edit")) {
        return done();
    }
    let Some(workdir) = working_dir(&request.body) else {
        return Turn::text("No working directory in the request.", 1, 1);
    };
    let file = format!("{workdir}/fitpkg/model.py");
    let results = tool_results(&body);
    match results.as_slice() {
        [] => Turn::tool(
            "Read",
            json!({ "file_path": file }),
            PROMPT_TOKENS,
            COMPLETION_TOKENS,
        ),
        [read] => {
            let Some(line) = weights_line(read) else {
                return Turn::text(&format!("Read showed no weights: {read}"), 1, 1);
            };
            let old = &line[..=line.find(']').unwrap_or(line.len() - 1)];
            Turn::tool(
                "Edit",
                json!({ "file_path": file, "old_string": old, "new_string": new_weights(n) }),
                PROMPT_TOKENS,
                COMPLETION_TOKENS,
            )
        }
        _ => done(),
    }
}

/// A shell command as a call of Codex's shell tool (`exec_command` in the
/// versions tested, `shell` before them).
fn codex_shell(tools: &[String], command: &str) -> Turn {
    let (name, arguments) = if tools.iter().any(|t| t == "exec_command") {
        ("exec_command", json!({ "cmd": command }))
    } else {
        ("shell", json!({ "command": ["bash", "-lc", command] }))
    };
    Turn::tool(name, arguments, PROMPT_TOKENS, COMPLETION_TOKENS)
}

/// Codex: `cat` the model's file, then `apply_patch` (which Codex applies
/// itself) on the weights line it showed, then a closing message.
fn codex_turns(request: &Received, n: usize) -> Turn {
    let body = request.json();
    let tools = tool_names(&body);
    let outputs: Vec<String> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| match &i["output"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    match outputs.as_slice() {
        [] => codex_shell(&tools, "cat fitpkg/model.py"),
        [shown] => match weights_line(shown) {
            Some(line) => codex_shell(
                &tools,
                &format!(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: fitpkg/model.py\n@@\n-{line}\n+{}\n*** End Patch\nEOF\n",
                    new_weights(n)
                ),
            ),
            None => Turn::text(&format!("cat showed no weights: {shown}"), 1, 1),
        },
        _ => Turn::text(
            "I changed the periodic weight.",
            PROMPT_TOKENS,
            COMPLETION_TOKENS,
        ),
    }
}

/// The card with a time limit that fails a stuck agent within the test's
/// patience (the scripted model answers at once).
fn short_timeout(card: String) -> String {
    assert!(card.contains("timeout_secs: 900"), "{card}");
    card.replace("timeout_secs: 900", "timeout_secs: 180")
}

/// The first model request's tool names, said in the test's output.
fn first_tools(upstream: &ScriptedUpstream) -> Vec<String> {
    let first = upstream
        .received()
        .into_iter()
        .find(|r| r.method == "POST" && !tool_names(&r.json()).is_empty())
        .expect("a request with tools");
    let names = tool_names(&first.json());
    eprintln!("tools offered: {names:?}");
    names
}

#[test]
fn claude_code_proposes_through_the_anthropic_messages_relay() {
    let Some(bin) = npm("@anthropic-ai/claude-code", "claude-code", "claude") else {
        return;
    };
    let upstream = ScriptedUpstream::with(Arc::new(claude_turns));
    let dir = tempfile::tempdir().unwrap();
    let card = card(dir.path(), "agent_claude_code", short_timeout);
    let children = run_and_check(&card, &bin, &upstream, Some("anthropic"), 2);
    let tools = first_tools(&upstream);
    for t in ["Read", "Edit", "Write", "Bash"] {
        assert!(tools.iter().any(|n| n == t), "{t} in {tools:?}");
    }
    for g in &children {
        let steps = g["agent"]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3, "Read, Edit, the end: {g:#}");
        for s in steps {
            assert_eq!(s["wire"], "anthropic_messages", "{g:#}");
        }
    }
    // It streamed, as Claude Code does.
    assert!(
        upstream
            .received()
            .iter()
            .filter(|r| r.path.contains("/messages"))
            .all(|r| r.json()["stream"] == true)
    );
}

#[test]
fn codex_proposes_through_the_responses_relay() {
    let Some(bin) = npm("@openai/codex", "codex", "codex") else {
        return;
    };
    let upstream = ScriptedUpstream::with(Arc::new(codex_turns));
    let dir = tempfile::tempdir().unwrap();
    let card = card(dir.path(), "agent_codex", short_timeout);
    let children = run_and_check(&card, &bin, &upstream, Some("openai-responses"), 2);
    let tools = first_tools(&upstream);
    assert!(
        tools.iter().any(|n| n == "exec_command" || n == "shell"),
        "{tools:?}"
    );
    for g in &children {
        let steps = g["agent"]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3, "cat, apply_patch, the end: {g:#}");
        for s in steps {
            assert_eq!(s["wire"], "responses", "{g:#}");
        }
        assert!(
            g["agent"]["stdout"]
                .as_str()
                .unwrap()
                .contains("apply_patch")
                || g["agent"]["stderr"]
                    .as_str()
                    .unwrap()
                    .contains("apply patch"),
            "Codex applied the patch itself: {g:#}"
        );
    }
    assert!(
        upstream
            .received()
            .iter()
            .filter(|r| r.path.contains("/responses"))
            .all(|r| r.json()["stream"] == true)
    );
}
