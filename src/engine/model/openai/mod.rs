//! `OpenAiModel`: the HTTP client for a model at an endpoint, in any of the
//! wire protocols of [`super::wire`] (OpenAI Chat Completions, the OpenAI
//! Responses API, the Anthropic Messages API), streamed or not.
//!
//! What a model does not take is handled, not reported as a failure: the
//! capability table of [`super::quirks`] shapes each request, and a 400 that
//! names a parameter that was sent is answered by sending the request again
//! without it; the model remembers that for the rest of the run and says so
//! once, as a warning.
//!
//! Failures are handled like a production client: 429, 5xx, connect errors
//! and timeouts are retried with exponential backoff and jitter (honouring
//! `Retry-After`) up to a bounded number of attempts; every attempt has a
//! whole-request timeout, a first-byte timeout (from sending the request to
//! the response's header) and a stall timeout between body chunks; a
//! semaphore limits requests in flight per endpoint. An unusable reply (no
//! choices, empty content, invalid JSON) is a `ModelError::Failed` carrying
//! the raw body; 401/403 is `ModelError::Fatal` naming the environment
//! variable that held the key (never its value).
//!
//! The API key is read from the environment at request time only; it is
//! never stored in the model, logged, or put in an error.
//!
//! The model's settings are in `config.rs`, reading `Retry-After` in
//! `retry_after.rs`, the wire formats in [`super::wire`].

use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

use rand::RngExt as _;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::Value;
use tokio::sync::Semaphore;

use super::quirks::{self, Capabilities, Param};
use super::url::redact_url;
use super::wire::{self, ApiError, Protocol, ReplyError, Sampling, WireRequest};
use super::{ConfigError, LanguageModel, ModelError, ModelReply, ModelRequest};
use crate::engine::rng::seeded;

mod config;
mod not_found;
mod retry_after;

pub use config::{
    CREDENTIAL_HEADERS, KeyHeader, OpenAiConfig, REASONING_EFFORTS, is_local_base,
    validate_env_name, validate_headers,
};
pub use not_found::{NotFound, not_found};
pub use retry_after::{parse_retry_after, retry_after_from};

/// Environment variable holding the API key when none is named.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Environment variable giving the default API base URL.
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// The API base used when a model is named but no endpoint is configured.
pub const DEFAULT_API_BASE: &str = "https://api.openai.com/v1";

/// Largest response body accepted (bytes); larger bodies are a failed call.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// Installs rustls' `ring` crypto provider as the process default, once.
/// A provider installed earlier by someone else is kept.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means a provider is already installed: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The parts of a client that several models at one endpoint share: the HTTP
/// connection pool and the limit on requests in flight.
#[derive(Clone, Debug)]
pub struct EndpointHandle {
    client: reqwest::Client,
    limit: Arc<Semaphore>,
    concurrency: usize,
}

impl EndpointHandle {
    /// An HTTP(S) client allowing `concurrency` requests in flight (at least 1).
    /// Local endpoints bypass any system proxy.
    pub fn new(
        api_base: &str,
        concurrency: usize,
        connect_timeout: Duration,
    ) -> Result<Self, ConfigError> {
        install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .user_agent(concat!("galapagos/", env!("CARGO_PKG_VERSION")));
        if is_local_base(api_base) {
            builder = builder.no_proxy();
        }
        if api_base
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("http://")
        {
            // Plain HTTP needs no certificates: skip loading the platform's
            // trust store (tens of milliseconds at start-up). An HTTPS URL
            // reached from here (a redirect) then fails to verify rather than
            // being trusted blindly.
            builder = builder.tls_certs_only(Vec::<reqwest::Certificate>::new());
        }
        let client = builder.build().map_err(|e| ConfigError::HttpClient {
            base: redact_url(api_base),
            reason: e.to_string(),
        })?;
        let concurrency = concurrency.clamp(1, Semaphore::MAX_PERMITS);
        Ok(Self {
            client,
            limit: Arc::new(Semaphore::new(concurrency)),
            concurrency,
        })
    }

    /// Requests allowed in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }
}

/// A chat-completions model at an OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    url: Url,
    endpoint: EndpointHandle,
    /// What the model takes, from the capability table.
    caps: Capabilities,
    /// Parameters the server refused earlier in the run: never sent again.
    refused: std::sync::Mutex<std::collections::BTreeSet<Param>>,
    /// Failed attempts that were retried, not yet taken by the run (see
    /// [`LanguageModel::take_notices`]); at most [`MAX_NOTICES`].
    notices: std::sync::Mutex<std::collections::VecDeque<String>>,
}

/// Retry notices kept for the run to take; older ones are dropped first.
const MAX_NOTICES: usize = 256;

/// Outcome of one HTTP attempt.
enum Attempt {
    Done(ModelReply),
    /// A 400 refusing a parameter that was sent: sent again without it.
    Refused {
        param: Param,
        message: String,
        raw: Option<String>,
    },
    /// Worth another attempt (429, 5xx, connect error, timeout).
    Retry {
        message: String,
        raw: Option<String>,
        retry_after: Option<Duration>,
    },
    /// Final: no retry helps.
    Stop(ModelError),
}

impl OpenAiModel {
    /// A model with its own connection pool allowing `concurrency` requests
    /// in flight.
    pub fn new(config: OpenAiConfig, concurrency: usize) -> Result<Self, ConfigError> {
        let endpoint = EndpointHandle::new(
            config.api_base.expose(),
            concurrency,
            config.connect_timeout,
        )?;
        Self::with_endpoint(config, endpoint)
    }

    /// A model sharing `endpoint` (pool and concurrency limit) with others.
    pub fn with_endpoint(
        config: OpenAiConfig,
        endpoint: EndpointHandle,
    ) -> Result<Self, ConfigError> {
        config
            .validate()
            .map_err(|e| e.within(format!("model `{}` at {}", config.model, config.api_base)))?;
        let url = config.request_url()?;
        let caps = quirks::capabilities(&config.model, config.protocol);
        Ok(Self {
            config,
            url,
            endpoint,
            caps,
            refused: std::sync::Mutex::new(std::collections::BTreeSet::new()),
            notices: std::sync::Mutex::new(std::collections::VecDeque::new()),
        })
    }

    /// Say that attempt `attempt` of `max` failed and is retried after `wait`.
    fn notice_retry(&self, attempt: u32, max: u32, message: &str, wait: Duration) {
        if let Ok(mut notices) = self.notices.lock() {
            if notices.len() >= MAX_NOTICES {
                notices.pop_front();
            }
            notices.push_back(format!(
                "{} at {}: attempt {attempt} of {max} failed ({message}); retrying in {:.1} s",
                self.config.model,
                self.config.api_base,
                wait.as_secs_f64()
            ));
        }
    }

    /// The model's settings.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The API key from the environment, or `None` when it is unset and not
    /// required. Missing-but-required is fatal and names the variable.
    fn api_key(&self) -> Result<Option<String>, ModelError> {
        let var = &self.config.api_key_env;
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(Some(v.trim().to_owned())),
            _ if self.config.key_required => Err(ModelError::Fatal {
                message: format!(
                    "environment variable {var} is not set: it must hold the API key for {} \
                     (model `{}`); set it, or name another variable with --api-key-env",
                    self.config.api_base, self.config.model
                ),
            }),
            _ => Ok(None),
        }
    }

    /// What goes on the wire now: the configured sampling, shaped by the
    /// capability table, less what the server refused earlier.
    pub fn current_sampling(&self) -> Sampling {
        let refused = self.refused.lock().map(|r| r.clone()).unwrap_or_default();
        quirks::sampling(&self.config.sampling(), self.caps, &refused)
    }

    /// Parameters the server refused so far in this run.
    pub fn refused_params(&self) -> Vec<Param> {
        self.refused
            .lock()
            .map(|r| r.iter().copied().collect())
            .unwrap_or_default()
    }

    fn request_body(&self, request: &ModelRequest, sampling: &Sampling) -> Value {
        self.config.protocol.body(&WireRequest {
            model: &self.config.model,
            system: &request.system,
            user: &request.user,
            sampling,
            stream: self.config.stream,
            cache: self.config.prompt_cache,
        })
    }

    /// Remembers that the server refuses `param`; true the first time (the
    /// one time it is said, as a warning).
    fn refuse(&self, param: Param, message: &str) -> bool {
        let new = self
            .refused
            .lock()
            .map(|mut r| r.insert(param))
            .unwrap_or(false);
        if new && let Ok(mut notices) = self.notices.lock() {
            if notices.len() >= MAX_NOTICES {
                notices.pop_front();
            }
            notices.push_back(format!(
                "{} at {} does not take `{}` ({}); {} for the rest of the run",
                self.config.model,
                self.config.api_base,
                param.name(),
                excerpt(message),
                param.remedy()
            ));
        }
        new
    }

    /// The headers of every request: the key as the endpoint wants it, the
    /// protocol's own (`anthropic-version`) and the configured extra ones.
    pub(crate) fn headers(&self, key: Option<&str>) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            let value = match self.config.key_header {
                KeyHeader::Bearer => format!("Bearer {key}"),
                _ => key.to_owned(),
            };
            match HeaderValue::from_str(&value) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    headers.insert(self.config.key_header.name(), v);
                }
                Err(_) => {
                    return Err(ModelError::Fatal {
                        message: format!(
                            "environment variable {} holds a value that is not a valid HTTP header \
                             (stray newline or non-ASCII character?)",
                            self.config.api_key_env
                        ),
                    });
                }
            }
        }
        if self.config.protocol == Protocol::AnthropicMessages {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(wire::anthropic::VERSION),
            );
        }
        for (name, value) in &self.config.headers {
            if let (Ok(n), Ok(v)) = (
                reqwest::header::HeaderName::from_bytes(
                    name.trim().to_ascii_lowercase().as_bytes(),
                ),
                HeaderValue::from_str(value),
            ) {
                headers.insert(n, v);
            }
        }
        Ok(headers)
    }

    /// The HTTP client and the request URL (for `models check`).
    pub(crate) fn transport(&self) -> (&reqwest::Client, &Url) {
        (&self.endpoint.client, &self.url)
    }

    /// The key from its variable, as a request would send it.
    pub(crate) fn key(&self) -> Result<Option<String>, ModelError> {
        self.api_key()
    }

    /// Backoff before attempt `attempt + 1` (after `attempt` failures):
    /// exponential with "equal jitter", or the server's `Retry-After` (capped).
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>, seed: u64) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.config.retry_after_cap);
        }
        let exp = attempt.saturating_sub(1).min(20);
        let base = self
            .config
            .backoff_initial
            .saturating_mul(1u32 << exp)
            .min(self.config.backoff_max);
        let mut rng = seeded(seed ^ u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        base.mul_f64(0.5 + 0.5 * rng.random::<f64>())
    }

    async fn attempt(&self, body: &Value, key: Option<&str>, sent: &Sampling) -> Attempt {
        let headers = match self.headers(key) {
            Ok(h) => h,
            Err(e) => return Attempt::Stop(e),
        };
        let send = self
            .endpoint
            .client
            .post(self.url.clone())
            .headers(headers)
            .json(body)
            .send();
        let mut response = match tokio::time::timeout(self.config.first_byte_timeout, send).await {
            Ok(Ok(r)) => r,
            Err(_) => {
                return Attempt::Retry {
                    message: format!(
                        "no response header within the first-byte timeout of {:.1} s",
                        self.config.first_byte_timeout.as_secs_f64()
                    ),
                    raw: None,
                    retry_after: None,
                };
            }
            Ok(Err(e)) => {
                let kind = if e.is_connect() {
                    "cannot connect"
                } else if e.is_timeout() {
                    "timed out"
                } else {
                    "request failed"
                };
                return Attempt::Retry {
                    message: format!("{kind}: {}", error_chain(&e.without_url())),
                    raw: None,
                    retry_after: None,
                };
            }
        };
        let status = response.status();
        let retry_after = retry_after_from(response.headers(), SystemTime::now());
        // Read the body chunk by chunk, with a stall timeout between chunks.
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match tokio::time::timeout(self.config.stall_timeout, response.chunk()).await {
                Err(_) => {
                    return Attempt::Retry {
                        message: format!(
                            "reply stalled: no data for {:.1} s (HTTP {status})",
                            self.config.stall_timeout.as_secs_f64()
                        ),
                        raw: lossy(&bytes),
                        retry_after: None,
                    };
                }
                Ok(Err(e)) => {
                    return Attempt::Retry {
                        message: format!(
                            "reply body broke off (HTTP {status}): {}",
                            error_chain(&e.without_url())
                        ),
                        raw: lossy(&bytes),
                        retry_after: None,
                    };
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => {
                    if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                        return Attempt::Stop(ModelError::Failed {
                            message: format!(
                                "reply body larger than {} MiB",
                                MAX_BODY_BYTES / (1024 * 1024)
                            ),
                            raw: lossy(&bytes),
                        });
                    }
                    bytes.extend_from_slice(&chunk);
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        self.classify(status, text, retry_after, sent)
    }

    fn classify(
        &self,
        status: StatusCode,
        text: String,
        retry_after: Option<Duration>,
        sent: &Sampling,
    ) -> Attempt {
        let cfg = &self.config;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            // The body is not quoted: some servers echo part of the key.
            let key_state = match std::env::var(&cfg.api_key_env) {
                Ok(v) if !v.trim().is_empty() => format!(
                    "the key in environment variable {} was rejected",
                    cfg.api_key_env
                ),
                _ => format!(
                    "no key was sent because environment variable {} is not set",
                    cfg.api_key_env
                ),
            };
            return Attempt::Stop(ModelError::Fatal {
                message: format!(
                    "authentication failed (HTTP {}) at {} for model `{}`: {key_state}",
                    status.as_u16(),
                    cfg.api_base,
                    cfg.model
                ),
            });
        }
        if status == StatusCode::TOO_MANY_REQUESTS
            || status == StatusCode::REQUEST_TIMEOUT
            || status.is_server_error()
        {
            return Attempt::Retry {
                message: format!("HTTP {}: {}", status.as_u16(), excerpt(&text)),
                raw: Some(text),
                retry_after,
            };
        }
        if status == StatusCode::NOT_FOUND {
            let why = not_found::not_found(cfg, &text);
            return Attempt::Stop(ModelError::Fatal {
                message: format!(
                    "HTTP 404 from {} for model `{}`: {} ({})",
                    redact_url(self.url.as_str()),
                    cfg.model,
                    why.message(cfg),
                    excerpt(&text)
                ),
            });
        }
        if status == StatusCode::BAD_REQUEST
            && let Some(error) = ApiError::parse(&text)
            && let Some(param) = quirks::refused_param(&error, sent)
        {
            return Attempt::Refused {
                param,
                message: error.describe(),
                raw: Some(text),
            };
        }
        if !status.is_success() {
            return Attempt::Stop(ModelError::Failed {
                message: format!("HTTP {}: {}", status.as_u16(), excerpt(&text)),
                raw: Some(text),
            });
        }
        match cfg.protocol.read(&text, cfg.stream) {
            Ok(parsed) => {
                let usage = parsed.usage.map(|mut u| {
                    u.cost_usd = cfg.price.map(|price| price.cost_of(&u));
                    u
                });
                Attempt::Done(ModelReply {
                    text: parsed.text,
                    model: cfg.model.clone(),
                    usage,
                })
            }
            Err(e @ (ReplyError::Truncated(_) | ReplyError::Server { retry: true, .. })) => {
                Attempt::Retry {
                    message: e.to_string(),
                    raw: Some(text),
                    retry_after,
                }
            }
            Err(e) => Attempt::Stop(ModelError::Failed {
                message: e.to_string(),
                raw: Some(text),
            }),
        }
    }
}

#[async_trait::async_trait]
impl LanguageModel for OpenAiModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let key = self.api_key()?;
        let max = self.config.max_attempts.max(1);
        let mut attempt = 0u32;
        // Parameters dropped for this request; each once, so a server that
        // refuses everything cannot loop.
        let mut dropped = 0usize;
        loop {
            let sampling = self.current_sampling();
            let body = self.request_body(request, &sampling);
            attempt += 1;
            let outcome = {
                let permit =
                    self.endpoint
                        .limit
                        .acquire()
                        .await
                        .map_err(|_| ModelError::Fatal {
                            message: format!(
                                "the request limiter of {} was closed",
                                self.config.api_base
                            ),
                        })?;
                let out = match tokio::time::timeout(
                    self.config.request_timeout,
                    self.attempt(&body, key.as_deref(), &sampling),
                )
                .await
                {
                    Ok(out) => out,
                    Err(_) => Attempt::Retry {
                        message: format!(
                            "no complete reply within the request timeout of {:.1} s",
                            self.config.request_timeout.as_secs_f64()
                        ),
                        raw: None,
                        retry_after: None,
                    },
                };
                drop(permit);
                out
            };
            match outcome {
                Attempt::Done(reply) => return Ok(reply),
                Attempt::Stop(err) => return Err(redact(err, key.as_deref())),
                Attempt::Refused {
                    param,
                    message,
                    raw,
                } => {
                    self.refuse(param, &message);
                    dropped += 1;
                    if dropped > 5 {
                        let err = ModelError::Failed {
                            message: format!("HTTP 400: {message}"),
                            raw,
                        };
                        return Err(redact(err, key.as_deref()));
                    }
                    // Not a failed attempt: the same request, without it.
                    attempt -= 1;
                }
                Attempt::Retry {
                    message,
                    raw,
                    retry_after,
                } => {
                    if attempt >= max {
                        let err = ModelError::Failed {
                            message: format!(
                                "{} at {}: gave up after {attempt} attempt{}: {message}",
                                self.config.model,
                                self.config.api_base,
                                if attempt == 1 { "" } else { "s" }
                            ),
                            raw,
                        };
                        return Err(redact(err, key.as_deref()));
                    }
                    let wait = self.backoff(attempt, retry_after, request.seed);
                    let shown = match key.as_deref().filter(|k| k.len() >= 4) {
                        Some(k) => excerpt(&message).replace(k, "[redacted]"),
                        None => excerpt(&message),
                    };
                    self.notice_retry(attempt, max, &shown, wait);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    fn describe(&self) -> String {
        match self.config.protocol {
            Protocol::ChatCompletions => {
                format!("{} @ {}", self.config.model, self.config.api_base)
            }
            p => format!(
                "{} @ {} ({})",
                self.config.model,
                self.config.api_base,
                p.label()
            ),
        }
    }

    fn key_env_vars(&self) -> Vec<String> {
        vec![self.config.api_key_env.clone()]
    }

    fn endpoint_configs(&self) -> Vec<OpenAiConfig> {
        vec![self.config.clone()]
    }

    fn take_notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .map(|mut n| n.drain(..).collect())
            .unwrap_or_default()
    }

    fn secrets(&self) -> Vec<(String, String)> {
        let mut out = super::env_secrets(&self.key_env_vars());
        out.extend(self.config.api_base.secrets());
        out
    }
}

/// Extracts the reply text and `(prompt_tokens, completion_tokens)` from a
/// chat completions body.
pub fn parse_completion(body: &str) -> Result<(String, Option<(u64, u64)>), ReplyError> {
    let p = wire::chat::parse(body)?;
    Ok((
        p.text,
        p.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
    ))
}

/// An error with its sources, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        src = s.source();
    }
    out
}

fn lossy(bytes: &[u8]) -> Option<String> {
    (!bytes.is_empty()).then(|| String::from_utf8_lossy(bytes).into_owned())
}

fn excerpt(text: &str) -> String {
    wire::excerpt(text)
}

/// Removes the key from an error, in case a server echoed it back.
fn redact(err: ModelError, key: Option<&str>) -> ModelError {
    let Some(key) = key.filter(|k| k.len() >= 4) else {
        return err;
    };
    let scrub = |s: String| s.replace(key, "[redacted]");
    match err {
        ModelError::Failed { message, raw } => ModelError::Failed {
            message: scrub(message),
            raw: raw.map(scrub),
        },
        ModelError::Fatal { message } => ModelError::Fatal {
            message: scrub(message),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_with_tls_builds() {
        // Building exercises the rustls config (ring provider + platform verifier).
        let m = OpenAiModel::new(OpenAiConfig::new("gpt-4o", "https://api.openai.com/v1"), 4);
        assert!(m.is_ok(), "{:?}", m.err());
        let m = m.ok();
        assert_eq!(
            m.map(|m| m.describe()).unwrap_or_default(),
            "gpt-4o @ https://api.openai.com/v1"
        );
    }

    #[test]
    fn parses_completions() {
        let ok = r#"{"choices":[{"message":{"role":"assistant","content":"hi"}}],
                     "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;
        assert_eq!(parse_completion(ok), Ok(("hi".to_owned(), Some((12, 3)))));
        let parts = r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#;
        assert_eq!(parse_completion(parts), Ok(("ab".to_owned(), None)));
        let e = |b: &str| {
            parse_completion(b)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(e("{not json").contains("not valid JSON"));
        assert!(e(r#"{"choices":[]}"#).contains("empty `choices`"));
        assert!(e(r#"{"object":"x"}"#).contains("no `choices`"));
        assert!(
            e(r#"{"choices":[{"message":{"content":null},"finish_reason":"length"}]}"#)
                .contains("finish_reason: length")
        );
        assert!(e(r#"{"choices":[{"message":{"content":"  "}}]}"#).contains("empty content"));
        assert!(e(r#"{"error":{"message":"overloaded"}}"#).contains("overloaded"));
    }

    #[test]
    fn backoff_grows_is_jittered_and_capped() {
        let mut c = OpenAiConfig::new("m", "http://localhost/v1");
        c.backoff_initial = Duration::from_millis(100);
        c.backoff_max = Duration::from_millis(1000);
        c.retry_after_cap = Duration::from_secs(5);
        let m = OpenAiModel::new(c, 1);
        let Ok(m) = m else {
            panic!("model builds");
        };
        for attempt in 1..=8u32 {
            let base =
                Duration::from_millis(100 * (1u64 << (attempt - 1))).min(Duration::from_secs(1));
            for seed in 0..20 {
                let d = m.backoff(attempt, None, seed);
                assert!(
                    d >= base / 2 && d <= base,
                    "attempt {attempt}: {d:?} vs {base:?}"
                );
            }
        }
        // Jitter differs between seeds, and is reproducible for one seed.
        assert_ne!(m.backoff(3, None, 1), m.backoff(3, None, 2));
        assert_eq!(m.backoff(3, None, 1), m.backoff(3, None, 1));
        assert_eq!(
            m.backoff(1, Some(Duration::from_secs(2)), 0),
            Duration::from_secs(2)
        );
        assert_eq!(
            m.backoff(1, Some(Duration::from_secs(600)), 0),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn redaction_scrubs_the_key() {
        let e = redact(
            ModelError::Failed {
                message: "bad key sk-secret-123".into(),
                raw: Some("{\"key\":\"sk-secret-123\"}".into()),
            },
            Some("sk-secret-123"),
        );
        let s = format!("{e:?}");
        assert!(
            !s.contains("sk-secret-123") && s.contains("[redacted]"),
            "{s}"
        );
    }
}
