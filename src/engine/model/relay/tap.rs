//! A reply's usage, read as the reply goes by, however large it is: the
//! relay never holds a whole reply to count it.
//!
//! A whole reply is one JSON object whose top-level `usage` the tap keeps
//! (and whether it has an `error`); a streamed one is server-sent events,
//! of which the tap keeps, for each event, only its `type`, `usage`,
//! `response.usage`, `message.usage` and `error` (a JSON scanner that
//! follows the nesting and copies out those values, each at most
//! [`VALUE_LIMIT`] bytes), and of the events that report usage only the
//! first and last few. The protocol's own reader then reads the usage from
//! those small events as it would from the whole stream.

use serde_json::Value;

use crate::engine::model::wire::sse::Event;
use crate::engine::model::wire::{Protocol, anthropic, chat, responses};
use crate::engine::usage::TokenUsage;

/// Longest value the tap copies out (a usage object is a few hundred
/// bytes).
const VALUE_LIMIT: usize = 64 << 10;
/// Longest object key, event name or field name the tap reads.
const NAME_LIMIT: usize = 256;
/// Events that report usage kept from a stream's start and its end.
const FIRST_EVENTS: usize = 4;
const LAST_EVENTS: usize = 12;
/// Deepest nesting the scanner follows (deeper is passed over).
const MAX_DEPTH: usize = 256;

/// Where in a JSON value the scanner is.
#[derive(Clone, Debug)]
enum Frame {
    /// An object: the key of the value being read (after its colon), or
    /// none while a key is awaited.
    Object(Option<String>),
    Array,
}

/// A value being copied out.
struct Capture {
    path: Vec<String>,
    /// The stack's depth where the value sits.
    depth: usize,
    bytes: Vec<u8>,
    overflow: bool,
}

/// A JSON scanner that copies out the values at the paths `wanted` says.
struct JsonTap {
    stack: Vec<Frame>,
    in_string: bool,
    escape: bool,
    /// The string being read is an object's key.
    key: Option<Vec<u8>>,
    in_scalar: bool,
    capture: Option<Capture>,
    found: Vec<(Vec<String>, Vec<u8>)>,
    wanted: fn(&[String]) -> bool,
    /// Bytes past the nesting limit: read no more.
    gave_up: bool,
}

impl JsonTap {
    fn new(wanted: fn(&[String]) -> bool) -> Self {
        Self {
            stack: Vec::new(),
            in_string: false,
            escape: false,
            key: None,
            in_scalar: false,
            capture: None,
            found: Vec::new(),
            wanted,
            gave_up: false,
        }
    }

    /// The path of the value that starts now.
    fn path(&self) -> Vec<String> {
        self.stack
            .iter()
            .map(|f| match f {
                Frame::Object(k) => k.clone().unwrap_or_default(),
                Frame::Array => "[]".to_owned(),
            })
            .collect()
    }

    fn value_starts(&mut self, b: u8) {
        if self.capture.is_none() && (self.wanted)(&self.path()) {
            self.capture = Some(Capture {
                path: self.path(),
                depth: self.stack.len(),
                bytes: vec![b],
                overflow: false,
            });
        }
    }

    fn value_ends(&mut self) {
        if self
            .capture
            .as_ref()
            .is_some_and(|c| c.depth == self.stack.len())
            && let Some(c) = self.capture.take()
            && !c.overflow
        {
            self.found.push((c.path, c.bytes));
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.gave_up {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if let Some(c) = &mut self.capture {
            if c.bytes.len() < VALUE_LIMIT {
                c.bytes.push(b);
            } else {
                c.overflow = true;
            }
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    if let Some(Frame::Object(k)) = self.stack.last_mut() {
                        *k = Some(String::from_utf8_lossy(&key).into_owned());
                    }
                } else {
                    self.value_ends();
                }
                return;
            }
            if let Some(key) = &mut self.key
                && key.len() < NAME_LIMIT
            {
                key.push(b);
            }
            return;
        }
        if self.in_scalar {
            if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                self.in_scalar = false;
                if let Some(c) = &mut self.capture
                    && c.depth == self.stack.len()
                {
                    c.bytes.pop();
                }
                self.value_ends();
            } else {
                return;
            }
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b':' => {}
            b'"' => {
                let awaits_key = matches!(self.stack.last(), Some(Frame::Object(None)));
                if awaits_key {
                    self.key = Some(Vec::new());
                } else {
                    self.value_starts(b);
                }
                self.in_string = true;
            }
            b',' => {
                if let Some(Frame::Object(k)) = self.stack.last_mut() {
                    *k = None;
                }
            }
            b'{' | b'[' => {
                self.value_starts(b);
                if self.stack.len() >= MAX_DEPTH {
                    self.gave_up = true;
                    return;
                }
                self.stack.push(if b == b'{' {
                    Frame::Object(None)
                } else {
                    Frame::Array
                });
            }
            b'}' | b']' => {
                self.stack.pop();
                self.value_ends();
            }
            _ => {
                self.value_starts(b);
                self.in_scalar = true;
            }
        }
    }

    /// The values copied out, as one object holding them at their paths.
    fn finish(mut self) -> Value {
        if self.in_scalar {
            self.in_scalar = false;
            self.value_ends();
        }
        let mut out = Value::Object(Default::default());
        for (path, bytes) in self.found {
            let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let mut at = &mut out;
            for (i, key) in path.iter().enumerate() {
                let Value::Object(map) = at else { break };
                if i + 1 == path.len() {
                    map.insert(key.clone(), v);
                    break;
                }
                at = map
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Default::default()));
            }
        }
        out
    }
}

/// A whole reply's values: `usage` and `error` at the top.
fn whole_wanted(path: &[String]) -> bool {
    matches!(path, [k] if k == "usage" || k == "error")
}

/// An event's values: its `type`, `usage`, `error`, and the usage nested
/// in `response` (the Responses API) and `message` (Anthropic).
fn event_wanted(path: &[String]) -> bool {
    match path {
        [k] => k == "type" || k == "usage" || k == "error",
        [outer, k] => (outer == "response" || outer == "message") && k == "usage",
        _ => false,
    }
}

/// Reads a reply's usage as it goes by (see the module's doc).
pub struct UsageTap {
    protocol: Protocol,
    form: Form,
}

enum Form {
    Whole(JsonTap),
    Events(EventTap),
}

/// The server-sent events splitter.
struct EventTap {
    /// The current line's field name, until its colon.
    field: Vec<u8>,
    /// After the colon: the field's value goes to `data` or `name`.
    in_value: Option<Field>,
    /// Skip the one space after a colon.
    skip_space: bool,
    /// A `\r` ended the last line: a `\n` right after it is the same end.
    after_cr: bool,
    name: Vec<u8>,
    data: Option<JsonTap>,
    kept_first: Vec<Event>,
    kept_last: std::collections::VecDeque<Event>,
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Data,
    Event,
    Other,
}

impl EventTap {
    fn new() -> Self {
        Self {
            field: Vec::new(),
            in_value: None,
            skip_space: false,
            after_cr: false,
            name: Vec::new(),
            data: None,
            kept_first: Vec::new(),
            kept_last: std::collections::VecDeque::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            if b == b'\n' || b == b'\r' {
                self.after_cr = b == b'\r';
                self.line_ends();
                continue;
            }
            match self.in_value {
                None => {
                    if b == b':' {
                        self.in_value = Some(match self.field.as_slice() {
                            b"data" => Field::Data,
                            b"event" => Field::Event,
                            _ => Field::Other,
                        });
                        if self.in_value == Some(Field::Data) {
                            match &mut self.data {
                                // A second data line joins the first.
                                Some(tap) => tap.feed(b"\n"),
                                None => self.data = Some(JsonTap::new(event_wanted)),
                            }
                        }
                        self.skip_space = true;
                    } else if self.field.len() < NAME_LIMIT {
                        self.field.push(b);
                    }
                }
                Some(field) => {
                    if self.skip_space {
                        self.skip_space = false;
                        if b == b' ' {
                            continue;
                        }
                    }
                    match field {
                        Field::Data => {
                            if let Some(tap) = &mut self.data {
                                tap.byte(b);
                            }
                        }
                        Field::Event => {
                            if self.name.len() < NAME_LIMIT {
                                self.name.push(b);
                            }
                        }
                        Field::Other => {}
                    }
                }
            }
        }
    }

    fn line_ends(&mut self) {
        let empty = self.field.is_empty() && self.in_value.is_none();
        if self.in_value.is_none() && self.field == b"data" {
            // `data` with no colon: an empty data line.
            match &mut self.data {
                Some(tap) => tap.feed(b"\n"),
                None => self.data = Some(JsonTap::new(event_wanted)),
            }
        }
        self.field.clear();
        self.in_value = None;
        if empty {
            self.dispatch();
        }
    }

    fn dispatch(&mut self) {
        let name = String::from_utf8_lossy(&std::mem::take(&mut self.name)).into_owned();
        let Some(tap) = self.data.take() else { return };
        let data = tap.finish();
        let reports = |v: Option<&Value>| v.is_some_and(|u| !u.is_null());
        let keep = reports(data.get("usage"))
            || reports(data.get("error"))
            || reports(data.get("response").and_then(|r| r.get("usage")))
            || reports(data.get("message").and_then(|m| m.get("usage")));
        if !keep {
            return;
        }
        let event = Event {
            event: name,
            data: data.to_string(),
        };
        if self.kept_first.len() < FIRST_EVENTS {
            self.kept_first.push(event);
        } else {
            if self.kept_last.len() == LAST_EVENTS {
                self.kept_last.pop_front();
            }
            self.kept_last.push_back(event);
        }
    }

    fn events(mut self) -> Vec<Event> {
        // A stream whose last event lacks its blank line still counts.
        self.line_ends();
        self.dispatch();
        let mut all = self.kept_first;
        all.extend(self.kept_last);
        all
    }
}

impl UsageTap {
    /// A tap for a reply of `protocol`, server-sent events when `streamed`.
    pub fn new(protocol: Protocol, streamed: bool) -> Self {
        Self {
            protocol,
            form: if streamed {
                Form::Events(EventTap::new())
            } else {
                Form::Whole(JsonTap::new(whole_wanted))
            },
        }
    }

    /// The next bytes of the reply.
    pub fn feed(&mut self, bytes: &[u8]) {
        match &mut self.form {
            Form::Whole(tap) => tap.feed(bytes),
            Form::Events(tap) => tap.feed(bytes),
        }
    }

    /// What the reply reports: its usage, and whether it is an error with
    /// no usage (a server that answers an error with 200: nothing spent).
    pub fn finish(self) -> (Option<TokenUsage>, bool) {
        match self.form {
            Form::Whole(tap) => {
                let v = tap.finish();
                let usage = v.get("usage").and_then(|u| match self.protocol {
                    Protocol::ChatCompletions => chat::usage(u),
                    Protocol::Responses => responses::usage(u),
                    Protocol::AnthropicMessages => anthropic::usage(u),
                });
                let error = usage.is_none() && v.get("error").is_some_and(|e| !e.is_null());
                (usage, error)
            }
            Form::Events(tap) => {
                let events = tap.events();
                let usage = match self.protocol {
                    Protocol::ChatCompletions => chat::stream_usage(&events),
                    Protocol::Responses => responses::stream_usage(&events),
                    Protocol::AnthropicMessages => anthropic::stream_usage(&events),
                };
                (usage, false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(protocol: Protocol, streamed: bool, body: &str, piece: usize) -> Option<TokenUsage> {
        let mut tap = UsageTap::new(protocol, streamed);
        for chunk in body.as_bytes().chunks(piece) {
            tap.feed(chunk);
        }
        tap.finish().0
    }

    #[test]
    fn the_tap_reads_what_the_whole_body_reads_in_any_pieces() {
        let whole = json!({"id": "x", "choices": [{"message": {"content": "a \"usage\": {} b", "usage": 5}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}}})
        .to_string();
        let chat_stream = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n\
             data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n";
        let anthropic_stream = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\r\n\r\n\
             event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"usage\"}}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\ndata: \"usage\":{\"output_tokens\":30}}\n\n";
        let responses_stream = format!(
            "event: response.completed\ndata: {}\n\n",
            json!({"type": "response.completed", "response": {"output": [{"content": [{"text": "t".repeat(200_000)}]}],
                "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}})
        );
        for piece in [1, 3, 7, 64, 1 << 20] {
            for (protocol, streamed, body) in [
                (Protocol::ChatCompletions, false, whole.as_str()),
                (Protocol::ChatCompletions, true, chat_stream),
                (Protocol::AnthropicMessages, true, anthropic_stream),
                (Protocol::Responses, true, responses_stream.as_str()),
            ] {
                let want = protocol.usage_of(body, streamed);
                assert!(want.is_some(), "{body}");
                assert_eq!(
                    read(protocol, streamed, body, piece),
                    want,
                    "{protocol:?} in pieces of {piece}"
                );
            }
        }
    }

    #[test]
    fn no_usage_and_errors_are_told_apart() {
        let mut tap = UsageTap::new(Protocol::ChatCompletions, false);
        tap.feed(br#"{"error": {"message": "overloaded"}}"#);
        assert_eq!(tap.finish(), (None, true));
        let mut tap = UsageTap::new(Protocol::ChatCompletions, false);
        tap.feed(br#"{"choices": [], "usage": null}"#);
        assert_eq!(tap.finish(), (None, false));
        assert_eq!(
            read(
                Protocol::ChatCompletions,
                true,
                "data: {\"choices\":[]}\n\n",
                5
            ),
            None
        );
        // Nesting past the limit is passed over, not followed.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(read(Protocol::ChatCompletions, false, &deep, 4096), None);
    }
}
