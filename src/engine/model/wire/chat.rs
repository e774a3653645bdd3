//! OpenAI Chat Completions: `POST {base}/chat/completions` with `messages`;
//! the reply's `choices[0].message.content`, or streamed
//! `chat.completion.chunk` events carrying `choices[0].delta.content` and
//! ending with `data: [DONE]`. Usage: `prompt_tokens` (cached ones
//! included, counted in `prompt_tokens_details.cached_tokens`, or
//! `prompt_cache_hit_tokens` at DeepSeek) and `completion_tokens`
//! (reasoning included, counted in `completion_tokens_details.reasoning_tokens`).

use serde_json::{Value, json};

use super::sse::Event;
use super::{Parsed, ReplyError, TokenLimitKey, WireRequest, json, server_error, u64_at};
use crate::engine::usage::TokenUsage;

/// The request body.
pub fn body(r: &WireRequest<'_>) -> Value {
    let mut messages = Vec::with_capacity(2);
    if !r.system.is_empty() {
        messages.push(json!({"role": "system", "content": r.system}));
    }
    messages.push(json!({"role": "user", "content": r.user}));
    let mut body = json!({"model": r.model, "messages": messages});
    let s = r.sampling;
    if let Value::Object(map) = &mut body {
        if let Some(t) = s.temperature {
            map.insert("temperature".into(), json!(t));
        }
        if let Some(p) = s.top_p {
            map.insert("top_p".into(), json!(p));
        }
        if let Some(m) = s.max_tokens {
            let key = match s.token_limit_key {
                TokenLimitKey::MaxTokens => "max_tokens",
                TokenLimitKey::MaxCompletionTokens => "max_completion_tokens",
            };
            map.insert(key.into(), json!(m));
        }
        if let Some(e) = &s.reasoning_effort {
            map.insert("reasoning_effort".into(), json!(e));
        }
        if r.stream {
            map.insert("stream".into(), json!(true));
            map.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    body
}

/// The token usage of a `usage` object.
pub fn usage(u: &Value) -> Option<TokenUsage> {
    let prompt = u.get("prompt_tokens").and_then(Value::as_u64)?;
    let cached = u64_at(u, &["prompt_tokens_details", "cached_tokens"])
        .max(u64_at(u, &["prompt_cache_hit_tokens"]));
    Some(TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: u64_at(u, &["completion_tokens"]),
        cached_tokens: cached,
        reasoning_tokens: u64_at(u, &["completion_tokens_details", "reasoning_tokens"]),
        ..TokenUsage::default()
    })
}

/// The usage a stream reports: the last chunk that carries a `usage`.
pub fn stream_usage(events: &[Event]) -> Option<TokenUsage> {
    events
        .iter()
        .rev()
        .filter_map(|e| serde_json::from_str::<Value>(e.data.trim()).ok())
        .find_map(|v| v.get("usage").and_then(usage))
}

/// Reads a whole reply.
pub fn parse(body: &str) -> Result<Parsed, ReplyError> {
    let v = json(body)?;
    if let Some(e) = server_error(&v) {
        return Err(e);
    }
    let choices = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or(ReplyError::Missing("choices"))?;
    let first = choices.first().ok_or(ReplyError::EmptyChoices)?;
    let content = first
        .get("message")
        .and_then(|m| m.get("content"))
        .or_else(|| first.get("text"));
    let text = match content {
        Some(Value::String(s)) => s.clone(),
        // Content given as parts: [{"type": "text", "text": "..."}].
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        let reason = first
            .get("finish_reason")
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

/// Reads a streamed reply.
pub fn parse_stream(events: &[Event]) -> Result<Parsed, ReplyError> {
    let mut text = String::new();
    let mut finish: Option<String> = None;
    let mut done = false;
    let mut usage_seen = None;
    for (i, e) in events.iter().enumerate() {
        let data = e.data.trim();
        if data == "[DONE]" {
            done = true;
            break;
        }
        if data.is_empty() {
            continue;
        }
        let v = match json(data) {
            Ok(v) => v,
            // The last event broke off mid-way.
            Err(_) if i + 1 == events.len() => {
                return Err(ReplyError::Truncated("its last event is cut off"));
            }
            Err(e) => return Err(e),
        };
        if let Some(err) = server_error(&v) {
            return Err(err);
        }
        if let Some(u) = v.get("usage").and_then(usage) {
            usage_seen = Some(u);
        }
        let Some(choice) = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            continue;
        };
        if let Some(t) = choice
            .get("delta")
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
        {
            text.push_str(t);
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            finish = Some(r.to_owned());
        }
    }
    if !done && finish.is_none() {
        return Err(ReplyError::Truncated("no finish_reason and no [DONE]"));
    }
    if text.trim().is_empty() {
        return Err(ReplyError::EmptyContent {
            finish_reason: finish.unwrap_or_else(|| "none".to_owned()),
        });
    }
    Ok(Parsed {
        text,
        usage: usage_seen,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::wire::{Protocol, Sampling, sse};

    #[test]
    fn body_uses_the_token_limit_key_and_asks_for_stream_usage() {
        let s = Sampling {
            max_tokens: Some(64),
            token_limit_key: TokenLimitKey::MaxCompletionTokens,
            reasoning_effort: Some("low".into()),
            ..Sampling::default()
        };
        let r = WireRequest {
            model: "o3-mini",
            system: "sys",
            user: "u",
            sampling: &s,
            stream: true,
            cache: true,
        };
        let b = body(&r);
        assert_eq!(b["max_completion_tokens"], 64);
        assert!(b.get("max_tokens").is_none() && b.get("temperature").is_none());
        assert_eq!(b["reasoning_effort"], "low");
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["messages"][0]["role"], "system");
    }

    #[test]
    fn usage_with_cached_and_reasoning_tokens() {
        let body = r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
              "prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},
              "completion_tokens_details":{"reasoning_tokens":192,"audio_tokens":0}}}"#;
        let p = parse(body).ok().and_then(|p| p.usage).unwrap_or_default();
        assert_eq!(
            (
                p.prompt_tokens,
                p.completion_tokens,
                p.cached_tokens,
                p.reasoning_tokens
            ),
            (2006, 300, 1920, 192)
        );
        let deepseek = r#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}"#;
        let p = parse(deepseek)
            .ok()
            .and_then(|p| p.usage)
            .unwrap_or_default();
        assert_eq!(p.cached_tokens, 64);
    }

    #[test]
    fn stream_chunks_usage_errors_and_truncation() {
        let text = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n\
data: [DONE]\n\n";
        let p = parse_stream(&sse::events(text));
        let Ok(p) = p else { panic!("{p:?}") };
        assert_eq!(p.text, "Hello");
        assert_eq!(p.usage.map(|u| u.prompt_tokens), Some(9));
        let cut = &text[..text.find("\"lo\"").unwrap_or(0)];
        assert!(matches!(
            Protocol::ChatCompletions.read(cut, true),
            Err(ReplyError::Truncated(_))
        ));
        let err = "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n";
        assert!(matches!(
            parse_stream(&sse::events(err)),
            Err(ReplyError::Server { retry: true, .. })
        ));
    }
}
