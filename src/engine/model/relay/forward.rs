//! One request through the relay: checked (token, route, cap, body), sent
//! to the endpoint with the real key, its reply passed back unchanged
//! (streamed as it comes, or whole), its usage counted and the exchange
//! kept as a step.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::SinkExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;

use super::Shared;
use super::route::{self, Route};
use super::session::{SessionState, lock};
use super::shape::{self, Shape, Trouble};
use crate::engine::agent_run::{AgentStep, AgentWire};
use crate::engine::model::openai::KeyHeader;
use crate::engine::model::wire::{Protocol, excerpt};
use crate::engine::usage::TokenUsage;

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Largest request body the relay reads (an agent's whole conversation).
const MAX_REQUEST_BYTES: usize = 32 << 20;
/// Largest reply the relay keeps to read usage from; a longer one is still
/// passed on whole.
const MAX_REPLY_BYTES: usize = 64 << 20;
/// Of a request or reply, the first bytes a step keeps.
pub const STEP_TEXT_LIMIT: usize = 256 << 10;
/// Longest wait for the endpoint's response header.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest silence between two chunks of a reply.
const STALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Headers that describe one hop, or carry the agent's token: never sent
/// on.
const NOT_FORWARDED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    // The relay reads the reply's usage: ask for it uncompressed.
    "accept-encoding",
];

/// Headers of the endpoint's response not passed back (hyper writes its
/// own framing).
const NOT_RETURNED: &[&str] = &[
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "trailer",
    "upgrade",
    "set-cookie",
];

/// A step in the making.
struct Draft {
    session: Arc<Mutex<SessionState>>,
    step: AgentStep,
    clock: Instant,
}

impl Draft {
    fn finish(mut self, status: u16) {
        self.step.status = status;
        self.step.duration_ms = self.clock.elapsed().as_secs_f64() * 1000.0;
        lock(&self.session).record(self.step);
    }
}

/// `text` cut to [`STEP_TEXT_LIMIT`] bytes at a character boundary.
fn kept(text: &str) -> (String, Option<u64>) {
    if text.len() <= STEP_TEXT_LIMIT {
        return (text.to_owned(), None);
    }
    let mut end = STEP_TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), Some(text.len() as u64))
}

fn full(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

/// The relay's own answer.
fn answer(shape: Shape, trouble: Trouble, message: &str) -> Response<Body> {
    let (status, body) = shape::error_body(shape, trouble, message);
    full(status, "application/json", body)
}

/// Answers one request.
pub async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let found = route::route(&parts.method, &path);
    let wire = found.as_ref().map_or(AgentWire::Other, |r| r.wire);
    let anthropic = route::anthropic_headers(&parts.headers);
    let shape = Shape::of(wire, anthropic);

    // No live token: refused before anything is read or kept.
    let Some(session) = route::token(&parts.headers).and_then(|t| shared.session(t)) else {
        shared
            .unauthorized
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return answer(
            shape,
            Trouble::BadToken,
            "the model relay does not know this key (a wrong token, or the proposal it belonged \
             to is over)",
        );
    };
    let (index, started_ms) = lock(&session).begin_step();
    let mut draft = Draft {
        session: Arc::clone(&session),
        step: AgentStep {
            index,
            wire,
            route: format!("{} {path}", parts.method),
            started_ms,
            ..AgentStep::default()
        },
        clock: Instant::now(),
    };
    let refuse = |mut draft: Draft, trouble: Trouble, why: String| {
        let (status, body) = shape::error_body(shape, trouble, &why);
        draft.step.refused = Some(why);
        draft.step.response = body.clone();
        draft.finish(status);
        full(status, "application/json", body)
    };

    let bytes = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            let why = format!(
                "the request body could not be read ({e}); at most {MAX_REQUEST_BYTES} bytes are relayed"
            );
            return refuse(draft, Trouble::BadRequest, why);
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let (request_kept, _) = kept(&shared.redact(&text));
    draft.step.request = request_kept;

    let Some(route) = found else {
        let why = format!(
            "the model relay does not forward {} {path} (it relays chat/completions, responses, \
             messages, messages/count_tokens and models)",
            parts.method
        );
        return refuse(draft, Trouble::NotRelayed, why);
    };
    // Not in the `if let`: its guard would live through `refuse`, which
    // locks the session again.
    let reached = lock(&session).cap_reached();
    if let Some(refusal) = reached {
        draft.step.cap = Some(refusal.cap);
        return refuse(draft, Trouble::CapReached, refusal.why);
    }
    let mut json: Option<Value> = if route.suffix == "/models" {
        None
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                let why = format!(
                    "the request body is not JSON ({e}): {}",
                    excerpt(&shared.redact(&text))
                );
                return refuse(draft, Trouble::BadRequest, why);
            }
        }
    };
    let model = json
        .as_ref()
        .and_then(|v| v.get("model"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let wants_stream = json
        .as_ref()
        .and_then(|v| v.get("stream"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    draft.step.streamed = wants_stream;
    // A Chat Completions stream reports its usage only when asked to: the
    // relay asks, or the tokens would go uncounted (the one change it makes
    // to a body; SDKs read the extra last chunk, which has no choices).
    let mut bytes = bytes;
    if route.protocol == Protocol::ChatCompletions
        && wants_stream
        && let Some(Value::Object(map)) = json.as_mut()
    {
        let options = map
            .entry("stream_options")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(o) = options
            && o.get("include_usage") != Some(&Value::Bool(true))
        {
            o.insert("include_usage".into(), Value::Bool(true));
            let body = Value::Object(map.clone()).to_string();
            draft.step.request = kept(&shared.redact(&body)).0;
            bytes = Bytes::from(body);
        }
    }
    let protocol = if route.suffix == "/models" && anthropic {
        Protocol::AnthropicMessages
    } else {
        route.protocol
    };
    let endpoint = shared.upstream.endpoint_for(protocol).or_else(|| {
        // The model list of whichever endpoint there is.
        (route.suffix == "/models")
            .then(|| shared.upstream.endpoints.first().map(|e| (0, e)))
            .flatten()
    });
    let Some((at, endpoint)) = endpoint else {
        let why = format!(
            "the run's model endpoint does not speak {}: point the agent at the protocol the run's \
             model settings name",
            protocol.label()
        );
        return refuse(draft, Trouble::BadRequest, why);
    };
    let mut url = match endpoint.url(route.suffix, model.as_deref()) {
        Ok(u) => u,
        Err(e) => {
            let why = format!("the run's endpoint URL is unusable: {}", shared.redact(&e));
            draft.step.note = Some(why.clone());
            let (status, body) = shape::error_body(shape, Trouble::Upstream, &why);
            draft.step.response = body.clone();
            draft.finish(status);
            return full(status, "application/json", body);
        }
    };
    // The agent's own query (`?beta=true`), after the endpoint's.
    if let Some(q) = parts.uri.query() {
        let theirs: Vec<(String, String)> = reqwest::Url::parse(&format!("http://relay/?{q}"))
            .map(|u| {
                u.query_pairs()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let ours: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
        let mut pairs = url.query_pairs_mut();
        for (k, v) in theirs.iter().filter(|(k, _)| !ours.contains(k)) {
            pairs.append_pair(k, v);
        }
    }

    let mut outgoing = HeaderMap::new();
    for (name, value) in &parts.headers {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            outgoing.append(name.clone(), value.clone());
        }
    }
    for (name, value) in &endpoint.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            outgoing.insert(n, v);
        }
    }
    if let Some(key) = &shared.keys[at] {
        let value = match endpoint.key_header {
            KeyHeader::Bearer => format!("Bearer {key}"),
            KeyHeader::ApiKey | KeyHeader::XApiKey => key.clone(),
        };
        if let Ok(mut v) = HeaderValue::from_str(&value) {
            v.set_sensitive(true);
            outgoing.insert(endpoint.key_header.name(), v);
        }
    }
    let sent = shared
        .client
        .request(parts.method.clone(), url)
        .headers(outgoing)
        .body(bytes)
        .send();
    let upstream = match tokio::time::timeout(FIRST_BYTE_TIMEOUT, sent).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return unreachable_endpoint(&shared, draft, shape, &e.to_string()),
        Err(_) => {
            let why = format!("no answer within {} s", FIRST_BYTE_TIMEOUT.as_secs());
            return unreachable_endpoint(&shared, draft, shape, &why);
        }
    };
    let status = upstream.status().as_u16();
    let mut returned = HeaderMap::new();
    for (name, value) in upstream.headers() {
        if !NOT_RETURNED.contains(&name.as_str()) {
            returned.append(name.clone(), value.clone());
        }
    }
    let is_stream = upstream
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let meter = Meter {
        shared: Arc::clone(&shared),
        route: route.clone(),
        model,
        ok: (200..300).contains(&status),
    };
    if is_stream {
        draft.step.streamed = true;
        stream_back(meter, draft, upstream, status, returned)
    } else {
        whole_back(meter, draft, shape, upstream, status, returned).await
    }
}

/// What is needed to count a reply's usage.
struct Meter {
    shared: Arc<Shared>,
    route: Route,
    model: Option<String>,
    ok: bool,
}

impl Meter {
    /// The usage `body` reports, priced.
    fn usage(&self, body: &str, streamed: bool) -> Option<TokenUsage> {
        if !self.route.metered || !self.ok {
            return None;
        }
        let mut usage = self.route.protocol.usage_of(body, streamed)?;
        if let Some(price) = self
            .model
            .as_deref()
            .and_then(|m| self.shared.upstream.prices.lookup(m))
        {
            usage.cost_usd = Some(price.cost_of(&usage));
        }
        Some(usage)
    }
}

fn unreachable_endpoint(
    shared: &Shared,
    mut draft: Draft,
    shape: Shape,
    err: &str,
) -> Response<Body> {
    let why = format!(
        "the model relay could not reach the run's model endpoint: {}",
        shared.redact(err)
    );
    let (status, body) = shape::error_body(shape, Trouble::Upstream, &why);
    draft.step.note = Some(why);
    draft.step.response = body.clone();
    draft.finish(status);
    full(status, "application/json", body)
}

/// Reads the whole reply, then answers with it (or, when it broke off or
/// is not JSON, with an error in the protocol's shape).
async fn whole_back(
    meter: Meter,
    mut draft: Draft,
    shape: Shape,
    mut upstream: reqwest::Response,
    status: u16,
    returned: HeaderMap,
) -> Response<Body> {
    let shared = Arc::clone(&meter.shared);
    let mut all: Vec<u8> = Vec::new();
    let broke = loop {
        match tokio::time::timeout(STALL_TIMEOUT, upstream.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                all.extend_from_slice(&chunk);
                if all.len() > MAX_REPLY_BYTES {
                    break Some(format!("the reply is over {MAX_REPLY_BYTES} bytes"));
                }
            }
            Ok(Ok(None)) => break None,
            Ok(Err(e)) => break Some(e.to_string()),
            Err(_) => break Some(format!("no data for {} s", STALL_TIMEOUT.as_secs())),
        }
    };
    let text = String::from_utf8_lossy(&all);
    let clean = shared.redact(&text);
    let (kept_text, full_len) = kept(&clean);
    draft.step.response = kept_text;
    draft.step.response_bytes = full_len;
    let trouble = match broke {
        Some(why) => Some(format!(
            "the model endpoint's reply broke off after {} bytes ({})",
            all.len(),
            shared.redact(&why)
        )),
        None if meter.ok && serde_json::from_str::<Value>(text.trim()).is_err() => Some(format!(
            "the model endpoint answered HTTP {status} with a body that is not JSON: {}",
            excerpt(&clean)
        )),
        None => None,
    };
    if let Some(why) = trouble {
        let (code, body) = shape::error_body(shape, Trouble::Upstream, &why);
        draft.step.note = Some(why);
        draft.finish(code);
        return full(code, "application/json", body);
    }
    draft.step.usage = meter.usage(&text, false);
    draft.finish(status);
    // The reply as it came, unless it holds a secret.
    let body = if clean.len() == text.len() && clean == text {
        Bytes::from(all)
    } else {
        Bytes::from(clean)
    };
    let mut response = Response::new(Full::new(body).boxed_unsync());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    *response.headers_mut() = returned;
    response
}

/// Answers at once with a body fed chunk by chunk as the endpoint sends
/// it; the step is kept when the stream ends (or breaks off: then the
/// protocol's error event ends the agent's stream).
fn stream_back(
    meter: Meter,
    mut draft: Draft,
    mut upstream: reqwest::Response,
    status: u16,
    returned: HeaderMap,
) -> Response<Body> {
    let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(32);
    let wire = draft.step.wire;
    tokio::spawn(async move {
        let shared = Arc::clone(&meter.shared);
        let mut all: Vec<u8> = Vec::new();
        let mut total = 0usize;
        let mut agent_gone = false;
        // Whether what the agent got so far ends between two events.
        let mut at_boundary = true;
        let broke = loop {
            match tokio::time::timeout(STALL_TIMEOUT, upstream.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    total += chunk.len();
                    if all.len() < MAX_REPLY_BYTES {
                        all.extend_from_slice(&chunk);
                    }
                    at_boundary = chunk.ends_with(b"\n\n") || chunk.ends_with(b"\r\n\r\n");
                    let out = match std::str::from_utf8(&chunk) {
                        Ok(t) if shared.finds(t) => Bytes::from(shared.redact(t)),
                        _ => chunk,
                    };
                    // An agent that hung up: read on, the tokens are spent.
                    if !agent_gone && tx.send(Ok(Frame::data(out))).await.is_err() {
                        agent_gone = true;
                    }
                }
                Ok(Ok(None)) => break None,
                Ok(Err(e)) => break Some(e.to_string()),
                Err(_) => break Some(format!("no data for {} s", STALL_TIMEOUT.as_secs())),
            }
        };
        let text = String::from_utf8_lossy(&all);
        let clean = shared.redact(&text);
        let (kept_text, _) = kept(&clean);
        draft.step.response = kept_text;
        draft.step.response_bytes = (total > STEP_TEXT_LIMIT).then_some(total as u64);
        draft.step.usage = meter.usage(&text, true);
        if let Some(why) = broke {
            let why = format!(
                "the model endpoint's stream broke off after {total} bytes ({})",
                shared.redact(&why)
            );
            if !agent_gone {
                let mut event = shape::error_event(wire, &why);
                if !at_boundary {
                    // End the broken-off event first.
                    event.insert_str(0, "\n\n");
                }
                tx.send(Ok(Frame::data(Bytes::from(event)))).await.ok();
            }
            draft.step.note = Some(why);
        }
        draft.finish(status);
    });
    let mut response = Response::new(StreamBody::new(rx).boxed_unsync());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    *response.headers_mut() = returned;
    response
}
