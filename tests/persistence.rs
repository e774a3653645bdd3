#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Runs that survive: the SQLite archive, SIGKILL + resume, determinism of a
//! resumed run, and corrupt archives.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use galapagos::engine::archive::{ARCHIVE_FILE, Archive, ArchiveError};
use galapagos::engine::events::RunStatus;

fn fingerprint(g: &galapagos::engine::genome::Genome) -> String {
    format!(
        "{}|{:?}|{:?}|{}|{}|{}|{:?}|{}|{:?}|{:?}",
        g.id,
        g.parent_id,
        g.inspiration_ids,
        g.iteration,
        g.attempt,
        g.valid,
        g.scores,
        g.content,
        g.error,
        g.prompt
    )
}

/// A task whose evaluator takes ~80 ms, so a run can be killed mid-way.
fn slow_task(dir: &Path) -> std::path::PathBuf {
    let t = temp_task(dir);
    let text = std::fs::read_to_string(t.join("evaluator.py")).unwrap();
    std::fs::write(
        t.join("evaluator.py"),
        text.replace(
            "def evaluate(path):\n",
            "def evaluate(path):\n    import time\n    time.sleep(0.08)\n",
        ),
    )
    .unwrap();
    t
}

#[test]
fn sigkill_mid_run_then_resume_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let task = slow_task(dir.path());
    let out = dir.path().join("runs");
    let mut child = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "cards/best_of_n.yaml",
            "--iterations",
            "40",
            "--verbose",
            "--task",
        ])
        .arg(&task)
        .arg("--out")
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reported = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("admitted genome ") {
            reported.push(rest.split(' ').next().unwrap().parse::<u64>().unwrap());
        }
        if reported.len() >= 10 || Instant::now() > deadline {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(reported.len() >= 10, "the run reported {reported:?}");
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    let archive = Archive::open(&run_dir).unwrap();
    let before: BTreeSet<u64> = archive.genomes().unwrap().iter().map(|g| g.id).collect();
    for id in &reported {
        assert!(
            before.contains(id),
            "genome {id} was reported admitted but is not in the archive"
        );
    }
    let killed_at = archive.checkpoint().unwrap().unwrap().iterations_done;
    assert!(killed_at < 40, "the kill came too late to test anything");
    drop(archive);

    let resumed = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args(["resume", "--quiet"])
        .arg(&run_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );

    let genomes = Archive::open(&run_dir).unwrap().genomes().unwrap();
    let ids: Vec<u64> = genomes.iter().map(|g| g.id).collect();
    assert_eq!(
        ids,
        (0..genomes.len() as u64).collect::<Vec<_>>(),
        "ids contiguous, none lost"
    );
    let pairs: BTreeSet<(u64, u32)> = genomes.iter().map(|g| (g.iteration, g.attempt)).collect();
    assert_eq!(pairs.len(), genomes.len(), "no duplicate iteration numbers");
    assert_eq!(
        genomes.iter().filter(|g| g.iteration == 0).count(),
        1,
        "the initial program once"
    );
    let iterations: BTreeSet<u64> = genomes.iter().map(|g| g.iteration).collect();
    assert_eq!(
        iterations,
        (0..=40).collect::<BTreeSet<_>>(),
        "every iteration up to the budget, once"
    );
    for id in &before {
        assert!(ids.contains(id));
    }
    // the plain export agrees with the archive
    let jsonl = galapagos::engine::archive::read_genomes(&run_dir.join("genomes.jsonl")).unwrap();
    assert_eq!(jsonl.len(), genomes.len());
}

#[test]
fn an_interrupted_and_resumed_run_equals_an_uninterrupted_one() {
    let registry = registry();
    for file in ["best_of_n.yaml", "beam_search.yaml"] {
        let mut c = with_evaluator(card(file, &registry), "trivial");
        c.general.max_iterations = 30;
        let dir = tempfile::tempdir().unwrap();
        let task = temp_task(dir.path());

        let straight = dir.path().join("straight");
        let h = spawn_with(
            request(c.clone(), &task, Some(straight.clone())),
            SlowOffline::model(10),
        );
        let (a, sa) = collect(h, |_, _| {});
        assert_eq!(sa.status, RunStatus::Completed);

        // interrupted by Stop after 12 genomes, then resumed
        let broken = dir.path().join("broken");
        let h = spawn_with(
            request(c.clone(), &task, Some(broken.clone())),
            SlowOffline::model(10),
        );
        let (_, sb) = collect(h, |n, h| {
            if n == 12 {
                stop(h);
            }
        });
        assert_eq!(sb.status, RunStatus::Stopped);
        let h = spawn_with(
            resume_request(&broken, c.general.max_iterations, &registry),
            SlowOffline::model(10),
        );
        let (_, sc) = collect(h, |_, _| {});
        assert_eq!(sc.status, RunStatus::Completed);
        let b = Archive::open(&broken).unwrap().genomes().unwrap();
        assert_eq!(a.len(), b.len(), "{file}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(fingerprint(x), fingerprint(y), "{file}");
        }
        assert_eq!(sa.best_score, sc.best_score);
    }
}

fn file_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn a_corrupt_or_newer_archive_is_a_clear_error_and_is_not_modified() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 5;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let run = dir.path().join("run");
    let h = spawn(request(c, &task, Some(run.clone())));
    collect(h, |_, _| {});
    let path = run.join(ARCHIVE_FILE);
    let full = file_bytes(&path);

    // truncated
    std::fs::write(&path, &full[..full.len() / 3]).unwrap();
    let truncated = file_bytes(&path);
    let err = Archive::open(&run)
        .and_then(|a| a.genomes())
        .expect_err("truncated archive must not open");
    assert!(err.to_string().contains(ARCHIVE_FILE), "{err}");
    assert_eq!(
        file_bytes(&path),
        truncated,
        "opening must not modify the file"
    );
    let resumed = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("resume")
        .arg(&run)
        .output()
        .unwrap();
    assert!(!resumed.status.success());
    assert_eq!(
        file_bytes(&path),
        truncated,
        "resume must not modify a corrupt archive"
    );

    // garbage
    std::fs::write(&path, b"this is not a database at all, just text").unwrap();
    let err = Archive::open(&run).err().expect("garbage must not open");
    assert!(matches!(err, ArchiveError::Corrupt { .. }), "{err}");
    assert_eq!(
        file_bytes(&path),
        b"this is not a database at all, just text"
    );

    // a newer schema version
    std::fs::write(&path, &full).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let before = file_bytes(&path);
    let err = Archive::open(&run)
        .err()
        .expect("newer schema must not open");
    assert!(
        matches!(err, ArchiveError::TooNew { found: 99, .. }),
        "{err}"
    );
    let resumed = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("resume")
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains("newer"),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(
        file_bytes(&path),
        before,
        "a newer archive is never written to"
    );
}

/// Stop while the initial program is still being evaluated: the run ends at
/// once (it does not wait for the evaluation), the candidate is killed, and
/// nothing half-made is recorded.
#[test]
fn stop_during_the_initial_evaluation_does_not_wait_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let marker = dir.path().join("initial.pid");
    std::fs::write(
        task.join("evaluator.py"),
        format!(
            "import os, time\n\ndef evaluate(path):\n    open({:?}, 'w').write(str(os.getpid()))\n    time.sleep(60)\n    return {{'combined_score': 1.0}}\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let registry = registry();
    let run_dir = dir.path().join("run");
    // Unsandboxed: the evaluator leaves its pid in the test's dir.
    let mut unsandboxed = card("best_of_n.yaml", &registry);
    unsandboxed.evaluator.params.set(
        "sandbox",
        galapagos::engine::params::ParamValue::Str("none".to_owned()),
    );
    let h = spawn(request(unsandboxed, &task, Some(run_dir.clone())));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the initial evaluation never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: u32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stopped = Instant::now();
    stop(&h);
    let (genomes, summary) = collect(h, |_, _| {});
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "Stop waited for the 60 s evaluation"
    );
    assert_eq!(summary.status, RunStatus::Stopped);
    assert!(genomes.is_empty());
    assert_eq!(Archive::open(&run_dir).unwrap().genomes().unwrap().len(), 0);
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    });
    assert!(gone, "the initial candidate {pid} survived the Stop");
    // Resuming it starts over in the same folder.
    std::fs::write(
        task.join("evaluator.py"),
        "def evaluate(path):\n    return {'combined_score': 0.5}\n",
    )
    .unwrap();
    let registry = common::registry();
    let h = spawn(resume_request(&run_dir, 3, &registry));
    let (_, resumed) = collect(h, |_, _| {});
    assert_eq!(resumed.status, RunStatus::Completed);
    assert_eq!(resumed.iterations, 3);
    assert!(Archive::open(&run_dir).unwrap().genomes().unwrap().len() >= 4);
}
