//! The client in each wire protocol against a loopback server that answers
//! with the shapes of the providers' API references: the Anthropic Messages
//! API (`x-api-key`, `anthropic-version`, the system prompt apart and marked
//! for the cache, its usage with cache reads and writes, `overloaded_error`
//! as a 529 and as a stream event), the OpenAI Responses API (`instructions`,
//! `max_output_tokens`, reasoning, typed stream events, usage with cached and
//! reasoning tokens) and Chat Completions streamed (chunks, `[DONE]`, usage,
//! a stall), plus Azure OpenAI's URL and header and a preset chosen with
//! `--provider`. Every test is bounded.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::llm_server::{LlmServer, Reply, Seen, data, event};
use galapagos::engine::model::openai::KeyHeader;
use galapagos::engine::model::resolve::build_model_with_env;
use galapagos::engine::model::{
    LanguageModel, ModelError, ModelOverrides, ModelRequest, ModelSettings, OpenAiConfig,
    OpenAiModel, Price, Protocol,
};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(30);
/// A variable every test process has: its value stands in for a key.
const KEY_VAR: &str = "PATH";
const DIFF: &str = "<<<<<<< SEARCH\nA = 1.0\n=======\nA = 2.0\n>>>>>>> REPLACE\n";

fn key() -> String {
    std::env::var(KEY_VAR).unwrap()
}

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("within the test's limit")
}

fn config(base: &str, model: &str, protocol: Protocol) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(model, base);
    c.api_key_env = KEY_VAR.to_owned();
    c.protocol = protocol;
    c.key_header = KeyHeader::for_protocol(protocol);
    c.request_timeout = Duration::from_secs(10);
    c.first_byte_timeout = Duration::from_secs(5);
    c.stall_timeout = Duration::from_secs(5);
    c.max_attempts = 3;
    c.backoff_initial = Duration::from_millis(10);
    c.backoff_max = Duration::from_millis(50);
    c
}

fn request() -> ModelRequest {
    ModelRequest {
        system: "You improve programs.\n\n# Task\nTune the constants.".into(),
        user: "# Current Program\n```python\nA = 1.0\n```\nImprove it.".into(),
        seed: 3,
    }
}

/// Answers in turn from `script`, then with `last` forever.
fn scripted(script: Vec<Reply>, last: Reply) -> impl Fn(&Seen) -> Reply + Send + Sync {
    let script = Mutex::new(std::collections::VecDeque::from(script));
    move |_| {
        script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| last.clone())
    }
}

// ----------------------------------------------------- Anthropic Messages --

fn anthropic_message(text: &str) -> Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 40, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 1800, "output_tokens": 25}
    })
}

fn anthropic_stream(text: &str) -> Vec<String> {
    let (a, b) = text.split_at(text.len() / 2);
    vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 40, "cache_creation_input_tokens": 1800,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", &json!({"type": "ping"})),
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": a}}),
        ),
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": b}}),
        ),
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            &json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 25}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

#[tokio::test]
async fn anthropic_messages_whole_and_streamed() {
    bounded(async {
        let server = LlmServer::start(|s: &Seen| {
            if s.body["stream"] == json!(true) {
                Reply::events(anthropic_stream(DIFF))
            } else {
                Reply::json(200, &anthropic_message(DIFF))
            }
        });
        let mut c = config(
            &server.base("/v1"),
            "claude-sonnet-4-5",
            Protocol::AnthropicMessages,
        );
        c.temperature = Some(0.6);
        c.top_p = Some(0.9);
        // Claude Sonnet's prices: $3 input, $0.30 cache read, $3.75 cache write, $15 output.
        c.price = Some(Price::new(3.0, 15.0).with_cache(0.3, 3.75));
        let m = OpenAiModel::new(c.clone(), 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        let u = r.usage.unwrap();
        assert_eq!(
            (
                u.prompt_tokens,
                u.cached_tokens,
                u.cache_write_tokens,
                u.completion_tokens
            ),
            (1840, 1800, 0, 25)
        );
        let want = (40.0 * 3.0 + 1800.0 * 0.3 + 25.0 * 15.0) / 1e6;
        assert!((u.cost_usd.unwrap() - want).abs() < 1e-12, "{u:?}");

        c.stream = true;
        let m = OpenAiModel::new(c, 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        let u = r.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.cache_write_tokens, u.completion_tokens),
            (1840, 1800, 25)
        );
        let want = (40.0 * 3.0 + 1800.0 * 3.75 + 25.0 * 15.0) / 1e6;
        assert!((u.cost_usd.unwrap() - want).abs() < 1e-12, "{u:?}");

        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        for (s, stream) in seen.iter().zip([false, true]) {
            assert_eq!(s.target, "/v1/messages");
            assert_eq!(s.header("x-api-key"), Some(key()));
            assert_eq!(s.header("anthropic-version").as_deref(), Some("2023-06-01"));
            assert_eq!(s.header("authorization"), None);
            let b = &s.body;
            assert_eq!(b["model"], "claude-sonnet-4-5");
            // The system prompt apart, as a block marked for the cache.
            assert_eq!(b["system"][0]["type"], "text");
            assert_eq!(b["system"][0]["text"], request().system);
            assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
            assert_eq!(
                b["messages"],
                json!([{"role": "user", "content": request().user}])
            );
            assert_eq!(b["max_tokens"], 8192);
            // Not both temperature and top_p.
            assert_eq!(b["temperature"], 0.6);
            assert!(b.get("top_p").is_none(), "{b}");
            assert_eq!(b.get("stream").is_some(), stream);
        }
    })
    .await;
}

#[tokio::test]
async fn anthropic_overloaded_is_retried_as_a_529_and_as_a_stream_event() {
    bounded(async {
        let overloaded = json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"});
        let midway = vec![
            anthropic_stream(DIFF)[0].clone(),
            event("error", &overloaded),
        ];
        let server = LlmServer::start(scripted(
            vec![Reply::json(529, &overloaded), Reply::events(midway)],
            Reply::events(anthropic_stream(DIFF)),
        ));
        let mut c = config(
            &server.base("/v1"),
            "claude-sonnet-4-5",
            Protocol::AnthropicMessages,
        );
        c.stream = true;
        let m = OpenAiModel::new(c, 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        assert_eq!(server.seen().len(), 3);
        let notices = m.take_notices();
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(
            notices[0].contains("HTTP 529") && notices[0].contains("overloaded_error"),
            "{notices:?}"
        );
        assert!(
            notices[1].contains("Overloaded (overloaded_error)"),
            "{notices:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn anthropic_error_bodies_are_named() {
    bounded(async {
        let server = LlmServer::start(|s: &Seen| match s.body["model"].as_str() {
            Some("bad-key") => Reply::json(401, &json!({"type": "error",
                "error": {"type": "authentication_error", "message": "invalid x-api-key"}})),
            Some("claude-nope") => Reply::json(404, &json!({"type": "error",
                "error": {"type": "not_found_error", "message": "model: claude-nope"}})),
            _ => Reply::json(400, &json!({"type": "error",
                "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}})),
        });
        let base = server.base("/v1");
        let complete = |model: &str| {
            let m = OpenAiModel::new(config(&base, model, Protocol::AnthropicMessages), 1).unwrap();
            async move { m.complete(&request()).await }
        };
        match complete("bad-key").await {
            Err(ModelError::Fatal { message }) => {
                assert!(message.contains("HTTP 401") && message.contains(KEY_VAR), "{message}");
                assert!(!message.contains(&key()));
            }
            other => panic!("{other:?}"),
        }
        match complete("claude-nope").await {
            Err(ModelError::Fatal { message }) => {
                assert!(message.contains("does not know model `claude-nope`"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        match complete("claude-sonnet-4-5").await {
            Err(ModelError::Failed { message, raw }) => {
                assert!(message.contains("HTTP 400") && message.contains("prompt is too long"), "{message}");
                assert!(raw.unwrap().contains("invalid_request_error"));
            }
            other => panic!("{other:?}"),
        }
        // None of them was retried.
        assert_eq!(server.seen().len(), 3);
    })
    .await;
}

// ------------------------------------------------------- Responses API --

fn response_object(text: &str) -> Value {
    json!({
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "error": null,
        "incomplete_details": null,
        "model": "o4-mini-2025-04-16",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": text, "annotations": []}]}
        ],
        "usage": {"input_tokens": 2048, "input_tokens_details": {"cached_tokens": 1536},
                  "output_tokens": 600, "output_tokens_details": {"reasoning_tokens": 448},
                  "total_tokens": 2648}
    })
}

fn responses_stream(text: &str, complete: bool) -> Vec<String> {
    let mut out = vec![
        event(
            "response.created",
            &json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        ),
        event(
            "response.in_progress",
            &json!({"type": "response.in_progress", "sequence_number": 1,
            "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        ),
        event(
            "response.output_item.added",
            &json!({"type": "response.output_item.added",
            "sequence_number": 2, "output_index": 1, "item": {"type": "message", "id": "msg_1",
            "status": "in_progress", "role": "assistant", "content": []}}),
        ),
    ];
    for (i, piece) in text.split_inclusive('\n').enumerate() {
        out.push(event(
            "response.output_text.delta",
            &json!({"type": "response.output_text.delta",
            "sequence_number": 3 + i, "item_id": "msg_1", "output_index": 1, "content_index": 0,
            "delta": piece}),
        ));
    }
    if complete {
        out.push(event("response.output_text.done", &json!({"type": "response.output_text.done",
            "sequence_number": 90, "item_id": "msg_1", "output_index": 1, "content_index": 0, "text": text})));
        out.push(event(
            "response.completed",
            &json!({"type": "response.completed",
            "sequence_number": 99, "response": response_object(text)}),
        ));
    }
    out
}

#[tokio::test]
async fn responses_api_whole_streamed_and_cut_streams_retried() {
    bounded(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let n = Arc::clone(&calls);
        let server = LlmServer::start(move |s: &Seen| {
            let i = n.fetch_add(1, Ordering::SeqCst);
            if s.body["stream"] != json!(true) {
                Reply::json(200, &response_object(DIFF))
            } else if i == 1 {
                // The connection closes before response.completed.
                Reply::events(responses_stream(DIFF, false))
            } else {
                Reply::events(responses_stream(DIFF, true))
            }
        });
        let mut c = config(&server.base("/v1"), "o4-mini", Protocol::Responses);
        c.temperature = Some(0.7);
        c.max_tokens = Some(4000);
        c.reasoning_effort = Some("low".into());
        c.price = Some(Price::new(1.1, 4.4).with_cache(0.275, 1.1));
        let m = OpenAiModel::new(c.clone(), 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        let u = r.usage.unwrap();
        assert_eq!(
            (
                u.prompt_tokens,
                u.cached_tokens,
                u.completion_tokens,
                u.reasoning_tokens
            ),
            (2048, 1536, 600, 448)
        );
        // Reasoning tokens are output tokens: priced at the output rate.
        let want = (512.0 * 1.1 + 1536.0 * 0.275 + 600.0 * 4.4) / 1e6;
        assert!((u.cost_usd.unwrap() - want).abs() < 1e-12, "{u:?}");

        c.stream = true;
        let m = OpenAiModel::new(c, 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        assert_eq!(r.usage.unwrap().reasoning_tokens, 448);
        let notices = m.take_notices();
        assert!(
            notices.len() == 1 && notices[0].contains("stream ended before its final event"),
            "{notices:?}"
        );

        let seen = server.seen();
        assert_eq!(seen.len(), 3);
        for s in &seen {
            assert_eq!(s.target, "/v1/responses");
            assert_eq!(s.header("authorization"), Some(format!("Bearer {}", key())));
            let b = &s.body;
            assert_eq!(b["instructions"], request().system);
            assert_eq!(
                b["input"],
                json!([{"role": "user", "content": request().user}])
            );
            assert_eq!(b["max_output_tokens"], 4000);
            assert_eq!(b["reasoning"], json!({"effort": "low"}));
            assert_eq!(b["store"], false);
            // A reasoning model: no temperature, whatever the settings say.
            assert!(b.get("temperature").is_none(), "{b}");
        }
    })
    .await;
}

#[tokio::test]
async fn responses_rate_limit_and_failed_response() {
    bounded(async {
        let limited = json!({"error": {"message": "Rate limit reached for o4-mini in organization org-1 on requests per min (RPM): Limit 3, Used 3, Requested 1.",
            "type": "requests", "param": null, "code": "rate_limit_exceeded"}});
        let failed = event("response.failed", &json!({"type": "response.failed", "sequence_number": 5,
            "response": {"id": "resp_1", "object": "response", "status": "failed",
                "error": {"code": "server_error", "message": "The model produced invalid content."},
                "output": [], "usage": null}}));
        let server = LlmServer::start(scripted(
            vec![
                Reply::with(429, &[("retry-after-ms", "30")], &limited.to_string()),
                Reply::events(vec![failed]),
            ],
            Reply::events(responses_stream(DIFF, true)),
        ));
        let mut c = config(&server.base("/v1"), "gpt-4.1", Protocol::Responses);
        c.stream = true;
        let m = OpenAiModel::new(c, 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        let notices = m.take_notices();
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(notices[0].contains("HTTP 429") && notices[0].contains("retrying in 0.0 s"), "{notices:?}");
        assert!(notices[1].contains("The model produced invalid content"), "{notices:?}");
    })
    .await;
}

// --------------------------------------------------- Chat Completions --

fn chunk(delta: Value, finish: Value) -> String {
    data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string(),
    )
}

fn chat_stream(text: &str) -> Vec<String> {
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in text.split_inclusive('\n') {
        out.push(chunk(json!({"content": piece}), Value::Null));
    }
    out.push(chunk(json!({}), json!("stop")));
    out.push(data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
                  "prompt_tokens_details": {"cached_tokens": 1024},
                  "completion_tokens_details": {"reasoning_tokens": 0}}})
        .to_string(),
    ));
    out.push(data("[DONE]"));
    out
}

#[tokio::test]
async fn chat_completions_streamed_with_usage_and_a_stall_retried() {
    bounded(async {
        let stalled = Reply::Events {
            events: chat_stream(DIFF)[..2].to_vec(),
            gap: Duration::from_millis(5),
            hang: true,
        };
        let server = LlmServer::start(scripted(vec![stalled], Reply::events(chat_stream(DIFF))));
        let mut c = config(&server.base("/v1"), "gpt-4.1", Protocol::ChatCompletions);
        c.stream = true;
        c.stall_timeout = Duration::from_millis(400);
        c.price = Some(Price::new(2.0, 8.0).with_cache(0.5, 2.0));
        let m = OpenAiModel::new(c, 4).unwrap();
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        let u = r.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.cached_tokens, u.completion_tokens),
            (1200, 1024, 80)
        );
        let want = (176.0 * 2.0 + 1024.0 * 0.5 + 80.0 * 8.0) / 1e6;
        assert!((u.cost_usd.unwrap() - want).abs() < 1e-12);
        let notices = m.take_notices();
        assert!(
            notices.len() == 1 && notices[0].contains("stalled"),
            "{notices:?}"
        );
        for s in server.seen() {
            assert_eq!(s.target, "/v1/chat/completions");
            assert_eq!(s.body["stream"], true);
            assert_eq!(s.body["stream_options"], json!({"include_usage": true}));
            assert_eq!(
                s.body["messages"][0],
                json!({"role": "system", "content": request().system})
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_silent_server_costs_the_first_byte_limit_streamed_too() {
    bounded(async {
        let server = LlmServer::start(|_: &Seen| Reply::Hang);
        let mut c = config(&server.base("/v1"), "gpt-4.1", Protocol::ChatCompletions);
        c.stream = true;
        c.first_byte_timeout = Duration::from_millis(300);
        c.max_attempts = 2;
        let m = OpenAiModel::new(c, 4).unwrap();
        let started = std::time::Instant::now();
        match m.complete(&request()).await {
            Err(ModelError::Failed { message, .. }) => {
                assert!(message.contains("first-byte timeout"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(server.seen().len(), 2);
    })
    .await;
}

// ----------------------------------------- Azure, headers and presets --

#[tokio::test]
async fn azure_deployment_url_api_key_header_and_extra_headers() {
    bounded(async {
        let server = LlmServer::start(|_: &Seen| {
            Reply::json(
                200,
                &json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": DIFF}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
            )
        });
        let mut c = config(
            &server.base("/openai/deployments/{deployment}"),
            "my-gpt-deploy",
            Protocol::ChatCompletions,
        );
        c.key_header = KeyHeader::ApiKey;
        c.api_version = Some("2024-10-21".into());
        c.headers = vec![("X-Title".into(), "Galapagos Studio".into())];
        let m = OpenAiModel::new(c, 1).unwrap();
        m.complete(&request()).await.unwrap();
        let s = &server.seen()[0];
        assert_eq!(
            s.target,
            "/openai/deployments/my-gpt-deploy/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(s.header("api-key"), Some(key()));
        assert_eq!(s.header("authorization"), None);
        assert_eq!(s.header("x-title").as_deref(), Some("Galapagos Studio"));
    })
    .await;
}

#[tokio::test]
async fn a_provider_preset_picks_protocol_headers_and_key_variable() {
    bounded(async {
        let server = LlmServer::start(|_: &Seen| Reply::json(200, &anthropic_message(DIFF)));
        let overrides = ModelOverrides {
            provider: Some("anthropic".into()),
            api_base: Some(server.base("/v1")),
            model: None,
            api_key_env: Some(KEY_VAR.into()),
            in_flight: None,
        };
        let env = |k: &str| std::env::var(k).ok();
        let (m, desc) = build_model_with_env(
            None,
            &overrides,
            &ModelSettings::default(),
            galapagos::engine::model::default_model(),
            &env,
        )
        .unwrap();
        assert!(
            desc.contains("claude-sonnet-4-5") && desc.contains("anthropic_messages"),
            "{desc}"
        );
        assert!(desc.contains("--provider"), "{desc}");
        let r = m.complete(&request()).await.unwrap();
        assert_eq!(r.text, DIFF);
        let s = &server.seen()[0];
        assert_eq!(s.target, "/v1/messages");
        assert_eq!(s.header("x-api-key"), Some(key()));

        // An unknown preset is refused with the list.
        let bad = ModelOverrides {
            provider: Some("acme".into()),
            ..ModelOverrides::default()
        };
        let err = build_model_with_env(
            None,
            &bad,
            &ModelSettings::default(),
            galapagos::engine::model::default_model(),
            &env,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("unknown provider `acme`") && err.contains("ollama"),
            "{err}"
        );
    })
    .await;
}
