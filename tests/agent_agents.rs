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
//! passes without running.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use common::scripted_upstream::{Received, ScriptedUpstream, Turn};
use serde_json::{Value, json};

const SECRET: &str = "sk-real-agents-DO-NOT-LEAK-77f0e2d41b";
const PROMPT_TOKENS: u64 = 100;
const COMPLETION_TOKENS: u64 = 20;

/// The venv of `package` with its command `exe`, installed when missing.
fn agent(package: &str, exe: &str) -> Option<PathBuf> {
    let root = std::env::var_os("GALAPAGOS_AGENTS_DIR").map_or_else(
        || Path::new(env!("CARGO_TARGET_TMPDIR")).join("agents"),
        PathBuf::from,
    );
    let venv = root.join(package);
    let bin = venv.join("bin");
    if bin.join(exe).is_file() {
        return Some(bin);
    }
    let run = |cmd: &mut Command| -> Result<(), String> {
        let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&o.stderr)))
        }
    };
    let installed = run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
        .and_then(|()| run(Command::new(bin.join("pip")).args(["install", "--quiet", package])));
    match installed {
        Ok(()) => Some(bin),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("cannot install {package} from PyPI: {e}")
        }
        Err(e) => {
            eprintln!("skipped: cannot install {package} from PyPI: {e}");
            None
        }
    }
}

/// The whole WEIGHTS line of the program the conversation shows (its last
/// mention: the file as aider added it to the chat).
fn weights(request: &Received) -> Option<String> {
    let body = request.body.replace("\\n", "\n");
    let at = body.rfind("\nWEIGHTS = [")? + 1;
    let line = &body[at..];
    Some(line[..line.find('\n')?].to_owned())
}

/// A new second weight, different for each model request.
fn new_weights(n: usize) -> String {
    format!("WEIGHTS = [0.40, {:.2}]", 0.75 + 0.05 * n as f64)
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

/// The built-in card `name`, its agent's model provider changed by
/// `edit`, written into `dir`.
fn card(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("cards/{name}.yaml")),
    )
    .unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, edit(yaml)).unwrap();
    path
}

/// Whether any file under `dir` holds `needle`.
fn contains(dir: &Path, needle: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            let p = e.path();
            if p.is_dir() {
                contains(&p, needle)
            } else {
                std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            }
        })
}

/// Run `card` for `iterations` with the agent's venv on PATH against
/// `upstream`, and check what the issue asks: the children are scored,
/// their tokens are the scripted usage of their requests, and the key is
/// nowhere.
fn run_and_check(
    card: &Path,
    bin: &Path,
    upstream: &ScriptedUpstream,
    provider: Option<&str>,
    iterations: u64,
) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = dir.path().join("runs");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", &home)
        .env("PATH", path)
        .env("GALAPAGOS_AGENT_KEY", SECRET)
        .stdin(Stdio::null())
        .arg("run")
        .arg(card)
        .args(["--task", "fit_package", "--quiet", "--iterations"])
        .arg(iterations.to_string())
        .arg("--out")
        .arg(&out);
    if let Some(p) = provider {
        cmd.args(["--provider", p]);
    }
    let o = cmd
        .args(["--api-base", &upstream.base_url()])
        .args(["--model", "scripted-coder"])
        .args(["--api-key-env", "GALAPAGOS_AGENT_KEY"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let genomes: Vec<Value> = std::fs::read_to_string(run_dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let children: Vec<Value> = genomes
        .iter()
        .filter(|g| g["iteration"] != 0)
        .cloned()
        .collect();
    assert_eq!(children.len() as u64, iterations, "{genomes:#?}");
    let mut steps = 0;
    for g in &children {
        let agent = &g["agent"];
        assert_eq!(agent["exit"]["kind"], "finished", "{g:#}");
        assert_eq!(g["valid"], true, "scored: {g:#}");
        assert!(g["scores"]["combined_score"].is_number(), "{g:#}");
        assert!(
            g["diff"].as_str().unwrap().contains("+WEIGHTS = [0.40, 0."),
            "the scripted edit: {g:#}"
        );
        let n = agent["steps"].as_array().unwrap().len() as u64;
        assert!(n >= 1, "{g:#}");
        steps += n;
        assert_eq!(g["usage"]["prompt_tokens"], n * PROMPT_TOKENS, "{g:#}");
        assert_eq!(
            g["usage"]["completion_tokens"],
            n * COMPLETION_TOKENS,
            "{g:#}"
        );
        let said = format!("{}{}", agent["stdout"], agent["stderr"]);
        assert!(!said.contains("[redacted"), "the agent saw the key: {said}");
    }
    assert_eq!(steps, upstream.model_requests(), "every request is a step");
    // The relay added the real key; the agent sent only its token.
    for r in upstream.received() {
        let auth = r
            .header("authorization")
            .or_else(|| r.header("x-api-key"))
            .unwrap_or("");
        assert!(auth.contains(SECRET), "{r:?}");
    }
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(!contains(&run_dir, SECRET), "the key is in the run folder");
    assert_eq!(
        std::fs::read_dir(run_dir.join("agent-workspaces"))
            .unwrap()
            .count(),
        0,
        "no workspace is left"
    );
    children
}

#[test]
fn mini_swe_agent_proposes_through_the_chat_completions_relay() {
    let Some(bin) = agent("mini-swe-agent", "mini") else {
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
    let Some(bin) = agent("mini-swe-agent", "mini") else {
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
    let Some(bin) = agent("aider-chat", "aider") else {
        return;
    };
    let upstream = ScriptedUpstream::with(Arc::new(aider_turns));
    let dir = tempfile::tempdir().unwrap();
    let card = card(dir.path(), "agent_aider", |y| y);
    run_and_check(&card, &bin, &upstream, None, 2);
}
