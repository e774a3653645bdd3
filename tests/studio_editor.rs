//! Interaction tests of the studio's block editor, driven through the
//! accessibility tree with egui_kittest (no GPU needed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::card::{Card, SlotSpec};
use galapagos::engine::component::{BuildContext, Component, ComponentInfo, NoParams};
use galapagos::engine::evaluator::SubprocessEvaluator;
use galapagos::engine::genome::Genome;
use galapagos::engine::memory::NoneMemory;
use galapagos::engine::params::{ParamError, ParamSpec, ParamType, ParamValue};
use galapagos::engine::population::{GenomeStore, Population};
use galapagos::engine::prompt::DefaultPromptBuilder;
use galapagos::engine::proposer::DiffProposer;
use galapagos::engine::registry::{Entry, Registry};
use galapagos::engine::rng::SearchRng;
use galapagos::engine::selection::{Selection, SelectionError, SelectionPolicy};
use galapagos::studio::App;
use galapagos::studio::state::{Document, State};
use serde::{Deserialize, Serialize};

const K: &[ParamSpec] = &[
    ParamSpec {
        key: "k",
        doc: "how many of the best to draw from",
        ty: ParamType::Int { min: 1, max: 100 },
    },
    ParamSpec {
        key: "mode",
        doc: "how to pick among them",
        ty: ParamType::Choice(&["best", "uniform"]),
    },
];

const N: &[ParamSpec] = &[ParamSpec {
    key: "n",
    doc: "completions per parent",
    ty: ParamType::Int { min: 1, max: 64 },
}];

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct KParams {
    k: u64,
    mode: String,
}

impl Default for KParams {
    fn default() -> Self {
        Self {
            k: 5,
            mode: "best".into(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct NParams {
    n: u64,
}

impl Default for NParams {
    fn default() -> Self {
        Self { n: 4 }
    }
}

/// Editor-only components: they describe themselves; the editor never
/// builds them (`build` fails).
macro_rules! editor_only {
    ($name:ty, $type_name:literal, $slot:ty, $params:ty, $kind:literal, $table:expr) => {
        impl Component for $name {
            type Slot = $slot;
            type Params = $params;
            const INFO: ComponentInfo = ComponentInfo {
                kind: $kind,
                type_name: $type_name,
                summary: "test component",
                params: $table,
            };
            fn build(_: $params, _: &BuildContext<'_>) -> Result<Self, ParamError> {
                Err(ParamError {
                    key: String::new(),
                    reason: "test entry".into(),
                })
            }
        }
    };
}

struct FlatPopulation(GenomeStore);
/// An editor-only selection policy with parameters `P`.
struct EditorPolicy<P>(std::marker::PhantomData<P>);

editor_only!(
    FlatPopulation,
    "FlatPopulation",
    dyn Population,
    NoParams,
    "flat",
    &[]
);
editor_only!(
    EditorPolicy<NParams>,
    "BestOfNPolicy",
    dyn SelectionPolicy,
    NParams,
    "best_of_n",
    N
);
editor_only!(
    EditorPolicy<KParams>,
    "TopKPolicy",
    dyn SelectionPolicy,
    KParams,
    "top_k",
    K
);

impl Population for FlatPopulation {
    fn add(&mut self, _: Arc<Genome>) {}
    fn store(&self) -> &GenomeStore {
        &self.0
    }
}

impl<P: Send + Sync> SelectionPolicy for EditorPolicy<P> {
    fn select(
        &mut self,
        _: &dyn Population,
        _: &mut SearchRng,
    ) -> Result<Selection, SelectionError> {
        Err(SelectionError::Empty)
    }
}

/// A registry of editor-only components plus the built-in prompt builder,
/// proposer, evaluator and memory.
fn registry() -> Registry {
    let mut r = Registry::empty();
    for entry in [
        Entry::of::<FlatPopulation>(),
        Entry::of::<EditorPolicy<NParams>>(),
        Entry::of::<EditorPolicy<KParams>>(),
        Entry::of::<DefaultPromptBuilder>(),
        Entry::of::<DiffProposer>(),
        Entry::of::<SubprocessEvaluator>(),
        Entry::of::<NoneMemory>(),
    ] {
        r.register(entry).unwrap();
    }
    r
}

fn valid_card() -> Card {
    let mut card = Card::new_default("editor_test");
    card.population = SlotSpec::new("flat");
    card.selection_policy = SlotSpec::new("best_of_n");
    card
}

fn harness(app: App) -> Harness<'static, App> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app)
}

fn new_app() -> App {
    let mut app = App::new(State::default(), Arc::new(registry()));
    app.doc = Document::new(valid_card(), None);
    app
}

/// Where a block of the zoomed canvas is drawn: AccessKit gives its rect in
/// the canvas's own coordinates, which the canvas shows fitted (centred,
/// scaled) into its rect on screen.
fn on_screen(h: &Harness<'_, App>, block: &str) -> egui::Pos2 {
    let canvas = h.get_by_label("Block canvas").rect();
    let view = h.state().canvas_view().rect;
    let zoom = (canvas.width() / view.width()).min(canvas.height() / view.height());
    let r = h.get_by_label(block).rect();
    canvas.center() + (r.center() - view.center()) * zoom
}

fn is_disabled(h: &Harness<'_, App>, label: &str) -> bool {
    h.get_by_role_and_label(Role::Button, label)
        .accesskit_node()
        .is_disabled()
}

#[test]
fn pick_change_reject_save_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edited.yaml");
    let mut h = harness(new_app());
    h.run();
    assert!(
        h.state().problems().is_empty(),
        "{:?}",
        h.state().problems()
    );
    assert!(!is_disabled(&h, "Save"));
    // with no path typed, "Save to path" has nothing to save to
    assert!(is_disabled(&h, "Save to path"));

    // pick a different SelectionPolicy from the palette
    h.get_by_label("TopKPolicy").click();
    h.run();
    assert_eq!(h.state().doc.card.selection_policy.kind, "top_k");
    assert!(h.state().doc.dirty);
    // the inspector now shows its parameters
    h.get_by_role_and_label(Role::SpinButton, "k")
        .set_value_accesskit(8.0);
    h.run();
    assert_eq!(
        h.state().doc.card.selection_policy.params.get("k"),
        Some(&ParamValue::Int(8))
    );

    // an out-of-range value is rejected at its field, and Save says why
    h.get_by_role_and_label(Role::SpinButton, "k")
        .set_value_accesskit(500.0);
    h.run();
    assert_eq!(
        h.state().problems().at("selection_policy.k"),
        Some("must be between 1 and 100, got 500")
    );
    h.get_by_label("must be between 1 and 100, got 500");
    assert!(is_disabled(&h, "Save"));
    assert!(is_disabled(&h, "Start run"));
    assert!(
        h.state()
            .save_blocker()
            .unwrap()
            .contains("selection_policy.k")
    );

    // fix it, then save through the path field (no dialog needed)
    h.get_by_role_and_label(Role::SpinButton, "k")
        .set_value_accesskit(7.0);
    h.run();
    assert!(h.state().problems().is_empty());
    h.get_by_label("Card path").focus();
    h.run();
    h.get_by_label("Card path")
        .type_text(&path.display().to_string());
    h.run();
    h.get_by_label("Save to path").click();
    h.run();
    assert!(path.is_file(), "{:?}", h.state().message());
    assert!(!h.state().doc.dirty);
    assert_eq!(h.state().doc.path.as_deref(), Some(path.as_path()));
    let saved = h.state().doc.card.clone();

    // edit again, then reopen: a confirmation guards the unsaved edit
    h.get_by_role_and_label(Role::SpinButton, "k")
        .set_value_accesskit(9.0);
    h.run();
    assert!(h.state().doc.dirty);
    h.get_by_label("Open path").click();
    h.run();
    assert!(h.state().confirming_discard());
    h.get_by_label("Discard changes").click();
    h.run();
    assert!(!h.state().confirming_discard());
    assert_eq!(h.state().doc.card, saved);
    assert_eq!(
        h.state().doc.card.selection_policy.params.get("k"),
        Some(&ParamValue::Int(7))
    );
    // load → save → load gives the same card
    let reg = registry();
    assert_eq!(Card::load(&path, &reg).unwrap(), saved);
    assert_eq!(h.state().state.recent_cards.first(), Some(&path));
}

#[test]
fn undo_restores_the_previous_card() {
    let mut h = harness(new_app());
    h.run();
    let before = h.state().doc.card.clone();
    assert!(is_disabled(&h, "Undo"));
    h.get_by_label("TopKPolicy").click();
    h.run();
    let picked = h.state().doc.card.clone();
    assert_ne!(picked, before);
    h.get_by_role_and_label(Role::SpinButton, "k")
        .set_value_accesskit(3.0);
    h.run();
    // the button undoes the parameter change
    h.get_by_label("Undo").click();
    h.run();
    assert_eq!(h.state().doc.card, picked);
    // Ctrl+Z undoes the implementation change
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.run();
    assert_eq!(h.state().doc.card, before);
    // and redo brings it back
    h.key_press_modifiers(
        egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
        egui::Key::Z,
    );
    h.run();
    assert_eq!(h.state().doc.card, picked);
}

#[test]
fn drag_from_palette_onto_block_assigns_it() {
    let mut h = harness(new_app());
    h.run();
    let from = h.get_by_label("TopKPolicy").rect().center();
    let to = on_screen(&h, "SelectionPolicy block");
    h.hover_at(from);
    h.run();
    h.drag_at(from);
    h.run();
    for i in 1..=8 {
        h.hover_at(from + (to - from) * (i as f32 / 8.0));
        h.run();
    }
    h.drop_at(to);
    h.run();
    assert_eq!(h.state().doc.card.selection_policy.kind, "top_k");
    // dropping onto a block of another slot is ignored
    let from = h.get_by_label("BestOfNPolicy").rect().center();
    let to = on_screen(&h, "Memory block");
    h.hover_at(from);
    h.run();
    h.drag_at(from);
    h.run();
    for i in 1..=8 {
        h.hover_at(from + (to - from) * (i as f32 / 8.0));
        h.run();
    }
    h.drop_at(to);
    h.run();
    assert_eq!(h.state().doc.card.selection_policy.kind, "top_k");
    assert_eq!(h.state().doc.card.memory.kind, "none");
}

#[test]
fn broken_card_shows_every_error_and_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.yaml");
    let mut card = valid_card();
    card.selection_policy.kind = "no_such_policy".into();
    card.proposer.params.set("bogus", ParamValue::Int(1));
    std::fs::write(&path, card.to_yaml()).unwrap();

    let mut h = harness(new_app());
    h.run();
    let before = h.state().doc.card.clone();
    h.get_by_label("Card path").focus();
    h.run();
    h.get_by_label("Card path")
        .type_text(&path.display().to_string());
    h.run();
    h.get_by_label("Open path").click();
    h.run();
    let errors = h.state().card_errors().expect("errors are shown").clone();
    assert_eq!(errors.0.len(), 2, "{errors}");
    for e in &errors.0 {
        assert!(e.line > 0 && e.col > 0, "{e}");
        assert!(!e.field.is_empty());
        // each error is on screen as file:line:col: field: message
        h.get_by_label(&e.to_string());
    }
    assert_eq!(h.state().doc.card, before);
    assert_eq!(h.state().doc.path, None);
    h.get_by_label("Close").click();
    h.run();
    assert!(h.state().card_errors().is_none());
}

/// The YAML tab shows the card open now, also when the card before it had
/// as many edits (both fresh from their files).
#[test]
fn the_yaml_tab_follows_the_card_opened() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = valid_card();
    first.name = "first_card".into();
    first.title = "First card".into();
    first.save(&dir.path().join("first_card.yaml")).unwrap();
    let mut second = valid_card();
    second.name = "second_card".into();
    second.title = "Second card".into();
    second.save(&dir.path().join("second_card.yaml")).unwrap();
    let mut app = new_app();
    app.set_library_folder(dir.path());
    let mut h = harness(app);
    h.run();
    h.get_by_label("First card").click();
    h.run();
    h.get_by_label("YAML").click();
    h.run_steps(2);
    assert!(h.query_by_label_contains("name: first_card").is_some());
    h.get_by_label("Second card").click();
    h.run_steps(2);
    assert_eq!(h.state().doc.card.name, "second_card");
    assert!(h.query_by_label_contains("name: first_card").is_none());
    assert!(h.query_by_label_contains("name: second_card").is_some());
}

#[test]
fn library_lists_cards_and_opens_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut card = valid_card();
    card.name = "from_library".into();
    card.title = "From the library".into();
    card.save(&dir.path().join("from_library.yaml")).unwrap();
    let mut app = new_app();
    app.set_library_folder(dir.path());
    let mut h = harness(app);
    h.run();
    h.get_by_label("From the library").click();
    h.run();
    assert_eq!(h.state().doc.card, card);
    assert_eq!(
        h.state().doc.path.as_deref(),
        Some(dir.path().join("from_library.yaml").as_path())
    );
}

#[test]
fn general_settings_and_task_folder_are_validated_live() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(new_app());
    h.run();
    h.get_by_role_and_label(Role::SpinButton, "parallel")
        .set_value_accesskit(999.0);
    h.run();
    assert_eq!(h.state().doc.card.general.parallel, 999);
    h.get_by_label("must be between 1 and 256");
    h.get_by_role_and_label(Role::SpinButton, "parallel")
        .set_value_accesskit(2.0);
    h.run();
    assert!(h.state().problems().is_empty());

    // the task folder: a folder without evaluator.py blocks Run with a reason
    let task = dir.path().join("task");
    std::fs::create_dir(&task).unwrap();
    std::fs::write(task.join("initial_program.py"), "x = 1\n").unwrap();
    h.get_by_label("task folder").focus();
    h.run();
    h.get_by_label("task folder")
        .type_text(&task.display().to_string());
    h.run();
    assert!(h.state().task_dir().ends_with("task"));
    assert!(h.state().run_blocker().unwrap().contains("evaluator.py"));
    assert!(is_disabled(&h, "Start run"));
}

/// Built-in tasks are reachable from the studio as from the command line:
/// the task field takes a built-in task's name (written out on use), and
/// its Built-in tasks list offers every one, not only the circle_packing a
/// fresh home has on disk.
#[test]
fn the_task_field_takes_built_in_task_names_and_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    let mut app = new_app();
    app.set_builtin_tasks_folder(tasks.clone());
    // tall enough for the list to open below the field
    let mut h = Harness::builder()
        .with_size(egui::vec2(1400.0, 1400.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();

    // every built-in task is in the list, and picking one uses it
    h.get_by_label("Built-in tasks").click();
    h.run_steps(2);
    for task in galapagos::engine::builtin::TASKS {
        h.get_by_label(task.name);
    }
    h.get_by_label("prime_count_cpp").click();
    h.run_steps(2);
    assert_eq!(h.state().task_dir(), tasks.join("prime_count_cpp"));
    assert!(
        tasks
            .join("prime_count_cpp/initial_program/src/count.cpp")
            .is_file()
    );

    // a name typed into the field is the built-in task of that name
    h.get_by_label("task folder").focus();
    h.run();
    h.get_by_label("task folder")
        .set_text_value_accesskit("fit_package");
    h.run();
    assert_eq!(h.state().task_dir(), tasks.join("fit_package"));
    assert!(
        tasks
            .join("fit_package/initial_program/fitpkg/model.py")
            .is_file()
    );
    let blocker = h.state().run_blocker().unwrap_or_default();
    assert!(!blocker.contains("fit_package"), "{blocker}");
    // the field keeps the name as typed
    assert_eq!(
        h.get_by_label("task folder")
            .accesskit_node()
            .value()
            .as_deref(),
        Some("fit_package")
    );
}

#[test]
fn persisted_state_roundtrips_without_the_card() {
    let mut state = State::default();
    state.remember_card(Path::new("cards/a.yaml"));
    state.layout.left_width = 300.0;
    let json = serde_json::to_string(&state).unwrap();
    assert!(!json.contains("selection_policy"));
    let back: State = serde_json::from_str(&json).unwrap();
    assert_eq!(back, state);
    // unknown or missing fields fall back to defaults
    let partial: State = serde_json::from_str(r#"{"theme":"Light"}"#).unwrap();
    assert_eq!(partial.layout, State::default().layout);
}

#[test]
fn builtin_cards_open_clean_and_launch_defaults_apply() {
    use galapagos::studio::StudioLaunch;
    let registry = Arc::new(Registry::builtin());
    let mut n = 0;
    for entry in std::fs::read_dir("cards").unwrap() {
        let path = entry.unwrap().path();
        let mut app = App::new(State::default(), registry.clone());
        app.launch(StudioLaunch {
            card: Some(path.clone()),
            task: None,
        });
        assert!(app.card_errors().is_none(), "{}", path.display());
        assert_eq!(app.doc.path.as_deref(), Some(path.as_path()));
        let mut h = harness(app);
        h.run();
        assert!(h.state().problems().is_empty(), "{}", path.display());
        n += 1;
    }
    assert!(n >= 3);
    // nothing given: the built-in card and the shipped task, ready to run
    let mut app =
        App::new(State::default(), registry).with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch::default());
    assert_eq!(app.doc.card.name, "best_of_n");
    assert!(app.task_dir().ends_with("circle_packing"));
    let mut h = harness(app);
    h.run();
    assert_eq!(h.state().run_blocker(), None);
    assert!(!is_disabled(&h, "Start run"));
}

/// Step the harness until `done` holds (background jobs report through a channel).
fn wait_until(h: &mut Harness<'static, App>, done: impl Fn(&App) -> bool) {
    for _ in 0..500 {
        h.step();
        if done(h.state()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("timed out; last message: {:?}", h.state().message());
}

#[test]
fn export_and_import_a_hub_bundle_from_the_details_tab() {
    let out = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin());
    let mut app = App::new(State::default(), registry.clone());
    app.launch(galapagos::studio::StudioLaunch {
        card: Some("cards/best_of_n.yaml".into()),
        task: None,
    });
    let card = app.doc.card.clone();
    let mut h = harness(app);
    h.run();
    h.get_by_label("Details").click();
    h.run();
    h.get_by_label("Bundle path").focus();
    h.run();
    h.get_by_label("Bundle path")
        .type_text(&out.path().display().to_string());
    h.run();
    h.get_by_label("Export to folder").click();
    wait_until(&mut h, |a| {
        a.message()
            .is_some_and(|m| m.contains("Exported") || m.contains("export:"))
    });
    let bundle = out.path().join(&card.namespace).join(&card.name);
    assert!(
        bundle.join("README.md").is_file(),
        "{:?}",
        h.state().message()
    );
    let archive = out
        .path()
        .join(&card.namespace)
        .join(format!("{}.tar.gz", card.name));
    assert!(archive.is_file());

    // import the archive as a new, unsaved card
    h.get_by_label("New").click();
    h.run();
    assert_ne!(h.state().doc.card, card);
    h.get_by_label("Bundle path").focus();
    h.run();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label("Bundle path")
        .type_text(&archive.display().to_string());
    h.run();
    h.get_by_label("Import bundle").click();
    wait_until(&mut h, |a| {
        a.doc.card.name == card.name || a.message().is_some_and(|m| m.contains("import:"))
    });
    // the same card, which keeps where it came from: the bundle
    let mut imported = h.state().doc.card.clone();
    assert!(
        matches!(&imported.provenance, Some(galapagos::engine::provenance::Provenance::Bundle { bundle, .. }) if *bundle == archive.display().to_string()),
        "{:?}",
        imported.provenance
    );
    imported.provenance = None;
    assert_eq!(imported, card);
    assert!(h.state().doc.dirty);
    assert_eq!(h.state().doc.path, None);
}

/// The cost levers of `general` (early stopping, the novelty gate, the
/// objectives and their reference point) are typed widgets below the loop
/// settings: each click or value reaches the card, shows in its YAML and is
/// validated live.
#[test]
fn the_general_levers_are_edited_by_their_widgets_and_validated() {
    use galapagos::engine::genome::Direction;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1400.0, 2400.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), new_app());
    h.run();
    let general = |h: &Harness<'_, App>| h.state().doc.card.general.clone();

    // early stopping
    h.get_by_label("stop at a target score").click();
    h.run();
    assert_eq!(general(&h).stop.target_score, Some(1.0));
    h.get_by_role_and_label(Role::SpinButton, "stop.target_score")
        .set_value_accesskit(0.9);
    h.run();
    assert_eq!(general(&h).stop.target_score, Some(0.9));
    h.get_by_label("stop when the best stalls").click();
    h.run();
    assert_eq!(general(&h).stop.patience, Some(20));
    h.get_by_label("stop at a wall time").click();
    h.run();
    assert_eq!(general(&h).stop.max_wall_secs, Some(3600.0));
    h.get_by_role_and_label(Role::SpinButton, "stop.max_wall_secs")
        .set_value_accesskit(-5.0);
    h.run();
    h.get_by_label("must be a positive number");
    h.get_by_role_and_label(Role::SpinButton, "stop.max_wall_secs")
        .set_value_accesskit(600.0);
    h.run();
    assert!(h.state().problems().is_empty());

    // the novelty gate: on, a threshold out of range, then in range
    h.get_by_label("reject near-duplicates before evaluation")
        .click();
    h.run();
    assert_eq!(
        general(&h).novelty.as_ref().map(|n| n.threshold),
        Some(0.98)
    );
    h.get_by_role_and_label(Role::SpinButton, "novelty.threshold")
        .set_value_accesskit(1.5);
    h.run();
    h.get_by_label("must be in (0, 1]");
    h.get_by_role_and_label(Role::SpinButton, "novelty.threshold")
        .set_value_accesskit(0.95);
    h.run();
    h.get_by_label("retry a rejected proposal").click();
    h.run();
    let novelty = general(&h).novelty.unwrap();
    assert_eq!((novelty.threshold, novelty.retry), (0.95, false));
    assert!(h.state().problems().is_empty());

    // objectives: one is refused, two with a direction turned and a
    // reference value are a valid multi-objective card
    for metric in ["combined_score", "evaluations"] {
        h.get_by_label("new objective").focus();
        h.run();
        h.get_by_label("new objective").type_text(metric);
        h.run();
        h.get_by_label("Add objective").click();
        h.run();
        if metric == "combined_score" {
            assert_eq!(
                general(&h).objectives.len(),
                1,
                "{:?}",
                general(&h).objectives
            );
            h.get_by_label("name two or more objectives (one is the fitness: leave it out)");
        }
    }
    h.get_by_label("evaluations: max").click();
    h.run();
    h.get_by_label("reference for evaluations").click();
    h.run();
    h.get_by_role_and_label(Role::SpinButton, "evaluations")
        .set_value_accesskit(1001.0);
    h.run();
    let g = general(&h);
    assert_eq!(
        g.objectives
            .iter()
            .map(|(m, d)| (m.as_str(), *d))
            .collect::<Vec<_>>(),
        [
            ("combined_score", Direction::Max),
            ("evaluations", Direction::Min)
        ]
    );
    assert_eq!(g.reference_point.get("evaluations"), Some(&1001.0));
    assert!(h.state().problems().is_empty());

    // every change is in the card's YAML, which loads back as the same card
    h.get_by_label("YAML").click();
    h.run();
    let yaml = h.state().doc.card.to_yaml();
    for want in [
        "target_score: 0.9",
        "patience: 20",
        "max_wall_secs: 600",
        "threshold: 0.95",
        "retry: false",
        "evaluations: min",
        "evaluations: 1001",
    ] {
        assert!(yaml.contains(want), "missing `{want}` in:\n{yaml}");
        assert!(
            h.query_by_label_contains(want).is_some(),
            "the YAML tab shows `{want}`"
        );
    }
    let back = Card::from_yaml(&yaml, "edited.yaml", &registry()).unwrap();
    assert_eq!(back.general, h.state().doc.card.general);

    // and Remove takes an objective out with its reference value
    h.get_by_label("Blocks").click();
    h.run();
    h.get_by_label("Remove evaluations").click();
    h.run();
    assert!(!general(&h).objectives.contains_key("evaluations"));
    assert!(general(&h).reference_point.is_empty());
}

/// The Card path field takes what the command line takes: a built-in card's
/// name opens that card (it said "repository: cannot read: No such file"),
/// and a name that is neither a file nor a card says which card was meant.
#[test]
fn open_path_takes_a_built_in_cards_name() {
    // the built-in cards' blocks: the shipped registry
    let mut h = harness(App::new(State::default(), Arc::new(Registry::builtin())));
    h.run();
    h.get_by_label("Card path").focus();
    h.run();
    h.get_by_label("Card path").type_text("repository");
    h.run();
    h.get_by_label("Open path").click();
    h.run();
    h.run();
    assert_eq!(
        h.state().doc.card.name,
        "repository",
        "{:?}",
        h.state().message()
    );
    assert!(h.state().card_errors().is_none());
    h.get_by_label("Card path").focus();
    h.run();
    h.get_by_label("Card path").type_text("x");
    h.run();
    h.get_by_label("Open path").click();
    h.run();
    let said = h.state().message().unwrap_or_default().to_owned();
    assert!(said.starts_with("Open path: "), "{said}");
    assert_eq!(h.state().doc.card.name, "repository", "nothing else opened");
}
