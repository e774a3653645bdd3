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
    let server = LlmServer::start(|_: &Seen| {
        Reply::After(Duration::from_secs(3), Box::new(chat_reply()))
    });
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
            Reply::json(404, &json!({"type": "error", "error": {"type": "not_found_error", "message": "Not found"}}))
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
