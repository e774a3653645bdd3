//! A model endpoint on 127.0.0.1 that speaks the three protocols coding
//! agents use, in their real shapes, streamed (server-sent events) or not:
//! OpenAI Chat Completions (`…/chat/completions`), the OpenAI Responses API
//! (`…/responses`) and the Anthropic Messages API (`…/messages`), plus
//! `GET …/models` and Anthropic's `…/messages/count_tokens`.
//!
//! Each model request gets the next [`Turn`] of its script (the last one
//! again once the script is spent), or what a responder function makes of
//! the request: text, tool calls, and the usage the reply reports. A turn
//! may also be a raw reply (any status and body) or one cut off mid-way.
//! Every request is kept with its headers, so a test can show which key
//! arrived.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// Token counts a reply reports. Each protocol writes them its own way
/// (Anthropic's `input_tokens` leaves out the cached ones); read back, all
/// three give `prompt` / `completion` / `cached`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// One tool call in a reply.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// What one model request is answered with.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    /// A reply in the request's protocol.
    Reply {
        text: String,
        tool_calls: Vec<ToolCall>,
        usage: Usage,
    },
    /// Exactly this status, content type and body.
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    /// The reply the request would get as `Reply`, its connection closed
    /// after the first `bytes` bytes of the body.
    CutOff {
        text: String,
        usage: Usage,
        bytes: usize,
    },
    /// This status and content type, the body sent in `pieces`, each one
    /// chunk of a chunked body, flushed apart (a reader sees each on its
    /// own: a chunk boundary splits what the pieces split).
    Pieces {
        status: u16,
        content_type: String,
        pieces: Vec<String>,
    },
    /// A 200 reply of `content_type` whose body starts with `first` and
    /// then stalls: the connection stays open, sending nothing more, until
    /// the peer closes it (or two minutes pass).
    Stall { content_type: String, first: String },
}

impl Turn {
    /// A text reply.
    pub fn text(text: &str, prompt: u64, completion: u64) -> Turn {
        Turn::Reply {
            text: text.to_owned(),
            tool_calls: Vec::new(),
            usage: Usage {
                prompt,
                completion,
                cached: 0,
            },
        }
    }

    /// A reply that calls one tool.
    pub fn tool(name: &str, arguments: Value, prompt: u64, completion: u64) -> Turn {
        Turn::Reply {
            text: String::new(),
            tool_calls: vec![ToolCall {
                name: name.to_owned(),
                arguments,
            }],
            usage: Usage {
                prompt,
                completion,
                cached: 0,
            },
        }
    }
}

/// One request the upstream received.
#[derive(Clone, Debug, Default)]
pub struct Received {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Makes the turn of a request: the request and its number among the
/// model requests (0-based).
pub type Responder = Arc<dyn Fn(&Received, usize) -> Turn + Send + Sync>;

pub struct ScriptedUpstream {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    model_requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl ScriptedUpstream {
    /// Answers model requests with `turns` in order.
    pub fn start(turns: Vec<Turn>) -> Self {
        assert!(!turns.is_empty(), "a script needs a turn");
        Self::with(Arc::new(move |_, n| turns[n.min(turns.len() - 1)].clone()))
    }

    /// Answers model requests with what `responder` makes of each.
    pub fn with(responder: Responder) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the scripted upstream");
        let addr = listener.local_addr().expect("its address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let model_requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (kept, count, stopped) = (
            Arc::clone(&received),
            Arc::clone(&model_requests),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                stream.set_nodelay(true).ok();
                let (kept, count, responder) = (
                    Arc::clone(&kept),
                    Arc::clone(&count),
                    Arc::clone(&responder),
                );
                std::thread::spawn(move || connection(stream, &kept, &count, &responder));
            }
        });
        Self {
            addr,
            received,
            model_requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL of an endpoint setting.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// How many model requests (chat, responses, messages) it answered.
    pub fn model_requests(&self) -> u64 {
        self.model_requests.load(Ordering::Relaxed)
    }
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees the flag.
        TcpStream::connect(self.addr).ok();
    }
}

/// Serves the requests of one kept-alive connection.
fn connection(
    stream: TcpStream,
    kept: &Mutex<Vec<Received>>,
    count: &AtomicU64,
    responder: &Responder,
) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut out = stream;
    loop {
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        kept.lock().unwrap().push(request.clone());
        let path = request.path.split('?').next().unwrap_or_default();
        let path = path.strip_prefix("/v1").unwrap_or(path);
        let keep_alive = match (request.method.as_str(), path) {
            ("POST", "/chat/completions" | "/responses" | "/messages") => {
                let n = count.fetch_add(1, Ordering::Relaxed) as usize;
                let turn = responder(&request, n);
                answer_model(&mut out, path, &request.json(), &turn)
            }
            ("POST", "/messages/count_tokens") => {
                let tokens = request.body.len() as u64 / 4;
                write_json(&mut out, 200, &json!({"input_tokens": tokens}))
            }
            ("GET", "/models") => write_json(
                &mut out,
                200,
                &json!({"object": "list", "data": [
                    {"id": "scripted-model", "object": "model", "created": 1_700_000_000, "owned_by": "scripted"}
                ]}),
            ),
            _ => write_json(
                &mut out,
                404,
                &json!({"error": {"message": format!("no route {} {}", request.method, request.path),
                    "type": "invalid_request_error", "param": null, "code": null}}),
            ),
        };
        if !keep_alive {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0u8; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body = vec![0u8; n];
        reader.read_exact(&mut body).ok()?;
    }
    Some(Received {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn write_json(out: &mut TcpStream, status: u16, body: &Value) -> bool {
    write_whole(out, status, "application/json", body.to_string().as_bytes())
}

fn write_whole(out: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) -> bool {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nx-request-id: req_scripted\r\n\r\n",
        reason(status),
        body.len()
    );
    // One write: a header and a body written apart wait on the peer's
    // delayed acknowledgement (40 ms) when Nagle's algorithm holds the second.
    let mut all = head.into_bytes();
    all.extend_from_slice(body);
    out.write_all(&all).is_ok() && out.flush().is_ok()
}

/// A chunked body, one chunk per piece, each flushed (and the socket given
/// a moment to send it) before the next; the connection closed at its end.
fn write_pieces(out: &mut TcpStream, status: u16, content_type: &str, pieces: &[String]) -> bool {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        reason(status)
    );
    if out.write_all(head.as_bytes()).is_err() || out.flush().is_err() {
        return false;
    }
    for piece in pieces {
        let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
        if out.write_all(chunk.as_bytes()).is_err() || out.flush().is_err() {
            return false;
        }
        // Apart on the wire: the next piece is a segment of its own.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    out.write_all(b"0\r\n\r\n").ok();
    out.flush().ok();
    false
}

/// A reply that sends `first` and then nothing, until the peer hangs up.
fn write_stall(out: &mut TcpStream, content_type: &str, first: &str) -> bool {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n{first}"
    );
    if out.write_all(head.as_bytes()).is_err() || out.flush().is_err() {
        return false;
    }
    // Wait for the peer to close (a read of 0 bytes or an error), bounded.
    out.set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .ok();
    let mut buf = [0u8; 1024];
    loop {
        match out.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// Answers a model request; false when the connection is to be closed.
fn answer_model(out: &mut TcpStream, path: &str, request: &Value, turn: &Turn) -> bool {
    let model = request["model"].as_str().unwrap_or("scripted-model");
    let stream = request["stream"].as_bool().unwrap_or(false);
    let (text, tool_calls, usage, cut) = match turn {
        Turn::Raw {
            status,
            content_type,
            body,
        } => return write_whole(out, *status, content_type, body.as_bytes()),
        Turn::Pieces {
            status,
            content_type,
            pieces,
        } => return write_pieces(out, *status, content_type, pieces),
        Turn::Stall {
            content_type,
            first,
        } => return write_stall(out, content_type, first),
        Turn::Reply {
            text,
            tool_calls,
            usage,
        } => (text.as_str(), tool_calls.as_slice(), *usage, None),
        Turn::CutOff { text, usage, bytes } => (text.as_str(), &[][..], *usage, Some(*bytes)),
    };
    let include_usage = request["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false);
    let tag = reply_tag(request);
    let body = match (path, stream) {
        ("/chat/completions", false) => chat(tag, model, text, tool_calls, usage).to_string(),
        ("/chat/completions", true) => {
            chat_stream(tag, model, text, tool_calls, usage, include_usage)
        }
        ("/responses", false) => {
            response(tag, model, text, tool_calls, usage, "completed").to_string()
        }
        ("/responses", true) => responses_stream(tag, model, text, tool_calls, usage),
        (_, false) => message(tag, model, text, tool_calls, usage).to_string(),
        (_, true) => messages_stream(tag, model, text, tool_calls, usage),
    };
    let body = body.into_bytes();
    if let Some(n) = cut {
        // Promise the whole body, send part of it, hang up.
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
            if stream {
                "text/event-stream"
            } else {
                "application/json"
            },
            body.len()
        );
        out.write_all(head.as_bytes()).ok();
        out.write_all(&body[..n.min(body.len())]).ok();
        out.flush().ok();
        return false;
    }
    if !stream {
        return write_whole(out, 200, "application/json", &body);
    }
    // A stream: event by event, the connection closed at its end.
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if out.write_all(head.as_bytes()).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    for event in text.split_inclusive("\n\n") {
        if out.write_all(event.as_bytes()).is_err() || out.flush().is_err() {
            return false;
        }
    }
    false
}

/// The tag of a reply's tool-call ids: a hash of the request, so that the
/// calls of different requests have different ids, as real ones do (an
/// agent may tell tool calls apart by id: Claude Code loops when two
/// replies reuse one), and the same request gets the same reply (a test
/// may compare a reply sent directly with one through the relay).
fn reply_tag(request: &Value) -> u64 {
    // FNV-1a, 32 bits.
    request.to_string().bytes().fold(0x811c_9dc5_u64, |h, b| {
        ((h ^ u64::from(b)).wrapping_mul(0x0100_0193)) & 0xffff_ffff
    })
}

fn call_id(tag: u64, i: usize) -> String {
    format!("call_{tag:08x}_{i}")
}

fn item_id(kind: &str, tag: u64, i: usize) -> String {
    format!("{kind}_{tag:08x}_{i}")
}

fn chat_usage(u: Usage) -> Value {
    json!({"prompt_tokens": u.prompt, "completion_tokens": u.completion,
        "total_tokens": u.prompt + u.completion,
        "prompt_tokens_details": {"cached_tokens": u.cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}})
}

fn chat(tag: u64, model: &str, text: &str, calls: &[ToolCall], u: Usage) -> Value {
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }, "refusal": null});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({"id": call_id(tag, i), "type": "function",
                "function": {"name": c.name, "arguments": c.arguments.to_string()}})
            })
            .collect();
    }
    json!({"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1_700_000_000,
        "model": model, "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": message, "logprobs": null,
            "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": chat_usage(u)})
}

/// `text` in pieces of at most 16 characters.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(16).map(|c| c.iter().collect()).collect()
}

fn chat_stream(
    tag: u64,
    model: &str,
    text: &str,
    calls: &[ToolCall],
    u: Usage,
    include_usage: bool,
) -> String {
    let chunk = |choices: Value, usage: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                "created": 1_700_000_000, "model": model, "system_fingerprint": "fp_scripted",
                "choices": choices, "usage": usage})
        )
    };
    let mut out = chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": null}, "finish_reason": null}]),
        Value::Null,
    );
    for p in pieces(text) {
        out += &chunk(
            json!([{"index": 0, "delta": {"content": p}, "finish_reason": null}]),
            Value::Null,
        );
    }
    for (i, c) in calls.iter().enumerate() {
        out += &chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": i, "id": call_id(tag, i), "type": "function",
                "function": {"name": c.name, "arguments": ""}}]}, "finish_reason": null}]),
            Value::Null,
        );
        for p in pieces(&c.arguments.to_string()) {
            out += &chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": p}}]}, "finish_reason": null}]),
                Value::Null,
            );
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out += &chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        Value::Null,
    );
    if include_usage {
        out += &chunk(json!([]), chat_usage(u));
    }
    out + "data: [DONE]\n\n"
}

fn response_output(tag: u64, text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut output = Vec::new();
    if !text.is_empty() {
        output.push(json!({"type": "message", "id": "msg_scripted", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}));
    }
    for (i, c) in calls.iter().enumerate() {
        output.push(
            json!({"type": "function_call", "id": item_id("fc", tag, i), "call_id": call_id(tag, i),
            "name": c.name, "arguments": c.arguments.to_string(), "status": "completed"}),
        );
    }
    output
}

fn response(
    tag: u64,
    model: &str,
    text: &str,
    calls: &[ToolCall],
    u: Usage,
    status: &str,
) -> Value {
    json!({"id": "resp_scripted", "object": "response", "created_at": 1_700_000_000,
        "status": status, "error": null, "incomplete_details": null, "model": model,
        "output": if status == "completed" { response_output(tag, text, calls) } else { vec![] },
        "usage": if status == "completed" { json!({"input_tokens": u.prompt,
            "input_tokens_details": {"cached_tokens": u.cached},
            "output_tokens": u.completion, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.prompt + u.completion}) } else { Value::Null }})
}

fn responses_stream(tag: u64, model: &str, text: &str, calls: &[ToolCall], u: Usage) -> String {
    let mut seq = 0u64;
    let mut out = String::new();
    let mut event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        out += &format!("event: {kind}\ndata: {data}\n\n");
    };
    event(
        "response.created",
        json!({"response": response(tag, model, text, calls, u, "in_progress")}),
    );
    let mut index = 0;
    if !text.is_empty() {
        event(
            "response.output_item.added",
            json!({"output_index": index,
            "item": {"type": "message", "id": "msg_scripted", "status": "in_progress", "role": "assistant", "content": []}}),
        );
        event(
            "response.content_part.added",
            json!({"item_id": "msg_scripted", "output_index": index,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        );
        for p in pieces(text) {
            event(
                "response.output_text.delta",
                json!({"item_id": "msg_scripted", "output_index": index,
                "content_index": 0, "delta": p}),
            );
        }
        event(
            "response.output_text.done",
            json!({"item_id": "msg_scripted", "output_index": index,
            "content_index": 0, "text": text}),
        );
        event(
            "response.output_item.done",
            json!({"output_index": index,
            "item": response_output(tag, text, &[])[0]}),
        );
        index += 1;
    }
    for (i, c) in calls.iter().enumerate() {
        let id = item_id("fc", tag, i);
        event(
            "response.output_item.added",
            json!({"output_index": index,
            "item": {"type": "function_call", "id": id, "call_id": call_id(tag, i), "name": c.name,
                "arguments": "", "status": "in_progress"}}),
        );
        for p in pieces(&c.arguments.to_string()) {
            event(
                "response.function_call_arguments.delta",
                json!({"item_id": id,
                "output_index": index, "delta": p}),
            );
        }
        event(
            "response.function_call_arguments.done",
            json!({"item_id": id,
            "output_index": index, "arguments": c.arguments.to_string()}),
        );
        event(
            "response.output_item.done",
            json!({"output_index": index,
            "item": response_output(tag, "", calls)[i]}),
        );
        index += 1;
    }
    event(
        "response.completed",
        json!({"response": response(tag, model, text, calls, u, "completed")}),
    );
    out
}

fn message_content(tag: u64, text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, c) in calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": item_id("toolu", tag, i), "name": c.name, "input": c.arguments}));
    }
    content
}

fn anthropic_usage(u: Usage, output: u64) -> Value {
    json!({"input_tokens": u.prompt - u.cached, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached, "output_tokens": output})
}

fn message(tag: u64, model: &str, text: &str, calls: &[ToolCall], u: Usage) -> Value {
    json!({"id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
        "content": message_content(tag, text, calls),
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "stop_sequence": null, "usage": anthropic_usage(u, u.completion)})
}

fn messages_stream(tag: u64, model: &str, text: &str, calls: &[ToolCall], u: Usage) -> String {
    let mut out = String::new();
    let mut event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        out += &format!("event: {kind}\ndata: {data}\n\n");
    };
    event(
        "message_start",
        json!({"message": {"id": "msg_scripted", "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": anthropic_usage(u, 1)}}),
    );
    event("ping", json!({}));
    let mut index = 0;
    if !text.is_empty() {
        event(
            "content_block_start",
            json!({"index": index, "content_block": {"type": "text", "text": ""}}),
        );
        for p in pieces(text) {
            event(
                "content_block_delta",
                json!({"index": index, "delta": {"type": "text_delta", "text": p}}),
            );
        }
        event("content_block_stop", json!({"index": index}));
        index += 1;
    }
    for (i, c) in calls.iter().enumerate() {
        event(
            "content_block_start",
            json!({"index": index, "content_block": {"type": "tool_use",
            "id": item_id("toolu", tag, i), "name": c.name, "input": {}}}),
        );
        for p in pieces(&c.arguments.to_string()) {
            event(
                "content_block_delta",
                json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
            );
        }
        event("content_block_stop", json!({"index": index}));
        index += 1;
    }
    event(
        "message_delta",
        json!({"delta": {"stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
            "stop_sequence": null}, "usage": {"output_tokens": u.completion}}),
    );
    event("message_stop", json!({}));
    out
}
