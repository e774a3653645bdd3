//! Changing settings while paused, through the studio (egui_kittest, clicked
//! by label): Pause, change parameters in the Blocks tab's block inspector
//! or its General settings, Resume. The policy's ratios, the prompt's system
//! message and the model's temperature (seen by a loopback endpoint) take
//! effect at the iteration the run records and says in its log; a change
//! that cannot be made in flight keeps the run paused, names the block and
//! offers "Fork instead", which starts a new run from the best genome with
//! the changed card.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{card, temp_task, with_slow_evaluator};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::archive::Archive;
use galapagos::engine::card::Card;
use galapagos::engine::model::user_settings::save_settings_to;
use galapagos::engine::model::{
    EndpointSettings, LlmSettings, ModelRequest, ModelSettings, OfflineModel,
};
use galapagos::engine::params::ParamValue;
use galapagos::studio::App;
use galapagos::studio::state::State;

/// What the prompt builder's system message gets typed into it.
const MARK: &str = " STEERED-BY-HAND";

fn app(runs: &Path, task: &Path, size: egui::Vec2, wgpu: bool) -> Harness<'static, App> {
    app_with(runs, task, size, wgpu, None)
}

/// The studio with the model settings file `settings` (none: no file, the
/// offline model).
fn app_with(
    runs: &Path,
    task: &Path,
    size: egui::Vec2,
    wgpu: bool,
    settings: Option<PathBuf>,
) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        last_task_folder: Some(task.to_path_buf()),
        ..State::default()
    };
    let builder = Harness::builder().with_size(size).with_step_dt(1.0 / 60.0);
    let builder = if wgpu { builder.wgpu() } else { builder };
    builder.build_ui_state(
        |ui, app: &mut App| {
            app.logic(ui.ctx());
            app.show(ui);
        },
        App::new(state, common::registry()).with_settings_path(settings),
    )
}

/// Step frames until `done`, within a generous bound.
fn step_until(h: &mut Harness<'static, App>, what: &str, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while !done(h.state()) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last message: {:?}",
            h.state().message()
        );
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
}

/// openevolve's blocks on two islands, 40 ms per child, 400 iterations.
fn slow_islands() -> Card {
    let mut c = with_slow_evaluator(card("openevolve.yaml", &common::registry()), 40);
    c.population.params.set("num_islands", ParamValue::Int(2));
    c.general.max_iterations = 400;
    c
}

/// Start `card` on `task` with Start run and pause it once a few genomes
/// are in (and the iteration in flight at the pause has landed).
fn start_and_pause(h: &mut Harness<'static, App>, card: Card) -> PathBuf {
    h.state_mut().doc.edit("card", card);
    h.run();
    h.get_by_role_and_label(Role::Button, "Start run").click();
    step_until(h, "three genomes", |a| {
        a.run_view.history().genomes.len() >= 3
    });
    let run_dir = h.state().run_view.live_run_dir().unwrap().to_path_buf();
    h.get_by_role_and_label(Role::Button, "Pause").click();
    step_until(h, "the pause", |a| {
        let history = a.run_view.history();
        history.paused && history.iterations_done >= history.iterations_started
    });
    run_dir
}

/// Show the Blocks tab with `slot`'s block in the inspector.
fn inspect(h: &mut Harness<'static, App>, block: &str) {
    h.get_by_label("Blocks").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, block)
        .click_accesskit();
    h.run_steps(2);
}

/// The policy's "explore / exploit / random" counts in the run's latest
/// policy status.
fn draws(a: &App) -> [u64; 3] {
    let fields = &a.run_view.history().policy.fields;
    let (_, v) = fields
        .iter()
        .find(|(k, _)| k == "explore / exploit / random")
        .unwrap();
    let n: Vec<u64> = v.split(" / ").map(|x| x.parse().unwrap()).collect();
    [n[0], n[1], n[2]]
}

fn stop(h: &mut Harness<'static, App>) {
    let tab = if h.state().run_view.is_paused() {
        "Run (paused)"
    } else {
        "Run (running)"
    };
    h.get_by_label(tab).click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Stop").click();
    step_until(h, "the end of the run", |a| !a.run_view.is_running());
}

#[test]
fn pause_change_the_ratios_and_the_prompt_in_the_block_inspector_and_resume_with_them() {
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut h = app(&runs, &task, egui::vec2(1400.0, 900.0), false);
    h.run();
    let run_dir = start_and_pause(&mut h, slow_islands());
    let before = draws(h.state());

    // Every draw an "explore" one from now on, and a mark in the system
    // message: both typed into the block inspector.
    inspect(&mut h, "SelectionPolicy block");
    h.get_by_role_and_label(Role::SpinButton, "exploitation_ratio")
        .set_value_accesskit(0.0);
    h.run_steps(2);
    h.get_by_role_and_label(Role::SpinButton, "exploration_ratio")
        .set_value_accesskit(1.0);
    h.run_steps(2);
    inspect(&mut h, "PromptBuilder block");
    h.get_by_label("system_message").focus();
    h.run_steps(1);
    h.get_by_label("system_message").type_text(MARK);
    h.run_steps(2);
    let edited = h.state().doc.card.clone();
    assert!(
        edited
            .prompt_builder
            .params
            .get("system_message")
            .is_some_and(|v| v.display().contains(MARK.trim())),
        "{:?}",
        edited.prompt_builder.params
    );
    assert!(
        h.state().run_view.history().paused,
        "editing keeps it paused"
    );

    h.get_by_label("Run (paused)").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Resume").click();
    h.run_steps(2);
    let message = h.state().message().unwrap_or_default().to_owned();
    assert!(
        message.starts_with("Resumed with ")
            && message.contains("selection_policy.exploitation_ratio 0.7 -> 0,")
            && message.contains("selection_policy.exploration_ratio 0.2 -> 1,")
            && message.contains("prompt_builder.system_message"),
        "{message}"
    );
    step_until(&mut h, "the change", |a| {
        a.run_view.history().settings_changes.len() == 1
    });
    let change = h.state().run_view.history().settings_changes[0].clone();
    let k = change.iteration;
    step_until(&mut h, "children from the change on", |a| {
        a.run_view
            .history()
            .genomes
            .iter()
            .filter(|g| g.iteration >= k)
            .count()
            >= 4
    });
    assert!(!h.state().run_view.history().paused);

    // The prompts: the mark from iteration k on, never before.
    let history = h.state().run_view.history();
    for g in history.genomes.iter().map(|g| history.body(g.id).unwrap()) {
        let Some(prompt) = &g.prompt else { continue };
        assert_eq!(
            prompt.system.contains(MARK.trim()),
            g.iteration >= k,
            "genome {} of iteration {} (change at {k})",
            g.id,
            g.iteration
        );
    }
    // The selection: only "explore" draws since, the earlier counts kept.
    let after = draws(h.state());
    assert_eq!(
        [after[1], after[2]],
        [before[1], before[2]],
        "{before:?} {after:?}"
    );
    assert!(after[0] >= before[0] + 3, "{before:?} {after:?}");

    // The log says it, with the iteration.
    h.get_by_label_contains("Log (").click();
    h.run_steps(2);
    h.get_by_label_contains(&format!("settings changed from iteration {k}: "));

    stop(&mut h);
    let a = Archive::open(&run_dir).unwrap();
    assert_eq!(a.settings_changes().unwrap(), vec![change]);
    let yaml = a.meta().unwrap().card_yaml;
    assert!(yaml.contains("exploration_ratio: 1"), "{yaml}");
    assert!(yaml.contains(MARK.trim()), "{yaml}");
}

#[test]
fn a_change_that_cannot_be_made_in_flight_is_named_and_fork_instead_starts_a_fork() {
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let runs = tmp.path().join("runs");
    let mut h = app(&runs, &task, egui::vec2(1400.0, 900.0), false);
    h.run();
    let run_dir = start_and_pause(&mut h, slow_islands());
    let genomes = h.state().run_view.history().genomes.len();

    inspect(&mut h, "Population block");
    h.get_by_role_and_label(Role::SpinButton, "num_islands")
        .set_value_accesskit(3.0);
    h.run_steps(2);
    assert_eq!(
        h.state().doc.card.population.params.get("num_islands"),
        Some(&ParamValue::Int(3))
    );
    h.get_by_label("Run (paused)").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Resume").click();
    h.run_steps(3);
    assert_eq!(
        h.state().message().unwrap_or_default(),
        "Still paused: cannot change in flight: population (islands): its parameters cannot change in flight"
    );
    h.get_by_label_contains("Cannot change in flight: population (islands)");
    // Still paused: nothing new arrives.
    h.run_steps(20);
    assert!(h.state().run_view.history().paused);
    assert_eq!(h.state().run_view.history().genomes.len(), genomes);

    let best = h.state().run_view.history().best_id.unwrap();
    h.state_mut().run_view.select(None);
    h.get_by_role_and_label(Role::Button, "Fork instead")
        .click();
    h.run_steps(3);
    let message = h.state().message().unwrap_or_default().to_owned();
    assert!(
        message.starts_with(&format!("Forked genome #{best} of {}", run_dir.display())),
        "{message}"
    );
    step_until(&mut h, "the fork's start", |a| {
        a.run_view.live_run_dir().is_some()
    });
    let fork = h.state().run_view.live_run_dir().unwrap().to_path_buf();
    assert_ne!(fork, run_dir);
    step_until(&mut h, "the fork's first genome", |a| {
        !a.run_view.history().genomes.is_empty()
    });
    stop(&mut h);
    let meta = Archive::open(&fork).unwrap().meta().unwrap();
    assert_eq!(meta.forked_from.unwrap().genome, best);
    assert!(
        meta.card_yaml.contains("num_islands: 3"),
        "{}",
        meta.card_yaml
    );
    // The first run kept its card: the change was not made.
    let a = Archive::open(&run_dir).unwrap();
    assert!(a.settings_changes().unwrap().is_empty());
    assert!(a.meta().unwrap().card_yaml.contains("num_islands: 2"));
}

/// Answers as the offline model would, in the Chat Completions shape.
fn chat(s: &common::llm_server::Seen) -> common::llm_server::Reply {
    let text = |i: usize| {
        s.body["messages"][i]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let reply = OfflineModel::new().reply_text(&ModelRequest {
        system: text(0),
        user: text(1),
        seed: s.body.to_string().len() as u64,
    });
    common::llm_server::Reply::json(
        200,
        &serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
    )
}

#[test]
fn pause_change_the_temperature_and_resume_the_endpoint_sees_it_from_the_recorded_iteration() {
    let server = common::llm_server::LlmServer::start(chat);
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    // The studio's model settings: one loopback endpoint that needs no key.
    let settings = tmp.path().join("config").join("settings.json");
    let mut model_settings = ModelSettings::default();
    model_settings.endpoints.push(EndpointSettings {
        name: "loopback".into(),
        key_required: Some(false),
        api_key_env: "GALAPAGOS_TEST_NO_KEY".into(),
        model: Some("loop-model".into()),
        ..EndpointSettings::for_base(&server.base("/v1"))
    });
    save_settings_to(&settings, &model_settings).unwrap();
    let mut h = app_with(
        &tmp.path().join("runs"),
        &task,
        egui::vec2(1400.0, 900.0),
        false,
        Some(settings),
    );
    h.run();
    let mut c = slow_islands();
    c.llm = Some(LlmSettings {
        temperature: Some(0.7),
        ..LlmSettings::default()
    });
    // One request per iteration.
    c.general.inner_retry_times = 0;
    let run_dir = start_and_pause(&mut h, c);
    assert!(
        h.state()
            .run_view
            .history()
            .info
            .as_ref()
            .is_some_and(|i| i.model.contains("loop-model")),
        "{:?}",
        h.state().run_view.history().info
    );

    h.get_by_label("Blocks").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::SpinButton, "temperature")
        .set_value_accesskit(0.2);
    h.run_steps(2);
    h.get_by_label("Run (paused)").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Resume").click();
    h.run_steps(2);
    let message = h.state().message().unwrap_or_default().to_owned();
    assert_eq!(message, "Resumed with llm.temperature 0.7 -> 0.2");
    step_until(&mut h, "the change", |a| {
        a.run_view.history().settings_changes.len() == 1
    });
    let k = h.state().run_view.history().settings_changes[0].iteration;
    step_until(&mut h, "children from the change on", |a| {
        a.run_view
            .history()
            .genomes
            .iter()
            .filter(|g| g.iteration >= k)
            .count()
            >= 3
    });
    stop(&mut h);
    // Each request's temperature: 0.7 before iteration k, 0.2 from it on.
    let temps: Vec<f64> = server
        .seen()
        .iter()
        .filter_map(|s| s.body["temperature"].as_f64())
        .collect();
    let hot = temps
        .iter()
        .take_while(|t| (**t - 0.7).abs() < 1e-9)
        .count();
    assert_eq!(hot as u64, k - 1, "{temps:?}");
    assert!(
        temps.len() >= hot + 3 && temps[hot..].iter().all(|t| (t - 0.2).abs() < 1e-9),
        "{temps:?}"
    );
    let yaml = Archive::open(&run_dir).unwrap().meta().unwrap().card_yaml;
    assert!(yaml.contains("temperature: 0.2"), "{yaml}");
}

/// Ticking the temperature's checkbox while paused, on a card with no `llm`
/// section, changes the temperature and nothing else: the run's log says
/// `llm.temperature (none) -> 0.7` (no `llm.models (none) -> []`) and the
/// card keeps no empty `models` list; ticked and unticked again, Resume
/// changes nothing and logs nothing.
#[test]
fn ticking_the_temperature_while_paused_changes_the_temperature_only() {
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let mut h = app(
        &tmp.path().join("runs"),
        &task,
        egui::vec2(1400.0, 900.0),
        false,
    );
    h.run();
    let mut c = slow_islands();
    c.llm = None;
    let run_dir = start_and_pause(&mut h, c);
    // the checkbox on the temperature's row (each optional setting has one)
    let tick_temperature = |h: &mut Harness<'static, App>| {
        h.get_by_label("Blocks").click();
        h.run_steps(2);
        h.get_by_label("temperature").scroll_to_me();
        h.run_steps(2);
        let row = h.get_by_label("temperature").rect().center().y;
        let boxes: Vec<_> = h
            .query_all_by_label("set")
            .filter(|n| (n.rect().center().y - row).abs() < 8.0)
            .collect();
        assert_eq!(boxes.len(), 1, "the temperature's checkbox");
        boxes[0].click_accesskit();
        h.run_steps(2);
    };
    let resume = |h: &mut Harness<'static, App>| {
        h.get_by_label("Run (paused)").click();
        h.run_steps(2);
        h.get_by_role_and_label(Role::Button, "Resume").click();
        h.run_steps(2);
    };

    // ticked and unticked: nothing changed
    tick_temperature(&mut h);
    assert!(
        h.state().doc.card.llm.is_some(),
        "the checkbox was not ticked"
    );
    tick_temperature(&mut h);
    assert_eq!(h.state().doc.card.llm, None);
    resume(&mut h);
    assert!(
        !h.state()
            .message()
            .unwrap_or_default()
            .starts_with("Resumed with"),
        "{:?}",
        h.state().message()
    );
    step_until(&mut h, "the run going on", |a| !a.run_view.is_paused());
    h.get_by_role_and_label(Role::Button, "Pause").click();
    step_until(&mut h, "the pause", |a| {
        let history = a.run_view.history();
        history.paused && history.iterations_done >= history.iterations_started
    });
    assert!(h.state().run_view.history().settings_changes.is_empty());

    // ticked: the temperature, and only it
    tick_temperature(&mut h);
    let yaml = h.state().doc.card.to_yaml();
    assert!(yaml.contains("temperature: 0.7"), "{yaml}");
    assert!(!yaml.contains("models"), "{yaml}");
    resume(&mut h);
    assert_eq!(
        h.state().message().unwrap_or_default(),
        "Resumed with llm.temperature (none) -> 0.7"
    );
    step_until(&mut h, "the change", |a| {
        a.run_view.history().settings_changes.len() == 1
    });
    let logged = h.state().run_view.history().settings_changes[0].to_string();
    assert!(
        logged.contains("llm.temperature") && !logged.contains("llm.models"),
        "{logged}"
    );
    stop(&mut h);
    let yaml = Archive::open(&run_dir).unwrap().meta().unwrap().card_yaml;
    assert!(
        yaml.contains("temperature: 0.7") && !yaml.contains("models"),
        "{yaml}"
    );
}

/// The README's pictures at 1024×640: a refused change with "Fork instead",
/// and the log line of a change taken.
#[test]
#[ignore = "writes the README's screenshots"]
fn screenshots_of_a_refused_change_and_a_change_in_the_log() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/screenshots");
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let mut h = app(
        &tmp.path().join("runs"),
        &task,
        egui::vec2(1024.0, 640.0),
        true,
    );
    h.run();
    start_and_pause(&mut h, slow_islands());
    inspect(&mut h, "Population block");
    h.get_by_role_and_label(Role::SpinButton, "num_islands")
        .set_value_accesskit(3.0);
    h.run_steps(2);
    h.get_by_label("Run (paused)").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Resume").click();
    h.run_steps(4);
    h.remove_cursor();
    h.run_steps(2);
    let path = out.join("settings-refused-1024x640.png");
    h.render().unwrap().save(&path).unwrap();
    eprintln!("wrote {}", path.display());

    // Undo the islands, raise the exploration ratio: taken on Resume.
    h.state_mut().doc.edit("islands back", slow_islands());
    inspect(&mut h, "SelectionPolicy block");
    h.get_by_role_and_label(Role::SpinButton, "exploitation_ratio")
        .set_value_accesskit(0.1);
    h.run_steps(2);
    h.get_by_role_and_label(Role::SpinButton, "exploration_ratio")
        .set_value_accesskit(0.8);
    h.run_steps(2);
    h.get_by_label("Run (paused)").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Resume").click();
    step_until(&mut h, "the change", |a| {
        a.run_view.history().settings_changes.len() == 1
    });
    let k = h.state().run_view.history().settings_changes[0].iteration;
    step_until(&mut h, "a few more children", |a| {
        a.run_view
            .history()
            .genomes
            .iter()
            .any(|g| g.iteration >= k + 2)
    });
    h.get_by_role_and_label(Role::Button, "Pause").click();
    step_until(&mut h, "the pause", |a| a.run_view.history().paused);
    h.get_by_label_contains("Log (").click();
    h.run_steps(4);
    h.remove_cursor();
    h.run_steps(2);
    let path = out.join("settings-changed-log-1024x640.png");
    h.render().unwrap().save(&path).unwrap();
    eprintln!("wrote {}", path.display());
    stop(&mut h);
}
