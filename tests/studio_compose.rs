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
        "BeamSelectionPolicy: also switch Population to BeamPopulation",
    );

    // the natural first edit: the beam policy alone
    h.get_by_label("BeamSelectionPolicy").click_accesskit();
    h.run();
    assert_eq!(kind(&h, Slot::SelectionPolicy), "beam");
    assert_eq!(kind(&h, Slot::Population), "in_memory");
    let blocker = h.state().run_blocker().unwrap();
    assert!(
        blocker.contains("selection_policy.kind: BeamSelectionPolicy")
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
    // (InMemoryPopulation and IslandPopulation)
    assert_eq!(
        h.get_all_by_label("Does not fit: BeamSelectionPolicy needs a beam population")
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
        "BeamSelectionPolicy: also switch Population to BeamPopulation",
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
