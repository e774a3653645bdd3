//! The Anthropic Messages API: `POST {base}/messages` with the system prompt
//! apart from `messages`, a required `max_tokens`, the key in `x-api-key`
//! and the version in `anthropic-version`. The reply's `content` blocks of
//! type `text` are the answer (`thinking` blocks are not). Streamed, it is
//! `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta` (the stop reason and the output count), `message_stop`,
//! with `ping`s between and an `error` event (`overloaded_error`...) when it
//! fails midway. Usage: `input_tokens` counts only the input after the last
//! cache breakpoint; `cache_read_input_tokens` and
//! `cache_creation_input_tokens` count the rest.

use serde_json::{Value, json};

use super::sse::Event;
use super::{Parsed, ReplyError, WireRequest, json, server_error, u64_at};
use crate::engine::usage::TokenUsage;

/// The `anthropic-version` header every request carries.
pub const VERSION: &str = "2023-06-01";
/// `max_tokens` when none is configured (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body. With `cache`, the system prompt (the stable prefix) is
/// a text block marked `cache_control: ephemeral`, so later requests read it
/// from the cache.
pub fn body(r: &WireRequest<'_>) -> Value {
    let s = r.sampling;
    let mut body = json!({
        "model": r.model,
        "max_tokens": s.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": [{"role": "user", "content": r.user}],
    });
    if let Value::Object(map) = &mut body {
        if !r.system.is_empty() {
            let system = if r.cache {
                json!([{"type": "text", "text": r.system, "cache_control": {"type": "ephemeral"}}])
            } else {
                json!(r.system)
            };
            map.insert("system".into(), system);
        }
        if let Some(t) = s.temperature {
            map.insert("temperature".into(), json!(t));
        }
        if let Some(p) = s.top_p {
            map.insert("top_p".into(), json!(p));
        }
        if r.stream {
            map.insert("stream".into(), json!(true));
        }
    }
    body
}

/// The token usage of a `usage` object; `prompt_tokens` is all the input,
/// cached and cache-written included.
pub fn usage(u: &Value) -> Option<TokenUsage> {
    let input = u.get("input_tokens").and_then(Value::as_u64)?;
    let read = u64_at(u, &["cache_read_input_tokens"]);
    let write = u64_at(u, &["cache_creation_input_tokens"]);
    Some(TokenUsage {
        prompt_tokens: input + read + write,
        completion_tokens: u64_at(u, &["output_tokens"]),
        cached_tokens: read,
        cache_write_tokens: write,
        ..TokenUsage::default()
    })
}

fn text_of(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Reads a whole reply (a message object).
pub fn parse(body: &str) -> Result<Parsed, ReplyError> {
    let v = json(body)?;
    if let Some(e) = server_error(&v) {
        return Err(e);
    }
    let content = v.get("content").ok_or(ReplyError::Missing("content"))?;
    let text = text_of(content);
    if text.trim().is_empty() {
        let reason = v
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("none");
        return Err(ReplyError::EmptyContent {
            finish_reason: reason.to_owned(),
        });
    }
    Ok(Parsed {
        text,
        usage: v.get("usage").and_then(usage),
    })
}

/// Folds one stream event's counts into `seen`: `message_start` holds the
/// input counts, each `message_delta` the cumulative output count (and may
/// repeat the input counts).
fn fold_usage(kind: &str, v: &Value, seen: &mut Option<TokenUsage>) {
    match kind {
        "message_start" => {
            *seen = v
                .get("message")
                .and_then(|m| m.get("usage"))
                .and_then(usage);
        }
        "message_delta" => {
            if let Some(u) = v.get("usage") {
                let mut now = seen.unwrap_or_default();
                if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                    now.completion_tokens = o;
                }
                if let Some(full) = usage(u) {
                    now.prompt_tokens = full.prompt_tokens;
                    now.cached_tokens = full.cached_tokens;
                    now.cache_write_tokens = full.cache_write_tokens;
                }
                *seen = Some(now);
            }
        }
        _ => {}
    }
}

/// The usage a stream reports, whatever its content blocks hold (text,
/// tool calls): its `message_start` and `message_delta` counts.
pub fn stream_usage(events: &[Event]) -> Option<TokenUsage> {
    let mut seen = None;
    for e in events {
        let Ok(v) = serde_json::from_str::<Value>(e.data.trim()) else {
            continue;
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&e.event);
        fold_usage(kind, &v, &mut seen);
    }
    seen
}

/// Reads a streamed reply.
pub fn parse_stream(events: &[Event]) -> Result<Parsed, ReplyError> {
    let mut text = String::new();
    let mut usage_seen: Option<TokenUsage> = None;
    let mut stop_reason = String::from("none");
    for (i, e) in events.iter().enumerate() {
        let v = match json(e.data.trim()) {
            Ok(v) => v,
            Err(_) if i + 1 == events.len() => {
                return Err(ReplyError::Truncated("its last event is cut off"));
            }
            Err(e) => return Err(e),
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&e.event);
        fold_usage(kind, &v, &mut usage_seen);
        match kind {
            "content_block_delta" => {
                let delta = v.get("delta");
                if delta.and_then(|d| d.get("type")).and_then(Value::as_str) == Some("text_delta")
                    && let Some(t) = delta.and_then(|d| d.get("text")).and_then(Value::as_str)
                {
                    text.push_str(t);
                }
            }
            "message_delta" => {
                if let Some(r) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    r.clone_into(&mut stop_reason);
                }
            }
            "message_stop" => {
                if text.trim().is_empty() {
                    return Err(ReplyError::EmptyContent {
                        finish_reason: stop_reason,
                    });
                }
                return Ok(Parsed {
                    text,
                    usage: usage_seen,
                });
            }
            "error" => {
                return Err(server_error(&v).unwrap_or(ReplyError::Server {
                    message: e.data.clone(),
                    retry: false,
                }));
            }
            _ => {}
        }
    }
    Err(ReplyError::Truncated("no message_stop event"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::wire::{Sampling, sse};

    #[test]
    fn body_puts_the_system_apart_and_marks_it_for_the_cache() {
        let s = Sampling {
            temperature: Some(0.5),
            ..Sampling::default()
        };
        let r = WireRequest {
            model: "claude-sonnet-4-5",
            system: "stable",
            user: "varies",
            sampling: &s,
            stream: true,
            cache: true,
        };
        let b = body(&r);
        assert_eq!(b["system"][0]["text"], "stable");
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["messages"][0]["content"], "varies");
        assert_eq!(b["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(b["stream"], true);
        let b = body(&WireRequest { cache: false, ..r });
        assert_eq!(b["system"], "stable");
    }

    #[test]
    fn whole_reply_with_cache_usage() {
        let m = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
            "content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Hi"}],
            "stop_reason":"end_turn","stop_sequence":null,
            "usage":{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":2000,"output_tokens":12}}"#;
        let p = parse(m);
        let Ok(p) = p else { panic!("{p:?}") };
        assert_eq!(p.text, "Hi");
        let u = p.usage.unwrap_or_default();
        assert_eq!(
            (
                u.prompt_tokens,
                u.cached_tokens,
                u.cache_write_tokens,
                u.completion_tokens
            ),
            (2050, 2000, 0, 12)
        );
        let refused = r#"{"type":"message","content":[],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":0}}"#;
        assert!(matches!(
            parse(refused),
            Err(ReplyError::EmptyContent { .. })
        ));
    }

    #[test]
    fn stream_events_usage_and_overloaded_error() {
        let text = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":1800,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let p = parse_stream(&sse::events(text));
        let Ok(p) = p else { panic!("{p:?}") };
        assert_eq!(p.text, "Hello");
        let u = p.usage.unwrap_or_default();
        assert_eq!(
            (u.prompt_tokens, u.cache_write_tokens, u.completion_tokens),
            (1825, 1800, 15)
        );
        let over = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1},\"content\":[]}}\n\n\
event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        assert!(matches!(
            parse_stream(&sse::events(over)),
            Err(ReplyError::Server { retry: true, .. })
        ));
        let cut = &text[..text.find("event: message_stop").unwrap_or(0)];
        assert!(matches!(
            parse_stream(&sse::events(cut)),
            Err(ReplyError::Truncated(_))
        ));
    }
}
