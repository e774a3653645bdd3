//! Scoring apart from the candidate: the shipped tasks' evaluators run the
//! candidate's code in a process of its own (`galapagos_eval`), so what a
//! candidate does to the evaluator's code, data, `builtins` or libraries
//! stays in its own process. Each test is a real run (the CLI, a loopback
//! model server proposing the same program as every child), as in
//! `tests/sandbox.rs`.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use common::hostile::{Hostile, Outcome};

/// Runs the shipped circle_packing evaluator's checks against themselves:
/// while it is imported, it finds the evaluator's module (in `sys.modules`,
/// up the call stack, and through the garbage collector) and replaces its
/// check and the `math` functions it uses, so that any packing passes;
/// then its packing is 26 circles of radius 0.5 on top of each other (a
/// sum of 13, five times the target). (A reply replaces the program's
/// EVOLVE-BLOCK: `run_packing()` below it calls these two functions.)
const PATCHER: &str = r#"import gc, math, sys, types

def _accept(rows):
    return None

patched = []
frame = sys._getframe()
while frame is not None:
    if "check_disjoint" in frame.f_globals:
        frame.f_globals["check_disjoint"] = _accept
        patched.append("frame " + frame.f_globals.get("__name__", "?"))
    frame = frame.f_back
for name, module in list(sys.modules.items()):
    if isinstance(module, types.ModuleType) and hasattr(module, "check_disjoint"):
        module.check_disjoint = _accept
        patched.append("sys.modules " + name)
for obj in gc.get_objects():
    if isinstance(obj, dict) and "check_disjoint" in obj and obj.get("check_disjoint") is not _accept:
        obj["check_disjoint"] = _accept
        patched.append("gc dict")
math.dist = lambda a, b: 10.0
math.isfinite = lambda v: True
print("patched:", patched)

def construct_centers():
    return [(0.5, 0.5)] * 26

def compute_radii(centers):
    return [0.5] * 26
"#;

#[test]
fn a_candidate_that_patches_the_circle_packing_checks_gains_nothing() {
    let hostile = Hostile::with_task("circle_packing");
    let outcome = hostile.run(PATCHER, "", 3);
    assert!(
        outcome.success,
        "the run failed:\n{}\n{}",
        outcome.stdout, outcome.stderr
    );
    let initial = outcome
        .genomes
        .iter()
        .find(|g| g["iteration"] == 0)
        .unwrap();
    assert!(initial["valid"] == true, "{}", Outcome::evidence(initial));
    let children = outcome.children();
    assert!(children.len() >= 3, "{} children", children.len());
    for child in children {
        let evidence = Outcome::evidence(child);
        assert!(
            evidence.contains("patched: ['"),
            "the patches ran (something was found to patch): {evidence}"
        );
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .contains("circles 0 and 1 overlap"),
            "{evidence}"
        );
        assert!(
            child["scores"]["combined_score"].as_f64().unwrap_or(0.0) <= 0.0,
            "{evidence}"
        );
    }
    outcome.assert_no_secret();
}

/// A poor but valid packing of its own (26 circles of radius 0.01, combined
/// score ~0.1) and a process left behind (forked twice, own session, holding
/// no descriptor it inherited) that, once its own candidate is scored,
/// writes a better packing (25 circles of radius 0.1 on a grid and one of
/// radius 0: combined score ~0.95) as a helper result frame on every pipe
/// of every process of the run's evaluator it can open, for as long as
/// later candidates are scored. (A candidate writing a result on its own channel is no more than
/// returning it.)
const HELPER_FORGER: &str = r#"import json, os, sys, time

GRID = [[0.1 + 0.2 * i, 0.1 + 0.2 * j] for i in range(5) for j in range(5)] + [[0.0, 0.0]]
FORGED = json.dumps({"ok": [GRID, [0.1] * 25 + [0.0]]}).encode()
FORGED = len(FORGED).to_bytes(8, "big") + FORGED

# This run's evaluation processes (forks of its worker, whose command line
# names the run's private dirs): the target, and nothing else on the machine.
RUN = open("/proc/self/cmdline", "rb").read()

def forge():
    opened = 0
    me = os.readlink("/proc/self")  # its pid as this /proc numbers it
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read() != RUN:
                continue
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(path).startswith("pipe:"):
                    continue
                w = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            opened += 1
            try:
                os.write(w, FORGED)
            except OSError:
                pass
            os.close(w)
    return opened

def construct_centers():
    return [[0.02 + 0.04 * (i % 13), 0.02 + 0.5 * (i // 13)] for i in range(26)]

def compute_radii(centers):
    print("pipes opened now:", forge())
    sys.stdout.flush()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            # Nothing inherited: only what it can open now reaches anything.
            os.closerange(3, 1024)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            # Its own candidate is scored by then.
            time.sleep(0.6)
            deadline = time.time() + 15
            while time.time() < deadline:
                forge()
                time.sleep(0.02)
        os._exit(0)
    os.wait()
    time.sleep(0.3)
    return [0.01] * 26
"#;

#[test]
fn a_leftover_process_cannot_forge_a_later_candidates_helper_result() {
    // Without the run's sandbox the leftovers live on through later
    // candidates: only the helper keeps them off its result pipes.
    for settings in ["sandbox: none", ""] {
        if settings == "sandbox: none" && running_as_root() && !landlock() {
            eprintln!(
                "SKIPPED (loudly): `sandbox: none` as root on a kernel without Landlock: the helper \
                 cannot keep a root process without a sandbox off other processes' pipes"
            );
            continue;
        }
        let hostile = Hostile::with_task("circle_packing");
        let outcome = hostile.run(HELPER_FORGER, settings, 5);
        assert!(
            outcome.success,
            "{settings}: the run failed:\n{}\n{}",
            outcome.stdout, outcome.stderr
        );
        let children = outcome.children();
        assert!(children.len() >= 5, "{} children", children.len());
        for child in children {
            let evidence = Outcome::evidence(child);
            assert!(child["valid"] == true, "{settings}: {evidence}");
            assert!(
                evidence.contains("pipes opened now: 0"),
                "{settings}: no pipe of another process could be opened: {evidence}"
            );
            let score = child["scores"]["combined_score"].as_f64().unwrap();
            assert!(
                (score - 0.26 / 2.6359830773881194).abs() < 1e-9,
                "{settings}: a forged result was taken ({score}): {evidence}"
            );
        }
        outcome.assert_no_secret();
    }
}

#[test]
fn a_result_that_is_not_plain_data_makes_the_candidate_invalid_saying_so() {
    let hostile = Hostile::with_task("circle_packing");
    let program = "class Lying(float):\n\
         \x20   def __lt__(self, other):\n\
         \x20       return False\n\
         \x20   def __gt__(self, other):\n\
         \x20       return False\n\
         def construct_centers():\n\
         \x20   return [(0.5, 0.5)] * 26\n\
         def compute_radii(centers):\n\
         \x20   return [Lying(0.5)] * 26\n";
    let outcome = hostile.run(program, "", 2);
    assert!(outcome.success, "{}", outcome.stderr);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"].as_str().unwrap_or("").contains(
                "construct() returned a value of type candidate_program.Lying (at result[0][2]), \
                 which is not plain data"
            ),
            "{evidence}"
        );
    }
}

fn running_as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Does the kernel have Landlock (its ABI version is 1 or more)?
fn landlock() -> bool {
    let probe = "import ctypes\n\
                 libc = ctypes.CDLL(None, use_errno=True)\n\
                 libc.syscall.restype = ctypes.c_long\n\
                 print(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))\n";
    std::process::Command::new("python3")
        .args(["-c", probe])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<i64>()
                .ok()
        })
        .is_some_and(|abi| abi >= 1)
}

#[test]
fn a_limit_hit_in_the_candidates_process_is_named_on_the_genome() {
    let hostile = Hostile::with_task("circle_packing");
    let memory = "def construct_centers():\n\
         \x20   return [(0.5, 0.5)] * 26\n\
         def compute_radii(centers):\n\
         \x20   block = bytearray(4 << 30)\n\
         \x20   return [0.0] * 26\n";
    let cpu = "def construct_centers():\n\
         \x20   while True:\n\
         \x20       pass\n\
         def compute_radii(centers):\n\
         \x20   return [0.0] * 26\n";
    for (program, settings, error) in [
        (
            memory,
            "",
            "exceeded the 4096 MiB memory limit (evaluator raised CandidateError: construct() raised MemoryError",
        ),
        (
            cpu,
            "cpu_limit_secs: 1.0",
            "exceeded the 1 s CPU time limit (evaluator raised CandidateError: construct()'s process was killed by SIGXCPU",
        ),
    ] {
        let outcome = hostile.run(program, settings, 1);
        assert!(outcome.success, "{}", outcome.stderr);
        for child in outcome.children() {
            let evidence = Outcome::evidence(child);
            assert!(child["valid"] == false, "{evidence}");
            assert!(
                child["error"].as_str().unwrap_or("").starts_with(error),
                "{evidence}"
            );
        }
    }
}

/// On the shipped ShinkaEvolve-layout task (the command evaluator): while
/// it is imported, the program replaces the evaluator's error measure
/// (found up the call stack and in `sys.modules`) with one that reports
/// no error, and its own approx() is a constant 0.
const SHINKA_PATCHER: &str = r#"import sys

def _no_error(values, xs):
    return [(x, 0.0) for x in xs]

patched = []
frame = sys._getframe()
while frame is not None:
    if "errors" in frame.f_globals and "judge" in frame.f_globals:
        frame.f_globals["errors"] = _no_error
        patched.append("frame " + frame.f_globals.get("__name__", "?"))
    frame = frame.f_back
for name, module in list(sys.modules.items()):
    if hasattr(module, "errors") and hasattr(module, "judge"):
        module.errors = _no_error
        patched.append("sys.modules " + name)
print("patched:", patched)

def approx(x):
    return 0.0
"#;

#[test]
fn a_candidate_that_patches_the_shinka_task_checks_gains_nothing() {
    let hostile = Hostile::with_task("exp_poly_shinka");
    let outcome = hostile.run(SHINKA_PATCHER, "", 2);
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    let children = outcome.children();
    assert!(children.len() >= 2, "{} children", children.len());
    for child in children {
        let evidence = Outcome::evidence(child);
        assert!(evidence.contains("patched: ['"), "{evidence}");
        let score = child["scores"]["combined_score"].as_f64().unwrap_or(0.0);
        // The constant 0 is ~1.3 away from exp on average: a score near
        // 1 / (1 + 20 * 1.3), never the 1.0 of "no error".
        assert!(score < 0.1, "{score}: {evidence}");
    }
    outcome.assert_no_secret();
}
