// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The evaluation worker's processes seen from outside (unsandboxed, so
//! that /proc shows their real pids): standby children ready between
//! candidates, a fresh one per candidate, replaced when killed while idle,
//! and all gone with the evaluator; a candidate writing on every inherited
//! descriptor cannot fake a result.

use std::path::Path;
use std::time::Duration;

use galapagos::engine::evaluator::{
    Candidate, Evaluator, Isolation, Sandbox, SubprocessEvaluator, SubprocessParams,
};
use galapagos::engine::task::Task;

/// SIGKILL whole process groups.
fn kill_groups(groups: &[i64]) {
    for g in groups {
        if let Some(pid) = i32::try_from(*g)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// True when `pid` exists and is not a zombie.
fn process_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

const VALUE_EVALUATOR: &str = r#"
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {"combined_score": mod.value()}
"#;

fn value_task() -> (tempfile::TempDir, Task) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("evaluator.py"), VALUE_EVALUATOR).expect("write");
    std::fs::write(
        dir.path().join("initial_program.py"),
        "def value():\n    return 0.25\n",
    )
    .expect("write");
    let task = Task::load(dir.path()).expect("task loads");
    (dir, task)
}

fn value_candidate(id: u64, value: f64) -> Candidate {
    Candidate {
        id,
        content: format!("def value():\n    return {value}\n").into(),
    }
}

/// Without the sandbox: these tests look at the worker's process tree
/// from outside (the pids a candidate sees in the sandbox are its own
/// namespace's).
fn unsandboxed() -> SubprocessParams {
    SubprocessParams {
        isolation: Isolation {
            sandbox: Sandbox::None,
            ..Isolation::default()
        },
        ..SubprocessParams::default()
    }
}

/// Children of `pid` that are alive (not zombies), from /proc.
fn live_children(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .filter(|p| alive(*p))
        .collect()
}

fn alive(pid: u32) -> bool {
    process_running(pid)
}

/// Waits up to 20 s for `cond` (forking and warming a standby child can take seconds on a loaded machine).
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..400 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}

/// The worker's zygote (its one child) and the zygote's live children
/// (the standby children waiting for candidates).
fn zygote_and_standbys(worker: u32) -> Option<(u32, Vec<u32>)> {
    let children = live_children(worker);
    let [zygote] = children.as_slice() else {
        return None;
    };
    Some((*zygote, live_children(*zygote)))
}

fn standbys(worker: u32) -> Vec<u32> {
    zygote_and_standbys(worker)
        .map(|(_, s)| s)
        .unwrap_or_default()
}

/// A candidate whose score is the pid of the process evaluating it.
fn pid_candidate(id: u64) -> Candidate {
    Candidate {
        id,
        content: "import os\ndef value():\n    return os.getpid()\n"
            .to_owned()
            .into(),
    }
}

#[tokio::test]
async fn standby_children_are_ready_between_candidates_and_each_candidate_gets_a_fresh_one() {
    if !Path::new("/proc/self/task").exists() {
        return; // needs Linux /proc to see the worker's children
    }
    let (_dir, task) = value_task();
    let ev = SubprocessEvaluator::new(&task, unsandboxed(), 1);
    let e = ev.evaluate(&pid_candidate(1)).await;
    assert!(e.valid, "{e:?}");
    let first = e.scores["combined_score"] as u32;
    let worker = ev.worker_pids()[0];
    assert!(
        eventually(|| !alive(first)).await,
        "the child that evaluated is killed"
    );
    // Two standby children wait, forked by the worker's zygote.
    assert!(eventually(|| standbys(worker).len() == 2).await);
    let before = standbys(worker);
    let e = ev.evaluate(&pid_candidate(2)).await;
    let second = e.scores["combined_score"] as u32;
    assert!(before.contains(&second), "a waiting child took it");
    assert!(
        eventually(|| !alive(second)).await,
        "the child that evaluated must be gone"
    );
    assert_eq!(
        before.iter().filter(|p| alive(**p)).count(),
        1,
        "the other one still waits"
    );
    assert!(eventually(|| standbys(worker).len() == 2).await);
    // A candidate that changes module state cannot affect the next one:
    // each runs in its own child forked from the clean zygote.
    let e = ev
        .evaluate(&Candidate {
            id: 3,
            content: "import evaluator\nevaluator.evaluate = None\ndef value():\n    return 0.1\n"
                .to_owned()
                .into(),
        })
        .await;
    assert!(e.valid, "{e:?}");
    let e = ev.evaluate(&value_candidate(4, 0.3)).await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.scores["combined_score"], 0.3);
}

#[tokio::test]
async fn standbys_killed_while_idle_are_replaced_and_all_die_with_the_evaluator() {
    if !Path::new("/proc/self/task").exists() {
        return;
    }
    let (_dir, task) = value_task();
    let ev = SubprocessEvaluator::new(&task, unsandboxed(), 1);
    assert!(ev.evaluate(&value_candidate(1, 0.5)).await.valid);
    let worker = ev.worker_pids()[0];
    assert!(eventually(|| standbys(worker).len() == 2).await);
    let killed = standbys(worker);
    let groups: Vec<i64> = killed.iter().map(|p| i64::from(*p)).collect();
    kill_groups(&groups);
    assert!(eventually(|| killed.iter().all(|p| !alive(*p))).await);
    let e = ev.evaluate(&value_candidate(2, 0.625)).await;
    assert!(e.valid, "{e:?}");
    assert_eq!(e.scores["combined_score"], 0.625);
    assert_eq!(ev.worker_pids(), vec![worker], "the worker itself survives");
    assert!(eventually(|| standbys(worker).len() == 2).await);
    let (zygote, waiting) = zygote_and_standbys(worker).expect("a zygote");
    drop(ev);
    assert!(
        eventually(|| !alive(worker)).await,
        "worker survived the drop"
    );
    assert!(eventually(|| !alive(zygote)).await, "zygote survived");
    for standby in waiting {
        assert!(
            eventually(|| !alive(standby)).await,
            "idle standby child {standby} survived the evaluator"
        );
    }
}

#[tokio::test]
async fn candidate_faking_completion_is_invalid() {
    // The child's completion pipe is an inherited fd; a candidate that
    // writes to every fd it finds must not produce a bogus result.
    let (_dir, task) = value_task();
    let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
    let program = "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'1')\n    except OSError:\n        pass\nos._exit(0)\n";
    let e = ev
        .evaluate(&Candidate {
            id: 1,
            content: program.to_owned().into(),
        })
        .await;
    assert!(!e.valid, "{e:?}");
    assert!(e.error.is_some());
    let e = ev.evaluate(&value_candidate(2, 0.5)).await;
    assert!(e.valid, "{e:?}");
}
