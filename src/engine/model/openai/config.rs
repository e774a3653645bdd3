//! The settings of one model at one endpoint ([`OpenAiConfig`]): where,
//! in which protocol, with which key variable and header, with which limits;
//! and the checks of what a user types for them.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::HeaderValue;

use crate::engine::model::ConfigError;
use crate::engine::model::pricing::Price;
use crate::engine::model::url::ApiBase;
use crate::engine::model::wire::{self, Protocol, Sampling};

use super::DEFAULT_API_KEY_ENV;

/// How the key is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI and most servers).
    #[default]
    Bearer,
    /// `api-key: KEY` (Azure OpenAI).
    ApiKey,
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
}

impl KeyHeader {
    /// The header's name.
    pub fn name(self) -> &'static str {
        match self {
            KeyHeader::Bearer => "authorization",
            KeyHeader::ApiKey => "api-key",
            KeyHeader::XApiKey => "x-api-key",
        }
    }

    /// The usual one for `protocol`.
    pub fn for_protocol(protocol: Protocol) -> Self {
        match protocol {
            Protocol::AnthropicMessages => KeyHeader::XApiKey,
            _ => KeyHeader::Bearer,
        }
    }
}

/// Header names that carry credentials: a key goes in an environment
/// variable named by `api_key_env`, never in an extra header's value.
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "api-key",
    "x-api-key",
    "cookie",
    "x-goog-api-key",
];

/// Reasoning efforts a request may ask for.
pub const REASONING_EFFORTS: &[&str] = &["minimal", "low", "medium", "high"];

/// Checks extra headers: valid HTTP names and values, none that carries a
/// credential (its value is not echoed).
pub fn validate_headers(headers: &[(String, String)]) -> Result<(), ConfigError> {
    for (name, value) in headers {
        let lower = name.trim().to_ascii_lowercase();
        if reqwest::header::HeaderName::from_bytes(lower.as_bytes()).is_err() {
            return Err(ConfigError::invalid(format!(
                "header name `{name}` is not a valid HTTP header name"
            )));
        }
        if CREDENTIAL_HEADERS.contains(&lower.as_str()) {
            return Err(ConfigError::invalid(format!(
                "header `{name}` carries a credential: keys are never stored; name the \
                 environment variable that holds the key in api_key_env instead"
            )));
        }
        if HeaderValue::from_str(value).is_err() {
            return Err(ConfigError::invalid(format!(
                "header `{name}` has a value that is not a valid HTTP header value"
            )));
        }
    }
    Ok(())
}

/// Settings of one model at one endpoint. Holds the *name* of the
/// environment variable with the key, never the key.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiConfig {
    /// Model name sent to the API (`gpt-4o`, `qwen2.5-coder:7b`...).
    pub model: String,
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://localhost:8000/v1`
    /// (shown without the credentials it may carry).
    pub api_base: ApiBase,
    /// Name of the environment variable holding the API key.
    pub api_key_env: String,
    /// Whether a missing key is an error. Local servers usually need none.
    pub key_required: bool,
    /// Sampling temperature (omitted from the request when `None`).
    pub temperature: Option<f64>,
    /// Nucleus sampling (omitted when `None`).
    pub top_p: Option<f64>,
    /// Completion token limit (omitted when `None`).
    pub max_tokens: Option<u32>,
    /// Longest time one attempt may take, from sending to the last body byte.
    pub request_timeout: Duration,
    /// Longest wait for the response's header once the request is sent (a
    /// server that accepts the connection and never answers). A server that
    /// sends its header only with the whole reply (most do for a request
    /// that is not streamed) needs this above its slowest reply.
    pub first_byte_timeout: Duration,
    /// Longest silence between two body chunks once the reply has started.
    pub stall_timeout: Duration,
    /// Longest time to open a connection.
    pub connect_timeout: Duration,
    /// Attempts per request (1 = no retries).
    pub max_attempts: u32,
    /// Backoff before the second attempt; doubled each further attempt.
    pub backoff_initial: Duration,
    /// Upper bound of the exponential backoff.
    pub backoff_max: Duration,
    /// Upper bound on a server's `Retry-After`.
    pub retry_after_cap: Duration,
    /// Price of this model, giving `usage.cost_usd`.
    pub price: Option<Price>,
    /// The wire protocol.
    pub protocol: Protocol,
    /// Ask for the reply as a stream of events.
    pub stream: bool,
    /// How the key is sent.
    pub key_header: KeyHeader,
    /// Headers sent with every request (never credentials).
    pub headers: Vec<(String, String)>,
    /// The `api-version` query parameter (Azure OpenAI).
    pub api_version: Option<String>,
    /// Mark the prompt's stable prefix for the provider's cache.
    pub prompt_cache: bool,
    /// `reasoning_effort` for reasoning models.
    pub reasoning_effort: Option<String>,
}

impl OpenAiConfig {
    /// Defaults for `model` at `api_base`: key in `OPENAI_API_KEY` (required
    /// unless the host is local), 300 s request timeout, 120 s first-byte
    /// timeout, 60 s stall timeout,
    /// 4 attempts, backoff 1 s doubling to 30 s, `Retry-After` capped at 60 s.
    pub fn new(model: &str, api_base: &str) -> Self {
        Self {
            model: model.to_owned(),
            api_base: ApiBase::new(api_base),
            api_key_env: DEFAULT_API_KEY_ENV.to_owned(),
            key_required: !is_local_base(api_base),
            temperature: None,
            top_p: None,
            max_tokens: None,
            request_timeout: Duration::from_secs(300),
            first_byte_timeout: Duration::from_secs(120),
            stall_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            max_attempts: 4,
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(60),
            price: None,
            protocol: Protocol::ChatCompletions,
            stream: false,
            key_header: KeyHeader::Bearer,
            headers: Vec::new(),
            api_version: None,
            prompt_cache: true,
            reasoning_effort: None,
        }
    }

    /// The chat completions URL for this base (a base already ending in
    /// `/chat/completions` is used as is; a query stays the query).
    pub fn completions_url(&self) -> Result<Url, ConfigError> {
        self.api_base.completions_url()
    }

    /// The URL requests go to: the protocol's path after the base, the
    /// model's name as the deployment where the base has a `{deployment}`
    /// slot, and the `api-version` query when set.
    pub fn request_url(&self) -> Result<Url, ConfigError> {
        self.api_base.request_url(
            self.protocol.path(),
            Some(&self.model),
            self.api_version.as_deref(),
        )
    }

    /// The URL listing the server's models (`{base}/models`), when the base
    /// has one (an Azure deployment URL does not).
    pub fn models_url(&self) -> Option<Url> {
        if self.api_base.has_deployment_slot() {
            return None;
        }
        self.api_base
            .request_url("/models", None, self.api_version.as_deref())
            .ok()
    }

    /// The sampling settings as configured, before the model's quirks.
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_p: self.top_p,
            max_tokens: self.max_tokens,
            token_limit_key: wire::TokenLimitKey::MaxTokens,
            reasoning_effort: self.reasoning_effort.clone(),
        }
    }

    /// Checks the settings, so a bad value is reported before a run starts.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.model.trim().is_empty() {
            return Err(ConfigError::invalid("model name is empty"));
        }
        self.request_url()?;
        validate_env_name(&self.api_key_env)?;
        validate_headers(&self.headers)?;
        if let Some(e) = &self.reasoning_effort
            && !REASONING_EFFORTS.contains(&e.as_str())
        {
            return Err(ConfigError::invalid(format!(
                "reasoning_effort must be one of {}, got `{e}`",
                REASONING_EFFORTS.join(", ")
            )));
        }
        if let Some(t) = self.temperature
            && !(t.is_finite() && (0.0..=2.0).contains(&t))
        {
            return Err(ConfigError::invalid(format!(
                "temperature must be in 0..=2, got {t}"
            )));
        }
        if let Some(p) = self.top_p
            && !(p.is_finite() && p > 0.0 && p <= 1.0)
        {
            return Err(ConfigError::invalid(format!(
                "top_p must be in (0, 1], got {p}"
            )));
        }
        if self.max_tokens == Some(0) {
            return Err(ConfigError::invalid("max_tokens must be at least 1"));
        }
        if self.max_attempts == 0 {
            return Err(ConfigError::invalid("max_attempts must be at least 1"));
        }
        for (what, d) in [
            ("request_timeout", self.request_timeout),
            ("first_byte_timeout", self.first_byte_timeout),
            ("stall_timeout", self.stall_timeout),
            ("connect_timeout", self.connect_timeout),
        ] {
            if d.is_zero() {
                return Err(ConfigError::invalid(format!(
                    "{what} must be greater than zero"
                )));
            }
        }
        if let Some(p) = &self.price {
            p.validate()?;
        }
        Ok(())
    }
}

/// Checks that `name` looks like an environment variable name, which also
/// catches a key pasted where its variable's name belongs.
pub fn validate_env_name(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        // The value is deliberately not echoed: it may be a pasted key.
        Err(ConfigError::KeyEnvName)
    }
}

/// True when the base URL points at this machine or a private network
/// (where servers such as Ollama or vLLM usually need no key).
pub fn is_local_base(api_base: &str) -> bool {
    let Ok(url) = Url::parse(api_base.trim()) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => {
            ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
        }
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || (ip.segments()[0] & 0xfe00) == 0xfc00
                || (ip.segments()[0] & 0xffc0) == 0xfe80
        }
        Err(_) => {
            let d = host.to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost") || d.ends_with(".local")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_joining_and_validation() {
        let c = OpenAiConfig::new("m", "http://localhost:8000/v1/");
        assert_eq!(
            c.completions_url()
                .map(|u| u.to_string())
                .unwrap_or_default(),
            "http://localhost:8000/v1/chat/completions"
        );
        let c = OpenAiConfig::new("m", "http://h/v1/chat/completions");
        assert_eq!(
            c.completions_url()
                .map(|u| u.to_string())
                .unwrap_or_default(),
            "http://h/v1/chat/completions"
        );
        assert!(OpenAiConfig::new("m", "ftp://h/v1").validate().is_err());
        assert!(OpenAiConfig::new("m", "not a url").validate().is_err());
        assert!(OpenAiConfig::new("", "http://h/v1").validate().is_err());
        let mut c = OpenAiConfig::new("m", "http://h/v1");
        c.temperature = Some(3.0);
        assert!(c.validate().is_err());
        c.temperature = Some(0.7);
        c.max_attempts = 0;
        assert!(c.validate().is_err());
        c.max_attempts = 1;
        c.api_key_env = "sk-abc123".into();
        let err = c
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("NAME") && !err.contains("sk-abc123"), "{err}");
    }

    #[test]
    fn local_hosts_need_no_key() {
        for b in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8000/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
        ] {
            assert!(is_local_base(b), "{b}");
            assert!(!OpenAiConfig::new("m", b).key_required, "{b}");
        }
        for b in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "x",
        ] {
            assert!(!is_local_base(b), "{b}");
        }
        assert!(OpenAiConfig::new("m", "https://api.openai.com/v1").key_required);
    }
}
