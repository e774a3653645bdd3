//! The studio's Runs panel and model settings, end to end through the UI
//! (egui_kittest, no GPU): recorded runs are listed, opened read-only,
//! compared, and resumed live; the model dialog writes a settings file.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{card, collect, temp_task, with_evaluator, with_slow_evaluator};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::archive::Archive;
use galapagos::engine::card::Card;
use galapagos::engine::events::RunStatus;
use galapagos::engine::model::user_settings::load_settings_from;
use galapagos::engine::registry::Registry;
use galapagos::studio::App;
use galapagos::studio::state::{State, Tab};

fn registry() -> Arc<Registry> {
    common::registry()
}

/// `card` with the in-process evaluator taking 40 ms per child.
fn paced(card: Card) -> Card {
    with_slow_evaluator(card, 40)
}

/// Record a run of `card` into `dir`; stop it after `stop_after` admitted
/// genomes when given. Returns how it ended.
fn record(
    card: Card,
    task: &Path,
    dir: &Path,
    registry: &Arc<Registry>,
    stop_after: Option<usize>,
) -> RunStatus {
    let handle = common::spawn(common::plan_in(
        card,
        task,
        Some(dir.to_path_buf()),
        registry,
    ));
    let (_, summary) = collect(handle, |n, h| {
        if stop_after == Some(n) {
            common::stop(h);
        }
    });
    summary.status
}

fn app(runs: &Path, registry: Arc<Registry>, settings: Option<PathBuf>) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    let app = App::new(state, registry).with_settings_path(settings);
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

/// Step frames until `done` or the deadline.
fn step_until(h: &mut Harness<'static, App>, limit: Duration, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + limit;
    while !done(h.state()) {
        assert!(
            Instant::now() < deadline,
            "timed out; last message: {:?}",
            h.state().message()
        );
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
}

fn is_disabled(h: &Harness<'_, App>, label: &str) -> bool {
    h.get_by_role_and_label(Role::Button, label)
        .accesskit_node()
        .is_disabled()
}

#[test]
fn runs_are_listed_opened_read_only_and_compared() {
    let registry = registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut first = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    first.general.max_iterations = 6;
    let mut second = first.clone();
    second.name = "second_card".to_owned();
    second.seed = 7;
    let dir_a = runs.join("run-a");
    let dir_b = runs.join("run-b");
    assert_eq!(
        record(first, &task, &dir_a, &registry, None),
        RunStatus::Completed
    );
    assert_eq!(
        record(second, &task, &dir_b, &registry, None),
        RunStatus::Completed
    );
    // A folder with a broken archive is listed with its error.
    std::fs::create_dir_all(runs.join("broken")).unwrap();
    std::fs::write(runs.join("broken").join("archive.sqlite"), b"not sqlite").unwrap();

    let mut h = app(&runs, Arc::clone(&registry), None);
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    assert_eq!(h.state().runs.listings().len(), 3);
    h.get_by_label("run-a");
    h.get_by_label("run-b");
    h.get_by_label("broken");
    h.get_by_label_contains("unreadable");
    // Both recorded cards are listed.
    let cards: BTreeSet<&str> = h
        .state()
        .runs
        .listings()
        .iter()
        .map(|l| l.card.as_str())
        .collect();
    assert!(
        cards.contains("best_of_n") && cards.contains("second_card"),
        "{cards:?}"
    );
    h.get_by_label("second_card");

    // Open run-a read-only: the Run tab shows it.
    h.get_by_label("run-a").click();
    h.run_steps(2);
    assert_eq!(h.state().runs.selected(), Some(dir_a.as_path()));
    h.get_by_label("Open read-only").click();
    step_until(&mut h, Duration::from_secs(20), |a| {
        a.run_view.viewing().is_some()
    });
    assert_eq!(h.state().run_view.viewing(), Some(dir_a.as_path()));
    h.get_by_label("viewing run-a (read-only)");
    let stored = Archive::open(&dir_a).unwrap().genomes().unwrap();
    let history = h.state().run_view.history();
    assert_eq!(history.genomes.len(), stored.len());
    assert!(history.is_finished());
    assert!(!h.state().run_view.is_running());
    let best = history.best_id.unwrap();
    let expected_best = stored
        .iter()
        .filter_map(|g| g.fitness().map(|f| (g.id, f)))
        .fold(None, |acc: Option<(u64, f64)>, (id, f)| match acc {
            Some((_, b)) if b >= f => acc,
            _ => Some((id, f)),
        })
        .unwrap()
        .0;
    assert_eq!(best, expected_best);
    // The table lists its genomes; the inspector shows the selected one.
    assert!(h.query_all_by_label("#0").count() >= 1);
    h.get_by_label(&format!("#{best} (best)")).click();
    h.run_steps(2);
    assert_eq!(h.state().run_view.selected(), Some(best));
    if best != 0 {
        let parent = stored[best as usize].parent_id.unwrap();
        h.get_by_label(&format!("parent #{parent}"));
    }

    // Compare: tick both runs; two legend entries appear.
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("compare run-a").click();
    h.run_steps(1);
    h.get_by_label("compare run-b").click();
    step_until(&mut h, Duration::from_secs(20), |a| {
        a.runs.compared().len() == 2
    });
    let labels: BTreeSet<String> = h.state().runs.legend_labels().into_values().collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    for l in &labels {
        assert!(l.contains(" · quad · "), "{l}");
        h.get_by_label(l);
    }
    assert!(labels.iter().any(|l| l.starts_with("second_card")));
    for c in h.state().runs.compared() {
        assert!(!c.points.is_empty());
        assert!(
            c.points
                .windows(2)
                .all(|w| w[0][0] <= w[1][0] && w[0][1] <= w[1][1])
        );
    }
    // The broken run cannot be ticked, opened or resumed.
    h.get_by_label("broken").click();
    h.run_steps(2);
    assert!(is_disabled(&h, "Open read-only"));
    assert!(is_disabled(&h, "Resume"));
    // Opening read-only never modified the archives.
    assert_eq!(
        Archive::open(&dir_a).unwrap().genomes().unwrap().len(),
        stored.len()
    );
}

#[test]
fn resuming_a_run_another_process_writes_is_refused_naming_its_pid() {
    let registry = registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let dir = runs.join("busy-run");
    let mut c = paced(card("best_of_n.yaml", &registry));
    c.general.max_iterations = 24;
    assert_eq!(
        record(c, &task, &dir, &registry, Some(3)),
        RunStatus::Stopped
    );
    let before = Archive::open(&dir).unwrap().events().unwrap().len();
    // The folder's writer lock, as another process running it would hold it.
    let held = galapagos::engine::archive::RunLock::acquire(&dir).unwrap();
    let mut h = app(&runs, Arc::clone(&registry), None);
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("busy-run").click();
    h.run_steps(2);
    h.get_by_label("Resume").click();
    h.run_steps(2);
    let message = h.state().message().unwrap_or_default().to_owned();
    assert!(
        message.contains("in use by another galapagos process")
            && message.contains(&format!("(PID {})", std::process::id())),
        "{message}"
    );
    assert!(!h.state().run_view.is_running());
    assert_eq!(
        Archive::open(&dir).unwrap().events().unwrap().len(),
        before,
        "nothing written"
    );
    // Once the other writer is gone, the same click resumes.
    drop(held);
    h.get_by_label("Resume").click();
    h.run_steps(2);
    assert!(
        h.state().message().unwrap_or_default().contains("Resuming"),
        "{:?}",
        h.state().message()
    );
    step_until(&mut h, Duration::from_secs(60), |a| {
        !a.run_view.is_running()
    });
}

#[test]
fn a_stopped_run_resumes_live_to_its_budget_without_duplicates() {
    let registry = registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let dir = runs.join("stopped-run");
    let mut c = paced(card("best_of_n.yaml", &registry));
    c.general.max_iterations = 24;
    assert_eq!(
        record(c, &task, &dir, &registry, Some(4)),
        RunStatus::Stopped
    );
    let before = Archive::open(&dir).unwrap().genomes().unwrap();
    let done_before = Archive::open(&dir)
        .unwrap()
        .checkpoint()
        .unwrap()
        .unwrap()
        .iterations_done;
    assert!(done_before < 24, "the run was not stopped early");

    let mut h = app(&runs, Arc::clone(&registry), None);
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("stopped-run").click();
    h.run_steps(2);
    // The budget field starts at the recorded budget.
    assert_eq!(h.state().runs.iterations, "24");
    assert!(!is_disabled(&h, "Resume"));
    h.get_by_label("Resume").click();
    h.run_steps(2);
    assert!(h.state().message().unwrap_or_default().contains("Resuming"));
    // While it runs, Resume and Open are disabled with a reason.
    if h.state().run_view.is_running() {
        h.get_by_label("Runs").click();
        h.run_steps(2);
        if h.state().run_view.is_running() {
            assert!(is_disabled(&h, "Resume"));
            assert!(is_disabled(&h, "Open read-only"));
        }
        h.state_mut().state.tab = Tab::Run;
        h.run_steps(1);
    }
    step_until(&mut h, Duration::from_secs(60), |a| {
        !a.run_view.is_running()
    });
    let history = h.state().run_view.history();
    let summary = history.summary.clone().unwrap();
    assert_eq!(summary.status, RunStatus::Completed, "{:?}", history.logs);
    assert_eq!(summary.iterations, 24);
    assert_eq!(history.iterations_done, 24);
    // The view kept the recorded genomes and added the new ones.
    assert!(history.genomes.len() > before.len());
    let ids: Vec<u64> = history.genomes.iter().map(|g| g.id).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>());

    // The archive: the same genomes, ids unique and dense, the initial
    // program once, the old genomes untouched.
    let after = Archive::open(&dir).unwrap().genomes().unwrap();
    assert_eq!(after.len(), history.genomes.len());
    let ids: Vec<u64> = after.iter().map(|g| g.id).collect();
    assert_eq!(ids, (0..after.len() as u64).collect::<Vec<_>>());
    assert_eq!(after.iter().filter(|g| g.iteration == 0).count(), 1);
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(old.content, new.content);
        assert_eq!(old.iteration, new.iteration);
    }
    let iterations: BTreeSet<u64> = after.iter().map(|g| g.iteration).collect();
    assert_eq!(iterations.last(), Some(&24));
    assert_eq!(
        Archive::open(&dir).unwrap().meta().unwrap().status,
        "completed"
    );

    // Now the run is done: the budget must be raised to resume again.
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("Refresh runs").click();
    h.run_steps(2);
    h.get_by_label("stopped-run").click();
    h.run_steps(2);
    assert_eq!(h.state().runs.iterations, "25");
    assert!(!is_disabled(&h, "Resume"));
}

#[test]
fn the_model_dialog_adds_an_endpoint_saves_it_and_runs_use_it() {
    let registry = registry();
    let tmp = tempfile::tempdir().unwrap();
    let settings = tmp.path().join("config").join("settings.json");
    let mut h = app(tmp.path(), Arc::clone(&registry), Some(settings.clone()));
    h.run();
    // Nothing configured: the offline model, and Start run is not blocked by it.
    let desc = h.state_mut().model_description().unwrap();
    assert!(desc.starts_with("offline model"), "{desc}");
    h.get_by_label_contains("Model: offline model").click();
    h.run_steps(4);
    assert!(h.state().model_dialog_open());
    h.get_by_label("Add endpoint").click();
    h.run_steps(2);
    for (field, text) in [("Name", "local test"), ("Model", "qwen-coder")] {
        h.get_by_role_and_label(Role::TextInput, field).focus();
        h.run();
        h.get_by_role_and_label(Role::TextInput, field)
            .type_text(text);
        h.run_steps(2);
    }
    // A key pasted where the variable NAME belongs blocks Save and is never shown.
    h.get_by_role_and_label(Role::TextInput, "Key variable")
        .focus();
    h.run();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_role_and_label(Role::TextInput, "Key variable")
        .type_text("sk-live-abc123");
    h.run_steps(2);
    assert!(is_disabled(&h, "Save settings"));
    assert!(h.query_by_label_contains("sk-live-abc123").is_none());
    // The field is masked now.
    let masked = h.get_by_role_and_label(Role::PasswordInput, "Key variable");
    let shown = masked.accesskit_node().value().unwrap_or_default();
    assert!(!shown.contains("sk-live"), "{shown}");
    masked.focus();
    h.run();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_role_and_label(Role::PasswordInput, "Key variable")
        .type_text("LOCAL_LLM_KEY");
    h.run_steps(2);
    // The preview names the new model.
    h.get_by_label_contains("qwen-coder @ http://localhost:11434/v1");
    assert!(!is_disabled(&h, "Save settings"));
    h.get_by_label("Save settings").click();
    h.run_steps(2);
    assert!(!h.state().model_dialog_open(), "{:?}", h.state().message());

    let saved = load_settings_from(&settings).unwrap();
    assert_eq!(saved.endpoints.len(), 1);
    let ep = &saved.endpoints[0];
    assert_eq!(ep.name, "local test");
    assert_eq!(ep.model.as_deref(), Some("qwen-coder"));
    assert_eq!(ep.api_base, "http://localhost:11434/v1");
    assert_eq!(ep.api_key_env, "LOCAL_LLM_KEY");
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(!text.contains("sk-live-abc123"));

    // The studio now runs with it, and a fresh studio reloads it.
    let desc = h.state_mut().model_description().unwrap();
    assert!(
        desc.starts_with("qwen-coder @ http://localhost:11434/v1"),
        "{desc}"
    );
    let mut again = app(tmp.path(), Arc::clone(&registry), Some(settings.clone()));
    again.run();
    assert_eq!(again.state().model_settings(), &saved);
    again.get_by_label_contains("Model: qwen-coder");

    // A broken settings file blocks Start run with the reason.
    std::fs::write(&settings, "{broken").unwrap();
    let mut broken = app(tmp.path(), registry, Some(settings));
    broken.run();
    let why = broken.state_mut().model_description().unwrap_err();
    assert!(why.contains("model settings"), "{why}");
}

/// Renders the Runs tab (three runs, two compared), a recorded run opened
/// read-only, and the model dialog (wgpu on a CPU adapter).
/// `SCREENSHOT_DIR=dir cargo test --test studio_runs -- --ignored screenshots`.
#[test]
#[ignore = "writes PNG files; run by hand"]
fn screenshots() {
    let out = std::env::var("SCREENSHOT_DIR").unwrap_or_else(|_| "target/screenshots".to_owned());
    std::fs::create_dir_all(&out).unwrap();
    let registry = registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    for (name, seed, n, stop) in [
        ("best_of_n-quad-a", 1, 30, None),
        ("best_of_n-quad-b", 9, 40, None),
        ("beam-quad-c", 3, 40, Some(12)),
    ] {
        let mut c = paced(card("best_of_n.yaml", &registry));
        c.general.max_iterations = n;
        c.seed = seed;
        record(c, &task, &runs.join(name), &registry, stop);
    }
    let state = State {
        runs_folder: runs.clone(),
        ..State::default()
    };
    let app = App::new(state, Arc::clone(&registry))
        .with_settings_path(Some(tmp.path().join("settings.json")));
    let mut h = Harness::builder()
        .with_size(egui::vec2(1400.0, 860.0))
        .wgpu()
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        );
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("compare best_of_n-quad-a").click();
    h.run_steps(1);
    h.get_by_label("compare best_of_n-quad-b").click();
    h.run_steps(1);
    h.get_by_label("beam-quad-c").click();
    step_until(&mut h, Duration::from_secs(20), |a| {
        a.runs.compared().len() == 2
    });
    h.render()
        .unwrap()
        .save(format!("{out}/runs_compare.png"))
        .unwrap();
    h.get_by_label("Open read-only").click();
    step_until(&mut h, Duration::from_secs(20), |a| {
        a.run_view.viewing().is_some()
    });
    let best = h.state().run_view.history().best_id;
    h.state_mut().run_view.select(best);
    h.run_steps(3);
    h.render()
        .unwrap()
        .save(format!("{out}/run_read_only.png"))
        .unwrap();
    h.get_by_label_contains("Model: ").click();
    h.run_steps(4);
    h.get_by_label("Add endpoint").click();
    h.run_steps(2);
    h.run_steps(2);
    h.get_by_label("Add price").click();
    h.run_steps(4);
    h.render()
        .unwrap()
        .save(format!("{out}/model_dialog.png"))
        .unwrap();
}
