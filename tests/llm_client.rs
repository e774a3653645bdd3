//! The OpenAI-compatible client against a real HTTP server on loopback.
//!
//! The server is a small scripted HTTP/1.1 responder written on a tokio
//! `TcpListener` (no mock library): each test queues the replies it wants —
//! success, 429 + Retry-After, 500s, a hang, a stall mid-body, invalid JSON,
//! empty choices, 401/403 — and checks the reply or error the client gives.
//! Every test is bounded by `tokio::time::timeout`, so none can hang.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

use common::llm_server::{Seen, read_request};
use galapagos::engine::card::{LlmSettings, ModelSpec};
use galapagos::engine::genome::TokenUsage;
use galapagos::engine::model::resolve::build_model_with_env;
use galapagos::engine::model::{
    EndpointSettings, EnsembleMember, EnsembleModel, LanguageModel, ModelError, ModelOverrides,
    ModelReply, ModelRequest, ModelSettings, OpenAiConfig, OpenAiModel, Price,
};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Bound on every test.
const TEST_LIMIT: Duration = Duration::from_secs(20);

/// A diff as a model would answer for the diff proposer.
const DIFF_REPLY: &str =
    "Here is an improvement.\n<<<<<<< SEARCH\nreturn 0\n=======\nreturn 1\n>>>>>>> REPLACE\n";

// ---------------------------------------------------------------- server --

/// What the server does with one request.
#[derive(Clone, Debug)]
enum Action {
    /// Answer after `delay`.
    Reply {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
        delay: Duration,
    },
    /// Answer 200 with the requested model's name as the content.
    EchoModel,
    /// Read the request and never answer.
    Hang,
    /// Send the headers and the first part of the body, then go silent.
    PartialThenHang { body_start: String, full_len: usize },
}

fn ok_body(content: &str, prompt_tokens: u64, completion_tokens: u64) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
    .to_string()
}

fn reply(status: u16, body: &str) -> Action {
    Action::Reply {
        status,
        headers: Vec::new(),
        body: body.to_owned(),
        delay: Duration::ZERO,
    }
}

struct State {
    script: Mutex<VecDeque<Action>>,
    default: Action,
    seen: Mutex<Vec<Seen>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

struct Server {
    base: String,
    state: Arc<State>,
}

impl Server {
    /// Starts a server answering with `script` in order, then `default`.
    async fn start(script: Vec<Action>, default: Action) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            script: Mutex::new(script.into()),
            default,
            seen: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let st = state.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let st = st.clone();
                tokio::spawn(async move { serve(sock, st).await });
            }
        });
        Server {
            base: format!("http://{addr}/v1"),
            state,
        }
    }

    fn requests(&self) -> usize {
        self.state.seen.lock().expect("lock").len()
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().expect("lock").clone()
    }

    fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

fn response(status: u16, headers: &[(&'static str, String)], body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

async fn serve(mut sock: TcpStream, st: Arc<State>) {
    let Some(seen) = read_request(&mut sock).await else {
        return;
    };
    let model = seen.body["model"].as_str().unwrap_or("").to_owned();
    st.seen.lock().expect("lock").push(seen);
    let now = st.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    st.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let action = st
        .script
        .lock()
        .expect("lock")
        .pop_front()
        .unwrap_or_else(|| st.default.clone());
    match action {
        Action::Reply {
            status,
            headers,
            body,
            delay,
        } => {
            tokio::time::sleep(delay).await;
            st.in_flight.fetch_sub(1, Ordering::SeqCst);
            let _ = sock.write_all(&response(status, &headers, &body)).await;
        }
        Action::EchoModel => {
            st.in_flight.fetch_sub(1, Ordering::SeqCst);
            let body = ok_body(&model, 10, 1);
            let _ = sock.write_all(&response(200, &[], &body)).await;
        }
        Action::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Action::PartialThenHang {
            body_start,
            full_len,
        } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {full_len}\r\n\r\n{body_start}"
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.flush().await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
    let _ = sock.shutdown().await;
}

// --------------------------------------------------------------- helpers --

/// An environment variable that is set in any test process, used as the
/// "key" variable so no test needs to modify the environment.
const KEY_VAR: &str = "PATH";

fn key_value() -> String {
    std::env::var(KEY_VAR).expect("PATH is set")
}

/// Fast-failing settings for tests.
fn config(base: &str) -> OpenAiConfig {
    let mut c = OpenAiConfig::new("test-model", base);
    c.api_key_env = KEY_VAR.to_owned();
    c.request_timeout = Duration::from_secs(5);
    c.stall_timeout = Duration::from_secs(5);
    c.connect_timeout = Duration::from_secs(2);
    c.max_attempts = 3;
    c.backoff_initial = Duration::from_millis(20);
    c.backoff_max = Duration::from_millis(100);
    c.retry_after_cap = Duration::from_secs(3);
    c
}

fn model(c: OpenAiConfig) -> OpenAiModel {
    OpenAiModel::new(c, 8).expect("model builds")
}

fn request(seed: u64) -> ModelRequest {
    ModelRequest {
        system: "You improve programs.".into(),
        user: "Make it return 1.".into(),
        seed,
    }
}

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(TEST_LIMIT, f)
        .await
        .expect("test finished within its time limit")
}

fn failed(r: Result<ModelReply, ModelError>) -> (String, Option<String>) {
    match r {
        Err(ModelError::Failed { message, raw }) => (message, raw),
        other => panic!("expected ModelError::Failed, got {other:?}"),
    }
}

fn fatal(r: Result<ModelReply, ModelError>) -> String {
    match r {
        Err(ModelError::Fatal { message }) => message,
        other => panic!("expected ModelError::Fatal, got {other:?}"),
    }
}

// ----------------------------------------------------------------- tests --

#[tokio::test]
async fn success_returns_the_diff_usage_and_sends_the_request_right() {
    bounded(async {
        let server = Server::start(vec![], reply(200, &ok_body(DIFF_REPLY, 120, 30))).await;
        let mut c = config(&server.base);
        c.temperature = Some(0.4);
        c.top_p = Some(0.9);
        c.max_tokens = Some(512);
        let m = model(c);
        let r = m.complete(&request(7)).await.expect("success");
        assert_eq!(r.text, DIFF_REPLY);
        assert_eq!(r.model, "test-model");
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                prompt_tokens: 120,
                completion_tokens: 30,
                cost_usd: None,
                ..TokenUsage::default()
            })
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 1);
        assert!(
            seen[0]
                .head
                .starts_with("POST /v1/chat/completions HTTP/1.1"),
            "{}",
            seen[0].head
        );
        assert_eq!(
            seen[0].header("authorization"),
            Some(format!("Bearer {}", key_value()))
        );
        assert_eq!(
            seen[0].body,
            json!({
                "model": "test-model",
                "messages": [
                    {"role": "system", "content": "You improve programs."},
                    {"role": "user", "content": "Make it return 1."}
                ],
                "temperature": 0.4,
                "top_p": 0.9,
                "max_tokens": 512
            })
        );
    })
    .await;
}

#[tokio::test]
async fn rate_limit_429_honours_retry_after_then_succeeds() {
    bounded(async {
        let server = Server::start(
            vec![Action::Reply {
                status: 429,
                headers: vec![("retry-after", "1".into())],
                body: r#"{"error":{"message":"rate limited"}}"#.into(),
                delay: Duration::ZERO,
            }],
            reply(200, &ok_body(DIFF_REPLY, 5, 5)),
        )
        .await;
        let mut c = config(&server.base);
        // Backoff alone would wait far longer; Retry-After (1 s) must win.
        c.backoff_initial = Duration::from_secs(10);
        c.backoff_max = Duration::from_secs(10);
        let m = model(c);
        let t0 = Instant::now();
        let r = m
            .complete(&request(1))
            .await
            .expect("success after the 429");
        let waited = t0.elapsed();
        assert_eq!(r.text, DIFF_REPLY);
        assert_eq!(server.requests(), 2);
        assert!(
            waited >= Duration::from_millis(950) && waited < Duration::from_secs(5),
            "waited {waited:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn server_errors_are_retried_until_attempts_run_out() {
    bounded(async {
        let server = Server::start(vec![], reply(500, "upstream exploded")).await;
        let m = model(config(&server.base));
        let (message, raw) = failed(m.complete(&request(2)).await);
        assert_eq!(server.requests(), 3, "max_attempts = 3");
        assert!(message.contains("gave up after 3 attempts"), "{message}");
        assert!(message.contains("HTTP 500"), "{message}");
        assert_eq!(raw.as_deref(), Some("upstream exploded"));
    })
    .await;
}

#[tokio::test]
async fn a_500_then_success_recovers() {
    bounded(async {
        let server = Server::start(
            vec![reply(503, "busy"), reply(502, "bad gateway")],
            reply(200, &ok_body("ok text", 1, 1)),
        )
        .await;
        let m = model(config(&server.base));
        let r = m
            .complete(&request(3))
            .await
            .expect("third attempt succeeds");
        assert_eq!(r.text, "ok text");
        assert_eq!(server.requests(), 3);
        // Each retried attempt is reported once, for the run to log.
        let notices = m.take_notices();
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(
            notices[0].starts_with("test-model at http://127.0.0.1:")
                && notices[0].contains("attempt 1 of 3 failed (HTTP 503: busy); retrying in"),
            "{notices:?}"
        );
        assert!(notices[1].contains("attempt 2 of 3 failed (HTTP 502: bad gateway)"));
        assert!(m.take_notices().is_empty(), "taken once");
    })
    .await;
}

#[tokio::test]
async fn a_hanging_server_times_out_and_is_retried() {
    bounded(async {
        let server = Server::start(vec![], Action::Hang).await;
        let mut c = config(&server.base);
        c.request_timeout = Duration::from_millis(300);
        c.max_attempts = 2;
        let m = model(c);
        let t0 = Instant::now();
        let (message, _) = failed(m.complete(&request(4)).await);
        let took = t0.elapsed();
        assert!(message.contains("request timeout"), "{message}");
        assert!(message.contains("2 attempts"), "{message}");
        assert_eq!(server.requests(), 2);
        assert!(
            took >= Duration::from_millis(600) && took < Duration::from_secs(5),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_server_that_never_sends_a_header_is_cut_by_the_first_byte_timeout() {
    bounded(async {
        // Accepts, reads the request, never answers: the whole-request
        // timeout (20 s) must not be what ends each attempt.
        let server = Server::start(vec![], Action::Hang).await;
        let mut c = config(&server.base);
        c.request_timeout = Duration::from_secs(20);
        c.stall_timeout = Duration::from_secs(3);
        c.first_byte_timeout = Duration::from_millis(300);
        c.max_attempts = 2;
        let m = model(c);
        let t0 = Instant::now();
        let (message, raw) = failed(m.complete(&request(4)).await);
        let took = t0.elapsed();
        assert!(
            message.contains("no response header within the first-byte timeout of 0.3 s"),
            "{message}"
        );
        assert!(message.contains("2 attempts"), "{message}");
        assert_eq!(raw, None);
        assert_eq!(server.requests(), 2);
        assert!(
            took >= Duration::from_millis(600) && took < Duration::from_secs(3),
            "{took:?}"
        );
    })
    .await;
}

#[test]
fn the_first_byte_timeout_is_set_per_endpoint_in_the_settings() {
    let settings: galapagos::engine::model::user_settings::ModelSettings = serde_json::from_str(
        r#"{"endpoints":[{"api_base":"http://127.0.0.1:9/v1","first_byte_timeout_secs":7.5}]}"#,
    )
    .expect("settings parse");
    assert_eq!(settings.endpoints[0].first_byte_timeout_secs, 7.5);
    let default: galapagos::engine::model::user_settings::ModelSettings =
        serde_json::from_str(r#"{"endpoints":[{"api_base":"http://127.0.0.1:9/v1"}]}"#)
            .expect("settings parse");
    assert_eq!(default.endpoints[0].first_byte_timeout_secs, 120.0);
    let mut bad = settings.endpoints[0].clone();
    bad.first_byte_timeout_secs = 0.0;
    let e = bad.validate().expect_err("zero is refused").to_string();
    assert!(e.contains("first_byte_timeout_secs"), "{e}");
}

#[tokio::test]
async fn a_reply_stalling_mid_body_is_cut_by_the_stall_timeout() {
    bounded(async {
        let start = r#"{"choices":[{"message":{"content":"par"#;
        let server = Server::start(
            vec![],
            Action::PartialThenHang {
                body_start: start.into(),
                full_len: 500,
            },
        )
        .await;
        let mut c = config(&server.base);
        c.stall_timeout = Duration::from_millis(200);
        c.max_attempts = 1;
        let m = model(c);
        let (message, raw) = failed(m.complete(&request(5)).await);
        assert!(message.contains("stalled"), "{message}");
        assert!(message.contains("1 attempt:"), "{message}");
        assert_eq!(raw.as_deref(), Some(start));
    })
    .await;
}

#[tokio::test]
async fn invalid_json_is_a_failure_with_the_raw_body_and_no_retry() {
    bounded(async {
        let body = "<html>gateway says hi</html>";
        let server = Server::start(vec![], reply(200, body)).await;
        let m = model(config(&server.base));
        let (message, raw) = failed(m.complete(&request(6)).await);
        assert!(message.contains("not valid JSON"), "{message}");
        assert_eq!(raw.as_deref(), Some(body));
        assert_eq!(
            server.requests(),
            1,
            "an unusable reply is not retried by the client"
        );
    })
    .await;
}

#[tokio::test]
async fn empty_choices_and_empty_content_are_failures_with_raw() {
    bounded(async {
        let empty_choices = r#"{"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#;
        let empty_content =
            r#"{"choices":[{"message":{"role":"assistant","content":""},"finish_reason":"length"}]}"#;
        let server = Server::start(
            vec![reply(200, empty_choices), reply(200, empty_content)],
            reply(200, "{}"),
        )
        .await;
        let m = model(config(&server.base));
        let (message, raw) = failed(m.complete(&request(8)).await);
        assert!(message.contains("empty `choices`"), "{message}");
        assert_eq!(raw.as_deref(), Some(empty_choices));
        let (message, raw) = failed(m.complete(&request(9)).await);
        assert!(message.contains("empty content") && message.contains("length"), "{message}");
        assert_eq!(raw.as_deref(), Some(empty_content));
        assert_eq!(server.requests(), 2);
    })
    .await;
}

#[tokio::test]
async fn unauthorized_is_fatal_names_the_variable_and_never_the_key() {
    bounded(async {
        let key = key_value();
        // Like some hosted APIs, the server echoes the key it was given.
        let echo = json!({"error": {"message": format!("Incorrect API key provided: {key}")}});
        for status in [401u16, 403] {
            let server = Server::start(vec![], reply(status, &echo.to_string())).await;
            let m = model(config(&server.base));
            let message = fatal(m.complete(&request(10)).await);
            assert_eq!(server.requests(), 1, "auth errors are not retried");
            assert!(message.contains(&format!("HTTP {status}")), "{message}");
            assert!(message.contains("environment variable PATH"), "{message}");
            assert!(message.contains(&server.base), "{message}");
            assert!(!message.contains(&key), "the key value leaked: {message}");
        }
    })
    .await;
}

#[tokio::test]
async fn missing_key_variable_is_fatal_before_any_request() {
    bounded(async {
        let server = Server::start(vec![], reply(200, &ok_body("x", 1, 1))).await;
        let mut c = config(&server.base);
        c.api_key_env = "GALAPAGOS_TEST_KEY_THAT_IS_NEVER_SET".into();
        c.key_required = true;
        let m = model(c.clone());
        let message = fatal(m.complete(&request(11)).await);
        assert!(
            message.contains("GALAPAGOS_TEST_KEY_THAT_IS_NEVER_SET"),
            "{message}"
        );
        assert!(message.contains("not set"), "{message}");
        assert_eq!(server.requests(), 0);
        // A local server that needs no key: the request goes out without one.
        c.key_required = false;
        let m = model(c);
        let r = m.complete(&request(12)).await.expect("no key needed");
        assert_eq!(r.text, "x");
        assert_eq!(server.seen()[0].header("authorization"), None);
    })
    .await;
}

#[tokio::test]
async fn refused_connections_are_retried_then_fail() {
    bounded(async {
        // A port that was just free: nothing listens there any more.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let m = model(config(&format!("http://{addr}/v1")));
        let (message, raw) = failed(m.complete(&request(13)).await);
        assert!(message.contains("cannot connect"), "{message}");
        assert!(message.contains("3 attempts"), "{message}");
        assert_eq!(raw, None);
    })
    .await;
}

#[tokio::test]
async fn concurrency_is_limited_per_endpoint() {
    bounded(async {
        let slow = Action::Reply {
            status: 200,
            headers: Vec::new(),
            body: ok_body("slow", 1, 1),
            delay: Duration::from_millis(150),
        };
        let server = Server::start(vec![], slow).await;
        let m = Arc::new(OpenAiModel::new(config(&server.base), 2).expect("model"));
        let t0 = Instant::now();
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let m = m.clone();
                tokio::spawn(async move { m.complete(&request(i)).await })
            })
            .collect();
        for t in tasks {
            t.await.expect("task").expect("reply");
        }
        assert_eq!(server.requests(), 8);
        assert_eq!(
            server.max_in_flight(),
            2,
            "limit 2 means at most 2 at the server"
        );
        // 8 requests, 2 at a time, 150 ms each: at least 4 rounds.
        assert!(
            t0.elapsed() >= Duration::from_millis(600),
            "{:?}",
            t0.elapsed()
        );
    })
    .await;
}

/// Throughput figure (printed, not timed): 64 requests answered after a fixed
/// 200 ms with 8 in flight take about 64 / 8 × 0.2 s = 1.6 s.
#[tokio::test]
async fn throughput_64_requests_8_in_flight() {
    bounded(async {
        let server = Server::start(
            vec![],
            Action::Reply {
                status: 200,
                headers: Vec::new(),
                body: ok_body(DIFF_REPLY, 100, 20),
                delay: Duration::from_millis(200),
            },
        )
        .await;
        let m = Arc::new(OpenAiModel::new(config(&server.base), 8).expect("model"));
        let t0 = Instant::now();
        let mut total = TokenUsage::default();
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let m = m.clone();
                tokio::spawn(async move { m.complete(&request(i)).await })
            })
            .collect();
        for t in tasks {
            let r = t.await.expect("task").expect("reply");
            total.add(&r.usage.expect("usage"));
        }
        let took = t0.elapsed();
        println!(
            "throughput: 64 requests, 200 ms each, 8 in flight: {:.2} s (ideal 1.60 s)",
            took.as_secs_f64()
        );
        assert_eq!(server.requests(), 64);
        assert!(server.max_in_flight() <= 8);
        assert_eq!(total.total_tokens(), 64 * 120);
        assert!(took >= Duration::from_millis(1600), "{took:?}");
    })
    .await;
}

#[tokio::test]
async fn ensemble_is_deterministic_and_follows_weights() {
    bounded(async {
        let server = Server::start(vec![], Action::EchoModel).await;
        let member = |name: &str, weight: f64| {
            let mut c = config(&server.base);
            c.model = name.to_owned();
            EnsembleMember {
                name: name.to_owned(),
                weight,
                model: Arc::new(model(c)) as Arc<dyn LanguageModel>,
            }
        };
        let e =
            EnsembleModel::new(vec![member("big", 1.0), member("small", 3.0)]).expect("ensemble");
        let mut first = Vec::new();
        for seed in 0..200u64 {
            let r = e.complete(&request(seed)).await.expect("reply");
            // The member answered (the server echoes the requested model) and
            // the reply names it.
            assert_eq!(r.text, r.model);
            first.push(r.model);
        }
        let mut again = Vec::new();
        for seed in 0..200u64 {
            again.push(e.complete(&request(seed)).await.expect("reply").model);
        }
        assert_eq!(first, again, "same seeds pick the same members");
        let small = first.iter().filter(|m| *m == "small").count();
        let share = small as f64 / 200.0;
        assert!((share - 0.75).abs() < 0.1, "small share {share}");
        assert_eq!(server.requests(), 400);
    })
    .await;
}

#[tokio::test]
async fn usage_and_cost_accounting_through_build_model() {
    bounded(async {
        let server = Server::start(vec![], reply(200, &ok_body(DIFF_REPLY, 1000, 500))).await;
        let mut settings = ModelSettings::default();
        settings.endpoints.push(EndpointSettings {
            api_key_env: KEY_VAR.into(),
            max_attempts: 1,
            ..EndpointSettings::for_base(&server.base)
        });
        settings.prices.insert("priced", Price::new(2.0, 8.0));
        let llm = LlmSettings {
            models: vec![
                ModelSpec {
                    name: "priced".into(),
                    weight: 1.0,
                    temperature: None,
                    top_p: None,
                    max_tokens: None,
                },
                ModelSpec {
                    name: "unpriced".into(),
                    weight: 1.0,
                    temperature: Some(0.2),
                    top_p: None,
                    max_tokens: None,
                },
            ],
            ..LlmSettings::default()
        };
        let env = |k: &str| std::env::var(k).ok();
        let (m, desc) = build_model_with_env(
            Some(&llm),
            &ModelOverrides::default(),
            &settings,
            Arc::new(NeverCalled),
            &env,
        )
        .expect("model builds");
        assert!(desc.contains("ensemble of 2"), "{desc}");
        assert!(desc.contains("key from $PATH"), "{desc}");
        assert!(!desc.contains(&key_value()), "key value in the description");

        let mut run = TokenUsage::default();
        let (mut priced, mut unpriced) = (0, 0);
        for seed in 0..20u64 {
            let r = m.complete(&request(seed)).await.expect("reply");
            let u = r.usage.expect("usage");
            assert_eq!((u.prompt_tokens, u.completion_tokens), (1000, 500));
            match r.model.as_str() {
                "priced" => {
                    priced += 1;
                    // 1000 × $2/1M + 500 × $8/1M = $0.006
                    let cost = u.cost_usd.expect("priced model has a cost");
                    assert!((cost - 0.006).abs() < 1e-12, "{cost}");
                }
                "unpriced" => {
                    unpriced += 1;
                    assert_eq!(u.cost_usd, None);
                }
                other => panic!("unexpected model {other}"),
            }
            run.add(&u);
        }
        assert!(priced > 0 && unpriced > 0, "{priced} / {unpriced}");
        assert_eq!(run.prompt_tokens, 20 * 1000);
        assert_eq!(run.completion_tokens, 20 * 500);
        let cost = run.cost_usd.expect("run cost");
        assert!((cost - priced as f64 * 0.006).abs() < 1e-9, "{cost}");
        // The card's per-model temperature reached the server.
        let temps: Vec<Option<f64>> = server
            .seen()
            .iter()
            .filter(|s| s.body["model"] == "unpriced")
            .map(|s| s.body["temperature"].as_f64())
            .collect();
        assert!(
            !temps.is_empty() && temps.iter().all(|t| *t == Some(0.2)),
            "{temps:?}"
        );
    })
    .await;
}

/// A fallback that must not be chosen.
struct NeverCalled;

#[async_trait::async_trait]
impl LanguageModel for NeverCalled {
    async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
        Err(ModelError::Fatal {
            message: "the fallback model was used".into(),
        })
    }
    fn describe(&self) -> String {
        "never".into()
    }
}
