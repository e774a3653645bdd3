//! Multi-objective search from the task's side: a task folder whose
//! `config.yaml` names its objectives runs a multi-objective search with a
//! card that names none (a run and a leaderboard), and a folder without them
//! leaves the card's single objective.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a panic here is a failed test"
)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use galapagos::engine::events::RunStatus;
use galapagos::engine::genome::Direction;
use galapagos::engine::model::default_model;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The quadrature program and evaluator in `dir/NAME`, with `config` as its
/// `config.yaml` (none when `None`).
fn rule_task(dir: &Path, name: &str, config: Option<&str>) -> PathBuf {
    let task = dir.join(name);
    std::fs::create_dir_all(&task).unwrap();
    for file in ["initial_program.py", "evaluator.py"] {
        std::fs::copy(
            root().join("assets/tasks/quadrature").join(file),
            task.join(file),
        )
        .unwrap();
    }
    if let Some(text) = config {
        std::fs::write(task.join("config.yaml"), text).unwrap();
    }
    task
}

const OBJECTIVES: &str = "objectives:\n  combined_score: max\n  evaluations: min\nreference_point:\n  evaluations: 1001\n";

/// The pareto card with its objectives taken out: on its own it names none.
fn card_without_objectives(
    registry: &galapagos::engine::registry::Registry,
) -> galapagos::engine::card::Card {
    let mut c = card("pareto.yaml", registry);
    c.general.objectives.clear();
    c.general.reference_point.clear();
    c.general.max_iterations = 6;
    c
}

#[test]
fn a_task_that_names_its_objectives_makes_a_card_without_them_multi_objective() {
    let registry = registry();
    let dir = tempfile::tempdir().unwrap();
    let named = rule_task(dir.path(), "named", Some(OBJECTIVES));
    let c = card_without_objectives(&registry);

    let plan = plan_in(c.clone(), &named, None, &registry);
    let general = &plan.card().general;
    assert_eq!(
        general
            .objectives
            .iter()
            .map(|(m, d)| (m.as_str(), *d))
            .collect::<Vec<_>>(),
        [
            ("combined_score", Direction::Max),
            ("evaluations", Direction::Min)
        ]
    );
    assert_eq!(general.reference_point.get("evaluations"), Some(&1001.0));
    let lines = plan.settings().lines().join("\n");
    for want in [
        "objectives: {combined_score: max, evaluations: min} → general.objectives (a multi-objective search",
        "reference_point.evaluations: 1001 → general.reference_point.evaluations",
    ] {
        assert!(lines.contains(want), "missing `{want}` in:\n{lines}");
    }

    // The pareto policy, which refuses to start without objectives, runs on
    // the task's, and the prompt shows the trade-offs between them.
    let (genomes, s) = run_collect(c.clone(), &named, default_model(), Arc::clone(&registry));
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(s.iterations, 6);
    let child = genomes.iter().find(|g| g.id > 0).unwrap();
    let prompt = &child.prompt.as_ref().unwrap().user;
    assert!(
        prompt.contains("| program | combined_score ↑ | evaluations ↓ |"),
        "{prompt}"
    );

    // The same card on the same program without the config: no objectives.
    let bare = rule_task(dir.path(), "bare", None);
    let (_, s) = run_collect(c, &bare, default_model(), registry);
    assert!(
        matches!(&s.status, RunStatus::Failed(m) if m.contains("needs two or more objectives: set general.objectives")),
        "{:?}",
        s.status
    );
}

#[test]
fn a_task_objective_of_the_wrong_shape_is_refused_naming_the_key() {
    let registry = registry();
    let dir = tempfile::tempdir().unwrap();
    let task = rule_task(
        dir.path(),
        "wrong",
        Some("objectives:\n  combined_score: best\n  evaluations: min\n"),
    );
    let checked = card_without_objectives(&registry).check(&registry).unwrap();
    let task = galapagos::engine::task::Task::load(&task).unwrap();
    let e = galapagos::engine::launch::RunPlan::new(checked, task, None, &registry)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("config.yaml: objectives.combined_score: expected max or min, got \"best\""),
        "{e}"
    );
}

/// `galapagos leaderboard` with the single-objective `best_of_n` card on a
/// task that names its objectives: every run gets its hypervolume over the
/// task's objectives, against the task's reference point.
#[test]
fn a_leaderboard_measures_hypervolume_over_the_tasks_objectives() {
    let dir = tempfile::tempdir().unwrap();
    let task = rule_task(
        dir.path(),
        "named",
        Some(
            "objectives: {combined_score: max, evaluations: min}\nreference_point: {combined_score: 0, evaluations: 1001}\n",
        ),
    );
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = dir.path().join("lb");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("leaderboard")
        .arg(root().join("cards/best_of_n.yaml"))
        .arg("--task")
        .arg(&task)
        .args(["--iterations", "5", "--seeds", "2"])
        .arg("--out")
        .arg(&out)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENAI_API_KEY")
        .status()
        .unwrap();
    assert!(status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap())
            .unwrap();
    let objectives = json["objectives"].as_array().unwrap();
    assert_eq!(objectives.len(), 2, "{json}");
    assert_eq!(objectives[1]["metric"], "evaluations");
    assert_eq!(objectives[1]["direction"], "min");
    assert_eq!(objectives[1]["reference"], 1001.0);
    let runs = json["cards"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        let curve = run["hypervolume_so_far"].as_array().unwrap();
        assert_eq!(curve.len(), 6, "{run}");
        // The initial rule alone: its digits times (1001 - its evaluations).
        assert!(curve[0].as_f64().unwrap() > 0.0, "{run}");
    }
    let md = std::fs::read_to_string(out.join("leaderboard.md")).unwrap();
    assert!(md.contains("hypervolume @"), "{md}");
}
