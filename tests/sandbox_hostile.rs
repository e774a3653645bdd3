// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! Hostile candidates against what the sandbox promises beyond isolation:
//! a process limit that holds when galapagos runs as root (as in
//! containers and CI, where these tests run), hidden reference data a
//! candidate cannot find, and measurements the run takes itself rather than
//! from files a candidate can write. Each goes through a real run (the CLI,
//! a loopback model server proposing the attack as every child).

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::host_memory::{HostMemory, Seen};
use common::hostile::{Hostile, ModelServer, Outcome, stopped_at_the_quota};

/// Forks 3,000 processes that wait, then reports how many it started.
const FORK_3000: &str = r#"import os, time

def run():
    started = 0
    for _ in range(3000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        started += 1
    return float(started)
"#;

#[test]
fn three_thousand_forks_stop_at_the_process_limit_even_as_root() {
    let root = rustix::process::geteuid().is_root();
    let hostile = Hostile::new();
    let outcome = hostile.run(FORK_3000, "", 2);
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(outcome.children().len() >= 2, "{}", outcome.stderr);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "as root: {root}\n{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 256-process limit"),
            "as root: {root}\n{evidence}"
        );
    }
    outcome.assert_no_secret();
}

/// A command-evaluator task whose `evaluate.py` runs the candidate (a
/// Python script) in its own process; its metrics are what the candidate
/// printed as JSON. Returns the run's genomes.
fn command_run(
    program: &str,
    evaluator: &str,
    iterations: u32,
) -> (Vec<serde_json::Value>, String) {
    command_run_at(program, evaluator, iterations, None, None)
}

/// [`command_run`] with `--parallel` when given, the run guarded by
/// `memory` when given (killed should the host's memory fall below its
/// floor).
fn command_run_at(
    program: &str,
    evaluator: &str,
    iterations: u32,
    parallel: Option<u32>,
    memory: Option<&HostMemory>,
) -> (Vec<serde_json::Value>, String) {
    let root = tempfile::tempdir().unwrap();
    let (home, task, out) = (
        root.path().join("home"),
        root.path().join("task"),
        root.path().join("runs"),
    );
    for dir in [&home, &task, &out] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(
        task.join("initial_program.py"),
        "# EVOLVE-BLOCK-START\nimport json\nprint(json.dumps({'combined_score': 0.5}))\n# EVOLVE-BLOCK-END\n",
    )
    .unwrap();
    let server = ModelServer::start(&format!("```python\n{program}\n```"));
    let card = root.path().join("card.yaml");
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap();
    let (start, end) = (
        base.find("evaluator:").unwrap(),
        base.find("memory:").unwrap(),
    );
    std::fs::write(
        &card,
        format!(
            "{}evaluator: {{kind: command, argv: [python3, '{{program}}'], timeout_secs: 30.0{evaluator}}}\n{}",
            &base[..start],
            &base[end..]
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("run")
        .arg(&card)
        .arg("--task")
        .arg(&task)
        .args(["--iterations", &iterations.to_string(), "--quiet", "--out"])
        .arg(&out)
        .args(
            parallel
                .map(|p| ["--parallel".to_owned(), p.to_string()])
                .into_iter()
                .flatten(),
        )
        .args([
            "--api-base",
            &format!("http://127.0.0.1:{}/v1", server.port),
            "--model",
            "hostile-coder",
        ])
        .env("OPENAI_API_KEY", common::hostile::SECRET)
        .env("HOME", &home)
        .current_dir(root.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(memory) = memory {
        memory.guard(o.id());
    }
    let o = o.wait_with_output().unwrap();
    if let Some(memory) = memory {
        memory.unguard();
    }
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        !memory.is_some_and(HostMemory::breached),
        "the run was killed: the host's available memory fell below the floor"
    );
    assert!(
        o.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&o.stdout)
    );
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let genomes = std::fs::read_to_string(run_dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (genomes, stderr)
}

#[test]
fn three_thousand_forks_of_a_command_stop_at_the_process_limit_even_as_root() {
    let program = "import json, os, time\n\
                   started = 0\n\
                   for _ in range(3000):\n\
                   \x20   if os.fork() == 0:\n\
                   \x20       time.sleep(60)\n\
                   \x20       os._exit(0)\n\
                   \x20   started += 1\n\
                   print(json.dumps({'combined_score': float(started)}))\n";
    let (genomes, stderr) = command_run(program, "", 2);
    let children: Vec<_> = genomes.iter().filter(|g| g["iteration"] != 0).collect();
    assert!(children.len() >= 2, "{stderr}");
    for child in children {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 256-process limit"),
            "{evidence}"
        );
    }
}

#[test]
fn a_candidate_cannot_make_its_cpu_time_unreadable_to_the_run() {
    // Before the run measured CPU time itself, a shell in the sandbox wrote
    // it into the candidate's folder after the command, where the candidate
    // could put a directory in its way: the CPU time limit went unnamed.
    let program = "import os, sys\n\
                   os.mkdir(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), '.galapagos-cpu-time'))\n\
                   while True:\n\
                   \x20   pass\n";
    let (genomes, stderr) = command_run(program, ", cpu_limit_secs: 1.0", 1);
    let children: Vec<_> = genomes.iter().filter(|g| g["iteration"] != 0).collect();
    assert!(!children.is_empty(), "{stderr}");
    for child in children {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 1 s CPU time limit"),
            "{evidence}"
        );
    }
}

/// Looks everywhere it can for an answer of the form `ANSWER-` and 32 hex
/// digits: the task folder (every file under it), `/proc/self` (its
/// environment, command line and all of its readable memory), its parent's
/// memory and environment, and its own environment. Returns what it found.
const SEARCH: &str = r#"import os, re

PATTERN = re.compile(rb"ANSWER-[0-9a-f]{32}")

def _scan(data, where, found):
    for m in PATTERN.finditer(data):
        found.append(f"{where}: {m.group().decode()}")

def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""

def _memory(pid, where, found):
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
    except OSError:
        return
    with mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                _scan(mem.read(end - start), where, found)
            except (OSError, ValueError, OverflowError):
                pass

def search(task_dir):
    found = []
    for top, dirs, files in os.walk(task_dir):
        for name in files:
            _scan(_read(os.path.join(top, name)), "task folder", found)
    _scan(_read(os.path.join(task_dir, "hidden", "answer.txt")), "hidden file", found)
    for name in ("environ", "cmdline"):
        _scan(_read(f"/proc/self/{name}"), f"/proc/self/{name}", found)
        _scan(_read(f"/proc/{os.getppid()}/{name}"), f"parent's {name}", found)
    _scan("\n".join(f"{k}={v}" for k, v in os.environ.items()).encode(), "environment", found)
    _memory("self", "own memory", found)
    _memory(os.getppid(), "parent's memory", found)
    return sorted(set(found))
"#;

/// Holds the answer in its memory from its import on, reads it again to
/// score, and runs the candidate's search through `galapagos_eval`.
const READS_THE_ANSWER: &str = r#"import os
import galapagos_eval

HERE = os.path.dirname(os.path.abspath(__file__))
ANSWER = open(os.path.join(HERE, "hidden", "answer.txt")).read().strip()


def evaluate(program_path):
    answer = open(os.path.join(HERE, "hidden", "answer.txt")).read().strip()
    found = galapagos_eval.run(program_path, "search", HERE, timeout=60)
    print("found:", found)
    leaked = [f for f in found if answer in f or ANSWER in f]
    return {
        "combined_score": 1.0 if not leaked else 0.0,
        "leaks": float(len(leaked)),
        "evaluator_read_it": 1.0 if answer == ANSWER and len(answer) == 39 else 0.0,
    }
"#;

#[test]
fn a_candidate_searching_everywhere_finds_no_hidden_answer_while_the_evaluator_reads_it() {
    let hostile = Hostile::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let answer = format!(
        "ANSWER-{:032x}",
        (u128::from(std::process::id()) << 96) ^ nanos
    );
    std::fs::create_dir_all(hostile.task.join("hidden")).unwrap();
    std::fs::write(
        hostile.task.join("hidden/answer.txt"),
        format!("{answer}\n"),
    )
    .unwrap();
    // A task description that holds it too, hidden by a glob: never shown
    // to the model.
    std::fs::write(
        hostile.task.join("task.md"),
        format!("The answer is {answer}.\n"),
    )
    .unwrap();
    std::fs::write(hostile.task.join("config.yaml"), "hidden: ['task.md']\n").unwrap();
    std::fs::write(hostile.task.join("evaluator.py"), READS_THE_ANSWER).unwrap();
    let initial =
        format!("# EVOLVE-BLOCK-START\n{SEARCH}# the initial program\n# EVOLVE-BLOCK-END\n");
    std::fs::write(hostile.task.join("initial_program.py"), &initial).unwrap();
    let outcome = hostile.run(SEARCH, "", 2);
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(outcome.genomes.len() >= 3, "{}", outcome.stderr);
    for genome in &outcome.genomes {
        let evidence = Outcome::evidence(genome);
        assert!(genome["valid"] == true, "{evidence}");
        assert_eq!(genome["scores"]["leaks"].as_f64(), Some(0.0), "{evidence}");
        assert_eq!(
            genome["scores"]["evaluator_read_it"].as_f64(),
            Some(1.0),
            "{evidence}"
        );
        assert!(!evidence.contains(&answer), "{evidence}");
    }
    for body in &outcome.requests {
        assert!(
            !body.contains(&answer),
            "the hidden answer reached the model: {body}"
        );
    }
    assert!(!outcome.requests.is_empty());
}

/// Writes 1 GiB into each of its program's folder, HOME, TMPDIR and
/// /dev/shm (4 GiB in all), in 8 MiB blocks.
const FILL_4_GIB: &str = r#"import os, tempfile

def run():
    places = [os.path.dirname(os.path.abspath(__file__)), os.path.expanduser("~"),
              tempfile.gettempdir(), "/dev/shm"]
    block = b"x" * (8 << 20)
    written = 0
    for i, place in enumerate(places):
        with open(os.path.join(place, f"fill-{i}"), "wb") as f:
            for _ in range(128):
                f.write(block)
                f.flush()
                written += len(block)
    return float(written)
"#;

/// The writable-space quota of every candidate here (the default).
const QUOTA_MIB: u64 = 512;

/// What a run of four candidates at once may take from the host's available
/// memory beyond their four quotas: the run's own processes (galapagos, the
/// worker, four interpreters each holding an 8 MiB block: a few hundred MiB)
/// and what the rest of the machine allocates meanwhile (other tests, a
/// build's compiler: a GiB or two). Without the quota the four would take
/// 4 x 4 GiB.
const HOST_MARGIN_MIB: u64 = 2048;

/// The tests that fill in-memory file systems measure the host's memory:
/// one at a time.
static HOST_MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Watch the host's memory for runs of four candidates at once: the floor
/// is MemAvailable now less four quotas and [`HOST_MARGIN_MIB`].
fn watch_four_at_once() -> HostMemory {
    HostMemory::watch(4 * QUOTA_MIB + HOST_MARGIN_MIB)
}

/// The host kept more available memory than four quotas (and the margin)
/// take, throughout.
fn assert_host_held(seen: &Seen) {
    println!(
        "MemAvailable {} MiB at the start, {} MiB at the lowest (floor {} MiB); \
         in-memory file systems {} MiB at the start, {} MiB at the highest; {} samples",
        seen.start_available,
        seen.min_available,
        seen.floor,
        seen.start_shmem,
        seen.max_shmem,
        seen.samples
    );
    assert!(seen.samples > 0, "{seen:?}");
    assert!(
        !seen.breached && seen.min_available >= seen.floor,
        "the host's available memory fell from {} MiB to {} MiB, below {} MiB \
         (4 x the {QUOTA_MIB} MiB quota and a {HOST_MARGIN_MIB} MiB margin): \
         the run was killed at the floor: {seen:?}",
        seen.start_available,
        seen.min_available,
        seen.floor,
    );
}

#[test]
fn four_gib_written_everywhere_a_candidate_can_stops_at_the_quota_and_four_at_once_hold_the_host() {
    let _one_at_a_time = HOST_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let hostile = Hostile::new();
    let memory = watch_four_at_once();
    // One candidate at a time, then four at once, each filling what it can
    // write.
    let outcome = hostile.run_guarded(
        FILL_4_GIB,
        "kind: subprocess, timeout_secs: 20.0",
        8,
        1,
        &memory,
    );
    let outcome4 = {
        let card_parallel = "kind: subprocess, timeout_secs: 60.0";
        hostile.run_guarded(FILL_4_GIB, card_parallel, 8, 4, &memory)
    };
    let seen = memory.finish();
    assert_host_held(&seen);
    for o in [&outcome, &outcome4] {
        assert!(o.success, "{}\n{}", o.stdout, o.stderr);
        assert!(o.children().len() >= 8, "{}", o.stderr);
        for child in o.children() {
            let evidence = Outcome::evidence(child);
            assert!(child["valid"] == false, "{evidence}");
            assert!(
                child["error"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("exceeded the 512 MiB writable-space quota"),
                "{evidence}"
            );
        }
    }
    // At most 4 x 512 MiB of scratch at once, and some slack for what else
    // runs on the machine (the tests beside this one).
    let rise = seen.max_shmem.saturating_sub(seen.start_shmem);
    assert!(
        rise < 4 * 512 + 512,
        "in-memory file systems grew by {rise} MiB (from {} MiB)",
        seen.start_shmem
    );
    println!(
        "in-memory file systems grew by at most {rise} MiB, from {} MiB",
        seen.start_shmem
    );
}

/// Writes 1 GiB into each of its own folder, HOME, TMPDIR and /dev/shm
/// (4 GiB in all), in 8 MiB blocks; when a write fails it says on stderr
/// how much it wrote in all, then fails.
const FILL_4_GIB_COMMAND: &str = r#"import os, sys, tempfile

places = [os.path.dirname(os.path.abspath(__file__)), os.path.expanduser("~"),
          tempfile.gettempdir(), "/dev/shm"]
block = b"x" * (8 << 20)
written = 0
try:
    for i, place in enumerate(places):
        with open(os.path.join(place, f"fill-{i}"), "wb") as f:
            for _ in range(128):
                f.write(block)
                f.flush()
                written += len(block)
except OSError:
    print(f"wrote {written >> 20} MiB in all", file=sys.stderr)
    raise
print('{"combined_score": 1.0}')
"#;

/// Every child of a command run of [`FILL_4_GIB_COMMAND`] failed at the
/// quota, named with its size, having written at most the quota in all.
fn assert_command_stopped_at_the_quota(
    genomes: &[serde_json::Value],
    stderr: &str,
    at_least: usize,
) {
    let children: Vec<&serde_json::Value> = genomes
        .iter()
        .filter(|g| g["iteration"].as_u64() > Some(0))
        .collect();
    assert!(children.len() >= at_least, "{stderr}");
    for child in children {
        // Its folder, HOME, TMPDIR and /dev/shm share the one quota.
        let wrote = stopped_at_the_quota(child);
        println!("a command candidate wrote {wrote} MiB in all before its write failed");
    }
}

#[test]
fn four_gib_written_everywhere_a_command_can_stops_at_one_quota() {
    let _one_at_a_time = HOST_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let (genomes, stderr) = command_run(FILL_4_GIB_COMMAND, "", 2);
    assert_command_stopped_at_the_quota(&genomes, &stderr, 2);
}

#[test]
fn four_commands_at_once_writing_4_gib_each_hold_the_host() {
    let _one_at_a_time = HOST_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let memory = watch_four_at_once();
    let (genomes, stderr) = command_run_at(FILL_4_GIB_COMMAND, "", 8, Some(4), Some(&memory));
    let seen = memory.finish();
    assert_host_held(&seen);
    assert_command_stopped_at_the_quota(&genomes, &stderr, 8);
}
