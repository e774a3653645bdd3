//! What a newcomer meets in the studio's first hour, each checked the way a
//! person meets it (egui_kittest, no GPU): clicks by label, and layout
//! checks from the widgets' rects at 1024×640, with a 300-character error
//! where a long message is what breaks the layout.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::card::Card;
use galapagos::engine::events::{RunEvent, RunInfo, RunStatus, RunSummary};
use galapagos::engine::genome::{FITNESS_KEY, Genome};
use galapagos::engine::registry::Registry;
use galapagos::engine::selection::PolicyStatus;
use galapagos::studio::run::{RunHistory, RunView};
use galapagos::studio::state::{State, Tab};
use galapagos::studio::{App, StudioLaunch};

const SMALL: egui::Vec2 = egui::vec2(1024.0, 640.0);

fn window(size: egui::Vec2) -> egui::Rect {
    egui::Rect::from_min_size(egui::Pos2::ZERO, size)
}

fn inside(r: egui::Rect, outer: egui::Rect) -> bool {
    outer.expand(1.0).contains_rect(r)
}

/// The studio on the shipped `best_of_n` card and `circle_packing` task,
/// runs recorded under `runs`.
fn studio(runs: &Path, size: egui::Vec2) -> Harness<'static, App> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_settings_path(None)
        .with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch {
        card: Some(root.join("cards/best_of_n.yaml")),
        task: Some(root.join("assets/tasks/circle_packing")),
    });
    let mut h = Harness::builder()
        .with_size(size)
        .with_max_steps(16)
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        );
    h.run();
    h
}

/// Step until `done`, failing after `secs`.
fn step_until<S>(
    h: &mut Harness<'static, S>,
    secs: u64,
    done: impl Fn(&Harness<'static, S>) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done(h) {
        assert!(Instant::now() < deadline, "timed out");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
}

fn genome(i: u64) -> Genome {
    let valid = i % 7 != 6;
    let mut g = Genome {
        id: i,
        parent_id: (i > 0).then_some(i / 3),
        iteration: i,
        valid,
        content: format!("x = {i}\ny = 2\nz = {}\n", i % 4).into(),
        ..Genome::default()
    };
    if valid {
        g.scores.insert(FITNESS_KEY.to_owned(), i as f64 / 10.0);
    }
    g
}

/// A run of `n` genomes as the worker reports it (not finished).
fn history(n: u64) -> RunHistory {
    let mut h = RunHistory::new();
    h.apply(RunEvent::Started(RunInfo {
        card_name: "best_of_n".into(),
        task_name: "circle_packing".into(),
        max_iterations: 100,
        model: "gpt-test at http://127.0.0.1:9/v1".into(),
        offline: false,
        seed: 0,
        parallel: 1,
        run_dir: None,
        unsandboxed: None,
        forked_from: None,
        clearance: None,
    }));
    for i in 0..n {
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(genome(i)),
            best_id: Some(i),
            best_score: Some(i as f64 / 10.0),
            iterations_done: i,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

/// What a dead endpoint's failure looks like: 300 characters.
fn long_error() -> String {
    let mut e =
        "the model failed 6 times in a row: gpt-test at http://127.0.0.1:9/v1 could not be \
                 reached (error sending request for url (http://127.0.0.1:9/v1/chat/completions): \
                 client error (Connect): tcp connect error: Connection refused (os error 111))"
            .to_owned();
    while e.len() < 300 {
        e.push_str(" and again");
    }
    e.truncate(300);
    e
}

/// A failed run's 300-character error leaves the run view's controls, the
/// plot and the inspector inside a 1024×640 window, and the status bar's
/// card status and run figures in view on every tab; the whole message is
/// in the log.
#[test]
fn a_long_run_error_fits_at_1024_by_640_and_is_whole_in_the_log() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), SMALL);
    let win = window(SMALL);
    let error = long_error();
    let mut run = history(5);
    run.apply(RunEvent::Finished(RunSummary {
        iterations: 4,
        genomes: 5,
        valid: 5,
        ..RunSummary::empty(RunStatus::Failed(error.clone()))
    }));
    h.state_mut().run_view.load_history(run);
    h.state_mut().run_view.select(Some(4));
    h.state_mut().state.tab = Tab::Run;
    h.run();
    let log = h.get_by_label_contains("Log (").rect();
    let axis = h.get_by_label("y axis:").rect();
    let plot = h.get_by_label("Fitness plot").rect();
    let inspector = h.get_by_label("Genome #4").rect();
    for (what, r) in [
        ("Log button", log),
        ("y axis selector", axis),
        ("plot", plot),
        ("inspector", inspector),
    ] {
        assert!(inside(r, win), "{what} {r:?} outside the window");
    }
    assert!(plot.width() > 300.0, "plot squeezed: {plot:?}");
    for tab in [Tab::Run, Tab::Editor, Tab::Runs] {
        h.state_mut().state.tab = tab;
        h.run();
        let valid = h.get_by_label("Card is valid").rect();
        assert!(inside(valid, win), "{tab:?}: card status {valid:?}");
        let figures = h.get_by_label("iteration 4/100").rect();
        assert!(inside(figures, win), "{tab:?}: run figures {figures:?}");
    }
    // the whole text, in the log
    h.state_mut().state.tab = Tab::Run;
    h.run();
    h.get_by_label_contains("Log (").click();
    h.run();
    let line = h.get_by_label(&format!("run failed: {error}")).rect();
    assert!(
        line.left() >= 0.0 && line.right() <= win.right() + 1.0,
        "{line:?}"
    );
}

/// A row of the genome table is selected by a click on any of its cells,
/// not only on its id.
#[test]
fn a_click_on_any_cell_of_a_table_row_selects_the_genome() {
    let mut view = RunView::default();
    view.load_history(history(12));
    let mut h = Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            view,
        );
    h.run_steps(3);
    assert_eq!(h.state().selected(), None);
    // the score cell of genome 5
    h.get_by_label("0.50000").click();
    h.run_steps(2);
    assert_eq!(h.state().selected(), Some(5));
    // the parent cell of genome 8 (#2)
    let parent_cells: Vec<_> = h.query_all_by_label("#2").collect();
    assert!(!parent_cells.is_empty());
    h.get_by_label("0.80000").click();
    h.run_steps(2);
    assert_eq!(h.state().selected(), Some(8));
}

/// The Implementation dropdown marks the choices that do not go with the
/// card's other blocks, like the palette does.
#[test]
fn the_implementation_dropdown_marks_choices_that_do_not_fit() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), SMALL);
    assert_eq!(
        h.state().selected,
        galapagos::engine::component::Slot::SelectionPolicy
    );
    h.get_by_label("Implementation").click();
    h.run();
    let beam = h.get_by_label_contains("BeamPolicy · beam");
    let text = beam.accesskit_node().label().unwrap_or_default().to_owned();
    assert!(text.contains("does not fit"), "{text}");
    // a choice that fits is not marked
    let top_k = h.get_by_label_contains("BestOfNPolicy · best_of_n");
    let text = top_k
        .accesskit_node()
        .label()
        .unwrap_or_default()
        .to_owned();
    assert!(!text.contains("does not fit"), "{text}");
}

/// Record a short run of `card` on `task` into `dir`.
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

/// With three runs ticked at 1024×640 the Runs tab scrolls: the curves are
/// drawn whole and the card diff's last line can be brought into view.
#[test]
fn the_runs_tab_scrolls_to_the_curves_and_card_diff_at_1024_by_640() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut first = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    first.general.max_iterations = 3;
    let mut second = first.clone();
    second.name = "second_card".to_owned();
    second.seed = 7;
    let mut third = first.clone();
    third.seed = 3;
    for (card, name) in [(first, "run-a"), (second, "run-b"), (third, "run-c")] {
        record(card, &task, &runs.join(name), &registry);
    }
    let state = State {
        runs_folder: runs.clone(),
        ..State::default()
    };
    let mut h = Harness::builder()
        .with_size(SMALL)
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            App::new(state, registry).with_settings_path(None),
        );
    h.run();
    h.get_by_label("Runs").click();
    h.run_steps(2);
    // One at a time: each ticked run's curve is read in the background and
    // changes the layout when it arrives, so the next click waits for it
    // (a click aimed at a row that has since moved would miss).
    for (i, name) in ["run-a", "run-b", "run-c"].into_iter().enumerate() {
        h.get_by_label(&format!("compare {name}")).click();
        step_until(&mut h, 120, |h| h.state().runs.compared().len() == i + 1);
    }
    step_until(&mut h, 120, |h| h.query_by_label("+ seed: 7").is_some());
    let win = window(SMALL);
    // the curves: the plot under its title is drawn whole, a usable height
    h.get_by_label("compared runs' best fitness").scroll_to_me();
    h.run_steps(3);
    let title = h.get_by_label("Best fitness so far").rect();
    let plot = h.get_by_label("compared runs' best fitness").rect();
    assert!(inside(title, win), "the curves' title {title:?}");
    assert!(inside(plot, win), "the curves {plot:?} are cut");
    assert!(plot.height() >= 200.0, "the curves squeezed: {plot:?}");
    // the card diff's last line can be brought into view, under its title
    h.get_by_label("+ seed: 7").scroll_to_me();
    h.run_steps(3);
    let line = h.get_by_label("+ seed: 7").rect();
    assert!(inside(line, win), "the card diff's last line {line:?}");
    let diff = h.get_by_label("Card diff").rect();
    assert!(inside(diff, win), "the card diff's title {diff:?}");
}

/// Put `text` into the text field labelled `label`.
fn type_into(h: &mut Harness<'static, App>, label: &str, text: &str) {
    h.get_by_label(label).focus();
    h.run();
    h.get_by_label(label).set_text_value_accesskit(text);
    h.run();
}

/// Save to path names the card after its new file (two files, two names in
/// the Runs tab), and opening a built-in card from the library keeps the
/// path the user typed.
#[test]
fn save_to_path_renames_the_card_and_the_library_keeps_a_typed_path() {
    let runs = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), SMALL);
    let empty = tempfile::tempdir().unwrap();
    h.state_mut().set_library_folder(empty.path());
    h.run();
    assert_eq!(h.state().doc.card.name, "best_of_n");
    let mine = out.path().join("my_search.yaml");
    type_into(&mut h, "Card path", &mine.display().to_string());
    h.get_by_label("Save to path").click();
    h.run();
    let saved = Card::load(&mine, &Registry::builtin()).unwrap();
    assert_eq!(saved.name, "my_search", "the saved file keeps the old name");
    assert_eq!(h.state().doc.card.name, "my_search");
    assert!(!h.state().doc.dirty);
    // the card it came from is untouched
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let original = Card::load(&root.join("cards/best_of_n.yaml"), &Registry::builtin()).unwrap();
    assert_eq!(original.name, "best_of_n");

    // a typed path survives opening a built-in card from the library
    let next = out.path().join("beam_copy.yaml").display().to_string();
    type_into(&mut h, "Card path", &next);
    let title = Card::from_yaml(
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
    assert_eq!(h.state().path_field, next);
    h.get_by_label("Save to path").click();
    h.run();
    let copy = Card::load(Path::new(&next), &Registry::builtin()).unwrap();
    assert_eq!(copy.name, "beam_copy");
}

/// The model dialog has the stall timeout docs/models.md names, saved with the
/// endpoint, and says how to get a real model in the studio's words, not
/// the command line's flags.
#[test]
fn the_model_dialog_sets_the_stall_timeout_and_names_no_command_line_flag() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("config").join("settings.json");
    let state = State {
        runs_folder: dir.path().join("runs"),
        ..State::default()
    };
    let app = App::new(state, common::registry()).with_settings_path(Some(settings.clone()));
    let mut h = Harness::builder().with_size(SMALL).build_ui_state(
        |ui, app: &mut App| {
            app.logic(ui.ctx());
            app.show(ui);
        },
        app,
    );
    h.run();
    h.get_by_label_contains("Model: offline model").click();
    h.run_steps(4);
    h.get_by_label_contains("Runs will use");
    // what runs will use, and how to get a real model, in the studio's words
    let desc = h.get_by_label_contains("no model configured");
    let desc = desc.value().unwrap_or_default();
    assert!(
        !desc.contains("--"),
        "a command-line flag in the dialog: {desc}"
    );
    assert!(desc.contains("Model settings"), "{desc}");
    // an endpoint, its stall timeout set and saved
    h.get_by_label("Add endpoint").click();
    h.run_steps(3);
    let stall = h.get_by_label("Stall (s)");
    assert_eq!(stall.value().as_deref(), Some("60"), "the default");
    h.get_by_label("Stall (s)").set_value_accesskit(15.0);
    h.run_steps(2);
    h.get_by_label("Save settings").click();
    h.run_steps(3);
    let saved = galapagos::engine::model::user_settings::load_settings_from(&settings).unwrap();
    assert_eq!(saved.endpoints[0].stall_timeout_secs, 15.0);
}

/// An endpoint on loopback that answers every request with a server error
/// (a down endpoint, one that refuses connections, now fails the run at
/// once: see tests/endpoint_run.rs).
fn failing_endpoint() -> common::llm_server::LlmServer {
    common::llm_server::LlmServer::start(|_| {
        common::llm_server::Reply::json(
            503,
            &serde_json::json!({"error": {"message": "overloaded", "type": "server_error"}}),
        )
    })
}

/// While the model's endpoint fails and its calls are retried, the Run view
/// says so (which attempt of how many, and why) without the log being
/// opened, inside a 1024×640 window.
#[test]
fn a_failing_endpoint_shows_its_retries_in_the_run_view() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let server = failing_endpoint();
    std::fs::write(
        &settings,
        serde_json::json!({"endpoints": [{
            "api_base": server.base("/v1"),
            "model": "dead-model",
            "key_required": false,
            "max_attempts": 3
        }]})
        .to_string(),
    )
    .unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let state = State {
        runs_folder: dir.path().join("runs"),
        ..State::default()
    };
    let mut app = App::new(state, Arc::new(Registry::builtin())).with_settings_path(Some(settings));
    app.launch(StudioLaunch {
        card: Some(root.join("cards/best_of_n.yaml")),
        task: Some(root.join("assets/tasks/circle_packing")),
    });
    let mut h = Harness::builder()
        .with_size(SMALL)
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        );
    h.run();
    assert_eq!(h.state().run_blocker(), None);
    h.get_by_label("Start run").click();
    step_until(&mut h, 120, |h| {
        h.query_by_label_contains("attempt 1 of 3 failed").is_some()
    });
    assert_eq!(h.state().state.tab, Tab::Run);
    assert!(h.state().run_view.is_running());
    assert!(!h.state().run_view.history().logs.is_empty());
    let warning = h.get_by_label_contains("attempt 1 of 3 failed");
    assert!(
        warning.value().unwrap_or_default().contains("Warning: "),
        "shown as a warning"
    );
    assert!(
        inside(warning.rect(), window(SMALL)),
        "{:?}",
        warning.rect()
    );
    h.state_mut().run_view.stop();
    step_until(&mut h, 60, |h| !h.state().run_view.is_running());
}

/// The studio restarted on a persisted state whose Leaderboard batch folder
/// holds a finished batch shows that batch's table on the Leaderboard tab.
#[test]
fn the_leaderboard_tab_shows_the_finished_batch_of_its_folder_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = tmp.path().join("batch");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("leaderboard")
        .arg(root.join("cards/best_of_n.yaml"))
        .arg(root.join("cards/topk.yaml"))
        .arg("--task")
        .arg(root.join("assets/tasks/circle_packing"))
        .args(["--seeds", "1", "--iterations", "2", "--out"])
        .arg(&out)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    assert!(out.join("leaderboard.json").is_file());
    // what the studio persisted when it was closed: the form, on its tab
    let mut state = State {
        runs_folder: tmp.path().join("runs"),
        tab: Tab::Leaderboard,
        ..State::default()
    };
    state.leaderboard.out = out.clone();
    let persisted = serde_json::to_string(&state).unwrap();
    let state: State = serde_json::from_str(&persisted).unwrap();
    let app = App::new(state, Arc::new(Registry::builtin())).with_settings_path(None);
    let mut h = Harness::builder()
        .with_size(SMALL)
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        );
    step_until(&mut h, 30, |h| h.state().leaderboard.table().is_some());
    let table = h.state().leaderboard.table().unwrap();
    let names: Vec<&str> = table.cards.iter().map(|c| c.card.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"best_of_n") && names.contains(&"topk"),
        "{names:?}"
    );
    assert_eq!(h.state().leaderboard.runs().len(), 2);
    // the table is on the tab
    assert!(h.query_all_by_label("topk").count() >= 1);
}

/// The Help menu has a quick start, how to write a task and how a coding
/// agent drives galapagos (the skill), in the app, each in a window that
/// fits a 1024×640 window and closes.
#[test]
fn the_help_menu_shows_a_quick_start_and_how_to_write_a_task() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), SMALL);
    let win = window(SMALL);
    for (page, says) in [
        ("Quick start", "Press Start run (F5)"),
        (
            "Writing a task",
            "evaluator.py exposes evaluate(program_path)",
        ),
        // the skill galapagos mcp gives agents (SKILL.md)
        (
            "Coding agents (MCP)",
            "Galapagos searches for a better program",
        ),
    ] {
        h.get_by_label("Help").click();
        h.run();
        h.get_by_label(page).click();
        h.run();
        let text = h.get_by_label_contains(says).rect();
        assert!(inside(text, win), "{page}: {text:?}");
        // closed with its window's close button
        h.get_by_label("Close window").click();
        h.run();
        assert!(
            h.query_by_label_contains(says).is_none(),
            "{page} stays open"
        );
    }
}

/// The YAML tab shows a long line as one line, scrolled sideways, not
/// wrapped back to column 0 where it would read as a new key.
#[test]
fn the_yaml_tab_keeps_a_long_line_on_one_line() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), SMALL);
    let mut card = h.state().doc.card.clone();
    card.summary = format!("A summary{}", " that goes on".repeat(40));
    let key = "summary".to_owned();
    h.state_mut().doc.edit(&key, card);
    h.state_mut().state.tab = Tab::Yaml;
    h.run();
    let yaml = h.get_by_label_contains("summary: A summary that goes on");
    let text = yaml.value().unwrap_or_default();
    let lines = text.lines().count();
    let r = yaml.rect();
    let row = r.height() / lines as f32;
    assert!(
        r.width() > SMALL.x,
        "the long line was wrapped: {r:?} for {lines} lines"
    );
    assert!(row < 20.0, "{lines} lines in {r:?}: some wrapped");
}

/// The block inspector shows a parameter's whole name where it has the
/// room (1920×1080) and most of it at 1024×640, not its first six
/// characters.
#[test]
fn the_block_inspector_shows_whole_parameter_names() {
    for size in [SMALL, egui::vec2(1920.0, 1080.0)] {
        let runs = tempfile::tempdir().unwrap();
        let mut h = studio(runs.path(), size);
        h.get_by_label("ExploreExploitPolicy").click_accesskit();
        h.run();
        assert_eq!(h.state().doc.card.selection_policy.kind, "explore_exploit");
        for key in ["exploration_ratio", "exploitation_ratio"] {
            let r = h
                .get(
                    egui_kittest::kittest::by()
                        .label(key)
                        .include_labels()
                        .role(egui::accesskit::Role::Label),
                )
                .rect();
            // 17 or 18 monospace characters of about 7 px: whole where the
            // inspector is wide, at least twelve of them at 1024 px
            let chars = if size.x > 1500.0 {
                key.len() as f32
            } else {
                12.0
            };
            assert!(
                r.width() > 7.0 * chars - 4.0,
                "{key} cut at {size:?}: {r:?}"
            );
            assert!(inside(r, window(size)), "{key} {r:?}");
        }
    }
}

/// A recorded run opened read-only under a long folder name at 1024×640:
/// "viewing …" is cut short (whole on hover) before the plot's controls on
/// the right, which stay whole and in the window.
#[test]
fn a_viewed_run_with_a_long_folder_name_leaves_the_plot_controls_whole() {
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut card = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    card.general.max_iterations = 3;
    let name = format!(
        "best_of_n-circle_packing-20261127-004500-{}",
        "x".repeat(80)
    );
    let dir = runs.join(&name);
    record(card, &task, &dir, &registry);
    let mut h = studio(&runs, SMALL);
    let archived = galapagos::studio::run::read_archive(&dir).unwrap();
    h.state_mut().run_view.show_archived(archived);
    h.state_mut().state.tab = Tab::Run;
    h.run();
    let win = window(SMALL);
    let viewing = h
        .get_by_label_contains(&format!("viewing {}", &name[..20]))
        .rect();
    let axis = h.get_by_label("y axis:").rect();
    let log = h.get_by_label_contains("Log (").rect();
    for (what, r) in [("y axis label", axis), ("Log button", log)] {
        assert!(inside(r, win), "{what} {r:?} outside the window");
    }
    assert!(
        viewing.right() <= axis.left() + 0.5,
        "the viewing label {viewing:?} runs under the y axis label {axis:?}"
    );
}

/// With no hub configured, the library lists the built-in cards first (the
/// empty hubs section under them), so at 1024×640 they are in view.
#[test]
fn with_no_hub_the_built_in_cards_come_first_in_the_library() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), SMALL);
    h.state_mut().set_hubs(Vec::new());
    h.run();
    let win = window(SMALL);
    let first = h.get_by_label("AdaEvolve").rect();
    let hubs = h.get_by_label("Refresh hubs").rect();
    assert!(inside(first, win), "the first built-in card {first:?}");
    assert!(
        first.bottom() <= hubs.top(),
        "built-in {first:?} under the hubs {hubs:?}"
    );
}
