#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The `slurm` evaluator's sandbox on the nodes, through real runs on the
//! one-node test cluster (`common::slurm`) with a hostile candidate
//! (`common::hostile`: a loopback model server proposing it, the model key
//! in the run's environment, a fake HOME with an SSH key). In both
//! placements the candidate cannot find the key, read the SSH key, write
//! outside its scratch dir, change the task's evaluator, reach a loopback
//! listener or leave a process behind; the run goes on and the genome says
//! why. The same probes with `sandbox: none` get through, so the probes
//! work. Limits are named on the genome, and a node without bubblewrap
//! stops the run before its first iteration, naming the node.

mod common;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use common::hostile::{Hostile, Outcome, SECRET, SSH_KEY, processes_with, stopped_at_the_quota};
use common::slurm::{Cluster, cluster, eventually};

/// Scores the probes the candidate's `run()` reports (1: it got through).
const PROBE_EVALUATOR: &str = r#"import importlib.util


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got = module.run()
    if not isinstance(got, dict):
        return {"combined_score": float(got)}
    return dict({"combined_score": 1.0}, **{name: float(v) for name, v in got.items()})
"#;

/// The probes, each printing what happened (`@…@` filled in per test).
const PROBES: &str = r#"import glob, os, socket, sys, time


def key():
    found = [v for k, v in os.environ.items() if k == "OPENAI_API_KEY"]
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        for item in data.split(b"\0"):
            if item.startswith(b"OPENAI_API_KEY="):
                found.append(item.decode().split("=", 1)[1])
    if not found:
        raise LookupError("no OPENAI_API_KEY in its environment or in any /proc/*/environ it can read")
    print("the key:", found[0])


def ssh():
    with open("@SSH@") as f:
        print("the SSH key:", f.read())


def write():
    with open(os.path.join("@TASK@", "planted.txt"), "w") as f:
        f.write("planted by a candidate")


def evaluator():
    with open(os.path.join("@TASK@", "evaluator.py"), "a") as f:
        f.write("\n# changed by a candidate\n")


def network():
    socket.create_connection(("127.0.0.1", @PORT@), timeout=3).close()


def survivor():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "@MARKER@"])
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.3)


def run():
    got = {}
    for name in ["key", "ssh", "write", "evaluator", "network", "survivor"]:
        try:
            globals()[name]()
            got[name] = 1
            print(f"{name}: got through")
        except Exception as exc:
            got[name] = 0
            print(f"{name}: blocked: {type(exc).__name__}: {exc}")
    return got
"#;

/// The probes that must fail in the sandbox and get through without it.
const PROBED: [&str; 5] = ["key", "ssh", "write", "evaluator", "network"];

/// A hostile set-up whose task scores [`PROBES`].
fn probing() -> Hostile {
    let hostile = Hostile::new();
    std::fs::write(hostile.task.join("evaluator.py"), PROBE_EVALUATOR).unwrap();
    hostile
}

/// The probe program for `hostile`, reaching for `port` and tagging its
/// left-behind process with `marker`.
fn probe_program(hostile: &Hostile, port: u16, marker: &str) -> String {
    PROBES
        .replace(
            "@SSH@",
            &hostile.home.join(".ssh/id_ed25519").display().to_string(),
        )
        .replace("@TASK@", &hostile.task.display().to_string())
        .replace("@PORT@", &port.to_string())
        .replace("@MARKER@", marker)
}

/// A run of `iterations` on the cluster with the evaluator entries `block`
/// (after `kind: slurm`).
fn slurm_run(
    hostile: &Hostile,
    cluster: &Cluster,
    program: &str,
    block: &str,
    iterations: u32,
) -> Outcome {
    let conf = cluster.conf.display().to_string();
    hostile.run_evaluator(
        program,
        &format!("kind: slurm, timeout_secs: 30.0, {block}"),
        iterations,
        &[("SLURM_CONF", &conf)],
    )
}

/// The run finished and its one child is the probe's genome.
fn probe_genome(outcome: &Outcome) -> &serde_json::Value {
    assert!(
        outcome.success,
        "the run failed:\n{}\n{}",
        outcome.stdout, outcome.stderr
    );
    let children = outcome.children();
    assert_eq!(children.len(), 1, "{:?}", outcome.genomes);
    children[0]
}

fn score(genome: &serde_json::Value, name: &str) -> f64 {
    genome["scores"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} score: {genome}"))
}

#[test]
fn a_hostile_candidate_on_a_node_is_held_by_the_sandbox_in_both_placements() {
    let Some(cluster) = cluster() else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for mode in ["pool", "job"] {
        let hostile = probing();
        let evaluator = std::fs::read_to_string(hostile.task.join("evaluator.py")).unwrap();
        let marker = format!("galapagos-slurm-sandbox-{mode}-{}", std::process::id());
        let program = probe_program(&hostile, port, &marker);
        let outcome = slurm_run(&hostile, cluster, &program, &format!("mode: {mode}"), 1);
        let genome = probe_genome(&outcome);
        let evidence = Outcome::evidence(genome);
        assert!(genome["valid"] == true, "{mode}: {evidence}");
        for probe in PROBED {
            assert_eq!(score(genome, probe), 0.0, "{mode}: {probe}: {evidence}");
            assert!(
                evidence.contains(&format!("{probe}: blocked: ")),
                "{mode}: the genome says why {probe} failed: {evidence}"
            );
        }
        assert!(
            evidence.contains("Read-only file system"),
            "{mode}: {evidence}"
        );
        assert!(
            genome["placement"]["job_id"]
                .as_str()
                .is_some_and(|j| !j.is_empty()),
            "{mode}: {genome}"
        );
        outcome.assert_no_secret();
        let run_dir = outcome.run_dir.as_deref().unwrap();
        assert!(
            common::hostile::files_containing(run_dir, SSH_KEY.as_bytes()).is_empty(),
            "{mode}: the SSH key reached the run folder"
        );
        assert!(!hostile.task.join("planted.txt").exists(), "{mode}");
        assert_eq!(
            std::fs::read_to_string(hostile.task.join("evaluator.py")).unwrap(),
            evaluator,
            "{mode}: the task's evaluator is unchanged"
        );
        // The double-forked, setsid'd process ended with its candidate.
        std::thread::sleep(Duration::from_millis(500));
        let left = processes_with(&marker);
        for pid in &left {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
        assert!(left.is_empty(), "{mode}: processes left behind: {left:?}");
        assert!(
            !outcome.stdout.contains("without a sandbox")
                && !outcome.stderr.contains("without a sandbox"),
            "{mode}: no warning with the sandbox on: {}",
            outcome.stderr
        );
    }
}

#[test]
fn the_same_probes_get_through_with_sandbox_none_and_the_run_warns() {
    let Some(cluster) = cluster() else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hostile = probing();
    let marker = format!("galapagos-slurm-sandbox-none-{}", std::process::id());
    let program = probe_program(&hostile, port, &marker);
    let outcome = slurm_run(&hostile, cluster, &program, "sandbox: none", 1);
    let left = {
        let mut left = Vec::new();
        eventually(10, || {
            left = processes_with(&marker);
            !left.is_empty()
        });
        left
    };
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    let genome = probe_genome(&outcome);
    let evidence = Outcome::evidence(genome);
    for probe in PROBED {
        assert_eq!(score(genome, probe), 1.0, "{probe}: {evidence}");
    }
    assert!(hostile.task.join("planted.txt").exists());
    assert!(!left.is_empty(), "without the sandbox a process stays");
    assert!(
        format!("{}{}", outcome.stdout, outcome.stderr).contains("without a sandbox")
            || std::fs::read_dir(outcome.run_dir.as_deref().unwrap())
                .unwrap()
                .flatten()
                .any(|e| std::fs::read_to_string(e.path())
                    .is_ok_and(|t| t.contains("without a sandbox"))),
        "the run warns: {}",
        outcome.stderr
    );
}

/// Uses more memory on odd iterations and spins on even ones.
const GREEDY: &str = r#"import os


def run():
    n = int(os.path.basename(__file__).split("_")[1].split(".")[0])
    if n % 2:
        hoard = bytearray(400 << 20)
        return float(len(hoard))
    while True:
        pass
"#;

#[test]
fn limit_hits_on_a_node_are_named_on_the_genome() {
    let Some(cluster) = cluster() else { return };
    let hostile = Hostile::new();
    let outcome = slurm_run(
        &hostile,
        cluster,
        GREEDY,
        "memory_limit_mib: 128, cpu_limit_secs: 2.0",
        2,
    );
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    let errors: Vec<String> = outcome
        .children()
        .iter()
        .map(|g| g["error"].as_str().unwrap_or("").to_owned())
        .collect();
    // Each child and its retry (the card's inner_retry_times).
    assert!(errors.len() >= 2, "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("exceeded the 128 MiB memory limit")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("exceeded the 2 s CPU time limit")),
        "{errors:?}"
    );
    assert!(outcome.children().iter().all(|g| g["valid"] == false));
}

#[test]
fn a_node_without_a_working_bubblewrap_stops_the_run_before_its_first_iteration() {
    let Some(cluster) = cluster() else { return };
    let hostile = Hostile::new();
    // A PATH with Slurm's commands, the interpreter and the allocation's
    // shell tools, but no bwrap.
    let bin = hostile.root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let python = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .unwrap();
    let python = String::from_utf8_lossy(&python.stdout).trim().to_owned();
    std::os::unix::fs::symlink(&python, bin.join("python3")).unwrap();
    for tool in [
        "sbatch", "srun", "squeue", "scancel", "sinfo", "scontrol", "sleep", "stat", "date",
    ] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{tool} is not installed"));
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    let conf = cluster.conf.display().to_string();
    let path = bin.display().to_string();
    let outcome = hostile.run_evaluator(
        "def run():\n    return 1.0\n",
        "kind: slurm, mode: job, timeout_secs: 30.0",
        2,
        &[("SLURM_CONF", &conf), ("PATH", &path)],
    );
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    assert!(!outcome.success, "{text}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let node = host.trim().split('.').next().unwrap();
    assert!(
        text.contains(&format!(
            "the sandbox needs bubblewrap (`bwrap`) on node {node}"
        )) && text.contains("apt-get install bubblewrap")
            && text.contains("sandbox: none"),
        "{text}"
    );
    assert!(text.contains("iterations:  0"), "{text}");
    assert!(
        !text.contains(SECRET) && !text.contains("panicked"),
        "{text}"
    );
    assert!(!Path::new(&hostile.task.join("planted.txt")).exists());

    // A bwrap that cannot make its namespaces (as where the node forbids
    // unprivileged user namespaces): its message, the node and the way out.
    let fake = bin.join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let outcome = hostile.run_evaluator(
        "def run():\n    return 1.0\n",
        "kind: slurm, mode: pool, timeout_secs: 30.0",
        2,
        &[("SLURM_CONF", &conf), ("PATH", &path)],
    );
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    assert!(!outcome.success, "{text}");
    assert!(
        text.contains(&format!(
            "the evaluation cannot start on node {node}: bwrap: setting up uid map: Permission denied"
        )) && text.contains("unprivileged user namespaces")
            && text.contains("sandbox: none"),
        "{text}"
    );
    assert!(text.contains("iterations:  0"), "{text}");
}

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

/// The test cluster runs jobs as the user who submits them, root here (the
/// daemons need it) as in CI: the candidate still runs as `nobody`, held to
/// the process limit, which the kernel does not hold root to.
#[test]
fn three_thousand_forks_on_a_node_stop_at_the_process_limit_when_jobs_run_as_root() {
    let Some(cluster) = cluster() else { return };
    let root = rustix::process::geteuid().is_root();
    let hostile = Hostile::new();
    let outcome = slurm_run(&hostile, cluster, FORK_3000, "", 2);
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(!outcome.children().is_empty(), "{}", outcome.stderr);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "jobs as root: {root}\n{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 256-process limit"),
            "jobs as root: {root}\n{evidence}"
        );
    }
}

/// Writes 1 GiB into each of its program's folder, HOME, TMPDIR and
/// /dev/shm (4 GiB in all), in 8 MiB blocks; when a write fails it says on
/// stderr how much it wrote in all, then fails.
const FILL_4_GIB: &str = r#"import os, sys, tempfile

def run():
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
    return float(written)
"#;

#[test]
fn four_gib_written_everywhere_on_a_node_stops_at_one_quota() {
    let Some(cluster) = cluster() else { return };
    let hostile = Hostile::new();
    let outcome = slurm_run(&hostile, cluster, FILL_4_GIB, "", 2);
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(!outcome.children().is_empty(), "{}", outcome.stderr);
    for child in outcome.children() {
        stopped_at_the_quota(child);
    }
}
