//! The OpenAI Responses API: `POST {base}/responses` with `instructions`
//! (the system prompt) and `input`; the reply's `output` items, of which the
//! `message` items hold `output_text` parts. Streamed, it is typed events
//! (`response.created`, `response.output_text.delta`, …) ending with
//! `response.completed`, `response.incomplete` or `response.failed` (no
//! `[DONE]`), or an `error` event. Usage: `input_tokens` (cached included,
//! `input_tokens_details.cached_tokens`) and `output_tokens` (reasoning
//! included, `output_tokens_details.reasoning_tokens`).

use serde_json::{Value, json};

use super::sse::Event;
use super::{ApiError, Parsed, ReplyError, WireRequest, json, server_error, u64_at};
use crate::engine::usage::TokenUsage;

/// The request body. Responses are not stored at OpenAI (`store: false`).
pub fn body(r: &WireRequest<'_>) -> Value {
    let mut body = json!({
        "model": r.model,
        "input": [{"role": "user", "content": r.user}],
        "store": false,
    });
    let s = r.sampling;
    if let Value::Object(map) = &mut body {
        if !r.system.is_empty() {
            map.insert("instructions".into(), json!(r.system));
        }
        if let Some(t) = s.temperature {
            map.insert("temperature".into(), json!(t));
        }
        if let Some(p) = s.top_p {
            map.insert("top_p".into(), json!(p));
        }
        if let Some(m) = s.max_tokens {
            map.insert("max_output_tokens".into(), json!(m));
        }
        if let Some(e) = &s.reasoning_effort {
            map.insert("reasoning".into(), json!({"effort": e}));
        }
        if r.stream {
            map.insert("stream".into(), json!(true));
        }
    }
    body
}

/// The token usage of a `usage` object.
pub fn usage(u: &Value) -> Option<TokenUsage> {
    let input = u.get("input_tokens").and_then(Value::as_u64)?;
    Some(TokenUsage {
        prompt_tokens: input,
        completion_tokens: u64_at(u, &["output_tokens"]),
        cached_tokens: u64_at(u, &["input_tokens_details", "cached_tokens"]),
        reasoning_tokens: u64_at(u, &["output_tokens_details", "reasoning_tokens"]),
        ..TokenUsage::default()
    })
}

/// The text of a response object's `message` output items.
fn output_text(response: &Value) -> String {
    response
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// Why a response object did not finish: its `error`, or the reason it is
/// incomplete.
fn unfinished(response: &Value) -> Result<(), ReplyError> {
    match response.get("status").and_then(Value::as_str) {
        Some("failed") => {
            let e = response.get("error").cloned().unwrap_or(Value::Null);
            let e = ApiError {
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the response failed")
                    .to_owned(),
                code: e
                    .get("code")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                ..ApiError::default()
            };
            Err(ReplyError::Server {
                retry: e.retryable(),
                message: e.describe(),
            })
        }
        _ => Ok(()),
    }
}

fn finish(response: &Value, text: String) -> Result<Parsed, ReplyError> {
    unfinished(response)?;
    if text.trim().is_empty() {
        let reason = response
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            .or_else(|| response.get("status").and_then(Value::as_str))
            .unwrap_or("none");
        return Err(ReplyError::EmptyContent {
            finish_reason: reason.to_owned(),
        });
    }
    Ok(Parsed {
        text,
        usage: response.get("usage").and_then(usage),
    })
}

/// Reads a whole reply (a response object).
pub fn parse(body: &str) -> Result<Parsed, ReplyError> {
    let v = json(body)?;
    if let Some(e) = server_error(&v) {
        return Err(e);
    }
    if v.get("output").is_none() {
        return Err(ReplyError::Missing("output"));
    }
    let text = output_text(&v);
    finish(&v, text)
}

/// The usage a stream reports: the `usage` of the response its final event
/// (`response.completed`, `.incomplete` or `.failed`) carries.
pub fn stream_usage(events: &[Event]) -> Option<TokenUsage> {
    events.iter().rev().find_map(|e| {
        let v: Value = serde_json::from_str(e.data.trim()).ok()?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&e.event);
        matches!(
            kind,
            "response.completed" | "response.incomplete" | "response.failed"
        )
        .then(|| v.get("response")?.get("usage").and_then(usage))
        .flatten()
    })
}

/// Reads a streamed reply.
pub fn parse_stream(events: &[Event]) -> Result<Parsed, ReplyError> {
    let mut text = String::new();
    for (i, e) in events.iter().enumerate() {
        let v = match json(e.data.trim()) {
            Ok(v) => v,
            Err(_) if i + 1 == events.len() => {
                return Err(ReplyError::Truncated("its last event is cut off"));
            }
            Err(e) => return Err(e),
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&e.event);
        match kind {
            "response.output_text.delta" => {
                if let Some(d) = v.get("delta").and_then(Value::as_str) {
                    text.push_str(d);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = v.get("response").cloned().unwrap_or(Value::Null);
                let text = if text.is_empty() {
                    output_text(&response)
                } else {
                    text
                };
                return finish(&response, text);
            }
            "error" => {
                let e = ApiError {
                    message: v
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    code: v
                        .get("code")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    param: v
                        .get("param")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    kind: String::new(),
                };
                return Err(ReplyError::Server {
                    retry: e.retryable(),
                    message: e.describe(),
                });
            }
            _ => {}
        }
    }
    Err(ReplyError::Truncated("no response.completed event"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::wire::{Sampling, sse};

    const DONE: &str = r#"{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,
        "output":[{"type":"reasoning","id":"rs_1","summary":[]},
                  {"type":"message","id":"msg_1","status":"completed","role":"assistant",
                   "content":[{"type":"output_text","text":"Hello","annotations":[]}]}],
        "usage":{"input_tokens":1500,"input_tokens_details":{"cached_tokens":1024},
                 "output_tokens":320,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":1820}}"#;

    #[test]
    fn body_has_instructions_input_and_reasoning() {
        let s = Sampling {
            max_tokens: Some(100),
            reasoning_effort: Some("high".into()),
            ..Sampling::default()
        };
        let b = body(&WireRequest {
            model: "o4-mini",
            system: "sys",
            user: "u",
            sampling: &s,
            stream: false,
            cache: true,
        });
        assert_eq!(b["instructions"], "sys");
        assert_eq!(b["input"][0]["content"], "u");
        assert_eq!(b["max_output_tokens"], 100);
        assert_eq!(b["reasoning"]["effort"], "high");
        assert_eq!(b["store"], false);
        assert!(b.get("stream").is_none());
    }

    #[test]
    fn whole_reply_skips_reasoning_items_and_counts_tokens() {
        let p = parse(DONE);
        let Ok(p) = p else { panic!("{p:?}") };
        assert_eq!(p.text, "Hello");
        let u = p.usage.unwrap_or_default();
        assert_eq!(
            (
                u.prompt_tokens,
                u.cached_tokens,
                u.completion_tokens,
                u.reasoning_tokens
            ),
            (1500, 1024, 320, 256)
        );
        let incomplete = r#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning","summary":[]}]}"#;
        assert_eq!(
            parse(incomplete),
            Err(ReplyError::EmptyContent {
                finish_reason: "max_output_tokens".into()
            })
        );
    }

    #[test]
    fn stream_deltas_completion_failure_and_error_events() {
        let done: Value = serde_json::from_str(DONE).unwrap_or_default();
        let text = format!(
            "event: response.created\ndata: {{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{{\"status\":\"in_progress\",\"output\":[]}}}}\n\n\
event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"Hel\"}}\n\n\
event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":5,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"lo\"}}\n\n\
event: response.completed\ndata: {}\n\n",
            json!({"type": "response.completed", "sequence_number": 9, "response": done})
        );
        let p = parse_stream(&sse::events(&text));
        let Ok(p) = p else { panic!("{p:?}") };
        assert_eq!(p.text, "Hello");
        assert_eq!(p.usage.map(|u| u.reasoning_tokens), Some(256));
        let cut = &text[..text.find("event: response.completed").unwrap_or(0)];
        assert!(matches!(
            parse_stream(&sse::events(cut)),
            Err(ReplyError::Truncated(_))
        ));
        let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed\"},\"output\":[]}}\n\n";
        assert!(matches!(
            parse_stream(&sse::events(failed)),
            Err(ReplyError::Server { retry: true, .. })
        ));
        let error = "event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_prompt\",\"message\":\"bad\",\"param\":null}\n\n";
        assert!(matches!(
            parse_stream(&sse::events(error)),
            Err(ReplyError::Server { retry: false, .. })
        ));
    }
}
