#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Composing a card that cannot go wrong, on the real registry and the
//! shipped card and task: a block that does not go with the others is flagged
//! in the palette, blocks Start run with the reason, and is fixed in one click.

use std::path::PathBuf;
use std::sync::Arc;

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::component::Slot;
use galapagos::engine::registry::Registry;
use galapagos::studio::state::State;
use galapagos::studio::{App, StudioLaunch};

/// The studio on `best_of_n` and `circle_packing`, runs in `runs`.
fn studio(runs: &std::path::Path, size: egui::Vec2) -> Harness<'static, App> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch {
        card: Some(root.join("cards/best_of_n.yaml")),
        task: Some(root.join("assets/tasks/circle_packing")),
    });
    assert!(app.card_errors().is_none());
    let mut h = Harness::builder()
        .with_size(size)
        .with_max_steps(16)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    h
}

fn kind(h: &Harness<'_, App>, slot: Slot) -> String {
    h.state().doc.card.slot(slot).kind.clone()
}

fn start_disabled(h: &Harness<'_, App>) -> bool {
    h.get_by_role_and_label(Role::Button, "Start run")
        .accesskit_node()
        .is_disabled()
}

#[test]
fn an_incompatible_beam_pick_is_flagged_blocks_start_with_the_reason_and_is_fixed_in_one_click() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), egui::vec2(1024.0, 640.0));
    assert_eq!(h.state().run_blocker(), None);
    assert!(!start_disabled(&h));

    // the palette says beforehand what the beam policy needs, and offers the pair
    h.get_by_label("Does not fit: needs a beam population");
    h.get_by_role_and_label(
        Role::Button,
        "BeamPolicy: also switch Population to BeamPopulation",
    );

    // the natural first edit: the beam policy alone
    h.get_by_label("BeamPolicy").click_accesskit();
    h.run();
    assert_eq!(kind(&h, Slot::SelectionPolicy), "beam");
    assert_eq!(kind(&h, Slot::Population), "in_memory");
    let blocker = h.state().run_blocker().unwrap();
    assert!(
        blocker.contains("selection_policy.kind: BeamPolicy")
            && blocker.contains("needs a beam population")
            && blocker.contains("switch population to `beam` (BeamPopulation)"),
        "{blocker}"
    );
    assert!(
        start_disabled(&h),
        "Start run is enabled on an incompatible card"
    );
    assert!(h.state().save_blocker().is_some());

    // one click fixes it, as one undo step
    h.get_by_role_and_label(
        Role::Button,
        "Fix: also switch Population to BeamPopulation",
    )
    .click_accesskit();
    h.run();
    assert_eq!(kind(&h, Slot::Population), "beam");
    assert_eq!(kind(&h, Slot::SelectionPolicy), "beam");
    assert_eq!(h.state().run_blocker(), None);
    assert!(!start_disabled(&h));
    assert!(
        h.query_by_label("Does not fit: needs a beam population")
            .is_none()
    );

    // the other way round: a flat population under the beam policy is flagged too
    h.get_by_label("Population  (3)").click_accesskit();
    h.run();
    // (InMemoryPopulation and IslandsPopulation)
    assert_eq!(
        h.get_all_by_label("Does not fit: BeamPolicy needs a beam population")
            .count(),
        2
    );
    h.state_mut().doc.undo();
    h.run();
    assert_eq!(kind(&h, Slot::Population), "in_memory");
    h.state_mut().doc.undo();
    h.run();
    assert_eq!(kind(&h, Slot::SelectionPolicy), "best_of_n");

    // the palette's pair puts both in at once
    h.get_by_role_and_label(
        Role::Button,
        "BeamPolicy: also switch Population to BeamPopulation",
    )
    .click_accesskit();
    h.run();
    assert_eq!(kind(&h, Slot::SelectionPolicy), "beam");
    assert_eq!(kind(&h, Slot::Population), "beam");
    assert_eq!(h.state().run_blocker(), None);
    assert!(h.state_mut().doc.undo());
    assert_eq!(kind(&h, Slot::SelectionPolicy), "best_of_n");
    assert_eq!(kind(&h, Slot::Population), "in_memory");
}

/// Opened anywhere: the library lists the built-in cards whatever its folder
/// holds, a card and a task given by name resolve to the built-ins, and the
/// studio is ready to run.
#[test]
fn built_in_cards_are_listed_and_names_resolve_outside_the_repository() {
    let runs = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let state = State {
        runs_folder: runs.path().to_path_buf(),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_model(galapagos::engine::model::default_model());
    app.set_library_folder(empty.path());
    app.launch(StudioLaunch {
        card: Some(PathBuf::from("topk")),
        task: Some(PathBuf::from("circle_packing")),
    });
    assert!(app.card_errors().is_none());
    assert_eq!(app.doc.card.name, "topk");
    assert_eq!(app.doc.path, None, "a built-in opens as a new card");
    assert!(app.task_dir().join("evaluator.py").is_file());
    let mut h = Harness::builder()
        .with_size(egui::vec2(1024.0, 640.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    assert_eq!(h.state().run_blocker(), None);
    assert!(h.query_by_label_contains("No cards in").is_none());
    let title = galapagos::engine::card::Card::from_yaml(
        galapagos::engine::builtin::card("beam_search")
            .unwrap()
            .yaml,
        "x",
        &Registry::builtin(),
    )
    .unwrap()
    .display_title()
    .to_owned();
    h.get_by_label(&title).click_accesskit();
    h.run();
    assert_eq!(h.state().doc.card.name, "beam_search");
    assert_eq!(h.state().run_blocker(), None);
    // the path field follows the open card: nothing to overwrite
    assert_eq!(h.state().path_field, "");
}

fn inside(r: egui::Rect, outer: egui::Rect) -> bool {
    outer.expand(1.0).contains_rect(r)
}

/// Step the studio (and its run) until `done`, or fail after `secs`.
fn step_until(h: &mut Harness<'_, App>, secs: u64, done: impl Fn(&App) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !done(h.state()) {
        h.step();
        let ctx = h.ctx.clone();
        h.state_mut().logic(&ctx);
        assert!(std::time::Instant::now() < deadline, "timed out");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    h.run();
}

/// At 1024×640 the six blocks, the inspector and the toolbar fit without
/// overlapping; F5 starts a run, whose plot, table and inspector fit too (the
/// block inspector gives way), and Shift+F5 stops it.
#[test]
fn at_1024_by_640_everything_fits_and_the_keyboard_starts_and_stops_a_run() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), egui::vec2(1024.0, 640.0));
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1024.0, 640.0));
    let canvas = h.get_by_label("Block canvas").rect();
    assert!(inside(canvas, window), "canvas {canvas:?}");
    // the blocks are drawn in the canvas's own coordinates, zoomed to fit:
    // what the canvas shows holds all six, at a zoom that keeps them legible
    let view = h.state().canvas_view().rect;
    let zoom = (canvas.width() / view.width()).min(canvas.height() / view.height());
    assert!(zoom > 0.75, "zoomed out to {zoom}");
    let mut blocks: Vec<egui::Rect> = Vec::new();
    for slot in Slot::ALL {
        let r = h.get_by_label(&format!("{} block", slot.title())).rect();
        assert!(
            inside(r, view),
            "{slot} block {r:?} outside the view {view:?}"
        );
        assert!(
            r.width() * zoom > 80.0,
            "{slot} block too small: {r:?} at {zoom}"
        );
        for other in &blocks {
            assert!(!r.intersects(*other), "{slot} block overlaps another");
        }
        blocks.push(r);
    }
    // a block's small lines (its kind, its parameters) are legible on
    // screen: a line's height times the zoom is that of a 9-point font (it
    // was 7 points: egui's 9-point small text at the zoom of 0.8)
    let line = h.get_by_label("capacity = null").rect();
    assert!(
        line.height() * zoom >= 10.5,
        "a parameter line {line:?} at {zoom}: {} points on screen",
        line.height() * zoom
    );
    // the toolbar: nothing overprints
    let mut bar: Vec<(String, egui::Rect)> = ["Start run", "Undo", "Redo", "New", "Save to path"]
        .into_iter()
        .map(|l| (l.to_owned(), h.get_by_label(l).rect()))
        .collect();
    bar.push((
        "Model".to_owned(),
        h.get_by_label_contains("Model: ").rect(),
    ));
    for (i, (a, ra)) in bar.iter().enumerate() {
        assert!(inside(*ra, window), "{a} {ra:?} outside the window");
        for (b, rb) in &bar[i + 1..] {
            assert!(!ra.intersects(*rb), "{a} {ra:?} overlaps {b} {rb:?}");
        }
    }
    // every block's inspector draws (its texts have glyphs) inside the window,
    // beside the canvas, also with the widest parameter rows (the beam policy)
    h.get_by_label("BeamPolicy").click_accesskit();
    h.run();
    let canvas = h.get_by_label("Block canvas").rect();
    let r = h.get_by_label("Implementation").rect();
    assert!(
        inside(r, window) && !canvas.intersects(r),
        "{r:?} vs the canvas {canvas:?}"
    );
    assert!(h.state_mut().doc.undo());
    h.run();
    for slot in Slot::ALL {
        h.get_by_label(&format!("{} block", slot.title()))
            .click_accesskit();
        h.run();
        assert_eq!(h.state().selected, slot);
        let r = h.get_by_label("Implementation").rect();
        assert!(inside(r, window), "{slot} inspector {r:?}");
        assert!(!canvas.intersects(r), "the inspector covers the canvas");
    }

    // F5 starts the run and shows it
    h.key_press(egui::Key::F5);
    step_until(&mut h, 120, |app| app.run_view.history().genomes.len() >= 4);
    assert!(h.state().run_view.is_running());
    assert_eq!(h.state().state.tab, galapagos::studio::state::Tab::Run);
    let best = h.state().run_view.history().best_id.unwrap();
    h.state_mut().run_view.select(Some(best));
    h.run();
    assert!(
        h.query_by_label("Implementation").is_none(),
        "the block inspector stays on the Run tab"
    );
    let plot = h.get_by_label("Fitness plot").rect();
    let table = h.get_by_label("iteration").rect();
    let inspector = h.get_by_label(&format!("Genome #{best}")).rect();
    for (what, r) in [("plot", plot), ("table", table), ("inspector", inspector)] {
        assert!(inside(r, window), "{what} {r:?} outside the window");
    }
    assert!(
        plot.height() > 100.0 && plot.width() > 300.0,
        "plot {plot:?}"
    );
    assert!(!plot.intersects(inspector) && !table.intersects(inspector));

    // Shift+F5 stops it
    h.key_press_modifiers(egui::Modifiers::SHIFT, egui::Key::F5);
    step_until(&mut h, 60, |app| !app.run_view.is_running());
    let summary = h.state().run_view.history().summary.clone().unwrap();
    assert_eq!(
        summary.status,
        galapagos::engine::events::RunStatus::Stopped
    );
    assert!(summary.iterations < 100, "{}", summary.iterations);

    // arrows move through the table's rows (sorted by id), the inspector follows; from the first row, since the
    // run may have stopped with the selected genome in the last row, where ArrowDown has nowhere to go
    h.state_mut().run_view.select(Some(0));
    h.run();
    h.key_press(egui::Key::ArrowDown);
    h.run();
    let next = h.state().run_view.selected().unwrap();
    assert!(next > 0, "0 -> {next}");
    h.get_by_label(&format!("Genome #{next}"));
    h.key_press(egui::Key::ArrowDown);
    h.run();
    let after = h.state().run_view.selected().unwrap();
    assert!(after > next, "{next} -> {after}");
    h.key_press(egui::Key::ArrowUp);
    h.run();
    assert_eq!(h.state().run_view.selected(), Some(next));
    h.key_press(egui::Key::Home);
    h.run();
    assert_eq!(h.state().run_view.selected(), Some(0));

    // Ctrl+1 goes back to the blocks
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Num1);
    h.run();
    assert_eq!(h.state().state.tab, galapagos::studio::state::Tab::Editor);
    h.get_by_label("Population block");
}

/// Renders the blocks and run views at 1024×640 and 1920×1080 (wgpu on a
/// CPU adapter): `SCREENSHOT_DIR=assets/screenshots cargo test --test
/// studio_compose -- --ignored screenshots`.
#[test]
#[ignore = "writes PNG files; run by hand"]
fn screenshots() {
    let out = std::env::var("SCREENSHOT_DIR").unwrap_or_else(|_| "target/screenshots".to_owned());
    std::fs::create_dir_all(&out).unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (w, h_px) in [(1024.0, 640.0), (1920.0, 1080.0)] {
        let runs = tempfile::tempdir().unwrap();
        let state = State {
            runs_folder: runs.path().to_path_buf(),
            ..State::default()
        };
        let mut app = App::new(state, Arc::new(Registry::builtin()))
            .with_model(galapagos::engine::model::default_model());
        app.launch(StudioLaunch {
            card: Some(root.join("cards/best_of_n.yaml")),
            task: Some(root.join("assets/tasks/circle_packing")),
        });
        let mut h = Harness::builder()
            .with_size(egui::vec2(w, h_px))
            .wgpu()
            .build_ui_state(|ui, app: &mut App| app.show(ui), app);
        h.run();
        // the natural first edit, flagged, with its fix on offer
        h.get_by_label("BeamPolicy").click_accesskit();
        h.run_steps(3);
        h.render()
            .unwrap()
            .save(format!("{out}/blocks-{w}x{h_px}.png"))
            .unwrap();
        h.get_by_role_and_label(
            Role::Button,
            "Fix: also switch Population to BeamPopulation",
        )
        .click_accesskit();
        h.run();
        h.key_press(egui::Key::F5);
        step_until(&mut h, 30, |app| app.run_view.is_running());
        step_until(&mut h, 240, |app| {
            app.run_view.history().genomes.len() >= 60 || !app.run_view.is_running()
        });
        let best = h.state().run_view.history().best_id;
        h.state_mut().run_view.select(best);
        h.run_steps(3);
        h.render()
            .unwrap()
            .save(format!("{out}/run-{w}x{h_px}.png"))
            .unwrap();
        h.key_press_modifiers(egui::Modifiers::SHIFT, egui::Key::F5);
        step_until(&mut h, 60, |app| !app.run_view.is_running());
    }
}

/// The unsaved-changes question offers Save: the edits are written to the
/// card's file, then the waiting action goes on; undoing back to the saved
/// card clears the unsaved marker.
#[test]
fn the_unsaved_changes_dialog_saves_and_undo_back_to_the_saved_card_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.yaml");
    std::fs::write(
        &path,
        galapagos::engine::builtin::card("best_of_n").unwrap().yaml,
    )
    .unwrap();
    let runs = tempfile::tempdir().unwrap();
    let state = State {
        runs_folder: runs.path().to_path_buf(),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch {
        card: Some(path.clone()),
        task: None,
    });
    let mut h = Harness::builder()
        .with_size(egui::vec2(1024.0, 640.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    let mut edited = h.state().doc.card.clone();
    edited.seed = 7;
    h.state_mut().doc.edit("seed", edited.clone());
    h.run();
    assert!(h.state().doc.dirty);
    assert_eq!(h.state().doc.title(), "mine.yaml *");
    assert!(h.state_mut().doc.undo());
    h.run();
    assert!(!h.state().doc.dirty, "undo back to the opened card");
    assert_eq!(h.state().doc.title(), "mine.yaml");
    assert!(h.state_mut().doc.redo());
    h.run();
    assert!(h.state().doc.dirty);

    h.get_by_label("New").click();
    h.run();
    assert!(h.state().confirming_discard());
    h.get_by_role_and_label(Role::Button, "Save and continue")
        .click();
    h.run();
    assert!(!h.state().confirming_discard());
    let saved = galapagos::engine::card::Card::load(&path, &Registry::builtin()).unwrap();
    assert_eq!(saved, edited);
    assert_eq!(h.state().doc.card.name, "untitled");
    assert!(!h.state().doc.dirty);
    assert_eq!(
        h.state().path_field,
        "",
        "the path field follows the new card"
    );
}

/// Tab reaches Start run within a few presses, and the tabs before the ~45
/// items of the palette.
#[test]
fn tab_reaches_start_run_and_the_tabs_before_the_palette() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), egui::vec2(1024.0, 640.0));
    let presses_until = |h: &mut Harness<'_, App>, role: Role, label: &str, max: usize| {
        for n in 1..=max {
            h.key_press(egui::Key::Tab);
            h.run();
            if h.get_by_role_and_label(role, label).is_focused() {
                return Some(n);
            }
        }
        None
    };
    let start = presses_until(&mut h, Role::Button, "Start run", 10);
    assert!(
        start.is_some(),
        "Start run not reached in 10 presses of Tab"
    );
    let tab = presses_until(&mut h, Role::Button, "Runs", 20);
    assert!(tab.is_some(), "the Runs tab not reached in 20 more presses");
    h.key_press(egui::Key::Enter);
    h.run();
    assert_eq!(h.state().state.tab, galapagos::studio::state::Tab::Runs);
}

/// The studio on `card` (or the built-in `best_of_n` when `None`), its
/// seed edited so it has unsaved changes.
fn edited_studio(card: Option<PathBuf>, runs: &std::path::Path) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch {
        card: Some(card.unwrap_or_else(|| PathBuf::from("best_of_n"))),
        task: None,
    });
    let mut h = Harness::builder()
        .with_size(egui::vec2(1024.0, 640.0))
        .with_max_steps(16)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    let mut edited = h.state().doc.card.clone();
    edited.seed = 7;
    h.state_mut().doc.edit("seed", edited);
    h.run();
    assert!(h.state().doc.dirty);
    h
}

/// Type `path` in the card path field and click Open path: the unsaved
/// changes are asked about.
fn open_typed_path(h: &mut Harness<'static, App>, path: &std::path::Path) {
    h.state_mut().path_field = path.display().to_string();
    h.run_steps(3);
    h.get_by_role_and_label(Role::Button, "Open path").click();
    h.run_steps(3);
    assert!(h.state().confirming_discard());
}

/// Opening a card by its typed path with unsaved changes, "Save and
/// continue" saves the card being edited to its own file, never over the
/// file being opened (which the path field names by then); a card with no
/// file is saved where the question's Save as field says, under that file's
/// name, and the field refuses the file being opened.
#[test]
fn save_and_continue_never_writes_over_the_card_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.yaml");
    let other_text = galapagos::engine::builtin::card("topk").unwrap().yaml;
    std::fs::write(&other, other_text).unwrap();

    // a card with a file of its own: saved there, then the other opens
    let mine = dir.path().join("mine.yaml");
    std::fs::write(
        &mine,
        galapagos::engine::builtin::card("best_of_n").unwrap().yaml,
    )
    .unwrap();
    let mut h = edited_studio(Some(mine.clone()), runs.path());
    open_typed_path(&mut h, &other);
    h.get_by_role_and_label(Role::Button, "Save and continue")
        .click();
    h.run_steps(3);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), other_text);
    let saved = galapagos::engine::card::Card::load(&mine, &Registry::builtin()).unwrap();
    assert_eq!(saved.seed, 7, "the edits are in the card's own file");
    assert_eq!(h.state().doc.path.as_deref(), Some(other.as_path()));
    assert!(!h.state().confirming_discard());

    // a card never saved (the built-in one): the other file is untouched
    let mut h = edited_studio(None, runs.path());
    assert!(h.state().doc.path.is_none());
    open_typed_path(&mut h, &other);
    // nothing typed where to save it: the card path field (the file being
    // opened) is not taken for the card's own file; a save dialog asks (its
    // job's spinner keeps frames coming from here on: the test steps frames
    // rather than waiting for the studio to settle)
    h.get_by_role_and_label(Role::Button, "Save and continue")
        .click();
    h.run_steps(2);
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        other_text,
        "the card being opened was written over"
    );
    assert!(h.state().doc.dirty && h.state().doc.path.is_none());
    assert!(h.state().confirming_discard(), "the question was closed");
    let type_save_as = |h: &mut Harness<'static, App>, path: &std::path::Path| {
        h.get_by_label("Save as").focus();
        h.run_steps(3);
        h.get_by_label("Save as")
            .type_text(&path.display().to_string());
        h.run_steps(3);
    };
    type_save_as(&mut h, &other);
    assert!(
        h.get_by_role_and_label(Role::Button, "Save and continue")
            .accesskit_node()
            .is_disabled(),
        "saving over the card being opened is offered"
    );
    h.get_by_role_and_label(Role::Button, "Keep editing")
        .click();
    h.run_steps(3);
    assert!(!h.state().confirming_discard());
    open_typed_path(&mut h, &other);
    type_save_as(&mut h, &dir.path().join("kept.yaml"));
    h.get_by_role_and_label(Role::Button, "Save and continue")
        .click();
    h.run_steps(3);
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        other_text,
        "the card being opened was written over"
    );
    let kept =
        galapagos::engine::card::Card::load(&dir.path().join("kept.yaml"), &Registry::builtin())
            .unwrap();
    assert_eq!(kept.seed, 7);
    assert_eq!(
        kept.name, "kept",
        "a card saved under another file takes its name"
    );
    assert_eq!(h.state().doc.path.as_deref(), Some(other.as_path()));
    assert_eq!(h.state().doc.card.name, "topk");
}

/// A valid card whose run cannot start (here: its task folder is missing)
/// says in the status bar what blocks Start run, not only that the card is
/// valid.
#[test]
fn the_status_bar_says_what_blocks_start_run_when_the_card_is_valid() {
    let runs = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let state = State {
        runs_folder: runs.path().to_path_buf(),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch {
        card: Some(root.join("cards/best_of_n.yaml")),
        task: Some(runs.path().join("no-such-task")),
    });
    let mut h = Harness::builder()
        .with_size(egui::vec2(1024.0, 640.0))
        .with_max_steps(16)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    assert!(h.state().problems().is_empty());
    assert!(start_disabled(&h));
    let why = h.state().run_blocker().unwrap();
    assert!(
        h.query_by_label("Card is valid").is_none(),
        "the status bar says the card is valid, and not why Start run is disabled ({why})"
    );
    h.get_by_label(&format!("Card is valid; cannot start: {why}"));
}

/// At 1024×640 a long status message is wrapped whole inside the window,
/// not cut at its end.
#[test]
fn a_long_status_message_wraps_inside_the_window() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), egui::vec2(1024.0, 640.0));
    let missing = runs
        .path()
        .join("a folder with a rather long name that goes on".repeat(3))
        .join("and a card that is not there at all.yaml");
    h.state_mut().path_field = missing.display().to_string();
    h.run();
    h.get_by_role_and_label(Role::Button, "Open path").click();
    h.run();
    h.get_by_role_and_label(Role::Button, "Close").click();
    h.run();
    let message = h.state().message().unwrap().to_owned();
    assert!(
        message.ends_with("could not be opened (1 error)"),
        "{message}"
    );
    let r = h.get_by_label(&message).rect();
    let row = 16.0;
    assert!(
        r.right() <= 1024.0 + 1.0 && r.bottom() <= 640.0 + 1.0,
        "the message {r:?} leaves the window"
    );
    assert!(
        r.height() > 1.5 * row,
        "the message is cut to one line ({r:?}), not wrapped"
    );
}

/// The mouse wheel over the library scrolls the library, not the palette
/// below it, also once the library's end is reached (each has a scroll area
/// of its own, neither inside the other).
#[test]
fn the_mouse_wheel_over_the_library_scrolls_the_library_only() {
    let runs = tempfile::tempdir().unwrap();
    let cards = tempfile::tempdir().unwrap();
    for i in 0..30 {
        galapagos::engine::card::Card::new_default(&format!("card_{i:02}"))
            .save(&cards.path().join(format!("card_{i:02}.yaml")))
            .unwrap();
    }
    let mut h = studio(runs.path(), egui::vec2(1024.0, 640.0));
    h.state_mut().set_library_folder(cards.path());
    h.run();
    let first = h.get_by_label("card_00").rect();
    let palette = h.get_by_label("Palette").rect();
    h.hover_at(first.center());
    h.run_steps(1);
    // past the library's end, too
    for _ in 0..40 {
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, -120.0),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Wheel,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(1);
    }
    h.run_steps(2);
    assert_eq!(
        h.get_by_label("Palette").rect(),
        palette,
        "the wheel over the library moved the palette"
    );
    let moved = h
        .query_by_label("card_00")
        .is_none_or(|n| n.rect().top() < first.top() - 100.0);
    assert!(moved, "the library did not scroll");
}
