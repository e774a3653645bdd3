//! `galapagos models check` from the command line, with an empty HOME,
//! against a loopback server shaped like OpenAI (and Azure OpenAI): a
//! working endpoint, then each usual mistake — a wrong key, a wrong URL, a
//! wrong deployment, a model the server does not know — each named in plain
//! words with its fix. The outputs are printed (`-- --nocapture`): the
//! user guide quotes them (docs/models.md).
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::path::Path;
use std::process::Command;

use common::llm_server::{LlmServer, Reply, Seen};
use serde_json::json;

const GOOD_KEY: &str = "sk-test-good-0123456789";
const KEY_VAR: &str = "GALAPAGOS_CHECK_KEY";

fn handler(s: &Seen) -> Reply {
    let key_ok = s.header("authorization").as_deref() == Some(&format!("Bearer {GOOD_KEY}"))
        || s.header("api-key").as_deref() == Some(GOOD_KEY);
    if !key_ok {
        return Reply::json(
            401,
            &json!({"error": {"message": "Incorrect API key provided: sk-test-****6789. You can find your API key at https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
        );
    }
    match (s.method.as_str(), s.path()) {
        ("GET", "/v1/models") => Reply::json(
            200,
            &json!({"object": "list", "data": [
                {"id": "gpt-4.1-mini", "object": "model", "created": 1, "owned_by": "system"},
                {"id": "gpt-4.1", "object": "model", "created": 1, "owned_by": "system"},
                {"id": "o4-mini", "object": "model", "created": 1, "owned_by": "system"}]}),
        ),
        ("POST", "/v1/chat/completions") if s.body["model"] == "gpt-4.1-mini" => Reply::json(
            200,
            &json!({"id": "chatcmpl-1", "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 14, "completion_tokens": 1, "total_tokens": 15}}),
        ),
        ("POST", "/v1/chat/completions") => Reply::json(
            404,
            &json!({"error": {"message": format!("The model `{}` does not exist or you do not have access to it.", s.body["model"].as_str().unwrap_or("")),
                "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
        ),
        ("POST", p) if p.starts_with("/openai/deployments/") => Reply::json(
            404,
            &json!({"error": {"code": "DeploymentNotFound",
                "message": "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}),
        ),
        _ => Reply::with(
            404,
            &[("content-type", "text/html")],
            "<html><body><h1>404 Not Found</h1></body></html>",
        ),
    }
}

/// `galapagos models check ARGS` with an empty HOME and `key` in the key
/// variable; (exit code, stdout).
fn check(home: &Path, key: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args(["models", "check"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env(KEY_VAR, key)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains(GOOD_KEY) && !stderr.contains(GOOD_KEY));
    println!(
        "$ galapagos models check {}\n{stdout}{stderr}",
        args.join(" ")
    );
    (out.status.code().unwrap_or(-1), stdout)
}

#[test]
fn a_working_endpoint_and_each_mistake_get_their_own_message_and_fix() {
    let server = LlmServer::start(handler);
    let home = tempfile::tempdir().unwrap();
    let base = server.base("/v1");
    let flags = |model: &'static str, base: String| {
        vec![
            "--api-base".to_owned(),
            base,
            "--model".to_owned(),
            model.to_owned(),
            "--api-key-env".to_owned(),
            KEY_VAR.to_owned(),
        ]
    };
    let run = |key: &str, args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        check(home.path(), key, &args)
    };

    // Working: latency, the answer, the models the server lists.
    let (code, out) = run(GOOD_KEY, &flags("gpt-4.1-mini", base.clone()));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok in ") && out.contains("\"ok\""), "{out}");
    assert!(out.contains("(14 prompt + 1 completion tokens)"), "{out}");
    assert!(
        out.contains("models listed: gpt-4.1, gpt-4.1-mini, o4-mini"),
        "{out}"
    );

    // A wrong key.
    let (code, out) = run("sk-test-wrong", &flags("gpt-4.1-mini", base.clone()));
    assert_eq!(code, 1);
    assert!(
        out.contains("wrong key: HTTP 401") && out.contains(KEY_VAR),
        "{out}"
    );
    assert!(
        out.contains(&format!("fix: put a valid key for 127.0.0.1 in {KEY_VAR}")),
        "{out}"
    );
    assert!(
        !out.contains("****"),
        "the server's echo of the key is not quoted: {out}"
    );

    // A wrong URL: nothing listening there, or no API at that path.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let (code, out) = run(GOOD_KEY, &flags("gpt-4.1-mini", dead));
    assert_eq!(code, 1);
    assert!(out.contains("wrong URL: cannot reach"), "{out}");
    assert!(out.contains("fix: check api_base"), "{out}");
    let (code, out) = run(GOOD_KEY, &flags("gpt-4.1-mini", server.base("/api")));
    assert_eq!(code, 1);
    assert!(
        out.contains("wrong URL: HTTP 404: there is no chat_completions API at"),
        "{out}"
    );

    // A wrong Azure deployment.
    let azure = server.base("/openai/deployments/{deployment}");
    let args: Vec<String> = [
        "--provider",
        "azure",
        "--api-base",
        &azure,
        "--model",
        "gpt4o-prod",
        "--api-key-env",
        KEY_VAR,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let (code, out) = run(GOOD_KEY, &args);
    assert_eq!(code, 1);
    assert!(
        out.contains("wrong deployment: HTTP 404") && out.contains("`gpt4o-prod`"),
        "{out}"
    );
    assert!(
        out.contains("/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"),
        "{out}"
    );
    assert!(
        out.contains("fix: use a deployment's name as the model"),
        "{out}"
    );

    // A model the server does not know: the fix lists the ones it has.
    let (code, out) = run(GOOD_KEY, &flags("gpt-9", base.clone()));
    assert_eq!(code, 1);
    assert!(
        out.contains("unknown model: HTTP 404") && out.contains("`gpt-9`"),
        "{out}"
    );
    assert!(
        out.contains("fix: name a model the server has — it lists: gpt-4.1, gpt-4.1-mini, o4-mini"),
        "{out}"
    );

    // With no flags, every endpoint of the settings file is checked.
    let dir = home.path().join(".config").join("galapagos");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({"endpoints": [
            {"name": "work", "api_base": base, "api_key_env": KEY_VAR, "model": "gpt-4.1-mini"},
            {"name": "typo", "api_base": base, "api_key_env": KEY_VAR, "model": "gpt-4.1-mimi"}
        ]})
        .to_string(),
    )
    .unwrap();
    let (code, out) = check(home.path(), GOOD_KEY, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("endpoint `work`: model `gpt-4.1-mini`") && out.contains("ok in "),
        "{out}"
    );
    assert!(
        out.contains("endpoint `typo`: model `gpt-4.1-mimi`") && out.contains("unknown model"),
        "{out}"
    );
}
