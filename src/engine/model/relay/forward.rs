//! One request through the relay: checked (token, bounds, route, model,
//! caps, body), sent to the endpoint with the real key, its reply passed
//! back (streamed as it comes, or whole), the key taken out of it, its
//! usage counted and the exchange kept as a step.
//!
//! Each request runs in a task of its own: an agent that hangs up does not
//! stop it, so a reply it no longer reads is still read to its end and
//! counted. The proposal's end cuts it ([`super::RelaySession::finish`]).
//!
//! Over 800 lines: `serve` is one request's checks in the order the caps need them (a step is drafted before the
//! first refusal so that every refusal is kept), and the two ways a reply goes back (whole, streamed) share its
//! admission, metering and redaction; split apart, each would need the whole request's state handed across.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::SinkExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;

use super::Shared;
use super::admit::{self, Ask, Rooms, Verdict};
use super::limits::{
    ADMISSION_WAIT, FIRST_BYTE_TIMEOUT, REFUSED_TEXT_LIMIT, STALL_TIMEOUT, STEP_TEXT_LIMIT,
    SessionLimits, WHOLE_REPLY_WINDOW,
};
use super::route::{self, Route};
use super::session::{self, Session};
use super::shape::{self, Shape, Trouble};
use super::tap::UsageTap;
use crate::engine::agent_run::{AgentStep, AgentWire};
use crate::engine::meter::{Hold, Room};
use crate::engine::model::openai::KeyHeader;
use crate::engine::model::pricing::Price;
use crate::engine::model::wire::{Protocol, excerpt};
use crate::engine::usage::TokenUsage;

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

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

/// Of a text being cut for a step, the bytes redacted past the cut (so
/// that a key the cut would split is still found whole).
const CUT_MARGIN: usize = 1024;

/// A step in the making; recorded when finished, or when dropped.
struct Draft {
    session: Arc<Session>,
    step: AgentStep,
    clock: Instant,
    /// Counted among the proposal's open requests.
    open: bool,
    /// What it holds of the caps, once admitted (and whether alone).
    hold: Option<(Hold, bool)>,
    /// Its prompt's tokens at most (for a reply whose usage is unread).
    prompt: u64,
    priced: bool,
    metered: bool,
    /// Forwarded: the endpoint may have spent tokens on it.
    sent: bool,
    /// The endpoint said it spent nothing (an error status or body).
    free: bool,
    done: bool,
}

impl Draft {
    fn finish(mut self, status: u16) {
        self.step.status = status;
        self.record();
    }

    fn note(&mut self, why: String) {
        self.step.note = Some(match self.step.note.take() {
            Some(n) => format!("{n}; {why}"),
            None => why,
        });
    }

    fn record(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        self.step.duration_ms = self.clock.elapsed().as_secs_f64() * 1000.0;
        let mut st = self.session.lock();
        if self.metered && self.sent && self.step.usage.is_none() && !self.free {
            let hold = self.hold.map(|(h, _)| h).unwrap_or_default();
            let u = st.rest_of_the_cap(&hold, self.prompt, self.priced);
            let why = format!(
                "its usage could not be read: counted as the rest of the proposal's cap \
                 ({} tokens{})",
                u.total_tokens(),
                u.cost_usd.map(|c| format!(", ${c:.6}")).unwrap_or_default()
            );
            self.step.usage = Some(u);
            self.step.note = Some(match self.step.note.take() {
                Some(n) => format!("{n}; {why}"),
                None => why,
            });
        }
        let step = std::mem::take(&mut self.step);
        st.record(step, self.hold, self.open);
        drop(st);
        self.session.changed.notify_waiters();
    }
}

impl Drop for Draft {
    fn drop(&mut self) {
        if !self.done {
            self.note("the relay stopped handling this request before it ended".into());
            self.record();
        }
    }
}

/// `text` cut to `limit` bytes at a character boundary, with its full
/// length when cut.
fn kept(text: &str, limit: usize) -> (String, Option<u64>) {
    if text.len() <= limit {
        return (text.to_owned(), None);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), Some(text.len() as u64))
}

/// The first `limit` bytes of `raw`, redacted, as a step keeps them.
fn kept_redacted(shared: &Shared, raw: &[u8], limit: usize) -> String {
    let head = &raw[..raw.len().min(limit + CUT_MARGIN)];
    let text = String::from_utf8_lossy(head);
    kept(&shared.redact(&text), limit).0
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

/// Answers one request, in a task of its own (see the module's doc).
pub async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    match tokio::spawn(serve(shared, request)).await {
        Ok(response) => response,
        Err(e) => answer(
            Shape::OpenAi,
            Trouble::Upstream,
            &format!("the model relay failed on this request: {e}"),
        ),
    }
}

/// Why a request body was not read.
enum BodyTrouble {
    TooLarge(usize),
    Busy(usize),
    Broke(String),
    Ended,
}

/// Reads a request body of at most `max` bytes, each byte held in
/// `bytes` (set aside already when `reserved`).
async fn read_body(
    mut body: Incoming,
    session: &Session,
    bytes: &mut session::Bytes,
    reserved: bool,
    max: usize,
) -> Result<Vec<u8>, BodyTrouble> {
    let mut all = Vec::new();
    loop {
        let frame = tokio::select! {
            f = tokio::time::timeout(STALL_TIMEOUT, body.frame()) => f,
            () = session.cancelled() => return Err(BodyTrouble::Ended),
        };
        match frame {
            Err(_) => {
                return Err(BodyTrouble::Broke(format!(
                    "no data for {} s",
                    STALL_TIMEOUT.as_secs()
                )));
            }
            Ok(None) => return Ok(all),
            Ok(Some(Err(e))) => return Err(BodyTrouble::Broke(e.to_string())),
            Ok(Some(Ok(frame))) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if all.len() + data.len() > max {
                    return Err(BodyTrouble::TooLarge(all.len() + data.len()));
                }
                if !reserved && !bytes.take(data.len()) {
                    return Err(BodyTrouble::Busy(bytes.held() + data.len()));
                }
                all.extend_from_slice(&data);
            }
        }
    }
}

/// `map`'s `stream_options` made an object that asks for usage (whatever
/// it was: absent, null, a string, an array, an object without it); true
/// when it changed.
fn ask_for_usage(map: &mut serde_json::Map<String, Value>) -> bool {
    match map.get_mut("stream_options") {
        Some(Value::Object(o)) => {
            if o.get("include_usage") == Some(&Value::Bool(true)) {
                false
            } else {
                o.insert("include_usage".into(), Value::Bool(true));
                true
            }
        }
        _ => {
            map.insert(
                "stream_options".into(),
                serde_json::json!({"include_usage": true}),
            );
            true
        }
    }
}

/// Answers one request.
#[allow(
    clippy::too_many_lines,
    reason = "one request's checks in the order they apply, each answered in place"
)]
async fn serve(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
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
    let (index, started_ms, open, limits): (u32, f64, bool, SessionLimits) = {
        let mut st = session.lock();
        let (index, started_ms) = st.begin_step();
        let open = st.open < st.caps.limits.max_open_requests;
        if open {
            st.open += 1;
        }
        (index, started_ms, open, st.caps.limits)
    };
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
        open,
        hold: None,
        prompt: 0,
        priced: false,
        metered: false,
        sent: false,
        free: false,
        done: false,
    };
    let refuse = |mut draft: Draft, trouble: Trouble, why: String| {
        let (status, body) = shape::error_body(shape, trouble, &why);
        draft.step.refused = Some(why);
        let (request, _) = kept(&draft.step.request, REFUSED_TEXT_LIMIT);
        draft.step.request = request;
        draft.step.response = body.clone();
        draft.finish(status);
        full(status, "application/json", body)
    };
    if !open {
        let why = format!(
            "this proposal has {} requests open, the most it may have at once: wait for one to end",
            limits.max_open_requests
        );
        return refuse(draft, Trouble::Busy, why);
    }
    if session.lock().closed {
        return refuse(
            draft,
            Trouble::BadToken,
            "the proposal this key belonged to is over".into(),
        );
    }

    // The body: refused as soon as its length is known to be too much.
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    let too_large = |n: usize| {
        format!(
            "the request body is {n} bytes or more; the model relay takes at most {} (its \
             conversation is too long to relay)",
            limits.max_request_bytes
        )
    };
    let busy = |n: usize| {
        format!(
            "this proposal's requests would hold {n} bytes in the model relay's memory at once, \
             more than the {} it may: wait for one to end",
            limits.max_bytes_in_flight
        )
    };
    if let Some(n) = declared
        && n > limits.max_request_bytes
    {
        return refuse(draft, Trouble::TooLarge, too_large(n));
    }
    let mut held = session::Bytes::new(&session);
    if let Some(n) = declared
        && !held.take(n)
    {
        return refuse(draft, Trouble::Busy, busy(n));
    }
    let bytes = match read_body(
        body,
        &session,
        &mut held,
        declared.is_some(),
        limits.max_request_bytes,
    )
    .await
    {
        Ok(b) => b,
        Err(BodyTrouble::TooLarge(n)) => return refuse(draft, Trouble::TooLarge, too_large(n)),
        Err(BodyTrouble::Busy(n)) => return refuse(draft, Trouble::Busy, busy(n)),
        Err(BodyTrouble::Ended) => {
            return refuse(draft, Trouble::BadToken, "the proposal ended".into());
        }
        Err(BodyTrouble::Broke(e)) => {
            let why = format!("the request body could not be read ({e})");
            return refuse(draft, Trouble::BadRequest, why);
        }
    };
    draft.step.request = kept_redacted(&shared, &bytes, STEP_TEXT_LIMIT);

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
    let reached = session.lock().cap_reached();
    if let Some(refusal) = reached {
        draft.step.cap = Some(refusal.cap);
        return refuse(draft, Trouble::CapReached, refusal.why);
    }
    let mut json: Option<Value> = if route.suffix == "/models" {
        None
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v @ Value::Object(_)) => Some(v),
            Ok(other) => {
                let why = format!(
                    "the request body is JSON but not an object: {}",
                    excerpt(&shared.redact(&other.to_string()))
                );
                return refuse(draft, Trouble::BadRequest, why);
            }
            Err(e) => {
                let why = format!(
                    "the request body is not JSON ({e}): {}",
                    excerpt(&shared.redact(&String::from_utf8_lossy(&bytes)))
                );
                return refuse(draft, Trouble::BadRequest, why);
            }
        }
    };
    // Only the run's models: an agent may not spend on another.
    let models = || {
        shared
            .upstream
            .models
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let model: Option<String> = match json.as_ref().map(|v| v.get("model")) {
        None => None,
        Some(Some(Value::String(m))) if shared.upstream.names(m) => Some(m.clone()),
        Some(Some(Value::String(m))) => {
            let why = format!(
                "the model relay forwards only the run's models ({}); this request names `{}`",
                models(),
                shared.redact(m)
            );
            return refuse(draft, Trouble::UnknownModel, why);
        }
        Some(other) => {
            let why = format!(
                "the request names no model (a string `model`{}); the run's models are {}",
                other.map(|v| format!(", not {v}")).unwrap_or_default(),
                models()
            );
            return refuse(draft, Trouble::BadRequest, why);
        }
    };
    let wants_stream = match json.as_ref().and_then(|v| v.get("stream")) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            let why = format!("`stream` must be true or false, not {other}");
            return refuse(draft, Trouble::BadRequest, why);
        }
    };
    draft.step.streamed = wants_stream;
    let mut changed = false;
    // A Chat Completions stream reports its usage only when asked to: the
    // relay asks, whatever `stream_options` was (SDKs read the extra last
    // chunk, which has no choices).
    if route.protocol == Protocol::ChatCompletions
        && wants_stream
        && let Some(Value::Object(map)) = json.as_mut()
    {
        changed |= ask_for_usage(map);
    }
    let price: Option<Price> = model
        .as_deref()
        .and_then(|m| shared.upstream.prices.lookup(m));
    if route.metered {
        let body = json
            .as_mut()
            .unwrap_or_else(|| unreachable!("metered routes are JSON"));
        let model = model.as_deref().unwrap_or_default();
        let caps = session.lock().caps.clone();
        if price.is_none() && caps.cost_capped() {
            let why = format!(
                "the run's model `{model}` has no price, and this proposal's spend is capped in USD \
                 (the proposer's max_cost_usd or the run's cost budget): give the model a price \
                 (the settings' prices) or cap the proposal in tokens"
            );
            return refuse(draft, Trouble::BadRequest, why);
        }
        let (limit, choices) = match admit::limits(route.protocol, body) {
            Ok(l) => l,
            Err(why) => return refuse(draft, Trouble::BadRequest, why),
        };
        let ask = Ask {
            prompt: admit::prompt_bound(body, bytes.len()),
            limit,
            choices,
            price,
        };
        draft.metered = true;
        draft.priced = price.is_some();
        draft.prompt = ask
            .prompt
            .unwrap_or_else(|| (bytes.len() as u64).saturating_add(admit::PROMPT_OVERHEAD));
        match admission(&session, &ask).await {
            Admitted::Go { hold, limit, alone } => {
                draft.hold = Some((hold, alone));
                if let Some(l) = limit {
                    let reasoning =
                        crate::engine::model::quirks::capabilities(model, route.protocol).reasoning;
                    admit::set_limit(route.protocol, body, l, reasoning);
                    changed = true;
                    draft.note(format!(
                        "its output limit was set to {l} tokens, what the caps leave"
                    ));
                }
            }
            Admitted::Refused(cap, why) => {
                draft.step.cap = Some(cap);
                return refuse(draft, Trouble::CapReached, why);
            }
            Admitted::Waited => {
                let why = format!(
                    "the requests in flight hold all that this proposal's caps leave, and none \
                     ended within {} s: try again",
                    ADMISSION_WAIT.as_secs()
                );
                return refuse(draft, Trouble::Busy, why);
            }
            Admitted::Ended => {
                return refuse(draft, Trouble::BadToken, "the proposal ended".into());
            }
        }
    }
    let mut bytes = bytes;
    if changed && let Some(v) = &json {
        let body = v.to_string();
        draft.step.request = kept_redacted(&shared, body.as_bytes(), STEP_TEXT_LIMIT);
        bytes = body.into_bytes();
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
            let why = format!("the request cannot be relayed: {}", shared.redact(&e));
            return refuse(draft, Trouble::BadRequest, why);
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
    // The body is the client's now; what it holds goes with the request.
    drop(held);
    draft.sent = true;
    let upstream = tokio::select! {
        r = tokio::time::timeout(FIRST_BYTE_TIMEOUT, sent) => match r {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                // Never connected: nothing was spent.
                draft.sent = !e.is_connect();
                return unreachable_endpoint(&shared, draft, shape, &e.to_string());
            }
            Err(_) => {
                let why = format!("no answer within {} s", FIRST_BYTE_TIMEOUT.as_secs());
                return unreachable_endpoint(&shared, draft, shape, &why);
            }
        },
        () = session.cancelled() => {
            return unreachable_endpoint(&shared, draft, shape, "the proposal ended first");
        }
    };
    let status = upstream.status().as_u16();
    let returned = returned_headers(&shared, upstream.headers());
    let is_stream = upstream
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let ok = (200..300).contains(&status);
    // An error status: the endpoint spent nothing.
    draft.free = !ok;
    let meter = Meter {
        shared: Arc::clone(&shared),
        route: route.clone(),
        price,
        ok,
    };
    if is_stream {
        draft.step.streamed = true;
        let tap = UsageTap::new(route.protocol, true);
        stream_back(
            meter,
            draft,
            session,
            upstream,
            status,
            returned,
            Pass::Events,
            tap,
        )
    } else {
        whole_back(meter, draft, session, shape, upstream, status, returned).await
    }
}

/// The response's headers to pass back: hop-by-hop ones left out, a key
/// the endpoint echoed taken out.
fn returned_headers(shared: &Shared, headers: &HeaderMap) -> HeaderMap {
    let mut returned = HeaderMap::new();
    for (name, value) in headers {
        if NOT_RETURNED.contains(&name.as_str()) {
            continue;
        }
        let text = String::from_utf8_lossy(value.as_bytes());
        if shared.finds(&text) {
            if let Ok(v) = HeaderValue::from_str(&shared.redact(&text)) {
                returned.append(name.clone(), v);
            }
        } else {
            returned.append(name.clone(), value.clone());
        }
    }
    returned
}

/// What admission came to.
enum Admitted {
    Go {
        hold: Hold,
        limit: Option<u64>,
        alone: bool,
    },
    Refused(crate::engine::meter::Cap, String),
    /// Waited [`ADMISSION_WAIT`] for room in vain.
    Waited,
    Ended,
}

/// Admits `ask` against its proposal's caps and the run's budget (see
/// `admit.rs`), waiting while requests in flight hold the room it needs.
async fn admission(session: &Session, ask: &Ask) -> Admitted {
    let deadline = tokio::time::Instant::now() + ADMISSION_WAIT;
    loop {
        let changed = session.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let verdict = {
            let mut st = session.lock();
            if st.closed {
                return Admitted::Ended;
            }
            let proposal_idle = st.room();
            let proposal_now = proposal_idle.less(&st.held);
            let (others, alone) = (st.admitted, st.alone);
            let decide = |run_now: Room, run_idle: Room| {
                let rooms = Rooms {
                    proposal_now,
                    proposal_idle,
                    run_now,
                    run_idle,
                };
                let v = admit::decide(ask, &rooms, others, alone);
                let hold = match &v {
                    Verdict::Go { hold, .. } => Some(*hold),
                    _ => None,
                };
                (hold, v)
            };
            let v = match st.caps.run.clone() {
                Some(run) => run.admit(decide),
                None => decide(Room::default(), Room::default()).1,
            };
            if let Verdict::Go { hold, alone, .. } = &v {
                st.held.add(hold);
                st.admitted += 1;
                st.alone |= *alone;
            }
            v
        };
        match verdict {
            Verdict::Go { hold, limit, alone } => return Admitted::Go { hold, limit, alone },
            Verdict::Refuse(cap, why) => return Admitted::Refused(cap, why),
            Verdict::Wait => {
                if tokio::time::Instant::now() >= deadline {
                    return Admitted::Waited;
                }
                // Another proposal's request ending tells this one nothing:
                // look again now and then too.
                tokio::select! {
                    () = &mut changed => {}
                    () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
                    () = session.cancelled() => return Admitted::Ended,
                }
            }
        }
    }
}

/// What is needed to count a reply's usage.
struct Meter {
    shared: Arc<Shared>,
    route: Route,
    price: Option<Price>,
    ok: bool,
}

impl Meter {
    /// The usage a reply reported, priced; marks a reply that said it
    /// spent nothing (an error in a 2xx body).
    fn usage(&self, tap: UsageTap, draft: &mut Draft) -> Option<TokenUsage> {
        let (usage, error) = tap.finish();
        if !self.route.metered || !self.ok {
            return None;
        }
        if error {
            draft.free = true;
        }
        let mut usage = usage?;
        if let Some(price) = &self.price {
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
    draft.note(why);
    draft.step.response = body.clone();
    draft.finish(status);
    full(status, "application/json", body)
}

/// Reads the reply up to [`WHOLE_REPLY_WINDOW`], then answers with it (or,
/// when it broke off or is not JSON, with an error in the protocol's
/// shape); a longer reply is passed on as it comes.
async fn whole_back(
    meter: Meter,
    mut draft: Draft,
    session: Arc<Session>,
    shape: Shape,
    mut upstream: reqwest::Response,
    status: u16,
    returned: HeaderMap,
) -> Response<Body> {
    let shared = Arc::clone(&meter.shared);
    let mut tap = UsageTap::new(meter.route.protocol, false);
    let mut all: Vec<u8> = Vec::new();
    let mut held = session::Bytes::new(&session);
    let broke = loop {
        let next = tokio::select! {
            c = tokio::time::timeout(STALL_TIMEOUT, upstream.chunk()) => c,
            () = session.cancelled() => break Some("the proposal ended first".to_owned()),
        };
        match next {
            Ok(Ok(Some(chunk))) => {
                tap.feed(&chunk);
                let fits = all.len() + chunk.len() <= WHOLE_REPLY_WINDOW && held.take(chunk.len());
                all.extend_from_slice(&chunk);
                if !fits {
                    drop(held);
                    return stream_back(
                        meter,
                        draft,
                        session,
                        upstream,
                        status,
                        returned,
                        Pass::Whole(all),
                        tap,
                    );
                }
            }
            Ok(Ok(None)) => break None,
            Ok(Err(e)) => break Some(e.to_string()),
            Err(_) => break Some(format!("no data for {} s", STALL_TIMEOUT.as_secs())),
        }
    };
    let text = String::from_utf8_lossy(&all);
    let clean = shared.redact(&text);
    let (kept_text, full_len) = kept(&clean, STEP_TEXT_LIMIT);
    draft.step.response = kept_text;
    draft.step.response_bytes = full_len;
    draft.step.usage = meter.usage(tap, &mut draft);
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
        draft.note(why);
        draft.finish(code);
        return full(code, "application/json", body);
    }
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

/// Sends `out` to the agent, unless it hung up (then the reply is read on:
/// its tokens are spent).
async fn pass_on(
    tx: &mut futures::channel::mpsc::Sender<Result<Frame<Bytes>, Infallible>>,
    out: Vec<u8>,
    agent_gone: &mut bool,
    at_boundary: &mut bool,
) {
    if out.is_empty() {
        return;
    }
    *at_boundary = out.ends_with(b"\n\n") || out.ends_with(b"\r\n\r\n");
    if !*agent_gone && tx.send(Ok(Frame::data(Bytes::from(out)))).await.is_err() {
        *agent_gone = true;
    }
}

/// How a reply is passed on as it comes.
enum Pass {
    /// Server-sent events: a break ends with the protocol's error event.
    Events,
    /// A whole reply too large to hold, its first part read already.
    Whole(Vec<u8>),
}

/// Answers at once with a body fed chunk by chunk as the endpoint sends
/// it, the keys taken out across chunks; the step is kept when it ends (or
/// breaks off: then a stream ends with the protocol's error event).
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one request in flight, handed on"
)]
fn stream_back(
    meter: Meter,
    mut draft: Draft,
    session: Arc<Session>,
    mut upstream: reqwest::Response,
    status: u16,
    returned: HeaderMap,
    pass: Pass,
    mut tap: UsageTap,
) -> Response<Body> {
    let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(32);
    let wire = draft.step.wire;
    tokio::spawn(async move {
        let shared = Arc::clone(&meter.shared);
        let mut redact = shared.redactor.stream();
        // The first bytes, for the step.
        let mut head: Vec<u8> = Vec::new();
        let keep = STEP_TEXT_LIMIT + CUT_MARGIN;
        let mut total = 0usize;
        let mut agent_gone = false;
        // Whether what the agent got so far ends between two events.
        let mut at_boundary = true;
        let events = matches!(pass, Pass::Events);
        if let Pass::Whole(first) = pass {
            total += first.len();
            head.extend_from_slice(&first[..first.len().min(keep)]);
            let out = redact.push(&first);
            pass_on(&mut tx, out, &mut agent_gone, &mut at_boundary).await;
        }
        let broke = loop {
            let next = tokio::select! {
                c = tokio::time::timeout(STALL_TIMEOUT, upstream.chunk()) => c,
                () = session.cancelled() => break Some("the proposal ended first".to_owned()),
            };
            match next {
                Ok(Ok(Some(chunk))) => {
                    total += chunk.len();
                    if head.len() < keep {
                        let n = (keep - head.len()).min(chunk.len());
                        head.extend_from_slice(&chunk[..n]);
                    }
                    tap.feed(&chunk);
                    let out = redact.push(&chunk);
                    pass_on(&mut tx, out, &mut agent_gone, &mut at_boundary).await;
                }
                Ok(Ok(None)) => break None,
                Ok(Err(e)) => break Some(e.to_string()),
                Err(_) => break Some(format!("no data for {} s", STALL_TIMEOUT.as_secs())),
            }
        };
        let tail = redact.finish();
        pass_on(&mut tx, tail, &mut agent_gone, &mut at_boundary).await;
        draft.step.response = kept_redacted(&shared, &head, STEP_TEXT_LIMIT);
        draft.step.response_bytes = (total > STEP_TEXT_LIMIT).then_some(total as u64);
        draft.step.usage = meter.usage(tap, &mut draft);
        if let Some(why) = broke {
            let why = format!(
                "the model endpoint's {} broke off after {total} bytes ({})",
                if events { "stream" } else { "reply" },
                shared.redact(&why)
            );
            if events && !agent_gone {
                let mut event = shape::error_event(wire, &why);
                if !at_boundary {
                    // End the broken-off event first.
                    event.insert_str(0, "\n\n");
                }
                tx.send(Ok(Frame::data(Bytes::from(event)))).await.ok();
            }
            draft.note(why);
        }
        draft.finish(status);
    });
    let mut response = Response::new(StreamBody::new(rx).boxed_unsync());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    *response.headers_mut() = returned;
    response
}
