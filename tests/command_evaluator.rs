#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The command evaluator: any executable scores a candidate, ShinkaEvolve's
//! `evaluate.py` unchanged among them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use galapagos::engine::archive::read_genomes;
use galapagos::engine::component::{BuildContext, Component};
use galapagos::engine::evaluator::{
    Allowance, Candidate, CommandEvaluator, CommandParams, Evaluator,
};
use galapagos::engine::model::default_model;
use galapagos::engine::task::{Task, TaskKind};

fn folder(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap();
        if file.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir.to_path_buf()
}

fn evaluator(task: &Task, params: CommandParams) -> CommandEvaluator {
    let ctx = BuildContext {
        task,
        model: default_model(),
        parallel: 2,
        run_dir: None,
        key_vars: &[],
        meter: Default::default(),
    };
    CommandEvaluator::build(params, &ctx).unwrap()
}

fn cand(id: u64, content: &str) -> Candidate {
    Candidate {
        id,
        content: content.to_owned().into(),
    }
}

/// A ShinkaEvolve-format evaluator: the program's `X` is scored; a negative
/// `X` is "not correct" in correct.json.
const SHINKA_EVALUATE: &str = r#"import argparse, importlib.util, json, os

p = argparse.ArgumentParser()
p.add_argument("--program_path")
p.add_argument("--results_dir")
a = p.parse_args()
spec = importlib.util.spec_from_file_location("c", a.program_path)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print("evaluating", m.X)
os.makedirs(a.results_dir, exist_ok=True)
metrics = {"combined_score": -abs(m.X - 3.0),
           "public": {"distance": abs(m.X - 3.0), "verdict": "close" if abs(m.X - 3) < 1 else "far"},
           "private": {"secret_target": 3.0, "tag": "hidden-7731"},
           "text_feedback": "X should move towards the target"}
json.dump(metrics, open(os.path.join(a.results_dir, "metrics.json"), "w"))
json.dump({"correct": m.X >= 0, "error": None if m.X >= 0 else "X must not be negative"},
          open(os.path.join(a.results_dir, "correct.json"), "w"))
"#;

const MARKED: &str = "# EVOLVE-BLOCK-START\nX = 1.0\n# EVOLVE-BLOCK-END\n";

#[tokio::test]
async fn a_shinka_evaluate_py_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    folder(
        dir.path(),
        &[("initial.py", MARKED), ("evaluate.py", SHINKA_EVALUATE)],
    );
    let task = Task::load(dir.path()).unwrap();
    assert_eq!(task.kind, TaskKind::ShinkaEvolve);
    let ev = evaluator(&task, CommandParams::default());
    let good = ev.evaluate(&cand(1, "X = 2.5\n")).await;
    assert!(good.valid, "{good:?}");
    assert_eq!(good.scores["combined_score"], -0.5);
    assert_eq!(good.scores["distance"], 0.5, "public metrics are scores");
    assert_eq!(good.artifacts["verdict"], "close");
    assert_eq!(
        good.artifacts["text_feedback"],
        "X should move towards the target"
    );
    assert_eq!(good.private["secret_target"], "3.0");
    assert_eq!(good.private["tag"], "hidden-7731");
    assert!(!good.scores.contains_key("secret_target"));
    assert!(!good.artifacts.values().any(|a| a.contains("hidden-7731")));
    assert!(good.artifacts["stdout"].contains("evaluating 2.5"));

    // correct.json decides validity.
    let bad = ev.evaluate(&cand(2, "X = -1.0\n")).await;
    assert!(!bad.valid);
    assert_eq!(
        bad.error.as_deref(),
        Some("not correct (correct.json): X must not be negative")
    );
    assert_eq!(
        bad.scores["distance"], 4.0,
        "its metrics are still recorded"
    );

    // A candidate that crashes evaluate.py: no correct.json, which
    // ShinkaEvolve counts as incorrect.
    let crash = ev.evaluate(&cand(3, "raise SystemExit(3)\n")).await;
    assert!(!crash.valid);
    assert!(
        crash
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("no correct.json"),
        "{crash:?}"
    );
}

/// A shell script evaluator: metrics as a JSON line on stdout, failure by
/// exit status, and no metrics at all, each said.
#[tokio::test]
async fn an_evaluator_in_any_language_reports_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    folder(
        dir.path(),
        &[
            (
                "initial_program.txt",
                "EVOLVE-BLOCK-START\n3\nEVOLVE-BLOCK-END\n",
            ),
            (
                "evaluate.sh",
                "#!/bin/sh\n# $1: the program, $2: the results dir\nvalue=$(sed -n 2p \"$1\")\necho \"scoring $value\"\nif [ \"$value\" = fail ]; then echo broken >&2; exit 4; fi\nif [ \"$value\" = quiet ]; then exit 0; fi\necho \"{\\\"combined_score\\\": $value, \\\"valid\\\": true}\"\n",
            ),
        ],
    );
    let task = Task::load(dir.path()).unwrap();
    assert_eq!(task.kind, TaskKind::ProgramOnly);
    let ev = evaluator(
        &task,
        CommandParams {
            argv: vec!["./evaluate.sh".to_owned()],
            ..CommandParams::default()
        },
    );
    let ok = ev
        .evaluate(&cand(1, "EVOLVE-BLOCK-START\n7\nEVOLVE-BLOCK-END\n"))
        .await;
    assert!(ok.valid, "{ok:?}");
    assert_eq!(ok.scores["combined_score"], 7.0);
    assert!(ok.artifacts["stdout"].starts_with("scoring 7"));
    let failed = ev
        .evaluate(&cand(2, "EVOLVE-BLOCK-START\nfail\nEVOLVE-BLOCK-END\n"))
        .await;
    assert!(!failed.valid);
    assert_eq!(
        failed.error.as_deref(),
        Some("the evaluator command exited with status 4")
    );
    assert!(failed.artifacts["stderr"].contains("broken"));
    let quiet = ev
        .evaluate(&cand(3, "EVOLVE-BLOCK-START\nquiet\nEVOLVE-BLOCK-END\n"))
        .await;
    assert!(!quiet.valid);
    assert!(
        quiet
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("reported no metrics"),
        "{quiet:?}"
    );
    // A command that does not exist is the evaluator's failure, named.
    let missing = evaluator(
        &task,
        CommandParams {
            argv: vec!["./no_such_evaluator".to_owned()],
            ..CommandParams::default()
        },
    );
    let e = missing.evaluate(&cand(4, "x")).await;
    assert!(e.evaluator_failed);
    assert!(e.error.unwrap_or_default().contains("no_such_evaluator"));
}

/// A command that runs over its limit is killed with everything it started,
/// at the limit.
#[tokio::test]
async fn a_command_over_its_limit_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cmd-marker-{}", std::process::id());
    folder(
        dir.path(),
        &[
            ("initial_program.txt", "x\n"),
            (
                "slow.sh",
                &format!("#!/bin/sh\nsh -c 'sleep 600; echo {marker}' &\nsleep 600\n"),
            ),
        ],
    );
    let task = Task::load(dir.path()).unwrap();
    let ev = evaluator(
        &task,
        CommandParams {
            argv: vec!["./slow.sh".to_owned()],
            timeout_secs: 1.0,
            ..CommandParams::default()
        },
    );
    let started = Instant::now();
    let e = ev.evaluate(&cand(1, "x\n")).await;
    let took = started.elapsed().as_secs_f64();
    assert!(!e.valid);
    assert!(e.error.unwrap_or_default().starts_with("timeout"));
    assert!(took < 3.0, "killed at the limit: {took:.2} s");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    assert!(!ps.contains(&marker), "left behind:\n{ps}");
}

/// A ShinkaEvolve-layout task written in its format runs through `galapagos
/// run` with a stock card: the layout is said, public metrics and the text
/// feedback reach the model, the private metrics are recorded but never in
/// a prompt, correct.json decides validity.
#[test]
fn a_shinka_layout_task_runs_through_galapagos_run() {
    // best_of_n; and shinka, whose scratchpad memory writes notes that later
    // prompts show (it must not learn the private metrics either).
    for (card, iterations) in [("cards/best_of_n.yaml", "6"), ("cards/shinka.yaml", "12")] {
        shinka_layout_run(card, iterations);
    }
}

fn shinka_layout_run(card: &str, iterations: &str) {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            card,
            "--task",
            "assets/tasks/exp_poly_shinka",
            "--iterations",
            iterations,
            "--out",
        ])
        .arg(out.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("ShinkaEvolve layout"), "{err}");
    assert!(
        err.contains("runs this task's evaluate.py as ShinkaEvolve does"),
        "{err}"
    );
    // The author's message is run_evo.py's task_sys_msg, as ShinkaEvolve's
    // runner passes it; the README (for people) is not shown.
    assert!(
        err.contains(
            "system prompt: run_evo.py's task_sys_msg (the task author's); README.md not shown"
        ),
        "{err}"
    );
    let run = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let genomes = read_genomes(&run.path().join("genomes.jsonl")).unwrap();
    assert!(genomes.len() >= 7);
    for g in genomes.iter().filter(|g| g.valid) {
        assert!(g.scores.contains_key("rmse") && g.scores.contains_key("max_abs_error"));
        assert!(g.private.contains_key("held_out_max_error"), "{g:?}");
        assert!(!g.scores.contains_key("held_out_max_error"));
        assert!(g.artifacts["text_feedback"].starts_with("The largest error is"));
    }
    assert!(genomes[0].valid, "{:?}", genomes[0].error);
    for g in genomes[1..].iter().filter(|g| g.prompt.is_some()) {
        let prompt = g.prompt.as_ref().unwrap();
        assert!(
            prompt
                .system
                .starts_with("You are tuning a cubic polynomial"),
            "{}",
            prompt.system
        );
        assert!(!prompt.user.contains("laid out as ShinkaEvolve"));
        let text = format!("{}\n{}", prompt.system, prompt.user);
        assert!(
            text.contains("## text_feedback"),
            "feedback reaches the model"
        );
        assert!(text.contains("rmse"), "public metrics reach the model");
        assert!(
            !text.contains("held_out_max_error") && !text.contains("eval_ms"),
            "private metrics never reach the model"
        );
        for value in genomes
            .iter()
            .filter_map(|p| p.private.get("held_out_max_error"))
        {
            assert!(
                !text.contains(value.as_str()),
                "a private value in a prompt"
            );
        }
    }
    let best = genomes
        .iter()
        .filter_map(|g| g.fitness())
        .fold(f64::MIN, f64::max);
    assert!(best >= genomes[0].fitness().unwrap());
}

/// A ShinkaEvolve task runs the card's `subprocess` evaluator as its
/// `evaluate.py` command: the sandbox, network, read paths, limits, output
/// limit and confirmation the card sets go with it; what the command
/// evaluator has no setting for is named, not dropped without a word.
#[test]
fn a_shinka_layout_task_keeps_the_cards_sandbox_and_limits() {
    use galapagos::engine::card::ValidCard;
    use galapagos::engine::params::ParamValue;
    use galapagos::engine::registry::Registry;

    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap();
    let set = "  timeout_secs: 60.0\n  sandbox: none\n  network: true\n  read_paths: [/opt/data]\n  \
               memory_limit_mib: 512\n  cpu_limit_secs: 30.0\n  process_limit: 8\n  file_size_limit_mib: 2\n  \
               output_limit_kb: 7\n  confirm: 2\n  confirm_aggregate: min\n  confirm_tolerance: 0.5\n  \
               import_timeout_secs: 9.0\n";
    let text = base.replace("  timeout_secs: 60.0\n", set);
    assert_ne!(text, base, "the card's evaluator block changed");
    let registry = Registry::builtin();
    let card = ValidCard::from_yaml(&text, "card.yaml", &registry).unwrap();
    let task =
        Task::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/exp_poly_shinka"))
            .unwrap();
    assert_eq!(task.kind, TaskKind::ShinkaEvolve);
    let (fitted, report) = galapagos::engine::task_settings::apply(card, &task, &registry).unwrap();
    let evaluator = &fitted.card().evaluator;
    assert_eq!(evaluator.kind, "command");
    let list = |s: &str| ParamValue::List(vec![ParamValue::Str(s.to_owned())]);
    for (key, want) in [
        ("sandbox", ParamValue::Str("none".into())),
        ("network", ParamValue::Bool(true)),
        ("read_paths", list("/opt/data")),
        ("memory_limit_mib", ParamValue::Int(512)),
        ("cpu_limit_secs", ParamValue::Float(30.0)),
        ("process_limit", ParamValue::Int(8)),
        ("file_size_limit_mib", ParamValue::Int(2)),
        ("output_limit_kb", ParamValue::Int(7)),
        ("confirm", ParamValue::Int(2)),
        ("confirm_aggregate", ParamValue::Str("min".into())),
        ("confirm_tolerance", ParamValue::Float(0.5)),
        ("timeout_secs", ParamValue::Float(60.0)),
    ] {
        assert_eq!(
            evaluator.params.get(key),
            Some(&want),
            "{key}: {evaluator:?}"
        );
    }
    assert!(
        report
            .changes
            .iter()
            .any(|c| c.ends_with("has no such setting: import_timeout_secs")),
        "{:?}",
        report.changes
    );
}

/// A model's key in the run's environment never reaches the command.
#[test]
fn the_command_does_not_see_the_runs_secrets() {
    let dir = tempfile::tempdir().unwrap();
    folder(
        dir.path(),
        &[
            ("initial_program.txt", "x\n"),
            (
                "env.sh",
                "#!/bin/sh\nif env | grep -q sk-should-not-leak; then echo '{\"combined_score\": 0, \"leak\": 1}'; else echo '{\"combined_score\": 1}'; fi\n",
            ),
        ],
    );
    let card = dir.path().join("card.yaml");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap()
            .replace(
                "  kind: subprocess\n  timeout_secs: 60.0\n",
                "  kind: command\n  argv: [./env.sh]\n  timeout_secs: 60.0\n",
            );
    std::fs::write(&card, text).unwrap();
    let out = dir.path().join("runs");
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("run")
        .arg(&card)
        .arg("--task")
        .arg(dir.path())
        .args(["--iterations", "1", "--quiet", "--out"])
        .arg(&out)
        .env("OPENAI_API_KEY", "sk-should-not-leak")
        .env("SOME_TOKEN", "sk-should-not-leak")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap();
    let genomes = read_genomes(&run.path().join("genomes.jsonl")).unwrap();
    assert_eq!(genomes[0].scores.get("leak"), None, "{:?}", genomes[0]);
    assert_eq!(genomes[0].scores["combined_score"], 1.0);
}

/// Result files are read as plain files of bounded size: a metrics.json
/// that links to an endless device is an error, not a hang.
#[tokio::test]
async fn a_result_file_that_is_not_a_plain_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    folder(
        dir.path(),
        &[
            ("initial_program.txt", "x\n"),
            (
                "link.sh",
                "#!/bin/sh\nln -s /dev/zero \"$2/metrics.json\"\n",
            ),
        ],
    );
    let task = Task::load(dir.path()).unwrap();
    let ev = evaluator(
        &task,
        CommandParams {
            argv: vec!["./link.sh".to_owned()],
            timeout_secs: 5.0,
            ..CommandParams::default()
        },
    );
    let started = Instant::now();
    let e = ev.evaluate(&cand(1, "x\n")).await;
    assert!(started.elapsed().as_secs_f64() < 3.0);
    assert!(!e.valid);
    assert_eq!(
        e.error.as_deref(),
        Some("metrics.json is not a JSON object: it is not a plain file")
    );
}

/// A metric printed as a 400-digit integer (Python prints ints of any
/// length) is refused by name, not read as "no metrics"; the other metrics
/// are still read.
#[tokio::test]
async fn a_metric_beyond_a_float_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    folder(
        dir.path(),
        &[
            ("initial_program.txt", "x\n"),
            (
                "evaluate.sh",
                "#!/bin/sh\npython3 -c 'print(\"{\\\"combined_score\\\": %d, \\\"size\\\": 3}\" % 10**399)'\n",
            ),
        ],
    );
    let task = Task::load(dir.path()).unwrap();
    let ev = evaluator(
        &task,
        CommandParams {
            argv: vec!["./evaluate.sh".to_owned()],
            ..CommandParams::default()
        },
    );
    let e = ev.evaluate(&cand(1, "x\n")).await;
    assert!(!e.valid, "{e:?}");
    assert_eq!(
        e.error.as_deref(),
        Some(
            "score combined_score is 100000000000…000000 (400 digits), out of range: beyond the \
             largest number a 64-bit float holds (about 1.8e308), so it is not a finite score"
        ),
        "{:?}",
        e.artifacts.get("stderr")
    );
    assert_eq!(e.scores.get("size"), Some(&3.0));
}

/// `output_limit_kb` bounds what is kept of the command's output (first and
/// last halves, the rest counted); metrics on its last line are still read.
#[tokio::test]
async fn output_limit_kb_bounds_the_captured_output() {
    let dir = tempfile::tempdir().unwrap();
    folder(
        dir.path(),
        &[
            ("initial_program.txt", "x\n"),
            (
                "evaluate.sh",
                "#!/bin/sh\npython3 -c 'print(\"y\" * 49999); print(\"{\\\"combined_score\\\": 2}\")'\n",
            ),
        ],
    );
    let task = Task::load(dir.path()).unwrap();
    let with = |kb| {
        evaluator(
            &task,
            CommandParams {
                argv: vec!["./evaluate.sh".to_owned()],
                allowance: Allowance {
                    output_limit_kb: kb,
                    ..Allowance::default()
                },
                ..CommandParams::default()
            },
        )
    };
    let e = with(2).evaluate(&cand(1, "x\n")).await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.scores["combined_score"], 2.0);
    let stdout = &e.artifacts["stdout"];
    assert!(stdout.len() < 2200, "{} bytes kept", stdout.len());
    // 50 000 bytes of y's and the 22-byte metrics line, 2 000 kept.
    assert!(
        stdout.contains("[48022 bytes omitted]"),
        "{}",
        &stdout[1000..1100]
    );
    let whole = with(100).evaluate(&cand(2, "x\n")).await;
    assert!(!whole.artifacts["stdout"].contains("omitted"));
}
