//! The wire protocols a model can be spoken to in: one file per protocol,
//! each turning a request into its JSON body and its reply (whole or
//! streamed as server-sent events) into text and token usage.
//!
//! - `chat.rs`: OpenAI Chat Completions (`POST …/chat/completions`), which
//!   most servers speak (OpenAI, Azure OpenAI, Gemini, OpenRouter, DeepSeek,
//!   Mistral, Groq, Together, Ollama, vLLM, llama.cpp server, LM Studio).
//! - `responses.rs`: the OpenAI Responses API (`POST …/responses`).
//! - `anthropic.rs`: the Anthropic Messages API (`POST …/messages`).
//!
//! The transport (timeouts, retries, `Retry-After`, stall cuts) is the
//! client's (`openai.rs`); what a reply means is decided here.

pub mod anthropic;
pub mod chat;
pub mod responses;
pub mod sse;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::usage::TokenUsage;

/// Characters of a body quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// How requests are written and replies read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// OpenAI Chat Completions.
    #[default]
    ChatCompletions,
    /// The OpenAI Responses API.
    Responses,
    /// The Anthropic Messages API.
    AnthropicMessages,
}

impl Protocol {
    /// Every protocol, for pickers.
    pub const ALL: [Protocol; 3] = [
        Protocol::ChatCompletions,
        Protocol::Responses,
        Protocol::AnthropicMessages,
    ];

    /// The path after the base URL of a request.
    pub fn path(self) -> &'static str {
        match self {
            Protocol::ChatCompletions => "/chat/completions",
            Protocol::Responses => "/responses",
            Protocol::AnthropicMessages => "/messages",
        }
    }

    /// The name used in settings files and on screen.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::ChatCompletions => "chat_completions",
            Protocol::Responses => "responses",
            Protocol::AnthropicMessages => "anthropic_messages",
        }
    }

    /// The request body.
    pub fn body(self, request: &WireRequest<'_>) -> Value {
        match self {
            Protocol::ChatCompletions => chat::body(request),
            Protocol::Responses => responses::body(request),
            Protocol::AnthropicMessages => anthropic::body(request),
        }
    }

    /// Reads a whole (not streamed) reply body.
    pub fn parse(self, body: &str) -> Result<Parsed, ReplyError> {
        match self {
            Protocol::ChatCompletions => chat::parse(body),
            Protocol::Responses => responses::parse(body),
            Protocol::AnthropicMessages => anthropic::parse(body),
        }
    }

    /// Reads a streamed reply: the server-sent events of one response.
    pub fn parse_stream(self, body: &str) -> Result<Parsed, ReplyError> {
        let events = sse::events(body);
        match self {
            Protocol::ChatCompletions => chat::parse_stream(&events),
            Protocol::Responses => responses::parse_stream(&events),
            Protocol::AnthropicMessages => anthropic::parse_stream(&events),
        }
    }

    /// The token usage a reply reports, whatever it holds (text, tool calls
    /// or nothing): for the model relay, which passes replies on unread.
    /// `None` when the body reports no usage or is not one of this
    /// protocol's replies.
    pub fn usage_of(self, body: &str, streamed: bool) -> Option<TokenUsage> {
        if !streamed || body.trim_start().starts_with('{') {
            let v: Value = serde_json::from_str(body.trim()).ok()?;
            let u = v.get("usage")?;
            return match self {
                Protocol::ChatCompletions => chat::usage(u),
                Protocol::Responses => responses::usage(u),
                Protocol::AnthropicMessages => anthropic::usage(u),
            };
        }
        let events = sse::events(body);
        match self {
            Protocol::ChatCompletions => chat::stream_usage(&events),
            Protocol::Responses => responses::stream_usage(&events),
            Protocol::AnthropicMessages => anthropic::stream_usage(&events),
        }
    }

    /// Reads a reply, streamed or not: a body that is a JSON object is read
    /// whole (a server may answer a streaming request in one piece, and
    /// errors come that way), anything else as events.
    pub fn read(self, body: &str, streamed: bool) -> Result<Parsed, ReplyError> {
        if streamed && !body.trim_start().starts_with('{') {
            self.parse_stream(body)
        } else {
            self.parse(body)
        }
    }
}

/// Which key sets the completion token limit (reasoning models at OpenAI
/// refuse `max_tokens`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TokenLimitKey {
    #[default]
    MaxTokens,
    MaxCompletionTokens,
}

/// The sampling settings that go on the wire, after the model's quirks were
/// applied (a value that is `None` is not sent).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub token_limit_key: TokenLimitKey,
    /// `low`, `medium` or `high`, for reasoning models.
    pub reasoning_effort: Option<String>,
}

/// One request, protocol-neutral.
#[derive(Clone, Debug)]
pub struct WireRequest<'a> {
    pub model: &'a str,
    /// The stable part of the prompt (instructions, the task), first.
    pub system: &'a str,
    /// The part that changes from request to request.
    pub user: &'a str,
    pub sampling: &'a Sampling,
    pub stream: bool,
    /// Mark the stable prefix for the provider's prompt cache (Anthropic
    /// caches only what is marked; OpenAI caches any long prefix itself).
    pub cache: bool,
}

/// A reply's text and token usage.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub text: String,
    pub usage: Option<TokenUsage>,
}

/// What is wrong with a reply body.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("reply is not valid JSON ({error}): {excerpt}")]
    NotJson { error: String, excerpt: String },
    /// The server said something went wrong (in a 200 body or an event);
    /// `retry` when it is the kind another attempt may get past
    /// (overloaded, a server error, a rate limit).
    #[error("server returned an error: {message}")]
    Server { message: String, retry: bool },
    #[error("reply has no `{0}`")]
    Missing(&'static str),
    #[error("reply has empty `choices`")]
    EmptyChoices,
    #[error("reply has empty content (finish_reason: {finish_reason})")]
    EmptyContent { finish_reason: String },
    /// A stream that ended before its last event (the connection closed).
    #[error("the stream ended before its final event ({0})")]
    Truncated(&'static str),
}

/// An API's error body, as the OpenAI-style (`{"error": {"message", "type",
/// "param", "code"}}`), Anthropic (`{"type": "error", "error": {"type",
/// "message"}}`) and vLLM-style (`{"object": "error", "message", "type",
/// "code"}`) servers send it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiError {
    pub message: String,
    /// `type` (`invalid_request_error`, `overloaded_error`, `not_found_error`...).
    pub kind: String,
    /// `code` (`model_not_found`, `DeploymentNotFound`, `unsupported_parameter`...).
    pub code: String,
    /// `param`, when the server names the parameter at fault.
    pub param: String,
}

impl ApiError {
    /// The error in `body`, if it is one of the known shapes.
    pub fn parse(body: &str) -> Option<ApiError> {
        let v: Value = serde_json::from_str(body.trim()).ok()?;
        Self::from_value(&v)
    }

    /// The error in a parsed body or event.
    pub fn from_value(v: &Value) -> Option<ApiError> {
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let inner = match v.get("error") {
            Some(e @ Value::Object(_)) => e,
            Some(Value::String(s)) => {
                return Some(ApiError {
                    message: s.clone(),
                    ..ApiError::default()
                });
            }
            _ if v.get("object").and_then(Value::as_str) == Some("error") => v,
            _ => return None,
        };
        Some(ApiError {
            message: text(inner.get("message")),
            kind: text(inner.get("type")),
            code: text(inner.get("code")),
            param: text(inner.get("param")),
        })
    }

    /// Whether another attempt may succeed: the server is overloaded, had an
    /// internal error or limits the rate.
    pub fn retryable(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "overloaded_error" | "api_error" | "server_error" | "rate_limit_error"
        ) || matches!(
            self.code.as_str(),
            "server_error" | "rate_limit_exceeded" | "overloaded"
        )
    }

    /// One line: the message with the type or code it came with.
    pub fn describe(&self) -> String {
        // A code that is a word (`model_not_found`) says more than the type;
        // a numeric one (`404`) less.
        let word_code = (!self.code.is_empty() && !self.code.chars().all(|c| c.is_ascii_digit()))
            .then(|| self.code.clone());
        let tag = word_code.or_else(|| (!self.kind.is_empty()).then(|| self.kind.clone()));
        match tag {
            Some(t) if !self.message.is_empty() => format!("{} ({t})", excerpt(&self.message)),
            Some(t) => t,
            None => excerpt(&self.message),
        }
    }
}

/// A reply error from an error object found where a reply was expected.
pub(crate) fn server_error(v: &Value) -> Option<ReplyError> {
    let e = ApiError::from_value(v)?;
    Some(ReplyError::Server {
        retry: e.retryable(),
        message: e.describe(),
    })
}

pub(crate) fn json(body: &str) -> Result<Value, ReplyError> {
    serde_json::from_str(body).map_err(|e| ReplyError::NotJson {
        error: e.to_string(),
        excerpt: excerpt(body),
    })
}

pub(crate) fn u64_at(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// `text` trimmed to one line of at most [`EXCERPT_CHARS`] characters.
pub fn excerpt(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        return "(empty body)".to_owned();
    }
    let mut out: String = t.chars().take(EXCERPT_CHARS).collect();
    if t.chars().count() > EXCERPT_CHARS {
        out.push('…');
    }
    out.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_of_every_shape() {
        let openai = r#"{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}"#;
        let e = ApiError::parse(openai).unwrap_or_default();
        assert_eq!(
            (e.param.as_str(), e.code.as_str()),
            ("temperature", "unsupported_parameter")
        );
        assert!(!e.retryable());
        let anthropic = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#;
        let e = ApiError::parse(anthropic).unwrap_or_default();
        assert_eq!(e.kind, "overloaded_error");
        assert!(e.retryable());
        assert_eq!(e.describe(), "Overloaded (overloaded_error)");
        let vllm = r#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#;
        let e = ApiError::parse(vllm).unwrap_or_default();
        assert_eq!((e.kind.as_str(), e.code.as_str()), ("NotFoundError", "404"));
        assert_eq!(ApiError::parse("<html>nope</html>"), None);
        assert_eq!(ApiError::parse(r#"{"choices":[]}"#), None);
    }

    #[test]
    fn a_json_body_is_read_whole_even_when_a_stream_was_asked() {
        let whole = r#"{"choices":[{"message":{"content":"hi"}}]}"#;
        let p = Protocol::ChatCompletions.read(whole, true);
        assert_eq!(p.map(|p| p.text).ok().as_deref(), Some("hi"));
    }
}
