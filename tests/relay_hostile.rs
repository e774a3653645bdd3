//! The model relay against an agent that tries to get past its caps and an
//! endpoint that misbehaves: requests in flight at once against a cap, a
//! model other than the run's, replies too large to hold, streams that do
//! not report usage, requests cut off when the proposal ends, deployment
//! names that walk the endpoint's path, floods of refused or unfinished
//! requests, and a key echoed in pieces or in JSON's escapes. Each test
//! covers its class across the three protocols, not only one request.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::scripted_upstream::{Received, ScriptedUpstream, Turn, Usage};
use futures::StreamExt as _;
use galapagos::engine::meter::{RunBudget, RunMeter};
use galapagos::engine::model::openai::KeyHeader;
use galapagos::engine::model::pricing::Price;
use galapagos::engine::model::relay::{
    Relay, RelaySession, RelayUpstream, SessionCaps, SessionLimits, UpstreamEndpoint,
};
use galapagos::engine::model::url::ApiBase;
use galapagos::engine::model::wire::{ApiError, Protocol};
use galapagos::engine::redact::Redactor;
use serde_json::{Value, json};

const KEY_VAR: &str = "RELAY_HOSTILE_KEY";
/// The real key: with a `/` (JSON may write it `\/`) and a `+`.
const KEY: &str = "sk-hostile/real+key-0123456789abcdef";
/// The run's model, priced; and a second model of the run, unpriced.
const MODEL: &str = "m-1";
const FREE: &str = "m-free";

fn price() -> Price {
    Price::new(3.0, 15.0)
}

fn upstream_at(base: &str) -> RelayUpstream {
    let mut endpoint = UpstreamEndpoint::new(base, &Protocol::ALL, KEY_VAR);
    endpoint.key_header = KeyHeader::Bearer;
    let mut up = RelayUpstream {
        endpoints: vec![endpoint],
        models: vec![MODEL.to_owned(), FREE.to_owned()],
        ..RelayUpstream::default()
    };
    up.prices.insert(MODEL, price());
    up
}

async fn relay_for(upstream: RelayUpstream, dir: &std::path::Path) -> Relay {
    let redactor = Arc::new(Redactor::new([(format!("${KEY_VAR}"), KEY.to_owned())]));
    Relay::start_with_env(upstream, redactor, dir, &|name| {
        (name == KEY_VAR).then(|| KEY.to_owned())
    })
    .await
    .unwrap()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

/// The three protocols, and how each names its output limit.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Speaks {
    Chat,
    Responses,
    Anthropic,
}

const ALL: [Speaks; 3] = [Speaks::Chat, Speaks::Responses, Speaks::Anthropic];

impl Speaks {
    fn path(self) -> &'static str {
        match self {
            Speaks::Chat => "/v1/chat/completions",
            Speaks::Responses => "/v1/responses",
            Speaks::Anthropic => "/v1/messages",
        }
    }

    /// A request for `model`; `limit` is (key, value) of its output limit.
    fn body(self, model: &str, stream: bool, limit: Option<(&str, u64)>) -> Value {
        let mut v = match self {
            Speaks::Chat => json!({"model": model, "stream": stream,
                "messages": [{"role": "user", "content": "Fix main.py"}]}),
            Speaks::Responses => json!({"model": model, "stream": stream, "input": "Fix main.py"}),
            Speaks::Anthropic => json!({"model": model, "stream": stream,
                "messages": [{"role": "user", "content": "Fix main.py"}]}),
        };
        if let Some((k, n)) = limit {
            v[k] = json!(n);
        }
        v
    }

    /// The key each protocol's SDK sets by default.
    fn limit_key(self) -> &'static str {
        match self {
            Speaks::Chat | Speaks::Anthropic => "max_tokens",
            Speaks::Responses => "max_output_tokens",
        }
    }

    fn request(self, client: &reqwest::Client, base: &str, token: &str) -> reqwest::RequestBuilder {
        let r = client
            .post(format!("{base}{}", self.path()))
            .header("content-type", "application/json");
        match self {
            Speaks::Anthropic => r
                .header("x-api-key", token)
                .header("anthropic-version", "2023-06-01"),
            _ => r.bearer_auth(token),
        }
    }
}

async fn read(r: reqwest::RequestBuilder) -> (u16, String) {
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// The output limit a request set (whichever key), if any.
fn limit_of(v: &Value) -> Option<u64> {
    ["max_completion_tokens", "max_tokens", "max_output_tokens"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_u64))
}

/// What a model that honours its output limit spends: `prompt` tokens in,
/// the request's limit out (`otherwise` when it names none), times `n`.
fn honest(received: &Received, prompt: u64, otherwise: u64) -> Usage {
    let v = received.json();
    let n = v.get("n").and_then(Value::as_u64).unwrap_or(1);
    Usage {
        prompt,
        completion: limit_of(&v).unwrap_or(otherwise).min(otherwise) * n,
        cached: 0,
    }
}

/// Holds each reply until `all` requests have come (or `bound` passed): on
/// an endpoint like this every request is in flight at once.
fn held_until(count: Arc<AtomicUsize>, all: usize, bound: Duration) {
    count.fetch_add(1, Ordering::SeqCst);
    let start = Instant::now();
    while count.load(Ordering::SeqCst) < all && start.elapsed() < bound {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Fires `n` requests of `speaks` with `body` at once; the statuses.
async fn burst(relay: &Relay, token: &str, speaks: Speaks, body: &Value, n: usize) -> Vec<u16> {
    let c = client();
    futures::stream::iter(0..n)
        .map(|_| {
            let r = speaks
                .request(&c, &relay.base_url(), token)
                .body(body.to_string());
            async move { read(r).await.0 }
        })
        .buffer_unordered(n)
        .collect()
        .await
}

// 1. Requests in flight at once spend no more than the cap and one reply.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_at_once_cannot_spend_past_the_proposals_cap() {
    const N: usize = 100;
    const PROMPT: u64 = 100;
    const OUT: u64 = 500;
    let count = Arc::new(AtomicUsize::new(0));
    let held = Arc::clone(&count);
    let server = ScriptedUpstream::with(Arc::new(move |req: &Received, _| {
        held_until(Arc::clone(&held), N, Duration::from_secs(3));
        Turn::Reply {
            text: "edit".into(),
            tool_calls: Vec::new(),
            usage: honest(req, PROMPT, OUT),
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let one_reply_cost = price().cost(PROMPT, OUT);
    type Case = (Speaks, Option<(&'static str, u64)>, SessionCaps);
    let mut cases: Vec<Case> = Vec::new();
    for speaks in ALL {
        // Each with its own limit, one larger than the cap, and none.
        for limit in [
            Some((speaks.limit_key(), 400)),
            Some((speaks.limit_key(), 5000)),
            None,
        ] {
            if speaks == Speaks::Anthropic && limit.is_none() {
                continue; // Anthropic requires max_tokens.
            }
            cases.push((
                speaks,
                limit,
                SessionCaps {
                    max_tokens: Some(1000),
                    ..SessionCaps::default()
                },
            ));
        }
        cases.push((
            speaks,
            Some((speaks.limit_key(), OUT)),
            SessionCaps {
                max_cost_usd: Some(0.02),
                ..SessionCaps::default()
            },
        ));
    }
    // Chat Completions' other limit, and several choices per request.
    cases.push((
        Speaks::Chat,
        Some(("max_completion_tokens", 300)),
        SessionCaps {
            max_tokens: Some(1000),
            ..SessionCaps::default()
        },
    ));
    for (speaks, limit, caps) in cases {
        count.store(0, Ordering::SeqCst);
        let mut body = speaks.body(MODEL, false, limit);
        let one_reply = limit.map_or(OUT, |(_, n)| n.min(OUT)) + PROMPT;
        let (max_tokens, max_cost) = (caps.max_tokens, caps.max_cost_usd);
        let session = relay.session(caps);
        let statuses = burst(&relay, session.token(), speaks, &body, N).await;
        let used = session.usage();
        let (steps, _) = session.finish().await;
        assert_eq!(steps.len(), N, "{speaks:?} {limit:?}");
        assert!(
            statuses.contains(&200),
            "{speaks:?} {limit:?}: {statuses:?}"
        );
        if let Some(cap) = max_tokens {
            assert!(
                used.total_tokens() <= cap + one_reply,
                "{speaks:?} {limit:?}: {} tokens spent against a cap of {cap} ({} requests forwarded)",
                used.total_tokens(),
                statuses.iter().filter(|s| **s == 200).count()
            );
        }
        if let Some(cap) = max_cost {
            let spent = used.cost_usd.unwrap_or(0.0);
            assert!(
                spent <= cap + one_reply_cost + 1e-12,
                "{speaks:?} {limit:?}: ${spent} spent against a cap of ${cap}"
            );
        }
        // Several choices per request multiply what one may spend.
        if speaks == Speaks::Chat && limit.is_some_and(|(k, _)| k == "max_completion_tokens") {
            body["n"] = json!(8);
            count.store(0, Ordering::SeqCst);
            let session = relay.session(SessionCaps {
                max_tokens: Some(1000),
                ..SessionCaps::default()
            });
            burst(&relay, session.token(), speaks, &body, N).await;
            let used = session.usage().total_tokens();
            assert!(used <= 1000 + 8 * 300 + PROMPT, "n = 8: {used} tokens");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_at_once_cannot_spend_past_the_runs_budget() {
    const N: usize = 60;
    let count = Arc::new(AtomicUsize::new(0));
    let held = Arc::clone(&count);
    let server = ScriptedUpstream::with(Arc::new(move |req: &Received, _| {
        held_until(Arc::clone(&held), 2 * N, Duration::from_secs(3));
        Turn::Reply {
            text: "edit".into(),
            tool_calls: Vec::new(),
            usage: honest(req, 100, 500),
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let meter = Arc::new(RunMeter::new(RunBudget::new(Some(2000), None, None)));
    let caps = || SessionCaps {
        run: Some(Arc::clone(&meter)),
        ..SessionCaps::default()
    };
    let (a, b) = (relay.session(caps()), relay.session(caps()));
    let body = Speaks::Chat.body(MODEL, false, Some(("max_tokens", 500)));
    let (sa, sb) = tokio::join!(
        burst(&relay, a.token(), Speaks::Chat, &body, N),
        burst(&relay, b.token(), Speaks::Chat, &body, N)
    );
    let spent = meter.spent().total_tokens();
    // At most one reply over, for each proposal.
    assert!(
        spent <= 2000 + 2 * 600,
        "{spent} tokens spent against a run budget of 2000 ({} forwarded)",
        sa.iter().chain(&sb).filter(|s| **s == 200).count()
    );
    a.finish().await;
    b.finish().await;
}

// 2. Only the run's models pass; an unpriced one not under a cost cap.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_runs_models_pass_and_an_unpriced_one_not_under_a_cost_cap() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1000, 1000)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let c = client();
    let cost_capped = || SessionCaps {
        max_cost_usd: Some(0.02),
        ..SessionCaps::default()
    };
    for speaks in ALL {
        let session = relay.session(cost_capped());
        for (i, model) in ["gpt-other", "unpriced-model", "m-1 ", "M-1", "m-1/../m-2"]
            .iter()
            .cycle()
            .take(20)
            .enumerate()
        {
            let body = speaks.body(model, i % 2 == 0, Some((speaks.limit_key(), 100)));
            let (status, text) = read(
                speaks
                    .request(&c, &relay.base_url(), session.token())
                    .body(body.to_string()),
            )
            .await;
            assert!(status >= 400, "{speaks:?} {model}: {status} {text}");
            let e = ApiError::parse(&text).unwrap_or_else(|| panic!("{text}"));
            assert!(
                e.message.contains(model.trim()) && e.message.contains(MODEL),
                "{speaks:?}: the refusal names the model and the run's: {text}"
            );
        }
        // Without a model, or with one that is not a string.
        for body in [json!({"messages": []}), json!({"model": 7, "input": "x"})] {
            let (status, text) = read(
                speaks
                    .request(&c, &relay.base_url(), session.token())
                    .body(body.to_string()),
            )
            .await;
            assert!(status >= 400, "{speaks:?} {body}: {status} {text}");
        }
        // The run's own unpriced model, under a cost cap: refused too.
        let body = speaks.body(FREE, false, Some((speaks.limit_key(), 100)));
        let (status, text) = read(
            speaks
                .request(&c, &relay.base_url(), session.token())
                .body(body.to_string()),
        )
        .await;
        assert!(status >= 400, "{speaks:?}: {status} {text}");
        assert!(text.contains("price"), "{text}");
        session.finish().await;
    }
    assert_eq!(server.model_requests(), 0, "none was forwarded");
    // The run's cost budget is a cost cap too.
    let meter = Arc::new(RunMeter::new(RunBudget::new(None, Some(1.0), None)));
    let session = relay.session(SessionCaps {
        run: Some(meter),
        ..SessionCaps::default()
    });
    let body = Speaks::Chat.body(FREE, false, Some(("max_tokens", 100)));
    let (status, _) = read(
        Speaks::Chat
            .request(&c, &relay.base_url(), session.token())
            .body(body.to_string()),
    )
    .await;
    assert!(status >= 400);
    assert_eq!(server.model_requests(), 0);
    // Under a token cap alone the unpriced model of the run is counted.
    let session = relay.session(SessionCaps {
        max_tokens: Some(100_000),
        ..SessionCaps::default()
    });
    let (status, text) = read(
        Speaks::Chat
            .request(&c, &relay.base_url(), session.token())
            .body(body.to_string()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(session.usage().total_tokens(), 2000);
}

// 3. Usage is read however large the reply; unreadable usage is the rest.

/// `n` bytes of log-probabilities: what makes a reply large.
fn logprobs(n: usize) -> Value {
    let one = json!({"token": "x", "logprob": -0.25, "bytes": [120], "top_logprobs": []});
    let each = one.to_string().len() + 1;
    Value::Array(vec![one; n / each + 1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_read_however_large_the_reply() {
    const BIG: usize = 70 << 20;
    let usage =
        json!({"prompt_tokens": 60_000, "completion_tokens": 42_000, "total_tokens": 102_000});
    let whole_chat = json!({"id": "c", "object": "chat.completion", "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
            "logprobs": {"content": logprobs(BIG)}, "finish_reason": "stop"}],
        "usage": usage})
    .to_string();
    let chunk = |choices: Value, usage: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "model": MODEL,
                "choices": choices, "usage": usage})
        )
    };
    let mut chat_stream = String::new();
    let piece = chunk(
        json!([{"index": 0, "delta": {"content": "x"}, "logprobs": {"content": logprobs(1 << 20)}}]),
        Value::Null,
    );
    while chat_stream.len() < BIG {
        chat_stream.push_str(&piece);
    }
    chat_stream.push_str(&chunk(json!([]), usage.clone()));
    chat_stream.push_str("data: [DONE]\n\n");
    // Anthropic: the input in message_start, the output at the end.
    let mut anthropic_stream = format!(
        "event: message_start\ndata: {}\n\n",
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
            "model": MODEL, "content": [], "usage": {"input_tokens": 60_000, "output_tokens": 1}}})
    );
    let delta = format!(
        "event: content_block_delta\ndata: {}\n\n",
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "y".repeat(1 << 20)}})
    );
    while anthropic_stream.len() < BIG {
        anthropic_stream.push_str(&delta);
    }
    anthropic_stream.push_str(&format!(
        "event: message_delta\ndata: {}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 42_000}})
    ));
    // The Responses API: one huge completed event.
    let responses_stream = format!(
        "event: response.completed\ndata: {}\n\n",
        json!({"type": "response.completed", "response": {"id": "r", "status": "completed",
            "output": [{"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "z".repeat(BIG)}]}],
            "usage": {"input_tokens": 60_000, "output_tokens": 42_000, "total_tokens": 102_000}}})
    );
    let replies = Arc::new(vec![
        (Speaks::Chat, false, "application/json", whole_chat),
        (Speaks::Chat, true, "text/event-stream", chat_stream),
        (
            Speaks::Anthropic,
            true,
            "text/event-stream",
            anthropic_stream,
        ),
        (
            Speaks::Responses,
            true,
            "text/event-stream",
            responses_stream,
        ),
    ]);
    let script = Arc::clone(&replies);
    let server = ScriptedUpstream::with(Arc::new(move |_, n| {
        let (_, _, content_type, body) = &script[n.min(script.len() - 1)];
        Turn::Raw {
            status: 200,
            content_type: (*content_type).to_owned(),
            body: body.clone(),
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let c = client();
    for (speaks, stream, _, body) in replies.iter() {
        let session = relay.session(SessionCaps::default());
        let request = speaks.body(MODEL, *stream, Some((speaks.limit_key(), 50_000)));
        let (status, got) = read(
            speaks
                .request(&c, &relay.base_url(), session.token())
                .body(request.to_string()),
        )
        .await;
        assert_eq!(status, 200, "{speaks:?} stream={stream}");
        assert_eq!(
            got.len(),
            body.len(),
            "{speaks:?}: the whole reply was passed on"
        );
        let used = session.usage();
        assert_eq!(
            (used.prompt_tokens, used.completion_tokens),
            (60_000, 42_000),
            "{speaks:?} stream={stream}: the usage of a reply of {} MiB",
            body.len() >> 20
        );
        session.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_whose_usage_cannot_be_read_counts_as_the_rest_of_the_cap() {
    let server = ScriptedUpstream::with(Arc::new(|req: &Received, _| {
        match req.json()["messages"][0]["content"].as_str().unwrap_or("") {
            // A whole reply with no usage.
            "none" => Turn::Raw {
                status: 200,
                content_type: "application/json".into(),
                body: json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]})
                    .to_string(),
            },
            // A stream that breaks off before its usage.
            _ => Turn::CutOff {
                text: "a long answer that never arrives whole".into(),
                usage: Usage {
                    prompt: 10,
                    completion: 10,
                    cached: 0,
                },
                bytes: 120,
            },
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    for (content, stream) in [("none", false), ("cut", true), ("cut", false)] {
        let session = relay.session(SessionCaps {
            max_tokens: Some(10_000),
            ..SessionCaps::default()
        });
        let body = json!({"model": MODEL, "stream": stream, "max_tokens": 100,
            "messages": [{"role": "user", "content": content}]});
        let (_, text) = read(
            Speaks::Chat
                .request(&client(), &relay.base_url(), session.token())
                .body(body.to_string()),
        )
        .await;
        let (steps, used) = session.finish().await;
        assert_eq!(
            used.total_tokens(),
            10_000,
            "{content} stream={stream}: {text} {steps:?}"
        );
    }
}

// 4. Any stream_options that is not an object asks for usage all the same.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_stream_options_that_is_not_an_object_is_replaced_by_one_that_asks_for_usage() {
    let server = ScriptedUpstream::start(vec![Turn::text("streamed", 40, 2)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let options = [
        Value::Null,
        json!("include_usage"),
        json!([true]),
        json!(1),
        json!(false),
        json!({"include_usage": false}),
        json!({"include_usage": "true"}),
        json!({}),
    ];
    for (i, o) in options.iter().enumerate() {
        let session = relay.session(SessionCaps::default());
        let body = json!({"model": MODEL, "stream": true, "stream_options": o,
            "messages": [{"role": "user", "content": "hi"}]});
        let (s, b) = read(
            Speaks::Chat
                .request(&client(), &relay.base_url(), session.token())
                .body(body.to_string()),
        )
        .await;
        assert_eq!(s, 200, "{o}: {b}");
        let sent = server.received()[i].json();
        assert_eq!(sent["stream_options"]["include_usage"], true, "{o}: {sent}");
        assert_eq!(session.usage().total_tokens(), 42, "{o}");
    }
}

// 5. A proposal ends only after its requests in flight are cut and recorded.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_session_cuts_and_records_its_requests_in_flight() {
    let first_event = format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "model": MODEL,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "thinking"}}]})
    );
    let stall = first_event.clone();
    let server = ScriptedUpstream::with(Arc::new(move |req: &Received, _| {
        if req.json()["stream"] == true {
            Turn::Stall {
                content_type: "text/event-stream".into(),
                first: stall.clone(),
            }
        } else {
            Turn::Stall {
                content_type: "application/json".into(),
                first: "{\"id\": \"c\", \"choices\": [".into(),
            }
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    for stream in [true, false] {
        let meter = Arc::new(RunMeter::new(RunBudget::new(Some(1_000_000), None, None)));
        let session = relay.session(SessionCaps {
            max_tokens: Some(50_000),
            run: Some(Arc::clone(&meter)),
            ..SessionCaps::default()
        });
        let body = Speaks::Chat.body(MODEL, stream, Some(("max_tokens", 4000)));
        let before = server.model_requests();
        let r = Speaks::Chat
            .request(&client(), &relay.base_url(), session.token())
            .body(body.to_string());
        let agent = tokio::spawn(async move {
            let Ok(mut r) = r.send().await else { return };
            while let Ok(Some(_)) = r.chunk().await {}
        });
        // Wait until the endpoint has it (bounded), then end the proposal.
        let start = Instant::now();
        while server.model_requests() == before && start.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(server.model_requests() > before);
        let ended = tokio::time::timeout(Duration::from_secs(60), session.finish())
            .await
            .expect("finish returns once its requests in flight are cut");
        let (steps, used) = ended;
        assert_eq!(
            steps.len(),
            1,
            "stream={stream}: the request in flight is kept"
        );
        let step = &steps[0];
        assert!(
            step.usage.is_some_and(|u| u.total_tokens() > 0),
            "stream={stream}: its tokens are counted: {step:?}"
        );
        assert!(used.total_tokens() > 0, "stream={stream}");
        assert_eq!(meter.spent().total_tokens(), used.total_tokens());
        tokio::time::timeout(Duration::from_secs(60), agent)
            .await
            .expect("the agent's request ends")
            .ok();
    }
}

// 6. Deployment names are plain names.

#[test]
fn deployment_names_are_plain_names() {
    let base = ApiBase::new("https://r.openai.azure.com/openai/deployments/{deployment}");
    let ok = base
        .request_url(
            "/chat/completions",
            Some("gpt4o-prod_2"),
            Some("2024-10-21"),
        )
        .unwrap();
    assert_eq!(
        ok.path(),
        "/openai/deployments/gpt4o-prod_2/chat/completions"
    );
    for bad in [
        ".", "..", "../x", "..%2f", "%2e%2e", "%2E", "a/b", "a\\b", "a..b", ".hidden", "x.", "",
        "a b", "a?b", "a#b", "ü", "a%20b", "a;b",
    ] {
        let got = base.request_url("/chat/completions", Some(bad), None);
        assert!(got.is_err(), "`{bad}` was taken: {got:?}");
        let why = got.unwrap_err().to_string();
        assert!(why.contains("deployment"), "{why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_name_never_takes_the_key_off_the_deployments_path() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let hostile = [
        ".", "..", "../..", "a/../..", "%2e%2e", ".%2e", "a%2F..", ".hidden",
    ];
    let mut up = upstream_at(&format!(
        "http://{}/openai/deployments/{{deployment}}",
        server.addr
    ));
    up.endpoints[0].api_version = Some("2024-10-21".into());
    // Even a card that named such a model may not send it off the path.
    up.models.extend(hostile.iter().map(|s| (*s).to_owned()));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(up, dir.path()).await;
    let session = relay.session(SessionCaps::default());
    for speaks in ALL {
        for name in hostile {
            let (status, text) = read(
                speaks
                    .request(&client(), &relay.base_url(), session.token())
                    .body(
                        speaks
                            .body(name, false, Some((speaks.limit_key(), 10)))
                            .to_string(),
                    ),
            )
            .await;
            assert!(status >= 400, "{speaks:?} `{name}`: {status} {text}");
        }
    }
    for r in server.received() {
        assert!(
            r.path.starts_with("/openai/deployments/") && !r.path.contains(".."),
            "a request left the deployments path: {} {}",
            r.method,
            r.path
        );
    }
    assert_eq!(server.model_requests(), 0);
}

// 7. What one proposal may hold: steps, bytes, connections, bytes in flight.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_keep_a_bounded_excerpt() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 10, 10)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session = relay.session(SessionCaps {
        max_tokens: Some(1),
        ..SessionCaps::default()
    });
    let c = client();
    let mut big = Speaks::Chat.body(MODEL, false, Some(("max_tokens", 10)));
    big["messages"][0]["content"] = json!("x".repeat(256 << 10));
    let big = big.to_string();
    let statuses: Vec<u16> = futures::stream::iter(0..600)
        .map(|_| {
            let r = Speaks::Chat
                .request(&c, &relay.base_url(), session.token())
                .body(big.clone());
            async move { read(r).await.0 }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s >= 400), "{statuses:?}");
    let (steps, _) = session.finish().await;
    let kept: usize = steps
        .iter()
        .map(|s| s.request.len() + s.response.len())
        .sum();
    assert!(
        kept <= 8 << 20,
        "{} steps keep {} MiB of refused requests",
        steps.len(),
        kept >> 20
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_and_kept_bytes_stop_at_the_sessions_limits_and_usage_is_still_counted() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 10, 10)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session = relay.session(SessionCaps {
        limits: SessionLimits {
            max_steps: 20,
            max_kept_bytes: 4096,
            ..SessionLimits::default()
        },
        ..SessionCaps::default()
    });
    let c = client();
    let body = Speaks::Chat.body(MODEL, false, Some(("max_tokens", 10)));
    for _ in 0..50 {
        let (s, _) = read(
            Speaks::Chat
                .request(&c, &relay.base_url(), session.token())
                .body(body.to_string()),
        )
        .await;
        assert_eq!(s, 200);
    }
    let (steps, used) = session.finish().await;
    assert!(steps.len() <= 20, "{} steps kept", steps.len());
    let kept: usize = steps
        .iter()
        .map(|s| s.request.len() + s.response.len())
        .sum();
    assert!(kept <= 4096 + 2048, "{kept} bytes kept");
    assert_eq!(used.total_tokens(), 50 * 20, "every reply counted");
    let on_steps: u64 = steps
        .iter()
        .filter_map(|s| s.usage.map(|u| u.total_tokens()))
        .sum();
    assert_eq!(on_steps, 1000, "the steps' usage adds up to the session's");
    assert!(
        steps
            .iter()
            .any(|s| s.note.as_deref().is_some_and(|n| n.contains("not kept"))),
        "the record says what it left out"
    );
}

/// A raw HTTP/1.1 request head to the relay for a body of `len` bytes.
fn head(token: &str, len: usize) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
}

/// The status line's code of what the relay answered on `s` (bounded).
fn status_of(s: &mut std::net::TcpStream) -> Option<u16> {
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    text.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_refused_early_with_413() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let (addr, token) = (relay.tcp_addr(), session.token().to_owned());
    let status = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(head(&token, 40 << 20).as_bytes()).unwrap();
        s.write_all(&[b' '; 1024]).unwrap();
        status_of(&mut s)
    })
    .await
    .unwrap();
    assert_eq!(status, Some(413), "a body declared at 40 MiB");
    // Chunked, with no length declared: refused once it passes the limit.
    let token = session.token().to_owned();
    let (status, sent) = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
        let mut sent = 0usize;
        while sent < 200 << 20 && s.write_all(chunk.as_bytes()).is_ok() {
            sent += 1 << 20;
        }
        (status_of(&mut s), sent)
    })
    .await
    .unwrap();
    assert_eq!(status, Some(413), "a chunked body of {} MiB", sent >> 20);
    assert!(sent < 200 << 20, "the relay read on past its limit");
    let (steps, _) = session.finish().await;
    assert!(steps.iter().all(|s| s.request.len() <= 64 << 10));
    assert_eq!(server.model_requests(), 0);
}

/// This process's resident memory, in MiB.
fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_bodies_on_many_connections_hold_a_bounded_memory() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let (addr, token) = (relay.tcp_addr(), session.token().to_owned());
    let before = rss_mib();
    // 24 connections, each sending 31 MB of a body one byte short.
    const LEN: usize = 31_000_000;
    let (held, refused) = tokio::task::spawn_blocking(move || {
        let piece = vec![b' '; 1 << 20];
        let mut open = Vec::new();
        let mut refused = 0;
        for _ in 0..24 {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_write_timeout(Some(Duration::from_secs(30))).ok();
            let mut ok = s.write_all(head(&token, LEN).as_bytes()).is_ok();
            let mut sent = 0;
            while ok && sent + piece.len() < LEN {
                ok = s.write_all(&piece).is_ok();
                sent += piece.len();
            }
            if ok {
                ok = s.write_all(&piece[..LEN - 1 - sent]).is_ok();
            }
            if !ok {
                refused += 1;
            }
            open.push(s);
        }
        (open, refused)
    })
    .await
    .unwrap();
    let grew = rss_mib().saturating_sub(before);
    assert!(
        grew <= 200,
        "24 unfinished bodies took {grew} MiB ({refused} connections refused)"
    );
    assert!(refused > 0, "some connections were refused");
    drop(held);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposals_open_requests_are_bounded() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let (addr, token) = (relay.tcp_addr(), session.token().to_owned());
    // 200 requests whose bodies never finish: past the bound, refused.
    let statuses = tokio::task::spawn_blocking(move || {
        let mut open = Vec::new();
        for _ in 0..200 {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(head(&token, 1000).as_bytes()).unwrap();
            s.write_all(b"{\"model\": ").unwrap();
            s.set_nonblocking(true).unwrap();
            open.push(s);
        }
        // Those refused answer at once; the others wait for their bodies.
        // Look until 100 have answered (or a minute passed).
        let mut statuses: Vec<Option<u16>> = vec![None; open.len()];
        let start = Instant::now();
        while statuses.iter().filter(|s| s.is_some()).count() < 100
            && start.elapsed() < Duration::from_secs(60)
        {
            for (s, status) in open.iter_mut().zip(statuses.iter_mut()) {
                let mut buf = [0u8; 256];
                if status.is_none()
                    && let Ok(n) = s.read(&mut buf)
                    && n > 0
                {
                    *status = String::from_utf8_lossy(&buf[..n])
                        .split_whitespace()
                        .nth(1)
                        .and_then(|c| c.parse::<u16>().ok());
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        statuses
    })
    .await
    .unwrap();
    let refused = statuses.iter().filter(|s| **s == Some(429)).count();
    assert!(
        refused >= 100,
        "{refused} of 200 unfinished requests refused: {statuses:?}"
    );
    session.finish().await;
}

// 8. Redaction holds across chunk boundaries and on JSON's escapes.

/// Every string of `v` (keys too), decoded; strings that are JSON
/// themselves (tool arguments) decoded again.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if let Ok(inner) = serde_json::from_str::<Value>(s)
                && !inner.is_string()
            {
                strings(&inner, out);
            }
            out.push(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings(v, out);
            }
        }
        _ => {}
    }
}

/// True when `text` (a JSON body or an event stream) holds the key in any
/// form an agent's JSON parser would give back.
fn leaks(text: &str) -> bool {
    if text.contains(KEY) {
        return true;
    }
    let mut found = Vec::new();
    let mut scan = |data: &str| {
        if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
            strings(&v, &mut found);
        }
    };
    scan(text);
    for e in galapagos::engine::model::wire::sse::events(text) {
        scan(&e.data);
    }
    found.iter().any(|s| s.contains(KEY))
}

/// `KEY` with each character `\u`-escaped where `pick` says so.
fn escaped(pick: impl Fn(usize) -> bool) -> String {
    KEY.chars()
        .enumerate()
        .map(|(i, c)| {
            if c == '/' && i % 2 == 0 {
                "\\/".to_owned()
            } else if pick(i) {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_key_never_reaches_the_agent_however_it_is_cut_or_written() {
    let all = escaped(|_| true);
    let some = escaped(|i| i % 3 == 0);
    // Upper-case hex digits.
    let upper: String = KEY
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 1 {
                format!("\\u{:04X}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    let chat_event = |content: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}}}}]}}\n\n"
        )
    };
    let usage_event = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n";
    let whole = |content: &str| {
        format!(
            "{{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"you sent {content}\"}},\"finish_reason\":\"stop\"}}],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":5}}}}"
        )
    };
    // A stream split inside the key, at every place, raw and escaped.
    let mut turns: Vec<(String, Turn)> = Vec::new();
    for form in [KEY.to_owned(), all.clone(), some.clone()] {
        let event = chat_event(&format!("key {form} end"));
        let at = event.find(&form).unwrap();
        for cut in (1..form.len()).step_by(3) {
            turns.push((
                format!("stream {form} cut at {cut}"),
                Turn::Pieces {
                    status: 200,
                    content_type: "text/event-stream".into(),
                    pieces: vec![
                        event[..at + cut].to_owned(),
                        event[at + cut..].to_owned(),
                        usage_event.to_owned(),
                    ],
                },
            ));
        }
    }
    // Three pieces, the key's middle one of its own.
    let event = chat_event(&format!("key {KEY} end"));
    let at = event.find(KEY).unwrap();
    turns.push((
        "stream in three".into(),
        Turn::Pieces {
            status: 200,
            content_type: "text/event-stream".into(),
            pieces: vec![
                event[..at + 2].to_owned(),
                event[at + 2..at + 9].to_owned(),
                event[at + 9..].to_owned(),
                usage_event.to_owned(),
            ],
        },
    ));
    // Whole replies with the key in JSON's escapes; and in a tool call's
    // arguments (JSON in a JSON string: escaped twice).
    for form in [
        all.clone(),
        some.clone(),
        upper.clone(),
        all.replace('\\', "\\\\"),
    ] {
        turns.push((
            format!("whole {form}"),
            Turn::Raw {
                status: 200,
                content_type: "application/json".into(),
                body: whole(&form),
            },
        ));
    }
    // An error reply that quotes the key, escaped.
    turns.push((
        "error".into(),
        Turn::Raw {
            status: 401,
            content_type: "application/json".into(),
            body: format!(
                "{{\"error\":{{\"message\":\"Incorrect API key provided: {all}\",\"type\":\"invalid_request_error\"}}}}"
            ),
        },
    ));
    let script: Arc<Vec<Turn>> = Arc::new(turns.iter().map(|(_, t)| t.clone()).collect());
    let server = ScriptedUpstream::with(Arc::new(move |_, n| script[n].clone()));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let c = client();
    for (what, turn) in &turns {
        let stream = matches!(turn, Turn::Pieces { .. });
        let body = Speaks::Chat.body(MODEL, stream, Some(("max_tokens", 10)));
        let (_, text) = read(
            Speaks::Chat
                .request(&c, &relay.base_url(), session.token())
                .body(body.to_string()),
        )
        .await;
        assert!(!leaks(&text), "{what}: the agent got the key: {text}");
    }
    let (steps, _) = session.finish().await;
    let json = serde_json::to_string(&steps).unwrap();
    assert!(!leaks(&json), "a step holds the key");
    for s in &steps {
        assert!(!leaks(&s.response) && !leaks(&s.request), "{s:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_echoed_in_a_reply_header_is_not_passed_on() {
    let server = ScriptedUpstream::with(Arc::new(|_, _| Turn::Raw {
        status: 200,
        content_type: format!("application/json; echo={KEY}"),
        body: json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        .to_string(),
    }));
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_at(&server.base_url()), dir.path()).await;
    let session: RelaySession = relay.session(SessionCaps::default());
    let r = Speaks::Chat
        .request(&client(), &relay.base_url(), session.token())
        .body(
            Speaks::Chat
                .body(MODEL, false, Some(("max_tokens", 10)))
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    for (name, value) in r.headers() {
        assert!(
            !String::from_utf8_lossy(value.as_bytes()).contains(KEY),
            "the key in the reply's header {name}"
        );
    }
}
