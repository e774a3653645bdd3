//! The relay's own answers, in the shape of the protocol the agent speaks,
//! so that its SDK reads them as it reads the provider's: OpenAI's
//! `{"error": {"message", "type", "param", "code"}}` (Chat Completions and
//! the Responses API) and Anthropic's `{"type": "error", "error": {"type",
//! "message"}}`, with the status each gives the same trouble; and the error
//! event a broken-off stream ends with.

use serde_json::json;

use crate::engine::agent_run::AgentWire;

/// Why the relay answers instead of the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// A missing, wrong or finished token: 401.
    BadToken,
    /// The proposal's token or cost cap, or the run's budget, is reached. OpenAI answers a spent
    /// quota with 429 `insufficient_quota`; Anthropic a spent credit
    /// balance with 400 `invalid_request_error`.
    CapReached,
    /// A route the relay does not forward: 404.
    NotRelayed,
    /// A request the relay cannot read (not JSON) or that no endpoint of
    /// the run speaks: 400.
    BadRequest,
    /// A model the run does not name: 404, as a provider answers a model
    /// it does not have.
    UnknownModel,
    /// A request body over the relay's limit: 413.
    TooLarge,
    /// More requests open, or bytes in flight, than a proposal may have:
    /// 429, a rate limit (SDKs wait and retry).
    Busy,
    /// The endpoint could not be reached, or answered something that is no
    /// reply: 502.
    Upstream,
}

/// Which error shape a route's agent expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    OpenAi,
    Anthropic,
}

impl Shape {
    /// The shape of `wire`; for a route of no protocol, Anthropic's when
    /// the agent sent Anthropic's headers.
    pub fn of(wire: AgentWire, anthropic_headers: bool) -> Self {
        match wire {
            AgentWire::AnthropicMessages => Shape::Anthropic,
            AgentWire::Other if anthropic_headers => Shape::Anthropic,
            _ => Shape::OpenAi,
        }
    }
}

/// The status and JSON body of the relay's answer.
pub fn error_body(shape: Shape, trouble: Trouble, message: &str) -> (u16, String) {
    let (status, openai_type, openai_code, anthropic_type) = match trouble {
        Trouble::BadToken => (
            401,
            "invalid_request_error",
            "invalid_api_key",
            "authentication_error",
        ),
        Trouble::CapReached => match shape {
            Shape::OpenAi => (
                429,
                "insufficient_quota",
                "insufficient_quota",
                "invalid_request_error",
            ),
            Shape::Anthropic => (
                400,
                "insufficient_quota",
                "insufficient_quota",
                "invalid_request_error",
            ),
        },
        Trouble::NotRelayed => (
            404,
            "invalid_request_error",
            "unknown_url",
            "not_found_error",
        ),
        Trouble::BadRequest => (
            400,
            "invalid_request_error",
            "invalid_request",
            "invalid_request_error",
        ),
        Trouble::UnknownModel => (
            404,
            "invalid_request_error",
            "model_not_found",
            "not_found_error",
        ),
        Trouble::TooLarge => (
            413,
            "invalid_request_error",
            "request_too_large",
            "request_too_large",
        ),
        Trouble::Busy => (
            429,
            "rate_limit_exceeded",
            "rate_limit_exceeded",
            "rate_limit_error",
        ),
        Trouble::Upstream => (502, "server_error", "bad_gateway", "api_error"),
    };
    let body = match shape {
        Shape::OpenAi => json!({"error": {
            "message": message, "type": openai_type, "param": null, "code": openai_code
        }}),
        Shape::Anthropic => json!({"type": "error", "error": {
            "type": anthropic_type, "message": message
        }}),
    };
    (status, body.to_string())
}

/// The event a stream of `wire` ends with when it broke off: each
/// protocol's own error event.
pub fn error_event(wire: AgentWire, message: &str) -> String {
    match wire {
        AgentWire::AnthropicMessages => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        ),
        AgentWire::Responses => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "code": "server_error", "message": message, "param": null})
        ),
        AgentWire::ChatCompletions | AgentWire::Other => format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": "server_error", "param": null, "code": "bad_gateway"}})
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::wire::{ApiError, Protocol, ReplyError};

    #[test]
    fn each_shape_reads_back_as_its_protocols_error() {
        for (wire, protocol) in [
            (AgentWire::ChatCompletions, Protocol::ChatCompletions),
            (AgentWire::Responses, Protocol::Responses),
            (AgentWire::AnthropicMessages, Protocol::AnthropicMessages),
        ] {
            let shape = Shape::of(wire, false);
            let (status, body) = error_body(shape, Trouble::CapReached, "cap reached");
            let e = ApiError::parse(&body).unwrap_or_default();
            assert_eq!(e.message, "cap reached", "{body}");
            assert_eq!(status, if shape == Shape::Anthropic { 400 } else { 429 });
            let (status, _) = error_body(shape, Trouble::BadToken, "no");
            assert_eq!(status, 401);
            let stream = error_event(wire, "broke off");
            assert!(
                matches!(protocol.parse_stream(&stream), Err(ReplyError::Server { message, .. }) if message.contains("broke off")),
                "{stream}"
            );
        }
        assert_eq!(Shape::of(AgentWire::Other, true), Shape::Anthropic);
    }
}
