#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! A run against a model endpoint as a user starts one, from an empty
//! folder with an empty HOME, against a scripted server on loopback: what
//! the run says and does about the endpoint is never silently wrong.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::llm_server::{LlmServer, Reply, Seen};
use serde_json::json;

/// `galapagos ARGS` in `cwd` with `home` as HOME and nothing of the
/// caller's model environment.
fn galapagos(args: &[&str], home: &Path, cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A chat completion whose text is no edit (the child fails to parse,
/// which costs nothing but the call).
fn chat_reply() -> Reply {
    Reply::json(
        200,
        &json!({
            "choices": [{"message": {"role": "assistant", "content": "no edit here"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3}
        }),
    )
}

/// `--parallel 16` puts 16 requests in flight: an endpoint whose settings
/// name no concurrency follows the run's parallelism (it was 8, silently).
#[test]
fn parallel_16_puts_16_requests_in_flight() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // each request held long enough for the 16 iterations to send theirs
    let server =
        LlmServer::start(|_: &Seen| Reply::After(Duration::from_secs(3), Box::new(chat_reply())));
    let base = server.base("/v1");
    let o = galapagos(
        &[
            "run",
            "best_of_n",
            "--task",
            "circle_packing",
            "--iterations",
            "16",
            "--parallel",
            "16",
            "--quiet",
            "--api-base",
            &base,
            "--model",
            "scripted",
        ],
        home.path(),
        cwd.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server.most_at_once(), 16, "{}", text(&o));
}

/// An Anthropic Messages reply with no edit in it.
fn anthropic_reply() -> Reply {
    Reply::json(
        200,
        &json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "no edit here"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 3}
        }),
    )
}

/// The Anthropic preset takes its base URL in either convention: the API's
/// (`…/v1`) and the Anthropic SDK's (no `/v1`, as `ANTHROPIC_BASE_URL` and
/// proxies give it); both post to `/v1/messages`.
#[test]
fn the_anthropic_preset_takes_the_sdks_base_url_and_the_apis() {
    let server = LlmServer::start(|s: &Seen| {
        if s.path() == "/v1/messages" {
            anthropic_reply()
        } else {
            Reply::json(
                404,
                &json!({"type": "error", "error": {"type": "not_found_error", "message": "Not found"}}),
            )
        }
    });
    for base in [server.base(""), server.base("/"), server.base("/v1")] {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
            .args([
                "run",
                "best_of_n",
                "--task",
                "circle_packing",
                "--iterations",
                "1",
                "--quiet",
                "--provider",
                "anthropic",
                "--api-base",
                &base,
            ])
            .env("HOME", home.path())
            .env("ANTHROPIC_API_KEY", "test-key-not-secret")
            .env_remove("OPENAI_BASE_URL")
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{base}: {}", text(&o));
        let paths: Vec<String> = server.seen().iter().map(|s| s.path().to_owned()).collect();
        assert!(
            paths.iter().all(|p| p == "/v1/messages"),
            "{base}: {paths:?}"
        );
    }
    assert!(!server.seen().is_empty());
}

/// A down endpoint (nothing listens on its port) fails the run in seconds,
/// before anything is written, with the fix, instead of after every retry
/// of five iterations (~50 s, an ETA of hours meanwhile); the engine checks
/// the same way before a run's first iteration (the studio, a resume).
#[test]
fn a_down_endpoint_fails_in_seconds_with_the_fix() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let started = std::time::Instant::now();
    let o = galapagos(
        &[
            "run",
            "best_of_n",
            "--task",
            "circle_packing",
            "--iterations",
            "5",
            "--api-base",
            &base,
            "--model",
            "m",
        ],
        home.path(),
        cwd.path(),
    );
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("cannot reach the model's endpoint {base}"))
            && text(&o).contains("check api_base")
            && text(&o).contains("galapagos models check"),
        "{}",
        text(&o)
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(!cwd.path().join("runs").exists(), "nothing written");

    // the engine's own check, as the studio starts a run
    let registry = galapagos::engine::registry::Registry::builtin();
    let task = galapagos::engine::builtin::resolve_task_in(
        Path::new("circle_packing"),
        &home.path().join("tasks"),
    )
    .unwrap();
    let card = galapagos::engine::card::ValidCard::from_yaml(
        galapagos::engine::builtin::card("best_of_n").unwrap().yaml,
        "best_of_n",
        &registry,
    )
    .unwrap();
    let plan = galapagos::engine::launch::RunPlan::new(
        card,
        galapagos::engine::task::Task::load(&task.dir).unwrap(),
        None,
        &registry,
    )
    .unwrap();
    let (model, _) = galapagos::engine::model::build_model(
        None,
        &galapagos::engine::model::ModelOverrides {
            api_base: Some(base.clone()),
            model: Some("m".into()),
            ..Default::default()
        },
        &galapagos::engine::model::ModelSettings::default(),
        galapagos::engine::model::default_model(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let mut handle = galapagos::engine::run_thread::start(plan, model, None).unwrap();
    let mut failed = None;
    while let Some(event) = handle.events.blocking_recv() {
        if let galapagos::engine::events::RunEvent::Finished(s) = event {
            failed = Some(s.status);
            break;
        }
    }
    handle.join();
    assert!(
        matches!(&failed, Some(galapagos::engine::events::RunStatus::Failed(m)) if m.contains("cannot reach")),
        "{failed:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// The run's model line says where its key comes from only when the
/// variable is set: a local endpoint without one says it is unset (it said
/// "key from $OPENAI_API_KEY" with the variable unset).
#[test]
fn an_unset_key_variable_is_said_to_be_unset() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = LlmServer::start(|_: &Seen| chat_reply());
    let base = server.base("/v1");
    let o = galapagos(
        &[
            "run",
            "best_of_n",
            "--task",
            "circle_packing",
            "--iterations",
            "1",
            "--quiet",
            "--api-base",
            &base,
            "--model",
            "scripted",
        ],
        home.path(),
        cwd.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let model = stdout
        .lines()
        .find(|l| l.starts_with("model:"))
        .unwrap_or_default();
    assert!(
        model.contains("no key: $OPENAI_API_KEY is unset") && !model.contains("key from"),
        "{model}"
    );
}
