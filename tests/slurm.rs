#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The `slurm` evaluator against a real one-node Slurm cluster that the
//! tests start on loopback (`common::slurm`), through the command line as a
//! user runs it: a run records job ids the scheduler knows, a candidate past
//! its timeout is cancelled and the run goes on, a run killed with -9 is
//! resumed without leftovers, duplicates or gaps, work cancelled from
//! outside is retried, set-up problems are named before any iteration, a
//! folder program is evaluated as a folder, and a pool keeps up with the
//! local evaluator.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::slurm::{Cluster, cluster, eventually};
use galapagos::engine::archive::read_genomes;
use galapagos::engine::genome::Genome;

/// Tests share the cluster; the throughput test has it to itself.
static CLUSTER_USE: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    CLUSTER_USE
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn galapagos(cluster: &Cluster) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.env("SLURM_CONF", &cluster.conf);
    c
}

/// The shipped slurm card with `edits` (line prefix -> new line) applied,
/// written into `dir`.
/// Its name is `name`: runs of different tests never share a folder name.
fn card(dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(root().join("cards/best_of_n_slurm.yaml")).unwrap();
    text = text.replacen("name: best_of_n_slurm\n", &format!("name: {name}\n"), 1);
    for (old, new) in edits {
        let line = text
            .lines()
            .find(|l| l.starts_with(old))
            .unwrap_or_else(|| panic!("no line {old:?} in the card"))
            .to_owned();
        text = text.replacen(&line, new, 1);
    }
    let path = dir.join("card.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The quadratic task whose evaluator waits `delay` seconds per call and
/// 60 s for the candidate of iteration `hang_at` (the runner names a
/// candidate's program file after its iteration; the sandbox keeps the
/// task folder read-only, so no call count can be kept there).
fn task(dir: &Path, delay: f64, hang_at: Option<u64>) -> PathBuf {
    let t = common::temp_task(dir);
    let original = std::fs::read_to_string(t.join("evaluator.py")).unwrap();
    let hang = hang_at.map_or_else(|| "None".to_owned(), |i| format!("'candidate_{i}.py'"));
    let counted = format!(
        "import os as _os\nimport time as _time\n{}\n\n_score = evaluate\n\n\
         def evaluate(path):\n    \
             if _os.path.basename(path) == {hang}:\n        _time.sleep(60)\n    \
             _time.sleep({delay})\n    return _score(path)\n",
        original
    );
    std::fs::write(t.join("evaluator.py"), counted).unwrap();
    t
}

fn run_args(card: &Path, task: &Path, iterations: u32, out: &Path) -> Vec<String> {
    vec![
        "run".to_owned(),
        card.display().to_string(),
        "--task".to_owned(),
        task.display().to_string(),
        "--iterations".to_owned(),
        iterations.to_string(),
        "--quiet".to_owned(),
        "--out".to_owned(),
        out.display().to_string(),
    ]
}

fn check(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The only run folder in `out`.
fn run_dir(out: &Path) -> Option<PathBuf> {
    std::fs::read_dir(out)
        .ok()?
        .find_map(Result::ok)
        .map(|e| e.path())
}

fn genomes(run: &Path) -> Vec<Genome> {
    read_genomes(&run.join("genomes.jsonl")).unwrap()
}

/// The prefix of the names of a run's jobs.
fn job_prefix(run: &Path) -> String {
    format!("gp-{}-", run.file_name().unwrap().to_string_lossy())
}

/// The job of a genome's placement (`12` of step `12.3`).
fn job_of(g: &Genome) -> String {
    let p = g
        .placement
        .as_ref()
        .unwrap_or_else(|| panic!("genome {} has no placement", g.id));
    p.job_id.split('.').next().unwrap().to_owned()
}

/// A jobcomp record's field.
fn record_field(records: &str, job: &str, key: &str) -> Option<String> {
    let line = records
        .lines()
        .find(|l| l.starts_with(&format!("JobId={job} ")))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .map(str::to_owned)
}

#[test]
fn a_twelve_iteration_run_records_job_ids_the_scheduler_knows() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    let out = tempfile::tempdir().unwrap();
    let card = root().join("cards/best_of_n_slurm.yaml");
    let task = root().join("assets/tasks/circle_packing");
    // As a user runs it: from a folder of their own, the run folder under
    // `runs/` there (a relative path, which the nodes must not resolve
    // against the task folder they work in).
    let o = galapagos(cluster)
        .current_dir(out.path())
        .args(run_args(&card, &task, 12, Path::new("runs")))
        .args(["--parallel", "2"])
        .output()
        .unwrap();
    let stdout = check(&o, "the slurm card on circle_packing");
    assert!(
        stdout.contains("status:      completed") && stdout.contains("iterations:  12"),
        "{stdout}"
    );
    let run = run_dir(&out.path().join("runs")).unwrap();
    let all = genomes(&run);
    assert!(all.len() >= 13, "{} genomes", all.len());
    let prefix = job_prefix(&run);
    // The run's allocations end with it.
    assert!(
        eventually(10, || cluster.jobs(&prefix).is_empty()),
        "{:?}",
        cluster.jobs(&prefix)
    );
    let mut jobs = BTreeSet::new();
    for g in all.iter().filter(|g| g.iteration == 0 || g.diff.is_some()) {
        let p = g
            .placement
            .as_ref()
            .unwrap_or_else(|| panic!("genome {} has no placement: {g:?}", g.id));
        assert_eq!(p.scheduler, "slurm");
        assert!(!p.node.is_empty(), "genome {} has no node", g.id);
        jobs.insert(job_of(g));
    }
    assert!(!jobs.is_empty());
    assert!(
        jobs.len() <= 2,
        "two allocations serve a parallel-2 pool: {jobs:?}"
    );
    assert!(
        eventually(10, || jobs.iter().all(|j| record_field(
            &cluster.records(),
            j,
            "Name"
        )
        .is_some_and(|n| n.starts_with(&prefix)))),
        "the scheduler's records show every job of the run: {jobs:?}\n{}",
        cluster.records()
    );
}

#[test]
fn a_candidate_past_its_timeout_is_cancelled_and_the_run_goes_on() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    for mode in ["job", "pool"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("runs");
        let card = card(
            dir.path(),
            &format!("slurm_timeout_{mode}"),
            &[
                ("  mode:", &format!("  mode: {mode}")),
                ("  timeout_secs:", "  timeout_secs: 2.0"),
                ("  parallel:", "  parallel: 1"),
            ],
        );
        // The first proposed candidate hangs.
        let task = task(dir.path(), 0.0, Some(1));
        let o = galapagos(cluster)
            .args(run_args(&card, &task, 4, &out))
            .output()
            .unwrap();
        let stdout = check(&o, mode);
        assert!(
            stdout.contains("status:      completed"),
            "{mode}: {stdout}"
        );
        let run = run_dir(&out).unwrap();
        let all = genomes(&run);
        let hung = all
            .iter()
            .find(|g| g.error.as_deref().is_some_and(|e| e.starts_with("timeout")))
            .unwrap_or_else(|| panic!("{mode}: no genome timed out: {all:?}"));
        assert!(!hung.valid);
        let placement = hung.placement.as_ref().unwrap();
        assert!(
            hung.error.as_deref().unwrap().contains(&placement.job_id),
            "{:?}",
            hung.error
        );
        // The run went on: later iterations were evaluated.
        assert!(
            all.iter().any(|g| g.iteration > hung.iteration && g.valid),
            "{mode}: {all:?}"
        );
        if mode == "job" {
            // Cancelled by the run, and out of the queue within timeout + 5 s
            // of its start (the records have whole seconds).
            let job = job_of(hung);
            assert!(eventually(10, || record_field(
                &cluster.records(),
                &job,
                "JobState"
            )
            .is_some()));
            let records = cluster.records();
            assert_eq!(
                record_field(&records, &job, "JobState").as_deref(),
                Some("CANCELLED"),
                "{records}"
            );
            let time = |k: &str| {
                let t = record_field(&records, &job, k).unwrap();
                chrono_secs(&t)
            };
            let ran = time("EndTime") - time("StartTime");
            assert!(ran <= 2 + 5 + 1, "job {job} ran {ran} s");
        } else {
            // A step of a running allocation: the evaluation (the step
            // started at once) ended within timeout + 5 s.
            assert!(placement.job_id.contains('.'), "{placement:?}");
            assert!(
                hung.timings.evaluate_ms < 8_000.0,
                "{} ms",
                hung.timings.evaluate_ms
            );
        }
    }
}

/// Seconds of a Slurm time stamp (2026-11-24T05:52:43) since the start of
/// its month: enough to subtract two close times.
fn chrono_secs(t: &str) -> i64 {
    let (date, time) = t.split_once('T').unwrap();
    let day: i64 = date.rsplit('-').next().unwrap().parse().unwrap();
    let hms: Vec<i64> = time.split(':').map(|p| p.parse().unwrap()).collect();
    ((day * 24 + hms[0]) * 60 + hms[1]) * 60 + hms[2]
}

#[test]
fn a_run_killed_with_sigkill_leaves_no_job_once_resumed_and_loses_no_iteration() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let card = card(
        dir.path(),
        "slurm_kill",
        &[("  timeout_secs:", "  timeout_secs: 20.0")],
    );
    let task = task(dir.path(), 1.0, None);
    let mut child = galapagos(cluster)
        .args(run_args(&card, &task, 10, &out))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let admitted = || {
        run_dir(&out).map_or(0, |r| {
            std::fs::read_to_string(r.join("genomes.jsonl")).map_or(0, |t| t.lines().count())
        })
    };
    assert!(
        eventually(60, || admitted() >= 4),
        "the run did not get going"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let run = run_dir(&out).unwrap();
    let prefix = job_prefix(&run);
    let left: Vec<String> = cluster.jobs(&prefix).into_iter().map(|j| j.0).collect();
    assert!(
        !left.is_empty(),
        "the killed run's allocations are still there before the resume"
    );
    let o = galapagos(cluster)
        .args(["resume", &run.display().to_string(), "--quiet"])
        .output()
        .unwrap();
    let stdout = check(&o, "resume");
    assert!(stdout.contains("status:      completed"), "{stdout}");
    assert!(
        eventually(10, || cluster.jobs(&prefix).is_empty()),
        "{:?}",
        cluster.jobs(&prefix)
    );
    let records = cluster.records();
    for job in &left {
        assert_eq!(
            record_field(&records, job, "JobState").as_deref(),
            Some("CANCELLED"),
            "{job}: {records}"
        );
    }
    let all = genomes(&run);
    let ids: Vec<u64> = all.iter().map(|g| g.id).collect();
    assert_eq!(
        ids,
        (0..all.len() as u64).collect::<Vec<_>>(),
        "genome ids are dense and unique"
    );
    // Ten iterations and the initial program, each attempt once. (With
    // parallel 2 an iteration in flight at the kill is not recorded and the
    // resumed run numbers on from the last recorded one, as with the local
    // evaluator: the numbers may skip it, the count does not.)
    let iterations: BTreeSet<u64> = all.iter().map(|g| g.iteration).collect();
    assert_eq!(
        iterations.len(),
        11,
        "ten iterations and the initial program: {iterations:?}"
    );
    let attempts: BTreeSet<(u64, u32)> = all.iter().map(|g| (g.iteration, g.attempt)).collect();
    assert_eq!(attempts.len(), all.len(), "no iteration attempt twice");
    let before_kill = all
        .iter()
        .filter(|g| {
            g.placement
                .as_ref()
                .is_some_and(|p| left.iter().any(|j| p.job_id.starts_with(&format!("{j}."))))
        })
        .count();
    assert!(
        before_kill >= 4,
        "the genomes recorded before the kill are kept"
    );
    // The resumed run cancelled the leftovers before it placed any work:
    // they ended before its own allocations started.
    let new_jobs: BTreeSet<String> = all
        .iter()
        .filter(|g| g.placement.is_some())
        .map(job_of)
        .filter(|j| !left.contains(j))
        .collect();
    assert!(!new_jobs.is_empty());
    let time = |job: &str, key: &str| chrono_secs(&record_field(&records, job, key).unwrap());
    let first_new = new_jobs.iter().map(|j| time(j, "StartTime")).min().unwrap();
    for job in &left {
        assert!(
            time(job, "EndTime") <= first_new,
            "leftover {job} outlived the resume's start"
        );
    }
}

#[test]
fn work_cancelled_from_outside_is_retried_not_invalid() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    for mode in ["pool", "job"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("runs");
        let card = card(
            dir.path(),
            &format!("slurm_timeout_{mode}"),
            &[
                ("  mode:", &format!("  mode: {mode}")),
                ("  parallel:", "  parallel: 1"),
            ],
        );
        let task = task(dir.path(), 4.0, None);
        let child = galapagos(cluster)
            .args(run_args(&card, &task, 1, &out))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The initial program's evaluation has finished (its genome is
        // recorded); the first proposal's work then runs: cancel it.
        let recorded = || {
            run_dir(&out).is_some_and(|r| {
                std::fs::read_to_string(r.join("genomes.jsonl"))
                    .is_ok_and(|t| t.lines().count() == 1)
            })
        };
        assert!(
            eventually(60, recorded),
            "{mode}: the initial program was not recorded"
        );
        let run = run_dir(&out).unwrap();
        let prefix = job_prefix(&run);
        // In job mode the initial program's job may still be finishing.
        let initial = job_of(&genomes(&run)[0]);
        let mut victim = None;
        assert!(eventually(30, || {
            victim = cluster
                .jobs(&prefix)
                .into_iter()
                .find(|j| j.2 == "RUNNING" && (mode == "pool" || j.0 != initial))
                .map(|j| j.0);
            victim.is_some()
        }));
        std::thread::sleep(Duration::from_millis(1500));
        let victim = victim.unwrap();
        cluster.run("scancel", &[&victim]);
        let o = child.wait_with_output().unwrap();
        let stdout = check(&o, mode);
        assert!(
            stdout.contains("status:      completed"),
            "{mode}: {stdout}"
        );
        let all = genomes(&run_dir(&out).unwrap());
        let g = all.iter().find(|g| g.iteration == 1).unwrap();
        assert!(g.valid, "{mode}: {g:?}");
        let p = g.placement.as_ref().unwrap();
        assert_eq!(p.retries.len(), 1, "{mode}: {p:?}");
        assert!(p.retries[0].contains(&victim), "{mode}: {p:?}");
        assert_ne!(job_of(g), victim, "{mode}: retried elsewhere");
    }
}

/// What is wrong, the card's edits, the environment's, what the run says.
type SetUpCase<'a> = (
    &'a str,
    Vec<(&'a str, &'a str)>,
    Vec<(&'a str, String)>,
    &'a str,
);

#[test]
fn set_up_problems_are_named_before_any_iteration() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    let dir = tempfile::tempdir().unwrap();
    let task = task(dir.path(), 0.0, None);
    let bad_conf = dir.path().join("unreachable.conf");
    let conf = std::fs::read_to_string(&cluster.conf).unwrap();
    let port = conf
        .lines()
        .find_map(|l| l.strip_prefix("SlurmctldPort="))
        .unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        &bad_conf,
        conf.replace(
            &format!("SlurmctldPort={port}"),
            &format!("SlurmctldPort={closed}"),
        ),
    )
    .unwrap();
    let cases: Vec<SetUpCase<'_>> = vec![
        (
            "partition",
            vec![("  partition:", "  partition: nope")],
            vec![],
            "the cluster has no partition \"nope\" (it has: debug)",
        ),
        (
            "rejected",
            vec![("  cpus:", "  cpus: 4000")],
            vec![],
            "the scheduler rejects a job with these settings: allocation failure: Requested node configuration is not available",
        ),
        (
            "no sbatch",
            vec![],
            vec![("PATH", "/nonexistent".to_owned())],
            "sbatch is not on PATH",
        ),
        (
            "unreachable",
            vec![],
            vec![("SLURM_CONF", bad_conf.display().to_string())],
            "the Slurm controller is unreachable",
        ),
    ];
    for (what, edits, env, message) in cases {
        let cdir = dir.path().join(what.replace(' ', "_"));
        std::fs::create_dir_all(&cdir).unwrap();
        let card = card(
            &cdir,
            &format!("slurm_setup_{}", what.replace(' ', "_")),
            &edits,
        );
        let out = cdir.join("runs");
        let mut c = galapagos(cluster);
        c.args(run_args(&card, &task, 2, &out));
        for (k, v) in &env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.status.success(), "{what}: {text}");
        assert!(
            text.contains(message),
            "{what}: expected {message:?} in {text}"
        );
        assert!(text.contains("iterations:  0"), "{what}: {text}");
        assert!(!text.contains("panicked"), "{what}: {text}");
    }
}

/// A repository task whose evaluator reports what `evaluate` was given:
/// a folder, its files, a binary file's bytes, and whether a file an
/// earlier candidate wrote into its copy is there.
fn folder_task(dir: &Path) -> PathBuf {
    let t = dir.join("folder_task");
    let program = t.join("initial_program");
    std::fs::create_dir_all(program.join("pkg")).unwrap();
    std::fs::write(program.join("pkg/solve.py"), common::PROGRAM).unwrap();
    std::fs::write(program.join("pkg/helper.py"), "K = 2\n").unwrap();
    std::fs::write(program.join("data.bin"), (0u8..=255).collect::<Vec<u8>>()).unwrap();
    std::fs::write(
        t.join("evaluator.py"),
        r#"import os

def evaluate(path):
    files = sorted(os.path.relpath(os.path.join(d, f), path).replace(os.sep, "/")
                   for d, _, names in os.walk(path) for f in names)
    leaked = os.path.exists(os.path.join(path, "scribble.txt"))
    with open(os.path.join(path, "scribble.txt"), "w") as f:
        f.write("left by a candidate")
    with open(os.path.join(path, "data.bin"), "rb") as f:
        data = f.read()
    return {"combined_score": 1.0, "is_dir": float(os.path.isdir(path)),
            "files": ",".join(files), "leaked": float(leaked),
            "binary_intact": float(data == bytes(range(256)))}
"#,
    )
    .unwrap();
    t
}

#[test]
fn a_repository_program_is_evaluated_on_the_cluster_as_a_folder_in_both_modes() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    for mode in ["pool", "job"] {
        let dir = tempfile::tempdir().unwrap();
        let card = card(
            dir.path(),
            &format!("slurm_folder_{mode}"),
            &[("  mode:", &format!("  mode: {mode}"))],
        );
        let task = folder_task(dir.path());
        let out = dir.path().join("runs");
        let o = galapagos(cluster)
            .args(run_args(&card, &task, 3, &out))
            .args(["--parallel", "2"])
            .output()
            .unwrap();
        check(&o, &format!("a folder program on slurm ({mode})"));
        let run = run_dir(&out).unwrap();
        let all = genomes(&run);
        assert!(all.len() >= 2, "{mode}: {} genomes", all.len());
        for g in &all {
            let placed = g.placement.as_ref();
            assert!(
                placed.is_some_and(|p| p.scheduler == "slurm" && !p.node.is_empty()),
                "{mode}: genome {} was not placed on the cluster: {g:?}",
                g.id
            );
            assert!(g.valid, "{mode}: genome {}: {:?}", g.id, g.error);
            assert_eq!(g.scores.get("is_dir"), Some(&1.0), "{mode}: {g:?}");
            assert_eq!(g.scores.get("binary_intact"), Some(&1.0), "{mode}: {g:?}");
            // each candidate its own copy: nothing an earlier one wrote
            assert_eq!(g.scores.get("leaked"), Some(&0.0), "{mode}: {g:?}");
            assert_eq!(
                g.artifacts.get("files").map(String::as_str),
                Some("data.bin,pkg/helper.py,pkg/solve.py"),
                "{mode}: genome {}",
                g.id
            );
        }
        // the stored genome is the tree as proposed, without the scribble
        assert!(all.iter().all(|g| g.content.get("scribble.txt").is_none()));
    }
}

/// The built-in repository task (a package whose score needs edits in two
/// modules) on the cluster with the offline model: the children change the
/// package's files and are scored there.
#[test]
fn the_builtin_repository_task_runs_on_the_cluster() {
    let Some(cluster) = cluster() else { return };
    let _shared = shared();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let card = card(dir.path(), "slurm_fit_package", &[]);
    let out = dir.path().join("runs");
    let mut args = run_args(&card, Path::new("fit_package"), 6, &out);
    args.extend(["--parallel".to_owned(), "2".to_owned()]);
    let o = galapagos(cluster)
        .current_dir(dir.path())
        .env("HOME", &home)
        .args(args)
        .output()
        .unwrap();
    check(&o, "fit_package on slurm");
    let run = run_dir(&out).unwrap();
    let all = genomes(&run);
    assert!(all[0].valid, "{:?}", all[0].error);
    assert!(all[0].placement.is_some());
    let changed: Vec<&Genome> = all
        .iter()
        .filter(|g| g.valid && g.parent_id.is_some())
        .filter(|g| {
            let parent = &all[g.parent_id.unwrap() as usize];
            let files = g.content.changes_from(&parent.content);
            !files.is_empty() && files.iter().all(|c| c.path.starts_with("fitpkg/"))
        })
        .collect();
    assert!(
        !changed.is_empty(),
        "no valid child changed the package: {:?}",
        all.iter().map(|g| (&g.error, g.valid)).collect::<Vec<_>>()
    );
    assert!(changed.iter().all(|g| g.placement.is_some()));
}

/// A task whose evaluator sleeps one second per candidate and reports when
/// its module was imported and when the evaluation started and ended
/// (seconds since the epoch, on the node: here the same clock as the
/// run's).
fn one_second_task(dir: &Path) -> PathBuf {
    let task = dir.join("one_second");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(task.join("initial_program.py"), common::PROGRAM).unwrap();
    std::fs::write(
        task.join("evaluator.py"),
        "import time\n\n_IMPORTED = time.time()\n\n\
         def evaluate(path):\n    start = time.time()\n    time.sleep(1.0)\n    \
         return {'combined_score': 0.5, 'imported': _IMPORTED, 'start': start, 'end': time.time()}\n",
    )
    .unwrap();
    task
}

/// What a finished run of the one-second task with parallel 2 in `out`
/// shows of its children's evaluations.
struct Pace {
    /// Evaluations per second after the initial program (whose evaluation
    /// starts the first allocation on the cluster): children / (wall time
    /// - genome 0's evaluation).
    rate: f64,
    /// (imported, start, end) of each child's evaluation.
    spans: Vec<(f64, f64, f64)>,
    /// The run's mean time per evaluation less the evaluation's own, in ms.
    overhead_ms: f64,
}

fn pace(o: &Output, out: &Path, what: &str) -> Pace {
    check(o, what);
    let run = run_dir(out).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let wall = summary["wall_secs"].as_f64().unwrap();
    let all = genomes(&run);
    let children: Vec<&Genome> = all
        .iter()
        .skip(1)
        .filter(|g| g.scores.contains_key("start"))
        .collect();
    let spans: Vec<(f64, f64, f64)> = children
        .iter()
        .map(|g| (g.scores["imported"], g.scores["start"], g.scores["end"]))
        .collect();
    let n = children.len().max(1) as f64;
    let run_ms = children.iter().map(|g| g.timings.evaluate_ms).sum::<f64>() / n;
    let own_ms = spans.iter().map(|(_, s, e)| (e - s) * 1e3).sum::<f64>() / n;
    let pace = Pace {
        rate: children.len() as f64 / (wall - all[0].timings.evaluate_ms / 1000.0),
        spans,
        overhead_ms: run_ms - own_ms,
    };
    eprintln!(
        "{what}: {} evaluations, {:.2} per second, {:.0} ms per evaluation beyond the evaluation's own",
        children.len(),
        pace.rate,
        pace.overhead_ms
    );
    pace
}

/// A pool run with the one-second evaluator and the same run with the
/// local evaluator (`best_of_n`, `subprocess`), side by side.
fn pool_and_local(cluster: &Cluster, dir: &Path, n: u32) -> (Pace, Pace) {
    let task = one_second_task(dir);
    let card = card(dir, "slurm_throughput", &[("  mode:", "  mode: pool")]);
    let local_card = root().join("cards/best_of_n.yaml");
    let (pool_out, local_out) = (dir.join("pool-runs"), dir.join("local-runs"));
    for out in [&pool_out, &local_out] {
        let _ = std::fs::remove_dir_all(out);
    }
    let start = |card: &Path, out: &Path| {
        galapagos(cluster)
            .args(run_args(card, &task, n, out))
            .args(["--parallel", "2"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (pool, local) = (start(&card, &pool_out), start(&local_card, &local_out));
    let (pool, local) = (
        pool.wait_with_output().unwrap(),
        local.wait_with_output().unwrap(),
    );
    (
        pace(&pool, &pool_out, "the pool run"),
        pace(&local, &local_out, "the local run beside it"),
    )
}

/// The pool's shape, which a busy machine does not change: its two slots
/// evaluate at the same time (each evaluation overlaps another). Its
/// throughput beside the local evaluator's at the same time is the
/// benchmark figure (ideal: 2 per second for both; printed with how many
/// candidates found their step ready, evaluator.py imported, when they
/// came), and must not fall below half of it (a pool that waits for a new
/// allocation or step between candidates does).
#[test]
fn a_pool_with_a_one_second_evaluator_overlaps_its_steps_and_keeps_up() {
    let Some(cluster) = cluster() else { return };
    let _alone = CLUSTER_USE
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let (pool, local) = pool_and_local(cluster, dir.path(), 12);
    let n = pool.spans.len();
    assert!(n >= 10, "{n} children evaluated on the cluster");
    let overlapping = pool
        .spans
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            pool.spans
                .iter()
                .enumerate()
                .any(|(j, b)| *i != j && a.1 < b.2 && b.1 < a.2)
        })
        .count();
    let ahead = pool
        .spans
        .iter()
        .filter(|(imported, start, _)| start - imported >= 0.05)
        .count();
    eprintln!(
        "pool: {overlapping} of {n} evaluations overlap another, {ahead} of {n} found their step \
         ready; {:.2} evaluations/s ({:.0} ms each beyond its own), the local evaluator \
         beside it {:.2} ({:.0} ms); ideal 2",
        pool.rate, pool.overhead_ms, local.rate, local.overhead_ms
    );
    // All but the edges: the second slot's first candidate waits for its
    // allocation, the last one may end alone.
    assert!(overlapping + 4 >= n, "{:?}", pool.spans);
    assert!(
        pool.rate >= 0.5 * local.rate,
        "pool {:.2} evaluations/s, local {:.2}",
        pool.rate,
        local.rate
    );
}
