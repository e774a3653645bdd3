//! The studio's Leaderboard tab end to end through the UI (egui_kittest, no
//! GPU), with the offline model on the shipped circle_packing task: two
//! cards (one capped at a token budget) × two seeds are ticked, typed and
//! started by label; the table fills in with the numbers the runs' own
//! records give; a run opens in the Run tab; the batch folder reopens; and
//! the Details tab's Export attaches the leaderboard as the README's Results.
//! On a suite (the Suite choice, a folder of two benchmark tasks): the cards'
//! scores over the suite and the card × task table (best value, gap, calls to
//! the fraction, clicked by label) show what suite.json holds, a run of one
//! task opens, and the folder reopens as the suite.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::genome::Genome;
use galapagos::engine::registry::Registry;
use galapagos::studio::leaderboard::Source;
use galapagos::studio::state::{LeaderboardScope, State, Tab};
use galapagos::studio::{App, StudioLaunch};

const ITERATIONS: u64 = 4;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `cards/topk.yaml` renamed `topk_capped`, stopped by a one-token cap.
fn capped_card(dir: &Path) -> PathBuf {
    let yaml = std::fs::read_to_string(root().join("cards/topk.yaml")).unwrap();
    let yaml = yaml
        .replacen("name: topk\n", "name: topk_capped\n", 1)
        .replacen("general:\n", "general:\n  max_tokens: 1\n", 1);
    assert!(yaml.contains("max_tokens: 1") && yaml.contains("name: topk_capped"));
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("topk_capped.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn harness(app: App) -> Harness<'static, App> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        )
}

fn step_until(h: &mut Harness<'static, App>, limit: Duration, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + limit;
    while !done(h.state()) {
        assert!(
            Instant::now() < deadline,
            "timed out; last message: {:?}; outcome: {:?}",
            h.state().message(),
            h.state().leaderboard.outcome()
        );
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    h.run_steps(2);
}

/// Put `text` into the text field labelled `label`.
fn type_into(h: &mut Harness<'static, App>, label: &str, text: &str) {
    h.get_by_label(label).focus();
    h.run();
    h.get_by_label(label).set_text_value_accesskit(text);
    h.run();
}

/// A run's best fitness, from its genomes.jsonl alone.
fn best_in_jsonl(dir: &Path) -> f64 {
    galapagos::engine::archive::read_genomes(&dir.join("genomes.jsonl"))
        .unwrap()
        .iter()
        .filter_map(Genome::fitness)
        .fold(f64::NEG_INFINITY, f64::max)
}

#[test]
fn a_leaderboard_fills_in_from_the_runs_opens_a_run_and_goes_into_an_export() {
    let tmp = tempfile::tempdir().unwrap();
    let cards = tmp.path().join("cards");
    capped_card(&cards);
    let out = tmp.path().join("lb");
    let task = root().join("assets/tasks/circle_packing");
    let state = State {
        runs_folder: tmp.path().join("runs"),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_settings_path(None)
        .with_model(galapagos::engine::model::default_model());
    app.set_library_folder(&cards);
    app.launch(StudioLaunch {
        card: Some(root().join("cards/best_of_n.yaml")),
        task: Some(task.clone()),
    });
    let mut h = harness(app);
    h.run();

    // The form, filled by label.
    h.get_by_label("Leaderboard").click();
    h.run();
    assert_eq!(h.state().state.tab, Tab::Leaderboard);
    h.get_by_role_and_label(Role::CheckBox, "best_of_n").click();
    h.run();
    h.get_by_role_and_label(Role::CheckBox, "topk_capped.yaml")
        .click();
    h.run();
    type_into(&mut h, "Task folder", &task.display().to_string());
    type_into(&mut h, "Seeds", "2");
    type_into(&mut h, "Iterations", &ITERATIONS.to_string());
    type_into(&mut h, "Runs at once", "2");
    type_into(&mut h, "Batch folder", &out.display().to_string());
    let form = h.state().state.leaderboard.clone();
    assert_eq!(form.cards.len(), 2, "{form:?}");
    assert_eq!(
        (form.seeds, form.iterations, form.parallel),
        (2, ITERATIONS, 2)
    );
    assert_eq!(form.out, out);
    assert_eq!(form.task, task);
    // The form is part of what the studio remembers.
    let saved: State =
        serde_json::from_str(&serde_json::to_string(&h.state().state).unwrap()).unwrap();
    assert_eq!(saved.leaderboard, form);

    h.get_by_label("Start batch").click();
    // the spinner keeps repainting while the batch runs
    h.run_steps(3);
    assert!(
        h.state().leaderboard.is_running(),
        "{:?}",
        h.state().message()
    );
    h.get_by_label("Leaderboard (running)");
    // The table fills in as runs finish, before the batch is over.
    let mut saw_partial = false;
    let deadline = Instant::now() + Duration::from_secs(240);
    while h.state().leaderboard.is_running() {
        assert!(Instant::now() < deadline, "the batch did not finish");
        if let Some(t) = h.state().leaderboard.table()
            && t.cards.iter().map(|c| c.runs.len()).sum::<usize>() < 4
        {
            saw_partial = true;
        }
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    h.run_steps(2);
    assert!(saw_partial, "the table only appeared at the end");
    assert!(
        matches!(h.state().leaderboard.outcome(), Some(Ok(_))),
        "{:?}",
        h.state().leaderboard.outcome()
    );
    let lb = h.state().leaderboard.table().unwrap().clone();
    assert_eq!(lb.iterations, ITERATIONS);
    assert_eq!(lb.seeds, [0, 1]);
    assert_eq!(lb.baseline, "best_of_n");
    assert!(lb.model.contains("offline"), "{}", lb.model);
    assert_eq!(lb.cards.len(), 2);
    for card in &lb.cards {
        assert_eq!(card.runs.len(), 2, "{}", card.card);
        let mut bests = Vec::new();
        for run in &card.runs {
            let dir = out
                .join("runs")
                .join(format!("{}-seed{}", card.card, run.seed));
            assert_eq!(run.dir, dir);
            let best = best_in_jsonl(&dir);
            assert_eq!(run.best, Some(best), "{} seed {}", card.card, run.seed);
            bests.push(best);
        }
        let mean = bests.iter().sum::<f64>() / bests.len() as f64;
        let est = card.best.unwrap();
        assert!((est.mean - mean).abs() < 1e-12, "{}", card.card);
        assert!(est.ci_low <= mean && mean <= est.ci_high);
        // The numbers are on screen as the table shows them.
        assert!(h.query_all_by_label(&format!("{mean:.4}")).count() >= 1);
        assert!(
            h.query_all_by_label(&format!("[{:.4}, {:.4}]", est.ci_low, est.ci_high))
                .count()
                >= 1
        );
    }
    // The capped card is marked, in the table and in the files.
    let capped = lb.cards.iter().find(|c| c.card == "topk_capped").unwrap();
    assert!(capped.capped);
    assert!(capped.runs.iter().all(|r| r.capped
        && r.iterations_done < ITERATIONS
        && r.status.starts_with("budget reached")));
    assert!(
        !lb.cards
            .iter()
            .find(|c| c.card == "best_of_n")
            .unwrap()
            .capped
    );
    h.get_by_label("topk_capped (capped)");
    h.get_by_label("best_of_n (baseline)");
    let md = std::fs::read_to_string(out.join("leaderboard.md")).unwrap();
    assert!(md.contains("| topk_capped (capped) |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap())
            .unwrap();
    assert_eq!(json["cards"][1]["card"], "topk_capped");
    assert_eq!(json["cards"][1]["capped"], true);
    assert_eq!(json["cards"][0]["capped"], false);
    assert!(out.join("leaderboard.png").is_file());

    // A run opens in the Run tab, as the Runs panel opens one.
    let seed1 = out.join("runs/best_of_n-seed1");
    h.get_by_label("best_of_n seed 1").click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        a.run_view.viewing().is_some()
    });
    assert_eq!(h.state().state.tab, Tab::Run);
    assert_eq!(h.state().run_view.viewing(), Some(seed1.as_path()));
    let stored = galapagos::engine::archive::Archive::open(&seed1)
        .unwrap()
        .genomes()
        .unwrap();
    assert_eq!(h.state().run_view.history().genomes.len(), stored.len());

    // The batch folder reopens: the same leaderboard, from its file.
    h.get_by_label("Leaderboard").click();
    h.run();
    h.get_by_label("Open folder").click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        matches!(a.leaderboard.source(), Source::Folder(_))
    });
    let reopened = h.state().leaderboard.table().unwrap();
    assert_eq!(reopened.cards.len(), 2);
    assert_eq!(reopened.cards[0].best, lb.cards[0].best);
    h.get_by_label("topk_capped (capped)");

    // Export: the open card (best_of_n) with this leaderboard as Results.
    h.get_by_label("Attach to hub export").click();
    h.run();
    assert_eq!(h.state().state.tab, Tab::Details);
    assert_eq!(h.state().results_field(), out.display().to_string());
    let hub = tmp.path().join("hub");
    type_into(&mut h, "Bundle path", &hub.display().to_string());
    h.get_by_label("Export to folder").click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        a.message().is_some_and(|m| m.starts_with("Exported"))
    });
    let readme = std::fs::read_to_string(hub.join("default/best_of_n/README.md"))
        .or_else(|_| {
            // the card's namespace names the folder
            let ns = std::fs::read_dir(&hub)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path();
            std::fs::read_to_string(ns.join("best_of_n/README.md"))
        })
        .unwrap();
    let results = &readme[readme.find("## Results").expect("a Results section")..];
    let base_mean = lb.cards[0].best.unwrap().mean;
    for needed in [
        "circle_packing".to_owned(),
        format!("{ITERATIONS} iterations per run"),
        "seeds 0, 1".to_owned(),
        "offline".to_owned(),
        format!("{base_mean:.4}"),
        "| topk_capped (capped) |".to_owned(),
    ] {
        assert!(
            results.contains(&needed),
            "`{needed}` missing from:\n{results}"
        );
    }
}

#[test]
fn an_export_with_a_leaderboard_the_card_is_not_on_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let state = State {
        runs_folder: tmp.path().join("runs"),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin())).with_settings_path(None);
    app.set_library_folder(tmp.path());
    app.launch(StudioLaunch {
        card: Some(root().join("cards/topk.yaml")),
        task: None,
    });
    // A leaderboard of another card.
    let lb = tmp.path().join("lb");
    std::fs::create_dir_all(&lb).unwrap();
    std::fs::write(
        lb.join("leaderboard.json"),
        r#"{"task":"t","task_dir":"/t","model":"m","iterations":2,"seeds":[0],"baseline":"a",
            "target":null,"bootstrap_seed":1,"bootstrap_resamples":10,"batch_wall_secs":1.0,
            "max_startup_secs":null,"cards":[{"card":"a","runs":[],"best":null,"best_median":null,
            "at_quarter":null,"at_half":null,"at_budget":null,"curve":[],"reached_target":0,
            "mean_iterations_to_target":null,"valid_percent":0.0,"prompt_tokens":0,
            "completion_tokens":0,"cost_usd":null,"wall_secs":0.0,"capped":false,"vs_baseline":null}]}"#,
    )
    .unwrap();
    let mut h = harness(app);
    h.run();
    h.get_by_label("Details").click();
    h.run();
    let hub = tmp.path().join("hub");
    type_into(&mut h, "Bundle path", &hub.display().to_string());
    type_into(&mut h, "Results", &lb.display().to_string());
    h.get_by_label("Export to folder").click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        a.message().is_some_and(|m| m.starts_with("export"))
    });
    let msg = h.state().message().unwrap().to_owned();
    assert!(msg.contains("is not on this leaderboard"), "{msg}");
    assert!(!hub.exists(), "nothing is written");
    // An empty Results field exports without the section.
    type_into(&mut h, "Results", "");
    h.get_by_label("Export to folder").click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        a.message().is_some_and(|m| m.starts_with("Exported"))
    });
    let readme = std::fs::read_to_string(hub.join("default/topk/README.md")).unwrap();
    assert!(!readme.contains("## Results"));
}

#[test]
fn a_stopped_batch_resumes_from_its_folder_without_running_a_finished_run_again() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lb");
    let task = root().join("assets/tasks/circle_packing");
    // The form as a previous session left it (it is persisted).
    let mut state = State {
        runs_folder: tmp.path().join("runs"),
        ..State::default()
    };
    state.leaderboard.cards = vec!["built-in:topk".to_owned()];
    state.leaderboard.task.clone_from(&task);
    state.leaderboard.seeds = 3;
    state.leaderboard.iterations = 20;
    state.leaderboard.parallel = 1;
    state.leaderboard.out.clone_from(&out);
    state.tab = Tab::Leaderboard;
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_settings_path(None)
        .with_model(galapagos::engine::model::default_model());
    app.set_library_folder(tmp.path());
    let mut h = harness(app);
    h.run();
    h.get_by_label("Start batch").click();
    h.run_steps(2);
    // Stop once the first run is over.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !h.state().leaderboard.runs().iter().any(|r| r.over) {
        assert!(Instant::now() < deadline, "no run finished");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.get_by_label("Stop batch").click();
    step_until(&mut h, Duration::from_secs(60), |a| {
        !a.leaderboard.is_running()
    });
    let stopped = h.state().leaderboard.outcome().unwrap().clone().unwrap();
    assert!(stopped.starts_with("Stopped"), "{stopped}");
    assert!(
        out.join("leaderboard.json").is_file(),
        "a stopped batch writes what it has"
    );
    let first = out.join("runs/topk-seed0/genomes.jsonl");
    let before = std::fs::read(&first).unwrap();
    assert!(
        !out.join("runs/topk-seed2").exists(),
        "the batch was stopped before its last run"
    );

    // Start again on the same folder: it resumes.
    h.get_by_label("Start batch").click();
    h.run_steps(2);
    step_until(&mut h, Duration::from_secs(180), |a| {
        !a.leaderboard.is_running()
    });
    let done = h.state().leaderboard.outcome().unwrap().clone().unwrap();
    assert!(done.starts_with("Done"), "{done}");
    let rows = h.state().leaderboard.runs();
    assert_eq!(rows[0].state, "finished before", "{rows:?}");
    assert!(rows[1..].iter().all(|r| r.state == "completed"), "{rows:?}");
    assert_eq!(
        std::fs::read(&first).unwrap(),
        before,
        "the finished run was not run again"
    );
    let lb = h.state().leaderboard.table().unwrap();
    assert_eq!(lb.cards[0].runs.len(), 3);
    assert!(lb.cards[0].runs.iter().all(|r| r.iterations_done == 20));
    h.get_by_label("topk (baseline)");
}

/// A folder of two benchmark tasks, one where higher is better and one where
/// lower is.
fn two_task_suite(dir: &Path) -> PathBuf {
    let suite = dir.join("pair");
    for task in ["circle_packing", "min_max_distance_16_2d"] {
        let to = suite.join(task);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(root().join("assets/tasks").join(task)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
    suite
}

#[test]
fn a_suite_runs_from_the_tab_and_shows_the_card_by_task_table() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = two_task_suite(tmp.path());
    let out = tmp.path().join("lb");
    let state = State {
        runs_folder: tmp.path().join("runs"),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_settings_path(None)
        .with_model(galapagos::engine::model::default_model());
    app.set_library_folder(tmp.path());
    app.launch(StudioLaunch {
        card: Some(root().join("cards/best_of_n.yaml")),
        task: Some(root().join("assets/tasks/circle_packing")),
    });
    let mut h = harness(app);
    h.run();
    h.get_by_label("Leaderboard").click();
    h.run();
    h.get_by_role_and_label(Role::CheckBox, "best_of_n").click();
    h.run();
    h.get_by_role_and_label(Role::CheckBox, "topk").click();
    h.run();
    // Suite, besides Task: the field names a suite
    h.get_by_role_and_label(Role::RadioButton, "Suite").click();
    h.run();
    assert!(h.query_by_label("Task folder").is_none());
    type_into(&mut h, "Suite folder or name", &suite.display().to_string());
    type_into(&mut h, "Seeds", "2");
    type_into(&mut h, "Iterations", "2");
    type_into(&mut h, "Runs at once", "2");
    type_into(&mut h, "Reach %", "76");
    type_into(&mut h, "Batch folder", &out.display().to_string());
    let form = h.state().state.leaderboard.clone();
    assert_eq!(form.scope, LeaderboardScope::Suite);
    assert_eq!(form.suite, suite);
    assert!((form.fraction - 0.76).abs() < 1e-12, "{}", form.fraction);

    h.get_by_label("Start batch").click();
    h.run_steps(3);
    assert!(
        h.state().leaderboard.is_running(),
        "{:?}",
        h.state().message()
    );
    step_until(&mut h, Duration::from_secs(300), |a| {
        !a.leaderboard.is_running()
    });
    let done = h.state().leaderboard.outcome().unwrap().clone().unwrap();
    assert!(done.starts_with("Done; wrote suite.md"), "{done}");
    // What the tab shows is what the batch wrote.
    let sl = h.state().leaderboard.suite().unwrap().clone();
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("suite.json")).unwrap()).unwrap();
    assert_eq!(sl.suite, "pair");
    assert_eq!(sl.fraction, 0.76);
    assert_eq!(sl.tasks.len(), 2);
    for (c, card) in sl.cards.iter().enumerate() {
        let score = card.score.unwrap();
        assert_eq!(
            Some(score.mean),
            file["cards"][c]["score"]["mean"].as_f64(),
            "{}",
            card.card
        );
        assert!(
            h.query_all_by_label(&format!("[{:.4}, {:.4}]", score.ci_low, score.ci_high))
                .count()
                >= 1
        );
    }
    // The card × task table: best values, then gaps, then calls to 76 %.
    let cell = |t: usize, card: &str| sl.cell(t, card).unwrap().value.clone().unwrap();
    for t in 0..2 {
        for card in ["best_of_n", "topk"] {
            let best = cell(t, card).best.unwrap().mean;
            assert!(
                h.query_all_by_label(&format!("{best:.6}")).count() >= 1,
                "{} {card}: {best:.6} not shown",
                sl.tasks[t].task
            );
        }
    }
    h.get_by_label("Gap to best known").click();
    h.run();
    for t in 0..2 {
        let gap = cell(t, "topk").gap.unwrap().mean;
        assert!(h.query_all_by_label(&format!("{gap:.6}")).count() >= 1);
    }
    h.get_by_label("Calls to 76 %").click();
    h.run();
    let not_reached = (0..2)
        .flat_map(|t| ["best_of_n", "topk"].map(|c| cell(t, c)))
        .filter(|v| v.reached == 0)
        .count();
    assert_eq!(
        h.query_all_by_label("not reached").count(),
        not_reached,
        "{sl:?}"
    );

    // A run of one task opens in the Run tab.
    let run = out.join("min_max_distance_16_2d/runs/topk-seed1");
    h.get_by_label("min_max_distance_16_2d · topk seed 1")
        .click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        a.run_view.viewing().is_some()
    });
    assert_eq!(h.state().state.tab, Tab::Run);
    assert_eq!(h.state().run_view.viewing(), Some(run.as_path()));

    // The batch folder reopens as the suite it holds.
    h.get_by_label("Leaderboard").click();
    h.run();
    h.get_by_label("Open folder").click();
    step_until(&mut h, Duration::from_secs(30), |a| {
        matches!(a.leaderboard.source(), Source::Folder(_))
    });
    let reopened = h.state().leaderboard.suite().unwrap();
    assert_eq!(reopened.cards[1].score, sl.cards[1].score);
    assert_eq!(h.state().leaderboard.runs().len(), 8);
    assert_eq!(h.state().state.leaderboard.scope, LeaderboardScope::Suite);
    // and goes into an export as its Results
    h.get_by_label("Attach to hub export").click();
    h.run();
    assert_eq!(h.state().results_field(), out.display().to_string());
}

/// The Leaderboard tab's Task field takes a built-in task's name, as the
/// command line's `--task` does, and the batch runs on that task.
#[test]
fn the_task_field_takes_a_built_in_task_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lb");
    let tasks = tmp.path().join("tasks");
    let state = State {
        runs_folder: tmp.path().join("runs"),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_settings_path(None)
        .with_model(galapagos::engine::model::default_model());
    app.set_library_folder(&tmp.path().join("cards"));
    app.set_builtin_tasks_folder(tasks.clone());
    app.launch(StudioLaunch {
        card: Some(root().join("cards/best_of_n.yaml")),
        task: Some(root().join("assets/tasks/circle_packing")),
    });
    let mut h = harness(app);
    h.run();
    h.get_by_label("Leaderboard").click();
    h.run();
    h.get_by_role_and_label(Role::CheckBox, "best_of_n").click();
    h.run();
    type_into(&mut h, "Task folder", "function_minimization");
    type_into(&mut h, "Seeds", "1");
    type_into(&mut h, "Iterations", "1");
    type_into(&mut h, "Batch folder", &out.display().to_string());
    h.get_by_label("Start batch").click();
    step_until(&mut h, Duration::from_secs(240), |a| {
        a.leaderboard.outcome().is_some()
            || a.message()
                .is_some_and(|m| m.starts_with("Leaderboard: task"))
    });
    assert!(
        matches!(h.state().leaderboard.outcome(), Some(Ok(_))),
        "{:?} {:?}",
        h.state().message(),
        h.state().leaderboard.outcome()
    );
    let lb = h.state().leaderboard.table().unwrap();
    assert_eq!(lb.task, "function_minimization");
    assert_eq!(lb.task_dir, tasks.join("function_minimization"));
}
