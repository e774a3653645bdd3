//! The model dialog's provider presets and Test connection, through the UI:
//! an Anthropic endpoint added from the preset list and pointed at a
//! loopback server shaped like the Messages API; the test runs on a worker
//! (frames keep coming while it waits) and shows the latency, the answer and
//! the listed models, then names an unknown model with its fix.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::llm_server::{LlmServer, Reply, Seen};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::model::user_settings::load_settings_from;
use galapagos::studio::App;
use galapagos::studio::state::State;
use serde_json::json;

/// A variable every process has; its value stands in for the key.
const KEY_VAR: &str = "PATH";

fn anthropic(s: &Seen) -> Reply {
    if s.header("x-api-key") != std::env::var(KEY_VAR).ok()
        || s.header("anthropic-version").is_none()
    {
        return Reply::json(
            401,
            &json!({"type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        );
    }
    match (s.method.as_str(), s.path()) {
        ("GET", "/v1/models") => Reply::json(
            200,
            &json!({"data": [
            {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"},
            {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5"}],
            "has_more": false}),
        ),
        ("POST", "/v1/messages") if s.body["model"] == "claude-sonnet-4-5" => {
            // Slow enough that frames must keep coming while it waits.
            std::thread::sleep(Duration::from_millis(600));
            Reply::json(
                200,
                &json!({"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 12, "output_tokens": 1}}),
            )
        }
        _ => Reply::json(
            404,
            &json!({"type": "error",
            "error": {"type": "not_found_error", "message": format!("model: {}", s.body["model"].as_str().unwrap_or(""))}}),
        ),
    }
}

fn app(dir: &Path, size: egui::Vec2, wgpu: bool) -> Harness<'static, App> {
    let state = State {
        runs_folder: dir.join("runs"),
        ..State::default()
    };
    let app = App::new(state, common::registry())
        .with_settings_path(Some(dir.join("config").join("settings.json")));
    let mut b = Harness::builder();
    b = b.with_size(size);
    if wgpu {
        b = b.wgpu();
    }
    b.build_ui_state(
        |ui, app: &mut App| {
            app.logic(ui.ctx());
            app.show(ui);
        },
        app,
    )
}

fn replace_text(h: &mut Harness<'static, App>, label: &str, text: &str) {
    h.get_by_role_and_label(Role::TextInput, label).focus();
    h.run();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_role_and_label(Role::TextInput, label)
        .type_text(text);
    h.run_steps(1);
    // Leave the field (a click elsewhere), so the next click lands on its target.
    h.get_by_label("Model settings").click();
    h.run_steps(2);
}

/// Steps frames until a label containing `text` shows; the longest frame.
fn step_until_label(h: &mut Harness<'static, App>, text: &str) -> Duration {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut longest = Duration::ZERO;
    while h.query_by_label_contains(text).is_none() {
        if Instant::now() > deadline {
            let labels: Vec<String> = h
                .query_all_by_label_contains("")
                .filter_map(|n| n.accesskit_node().label())
                .collect();
            panic!("no label with {text:?} in {labels:#?}");
        }
        let t = Instant::now();
        h.step();
        longest = longest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
    longest
}

/// Opens the dialog, adds an Anthropic endpoint from the preset list and
/// points it at `server`.
fn add_anthropic(h: &mut Harness<'static, App>, server: &LlmServer) {
    h.run();
    h.get_by_label_contains("Model: offline model").click();
    h.run_steps(4);
    h.get_by_label("Add a provider…").click();
    h.run_steps(2);
    h.get_by_label("Anthropic").click();
    h.run_steps(3);
    h.get_by_label_contains("Key from console.anthropic.com");
    replace_text(h, "API base", &server.base("/v1"));
    replace_text(h, "Key variable", KEY_VAR);
}

#[test]
fn a_preset_endpoint_is_tested_on_a_worker_and_saved() {
    let server = LlmServer::start(anthropic);
    let tmp = tempfile::tempdir().unwrap();
    let mut h = app(tmp.path(), egui::vec2(1400.0, 900.0), false);
    add_anthropic(&mut h, &server);
    h.get_by_label("Test connection").click();
    h.run_steps(1);
    h.get_by_label_contains("Testing…");
    let longest = step_until_label(&mut h, "Connected in");
    assert!(
        longest < Duration::from_millis(400),
        "a frame took {longest:?}: the UI waited"
    );
    h.get_by_label_contains("The model answered: \"ok\"");
    h.get_by_label_contains("Models listed: claude-haiku-4-5, claude-sonnet-4-5");
    assert!(
        h.query_by_label_contains(&std::env::var(KEY_VAR).unwrap())
            .is_none()
    );

    // A model the server does not know: named, with the fix.
    replace_text(&mut h, "Model", "claude-nope");
    assert!(
        h.query_by_label_contains("Connected in").is_none(),
        "an edit clears the report"
    );
    h.get_by_label("Test connection").click();
    step_until_label(&mut h, "Unknown model: HTTP 404");
    h.get_by_label_contains(
        "Fix: name a model the server has — it lists: claude-haiku-4-5, claude-sonnet-4-5",
    );
    replace_text(&mut h, "Model", "claude-sonnet-4-5");

    h.get_by_label("Save settings").click();
    h.run_steps(2);
    let saved = load_settings_from(&tmp.path().join("config").join("settings.json")).unwrap();
    let ep = &saved.endpoints[0];
    assert_eq!(ep.provider.as_deref(), Some("anthropic"));
    assert_eq!(
        ep.protocol,
        Some(galapagos::engine::model::Protocol::AnthropicMessages)
    );
    assert_eq!(ep.api_key_env, KEY_VAR);
    // Every request of the test carried the protocol's headers.
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.header("anthropic-version").is_some())
    );
}

/// The dialog at 1024x640 after a test connection, for the README and docs/models.md.
/// `SCREENSHOT_DIR=dir cargo test --test studio_models -- --ignored`.
#[test]
#[ignore = "writes a PNG file; run by hand"]
fn screenshot_of_the_model_dialog() {
    let out = std::env::var("SCREENSHOT_DIR").unwrap_or_else(|_| "target/screenshots".to_owned());
    std::fs::create_dir_all(&out).unwrap();
    let server = LlmServer::start(anthropic);
    let tmp = tempfile::tempdir().unwrap();
    let mut h = app(tmp.path(), egui::vec2(1024.0, 640.0), true);
    add_anthropic(&mut h, &server);
    h.get_by_label("Test connection").click();
    step_until_label(&mut h, "Connected in");
    h.run_steps(4);
    h.render()
        .unwrap()
        .save(format!("{out}/model_dialog.png"))
        .unwrap();
    let _ = Arc::new(());
}

/// Save settings writes the dialog's fields into the settings file as it is
/// at that moment: a `hubs` list added to the file by hand while the dialog
/// was open is still there afterwards; a hand edit of the endpoints made
/// meanwhile is not overwritten: nothing is written and the dialog says why.
#[test]
fn save_settings_keeps_what_was_added_to_the_file_and_refuses_to_overwrite_a_hand_edit() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("config").join("settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let endpoint = |base: &str| json!({"api_base": base, "api_key_env": "NO_KEY_HERE"});
    std::fs::write(
        &path,
        json!({"endpoints": [endpoint("http://127.0.0.1:9/v1")]}).to_string(),
    )
    .unwrap();
    let mut h = app(tmp.path(), egui::vec2(1024.0, 640.0), false);
    h.run();
    let open_dialog = |h: &mut Harness<'static, App>| {
        h.get_by_label_contains("Model: ").click();
        h.run_steps(4);
        assert!(h.state().model_dialog_open());
    };
    let edit_file = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&path, v.to_string()).unwrap();
    };

    open_dialog(&mut h);
    edit_file(&|v| v["hubs"] = json!(["/srv/team-hub"]));
    h.get_by_label("Save settings").click();
    h.run_steps(2);
    assert!(!h.state().model_dialog_open(), "{:?}", h.state().message());
    let saved = load_settings_from(&path).unwrap();
    assert_eq!(
        saved.hubs,
        ["/srv/team-hub"],
        "the hubs added to the file were lost"
    );
    assert_eq!(saved.endpoints[0].api_base, "http://127.0.0.1:9/v1");
    assert_eq!(h.state().model_settings().hubs, ["/srv/team-hub"]);

    open_dialog(&mut h);
    edit_file(&|v| v["endpoints"] = json!([endpoint("http://127.0.0.1:10/v1")]));
    let before = std::fs::read_to_string(&path).unwrap();
    h.get_by_label("Save settings").click();
    h.run_steps(2);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        before,
        "a hand edit of the endpoints was overwritten"
    );
    assert!(h.state().model_dialog_open());
    // said in the dialog and the status bar
    assert_eq!(
        h.query_all_by_label_contains("changed since it was read (endpoints)")
            .count(),
        2
    );
    // opened again, the dialog starts from the file
    h.get_by_label("Close").hover();
    h.run_steps(2);
    h.get_by_label("Close").click();
    h.run_steps(2);
    assert!(!h.state().model_dialog_open());
    open_dialog(&mut h);
    h.get_by_label("Save settings").click();
    h.run_steps(2);
    assert!(!h.state().model_dialog_open(), "{:?}", h.state().message());
    let saved = load_settings_from(&path).unwrap();
    assert_eq!(saved.endpoints[0].api_base, "http://127.0.0.1:10/v1");
    assert_eq!(saved.hubs, ["/srv/team-hub"]);
}
