//! End-to-end tests of the `SubprocessEvaluator` against real Python
//! evaluators: scoring, timeouts, crashes, broken evaluators, the OpenEvolve
//! shim, the cascade, the shipped tasks, shutdown, and the warm-path cost.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use galapagos::engine::evaluator::{
    Candidate, Evaluator, Isolation, Sandbox, SubprocessEvaluator, SubprocessParams,
};
use galapagos::engine::task::Task;

/// A task folder in a temp dir with the given evaluator.py and initial program.
fn task_with(evaluator: &str, initial: &str) -> (tempfile::TempDir, Task) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("evaluator.py"), evaluator).expect("write evaluator");
    std::fs::write(dir.path().join("initial_program.py"), initial).expect("write program");
    let task = Task::load(dir.path()).expect("task loads");
    (dir, task)
}

fn evaluator(task: &Task, timeout_secs: f64) -> SubprocessEvaluator {
    SubprocessEvaluator::new(
        task,
        SubprocessParams {
            timeout_secs,
            ..SubprocessParams::default()
        },
        2,
    )
}

/// Without the sandbox (`sandbox: none`): for tests whose evaluator or
/// candidate leaves a marker in the task dir (read-only in the sandbox), or
/// that look at the process tree from outside.
fn unsandboxed(task: &Task, timeout_secs: f64) -> SubprocessEvaluator {
    SubprocessEvaluator::new(
        task,
        SubprocessParams {
            timeout_secs,
            isolation: Isolation {
                sandbox: Sandbox::None,
                ..Isolation::default()
            },
            ..SubprocessParams::default()
        },
        2,
    )
}

fn cand(id: u64, content: &str) -> Candidate {
    Candidate {
        id,
        content: content.to_owned().into(),
    }
}

/// Imports the candidate and returns its `value()` as the score; the
/// candidate's prints land in the captured stdout.
const SIMPLE_EVALUATOR: &str = r#"
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    v = mod.value()
    return {"combined_score": v, "ok": True, "note": "scored", "trace": [1, 2]}
"#;

#[tokio::test]
async fn good_candidate_scores_and_output_is_captured() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = evaluator(&task, 10.0);
    assert_eq!(ev.timeout_secs(), Some(10.0));
    let e = ev
        .evaluate(&cand(
            1,
            "print('hello from candidate')\nimport sys\nprint('warn', file=sys.stderr)\ndef value():\n    return 0.75\n",
        ))
        .await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.scores["combined_score"], 0.75);
    assert_eq!(e.scores["ok"], 1.0);
    assert_eq!(e.artifacts["note"], "scored");
    assert_eq!(e.artifacts["trace"], "[1, 2]");
    assert!(e.artifacts["stdout"].contains("hello from candidate"));
    assert!(e.artifacts["stderr"].contains("warn"));
    assert_eq!(e.error, None);
}

#[tokio::test]
async fn busy_loop_is_killed_at_timeout_and_worker_survives() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = evaluator(&task, 1.0);
    // Warm the pool first so start-up is not counted.
    let warm = ev
        .evaluate(&cand(1, "def value():\n    return 0.5\n"))
        .await;
    assert!(warm.valid, "{warm:?}");
    let started = Instant::now();
    let e = ev
        .evaluate(&cand(2, "def value():\n    while True:\n        pass\n"))
        .await;
    let wall = started.elapsed();
    assert!(!e.valid);
    let err = e.error.unwrap_or_default();
    assert!(err.starts_with("timeout"), "{err}");
    assert!(wall < Duration::from_secs(4), "took {wall:?}");
    let after = ev
        .evaluate(&cand(3, "def value():\n    return 0.9\n"))
        .await;
    assert!(after.valid, "{after:?}");
    assert_eq!(after.scores["combined_score"], 0.9);
}

#[tokio::test]
async fn chatty_candidates_keep_bounded_output_and_still_time_out() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = evaluator(&task, 1.0);
    // 2 MB of output, then a score: the head and the tail are kept.
    let e = ev
        .evaluate(&cand(
            1,
            "import sys\nprint('first line')\nfor i in range(20000):\n    print('x' * 99)\n\
             print('last line')\nsys.stderr.write('e' * 300000)\ndef value():\n    return 0.5\n",
        ))
        .await;
    assert!(e.valid, "{e:?}");
    let out = &e.artifacts["stdout"];
    assert!(out.starts_with("first line"), "{}", &out[..40]);
    assert!(out.trim_end().ends_with("last line"));
    assert!(out.contains("omitted"), "the middle is dropped");
    assert!(out.len() < 25_000, "stdout kept {} bytes", out.len());
    assert!(e.artifacts["stderr"].len() < 25_000);
    // Printing without pause never starves the timeout.
    let started = Instant::now();
    let e = ev
        .evaluate(&cand(
            2,
            "def value():\n    while True:\n        print('spam' * 50, flush=True)\n",
        ))
        .await;
    assert!(!e.valid);
    assert!(e.error.unwrap_or_default().starts_with("timeout"));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    assert!(e.artifacts["stdout"].contains("spam"));
}

#[tokio::test]
async fn busy_loop_in_grandchild_process_is_killed_too() {
    // The candidate spawns a sleeping subprocess; the process-group kill must
    // take it down with the candidate.
    let (dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let marker = dir.path().join("grandchild_pid.txt");
    let program = format!(
        "import subprocess, sys, time\n\
         p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n\
         open({marker:?}, 'w').write(str(p.pid))\n\
         def value():\n    time.sleep(300)\n",
        marker = marker.display().to_string()
    );
    let ev = unsandboxed(&task, 1.0);
    let e = ev.evaluate(&cand(1, &program)).await;
    assert!(!e.valid);
    let pid: u32 = std::fs::read_to_string(&marker)
        .expect("grandchild started")
        .trim()
        .parse()
        .expect("pid");
    // Give the kernel a moment to deliver the signal and reap.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!process_alive(pid), "grandchild {pid} still running");
}

/// True when `pid` exists and is not a zombie.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
    }
}

#[tokio::test]
async fn evaluator_exception_gives_traceback() {
    let evaluator_py = r#"
def helper(x):
    raise ValueError("bad candidate: " + x)

def evaluate(program_path):
    return helper("nope")
"#;
    let (_dir, task) = task_with(evaluator_py, "x = 1\n");
    let ev = evaluator(&task, 10.0);
    let e = ev.evaluate(&cand(1, "x = 2\n")).await;
    assert!(!e.valid);
    assert_eq!(
        e.error.as_deref(),
        Some("evaluator raised ValueError: bad candidate: nope")
    );
    let tb = &e.artifacts["traceback"];
    assert!(tb.contains("Traceback"), "{tb}");
    assert!(tb.contains("in helper"), "{tb}");
    assert!(!tb.contains("galapagos_worker"), "worker frames leak: {tb}");
}

#[tokio::test]
async fn os_exit_abort_and_self_kill_are_invalid_and_next_evaluation_works() {
    for sandbox in [Sandbox::Bwrap, Sandbox::None] {
        let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
        let ev = SubprocessEvaluator::new(
            &task,
            SubprocessParams {
                timeout_secs: 10.0,
                isolation: Isolation {
                    sandbox,
                    ..Isolation::default()
                },
                ..SubprocessParams::default()
            },
            2,
        );
        let crashes = [
            ("import os\nos._exit(3)\n", "exited with status 3"),
            ("import ctypes\nctypes.string_at(0)\n", "SIGSEGV"),
            // abort() raises SIGABRT; in the sandbox (pid 1 of its namespace,
            // which ignores its own SIGABRT) it ends at abort's fallback.
            (
                "import os\nos.abort()\n",
                "candidate crashed: killed by SIG",
            ),
            ("import signal\nsignal.raise_signal(signal.SIGTERM)\n", ""),
            ("import os\nos.kill(os.getpid(), 9)\n", ""),
        ];
        for (id, (crash, expected)) in crashes.into_iter().enumerate() {
            let e = ev
                .evaluate(&cand(
                    id as u64,
                    &format!("{crash}def value():\n    return 1\n"),
                ))
                .await;
            let err = e.error.clone().unwrap_or_default();
            if expected.is_empty() {
                // A signal a candidate sends itself without handling it:
                // without the sandbox it dies of it; in the sandbox it is
                // its pid namespace's pid 1, which ignores it, and goes on.
                if sandbox == Sandbox::None {
                    assert!(!e.valid, "{crash}: {e:?}");
                    assert!(err.contains("killed by SIG"), "{crash}: {err}");
                } else {
                    assert!(e.valid, "{crash}: {e:?}");
                }
                continue;
            }
            assert!(!e.valid, "{sandbox:?} {crash}: {e:?}");
            assert!(err.contains(expected), "{sandbox:?} {crash}: {err}");
        }
        let e = ev
            .evaluate(&cand(9, "def value():\n    return 0.5\n"))
            .await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], 0.5);
    }
}

#[tokio::test]
async fn candidate_killing_the_worker_is_invalid_and_worker_is_replaced() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = unsandboxed(&task, 10.0);
    let e = ev
        .evaluate(&cand(
            1,
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(30)\ndef value():\n    return 1\n",
        ))
        .await;
    assert!(!e.valid);
    let err = e.error.unwrap_or_default();
    assert!(err.contains("evaluation worker died"), "{err}");
    let e = ev
        .evaluate(&cand(2, "def value():\n    return 0.5\n"))
        .await;
    assert!(e.valid, "{e:?}");
}

#[tokio::test]
async fn broken_evaluator_names_the_file() {
    let (_dir, task) = task_with("def evaluate(path)\n    return {}\n", "x = 1\n");
    let ev = evaluator(&task, 10.0);
    for id in 0..2 {
        let e = ev.evaluate(&cand(id, "x = 2\n")).await;
        assert!(!e.valid);
        let err = e.error.unwrap_or_default();
        assert!(err.contains("cannot import the task evaluator"), "{err}");
        assert!(
            err.contains(&task.evaluator_path.display().to_string()),
            "{err}"
        );
        assert!(err.contains("SyntaxError"), "{err}");
        assert!(e.artifacts["traceback"].contains("evaluator.py"));
    }
}

#[tokio::test]
async fn missing_interpreter_is_a_clear_error() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = SubprocessEvaluator::new(
        &task,
        SubprocessParams {
            python: "/nonexistent/python9".to_owned(),
            ..SubprocessParams::default()
        },
        1,
    );
    let e = ev.evaluate(&cand(1, "def value():\n    return 1\n")).await;
    assert!(!e.valid);
    assert!(
        e.error.unwrap_or_default().contains("/nonexistent/python9"),
        "error names the interpreter"
    );
}

#[tokio::test]
async fn openevolve_style_evaluator_runs_unchanged() {
    let evaluator_py = r#"
from openevolve.evaluation_result import EvaluationResult
import openevolve

def evaluate(program_path):
    src = open(program_path).read()
    r = EvaluationResult(
        metrics={"combined_score": len(src) / 100.0, "lines": src.count("\n")},
        artifacts={"feedback": "looks fine", "raw": b"bytes ok"},
    )
    assert r.has_artifacts()
    assert EvaluationResult.from_dict({"a": 1.0}).to_dict() == {"a": 1.0}
    assert openevolve.EvaluationResult is EvaluationResult
    return r
"#;
    let (_dir, task) = task_with(evaluator_py, "x = 1\n");
    let ev = evaluator(&task, 10.0);
    let e = ev.evaluate(&cand(1, "x = 12345\n")).await;
    assert!(e.valid, "{e:?}");
    assert!((e.scores["combined_score"] - 0.10).abs() < 1e-12);
    assert_eq!(e.scores["lines"], 1.0);
    assert_eq!(e.artifacts["feedback"], "looks fine");
    assert_eq!(e.artifacts["raw"], "bytes ok");
}

#[tokio::test]
async fn result_rules_nan_error_validity() {
    let evaluator_py = r#"
def evaluate(program_path):
    mode = open(program_path).read().strip()
    if mode == "nan":
        return {"combined_score": float("nan")}
    if mode == "error":
        return {"combined_score": 0.3, "error": "circle 3 overlaps circle 7"}
    if mode == "invalid":
        return {"combined_score": 0.3, "validity": 0.0}
    if mode == "timeout":
        return {"error": 0.0, "timeout": True}
    if mode == "none":
        return None
    return {"combined_score": 0.3, "validity": 1.0, "error": None, "artifacts": {"hint": "ok", "data": {"k": 1}}}
"#;
    let (_dir, task) = task_with(evaluator_py, "ok\n");
    let ev = evaluator(&task, 10.0);
    let e = ev.evaluate(&cand(1, "nan")).await;
    assert_eq!(
        e.error.as_deref(),
        Some("non-finite score combined_score (NaN)")
    );
    let e = ev.evaluate(&cand(2, "error")).await;
    assert!(!e.valid);
    assert!(e.error.unwrap_or_default().contains("circle 3 overlaps"));
    let e = ev.evaluate(&cand(3, "invalid")).await;
    assert!(!e.valid);
    let e = ev.evaluate(&cand(4, "timeout")).await;
    assert!(!e.valid);
    let e = ev.evaluate(&cand(5, "none")).await;
    assert!(!e.valid);
    assert!(e.error.unwrap_or_default().contains("returned None"));
    let e = ev.evaluate(&cand(6, "ok")).await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.artifacts["hint"], "ok");
    assert_eq!(e.artifacts["data"], r#"{"k": 1}"#);
}

const CASCADE_EVALUATOR: &str = r#"
def _score(path):
    return float(open(path).read().strip())

def evaluate_stage1(program_path):
    return {"combined_score": _score(program_path), "stage1_ran": 1.0}

def evaluate_stage2(program_path):
    return {"combined_score": _score(program_path) + 0.01, "stage2_ran": 1.0}

def evaluate(program_path):
    return {"combined_score": -1.0, "full_ran": 1.0}
"#;

#[tokio::test]
async fn cascade_stops_at_stage1_below_threshold() {
    let (_dir, task) = task_with(CASCADE_EVALUATOR, "0.1\n");
    let ev = evaluator(&task, 10.0);
    let weak = ev.evaluate(&cand(1, "0.2")).await;
    assert!(weak.valid, "{weak:?}");
    // Below a threshold is weak, not failed: no failure_stage.
    assert!(!weak.artifacts.contains_key("failure_stage"), "{weak:?}");
    assert!(!weak.scores.contains_key("stage2_ran"));
    assert_eq!(weak.scores["combined_score"], 0.2);

    let strong = ev.evaluate(&cand(2, "0.8")).await;
    assert!(strong.valid, "{strong:?}");
    assert_eq!(strong.scores["stage1_ran"], 1.0);
    assert_eq!(strong.scores["stage2_ran"], 1.0);
    assert!((strong.scores["combined_score"] - 0.81).abs() < 1e-12);
    assert!(!strong.artifacts.contains_key("failure_stage"));

    let plain = SubprocessEvaluator::new(
        &task,
        SubprocessParams {
            cascade: false,
            ..SubprocessParams::default()
        },
        1,
    );
    let full = plain.evaluate(&cand(3, "0.8")).await;
    assert_eq!(full.scores["full_ran"], 1.0);
}

#[tokio::test]
async fn parallel_evaluations_share_one_worker_up_to_pool_size_at_once() {
    let evaluator_py = r#"
import time
def evaluate(program_path):
    t0 = time.time()
    time.sleep(0.3)
    return {"combined_score": float(open(program_path).read()), "t0": t0, "t1": time.time()}
"#;
    let (_dir, task) = task_with(evaluator_py, "0\n");
    let ev = evaluator(&task, 10.0);
    let results = futures::future::join_all((0..4u64).map(|i| {
        let ev = &ev;
        async move { ev.evaluate(&cand(i, &format!("{i}"))).await }
    }))
    .await;
    for (i, e) in results.iter().enumerate() {
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], i as f64);
    }
    assert_eq!(ev.worker_pids().len(), 1, "one warm worker serves them all");
    // The most candidates running at the same moment: the pool size (2).
    let most = results
        .iter()
        .map(|e| {
            let t = e.scores["t0"] + 0.15;
            results
                .iter()
                .filter(|o| o.scores["t0"] <= t && t <= o.scores["t1"])
                .count()
        })
        .max()
        .unwrap_or(0);
    assert_eq!(most, 2, "candidates in flight at once");
}

/// Live (not zombie) processes whose command line mentions `needle`: every
/// process of a worker mentions its task dir (bubblewrap's arguments, the
/// worker's configuration, inherited by its forks).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) && process_alive(pid) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test]
async fn dropping_the_evaluator_leaves_no_processes() {
    for sandbox in [Sandbox::Bwrap, Sandbox::None] {
        let (dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
        let ev = SubprocessEvaluator::new(
            &task,
            SubprocessParams {
                timeout_secs: 30.0,
                isolation: Isolation {
                    sandbox,
                    ..Isolation::default()
                },
                ..SubprocessParams::default()
            },
            2,
        );
        let e = ev
            .evaluate(&cand(1, "def value():\n    return 0.5\n"))
            .await;
        assert!(e.valid, "{sandbox:?}: {e:?}");
        // A candidate still running when the evaluation is abandoned and the
        // evaluator dropped must die too, with the process it started.
        let token = format!("galapagos-drop-test-{}", std::process::id());
        let program = format!(
            "import subprocess, sys, time\n\
             subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{token}'])\n\
             print('started', flush=True)\n\
             def value():\n    time.sleep(60)\n"
        );
        let ours = dir.path().display().to_string();
        let sleeper = cand(2, &program);
        let mut evaluation = Box::pin(ev.evaluate(&sleeper));
        let started = tokio::select! {
            e = &mut evaluation => panic!("{sandbox:?}: the sleeping candidate finished: {e:?}"),
            found = async {
                for _ in 0..100 {
                    if !processes_mentioning(&token).is_empty() {
                        return true;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                false
            } => found,
        };
        assert!(started, "{sandbox:?}: the candidate's process started");
        let before = processes_mentioning(&ours);
        assert!(
            before.len() >= 3,
            "{sandbox:?}: worker, zygote, children: {before:?}"
        );
        // The evaluation is abandoned (a stopped run), then the evaluator
        // dropped.
        drop(evaluation);
        drop(ev);
        let mut left = Vec::new();
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = processes_mentioning(&ours);
            left.extend(processes_mentioning(&token));
            if left.is_empty() {
                break;
            }
        }
        assert!(
            left.is_empty(),
            "{sandbox:?}: left running after the drop: {left:?}"
        );
    }
}

fn shipped_task(name: &str) -> Task {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/tasks")
        .join(name);
    Task::load(&dir).expect("shipped task loads")
}

#[tokio::test]
async fn shipped_tasks_initial_programs_are_valid() {
    for name in ["circle_packing", "function_minimization", "curve_fitting"] {
        let task = shipped_task(name);
        assert!(task.initial_program.text().contains("# EVOLVE-BLOCK-START"));
        assert!(task.initial_program.text().contains("# EVOLVE-BLOCK-END"));
        assert!(!task.description.is_empty());
        let ev = evaluator(&task, 30.0);
        let started = Instant::now();
        let e = ev.evaluate(&cand(0, &task.initial_program.text())).await;
        let first = started.elapsed();
        assert!(e.valid, "{name}: {e:?}");
        let score = e.scores["combined_score"];
        assert!(score.is_finite() && score > 0.0, "{name}: {score}");
        let started = Instant::now();
        let again = ev.evaluate(&cand(1, &task.initial_program.text())).await;
        let warm = started.elapsed();
        assert_eq!(
            again.scores, e.scores,
            "{name}: evaluation is deterministic"
        );
        println!(
            "{name}: initial combined_score = {score:.4} scores = {:?} (first {first:?}, warm {warm:?})",
            e.scores
        );
        assert!(
            warm < Duration::from_secs(1),
            "{name}: warm evaluation {warm:?}"
        );
    }
}

#[tokio::test]
async fn circle_packing_rejects_cheats() {
    let task = shipped_task("circle_packing");
    let ev = evaluator(&task, 30.0);
    let cheats = [
        (
            "nan",
            "import math\ndef run_packing():\n    return [[0.5, 0.5]] * 26, [float('nan')] * 26\n",
        ),
        (
            "overlap",
            "def run_packing():\n    return [[0.5, 0.5]] * 26, [0.1] * 26\n",
        ),
        (
            "outside",
            "def run_packing():\n    return [[0.05 + 0.035 * i, 0.5] for i in range(26)], [0.3] + [0.001] * 25\n",
        ),
        (
            "shape",
            "def run_packing():\n    return [[0.5, 0.5]] * 25, [0.01] * 25\n",
        ),
        (
            "negative",
            "def run_packing():\n    return [[0.03 + 0.037 * i, 0.5] for i in range(26)], [-0.01] * 26\n",
        ),
    ];
    for (what, program) in cheats {
        let e = ev.evaluate(&cand(1, program)).await;
        assert!(!e.valid, "{what} accepted: {e:?}");
        println!("circle_packing rejects {what}: {:?}", e.error);
    }
}

#[tokio::test]
async fn warm_path_cost_per_candidate() {
    let evaluator_py = r#"
import importlib.util
_XS = [i / 10.0 for i in range(-20, 21)]
def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mse = sum((mod.f(x) - (2.5 * x * x - 1.25 * x + 0.75)) ** 2 for x in _XS) / len(_XS)
    return {"combined_score": 1.0 / (1.0 + mse), "mse": mse}
"#;
    let (_dir, task) = task_with(evaluator_py, "A = 1.0\ndef f(x):\n    return A * x * x\n");
    let ev = evaluator(&task, 10.0);
    let first = Instant::now();
    let e = ev
        .evaluate(&cand(0, "A = 1.0\ndef f(x):\n    return A * x * x\n"))
        .await;
    assert!(e.valid, "{e:?}");
    let cold = first.elapsed();
    let n = 50u32;
    let started = Instant::now();
    for i in 0..n {
        let program = format!(
            "A = {}\ndef f(x):\n    return A * x * x\n",
            1.0 + f64::from(i) * 0.01
        );
        let e = ev.evaluate(&cand(u64::from(i) + 1, &program)).await;
        assert!(e.valid, "{e:?}");
    }
    let per = started.elapsed() / n;
    println!(
        "subprocess evaluator: cold first evaluation {cold:?}, warm path {per:?} per candidate over {n}"
    );
}

#[tokio::test]
async fn a_frozen_zygote_still_times_out_and_its_worker_is_replaced() {
    // The candidate freezes its parent, the zygote that forks every child
    // (SIGSTOP), then hangs. The run enforces the timeout itself, so the
    // candidate still dies at 1 s. No new child can be forked afterwards:
    // once the spares are used, the wait for one hits the backstop
    // (timeout + 5 s), the worker is killed (its frozen zygote with it) and a
    // fresh one evaluates the candidate.
    let (dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let marker = dir.path().join("pids.txt");
    let program = format!(
        "import os, signal, time\nopen({:?}, 'w').write(f'{{os.getpid()}} {{os.getppid()}}')\n\
         os.kill(os.getppid(), signal.SIGSTOP)\ndef value():\n    time.sleep(120)\n",
        marker.display().to_string()
    );
    let ev = unsandboxed(&task, 1.0);
    let started = Instant::now();
    let e = ev.evaluate(&cand(1, &program)).await;
    let wall = started.elapsed();
    assert!(!e.valid);
    let err = e.error.unwrap_or_default();
    assert!(err.starts_with("timeout"), "{err}");
    assert!(wall < Duration::from_secs(4), "took {wall:?}");
    let pids = std::fs::read_to_string(&marker).expect("candidate started");
    let [pid, zygote]: [u32; 2] = pids
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect::<Vec<_>>()
        .try_into()
        .expect("two pids");
    assert!(!process_alive(pid), "candidate {pid} survived its timeout");
    let worker = ev.worker_pids();
    let started = Instant::now();
    for id in 2..6 {
        let e = ev
            .evaluate(&cand(id, "def value():\n    return 0.5\n"))
            .await;
        assert!(e.valid, "{e:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert_ne!(ev.worker_pids(), worker, "the worker was replaced");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !process_alive(zygote),
        "the frozen zygote {zygote} survived"
    );
}

/// Appends a line to `imports.log` (in the task dir, the worker's cwd) each
/// time a worker imports it, so a test can count worker starts.
const COUNTED_EVALUATOR: &str = r#"
with open("imports.log", "a") as f:
    f.write("import\n")
FAIL = False
if FAIL:
    raise RuntimeError("broken on purpose")

def evaluate(program_path):
    return {"combined_score": 0.5}
"#;

fn imports(dir: &tempfile::TempDir) -> usize {
    std::fs::read_to_string(dir.path().join("imports.log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn warm_up_starts_the_worker_that_the_first_evaluations_use() {
    let (dir, task) = task_with(COUNTED_EVALUATOR, "x = 1\n");
    let ev = unsandboxed(&task, 10.0);
    ev.warm_up().await;
    assert_eq!(imports(&dir), 1, "warm-up imported the evaluator");
    assert_eq!(ev.worker_pids().len(), 1, "and left a worker running");
    for id in 0..3 {
        let e = ev.evaluate(&cand(id, "x = 2\n")).await;
        assert!(e.valid, "{e:?}");
    }
    assert_eq!(imports(&dir), 1, "the evaluations used the warm worker");
}

#[tokio::test]
async fn a_failed_warm_up_is_reported_by_the_first_evaluation_without_a_second_try() {
    let broken = COUNTED_EVALUATOR.replace("FAIL = False", "FAIL = True");
    let (dir, task) = task_with(&broken, "x = 1\n");
    let ev = unsandboxed(&task, 10.0);
    ev.warm_up().await;
    for id in 0..2 {
        let e = ev.evaluate(&cand(id, "x = 2\n")).await;
        let err = e.error.unwrap_or_default();
        assert!(err.contains("cannot import the task evaluator"), "{err}");
        assert!(err.contains("broken on purpose"), "{err}");
    }
    assert_eq!(imports(&dir), 1, "an import failure is not retried");

    let (_dir, task) = task_with(COUNTED_EVALUATOR, "x = 1\n");
    let ev = SubprocessEvaluator::new(
        &task,
        SubprocessParams {
            python: "/nonexistent/python9".to_owned(),
            ..SubprocessParams::default()
        },
        1,
    );
    ev.warm_up().await;
    for id in 0..2 {
        let e = ev.evaluate(&cand(id, "x = 2\n")).await;
        assert!(!e.valid);
        assert!(
            e.error.unwrap_or_default().contains("/nonexistent/python9"),
            "each evaluation names the interpreter"
        );
    }
}

/// What an evaluator writes is kept as it wrote it: its own `failure_stage`
/// and its own `stdout` artifact survive; what it printed is captured under
/// a name beside them. The worker sets `failure_stage` only for a stage that
/// raised.
#[tokio::test]
async fn an_evaluators_own_failure_stage_and_stdout_artifact_are_kept() {
    let evaluator_py = r#"
def _mode(path):
    return open(path).read().strip()

def evaluate_stage1(program_path):
    print("printed by stage 1")
    mode = _mode(program_path)
    if mode == "raise1":
        raise RuntimeError("stage 1 broke")
    if mode == "own":
        return {"combined_score": 0.0, "error": "the program crashed",
                "artifacts": {"failure_stage": "compile", "stdout": "program output 42"}}
    return {"combined_score": 0.9}

def evaluate_stage2(program_path):
    if _mode(program_path) == "raise2":
        raise ValueError("stage 2 broke")
    return {"combined_score": 0.95, "artifacts": {"stdout": "stage 2 output"}}
"#;
    let (_dir, task) = task_with(evaluator_py, "ok\n");
    let ev = evaluator(&task, 10.0);
    let own = ev.evaluate(&cand(1, "own")).await;
    assert!(!own.valid);
    assert_eq!(own.artifacts["failure_stage"], "compile", "{own:?}");
    assert_eq!(own.artifacts["stdout"], "program output 42");
    assert!(
        own.artifacts["stdout (captured)"].contains("printed by stage 1"),
        "{own:?}"
    );

    let ok = ev.evaluate(&cand(2, "ok")).await;
    assert!(ok.valid, "{ok:?}");
    assert!(!ok.artifacts.contains_key("failure_stage"));
    assert_eq!(ok.artifacts["stdout"], "stage 2 output");

    let raised = ev.evaluate(&cand(3, "raise1")).await;
    assert_eq!(raised.artifacts["failure_stage"], "stage1", "{raised:?}");
    let raised = ev.evaluate(&cand(4, "raise2")).await;
    assert_eq!(raised.artifacts["failure_stage"], "stage2", "{raised:?}");
    assert!(!raised.valid);
}

#[tokio::test]
async fn in_the_sandbox_a_candidate_cannot_signal_the_processes_around_it() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = evaluator(&task, 10.0);
    let e = ev
        .evaluate(&cand(1, "def value():\n    return 0.5\n"))
        .await;
    assert!(e.valid, "{e:?}");
    let worker = ev.worker_pids();
    // Every process it can name (its parent, every pid /proc shows; not 0,
    // its own group) gets a SIGKILL; none may arrive.
    let program = "import os, signal\n\
         me = os.getpid()\n\
         targets = {os.getppid(), 1} | {int(p) for p in os.listdir('/proc') if p.isdigit()}\n\
         for pid in sorted(targets - {me, 0}):\n\
         \x20   try:\n\
         \x20       os.kill(pid, signal.SIGKILL)\n\
         \x20       print('killed', pid)\n\
         \x20   except OSError as e:\n\
         \x20       print('refused', pid, e.errno)\n\
         def value():\n    return 0.75\n";
    let e = ev.evaluate(&cand(2, program)).await;
    assert!(e.valid, "{e:?}");
    let out = &e.artifacts["stdout"];
    assert!(out.contains("refused "), "{out}");
    assert!(!out.contains("killed"), "{out}");
    assert_eq!(ev.worker_pids(), worker, "the worker survives");
    let e = ev
        .evaluate(&cand(3, "def value():\n    return 0.5\n"))
        .await;
    assert!(e.valid, "{e:?}");
}

/// An evaluator.py whose imports start threads (numpy's BLAS starts its
/// thread pool on import; so does anything that starts a thread at module
/// level) runs in the sandbox, and its candidates are still isolated: each
/// is pid 1 of a pid namespace of its own.
#[tokio::test]
async fn an_evaluator_that_starts_threads_on_import_runs_in_the_sandbox() {
    let evaluator_py = r#"
import importlib.util, threading, time

def _pool():
    while True:
        time.sleep(3600)

for _ in range(3):
    threading.Thread(target=_pool, daemon=True).start()
THREADS = threading.active_count()

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {"combined_score": mod.value(), "threads_at_import": float(THREADS)}
"#;
    let (_dir, task) = task_with(evaluator_py, "def value():\n    return 0.25\n");
    let ev = evaluator(&task, 10.0);
    let e = ev
        .evaluate(&cand(
            1,
            "import os\nprint('pid', os.getpid())\ndef value():\n    return 0.5\n",
        ))
        .await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.scores["combined_score"], 0.5);
    assert!(e.scores["threads_at_import"] >= 4.0, "{e:?}");
    assert_eq!(e.artifacts["stdout"].trim(), "pid 1", "{e:?}");
}

/// In the sandbox a candidate (or the compiler an evaluator runs) may move a
/// file from one directory to another inside its scratch dir: rustc, for
/// one, writes each .rmeta in a temporary subdirectory and renames it into
/// place. Creating device nodes stays refused.
#[tokio::test]
async fn in_the_sandbox_a_file_can_be_moved_between_directories() {
    let (_dir, task) = task_with(SIMPLE_EVALUATOR, "def value():\n    return 0.25\n");
    let ev = evaluator(&task, 10.0);
    let program = "import os, tempfile\n\
         root = tempfile.mkdtemp()\n\
         os.makedirs(os.path.join(root, 'a'))\n\
         os.makedirs(os.path.join(root, 'b'))\n\
         with open(os.path.join(root, 'a', 'f'), 'w') as f:\n\
         \x20   f.write('x')\n\
         os.rename(os.path.join(root, 'a', 'f'), os.path.join(root, 'b', 'f'))\n\
         os.link(os.path.join(root, 'b', 'f'), os.path.join(root, 'a', 'g'))\n\
         print('moved', sorted(os.listdir(os.path.join(root, 'b'))), sorted(os.listdir(os.path.join(root, 'a'))))\n\
         try:\n\
         \x20   os.mknod(os.path.join(root, 'null'), 0o666 | 0o020000, os.makedev(1, 3))\n\
         \x20   print('made a device')\n\
         except OSError as e:\n\
         \x20   print('no device', e.errno)\n\
         def value():\n    return 0.5\n";
    let e = ev.evaluate(&cand(1, program)).await;
    assert!(e.valid, "{e:?}");
    let out = &e.artifacts["stdout"];
    assert!(out.contains("moved ['f'] ['g']"), "{out}");
    assert!(out.contains("no device"), "{out}");
}

/// The same inside the process `galapagos_eval` gives the candidate's code
/// (its own Landlock domain, nested in the child's).
#[tokio::test]
async fn a_candidate_run_apart_by_galapagos_eval_can_move_files_between_directories() {
    let evaluator_py = r#"
import galapagos_eval

def evaluate(program_path):
    return {"combined_score": 1.0 if galapagos_eval.run(program_path, "move") == "moved" else 0.0}
"#;
    let program = "import os, tempfile\n\
         def move():\n\
         \x20   root = tempfile.mkdtemp()\n\
         \x20   os.makedirs(os.path.join(root, 'a'))\n\
         \x20   os.makedirs(os.path.join(root, 'b'))\n\
         \x20   open(os.path.join(root, 'a', 'f'), 'w').close()\n\
         \x20   os.rename(os.path.join(root, 'a', 'f'), os.path.join(root, 'b', 'f'))\n\
         \x20   return 'moved'\n";
    let (_dir, task) = task_with(evaluator_py, program);
    let ev = evaluator(&task, 10.0);
    let e = ev.evaluate(&cand(1, program)).await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.scores["combined_score"], 1.0, "{e:?}");
}
