//! Model quirks handled, not reported as failures: a run whose ensemble has
//! one model that refuses `temperature` (answering 400 as OpenAI's reasoning
//! models do) continues after one warning, and that model is never sent a
//! temperature again while the other keeps its own.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::llm_server::{LlmServer, Reply, Seen};
use galapagos::engine::card::{LlmSettings, ModelSpec};
use galapagos::engine::events::{LogLevel, RunEvent};
use galapagos::engine::model::resolve::build_model_with_env;
use galapagos::engine::model::{
    EndpointSettings, ModelOverrides, ModelRequest, ModelSettings, OfflineModel,
};
use serde_json::json;

const PICKY: &str = "picky-model";
const EASY: &str = "easy-model";

/// Answers as the offline model would, in the Chat Completions shape; the
/// picky model refuses any request that carries `temperature`, with the
/// body OpenAI sends for it.
fn handler(s: &Seen) -> Reply {
    let model = s.body["model"].as_str().unwrap_or_default();
    if model == PICKY && s.body.get("temperature").is_some() {
        return Reply::json(
            400,
            &json!({"error": {
                "message": "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "unsupported_value"}}),
        );
    }
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
    Reply::json(
        200,
        &json!({"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
    )
}

#[test]
fn a_refused_temperature_is_dropped_once_with_one_warning_and_the_run_goes_on() {
    let server = LlmServer::start(handler);
    let registry = common::registry();
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let mut card = common::with_evaluator(common::card("best_of_n.yaml", &registry), "trivial");
    card.general.max_iterations = 12;
    card.general.parallel = 2;
    let spec = |name: &str| ModelSpec {
        name: name.into(),
        weight: 1.0,
        temperature: None,
        top_p: None,
        max_tokens: None,
    };
    let llm = LlmSettings {
        models: vec![spec(PICKY), spec(EASY)],
        temperature: Some(0.7),
        top_p: None,
        max_tokens: Some(2000),
        ..LlmSettings::default()
    };
    card.llm = Some(llm.clone());
    let mut settings = ModelSettings::default();
    settings.endpoints.push(EndpointSettings {
        name: "loopback".into(),
        key_required: Some(false),
        api_key_env: "GALAPAGOS_TEST_NO_KEY".into(),
        ..EndpointSettings::for_base(&server.base("/v1"))
    });
    let (model, desc) = build_model_with_env(
        Some(&llm),
        &ModelOverrides::default(),
        &settings,
        galapagos::engine::model::default_model(),
        &|_| None,
    )
    .unwrap();
    assert!(desc.starts_with("ensemble of 2"), "{desc}");

    let mut handle = common::spawn_with(
        common::plan_in(card, &task, Some(tmp.path().join("run")), &registry),
        model,
    );
    let mut warnings = Vec::new();
    let mut admitted = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let summary = loop {
        assert!(Instant::now() < deadline, "the run did not finish in time");
        match handle.events.blocking_recv() {
            Some(RunEvent::Log {
                level: LogLevel::Warn,
                message,
            }) => warnings.push(message),
            Some(RunEvent::GenomeAdmitted { genome, .. }) => admitted.push(genome),
            Some(RunEvent::Finished(s)) => {
                handle.join();
                break s;
            }
            Some(_) => {}
            None => panic!("events closed without Finished"),
        }
    };
    // The run went on to its budget; no iteration failed for the quirk.
    assert_eq!(summary.iterations, 12, "{summary:?}");
    let failed: Vec<_> = admitted
        .iter()
        .filter(|g| {
            g.error
                .as_deref()
                .is_some_and(|e| e.contains("temperature"))
        })
        .collect();
    assert!(failed.is_empty(), "{:?}", failed[0].error);
    assert!(
        admitted.iter().filter(|g| g.valid).count() > 1,
        "children were evaluated"
    );
    // One warning, saying what was left out and for how long.
    let quirk: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("temperature"))
        .collect();
    assert_eq!(quirk.len(), 1, "{warnings:#?}");
    assert!(
        quirk[0].contains(PICKY)
            && quirk[0].contains("does not take `temperature`")
            && quirk[0].contains("for the rest of the run"),
        "{}",
        quirk[0]
    );
    // After the refusal, the picky model was never sent a temperature; the
    // other model kept its own.
    let seen = server.seen();
    let picky: Vec<&Seen> = seen.iter().filter(|s| s.body["model"] == PICKY).collect();
    let refused_at = picky
        .iter()
        .position(|s| s.body.get("temperature").is_some())
        .expect("the picky model was first sent a temperature");
    let with_t = picky
        .iter()
        .filter(|s| s.body.get("temperature").is_some())
        .count();
    // With two iterations in flight, both may have been sent before the refusal came back.
    assert!(with_t <= 2, "{with_t} requests carried a temperature");
    assert!(
        picky[refused_at + with_t..]
            .iter()
            .all(|s| s.body.get("temperature").is_none())
    );
    assert!(picky.len() > with_t + 2, "the picky model kept answering");
    assert!(
        seen.iter()
            .filter(|s| s.body["model"] == EASY)
            .all(|s| s.body["temperature"] == 0.7)
    );
    assert!(Path::new(&tmp.path().join("run").join("archive.sqlite")).exists());
}
