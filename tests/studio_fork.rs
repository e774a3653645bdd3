//! Forking from the studio, through the UI (egui_kittest): "Fork run from
//! here" in the genome inspector starts a new run from that genome's program
//! with the card on the Blocks tab, and the Runs tab lists it under the run
//! it came from, the genome named. The fork-tree screenshot in docs/steering.md is
//! written by the ignored test at the end:
//! `cargo test --test studio_fork -- --ignored`.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{card, collect, temp_task, with_evaluator, with_slow_evaluator};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::archive::Archive;
use galapagos::engine::card::Card;
use galapagos::engine::events::RunStatus;
use galapagos::engine::registry::Registry;
use galapagos::studio::App;
use galapagos::studio::state::{State, Tab};

fn record(card: Card, task: &Path, dir: &Path, registry: &Arc<Registry>) {
    let handle = common::spawn(common::plan_in(
        card,
        task,
        Some(dir.to_path_buf()),
        registry,
    ));
    let (_, summary) = collect(handle, |_, _| {});
    assert_eq!(summary.status, RunStatus::Completed);
}

fn app(
    runs: &Path,
    registry: Arc<Registry>,
    size: egui::Vec2,
    wgpu: bool,
) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    let mut builder = Harness::builder().with_size(size);
    if wgpu {
        builder = builder.with_step_dt(1.0 / 60.0).wgpu();
    }
    builder.build_ui_state(
        |ui, app: &mut App| {
            app.logic(ui.ctx());
            app.show(ui);
        },
        App::new(state, registry).with_settings_path(None),
    )
}

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

/// The best genome of `run` other than the initial program.
fn best_child(run: &Path) -> galapagos::engine::genome::Genome {
    Archive::open(run)
        .unwrap()
        .genomes()
        .unwrap()
        .into_iter()
        .filter(|g| g.id > 0 && g.valid && g.content.text() != common::PROGRAM)
        .max_by(|a, b| a.fitness().partial_cmp(&b.fitness()).unwrap())
        .unwrap()
}

/// Open `dir` read-only from the Runs tab and select genome `id`.
fn open_and_select(h: &mut Harness<'static, App>, name: &str, id: u64) {
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("Refresh runs").click();
    h.run_steps(2);
    h.get_by_label(name).click();
    h.run_steps(2);
    h.get_by_label("Open read-only").click();
    step_until(h, Duration::from_secs(30), |a| {
        a.run_view.viewing().is_some()
    });
    h.state_mut().run_view.select(Some(id));
    h.run_steps(2);
}

#[test]
fn fork_run_from_here_starts_from_the_genome_with_the_blocks_card_and_shows_a_tree() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let parent = runs.join("parent");
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 6;
    record(c, &task, &parent, &registry);
    let from = best_child(&parent);

    let mut h = app(
        &runs,
        Arc::clone(&registry),
        egui::vec2(1400.0, 900.0),
        false,
    );
    h.run();
    // The card on the Blocks tab: another name, slow children (so the fork
    // is still running when looked at), three iterations.
    let mut blocks = with_slow_evaluator(card("best_of_n.yaml", &registry), 150);
    blocks.name = "steered".to_owned();
    blocks.general.max_iterations = 3;
    h.state_mut().doc.edit("card", blocks);
    open_and_select(&mut h, "parent", from.id);
    assert!(!is_disabled(&h, "Fork run from here"));
    h.get_by_label("Fork run from here").click();
    h.run_steps(2);
    let message = h.state().message().unwrap_or_default().to_owned();
    assert!(
        message.starts_with(&format!(
            "Forked genome #{} of {}",
            from.id,
            parent.display()
        )),
        "{message}"
    );
    assert!(h.state().run_view.is_running());
    assert_eq!(h.state().state.tab, Tab::Run);
    step_until(&mut h, Duration::from_secs(60), |a| {
        a.run_view.live_run_dir().is_some()
    });
    let fork = h.state().run_view.live_run_dir().unwrap().to_path_buf();
    assert_eq!(fork.parent(), Some(runs.as_path()));
    // While it runs, another fork waits: the button says why.
    step_until(&mut h, Duration::from_secs(60), |a| {
        !a.run_view.history().genomes.is_empty()
    });
    h.state_mut().run_view.select(Some(0));
    h.run_steps(2);
    assert!(is_disabled(&h, "Fork run from here"));
    step_until(&mut h, Duration::from_secs(120), |a| {
        a.run_view.history().is_finished()
    });
    assert!(!is_disabled(&h, "Fork run from here"));

    let a = Archive::open(&fork).unwrap();
    let meta = a.meta().unwrap();
    assert!(
        meta.card_yaml.contains("name: steered"),
        "{}",
        meta.card_yaml
    );
    let origin = meta.forked_from.unwrap();
    assert_eq!(origin.genome, from.id);
    assert_eq!(origin.run, std::fs::canonicalize(&parent).unwrap());
    assert_eq!(
        a.genome(0).unwrap().unwrap().content.text(),
        from.content.text()
    );
    drop(a);

    // The Runs tab: the fork under its parent, the genome named.
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("Refresh runs").click();
    h.run_steps(2);
    let fork_name = fork.file_name().unwrap().to_string_lossy().into_owned();
    let row = format!("- {fork_name} · from #{}", from.id);
    h.get_by_label(&row).click();
    h.run_steps(2);
    h.get_by_label_contains(&format!("Forked from genome #{} of", from.id));
    let order: Vec<&Path> = h
        .state()
        .runs
        .listings()
        .iter()
        .map(|l| l.dir.as_path())
        .collect();
    assert_eq!(order.len(), 2);
}

#[test]
fn a_fork_with_a_card_that_does_not_check_is_refused_and_writes_nothing() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let parent = runs.join("parent");
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 2;
    record(c, &task, &parent, &registry);
    let mut h = app(
        &runs,
        Arc::clone(&registry),
        egui::vec2(1400.0, 900.0),
        false,
    );
    h.run();
    let mut bad = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    bad.general.max_iterations = 0;
    bad.selection_policy
        .params
        .set("best_of_n", galapagos::engine::params::ParamValue::Int(0));
    h.state_mut().doc.edit("card", bad);
    open_and_select(&mut h, "parent", 1);
    h.get_by_label("Fork run from here").click();
    h.run_steps(2);
    let message = h.state().message().unwrap_or_default().to_owned();
    assert!(
        message.starts_with("Fork: fix the card first:"),
        "{message}"
    );
    assert!(!h.state().run_view.is_running());
    assert_eq!(
        std::fs::read_dir(&runs).unwrap().count(),
        1,
        "no new folder"
    );
}

/// An invalid genome is not offered to fork: the button is disabled and
/// says why (a run from it would fail at once), and nothing is started.
#[test]
fn fork_run_from_here_is_refused_up_front_for_an_invalid_genome() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let parent = runs.join("parent");
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 1;
    c.general.inner_retry_times = 0;
    let model = Arc::new(galapagos::engine::testing::ScriptedModel::new(vec![Ok(
        "I think you should do something.".into(),
    )]));
    let (genomes, summary) = collect(
        common::spawn_with(
            common::plan_in(c, &task, Some(parent.clone()), &registry),
            model,
        ),
        |_, _| {},
    );
    assert_eq!(summary.status, RunStatus::Completed);
    let invalid = genomes.iter().find(|g| !g.valid).unwrap().id;
    let mut h = app(
        &runs,
        Arc::clone(&registry),
        egui::vec2(1400.0, 900.0),
        false,
    );
    h.run();
    open_and_select(&mut h, "parent", invalid);
    assert!(
        is_disabled(&h, "Fork run from here"),
        "forking an invalid genome is offered"
    );
    h.get_by_label("Fork run from here").click();
    h.run_steps(2);
    assert!(!h.state().run_view.is_running());
    assert_eq!(
        std::fs::read_dir(&runs).unwrap().count(),
        1,
        "no new folder"
    );
    // the initial program is valid: offered
    h.state_mut().run_view.select(Some(0));
    h.run_steps(2);
    assert!(!is_disabled(&h, "Fork run from here"));
}

/// docs/steering.md's picture of a fork tree at 1024×640: a run, two forks of it
/// and a fork of a fork, on the Runs tab with the second fork selected.
#[test]
#[ignore = "writes the screenshot in docs/steering.md"]
fn screenshot_of_a_fork_tree() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/circle_packing");
    let runs = tmp.path().join("runs");
    let root = runs.join("best_of_n-circle_packing");
    let mut c = card("best_of_n.yaml", &registry);
    c.general.max_iterations = 40;
    record(c, &task, &root, &registry);
    let fork_of = |dir: &Path, card_file: &str, iterations: u64| {
        let best = best_child_any(dir);
        let mut c = card(card_file, &registry);
        c.general.max_iterations = iterations;
        let plan = galapagos::engine::launch::RunPlan::fork(
            dir,
            best,
            Some(c.check(&registry).unwrap()),
            &registry,
        )
        .unwrap()
        .in_new_folder(&runs)
        .unwrap();
        let out = plan.run_dir().unwrap().to_path_buf();
        let (_, s) = collect(common::spawn(plan), |_, _| {});
        assert!(matches!(s.status, RunStatus::Completed), "{s:?}");
        // Folder names carry the second: keep them apart.
        std::thread::sleep(Duration::from_millis(1100));
        out
    };
    let a = fork_of(&root, "topk.yaml", 30);
    let _b = fork_of(&root, "beam_search.yaml", 30);
    let _c = fork_of(&a, "best_of_n.yaml", 30);
    let size = egui::vec2(1024.0, 640.0);
    let mut h = app(&runs, Arc::clone(&registry), size, true);
    h.run_steps(2);
    h.get_by_label("Runs").click();
    h.run_steps(3);
    let name = a.file_name().unwrap().to_string_lossy().into_owned();
    h.get_by_label_contains(&format!("- {name}")).click();
    h.run_steps(3);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/screenshots");
    let path = out.join(format!("fork-tree-{}x{}.png", size.x, size.y));
    h.remove_cursor();
    h.run_steps(2);
    h.render().unwrap().save(&path).unwrap();
    eprintln!("wrote {}", path.display());
}

/// The fittest genome of `run` (the initial program when nothing beat it).
fn best_child_any(run: &Path) -> u64 {
    Archive::open(run)
        .unwrap()
        .genomes()
        .unwrap()
        .into_iter()
        .filter(|g| g.valid)
        .max_by(|a, b| a.fitness().partial_cmp(&b.fitness()).unwrap())
        .unwrap()
        .id
}
