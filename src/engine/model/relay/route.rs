//! What a request to the relay is: the protocol its route belongs to, the
//! path to forward it to, and the token it carries.

use hyper::Method;
use hyper::header::HeaderMap;

use crate::engine::agent_run::AgentWire;
use crate::engine::model::wire::Protocol;

/// A route the relay forwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub wire: AgentWire,
    /// The protocol whose endpoint takes it.
    pub protocol: Protocol,
    /// The path after the endpoint's base (`/chat/completions`).
    pub suffix: &'static str,
    /// Whether the reply reports tokens the session counts.
    pub metered: bool,
}

/// The route of `method path` (the path as the agent sent it, with or
/// without `/v1`), or `None` for one the relay does not forward.
pub fn route(method: &Method, path: &str) -> Option<Route> {
    let path = path.trim_end_matches('/');
    let rest = path.strip_prefix("/v1").unwrap_or(path);
    let r = |wire, protocol, suffix, metered| {
        Some(Route {
            wire,
            protocol,
            suffix,
            metered,
        })
    };
    match (method, rest) {
        (&Method::POST, "/chat/completions") => r(
            AgentWire::ChatCompletions,
            Protocol::ChatCompletions,
            "/chat/completions",
            true,
        ),
        (&Method::POST, "/responses") => r(
            AgentWire::Responses,
            Protocol::Responses,
            "/responses",
            true,
        ),
        (&Method::POST, "/messages") => r(
            AgentWire::AnthropicMessages,
            Protocol::AnthropicMessages,
            "/messages",
            true,
        ),
        // Counting tokens costs nothing and sends no reply text.
        (&Method::POST, "/messages/count_tokens") => r(
            AgentWire::Other,
            Protocol::AnthropicMessages,
            "/messages/count_tokens",
            false,
        ),
        // The model list: of the endpoint of the protocol the agent's
        // headers name.
        (&Method::GET, "/models") => r(
            AgentWire::Other,
            Protocol::ChatCompletions,
            "/models",
            false,
        ),
        _ => None,
    }
}

/// The token the agent sent as its key: `Authorization: Bearer …`
/// (OpenAI's SDKs, Claude Code's `ANTHROPIC_AUTH_TOKEN`), `x-api-key`
/// (Anthropic's SDKs) or `api-key` (Azure OpenAI's).
pub fn token(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let v = v.trim();
        let bearer = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
            .unwrap_or(v);
        return Some(bearer.trim());
    }
    ["x-api-key", "api-key"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .map(str::trim)
}

/// True when the agent speaks to the relay as to Anthropic (it sent an
/// `anthropic-version` or `x-api-key` header).
pub fn anthropic_headers(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version") || headers.contains_key("x-api-key")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_with_and_without_v1_and_the_ones_not_relayed() {
        let chat = route(&Method::POST, "/v1/chat/completions");
        assert_eq!(chat.map(|r| r.wire), Some(AgentWire::ChatCompletions));
        let bare = route(&Method::POST, "/chat/completions/");
        assert_eq!(bare.map(|r| r.suffix), Some("/chat/completions"));
        assert_eq!(
            route(&Method::POST, "/v1/messages").map(|r| r.protocol),
            Some(Protocol::AnthropicMessages)
        );
        let count = route(&Method::POST, "/v1/messages/count_tokens");
        assert_eq!(
            count.map(|r| (r.wire, r.metered)),
            Some((AgentWire::Other, false))
        );
        assert!(route(&Method::GET, "/v1/chat/completions").is_none());
        assert!(route(&Method::POST, "/v1/files").is_none());
        assert!(route(&Method::GET, "/../etc/passwd").is_none());
    }

    #[test]
    fn the_token_from_each_header() {
        let mut h = HeaderMap::new();
        h.insert(
            "x-api-key",
            "tok-a".parse().unwrap_or_else(|_| unreachable!()),
        );
        assert_eq!(token(&h), Some("tok-a"));
        assert!(anthropic_headers(&h));
        h.insert(
            hyper::header::AUTHORIZATION,
            "Bearer tok-b".parse().unwrap_or_else(|_| unreachable!()),
        );
        assert_eq!(token(&h), Some("tok-b"));
        assert_eq!(token(&HeaderMap::new()), None);
    }
}
