#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Run folders under concurrency and damage, through the command line as a
//! user drives it: one writer per folder, one folder per run, and
//! `genomes.jsonl` equal to the archive after any resume.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use galapagos::engine::archive::Archive;

const CARD: &str = "cards/best_of_n.yaml";
const TASK: &str = "assets/tasks/function_minimization";

fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.current_dir(env!("CARGO_MANIFEST_DIR")).env("HOME", home);
    c
}

fn run_args(iterations: u64, out: &Path) -> Vec<String> {
    vec![
        "run".into(),
        CARD.into(),
        "--task".into(),
        TASK.into(),
        "--iterations".into(),
        iterations.to_string(),
        "--quiet".into(),
        "--out".into(),
        out.display().to_string(),
    ]
}

fn ok(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    String::from_utf8_lossy(&o.stdout).into_owned() + &stderr
}

fn only_run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.into_iter().next().unwrap()
}

/// The ids in `genomes.jsonl`, in file order.
fn jsonl_ids(dir: &Path) -> Vec<u64> {
    std::fs::read_to_string(dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// `genomes.jsonl` holds each of the archive's genomes once, in order, as
/// the archive has them.
fn assert_jsonl_matches_archive(dir: &Path) {
    let archive = Archive::open(dir).unwrap().genomes().unwrap();
    let ids = jsonl_ids(dir);
    let want: Vec<u64> = (0..archive.len() as u64).collect();
    assert_eq!(ids, want, "genomes.jsonl ids");
    let lines = galapagos::engine::archive::read_genomes(&dir.join("genomes.jsonl")).unwrap();
    for (a, j) in archive.iter().zip(&lines) {
        assert_eq!(
            (a.id, a.iteration, &a.content, a.valid),
            (j.id, j.iteration, &j.content, j.valid)
        );
    }
}

#[test]
fn a_second_writer_exits_2_naming_the_pid_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut first = galapagos(home.path())
        .args(run_args(1_000_000, out.path()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run has recorded a few iterations.
    let deadline = Instant::now() + Duration::from_secs(60);
    let dir = loop {
        assert!(Instant::now() < deadline, "the first run recorded nothing");
        if let Some(Ok(e)) = std::fs::read_dir(out.path()).unwrap().next()
            && let Ok(a) = Archive::open(&e.path())
            && a.quick_stats().is_ok_and(|(n, _, _)| n >= 3)
        {
            break e.path();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let events_before = Archive::open(&dir).unwrap().events().unwrap();
    let second = galapagos(home.path())
        .arg("resume")
        .arg(&dir)
        .args(["--iterations", "2000000", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("(PID {})", first.id())) && stderr.contains("in use"),
        "{stderr}"
    );
    assert!(
        !Archive::open(&dir)
            .unwrap()
            .events()
            .unwrap()
            .iter()
            .skip(events_before.len())
            .any(|(_, _, m)| m.contains("resumed") || m.contains("ended")),
        "the refused writer wrote into the event log"
    );
    // Killed outright, the first writer leaves its PID in the lock file, but
    // no lock: the run resumes.
    first.kill().unwrap();
    first.wait().unwrap();
    let done = Archive::open(&dir)
        .unwrap()
        .checkpoint()
        .unwrap()
        .unwrap()
        .iterations_done;
    let resumed = galapagos(home.path())
        .arg("resume")
        .arg(&dir)
        .args(["--iterations", &(done + 2).to_string(), "--quiet"])
        .output()
        .unwrap();
    ok(&resumed);
    assert_jsonl_matches_archive(&dir);
}

#[test]
fn runs_started_at_once_get_a_folder_each() {
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            galapagos(home.path())
                .args(run_args(1, out.path()))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    for d in &dirs {
        let genomes = Archive::open(d).unwrap().genomes().unwrap();
        assert_eq!(genomes.len(), 2, "{}: one run's genomes", d.display());
        assert_jsonl_matches_archive(d);
    }
}

#[test]
fn an_archive_that_lost_its_last_commits_resumes_without_duplicates() {
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    ok(&galapagos(home.path())
        .args(run_args(4, out.path()))
        .output()
        .unwrap());
    let dir = only_run_dir(out.path());
    let saved = std::fs::read(dir.join("archive.sqlite")).unwrap();
    let resume = |budget: u64| {
        galapagos(home.path())
            .arg("resume")
            .arg(&dir)
            .args(["--iterations", &budget.to_string(), "--quiet"])
            .output()
            .unwrap()
    };
    ok(&resume(8));
    // What a deleted WAL does: the archive is back at iteration 4 while
    // genomes.jsonl holds iterations 5..8.
    std::fs::write(dir.join("archive.sqlite"), &saved).unwrap();
    for f in ["archive.sqlite-wal", "archive.sqlite-shm"] {
        std::fs::remove_file(dir.join(f)).ok();
    }
    assert!(jsonl_ids(&dir).len() > Archive::open(&dir).unwrap().genomes().unwrap().len());
    ok(&resume(10));
    assert_jsonl_matches_archive(&dir);
}

#[test]
fn a_jsonl_behind_the_archive_is_completed_on_resume() {
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    ok(&galapagos(home.path())
        .args(run_args(4, out.path()))
        .output()
        .unwrap());
    let dir = only_run_dir(out.path());
    // Killed after the archive's commit, before the JSON line was complete.
    let path = dir.join("genomes.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..lines.len() - 2].join("\n") + "\n" + &lines[lines.len() - 2][..20];
    std::fs::write(&path, cut).unwrap();
    let o = galapagos(home.path())
        .arg("resume")
        .arg(&dir)
        .args(["--iterations", "6"])
        .output()
        .unwrap();
    let all = ok(&o);
    assert_jsonl_matches_archive(&dir);
    // The progress line counts the genomes recorded before the resume too.
    let summary = Archive::open(&dir).unwrap().checkpoint().unwrap().unwrap();
    let last = all
        .lines()
        .rfind(|l| l.starts_with("iteration "))
        .unwrap_or_else(|| panic!("no progress line in:\n{all}"));
    assert!(
        last.contains(&format!(
            "valid {}, invalid {}",
            summary.valid, summary.invalid
        )),
        "{last}\n{all}"
    );
    assert_eq!(summary.valid + summary.invalid, summary.next_id);
}

#[test]
fn a_run_refused_for_its_model_leaves_no_folder() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("runs");
    let mut args = run_args(2, &out);
    args.extend(["--api-base".into(), "http://127.0.0.1:9/v1".into()]);
    let o = galapagos(home.path()).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no model is named"), "{stderr}");
    assert!(!out.exists(), "a refused run writes nothing");
}
