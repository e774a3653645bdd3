#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Real coding agents that no one here wrote, from PyPI, as the proposer of
//! a run on the built-in repository task `fit_package`, through the shipped
//! cards, against a scripted model endpoint on loopback that answers in each
//! protocol's real shape: mini-swe-agent over OpenAI Chat Completions (tool
//! calls) and over the Anthropic Messages API (LiteLLM's `anthropic/`
//! provider), and aider over Chat Completions (SEARCH/REPLACE blocks).
//!
//! The agents are installed into venvs under the target dir (or taken from
//! `GALAPAGOS_AGENTS_DIR`, where `.ci/run` installs them). Under CI=true a
//! test fails when they cannot be installed; elsewhere it says so and
//! passes without running. What each run must show is in
//! [`common::agents::run_and_check`]; Claude Code and Codex CLI, from npm,
//! are in `tests/agent_npm.rs`.

mod common;

use std::sync::Arc;

use common::agents::{COMPLETION_TOKENS, PROMPT_TOKENS, card, new_weights, pypi, run_and_check};
use common::scripted_upstream::{Received, ScriptedUpstream, Turn};
use serde_json::json;

/// The whole WEIGHTS line of the program the conversation shows (its last
/// mention: the file as aider added it to the chat).
fn weights(request: &Received) -> Option<String> {
    let body = request.body.replace("\\n", "\n");
    let at = body.rfind("\nWEIGHTS = [")? + 1;
    let line = &body[at..];
    Some(line[..line.find('\n')?].to_owned())
}

/// mini-swe-agent: its first request gets a bash tool call that edits the
/// weights, its second the command that ends its task.
fn mini_turns(request: &Received, n: usize) -> Turn {
    let body = request.json();
    let answered = body.to_string().contains("returncode");
    let command = if answered {
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT".to_owned()
    } else {
        format!(
            "sed -i -E 's/WEIGHTS = \\[[^]]*\\]/{}/' fitpkg/model.py && git diff --stat",
            new_weights(n)
        )
    };
    Turn::tool(
        "bash",
        json!({ "command": command }),
        PROMPT_TOKENS,
        COMPLETION_TOKENS,
    )
}

/// aider: a SEARCH/REPLACE block on the weights line the prompt shows.
fn aider_turns(request: &Received, n: usize) -> Turn {
    let text = match weights(request) {
        Some(line) => format!(
            "I will change the periodic weight.\n\nfitpkg/model.py\n```python\n<<<<<<< SEARCH\n{line}\n=======\n{}{}\n>>>>>>> REPLACE\n```\n",
            new_weights(n),
            line.find(']').map_or("", |i| &line[i + 1..])
        ),
        None => "Nothing to change.".to_owned(),
    };
    Turn::text(&text, PROMPT_TOKENS, COMPLETION_TOKENS)
}

#[test]
fn mini_swe_agent_proposes_through_the_chat_completions_relay() {
    let Some(bin) = pypi("mini-swe-agent", "mini") else {
        return;
    };
    let upstream = ScriptedUpstream::with(Arc::new(mini_turns));
    let dir = tempfile::tempdir().unwrap();
    let card = card(dir.path(), "agent_mini_swe", |y| y);
    let children = run_and_check(&card, &bin, &upstream, None, 2);
    for g in &children {
        let wire = &g["agent"]["steps"][0]["wire"];
        assert_eq!(wire, "chat_completions", "{g:#}");
    }
}

#[test]
fn mini_swe_agent_proposes_through_the_anthropic_messages_relay() {
    let Some(bin) = pypi("mini-swe-agent", "mini") else {
        return;
    };
    let upstream = ScriptedUpstream::with(Arc::new(mini_turns));
    let dir = tempfile::tempdir().unwrap();
    let card = card(dir.path(), "agent_mini_swe", |y| {
        y.replace("openai/{model}", "anthropic/{model}")
    });
    let children = run_and_check(&card, &bin, &upstream, Some("anthropic"), 2);
    for g in &children {
        let wire = &g["agent"]["steps"][0]["wire"];
        assert_eq!(wire, "anthropic_messages", "{g:#}");
    }
}

#[test]
fn aider_proposes_through_the_chat_completions_relay() {
    let Some(bin) = pypi("aider-chat", "aider") else {
        return;
    };
    let upstream = ScriptedUpstream::with(Arc::new(aider_turns));
    let dir = tempfile::tempdir().unwrap();
    let card = card(dir.path(), "agent_aider", |y| y);
    run_and_check(&card, &bin, &upstream, None, 2);
}
