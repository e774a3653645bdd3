#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The studio asks before a card from a hub lowers isolation: a card pulled
//! from the library that opens the network does not start on Start run; a
//! dialog lists what it asks for with "Allow for this card" and "Cancel".
//! Cancel starts nothing and writes nothing; Allow starts the run, which
//! records the consent given in the studio. The user's own card that opens
//! the network starts at once and the status bar says what it lowers.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::archive::Archive;
use galapagos::engine::card::Card;
use galapagos::engine::hub::folder::{HubFolder, PublishOptions};
use galapagos::engine::provenance::Provenance;
use galapagos::engine::registry::Registry;
use galapagos::studio::state::State;
use galapagos::studio::{App, StudioLaunch};

/// A card that opens the network to candidates.
const NETWORK: &str = "name: network\nnamespace: evil\nsummary: Fast and friendly.\n\
    population: {kind: in_memory}\nselection_policy: {kind: best_of_n}\n\
    prompt_builder: {kind: default}\nproposer: {kind: diff}\n\
    evaluator: {kind: subprocess, timeout_secs: 60.0, network: true}\n\
    memory: {kind: none}\ngeneral: {max_iterations: 1}\n";

/// Step the UI until `done` holds, for at most two minutes (background jobs
/// and the run go on threads of a loaded machine).
fn wait_until(h: &mut Harness<'static, App>, what: &str, done: impl Fn(&App) -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        h.step();
        if done(h.state()) {
            h.run_steps(4);
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!(
        "timed out waiting for {what}; last message: {:?}",
        h.state().message()
    );
}

fn click(h: &mut Harness<'static, App>, label: &str) {
    h.get_by_label(label).click();
    h.run_steps(4);
}

fn studio(state: State, launch: StudioLaunch) -> Harness<'static, App> {
    let mut app = App::new(state, Arc::new(Registry::builtin()));
    app.launch(launch);
    app_harness(app)
}

fn app_harness(app: App) -> Harness<'static, App> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .with_max_steps(16)
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        );
    h.run_steps(4);
    h
}

/// The run folders under `runs`.
fn run_dirs(runs: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(runs)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_hub_card_that_opens_the_network_starts_only_after_the_dialog_allows_it() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Registry::builtin();
    let hub_dir = tmp.path().join("hub");
    let hub = HubFolder::init(&hub_dir).unwrap();
    let card = Card::from_yaml(NETWORK, "network.yaml", &registry).unwrap();
    hub.publish(&card, &registry, &PublishOptions::default())
        .unwrap();
    let task = common::temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut app = App::new(
        State {
            runs_folder: runs.clone(),
            ..State::default()
        },
        Arc::new(registry),
    );
    app.launch(StudioLaunch {
        card: None,
        task: Some(task),
    });
    app.set_hubs(vec![hub_dir.display().to_string()]);
    app.set_hub_cache(tmp.path().join("cache"));
    let mut h = app_harness(app);
    wait_until(&mut h, "the hub listing", |a| {
        a.hub_shelf().cards.len() == 1
    });
    click(&mut h, "network (evil/network)");
    wait_until(&mut h, "the pulled card", |a| a.doc.card.name == "network");
    assert!(
        matches!(&h.state().doc.card.provenance, Some(Provenance::Hub { card, .. }) if card == "evil/network@1"),
        "{:?}",
        h.state().doc.card.provenance
    );

    // Start run: the dialog asks, nothing runs or is written.
    click(&mut h, "Start run");
    assert!(h.state().is_asking_consent());
    h.get_by_label("Allow lowered isolation?");
    h.get_by_label("evaluator.network");
    h.get_by_label_contains("may use the network");
    assert!(!h.state().run_view.is_running());
    assert!(run_dirs(&runs).is_empty(), "a held run made a folder");
    // Cancel: still nothing.
    click(&mut h, "Cancel");
    assert!(!h.state().is_asking_consent());
    assert!(h.query_by_label("Allow for this card").is_none());
    assert!(
        h.state()
            .message()
            .unwrap_or("")
            .starts_with("Not started: network"),
        "{:?}",
        h.state().message()
    );
    assert!(!h.state().run_view.is_running());
    assert!(run_dirs(&runs).is_empty(), "a declined run made a folder");

    // Start run, Allow for this card: the run goes and records the consent.
    click(&mut h, "Start run");
    click(&mut h, "Allow for this card");
    assert!(!h.state().is_asking_consent());
    wait_until(&mut h, "the run's end", |a| {
        a.run_view.history().is_finished()
    });
    let dirs = run_dirs(&runs);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let clearance = Archive::open(&dirs[0])
        .unwrap()
        .clearance()
        .unwrap()
        .unwrap();
    let consent = clearance.consent.unwrap();
    assert_eq!(consent.allowed, ["evaluator.network"]);
    assert_eq!(consent.via, "the studio's dialog");
    assert_eq!(consent.card, clearance.hash);
    assert!(matches!(clearance.provenance, Some(Provenance::Hub { .. })));
}

#[test]
fn the_users_own_card_that_opens_the_network_starts_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mine.yaml");
    std::fs::write(&file, NETWORK).unwrap();
    let runs = tmp.path().join("runs");
    let mut h = studio(
        State {
            runs_folder: runs.clone(),
            ..State::default()
        },
        StudioLaunch {
            card: Some(file),
            task: Some(common::temp_task(tmp.path())),
        },
    );
    click(&mut h, "Start run");
    assert!(
        !h.state().is_asking_consent(),
        "the user's own card asks nothing"
    );
    assert!(
        h.state()
            .message()
            .unwrap_or("")
            .starts_with("This run lowers the sandbox's isolation: evaluator.network"),
        "{:?}",
        h.state().message()
    );
    wait_until(&mut h, "the run's end", |a| {
        a.run_view.history().is_finished()
    });
    let dirs = run_dirs(&runs);
    let clearance = Archive::open(&dirs[0])
        .unwrap()
        .clearance()
        .unwrap()
        .unwrap();
    assert_eq!((clearance.provenance, clearance.consent), (None, None));
    assert_eq!(clearance.lowered[0].setting, "evaluator.network");
}
