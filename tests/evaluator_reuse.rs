//! `candidates_per_process` > 1: a child process of the evaluation worker
//! serves several candidates in turn. These tests check what that mode
//! promises: the count is honoured, the state candidates commonly change is
//! put back, a process that was tampered with is retired, and a timeout or a
//! crash still costs only its own candidate.

use std::collections::BTreeSet;

use galapagos::engine::evaluator::{
    Candidate, Evaluation, Evaluator, Isolation, Sandbox, SubprocessEvaluator, SubprocessParams,
};
use galapagos::engine::task::Task;

/// Reports what a candidate sees of its process: pid, cwd, an environment
/// variable, the first random number, whether `len` still works, and the
/// evaluator's own global. The pid is the one /proc shows (in the sandbox,
/// every candidate is pid 2 of its own namespace; /proc is the sandbox's).
const PROBE_EVALUATOR: &str = r#"
import importlib.util
import os
import random
import sys

LIMIT = 7

def process_id():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[1])
    return os.getpid()

def evaluate(program_path):
    seen = {
        "pid": process_id(),
        "cwd": os.getcwd(),
        "env": os.environ.get("GALAPAGOS_REUSE_TEST", "unset"),
        "rand": random.random(),
        "abs_ok": abs(-2) == 2,
        "limit": LIMIT,
        "path0": sys.path[0],
    }
    print("probe", flush=True)
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seen["combined_score"] = float(mod.value())
    return seen
"#;

const PLAIN: &str = "def value():\n    return 0.5\n";

fn task() -> (tempfile::TempDir, Task) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("evaluator.py"), PROBE_EVALUATOR).expect("write evaluator");
    std::fs::write(dir.path().join("initial_program.py"), PLAIN).expect("write program");
    let task = Task::load(dir.path()).expect("task loads");
    (dir, task)
}

fn evaluator(task: &Task, per_process: u32, timeout_secs: f64) -> SubprocessEvaluator {
    with_sandbox(task, per_process, timeout_secs, Sandbox::default())
}

fn with_sandbox(
    task: &Task,
    per_process: u32,
    timeout_secs: f64,
    sandbox: Sandbox,
) -> SubprocessEvaluator {
    SubprocessEvaluator::new(
        task,
        SubprocessParams {
            timeout_secs,
            candidates_per_process: per_process,
            isolation: Isolation {
                sandbox,
                ..Isolation::default()
            },
            ..SubprocessParams::default()
        },
        1,
    )
}

async fn eval(ev: &SubprocessEvaluator, id: u64, content: &str) -> Evaluation {
    ev.evaluate(&Candidate {
        id,
        content: content.to_owned().into(),
    })
    .await
}

fn pid(e: &Evaluation) -> u64 {
    assert!(e.valid, "{e:?}");
    e.scores["pid"] as u64
}

#[tokio::test]
async fn a_process_serves_up_to_the_count_then_a_fresh_one_takes_over() {
    let (_dir, task) = task();
    let ev = evaluator(&task, 3, 10.0);
    let mut pids = Vec::new();
    let mut rands = BTreeSet::new();
    for i in 0..7 {
        let e = eval(&ev, i, PLAIN).await;
        pids.push(pid(&e));
        rands.insert(e.scores["rand"].to_bits());
    }
    // Every candidate gets fresh randomness, as a freshly forked child does.
    assert_eq!(rands.len(), 7, "random numbers repeat between candidates");
    assert_eq!(pids[0], pids[1]);
    assert_eq!(pids[1], pids[2]);
    assert_ne!(pids[2], pids[3]);
    assert_eq!(pids[3], pids[5]);
    assert_ne!(pids[5], pids[6]);

    // The default keeps one process per candidate.
    let single = evaluator(&task, 1, 10.0);
    let a = pid(&eval(&single, 10, PLAIN).await);
    let b = pid(&eval(&single, 11, PLAIN).await);
    assert_ne!(a, b);
}

#[tokio::test]
async fn state_a_candidate_changed_is_put_back_before_the_next() {
    let (dir, task) = task();
    let ev = evaluator(&task, 100, 10.0);
    let first = eval(&ev, 1, PLAIN).await;
    let messy = "import os, random, sys\n\
                 os.chdir('/')\n\
                 os.environ['GALAPAGOS_REUSE_TEST'] = 'leaked'\n\
                 sys.path.insert(0, '/nowhere')\n\
                 sys.setrecursionlimit(50)\n\
                 random.seed(12345)\n\
                 sys.stdout = open(os.devnull, 'w')\n\
                 def value():\n    return 0.25\n";
    let dirty = eval(&ev, 2, messy).await;
    let next = eval(&ev, 3, "print('visible')\ndef value():\n    return 0.75\n").await;
    assert_eq!(pid(&first), pid(&dirty));
    assert_eq!(
        pid(&dirty),
        pid(&next),
        "putting state back must not retire the process"
    );
    let task_dir = dir.path().canonicalize().expect("task dir");
    assert_eq!(
        std::path::Path::new(&next.artifacts["cwd"])
            .canonicalize()
            .expect("cwd"),
        task_dir
    );
    assert_eq!(next.artifacts["env"], "unset");
    assert_eq!(next.artifacts["path0"], first.artifacts["path0"]);
    // The seed the messy candidate set does not carry over.
    assert_ne!(next.scores["rand"], 0.41661987254534116);
    assert!(
        next.artifacts
            .get("stdout")
            .is_some_and(|s| s.contains("visible")),
        "stdout not restored: {next:?}"
    );
    assert_eq!(next.scores["combined_score"], 0.75);
}

#[tokio::test]
async fn tampering_or_leftovers_retire_the_process() {
    let (_dir, task) = task();
    let ev = evaluator(&task, 100, 10.0);
    let cases = [
        (
            "builtins",
            "import builtins\nbuiltins.abs = lambda x: 0\ndef value():\n    return 0.5\n",
        ),
        (
            "evaluator global",
            "import evaluator\nevaluator.LIMIT = 0\ndef value():\n    return 0.5\n",
        ),
        (
            "module the evaluator uses",
            "import random\nrandom.random = lambda: 0.0\ndef value():\n    return 0.5\n",
        ),
        (
            "stdout closed",
            "import os\nos.close(1)\ndef value():\n    return 0.5\n",
        ),
        (
            "stderr redirected",
            "import os\nos.dup2(os.open(os.devnull, os.O_WRONLY), 2)\ndef value():\n    return 0.5\n",
        ),
        (
            "thread",
            "import threading, time\n\
             threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n\
             def value():\n    return 0.5\n",
        ),
        (
            "child process",
            "import subprocess, sys\n\
             subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n\
             def value():\n    return 0.5\n",
        ),
    ];
    let mut id = 0;
    // Sabotaging a builtin the worker itself needs breaks the culprit's own
    // result (invalid), and the process is replaced all the same.
    let before = pid(&eval(&ev, 100, PLAIN).await);
    let culprit = eval(
        &ev,
        101,
        "import builtins\nbuiltins.len = lambda x: 0\ndef value():\n    return 0.5\n",
    )
    .await;
    assert!(!culprit.valid, "{culprit:?}");
    let after = eval(&ev, 102, PLAIN).await;
    assert_ne!(pid(&after), before);
    for (what, program) in cases {
        id += 1;
        let before = pid(&eval(&ev, id, PLAIN).await);
        id += 1;
        let culprit = eval(&ev, id, program).await;
        assert_eq!(
            pid(&culprit),
            before,
            "{what}: the culprit runs in the warm process"
        );
        id += 1;
        let after = eval(&ev, id, PLAIN).await;
        assert_ne!(
            pid(&after),
            before,
            "{what}: the tampered process served again"
        );
        assert_eq!(after.scores["abs_ok"], 1.0, "{what}");
        assert_eq!(after.scores["limit"], 7.0, "{what}");
        assert!(after.scores["rand"] > 0.0, "{what}");
        assert!(
            after
                .artifacts
                .get("stdout")
                .is_some_and(|o| o.contains("probe")),
            "{what}: {after:?}"
        );
    }
}

#[tokio::test]
async fn a_timeout_or_crash_in_a_reused_process_costs_only_that_candidate() {
    let (_dir, task) = task();
    // Unsandboxed: the test checks from outside that the process is gone.
    let ev = with_sandbox(&task, 100, 1.0, Sandbox::None);
    let a = pid(&eval(&ev, 1, PLAIN).await);
    assert_eq!(pid(&eval(&ev, 2, PLAIN).await), a);
    let hung = eval(&ev, 3, "def value():\n    while True:\n        pass\n").await;
    assert!(!hung.valid);
    assert!(
        hung.error.as_deref().unwrap_or("").starts_with("timeout"),
        "{hung:?}"
    );
    let b = pid(&eval(&ev, 4, PLAIN).await);
    assert_ne!(a, b);
    assert!(!process_alive(a), "the timed-out process {a} still runs");
    let crashed = eval(&ev, 5, "import os\nos._exit(3)\n").await;
    assert!(!crashed.valid);
    assert!(
        crashed.error.as_deref().unwrap_or("").contains("status 3"),
        "{crashed:?}"
    );
    let c = pid(&eval(&ev, 6, PLAIN).await);
    assert_ne!(b, c);
    assert_eq!(pid(&eval(&ev, 7, PLAIN).await), c);
}

#[tokio::test]
async fn a_candidate_cannot_register_a_second_lane_of_its_own() {
    // The child's connection to the run is the only one the run takes from
    // that process: a candidate that opens another (to be handed later
    // candidates and answer them itself) is ignored, and the candidates
    // after it are scored as usual by the same process. (In the sandbox a
    // candidate cannot even reach the socket: its dir is hidden.)
    let (_dir, task) = task();
    let ev = SubprocessEvaluator::new(
        &task,
        SubprocessParams {
            timeout_secs: 3.0,
            candidates_per_process: 100,
            isolation: Isolation {
                sandbox: Sandbox::None,
                ..Isolation::default()
            },
            ..SubprocessParams::default()
        },
        3,
    );
    let sneaky = "import json, os, socket\n\
        cmd = open(f'/proc/{os.getppid()}/cmdline', 'rb').read().split(b'\\0')\n\
        lanes = json.loads([c for c in cmd if c.startswith(b'{')][0])['lanes']\n\
        r1, w1 = os.pipe()\n\
        r2, w2 = os.pipe()\n\
        KEEP = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
        KEEP.connect(lanes)\n\
        socket.send_fds(KEEP, [b'lane\\n'], [r1, r2])\n\
        def value():\n    return 0.5\n";
    let first = eval(&ev, 1, sneaky).await;
    assert!(first.valid, "{first:?}");
    // Three at once: the reused process, the spare, and one more child. A
    // second lane taken from the candidate would get one of them and leave
    // it unanswered until its timeout.
    let started = std::time::Instant::now();
    let results = futures::future::join_all((2..5).map(|id| eval(&ev, id, PLAIN))).await;
    for e in &results {
        assert!(e.valid, "{e:?}");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn the_count_is_checked_on_the_card() {
    use galapagos::engine::card::Card;
    use galapagos::engine::registry::Registry;
    let registry = Registry::builtin();
    let with = |value: &str| {
        include_str!("../cards/best_of_n.yaml").replace(
            "  timeout_secs: 60.0",
            &format!("  timeout_secs: 60.0\n  candidates_per_process: {value}"),
        )
    };
    let err = Card::from_yaml(&with("0"), "inline.yaml", &registry)
        .expect_err("0 candidates per process is refused");
    let text = err.to_string();
    assert!(text.contains("candidates_per_process"), "{text}");
    assert!(text.contains("inline.yaml:"), "{text}");
    let card = Card::from_yaml(&with("50"), "inline.yaml", &registry).expect("50 is fine");
    assert!(card.to_yaml().contains("candidates_per_process: 50"));
}

/// True when `pid` exists and is not a zombie.
fn process_alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
    }
}
