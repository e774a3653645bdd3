//! Model relay overhead benchmark (not a timed test): the time of one model
//! request sent straight to a loopback endpoint (the scripted upstream of
//! the tests) and the same request sent through the relay, whole and
//! streamed, in Chat Completions and Anthropic Messages; the relay's own
//! overhead is the difference of the medians. Requests go one at a time
//! over a kept-alive connection, as an agent sends them.
//!
//! `cargo bench --bench relay` (REQUESTS=N to change the sample size).
//! Target: under 2 ms per request.

#![allow(clippy::unwrap_used, reason = "a benchmark: a panic is a failed run")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::model::relay::{Relay, RelayUpstream, SessionCaps, UpstreamEndpoint};
use galapagos::engine::model::wire::Protocol;
use galapagos::engine::redact::Redactor;
use serde_json::json;

#[path = "../tests/common/scripted_upstream.rs"]
#[allow(dead_code, reason = "the benchmark uses part of the test double")]
mod scripted_upstream;

use scripted_upstream::{ScriptedUpstream, ToolCall, Turn, Usage};

const KEY_VAR: &str = "RELAY_BENCH_KEY";
const KEY: &str = "sk-bench-key-0123456789abcdef";

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (
        v.get(v.len() / 2).map_or(0.0, |d| ms(*d)),
        v.get(v.len() * 95 / 100).map_or(0.0, |d| ms(*d)),
    )
}

async fn time(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    n: usize,
) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let mut r = client.post(url).body(body.to_owned());
        for (k, v) in headers {
            r = r.header(*k, v);
        }
        let start = Instant::now();
        let resp = r.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let bytes = resp.bytes().await.unwrap();
        let took = start.elapsed();
        std::hint::black_box(bytes);
        // The first tenth warms the connections up.
        if i >= n / 10 {
            out.push(took);
        }
    }
    out
}

fn main() {
    let n: usize = std::env::var("REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let upstream = ScriptedUpstream::start(vec![Turn::Reply {
        text: "I will change the constant and run the tests again.".into(),
        tool_calls: vec![ToolCall {
            name: "bash".into(),
            arguments: json!({"command": "sed -i 's/A = 1.0/A = 2.5/' main.py && python -m pytest -q"}),
        }],
        usage: Usage {
            prompt: 2400,
            completion: 120,
            cached: 1024,
        },
    }]);
    let dir = tempfile::tempdir().unwrap();
    println!(
        "model relay overhead: {n} sequential requests per case, kept-alive connections, loopback"
    );
    println!(
        "| protocol | reply | direct p50 ms | relayed p50 ms | relayed p95 ms | overhead p50 ms |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    runtime.block_on(async {
        let mut up = RelayUpstream {
            endpoints: vec![UpstreamEndpoint::new(
                &upstream.base_url(),
                &Protocol::ALL,
                KEY_VAR,
            )],
            models: vec!["m-1".to_owned()],
            ..RelayUpstream::default()
        };
        up.prices.insert(
            "m-1",
            galapagos::engine::model::pricing::Price::new(3.0, 15.0),
        );
        let redactor = Arc::new(Redactor::new([(format!("${KEY_VAR}"), KEY.to_owned())]));
        let relay = Relay::start_with_env(up, redactor, dir.path(), &|name| {
            (name == KEY_VAR).then(|| KEY.to_owned())
        })
        .await
        .unwrap();
        let session = relay.session(SessionCaps::default());
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let history: Vec<_> = (0..20)
            .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("turn {i}: {}", "the file main.py holds the constants ".repeat(20))}))
            .collect();
        for (label, path, stream) in [
            ("Chat Completions", "/v1/chat/completions", false),
            ("Chat Completions", "/v1/chat/completions", true),
            ("Anthropic Messages", "/v1/messages", false),
            ("Anthropic Messages", "/v1/messages", true),
        ] {
            let body = json!({"model": "m-1", "max_tokens": 1024, "stream": stream,
                "stream_options": {"include_usage": true}, "messages": history})
            .to_string();
            let direct = time(
                &client,
                &format!("http://{}{path}", upstream.addr),
                &[("authorization", format!("Bearer {KEY}"))],
                &body,
                n,
            )
            .await;
            let relayed = time(
                &client,
                &format!("{}{path}", relay.base_url()),
                &[("authorization", format!("Bearer {}", session.token()))],
                &body,
                n,
            )
            .await;
            let (d50, _) = stats(direct);
            let (r50, r95) = stats(relayed);
            println!(
                "| {label} | {} | {d50:.3} | {r50:.3} | {r95:.3} | {:.3} |",
                if stream { "streamed" } else { "whole" },
                r50 - d50
            );
        }
        let (steps, usage) = session.finish().await;
        assert_eq!(steps.len(), 4 * (n + n / 10));
        assert_eq!(usage.prompt_tokens, 2400 * steps.len() as u64);
    });
}
