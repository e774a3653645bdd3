//! Inspecting a search in the studio (egui_kittest, no GPU): the genealogy
//! tree selects what it is clicked on, two genomes are diffed side by side,
//! recorded runs are compared.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::card::{Card, SlotSpec};
use galapagos::engine::events::{RunEvent, RunStatus};
use galapagos::engine::genome::{FITNESS_KEY, Genome, GenomeId};
use galapagos::engine::registry::Registry;
use galapagos::engine::selection::PolicyStatus;
use galapagos::engine::tree::Tree;
use galapagos::studio::App;
use galapagos::studio::run::inspector::InspectorTab;
use galapagos::studio::run::{RunHistory, RunView, SearchView};
use galapagos::studio::state::State;

/// A history of `n` genomes: genome `i` is a child of `i / 3` (a tree three
/// wide), every seventh one invalid, scores growing with depth.
fn history(n: u64) -> RunHistory {
    let mut h = RunHistory::new();
    for i in 0..n {
        let parent = (i > 0).then_some(i / 3);
        let valid = i % 7 != 6;
        let mut g = Genome {
            id: i,
            parent_id: parent,
            iteration: i,
            valid,
            content: format!("x = {i}\ny = 2\nz = {}\n", i % 4).into(),
            ..Genome::default()
        };
        if valid {
            g.scores.insert(FITNESS_KEY.to_owned(), i as f64 / 10.0);
        }
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: Some(i),
            best_score: Some(i as f64 / 10.0),
            iterations_done: i,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

fn harness<'a>(view: RunView) -> Harness<'a, RunView> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            view,
        )
}

fn click_at(h: &mut Harness<'_, RunView>, pos: egui::Pos2) {
    h.hover_at(pos);
    h.step();
    for pressed in [true, false] {
        h.event(egui::Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::NONE,
        });
        h.step();
    }
    h.run_steps(2);
}

#[test]
fn clicking_a_node_of_the_tree_shows_its_genome_in_the_inspector() {
    let mut view = RunView::default();
    view.load_history(history(40));
    view.set_search_view(SearchView::Tree);
    let mut h = harness(view);
    h.run_steps(3);
    h.get_by_label("genealogy tree");
    assert!(
        h.query_by_label("colour by island").is_none(),
        "no islands here"
    );
    assert!(
        h.state().tree().drawn_nodes() >= 40,
        "every node is on screen"
    );
    let target: GenomeId = 17;
    let pos = h.state().tree_node_pos(target).unwrap();
    click_at(&mut h, pos);
    assert_eq!(h.state().selected(), Some(target));
    // The inspector shows it, with its parent in the lineage.
    h.get_by_label(&format!("Genome #{target}"));
    h.get_by_label("#5 (0.5000)");
    // A double click on its parent collapses the parent's subtree: the
    // genome is no longer laid out; selecting it again reveals it.
    let parent = h.state().tree_node_pos(5).unwrap();
    h.hover_at(parent);
    h.run_steps(30); // half a second: the next two clicks are a double click

    for _ in 0..2 {
        for pressed in [true, false] {
            h.event(egui::Event::PointerButton {
                pos: parent,
                button: egui::PointerButton::Primary,
                pressed,
                modifiers: egui::Modifiers::NONE,
            });
            h.step();
        }
    }
    h.run_steps(3);
    assert!(h.state().tree().is_collapsed(5));
    assert!(h.state().tree_node_pos(target).is_none());
    h.state_mut().select(Some(target));
    h.run_steps(3);
    assert!(!h.state().tree().is_collapsed(5));
    assert!(h.state().tree_node_pos(target).is_some());
}

#[test]
fn two_genomes_picked_in_the_table_are_diffed_unified_and_side_by_side() {
    let mut view = RunView::default();
    view.load_history(history(12));
    let mut h = harness(view);
    h.run_steps(3);
    // Select #3, then Ctrl+click #8: the Diff tab compares them.
    h.query_all_by_label("#3").next().unwrap().click();
    h.run_steps(2);
    h.get_by_label("#8")
        .click_modifiers(egui::Modifiers::COMMAND);
    h.run_steps(3);
    assert_eq!(h.state().selected(), Some(3));
    assert_eq!(h.state().picked(), Some(8));
    h.get_by_label("from #8 to #3");
    // Unified: removed and added lines with the line numbers of both sides
    // (x and z differ; y = 2 is context).
    h.get_by_label("- x = 8");
    h.get_by_label("+ x = 3");
    h.get_by_label("- z = 0");
    h.get_by_label("+ z = 3");
    h.get_by_label("  y = 2");
    assert!(
        h.query_all_by_label("3").count() >= 2,
        "line 3 on both sides"
    );
    // Side by side: the old line faces the new one.
    h.get_by_label("side by side").click();
    h.run_steps(2);
    h.get_by_label("x = 8");
    h.get_by_label("x = 3");
    h.get_by_label("z = 0");
    // Back to the parent: the picked genome stays available.
    h.get_by_label("parent #1").click();
    h.run_steps(2);
    h.get_by_label("from #1 to #3");
    h.get_by_label("picked #8");
}

/// A repository run's history: #0 a package of three files; #1 changes
/// `pkg/model.py`; #2 (a child of #1) changes `pkg/helper.py` and adds
/// `pkg/extra.py`; #3 (a child of #0) deletes `README.md`.
fn repository_history() -> RunHistory {
    let base = [
        ("README.md", "the package\n"),
        (
            "pkg/helper.py",
            "SCALE = 1.0\n\ndef scale(x):\n    return SCALE * x\n",
        ),
        (
            "pkg/model.py",
            "from .helper import scale\n\ndef predict(x):\n    return scale(x) + 0.0\n",
        ),
    ];
    let tree = |edits: &[(&str, Option<&str>)]| {
        let mut files: std::collections::BTreeMap<String, String> = base
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect();
        for (path, text) in edits {
            match text {
                Some(t) => files.insert((*path).to_owned(), (*t).to_owned()),
                None => files.remove(*path),
            };
        }
        Tree::from_texts(files)
    };
    let model_1 = "from .helper import scale\n\ndef predict(x):\n    return scale(x) + 0.5\n";
    let contents = [
        (None, tree(&[])),
        (Some(0), tree(&[("pkg/model.py", Some(model_1))])),
        (
            Some(1),
            tree(&[
                ("pkg/model.py", Some(model_1)),
                (
                    "pkg/helper.py",
                    Some("SCALE = 1.8\n\ndef scale(x):\n    return SCALE * x\n"),
                ),
                ("pkg/extra.py", Some("OFFSET = 0.4\n")),
            ]),
        ),
        (Some(0), tree(&[("README.md", None)])),
    ];
    let mut h = RunHistory::new();
    for (i, (parent, content)) in contents.into_iter().enumerate() {
        let i = i as u64;
        let mut g = Genome {
            id: i,
            parent_id: parent,
            iteration: i,
            valid: true,
            content,
            ..Genome::default()
        };
        g.scores.insert(FITNESS_KEY.to_owned(), i as f64 / 10.0);
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: Some(i),
            best_score: Some(i as f64 / 10.0),
            iterations_done: i,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

#[test]
fn two_genomes_of_a_repository_run_are_diffed_file_by_file_across_the_tree() {
    let mut view = RunView::default();
    view.load_history(repository_history());
    let mut h = harness(view);
    h.run_steps(3);
    // Select #2 and pick #3 (what a Ctrl+click in the table or the tree
    // does): #2 against #3 differs in every file (#3 lacks the README, #2
    // changed both modules and added one).
    h.state_mut().select(Some(2));
    h.state_mut().pick(Some(3));
    h.run_steps(3);
    assert_eq!(
        (h.state().selected(), h.state().picked()),
        (Some(2), Some(3))
    );
    h.get_by_label("from #3 to #2");
    h.get_by_label("whole tree (4 changed of 4 files)");
    // The whole tree's diff: each changed file under its path, with its
    // own lines.
    for path in ["README.md", "pkg/extra.py", "pkg/helper.py", "pkg/model.py"] {
        assert!(
            h.query_all_by_label(path).count() >= 2,
            "{path} in the list and as a diff's heading"
        );
    }
    h.get_by_label("- SCALE = 1.0");
    h.get_by_label("+ SCALE = 1.8");
    h.get_by_label("-     return scale(x) + 0.0");
    h.get_by_label("+     return scale(x) + 0.5");
    h.get_by_label("+ OFFSET = 0.4");
    h.get_by_label("+ the package");
    // One file chosen in the list: only its diff.
    h.query_all_by_label("pkg/helper.py")
        .next()
        .unwrap()
        .click();
    h.run_steps(2);
    h.get_by_label("+ SCALE = 1.8");
    assert!(h.query_by_label("+ OFFSET = 0.4").is_none());
    assert!(h.query_by_label("+     return scale(x) + 0.5").is_none());
    // Side by side, the same file.
    h.get_by_label("side by side").click();
    h.run_steps(2);
    h.get_by_label("SCALE = 1.0");
    h.get_by_label("SCALE = 1.8");
    // Back to the parent (#1): only the files #2 changed from it.
    h.get_by_label("unified").click();
    h.get_by_label("parent #1").click();
    h.run_steps(2);
    h.get_by_label("from #1 to #2");
    h.get_by_label("whole tree (2 changed of 4 files)");
    h.query_all_by_label("whole tree (2 changed of 4 files)")
        .next()
        .unwrap()
        .click();
    h.run_steps(2);
    h.get_by_label("+ OFFSET = 0.4");
    h.get_by_label("+ SCALE = 1.8");
    assert!(h.query_by_label("+     return scale(x) + 0.5").is_none());
}

#[test]
fn a_two_hundred_file_tree_scrolls_in_the_inspector_at_1024_by_640() {
    let files: std::collections::BTreeMap<String, String> = (0..200)
        .map(|i| (format!("src/mod_{i:03}.py"), format!("VALUE_{i} = {i}\n")))
        .collect();
    let mut h = RunHistory::new();
    let mut g = Genome {
        id: 0,
        iteration: 0,
        valid: true,
        content: Tree::from_texts(files),
        ..Genome::default()
    };
    g.scores.insert(FITNESS_KEY.to_owned(), 1.0);
    h.apply(RunEvent::GenomeAdmitted {
        genome: Arc::new(g),
        best_id: Some(0),
        best_score: Some(1.0),
        iterations_done: 0,
        policy: PolicyStatus::default(),
        active: vec![],
    });
    let mut view = RunView::default();
    view.load_history(h);
    view.select(Some(0));
    view.set_inspector_tab(InspectorTab::Program);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1024.0, 640.0))
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            view,
        );
    h.run_steps(3);
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1024.0, 640.0));
    let list = h.get_by_label("whole tree (200 files)").rect();
    assert!(
        window.contains_rect(list),
        "the list's head is in view: {list:?}"
    );
    let first = h.get_by_label("src/mod_000.py").rect();
    let last = h.get_by_label("src/mod_199.py").rect();
    assert!(window.contains_rect(first), "{first:?}");
    // The list is a scroll area of its own: its end is out of view, and
    // the program's text still shows below it, inside the window.
    assert!(last.min.y > first.max.y + 200.0, "{first:?} {last:?}");
    let mut visible_rows = 0;
    for i in 0..200 {
        let r = h.get_by_label(&format!("src/mod_{i:03}.py")).rect();
        if r.max.y <= 640.0 && r.min.y >= list.min.y {
            visible_rows += 1;
        }
    }
    assert!(visible_rows < 200, "a list of 200 rows fits in 640 points?");
    // The mouse wheel over the list brings its last row up into the list's
    // own area, inside the window.
    let over = first.center();
    h.hover_at(over);
    h.run_steps(1);
    let area_bottom = first.min.y + 140.0;
    for _ in 0..100 {
        if h.get_by_label("src/mod_199.py").rect().max.y <= area_bottom {
            break;
        }
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, -100.0),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Wheel,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(2);
    }
    let last_now = h.get_by_label("src/mod_199.py").rect();
    assert!(last_now.max.y <= area_bottom, "{last_now:?}");
    assert!(
        last_now.min.y < last.min.y,
        "the list scrolled: {last:?} -> {last_now:?}"
    );
    assert!(
        window.contains_rect(last_now),
        "its last row in view: {last_now:?}"
    );
    // Choosing a file far down the list shows its text.
    h.get_by_label("src/mod_199.py").click();
    h.run_steps(3);
    assert!(
        h.query_all_by_label_contains("VALUE_199 = 199").count() >= 1,
        "the chosen file's text"
    );
}

/// Record a run of `card` on `task` into `dir`.
fn record(card: Card, task: &Path, dir: &Path, registry: &Arc<Registry>) {
    let handle = common::spawn(common::plan_in(
        card,
        task,
        Some(dir.to_path_buf()),
        registry,
    ));
    let (_, summary) = common::collect(handle, |_, _| {});
    assert_eq!(summary.status, RunStatus::Completed);
}

fn app_harness(runs: &Path, registry: Arc<Registry>) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            App::new(state, registry).with_settings_path(None),
        )
}

fn step_until(h: &mut Harness<'static, App>, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(h.state()) {
        assert!(Instant::now() < deadline, "timed out");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
}

#[test]
fn compared_runs_keep_their_curves_and_colours_across_a_refresh() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut first = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    first.general.max_iterations = 5;
    let mut second = first.clone();
    second.name = "second_card".to_owned();
    second.seed = 7;
    let (dir_a, dir_b) = (runs.join("run-a"), runs.join("run-b"));
    record(first, &task, &dir_a, &registry);
    record(second, &task, &dir_b, &registry);

    let mut h = app_harness(&runs, registry);
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("compare run-a").click();
    h.run_steps(1);
    h.get_by_label("compare run-b").click();
    step_until(&mut h, |a| a.runs.compared().len() == 2);
    let colors = (
        h.state().runs.color_of(&dir_a),
        h.state().runs.color_of(&dir_b),
    );
    assert_ne!(colors.0, colors.1);
    // The summary table and the card diff beside the curves.
    for header in ["seed", "valid %", "tokens", "cost", "wall time"] {
        h.get_by_label(header);
    }
    h.get_by_label("7");
    // The card diff is drawn once both runs' cards are read (in the
    // background, like the curves): wait for it rather than for a number of
    // frames, which a loaded machine can outlast.
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.query_by_label("- name: best_of_n").is_none() {
        assert!(Instant::now() < deadline, "the card diff never appeared");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.get_by_label("+ name: second_card");
    h.get_by_label("+ seed: 7");

    // A refresh keeps both curves on screen, reads them again, and keeps
    // the colours.
    h.get_by_label("Refresh runs").click();
    h.run_steps(1);
    assert_eq!(
        h.state().runs.compared().len(),
        2,
        "curves dropped by a refresh"
    );
    step_until(&mut h, |a| a.runs.compared().len() == 2);
    h.run_steps(5);
    assert_eq!(h.state().runs.compared().len(), 2);
    h.get_by_label("+ name: second_card");
    assert_eq!(
        (
            h.state().runs.color_of(&dir_a),
            h.state().runs.color_of(&dir_b)
        ),
        colors
    );
    // Untick and tick again: the same colour.
    h.get_by_label("compare run-a").click();
    h.run_steps(2);
    h.get_by_label("compare run-a").click();
    step_until(&mut h, |a| a.runs.compared().len() == 2);
    assert_eq!(h.state().runs.color_of(&dir_a), colors.0);
    assert_eq!(h.state().runs.color_of(&dir_b), colors.1);
}

/// A history whose genomes live on two islands (programs of growing length,
/// so the complexity feature spreads them over the grid).
fn island_history(n: u64) -> RunHistory {
    let mut h = RunHistory::new();
    for i in 0..n {
        let mut g = Genome {
            id: i,
            parent_id: (i > 0).then_some(i / 2),
            iteration: i,
            valid: true,
            content: format!("x = {i}\n{}", "# pad\n".repeat((i % 9) as usize)).into(),
            ..Genome::default()
        };
        g.metadata.island = (i > 0).then_some((i % 2) as u32);
        g.scores
            .insert(FITNESS_KEY.to_owned(), ((i * 37) % 101) as f64 / 100.0);
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: None,
            best_score: None,
            iterations_done: i,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

#[test]
fn an_island_population_shows_its_grids_and_a_beam_its_membership_over_time() {
    let spec: SlotSpec = serde_yaml::from_str(
        "kind: islands\nnum_islands: 2\nfeature_dimensions: [complexity]\nfeature_bins: 4\nmigration_interval: 5\n",
    )
    .unwrap();
    let mut view = RunView::default();
    view.load_history(island_history(60));
    view.set_population(&spec);
    view.set_search_view(SearchView::Islands);
    let mut h = harness(view);
    h.run_steps(10);
    assert_eq!(h.state().structure().fed(), 60);
    h.get_by_label("Island 0");
    h.get_by_label("Island 1");
    h.get_by_label("island 0 grid");
    let islands = h.state().structure().islands().unwrap();
    assert_eq!(islands.islands.len(), 2);
    assert!(islands.islands.iter().all(|i| i.cells > 1), "{islands:?}");
    assert!(!h.state().structure().migrations.is_empty());
    assert_eq!(h.query_all_by_label_contains("migrants").count(), 2);
    // The tree can colour its nodes by island.
    h.state_mut().set_search_view(SearchView::Tree);
    h.run_steps(2);
    h.get_by_label("colour by island").click();
    h.run_steps(2);
    assert!(h.state().tree().color_by_island);

    let spec: SlotSpec = serde_yaml::from_str("kind: beam\nbeam_width: 3\n").unwrap();
    let mut view = RunView::default();
    view.load_history(island_history(30));
    view.set_population(&spec);
    view.set_search_view(SearchView::Beam);
    let mut h = harness(view);
    h.run_steps(5);
    h.get_by_label("beam membership over time");
    let beam = &h.state().structure().beam;
    assert!(beam.len() > 3, "{beam:?}");
    assert!(beam.iter().all(|s| s.members.len() <= 3));
    // A flat population offers neither view.
    let mut view = RunView::default();
    view.load_history(island_history(5));
    view.set_search_view(SearchView::Islands);
    let mut h = harness(view);
    h.run_steps(2);
    assert_eq!(h.state().search_view(), SearchView::Plot);
    assert!(h.query_by_label("Islands").is_none());
}

/// The islands view replays the card's population block as the run built
/// it: checked against its parameter table first, so a block the run would
/// refuse is named with the reason instead of drawn from other values.
#[test]
fn the_replayed_population_is_checked_like_the_run_checks_it() {
    let spec: SlotSpec = serde_yaml::from_str(
        "kind: islands
num_islands: 0
feature_bins: 4
",
    )
    .unwrap();
    let mut view = RunView::default();
    view.load_history(island_history(20));
    view.set_population(&spec);
    view.set_search_view(SearchView::Islands);
    let mut h = harness(view);
    h.run_steps(3);
    assert_eq!(h.state().search_view(), SearchView::Islands);
    assert!(h.state().structure().islands().is_none());
    h.get_by_label_contains("population.islands: num_islands");
}

/// A copy of the built-in repository task (`fit_package`) in `dir`.
fn repository_task(dir: &Path) -> std::path::PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
    let task = dir.join("fit_package");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/fit_package"),
        &task,
    );
    task
}

#[test]
fn recorded_repository_runs_are_compared_and_their_genomes_diffed_across_files() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = repository_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut first = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    first.general.max_iterations = 8;
    let mut second = first.clone();
    second.name = "second_card".to_owned();
    second.seed = 7;
    let (dir_a, dir_b) = (runs.join("run-a"), runs.join("run-b"));
    record(first, &task, &dir_a, &registry);
    record(second, &task, &dir_b, &registry);

    let mut h = app_harness(&runs, registry);
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    // Both runs' curves and digests are read from their archives (trees by
    // reference) and compared.
    h.get_by_label("compare run-a").click();
    h.run_steps(1);
    h.get_by_label("compare run-b").click();
    step_until(&mut h, |a| a.runs.compared().len() == 2);
    for curve in h.state().runs.compared() {
        assert_eq!(curve.digest.genomes, 9, "{}", curve.label);
        assert!(!curve.points.is_empty(), "{}", curve.label);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.query_by_label("+ name: second_card").is_none() {
        assert!(Instant::now() < deadline, "the card diff never appeared");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    // Open one read-only: its genomes are folders in the run view.
    h.state_mut().runs.select(&dir_a);
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.query_by_label("Open read-only").is_none() {
        assert!(Instant::now() < deadline, "no Open read-only button");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.get_by_label("Open read-only").click();
    step_until(&mut h, |a| a.run_view.history().genomes.len() == 9);
    // the view holds the genomes' heads; their programs are in the archive
    let genomes = galapagos::engine::archive::Archive::open(&dir_a)
        .unwrap()
        .genomes()
        .unwrap();
    assert!(genomes.iter().all(|g| !g.content.is_single()));
    // Two genomes whose programs differ in more than one file, if the
    // offline model made such a pair; else any two that differ.
    let differing = |a: &Genome, b: &Genome| a.content.changes_from(&b.content).len();
    let (a, b) = genomes
        .iter()
        .flat_map(|a| genomes.iter().map(move |b| (a, b)))
        .max_by_key(|(a, b)| differing(a, b))
        .unwrap();
    let changes = a.content.changes_from(&b.content);
    assert!(!changes.is_empty(), "the offline model changed no file");
    h.state_mut().run_view.select(Some(a.id));
    h.state_mut().run_view.pick(Some(b.id));
    // both programs are read back from the archive, off the UI thread
    step_until(&mut h, |app| {
        app.run_view.has_body(a.id) && app.run_view.has_body(b.id)
    });
    h.run_steps(3);
    h.get_by_label(&format!("from #{} to #{}", b.id, a.id));
    h.get_by_label(&format!(
        "whole tree ({} changed of {} files)",
        changes.len(),
        a.content.len()
    ));
    for c in &changes {
        assert!(
            h.query_all_by_label(&c.path).count() >= 2,
            "{} in the list and as its diff's heading",
            c.path
        );
    }
}

/// Two runs of one card compared: the card diff says the cards are
/// identical (not "the two programs").
#[test]
fn the_card_diff_of_two_runs_of_one_card_says_the_cards_are_identical() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut card = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    card.general.max_iterations = 3;
    record(card.clone(), &task, &runs.join("run-a"), &registry);
    record(card, &task, &runs.join("run-b"), &registry);

    let mut h = app_harness(&runs, registry);
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    h.get_by_label("compare run-a").click();
    h.run_steps(1);
    h.get_by_label("compare run-b").click();
    step_until(&mut h, |a| a.runs.compared().len() == 2);
    let deadline = Instant::now() + Duration::from_secs(30);
    while h
        .query_by_label("Tick two runs to diff their cards.")
        .is_some()
    {
        assert!(Instant::now() < deadline, "the card diff never appeared");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
    assert!(
        h.query_by_label("The two programs are identical.")
            .is_none()
    );
    h.get_by_label("The two runs' cards are identical.");
}

/// The Scores tab: an error metric (`rmse`, `max_abs_error`, `loss`) is
/// lower-is-better unless flipped; any other metric higher-is-better; the
/// Δ colours follow.
#[test]
fn error_metrics_default_to_lower_is_better_in_the_scores_tab() {
    let mut history = RunHistory::new();
    for (id, rmse) in [(0u64, 0.5), (1, 0.25)] {
        let mut g = Genome {
            id,
            parent_id: id.checked_sub(1),
            iteration: id,
            valid: true,
            content: format!("x = {id}\n").into(),
            ..Genome::default()
        };
        g.scores.insert(FITNESS_KEY.to_owned(), 1.0 + id as f64);
        g.scores.insert("rmse".to_owned(), rmse);
        g.scores.insert("max_abs_error".to_owned(), rmse * 2.0);
        g.scores.insert("loss".to_owned(), rmse * 3.0);
        g.scores
            .insert("accuracy".to_owned(), 0.5 + id as f64 / 4.0);
        history.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: Some(id),
            best_score: Some(1.0 + id as f64),
            iterations_done: id,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    let mut view = RunView::default();
    view.load_history(history);
    view.select(Some(1));
    let mut h = harness(view);
    h.run_steps(3);
    let buttons = |h: &Harness<'_, RunView>, label: &str| {
        h.query_all_by_label(label)
            .filter(|n| n.accesskit_node().role() == egui::accesskit::Role::Button)
            .count()
    };
    assert_eq!(
        buttons(&h, "lower"),
        3,
        "rmse, max_abs_error and loss are lower-is-better"
    );
    assert_eq!(buttons(&h, "higher"), 1, "accuracy is higher-is-better");
    // flipped by hand, and back
    h.query_all_by_label("lower")
        .find(|n| n.accesskit_node().role() == egui::accesskit::Role::Button)
        .unwrap()
        .click();
    h.run_steps(2);
    assert_eq!(buttons(&h, "lower"), 2);
    assert_eq!(buttons(&h, "higher"), 2);
}
