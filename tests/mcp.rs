#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! `galapagos mcp` driven by real MCP clients:
//!
//! - the official MCP Python SDK (`mcp` from PyPI, in a venv made under the
//!   temp dir, `${TMPDIR:-/tmp}/galapagos-mcp-venv`, reused when present;
//!   where `.ci/run` installs it): `tests/mcp_client.py` lists the tools,
//!   the cards and the tasks, validates a broken card, starts a run on a
//!   built-in task with the built-in offline model, steers it, follows it to
//!   its end, reads its best genome, writes it into a folder and reads the
//!   resources, with tool errors for bad calls and a refusal for a card
//!   that lowers isolation;
//! - Claude Code (`@anthropic-ai/claude-code` from npm, as the agent tests
//!   install it) configured with the server through `--mcp-config`,
//!   against a scripted Anthropic Messages upstream whose replies call
//!   `mcp__galapagos__start_run` and then `mcp__galapagos__run_status`
//!   until the run is done;
//! - a run on a server (a real sshd on loopback) watched, read, compared
//!   and taken home through its `ssh://` address by the Python client.
//!
//! Each runs with an empty HOME and its XDG folders in a temp dir. Under
//! CI=true a client that cannot be installed fails the test; elsewhere the
//! test says so loudly and passes without running.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use common::scripted_upstream::{Received, ScriptedUpstream, Turn};
use serde_json::{Value, json};

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// A HOME with nothing in it, its XDG folders inside.
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for d in [".local/share", ".config", ".cache"] {
            std::fs::create_dir_all(root.join("home").join(d)).unwrap();
        }
        Self { _dir: dir, root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let home = self.home();
        vec![
            ("HOME", home.clone()),
            ("XDG_DATA_HOME", home.join(".local/share")),
            ("XDG_CONFIG_HOME", home.join(".config")),
            ("XDG_CACHE_HOME", home.join(".cache")),
        ]
    }

    /// Where runs started with no `out` go: the studio's runs folder.
    fn runs(&self) -> PathBuf {
        self.home().join(".local/share/galapagos/runs")
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_remove("GALAPAGOS_SSH")
            .env_remove("GALAPAGOS_REMOTE")
            .current_dir(&self.root)
            .stdin(Stdio::null());
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd
    }
}

/// The venv's python with the MCP SDK, made when missing; `None` after
/// saying why (a failure under CI=true).
fn mcp_python() -> Option<PathBuf> {
    let venv = std::env::var_os("GALAPAGOS_MCP_VENV").map_or_else(
        || std::env::temp_dir().join("galapagos-mcp-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let has_sdk = |p: &Path| {
        Command::new(p)
            .args(["-c", "import mcp.client.stdio"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has_sdk(&python) {
        return Some(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .map_err(|e| e.to_string())
        .and_then(|o| {
            o.status
                .success()
                .then_some(())
                .ok_or_else(|| String::from_utf8_lossy(&o.stderr).into_owned())
        })
        .and_then(|()| {
            let o = Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "mcp"])
                .output()
                .map_err(|e| e.to_string())?;
            o.status
                .success()
                .then_some(())
                .ok_or_else(|| String::from_utf8_lossy(&o.stderr).into_owned())
        });
    match made {
        Ok(()) if has_sdk(&python) => Some(python),
        Ok(()) => unavailable("the MCP Python SDK", "installed, but `import mcp` fails"),
        Err(e) => unavailable("the MCP Python SDK (pip install mcp into a venv)", &e),
    }
}

fn unavailable<T>(what: &str, why: &str) -> Option<T> {
    assert!(!in_ci(), "{what}: {why}");
    eprintln!("\n!!! SKIPPED: {what} is not available here: {why}\n");
    None
}

/// A card with three errors (an unknown selection policy, a timeout that
/// is not a number, an unknown key), and what `galapagos validate` says of
/// it: every error, one per line.
fn broken_card(home: &Home) -> (PathBuf, Vec<String>) {
    let path = home.root.join("broken.yaml");
    std::fs::write(
        &path,
        "name: broken\npopulation:\n  kind: in_memory\nselection_policy:\n  kind: best_of_nn\n\
         prompt_builder:\n  kind: default\nproposer:\n  kind: diff\nevaluator:\n  kind: subprocess\n  \
         timeout_secs: soon\nmemory:\n  kind: none\ngeneral:\n  max_iterations: 10\n  colour: blue\n",
    )
    .unwrap();
    let o = home
        .command(env!("CARGO_BIN_EXE_galapagos"))
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let errors: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("error: ").map(str::to_owned))
        .collect();
    assert!(errors.len() >= 3, "{errors:?}");
    (path, errors)
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn an_agent_composes_starts_steers_watches_and_takes_home_a_run_over_mcp() {
    let Some(python) = mcp_python() else {
        return;
    };
    let home = Home::new();
    let (broken, cli_errors) = broken_card(&home);
    let apply_to = home.root.join("taken-home");
    let got = client(
        &home,
        &python,
        &[
            env!("CARGO_BIN_EXE_galapagos").as_ref(),
            broken.as_os_str(),
            apply_to.as_os_str(),
            "function_minimization".as_ref(),
        ],
        &[],
    );

    assert_eq!(got["server"], "galapagos");
    let tools: Vec<&str> = got["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in [
        "apply_genome",
        "compare_runs",
        "get_genome",
        "list_cards",
        "list_runs",
        "list_tasks",
        "run_status",
        "start_run",
        "steer_run",
        "validate_card",
    ] {
        assert!(tools.contains(&t), "{t} in {tools:?}");
    }
    let names = |key: &str| -> Vec<String> {
        got[key]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect()
    };
    assert!(names("cards").contains(&"best_of_n".to_owned()));
    assert_eq!(
        names("cards").len(),
        galapagos::engine::builtin::CARDS.len()
    );
    assert!(names("tasks").contains(&"function_minimization".to_owned()));

    // every error `galapagos validate` gives, each with its line:col
    let broken_said = got["broken"]["error"].as_str().unwrap();
    for e in &cli_errors {
        assert!(broken_said.contains(e.as_str()), "{e} in {broken_said}");
    }
    assert!(broken_said.contains(&format!("{} errors", cli_errors.len())));
    assert!(
        broken_said.contains(":5:"),
        "line:col of best_of_nn: {broken_said}"
    );
    assert_eq!(got["valid"]["ok"], true, "{}", got["valid"]);

    // bad calls are tool errors that say what to fix
    let unknown = got["unknown_card"]["error"].as_str().unwrap();
    assert!(
        unknown.contains("no_such_card") && unknown.contains("built-in cards:"),
        "{unknown}"
    );
    let small = got["too_small"]["error"].as_str().unwrap();
    assert!(
        small.contains("iterations = 2 is too small") && small.contains("is 6"),
        "{small}"
    );
    let bad = got["bad_argument"]["error"].as_str().unwrap();
    assert!(bad.contains("iterations"), "{bad}");
    let no_tool = got["unknown_tool"]["error"].as_str().unwrap();
    assert!(no_tool.contains("did you mean `start_run`"), "{no_tool}");

    // isolation is never lowered on the agent's say-so: no run, and why
    let lowered = got["lowered"]["error"].as_str().unwrap();
    assert!(
        lowered.contains("evaluator.sandbox=none")
            && lowered.contains("must start it themselves")
            && lowered.contains("no argument of this server grants consent"),
        "{lowered}"
    );

    // an ordinary run, in the studio's runs folder
    let run = PathBuf::from(got["start"]["run"].as_str().unwrap());
    assert!(run.starts_with(home.runs()), "{run:?}");
    assert!(run.join("archive.sqlite").is_file());

    // steered while it ran: notes and a pause, then resumed
    assert_eq!(
        got["steer"]["notes"], "Try larger steps.",
        "{}",
        got["steer"]
    );
    assert_eq!(got["steer"]["paused"], true);
    let paused = &got["paused_status"];
    assert_eq!(paused["state"], "paused", "{paused}");
    assert_eq!(paused["notes"], "Try larger steps.");
    assert_eq!(got["resume"]["paused"], false, "{}", got["resume"]);

    // followed to its end
    let last = &got["final_status"];
    assert_eq!(last["done"], true, "{last}");
    assert_eq!(last["state"], "completed", "{last}");
    assert_eq!(last["iteration"], 60, "{last}");
    assert_eq!(last["max_iterations"], 60);
    assert!(last["genomes"].as_u64().unwrap() >= 61, "{last}");
    assert!(last["best_score"].as_f64().is_some(), "{last}");
    assert!(last["tokens"]["prompt"].as_u64().is_some(), "{last}");

    // the best genome, with its program and scores, and its parent
    let best = &got["best"];
    assert_eq!(best["best"], true);
    assert_eq!(best["id"], last["best_id"], "{best}");
    assert!(best["program"].as_str().unwrap().contains("EVOLVE-BLOCK"));
    assert!(
        best["scores"]["combined_score"].as_f64().is_some(),
        "{best}"
    );
    assert_eq!(best["fitness"], last["best_score"]);
    assert!(got["genome_0"]["parent"].is_null());
    let none = got["no_genome"]["error"].as_str().unwrap();
    assert!(none.contains("100000"), "{none}");

    // the same figures side by side, and in the run's resource
    assert_eq!(got["compare"]["runs"][0]["best_score"], last["best_score"]);
    assert_eq!(got["run_resource"]["best_score"], last["best_score"]);

    // taken home: the best program written where the agent asked
    let written = std::fs::read_dir(&apply_to)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect::<Vec<_>>();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(
        std::fs::read_to_string(&written[0]).unwrap(),
        best["program"].as_str().unwrap()
    );
    assert_eq!(got["apply"]["genome"], best["id"]);

    // an ended run is not steered
    let late = got["steer_ended"]["error"].as_str().unwrap();
    assert!(late.contains("not running"), "{late}");

    // listed by the server and by `galapagos runs`, as any run
    let listed = got["runs"]["runs"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let runs = home
        .command(env!("CARGO_BIN_EXE_galapagos"))
        .arg("runs")
        .arg(home.runs())
        .output()
        .unwrap();
    let runs_said = String::from_utf8_lossy(&runs.stdout);
    assert!(runs_said.contains("completed"), "{runs_said}");
    assert!(
        got["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "galapagos://card/best_of_n")
    );
    assert_eq!(
        got["skill"].as_str().unwrap(),
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("SKILL.md")).unwrap()
    );

    let latencies: Vec<f64> = got["status_latencies_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    eprintln!(
        "MCP Python client session: {:.2} s in all; run_status: {} calls, median {:.1} ms, max {:.1} ms",
        got["session_secs"].as_f64().unwrap(),
        latencies.len(),
        median(&latencies),
        latencies.iter().copied().fold(0.0, f64::max)
    );
}

/// Runs the client script (`args` after it); its JSON answer.
fn client(home: &Home, python: &Path, args: &[&std::ffi::OsStr], env: &[(&str, PathBuf)]) -> Value {
    let script = home.root.join("client.py");
    std::fs::write(&script, include_str!("mcp_client.py")).unwrap();
    let mut cmd = home.command(python);
    cmd.arg(&script).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// A run on a server (a real sshd on loopback, as tests/remote_runs.rs
/// starts it) is watched, read, compared and taken home through its
/// `ssh://` address, as the command line reaches it.
#[test]
fn a_run_on_a_server_is_watched_and_taken_home_through_ssh() {
    let Some(python) = mcp_python() else {
        return;
    };
    let Some(sshd) = common::sshd::Sshd::start() else {
        return;
    };
    let home = Home::new();
    let runs = home.root.join("server-runs");
    let o = home
        .command(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "topk",
            "--task",
            "function_minimization",
            "--iterations",
            "5",
            "--quiet",
            "--out",
        ])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let target = sshd.target(&run);
    let apply_to = home.root.join("from-the-server");
    let got = client(
        &home,
        &python,
        &[
            "remote".as_ref(),
            env!("CARGO_BIN_EXE_galapagos").as_ref(),
            target.as_ref(),
            apply_to.as_os_str(),
        ],
        &[
            ("GALAPAGOS_SSH_CONFIG", sshd.client_config()),
            (
                "GALAPAGOS_REMOTE",
                PathBuf::from(env!("CARGO_BIN_EXE_galapagos")),
            ),
        ],
    );
    let status = &got["status"];
    assert_eq!(status["state"], "completed", "{status}\n{}", sshd.log());
    assert_eq!(status["done"], true);
    assert_eq!(status["iteration"], 5);
    assert_eq!(status["run"], run.display().to_string());
    let best = &got["best"];
    assert_eq!(best["id"], status["best_id"], "{best}");
    assert_eq!(
        got["compare"]["runs"][0]["best_score"],
        status["best_score"]
    );
    assert_eq!(got["apply"]["genome"], best["id"], "{}", got["apply"]);
    let written = got["apply"]["written"].as_array().unwrap();
    assert_eq!(written.len(), 1, "{}", got["apply"]);
    let file = apply_to.join(written[0].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        best["program"].as_str().unwrap(),
        "{file:?}"
    );
    let late = got["steer"]["error"].as_str().unwrap();
    assert!(late.contains("not running"), "{late}");
    let bad = got["bad_target"]["error"].as_str().unwrap();
    assert!(
        bad.contains("ssh://nohost") && bad.contains("expected ssh://"),
        "{bad}"
    );
}

/// The tool results of an Anthropic conversation, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
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

/// The names of the tools a request offers.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// The most run_status calls the script makes before it gives up (with
/// [`POLL`] between them: two minutes).
const MAX_STATUS_CALLS: usize = 600;
/// How long the scripted model thinks before it asks the status again (an
/// agent polls; a scripted model would otherwise ask in a tight loop).
const POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The scripted model: start a run, then ask its status until it is done,
/// then say so. A request without the server's tools (a side request)
/// gets text.
fn agent_turn(request: &Received, _n: usize) -> Turn {
    let body = request.json();
    if !tool_names(&body)
        .iter()
        .any(|t| t == "mcp__galapagos__start_run")
    {
        return Turn::text("galapagos", 10, 2);
    }
    let results = tool_results(&body);
    let Some(first) = results.first() else {
        return Turn::tool(
            "mcp__galapagos__start_run",
            json!({"card": "topk", "task": "function_minimization", "iterations": 12}),
            100,
            20,
        );
    };
    let Ok(started) = serde_json::from_str::<Value>(first) else {
        return Turn::text(&format!("start_run said: {first}"), 100, 20);
    };
    let run = started["run"].as_str().unwrap_or_default().to_owned();
    let done = results
        .last()
        .and_then(|r| serde_json::from_str::<Value>(r).ok())
        .is_some_and(|s| s["done"] == true);
    if done || results.len() > MAX_STATUS_CALLS {
        return Turn::text(&format!("The run in {run} is done."), 100, 20);
    }
    std::thread::sleep(POLL);
    Turn::tool("mcp__galapagos__run_status", json!({"run": run}), 100, 20)
}

#[test]
fn claude_code_starts_and_watches_a_run_through_galapagos_mcp() {
    let Some(bin) = common::agents::npm("@anthropic-ai/claude-code", "claude-code", "claude")
    else {
        return;
    };
    let home = Home::new();
    let upstream = ScriptedUpstream::with(Arc::new(agent_turn));
    let server_env: serde_json::Map<String, Value> = home
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v.display().to_string())))
        .collect();
    let config = json!({"mcpServers": {"galapagos": {
        "type": "stdio",
        "command": env!("CARGO_BIN_EXE_galapagos"),
        "args": ["mcp"],
        "env": server_env,
    }}});
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let began = std::time::Instant::now();
    let o = home
        .command(bin.join("claude"))
        .env("PATH", path)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", upstream.addr))
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-test-key")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args([
            "-p",
            "Start a galapagos run of topk on function_minimization and watch it to its end.",
        ])
        .args(["--model", "scripted-coder", "--output-format", "text"])
        .arg("--strict-mcp-config")
        .arg("--mcp-config")
        .arg(config.to_string())
        .args([
            "--allowedTools",
            "mcp__galapagos__start_run,mcp__galapagos__run_status",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("is done"),
        "Claude Code said: {stdout}\n{stderr}"
    );

    // the run Claude Code started is an ordinary run folder, finished
    let runs: Vec<PathBuf> = std::fs::read_dir(home.runs())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["iterations"], 12, "{summary:#}");
    assert_eq!(summary["status"], "completed", "{summary:#}");
    // what Claude Code sent the model: the server's tools, named as it names
    // MCP tools, and the tools' answers: the run's folder, then its status
    // until it was done
    let conversation = upstream
        .received()
        .into_iter()
        .map(|r| r.json())
        .filter(|b| {
            tool_names(b)
                .iter()
                .any(|t| t == "mcp__galapagos__start_run")
        })
        .max_by_key(|b| tool_results(b).len())
        .expect("a request with the server's tools");
    let offered = tool_names(&conversation);
    for t in ["start_run", "run_status", "get_genome", "steer_run"] {
        assert!(
            offered.contains(&format!("mcp__galapagos__{t}")),
            "{t} in {offered:?}"
        );
    }
    let results = tool_results(&conversation);
    let started: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(started["run"], runs[0].display().to_string());
    let last: Value = serde_json::from_str(results.last().unwrap()).unwrap();
    assert_eq!(last["done"], true, "{last}");
    assert_eq!(last["iteration"], 12, "{last}");
    let status_calls = results.len() - 1;
    assert!(status_calls >= 1);
    eprintln!(
        "Claude Code: start_run, then {status_calls} run_status call(s), {} model requests, {:.1} s in all",
        upstream.model_requests(),
        began.elapsed().as_secs_f64()
    );
}
