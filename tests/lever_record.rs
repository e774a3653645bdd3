//! What the cost levers leave in a run's record: the children the novelty
//! gate rejected (the summary, `summary.json`, the command line's run
//! summary), and the run's wall time over its invocations, which the
//! wall-time cap of `general.stop` counts across a stop and a resume.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a panic here is a failed test"
)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use galapagos::engine::events::RunStatus;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn summary_json(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap()
}

/// `galapagos run novelty_gate` on the quadrature task with the offline
/// model (a short program: a one-constant change is above the threshold
/// often): the rejected children are counted in the command line's summary
/// and in `summary.json`, as many as `genomes.jsonl` records as rejected.
#[test]
fn the_rejected_count_is_in_the_summary_and_summary_json() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = tmp.path().join("runs");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("run")
        .arg(root().join("cards/novelty_gate.yaml"))
        .arg("--task")
        .arg(root().join("assets/tasks/quadrature"))
        .args(["--iterations", "25", "--quiet"])
        .arg("--out")
        .arg(&out)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recorded = galapagos::engine::archive::read_genomes(&run_dir.join("genomes.jsonl"))
        .unwrap()
        .iter()
        .filter(|g| g.rejected.is_some())
        .count() as u64;
    assert!(
        recorded > 0,
        "the gate rejected nothing in 25 iterations:\n{stdout}"
    );
    let json = summary_json(&run_dir);
    assert_eq!(json["rejected"].as_u64(), Some(recorded), "{json}");
    assert!(json["invalid"].as_u64().unwrap() >= recorded, "{json}");
    assert!(
        stdout.contains(&format!(
            "invalid, of which {recorded} rejected before evaluation)"
        )),
        "{stdout}"
    );

    // Resumed for 10 more: the count goes on from the recorded genomes.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("resume")
        .arg(&run_dir)
        .args(["--iterations", "35", "--quiet"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let all = galapagos::engine::archive::read_genomes(&run_dir.join("genomes.jsonl"))
        .unwrap()
        .iter()
        .filter(|g| g.rejected.is_some())
        .count() as u64;
    assert_eq!(summary_json(&run_dir)["rejected"].as_u64(), Some(all));
}

/// A run with a wall-time cap of 4 s is stopped by hand after 2 s of its
/// own, then resumed: the resumed invocation stops at the cap counting the
/// first one's time (so well before 4 s of its own), and the record's wall
/// time is the sum of both.
#[test]
fn the_wall_time_cap_counts_the_runs_time_across_a_resume() {
    let registry = registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let run_dir = tmp.path().join("run");
    let cap = 4.0;
    let mut c = with_slow_evaluator(card("best_of_n.yaml", &registry), 50);
    c.general.max_iterations = 100_000;
    c.general.stop.max_wall_secs = Some(cap);

    let t0 = Instant::now();
    let handle = spawn(plan_in(c, &task, Some(run_dir.clone()), &registry));
    let mut asked = false;
    let (_, first) = collect(handle, |_, h| {
        if !asked && t0.elapsed() >= Duration::from_secs(2) {
            stop(h);
            asked = true;
        }
    });
    assert_eq!(first.status, RunStatus::Stopped, "{first:?}");
    assert!(
        first.run_wall_secs >= 1.0 && first.run_wall_secs < cap,
        "{first:?}"
    );
    let recorded = summary_json(&run_dir)["run_wall_secs"].as_f64().unwrap();
    assert!((recorded - first.run_wall_secs).abs() < 1e-9);

    let (_, resumed) = collect(
        spawn(resume_request(&run_dir, 100_000, &registry)),
        |_, _| {},
    );
    assert!(
        matches!(&resumed.status, RunStatus::EarlyStop(why) if why.ends_with("wall-time cap 4 s")),
        "{:?}",
        resumed.status
    );
    // Without the first invocation's time this one would need 4 s itself.
    assert!(resumed.wall_secs < cap, "{resumed:?}");
    assert!(resumed.run_wall_secs >= cap, "{resumed:?}");
    assert!(
        (resumed.run_wall_secs - (first.run_wall_secs + resumed.wall_secs)).abs() < 0.25,
        "the run's time is both invocations': {first:?} then {resumed:?}"
    );
    let json = summary_json(&run_dir);
    assert_eq!(json["run_wall_secs"].as_f64(), Some(resumed.run_wall_secs));
    assert_eq!(json["wall_secs"].as_f64(), Some(resumed.wall_secs));
}
