#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Forking a run: a new run whose initial program is a genome of a recorded
//! run, recording where it came from (archive, summary, not the card), kept
//! across resume; from the engine and from `galapagos fork`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use galapagos::engine::archive::{Archive, list_runs};
use galapagos::engine::events::{RunOrigin, RunStatus};
use galapagos::engine::launch::{LaunchError, RunPlan};

/// A recorded run of best_of_n with the trivial evaluator in `runs/parent`.
fn parent_run(root: &Path, iterations: u64) -> PathBuf {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = iterations;
    let task = temp_task(root);
    let dir = root.join("runs").join("parent");
    let (_, s) = collect(
        spawn_with(request(c, &task, Some(dir.clone())), SlowOffline::model(0)),
        |_, _| {},
    );
    assert_eq!(s.status, RunStatus::Completed);
    dir
}

/// The genome of `run` with the best fitness that is not the initial program.
fn best_child(run: &Path) -> galapagos::engine::genome::Genome {
    Archive::open(run)
        .unwrap()
        .genomes()
        .unwrap()
        .into_iter()
        .filter(|g| g.id > 0 && g.valid && g.content.text() != PROGRAM)
        .max_by(|a, b| a.fitness().partial_cmp(&b.fitness()).unwrap())
        .expect("a valid child that changed the program")
}

#[test]
fn a_fork_starts_from_the_genome_and_records_its_origin_across_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = parent_run(tmp.path(), 6);
    let from = best_child(&parent);
    let registry = registry();

    let plan = RunPlan::fork(&parent, from.id, None, &registry)
        .unwrap()
        .in_new_folder(&tmp.path().join("runs"))
        .unwrap();
    let fork_dir = plan.run_dir().unwrap().to_path_buf();
    assert_eq!(plan.task().initial_program.id(), from.content.id());
    let origin = RunOrigin {
        run: std::fs::canonicalize(&parent).unwrap(),
        genome: from.id,
    };
    assert_eq!(plan.origin(), Some(&origin));
    // Stopped after 3 genomes, then resumed to its budget.
    let (_, s) = collect(spawn_with(plan, SlowOffline::model(20)), |n, h| {
        if n == 3 {
            stop(h);
        }
    });
    assert_eq!(s.status, RunStatus::Stopped);
    let a = Archive::open(&fork_dir).unwrap();
    let g0 = a.genome(0).unwrap().unwrap();
    assert_eq!(g0.content.text(), from.content.text());
    assert_eq!(
        g0.fitness(),
        from.fitness(),
        "the same program scores the same"
    );
    assert_eq!(a.meta().unwrap().forked_from, Some(origin.clone()));
    let log: Vec<String> = a.events().unwrap().into_iter().map(|e| e.2).collect();
    assert!(
        log.iter().any(|m| m == &format!("forked from {origin}")),
        "{log:?}"
    );
    drop(a);

    let resumed = RunPlan::resume(&fork_dir, Some(8), &registry).unwrap();
    assert_eq!(resumed.origin(), Some(&origin));
    assert_eq!(resumed.task().initial_program.text(), from.content.text());
    let (_, s) = collect(spawn_with(resumed, SlowOffline::model(0)), |_, _| {});
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(s.iterations, 8);
    let a = Archive::open(&fork_dir).unwrap();
    assert_eq!(a.meta().unwrap().forked_from, Some(origin.clone()));
    assert_eq!(
        a.genome(0).unwrap().unwrap().content.text(),
        from.content.text()
    );
    // The origin is in summary.json and the run list, never in the card.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fork_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["forked_from"]["genome"], from.id);
    assert_eq!(
        summary["forked_from"]["run"].as_str().unwrap(),
        origin.run.display().to_string()
    );
    let card_yaml = std::fs::read_to_string(fork_dir.join("card.yaml")).unwrap();
    assert!(!card_yaml.contains("forked"), "{card_yaml}");
    let listed = list_runs(&tmp.path().join("runs"));
    let fork_row = listed.iter().find(|r| r.dir == fork_dir).unwrap();
    assert_eq!(fork_row.forked_from, Some(origin));
    let parent_row = listed.iter().find(|r| r.dir == parent).unwrap();
    assert_eq!(parent_row.forked_from, None);
}

#[test]
fn a_fork_of_a_folder_program_starts_from_its_whole_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = registry();
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/fit_package");
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 1;
    let parent = tmp.path().join("parent");
    let (genomes, _) = collect(
        spawn_with(
            request(c, &task, Some(parent.clone())),
            SlowOffline::model(0),
        ),
        |_, _| {},
    );
    let from = &genomes[0];
    assert!(!from.content.is_single());
    let plan = RunPlan::fork(&parent, 0, None, &registry).unwrap();
    assert_eq!(plan.task().initial_program.id(), from.content.id());
    assert_eq!(
        plan.task().initial_program.len(),
        from.content.len(),
        "every file of the tree"
    );
}

#[test]
fn forking_a_genome_the_run_does_not_have_names_it_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = parent_run(tmp.path(), 2);
    let count = Archive::open(&parent).unwrap().genome_count().unwrap();
    let before: Vec<_> = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .collect();
    let e = RunPlan::fork(&parent, 999, None, &registry()).unwrap_err();
    assert!(matches!(e, LaunchError::NoGenome { id: 999, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the run has no genome #999 (its genomes are #0 to #{})",
            parent.display(),
            count - 1
        )
    );
    let after: Vec<_> = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .collect();
    assert_eq!(before.len(), after.len());
}

/// A genome that did not pass the evaluator (the model's reply had no
/// edit) is refused up front, as a pin of one is: a run started from it
/// would fail at once and leave a failed run behind.
#[test]
fn forking_an_invalid_genome_is_refused_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 1;
    c.general.inner_retry_times = 0;
    let task = temp_task(tmp.path());
    let parent = tmp.path().join("runs").join("parent");
    let model = std::sync::Arc::new(galapagos::engine::testing::ScriptedModel::new(vec![Ok(
        "I think you should do something.".into(),
    )]));
    let (genomes, s) = collect(
        spawn_with(request(c, &task, Some(parent.clone())), model),
        |_, _| {},
    );
    assert_eq!(s.status, RunStatus::Completed);
    let invalid = genomes.iter().find(|g| !g.valid).expect("an invalid child");
    let e = RunPlan::fork(&parent, invalid.id, None, &registry).unwrap_err();
    assert!(
        matches!(e, LaunchError::InvalidGenome { id, .. } if id == invalid.id),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains(&format!("genome #{} is invalid", invalid.id))
            && text.ends_with("fork from a valid genome"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(tmp.path().join("runs")).unwrap().count(),
        1,
        "a folder was written"
    );
}

fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME");
    c
}

/// The run folder a run's output names.
fn run_folder(stdout: &str) -> PathBuf {
    PathBuf::from(
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("run folder:"))
            .unwrap_or_else(|| panic!("no run folder in {stdout}"))
            .trim(),
    )
}

#[test]
fn galapagos_fork_runs_from_a_genome_with_the_runs_or_another_card_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let out = galapagos(&home)
        .args(["run", "best_of_n", "--iterations", "4", "--quiet", "--task"])
        .arg(&task)
        .arg("--out")
        .arg(&runs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parent = run_folder(&stdout);
    let from = best_child(&parent);

    // The run's own card; the new folder beside the parent by default.
    let out = galapagos(&home)
        .arg("fork")
        .arg(&parent)
        .args([
            "--genome",
            &from.id.to_string(),
            "--iterations",
            "2",
            "--seed",
            "7",
            "--quiet",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "fork:        genome #{} of {}",
            from.id,
            parent.display()
        )),
        "{stdout}"
    );
    let fork = run_folder(&stdout);
    assert_eq!(fork.parent(), parent.parent());
    let a = Archive::open(&fork).unwrap();
    let meta = a.meta().unwrap();
    assert_eq!(meta.seed, 7);
    assert_eq!(meta.max_iterations, 2);
    assert_eq!(
        meta.forked_from,
        Some(RunOrigin {
            run: std::fs::canonicalize(&parent).unwrap(),
            genome: from.id
        })
    );
    assert_eq!(
        a.genome(0).unwrap().unwrap().content.text(),
        from.content.text()
    );
    drop(a);

    // Resumed from the command line: still a fork of the same genome.
    let out = galapagos(&home)
        .arg("resume")
        .arg(&fork)
        .args(["--iterations", "3", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = Archive::open(&fork).unwrap();
    assert_eq!(a.meta().unwrap().forked_from.unwrap().genome, from.id);
    assert_eq!(a.checkpoint().unwrap().unwrap().iterations_done, 3);
    assert_eq!(
        a.genome(0).unwrap().unwrap().content.text(),
        from.content.text()
    );

    // Another card, in another folder.
    let other = tmp.path().join("other");
    let out = galapagos(&home)
        .arg("fork")
        .arg(&parent)
        .args([
            "--genome",
            "0",
            "--card",
            "topk",
            "--iterations",
            "1",
            "--quiet",
            "--out",
        ])
        .arg(&other)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fork2 = run_folder(&stdout);
    assert!(fork2.starts_with(&other), "{}", fork2.display());
    let meta = Archive::open(&fork2).unwrap().meta().unwrap();
    assert!(meta.card_yaml.contains("name: topk"), "{}", meta.card_yaml);
    assert_eq!(meta.forked_from.unwrap().genome, 0);
}

#[test]
fn galapagos_fork_refuses_a_missing_genome_or_run_with_one_message() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let parent = parent_run(tmp.path(), 1);
    let runs_before = std::fs::read_dir(tmp.path().join("runs")).unwrap().count();
    let out = galapagos(&home)
        .arg("fork")
        .arg(&parent)
        // The parent ran with a test evaluator this binary does not have.
        .args(["--genome", "50", "--card", "best_of_n"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the run has no genome #50"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(tmp.path().join("runs")).unwrap().count(),
        runs_before
    );
    let missing = tmp.path().join("nope");
    let out = galapagos(&home)
        .arg("fork")
        .arg(&missing)
        .args(["--genome", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no run archive here"), "{stderr}");
    // --genome is required.
    let out = galapagos(&home).arg("fork").arg(&parent).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--genome"));
}
