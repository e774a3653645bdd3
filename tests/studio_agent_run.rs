#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The inspector's Agent tab on a real run: mini-swe-agent (from PyPI,
//! through the shipped card `agent_mini_swe`) proposes three times on the
//! built-in repository task `fit_package` against a scripted Chat
//! Completions endpoint on loopback that walks it through a session as a
//! model would (read the leaderboard, read the code, edit and diff, leave a
//! note, submit), priced by the settings file; the run's folder is read back
//! as the studio reads a recorded run, and the Agent tab of a genome shows
//! its steps, their commands and replies, tokens and cost, the agent's
//! output and its diff.
//!
//! With `GALAPAGOS_KEEP_AGENT_RUN=DIR` the run folder is also copied to DIR
//! (the screenshots of the tab in docs/coding-agents.md are taken of it in the studio).
//!
//! The agent is installed into a venv under the target dir (or taken from
//! `GALAPAGOS_AGENTS_DIR`, where `.ci/run` installs it). Under CI=true the
//! test fails when it cannot be installed; elsewhere it says so and passes
//! without running.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::studio::run::{InspectorTab, RunView, read_archive};
use serde_json::{Value, json};

mod common;

use common::scripted_upstream::{Received, ScriptedUpstream, Turn, Usage};

const SECRET: &str = "sk-agent-tab-DO-NOT-LEAK-0be5a1";
const MODEL: &str = "scripted-coder";

/// The edit of the `p`th proposal: a model homing in on the signal
/// (its weight, then its frequency too), each one better than the last.
fn edit(p: usize) -> String {
    let (frequency, weight) = [("1.3", "1.20"), ("1.5", "1.60"), ("1.6", "1.80")][p.min(2)];
    format!(
        "sed -i -E 's/FREQUENCY = [0-9.]+/FREQUENCY = {frequency}/' fitpkg/features.py && \
         sed -i -E 's/WEIGHTS = \\[[^]]*\\]/WEIGHTS = [0.40, {weight}]/' fitpkg/model.py && git diff"
    )
}

/// The scripted model's turn, by how many turns the conversation already
/// holds; `proposals` counts the sessions begun.
fn session(request: &Received, proposals: &AtomicUsize) -> Turn {
    let said = request.json()["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
    let p = if said == 0 {
        proposals.fetch_add(1, Ordering::SeqCst)
    } else {
        proposals.load(Ordering::SeqCst) - 1
    };
    let (thought, command) = match said {
        0 => (
            "THOUGHT: First the leaderboard, to choose the program to build on.",
            "cat .galapagos/leaderboard.md".to_owned(),
        ),
        1 => (
            "THOUGHT: The model is a weighted sum of features; read both files.",
            "cat fitpkg/model.py && sed -n 1,25p fitpkg/features.py".to_owned(),
        ),
        2 => (
            "THOUGHT: The periodic feature is under-weighted and its frequency too low. Change both and check the diff.",
            edit(p),
        ),
        3 => (
            "THOUGHT: Leave a note for the runs after this one.",
            "echo 'A larger periodic weight with a higher frequency scored better.' > .galapagos/out/notes.md"
                .to_owned(),
        ),
        _ => (
            "THOUGHT: Done: the edit is in place.",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT".to_owned(),
        ),
    };
    Turn::Reply {
        text: thought.to_owned(),
        tool_calls: vec![common::scripted_upstream::ToolCall {
            name: "bash".into(),
            arguments: json!({ "command": command }),
        }],
        usage: Usage {
            prompt: 1_800 + 450 * said as u64,
            completion: 90 + 13 * said as u64,
            cached: if said == 0 { 0 } else { 1_536 },
        },
    }
}

/// Copy the folder `from` to `to` (files and dirs only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else if src.is_file() {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Runs the agent for `iterations` and returns the run's folder (in `dir`).
fn real_run(dir: &Path, bin: &Path, upstream: &ScriptedUpstream, iterations: u32) -> PathBuf {
    let home = dir.join("home");
    let config = home.join(".config/galapagos");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        json!({"prices": {MODEL: {"prompt_per_million": 2.5, "cached_per_million": 0.625,
            "completion_per_million": 10.0}}})
        .to_string(),
    )
    .unwrap();
    let out = dir.join("runs");
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
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
        .args(["run", "agent_mini_swe", "--task", "fit_package", "--quiet"])
        .arg("--iterations")
        .arg(iterations.to_string())
        .arg("--out")
        .arg(&out)
        .args(["--api-base", &upstream.base_url(), "--model", MODEL])
        .args(["--api-key-env", "GALAPAGOS_AGENT_KEY"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

#[test]
fn the_agent_tab_shows_a_real_agents_run() {
    let Some(bin) = common::agents::pypi("mini-swe-agent", "mini") else {
        return;
    };
    let proposals = AtomicUsize::new(0);
    let upstream = ScriptedUpstream::with(Arc::new(move |r: &Received, _| session(r, &proposals)));
    let dir = tempfile::tempdir().unwrap();
    let run_dir = real_run(dir.path(), &bin, &upstream, 3);
    if let Some(keep) = std::env::var_os("GALAPAGOS_KEEP_AGENT_RUN") {
        let keep = Path::new(&keep).join(run_dir.file_name().unwrap());
        copy_dir(&run_dir, &keep);
        eprintln!("kept the run in {}", keep.display());
    }

    // The run folder as the studio reads a recorded run.
    let run = read_archive(&run_dir).unwrap();
    let genomes: Vec<Value> = std::fs::read_to_string(run_dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = genomes.iter().find(|g| g["iteration"] == 1).unwrap();
    assert_eq!(first["valid"], true, "{first:#}");
    // Each proposal's edit scores better than the one before.
    let scores: Vec<f64> = genomes
        .iter()
        .map(|g| g["scores"]["combined_score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[1] > w[0]), "{scores:?}");
    let steps = first["agent"]["steps"].as_array().unwrap().len();
    assert_eq!(steps, 5, "the scripted session: {first:#}");
    let mut view = RunView::default();
    view.load_history(run.history);
    view.select(Some(first["id"].as_u64().unwrap()));
    view.set_inspector_tab(InspectorTab::Agent);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            view,
        );
    h.run_steps(3);
    h.get_by_label(&format!("Transcript ({steps} steps)"));
    h.get_by_label_contains("finished");
    // Step 0 in full: the prompt the agent sent, the command the model ran,
    // its tokens and cost (1,800 prompt + 90 completion at the settings'
    // prices).
    h.get_by_label_contains("→ bash(");
    // (In its row's gist and in the step's tool call.)
    assert!(
        h.query_all_by_label_contains("cat .galapagos/leaderboard.md")
            .count()
            >= 2
    );
    h.get_by_label_contains("1.8k prompt + 90 completion tokens · $0.0054");
    // A later step: the tool result the agent sent back, and the edit.
    h.get_by_label_contains("#2    ").click();
    h.run_steps(3);
    h.get_by_label_contains("The periodic feature is under-weighted");
    h.get_by_label_contains("(1.5k cached)");
    // Its output and the diff it produced.
    h.get_by_label("stdout and stderr").click();
    h.run_steps(3);
    h.get_by_label("Diff it produced").click();
    h.run_steps(3);
    assert!(
        h.query_all_by_label_contains("WEIGHTS = [0.40, 1.20]")
            .count()
            >= 1
    );
}
