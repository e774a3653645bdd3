// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The model relay against a scripted upstream on loopback: bodies pass
//! through unchanged in the three protocols, streamed or not; usage is
//! counted as the replies report it; the key goes upstream and the token
//! does not; wrong tokens, reached caps and garbage are answered in the
//! protocol's own shape; no step holds the key.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::time::Duration;

use common::scripted_upstream::{Received, ScriptedUpstream, Turn, Usage};
use galapagos::engine::agent_run::AgentWire;
use galapagos::engine::genome::TokenUsage;
use galapagos::engine::model::openai::KeyHeader;
use galapagos::engine::model::pricing::Price;
use galapagos::engine::model::relay::{
    Relay, RelaySession, RelayUpstream, SessionCaps, UpstreamEndpoint, steps,
};
use galapagos::engine::model::wire::{ApiError, Protocol};
use galapagos::engine::redact::Redactor;
use serde_json::json;

const KEY_VAR: &str = "RELAY_TEST_UPSTREAM_KEY";
const KEY: &str = "sk-upstream-real-key-0123456789abcdef";

/// The three protocols: their route, a request body and how the agent
/// sends its key.
#[derive(Clone, Copy, Debug)]
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

    fn wire(self) -> AgentWire {
        match self {
            Speaks::Chat => AgentWire::ChatCompletions,
            Speaks::Responses => AgentWire::Responses,
            Speaks::Anthropic => AgentWire::AnthropicMessages,
        }
    }

    fn body(self, stream: bool) -> String {
        let tools = json!([{"type": "function", "function": {"name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]);
        let v = match self {
            Speaks::Chat => json!({"model": "m-1", "stream": stream,
                "stream_options": {"include_usage": true},
                "messages": [{"role": "system", "content": "You edit code."},
                             {"role": "user", "content": "Fix main.py"}],
                "tools": tools}),
            Speaks::Responses => json!({"model": "m-1", "stream": stream,
                "instructions": "You edit code.", "input": "Fix main.py",
                "tools": [{"type": "function", "name": "bash",
                    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}]}),
            Speaks::Anthropic => json!({"model": "m-1", "stream": stream, "max_tokens": 1024,
                "system": "You edit code.",
                "messages": [{"role": "user", "content": "Fix main.py"}],
                "tools": [{"name": "bash", "input_schema": {"type": "object",
                    "properties": {"command": {"type": "string"}}}}]}),
        };
        v.to_string()
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

fn usage() -> Usage {
    Usage {
        prompt: 1234,
        completion: 56,
        cached: 200,
    }
}

fn price() -> Price {
    Price::new(3.0, 15.0).with_cache(0.3, 3.75)
}

fn upstream_of(server: &ScriptedUpstream) -> RelayUpstream {
    let mut endpoint = UpstreamEndpoint::new(&server.base_url(), &Protocol::ALL, KEY_VAR);
    endpoint.key_header = KeyHeader::Bearer;
    let mut up = RelayUpstream {
        endpoints: vec![endpoint],
        models: vec!["m-1".to_owned()],
        ..RelayUpstream::default()
    };
    up.prices.insert("m-1", price());
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
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The status and body of a response.
async fn read(r: reqwest::RequestBuilder) -> (u16, String) {
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

fn tool_turn() -> Turn {
    Turn::Reply {
        text: "I will look at the file first.".into(),
        tool_calls: vec![common::scripted_upstream::ToolCall {
            name: "bash".into(),
            arguments: json!({"command": "sed -i 's/A = 1.0/A = 2.5/' main.py"}),
        }],
        usage: usage(),
    }
}

fn expected_usage() -> TokenUsage {
    let mut u = TokenUsage {
        prompt_tokens: 1234,
        completion_tokens: 56,
        cached_tokens: 200,
        ..TokenUsage::default()
    };
    u.cost_usd = Some(price().cost_of(&u));
    u
}

/// Requests the upstream got on its model routes.
fn model_requests(server: &ScriptedUpstream) -> Vec<Received> {
    server
        .received()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_pass_through_byte_for_byte_and_usage_is_the_scripted_one() {
    let server = ScriptedUpstream::start(vec![tool_turn()]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_of(&server), dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let c = client();
    let direct_base = format!("http://{}", server.addr);
    let mut n = 0;
    for speaks in ALL {
        for stream in [false, true] {
            let body = speaks.body(stream);
            let (s1, direct) = read(speaks.request(&c, &direct_base, KEY).body(body.clone())).await;
            let (s2, relayed) = read(
                speaks
                    .request(&c, &relay.base_url(), session.token())
                    .body(body.clone()),
            )
            .await;
            assert_eq!(
                (s1, s2),
                (200, 200),
                "{speaks:?} stream={stream}: {relayed}"
            );
            assert_eq!(direct, relayed, "{speaks:?} stream={stream}");
            // The upstream got the body as the agent sent it.
            let got = model_requests(&server);
            assert_eq!(got[got.len() - 1].body, body, "{speaks:?} stream={stream}");
            if stream {
                assert!(relayed.contains("data: "), "{relayed}");
            }
            n += 1;
        }
    }
    let usage = session.usage();
    let (steps, total) = session.finish().await;
    assert_eq!(steps.len(), n);
    assert_eq!(total, usage);
    for (i, step) in steps.iter().enumerate() {
        let speaks = ALL[i / 2];
        assert_eq!(step.index as usize, i);
        assert_eq!(step.wire, speaks.wire());
        assert_eq!(step.route, format!("POST {}", speaks.path()));
        assert_eq!(step.streamed, i % 2 == 1);
        assert_eq!(step.status, 200);
        assert_eq!(step.usage, Some(expected_usage()), "{speaks:?} step {i}");
        assert!(step.refused.is_none() && step.note.is_none());
        assert!(step.duration_ms >= 0.0 && step.started_ms >= 0.0);
        // The reply holds the tool call in the protocol's own shape.
        let read = steps::view(step, None);
        assert_eq!(
            read.reply, "I will look at the file first.",
            "{speaks:?} step {i}"
        );
        assert_eq!(read.tool_calls.len(), 1, "{speaks:?} step {i}");
        assert_eq!(read.tool_calls[0].name, "bash");
        let args: serde_json::Value = serde_json::from_str(&read.tool_calls[0].arguments).unwrap();
        assert_eq!(args["command"], "sed -i 's/A = 1.0/A = 2.5/' main.py");
    }
    let mut want = TokenUsage::default();
    for _ in 0..n {
        want.add(&expected_usage());
    }
    assert_eq!(total.total_tokens(), want.total_tokens());
    assert!((total.cost_usd.unwrap() - want.cost_usd.unwrap()).abs() < 1e-12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_goes_upstream_and_the_token_does_not_nor_into_any_step() {
    // The upstream echoes what it got, key included, in a reply.
    let server = ScriptedUpstream::with(Arc::new(|req: &Received, _| Turn::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: json!({"choices": [{"index": 0, "message": {"role": "assistant",
            "content": format!("you sent {}", req.header("authorization").unwrap_or(""))},
            "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut up = upstream_of(&server);
    up.endpoints[0].protocols = vec![Protocol::ChatCompletions];
    let relay = relay_for(up, dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let token = session.token().to_owned();
    let (status, body) = read(
        Speaks::Chat
            .request(&client(), &relay.base_url(), &token)
            .body(Speaks::Chat.body(false)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The agent never sees the key, even when the endpoint echoes it.
    assert!(!body.contains(KEY), "{body}");
    assert!(body.contains(&format!("[redacted: ${KEY_VAR}]")), "{body}");
    let got = server.received();
    assert_eq!(
        got[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    for (name, value) in &got[0].headers {
        assert!(!value.contains(&token), "the token went upstream in {name}");
    }
    let (steps, _) = session.finish().await;
    let json = serde_json::to_string(&steps).unwrap();
    assert!(!json.contains(KEY), "{json}");
    assert_eq!(steps[0].usage.map(|u| u.total_tokens()), Some(15));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_keys_go_in_x_api_key() {
    let server = ScriptedUpstream::start(vec![Turn::text("hello", 7, 3)]);
    let dir = tempfile::tempdir().unwrap();
    let mut up = upstream_of(&server);
    up.endpoints[0] =
        UpstreamEndpoint::new(&server.base_url(), &[Protocol::AnthropicMessages], KEY_VAR);
    let relay = relay_for(up, dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let (status, body) = read(
        Speaks::Anthropic
            .request(&client(), &relay.base_url(), session.token())
            .body(Speaks::Anthropic.body(false)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let got = server.received();
    assert_eq!(got[0].header("x-api-key"), Some(KEY));
    assert_eq!(got[0].header("authorization"), None);
    assert_eq!(got[0].header("anthropic-version"), Some("2023-06-01"));
    // A protocol the endpoint does not speak is refused in its shape.
    let (status, body) = read(
        Speaks::Chat
            .request(&client(), &relay.base_url(), session.token())
            .body(Speaks::Chat.body(false)),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("does not speak chat_completions"), "{body}");
    assert_eq!(server.model_requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_finished_token_is_refused_in_the_protocols_shape_and_never_forwarded() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_of(&server), dir.path()).await;
    let c = client();
    let session = relay.session(SessionCaps::default());
    for speaks in ALL {
        let (status, body) = read(
            speaks
                .request(&c, &relay.base_url(), "sk-relay-not-a-token")
                .body(speaks.body(false)),
        )
        .await;
        assert_eq!(status, 401, "{speaks:?}: {body}");
        let e = ApiError::parse(&body).unwrap();
        let want = match speaks {
            Speaks::Anthropic => "authentication_error",
            _ => "invalid_request_error",
        };
        assert_eq!(e.kind, want, "{body}");
    }
    // No key at all.
    let (status, _) = read(
        c.post(format!("{}/v1/chat/completions", relay.base_url()))
            .body(Speaks::Chat.body(false)),
    )
    .await;
    assert_eq!(status, 401);
    // The key itself is no token either.
    let (status, _) = read(
        Speaks::Chat
            .request(&c, &relay.base_url(), KEY)
            .body(Speaks::Chat.body(false)),
    )
    .await;
    assert_eq!(status, 401);
    let token = session.token().to_owned();
    let (steps, _) = session.finish().await;
    assert!(steps.is_empty(), "refused before any session: {steps:?}");
    let (status, body) = read(
        Speaks::Chat
            .request(&c, &relay.base_url(), &token)
            .body(Speaks::Chat.body(false)),
    )
    .await;
    assert_eq!(status, 401, "a finished token: {body}");
    assert_eq!(server.model_requests(), 0);
    assert_eq!(relay.unauthorized(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_requests_past_a_cap_are_all_refused_and_none_forwarded() {
    let server = ScriptedUpstream::start(vec![Turn::text("edit", 600, 100)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_of(&server), dir.path()).await;
    let c = client();
    for (speaks, caps) in [
        (
            Speaks::Chat,
            SessionCaps {
                max_tokens: Some(1000),
                ..SessionCaps::default()
            },
        ),
        (
            Speaks::Anthropic,
            SessionCaps {
                max_cost_usd: Some(0.001),
                ..SessionCaps::default()
            },
        ),
        (
            Speaks::Responses,
            SessionCaps {
                max_tokens: Some(1),
                ..SessionCaps::default()
            },
        ),
    ] {
        let before = server.model_requests();
        let session = relay.session(caps);
        // Each reply is 700 tokens, $0.0033: under the cap until it is not.
        let mut forwarded = 0;
        loop {
            let (status, _) = read(
                speaks
                    .request(&c, &relay.base_url(), session.token())
                    .body(speaks.body(false)),
            )
            .await;
            if status != 200 {
                break;
            }
            forwarded += 1;
            assert!(forwarded < 10, "the cap never stopped {speaks:?}");
        }
        let at_cap = server.model_requests();
        assert_eq!(at_cap - before, forwarded);
        use futures::StreamExt as _;
        let answers: Vec<(u16, String)> = futures::stream::iter(0..1000)
            .map(|_| {
                read(
                    speaks
                        .request(&c, &relay.base_url(), session.token())
                        .body(speaks.body(false)),
                )
            })
            .buffer_unordered(64)
            .collect()
            .await;
        let mut n = 0;
        for (status, body) in answers {
            let (want_status, want_kind) = match speaks {
                Speaks::Anthropic => (400, "invalid_request_error"),
                _ => (429, "insufficient_quota"),
            };
            assert_eq!(status, want_status, "{speaks:?}: {body}");
            let e = ApiError::parse(&body).unwrap();
            assert_eq!(e.kind, want_kind, "{body}");
            assert!(e.message.contains("cap is reached"), "{body}");
            n += 1;
        }
        assert_eq!(n, 1000);
        assert_eq!(
            server.model_requests(),
            at_cap,
            "{speaks:?}: forwarded past the cap"
        );
        let (steps, usage) = session.finish().await;
        assert_eq!(steps.len() as u64, forwarded + 1001);
        assert_eq!(steps.iter().filter(|s| s.refused.is_some()).count(), 1001);
        assert_eq!(usage.total_tokens(), 700 * forwarded);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_gets_a_clear_error_in_the_protocols_shape_and_a_step_that_says_so() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let server = ScriptedUpstream::with(Arc::new(|req: &Received, _| {
        let v = req.json();
        match v["messages"][0]["content"].as_str().unwrap_or_default() {
            "not json" => Turn::Raw {
                status: 200,
                content_type: "application/json".into(),
                body: "<html>gateway lunch break</html>".into(),
            },
            "cut" => Turn::CutOff {
                text: "a long answer that never arrives whole".into(),
                usage: usage(),
                bytes: 40,
            },
            _ => Turn::text("fine", 5, 5),
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut up = upstream_of(&server);
    let mut dead_endpoint = UpstreamEndpoint::new(
        &format!("http://127.0.0.1:{dead_port}/v1"),
        &[Protocol::Responses],
        KEY_VAR,
    );
    dead_endpoint.key_required = false;
    up.endpoints[0].protocols = vec![Protocol::ChatCompletions, Protocol::AnthropicMessages];
    up.endpoints.push(dead_endpoint);
    let relay = relay_for(up, dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let c = client();
    let chat = |content: &str, stream: bool| {
        json!({"model": "m-1", "stream": stream, "messages": [{"role": "user", "content": content}]})
            .to_string()
    };
    let anthropic = |content: &str, stream: bool| {
        json!({"model": "m-1", "stream": stream, "max_tokens": 10,
            "messages": [{"role": "user", "content": content}]})
        .to_string()
    };
    let base = relay.base_url();
    let t = session.token().to_owned();
    // 0: a request that is not JSON.
    let (s, b) = read(Speaks::Chat.request(&c, &base, &t).body("{\"model\": ")).await;
    assert_eq!(s, 400, "{b}");
    assert!(
        ApiError::parse(&b).unwrap().message.contains("not JSON"),
        "{b}"
    );
    // 1: an upstream reply that is not JSON.
    let (s, b) = read(
        Speaks::Chat
            .request(&c, &base, &t)
            .body(chat("not json", false)),
    )
    .await;
    assert_eq!(s, 502, "{b}");
    let e = ApiError::parse(&b).unwrap();
    assert!(
        e.message.contains("not JSON") && e.message.contains("gateway lunch"),
        "{b}"
    );
    // 2: a whole reply cut off.
    let (s, b) = read(
        Speaks::Anthropic
            .request(&c, &base, &t)
            .body(anthropic("cut", false)),
    )
    .await;
    assert_eq!(s, 502, "{b}");
    let e = ApiError::parse(&b).unwrap();
    assert_eq!(e.kind, "api_error", "{b}");
    assert!(e.message.contains("broke off"), "{b}");
    // 3: a stream cut off: its events so far, then the protocol's error event.
    let (s, b) = read(
        Speaks::Anthropic
            .request(&c, &base, &t)
            .body(anthropic("cut", true)),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b.starts_with("event: message_start"), "{b}");
    assert!(b.ends_with("\n\n"), "{b}");
    // The part that came, then the protocol's error event, apart from it.
    let events = galapagos::engine::model::wire::sse::events(&b);
    let last = events.last().unwrap();
    assert_eq!(last.event, "error", "{b}");
    let e = ApiError::parse(&last.data).unwrap();
    assert_eq!(e.kind, "api_error");
    assert!(e.message.contains("broke off after 40 bytes"), "{b}");
    // 4: a dead upstream.
    let (s, b) = read(
        Speaks::Responses
            .request(&c, &base, &t)
            .body(Speaks::Responses.body(false)),
    )
    .await;
    assert_eq!(s, 502, "{b}");
    let e = ApiError::parse(&b).unwrap();
    assert!(e.message.contains("could not reach"), "{b}");
    // 5: a route it does not relay.
    let (s, b) = read(c.get(format!("{base}/v1/files")).bearer_auth(&t)).await;
    assert_eq!(s, 404, "{b}");
    // 6: and it goes on relaying.
    let (s, b) = read(
        Speaks::Chat
            .request(&c, &base, &t)
            .body(chat("hello", false)),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (steps, usage) = session.finish().await;
    assert_eq!(steps.len(), 7);
    assert!(steps[0].refused.as_deref().unwrap().contains("not JSON"));
    assert_eq!(steps[0].request, "{\"model\": ");
    assert!(steps[1].note.as_deref().unwrap().contains("not JSON"));
    assert!(steps[1].response.contains("gateway lunch"));
    assert!(
        steps[2]
            .note
            .as_deref()
            .unwrap()
            .contains("broke off after 40 bytes")
    );
    assert!(
        steps[3]
            .note
            .as_deref()
            .unwrap()
            .contains("stream broke off")
    );
    assert_eq!(steps[3].status, 200);
    assert!(
        steps[4]
            .note
            .as_deref()
            .unwrap()
            .contains("could not reach")
    );
    assert_eq!(steps[4].status, 502);
    assert!(
        steps[5]
            .refused
            .as_deref()
            .unwrap()
            .contains("does not forward GET /v1/files")
    );
    assert_eq!(steps[6].usage.map(|u| u.total_tokens()), Some(10));
    // Only the whole reply reported usage; the replies forwarded whose
    // usage could not be read count as what they held (there is no cap).
    let unread: u64 = steps[1..4]
        .iter()
        .map(|s| {
            assert!(
                s.note
                    .as_deref()
                    .is_some_and(|n| n.contains("usage could not be read")),
                "{s:?}"
            );
            s.usage.map_or(0, |u| u.total_tokens())
        })
        .sum();
    assert!(unread > 0);
    assert!(steps[0].usage.is_none() && steps[4].usage.is_none() && steps[5].usage.is_none());
    assert_eq!(usage.total_tokens(), 10 + unread);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_stream_that_does_not_ask_for_usage_is_asked_for_it() {
    let server = ScriptedUpstream::start(vec![Turn::text("streamed", 40, 2)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_of(&server), dir.path()).await;
    let session = relay.session(SessionCaps::default());
    let body = json!({"model": "m-1", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let (s, b) = read(
        Speaks::Chat
            .request(&client(), &relay.base_url(), session.token())
            .body(body),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let sent = server.received()[0].json();
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(session.usage().total_tokens(), 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_and_count_tokens_are_forwarded_and_kept_and_the_unix_socket_answers() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_of(&server), dir.path()).await;
    assert_eq!(relay.unix_socket(), dir.path().join("relay.sock"));
    let session = relay.session(SessionCaps::default());
    let c = client();
    let (s, b) = read(
        c.get(format!("{}/v1/models", relay.base_url()))
            .bearer_auth(session.token()),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b.contains("scripted-model"));
    let (s, b) = read(
        c.post(format!("{}/v1/messages/count_tokens", relay.base_url()))
            .header("x-api-key", session.token())
            .header("anthropic-version", "2023-06-01")
            .body(Speaks::Anthropic.body(false)),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b.contains("input_tokens"));
    // Over the Unix socket, as a sandboxed agent's bridge reaches it.
    let socket = relay.unix_socket().to_owned();
    let token = session.token().to_owned();
    let raw = tokio::task::spawn_blocking(move || {
        let body = Speaks::Chat.body(false);
        let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
    .await
    .unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("chat.completion"), "{raw}");
    let (steps, usage): (Vec<_>, _) = session.finish().await;
    assert_eq!(
        steps.iter().map(|s| s.wire).collect::<Vec<_>>(),
        [
            AgentWire::Other,
            AgentWire::Other,
            AgentWire::ChatCompletions
        ]
    );
    assert_eq!(usage.total_tokens(), 2);
    drop(relay);
    assert!(!dir.path().join("relay.sock").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_without_its_key_does_not_start_and_says_which_variable() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let e = Relay::start_with_env(
        upstream_of(&server),
        Arc::new(Redactor::default()),
        dir.path(),
        &|_| None,
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains(KEY_VAR), "{e}");
    let long = dir.path().join("x".repeat(120));
    std::fs::create_dir_all(&long).unwrap();
    let e = relay_for_result(upstream_of(&server), &long)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("at most 107"), "{e}");
}

async fn relay_for_result(
    upstream: RelayUpstream,
    dir: &std::path::Path,
) -> Result<Relay, galapagos::engine::model::relay::RelayError> {
    Relay::start_with_env(upstream, Arc::new(Redactor::default()), dir, &|_| {
        Some(KEY.to_owned())
    })
    .await
}

/// The environment a session hands an agent names the relay and the token,
/// never the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_environment_points_at_the_relay() {
    let server = ScriptedUpstream::start(vec![Turn::text("hi", 1, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let relay = relay_for(upstream_of(&server), dir.path()).await;
    let session: RelaySession = relay.session(SessionCaps::default());
    let env = session.env("http://127.0.0.1:9999/");
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("OPENAI_BASE_URL"), Some("http://127.0.0.1:9999/v1"));
    assert_eq!(get("ANTHROPIC_BASE_URL"), Some("http://127.0.0.1:9999"));
    assert_eq!(get("OPENAI_API_KEY"), Some(session.token()));
    assert_eq!(get("ANTHROPIC_AUTH_TOKEN"), Some(session.token()));
    assert!(env.iter().all(|(_, v)| !v.contains(KEY)));
    assert!(!format!("{session:?}{relay:?}").contains(session.token()));
}
