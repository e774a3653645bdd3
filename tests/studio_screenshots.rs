//! The README's screenshots of the tree, islands, compare and leaderboard
//! views, rendered from the studio's own UI code (egui_kittest with the wgpu
//! renderer, no window): real runs of shipped cards on the shipped
//! circle_packing task with the offline model, opened read-only as a person
//! would, and a leaderboard batch of three cards started from its tab.
//!
//! Not part of the suite (it writes into assets/screenshots):
//! `cargo test --release --test studio_screenshots -- --ignored`
#![allow(
    clippy::unwrap_used,
    reason = "a screenshot tool: a panic is a failed run"
)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::registry::Registry;
use galapagos::studio::App;
use galapagos::studio::run::{SearchView, read_archive};
use galapagos::studio::state::{State, Tab};

fn record(card: &str, iterations: u64, seed: u64, dir: &Path, registry: &Arc<Registry>) {
    record_on("circle_packing", card, iterations, seed, dir, registry);
}

fn record_on(
    task: &str,
    card: &str,
    iterations: u64,
    seed: u64,
    dir: &Path,
    registry: &Arc<Registry>,
) {
    let mut c = common::card(card, registry);
    c.general.max_iterations = iterations;
    c.seed = seed;
    let task = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/tasks")
        .join(task);
    let handle = common::spawn(common::plan_in(c, &task, Some(dir.to_path_buf()), registry));
    let (_, summary) = common::collect(handle, |_, _| {});
    eprintln!("{card}: {:?}", summary.status);
}

fn harness(runs: &Path, size: egui::Vec2, registry: Arc<Registry>) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    Harness::builder()
        .with_size(size)
        .with_step_dt(1.0 / 60.0)
        .wgpu()
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            App::new(state, registry).with_settings_path(None),
        )
}

fn step_until(h: &mut Harness<'static, App>, done: impl Fn(&App) -> bool) {
    step_within(h, Duration::from_secs(60), done);
}

fn step_within(h: &mut Harness<'static, App>, limit: Duration, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + limit;
    while !done(h.state()) {
        assert!(Instant::now() < deadline, "timed out");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(3);
}

fn save(h: &mut Harness<'static, App>, name: &str, size: egui::Vec2) {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/screenshots");
    let path = out.join(format!("{name}-{}x{}.png", size.x, size.y));
    h.remove_cursor();
    h.run_steps(2);
    h.render().unwrap().save(&path).unwrap();
    eprintln!("wrote {}", path.display());
}

#[test]
#[ignore = "writes the README's screenshots"]
fn screenshots_of_the_tree_islands_and_compare_views() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let islands: PathBuf = runs.join("openevolve-circle_packing");
    let best_of_n = runs.join("best_of_n-circle_packing");
    let beam = runs.join("beam_search-circle_packing");
    record("openevolve.yaml", 400, 1, &islands, &registry);
    record("best_of_n.yaml", 160, 1, &best_of_n, &registry);
    record("beam_search.yaml", 160, 1, &beam, &registry);
    for size in [egui::vec2(1024.0, 640.0), egui::vec2(1920.0, 1080.0)] {
        let mut h = harness(&runs, size, Arc::clone(&registry));
        h.run_steps(2);
        let run = read_archive(&islands).unwrap();
        let best = run.history.best_id;
        h.state_mut().run_view.show_archived(run);
        h.state_mut().state.tab = Tab::Run;
        h.state_mut().run_view.set_search_view(SearchView::Tree);
        h.state_mut().run_view.select(best);
        h.run_steps(4);
        save(&mut h, "tree", size);
        h.state_mut().run_view.set_search_view(SearchView::Islands);
        step_until(&mut h, |a| {
            a.run_view.structure().fed() == a.run_view.history().genomes.len()
        });
        save(&mut h, "grid", size);
        h.get_by_label("Runs").click();
        h.run_steps(3);
        for name in [&islands, &best_of_n, &beam] {
            let label = format!("compare {}", name.file_name().unwrap().to_string_lossy());
            h.get_by_label(&label).click();
            h.run_steps(1);
        }
        step_until(&mut h, |a| a.runs.compared().len() == 3);
        save(&mut h, "compare", size);
    }
}

#[test]
#[ignore = "writes the README's screenshots"]
fn screenshots_of_the_leaderboard() {
    let tmp = tempfile::tempdir().unwrap();
    let mut state = State {
        runs_folder: tmp.path().join("runs"),
        tab: Tab::Leaderboard,
        ..State::default()
    };
    let form = &mut state.leaderboard;
    form.cards = [
        "built-in:best_of_n",
        "built-in:topk",
        "built-in:beam_search",
    ]
    .map(str::to_owned)
    .to_vec();
    // relative to the crate root, where tests run
    form.task = PathBuf::from("assets/tasks/circle_packing");
    form.seeds = 5;
    form.iterations = 40;
    form.parallel = 2;
    form.out = tmp.path().join("leaderboard");
    let mut first = true;
    for size in [egui::vec2(1024.0, 640.0), egui::vec2(1920.0, 1080.0)] {
        let mut h = Harness::builder()
            .with_size(size)
            .with_step_dt(1.0 / 60.0)
            .wgpu()
            .build_ui_state(
                |ui, app: &mut App| {
                    app.logic(ui.ctx());
                    app.show(ui);
                },
                App::new(state.clone(), Arc::new(Registry::builtin())).with_settings_path(None),
            );
        h.run_steps(2);
        // The batch runs once; the second size shows its folder.
        h.get_by_label(if first { "Start batch" } else { "Open folder" })
            .click();
        h.run_steps(2);
        step_within(&mut h, Duration::from_secs(600), |a| {
            !a.leaderboard.is_running() && a.leaderboard.table().is_some()
        });
        save(&mut h, "leaderboard", size);
        first = false;
    }
}

/// A run of `card` on `task` with `model`, recorded into `dir`.
fn record_with(
    card: galapagos::engine::card::Card,
    task: &str,
    model: Arc<dyn galapagos::engine::model::LanguageModel>,
    dir: &Path,
    registry: &Arc<Registry>,
) {
    let task = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/tasks")
        .join(task);
    let handle = common::spawn_with(
        common::plan_in(card, &task, Some(dir.to_path_buf()), registry),
        model,
    );
    let (_, summary) = common::collect(handle, |_, _| {});
    eprintln!("{}: {:?}", dir.display(), summary.status);
}

/// The views of the cost levers: the pareto card's objectives scatter with
/// its front on the quadrature task, the shares of an adaptive ensemble (the
/// offline model and one that never proposes an edit), and the plot with the
/// children a novelty gate rejected.
#[test]
#[ignore = "writes the README's screenshots"]
fn screenshots_of_the_objectives_models_and_rejected_views() {
    use galapagos::engine::model::{
        BanditSettings, EnsembleMember, EnsembleModel, LanguageModel, OfflineModel,
    };
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let pareto = runs.join("pareto-quadrature");
    let mut c = common::card("pareto.yaml", &registry);
    c.general.max_iterations = 150;
    record_with(
        c,
        "quadrature",
        galapagos::engine::model::default_model(),
        &pareto,
        &registry,
    );

    let bandit = runs.join("model_bandit-quadrature");
    let mut c = common::card("best_of_n.yaml", &registry);
    c.general.max_iterations = 150;
    let members = vec![
        EnsembleMember {
            name: "offline".into(),
            weight: 1.0,
            model: Arc::new(OfflineModel::new()),
        },
        EnsembleMember {
            name: "no-edit".into(),
            weight: 1.0,
            model: Arc::new(common::ScriptedModel::new(vec![Ok(
                "I would leave the program as it is.".into(),
            )])) as Arc<dyn LanguageModel>,
        },
    ];
    let ensemble = EnsembleModel::new(members)
        .unwrap()
        .adaptive(BanditSettings::default());
    record_with(c, "quadrature", Arc::new(ensemble), &bandit, &registry);

    let gated = runs.join("novelty_gate-quadrature");
    let mut c = common::card("novelty_gate.yaml", &registry);
    c.general.max_iterations = 150;
    if let Some(n) = c.general.novelty.as_mut() {
        n.threshold = 0.985;
    }
    record_with(
        c,
        "quadrature",
        galapagos::engine::model::default_model(),
        &gated,
        &registry,
    );

    for size in [egui::vec2(1024.0, 640.0), egui::vec2(1920.0, 1080.0)] {
        let mut h = harness(&runs, size, Arc::clone(&registry));
        h.run_steps(2);
        for (dir, view, name) in [
            (&pareto, SearchView::Objectives, "objectives"),
            (&bandit, SearchView::Models, "models"),
            (&gated, SearchView::Plot, "rejected"),
        ] {
            let run = read_archive(dir).unwrap();
            let best = run.history.best_id;
            h.state_mut().run_view.show_archived(run);
            h.state_mut().state.tab = Tab::Run;
            h.state_mut().run_view.set_search_view(view);
            h.state_mut().run_view.select(best);
            h.run_steps(4);
            save(&mut h, name, size);
        }
    }
}

#[test]
#[ignore = "writes the README's screenshots"]
fn screenshots_of_the_inspector_on_a_repository_genome() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let run_dir = runs.join("best_of_n-fit_package");
    record_on("fit_package", "best_of_n.yaml", 12, 0, &run_dir, &registry);
    for size in [egui::vec2(1024.0, 640.0), egui::vec2(1920.0, 1080.0)] {
        let mut h = harness(&runs, size, Arc::clone(&registry));
        h.run_steps(2);
        let run = read_archive(&run_dir).unwrap();
        // the best genome that changed both modules from its parent (the
        // history holds heads: the programs are in the archive)
        let genomes = galapagos::engine::archive::Archive::open(&run_dir)
            .unwrap()
            .genomes()
            .unwrap();
        let shown = genomes
            .iter()
            .filter(|g| g.valid)
            .filter(|g| {
                g.parent_id
                    .and_then(|p| genomes.iter().find(|x| x.id == p))
                    .is_some_and(|p| g.content.changes_from(&p.content).len() == 2)
            })
            .max_by(|a, b| a.fitness_or_min().total_cmp(&b.fitness_or_min()))
            .map(|g| g.id)
            .expect("a child that edits both modules");
        h.state_mut().run_view.show_archived(run);
        h.state_mut().state.tab = Tab::Run;
        h.state_mut().run_view.select(Some(shown));
        h.state_mut()
            .run_view
            .set_inspector_tab(galapagos::studio::run::InspectorTab::Diff);
        // its program and its parent's are read back from the archive
        step_until(&mut h, |a| {
            a.run_view.has_body(shown)
                && a.run_view
                    .history()
                    .get(shown)
                    .and_then(|g| g.parent_id)
                    .is_none_or(|p| a.run_view.has_body(p))
        });
        h.run_steps(4);
        save(&mut h, "repository", size);
    }
}
