//! The language-model interface the proposer talks to, plus the built-in
//! offline model that is the default when no endpoint is configured.
//!
//! # The client and the protocols
//!
//! One client (`openai/mod.rs`, `OpenAiModel`) owns the transport of every real model: the
//! connection pool and concurrency limit per endpoint (`EndpointHandle`), the key read from its
//! variable at request time, the three per-attempt limits (whole exchange, first byte, stall
//! between chunks), retries with backoff and `Retry-After`, and turning an HTTP status into a
//! retry, a failure or a fatal error. What goes on the wire and what a reply means belong to the
//! protocol (`wire/`): `Protocol::{ChatCompletions, Responses, AnthropicMessages}` each write a
//! `WireRequest` (model, system, user, the `Sampling` to send, stream, cache) as their JSON body
//! and read a whole body or a stream of server-sent events (`wire/sse.rs`) into a `Parsed` (text
//! and `TokenUsage`) or a `ReplyError`, of which `Truncated` and a retryable `Server` error
//! (Anthropic's `overloaded_error` event, a Responses `response.failed` with a `server_error`) are
//! retried like a 5xx. Error bodies of every shape are read once (`wire::ApiError`).
//!
//! - **Quirks** (`quirks.rs`): a table of model families by name prefix gives `Capabilities`;
//!   `quirks::sampling` shapes the configured sampling by them and by the parameters the server
//!   refused earlier in the run. A 400 whose `ApiError` names a parameter that was sent
//!   (`quirks::refused_param`) becomes `Attempt::Refused`: the model remembers it (a set behind a
//!   mutex, so iterations in flight share it), says so once through `take_notices`, and sends the
//!   request again without it, not counting an attempt (at most five times per request).
//! - **Presets** (`presets.rs`): one `Preset` per provider (URL, key variable and header, protocol,
//!   headers, `api-version`, a model to start from). An endpoint in the settings names one with
//!   `provider` and is completed from it when loaded (`EndpointSettings::with_preset`);
//!   `--provider` builds the endpoint from it (`ModelOverrides::provider`).
//!   `EndpointSettings::client_config` is the one place an endpoint becomes an `OpenAiConfig`.
//!   Azure's deployment is a `{deployment}` slot in the base URL filled with the model's name
//!   (`ApiBase::request_url`).
//! - **Prompt caching**: the prompt builder keeps everything stable (instructions, the task) in the
//!   system message; the Anthropic protocol marks it `cache_control: ephemeral` when `prompt_cache`
//!   is on. `TokenUsage` carries cache reads and writes and reasoning tokens; `Price::cost_of`
//!   prices each kind.
//! - **Checks** (`check.rs`): one request without retries and a `GET …/models`, on a current-thread
//!   runtime of its own (`check_endpoint`, for the command line and the studio's worker thread);
//!   `diagnose` names the mistake from the status and the error body (`Mistake`), reading a 404
//!   with the client's own diagnosis (`openai/not_found.rs`: no such deployment, model or URL). The studio runs it on a thread named
//!   `galapagos-model-check` and polls its channel each frame (`studio/model_ui/connection.rs`).

pub mod offline;

pub use offline::OfflineModel;

use serde::{Deserialize, Serialize};

use crate::engine::usage::TokenUsage;

/// One model of an ensemble. Endpoints and keys never live in cards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub name: String,
    #[serde(default = "one")]
    pub weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

fn one() -> f64 {
    1.0
}

/// The `llm` section of a card: model names and sampling (no endpoints,
/// keys or secrets).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmSettings {
    /// Model names and weights; none listed is left out of the card (the
    /// model comes from the user's settings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// How calls are shared among several models: by their weights
    /// (`fixed`), or learnt by a bandit (`adaptive`, see `llm.bandit`).
    #[serde(skip_serializing_if = "Weights::is_fixed")]
    pub weights: Weights,
    /// How adaptive weights learn (UCB1 or Thompson, per call or per
    /// dollar); defaults when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandit: Option<BanditSettings>,
}

/// One request to a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRequest {
    pub system: String,
    pub user: String,
    /// A seed drawn from the run's RNG: models that sample (the offline model,
    /// ensembles choosing a member) use it so runs are reproducible.
    pub seed: u64,
}

/// A model's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelReply {
    pub text: String,
    /// Name of the model that answered (an ensemble member's name).
    pub model: String,
    pub usage: Option<TokenUsage>,
}

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The call failed or the reply was unusable; the iteration may retry.
    /// `raw` keeps whatever body came back so the studio can show it.
    #[error("model call failed: {message}")]
    Failed {
        message: String,
        raw: Option<String>,
    },
    /// The run cannot continue (bad credentials, budget exhausted...).
    #[error("{message}")]
    Fatal { message: String },
}

/// Why a model, or the model settings, cannot be set up: a bad address, a
/// value out of range, an unreadable or invalid settings file. It never holds
/// a key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A setting is malformed or out of range; the message names it.
    #[error("{0}")]
    Invalid(String),
    /// `api_key_env` is not a variable's name (its value is not echoed: it
    /// may be a pasted key).
    #[error(
        "api_key_env must be the NAME of an environment variable (letters, digits and `_`, e.g. OPENAI_API_KEY), not a key"
    )]
    KeyEnvName,
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client for {base}: {reason}")]
    HttpClient { base: String, reason: String },
    /// The platform has no config directory for the settings file.
    #[error("no config directory on this platform (no home directory?)")]
    NoConfigDir,
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The settings file changed since it was read, in fields an update
    /// would write: nothing was written.
    #[error(
        "{} changed since it was read ({fields}): nothing was saved, so the file's edit is kept; \
         read it again before saving",
        path.display()
    )]
    ChangedOnDisk {
        path: std::path::PathBuf,
        fields: String,
    },
    /// The settings file does not parse.
    #[error("{}: {message}", path.display())]
    Parse {
        path: std::path::PathBuf,
        message: String,
    },
    /// An error found in `context` (an endpoint, a model, a file).
    #[error("{context}: {source}")]
    In {
        context: String,
        #[source]
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    /// A malformed or out-of-range setting, described by `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// This error, found in `context`.
    #[must_use]
    pub fn within(self, context: impl Into<String>) -> Self {
        Self::In {
            context: context.into(),
            source: Box::new(self),
        }
    }
}

/// A text-in, text-out model. Object-safe and shareable across in-flight
/// iterations.
#[async_trait::async_trait]
pub trait LanguageModel: Send + Sync {
    /// Answer one prompt.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;

    /// A one-line description for logs and the studio ("offline model", "gpt-4o @ https://…").
    fn describe(&self) -> String;

    /// What the model is, as records keep it (a leaderboard's model, a hub
    /// page's Model column): its name and where it answers, never advice
    /// for a person ("add an endpoint", "use --api-base"), which stays in
    /// the command line's and the studio's words.
    fn identity(&self) -> String {
        self.describe()
    }

    /// True for the built-in offline model.
    fn is_offline(&self) -> bool {
        false
    }

    /// Names of the environment variables this model reads its API keys
    /// from (none for a model without a key). The evaluator refuses to pass
    /// them, or a variable holding the same value, to candidates.
    fn key_env_vars(&self) -> Vec<String> {
        Vec::new()
    }

    /// `(where, value)` of every secret this model uses: the value of each
    /// of its key variables that is set, and the credentials in its
    /// endpoint's URL. The run's redactor keeps them out of everything the
    /// run writes, reports or sends.
    fn secrets(&self) -> Vec<(String, String)> {
        env_secrets(&self.key_env_vars())
    }

    /// The settings of every HTTP endpoint this model sends requests to
    /// (none for a model that calls no endpoint): the model relay forwards
    /// a coding agent's requests to them.
    fn endpoint_configs(&self) -> Vec<OpenAiConfig> {
        Vec::new()
    }

    /// What happened on the way to replies that no reply shows: an attempt
    /// that failed and was retried ("… attempt 1 of 4 failed (HTTP 500: …);
    /// retrying in 1.2 s"). Taken, and cleared, by the run, which logs them,
    /// so a slow or failing endpoint is never silent. Default: none.
    fn take_notices(&self) -> Vec<String> {
        Vec::new()
    }

    /// What became of a child this model proposed, told once per genome
    /// that a model call made, in admission order (and again, in order, when
    /// a run resumes). An ensemble with adaptive weights learns from it.
    /// Default: ignored.
    fn observe(&self, _outcome: &ModelOutcome) {}

    /// A copy of this model that has learnt nothing yet, for a new run,
    /// when it learns from [`Self::observe`] (an ensemble with adaptive
    /// weights: a fresh bandit over the same members). Every run starts from
    /// one ([`crate::engine::run_thread::run_plan`]), so runs that share a
    /// model (a leaderboard's) learn each on its own, and a resumed run
    /// rebuilds its state from its genomes alone. `None` (the default): the
    /// model keeps no state between calls; share it.
    fn for_run(&self) -> Option<std::sync::Arc<dyn LanguageModel>> {
        None
    }
}

/// `("$NAME", value)` for each of `vars` that is set to something.
pub fn env_secrets(vars: &[String]) -> Vec<(String, String)> {
    vars.iter()
        .filter_map(|name| {
            let value = std::env::var(name).ok()?;
            (!value.trim().is_empty()).then(|| (format!("${name}"), value))
        })
        .collect()
}

/// A run's secrets, gathered once when it starts (the user settings read
/// once): the names of the variables that hold model keys, which the
/// evaluators refuse to pass to candidates (through
/// [`crate::engine::component::BuildContext::key_vars`]), and the values the
/// run's redactor takes out of everything it writes, reports or sends.
#[derive(Clone, Default)]
pub struct RunSecrets {
    /// `OPENAI_API_KEY` and every provider preset's key variable (set for
    /// other tools, they are there whatever the model), the model's key
    /// variables and those of every endpoint in the user settings; sorted,
    /// without repeats.
    pub key_vars: Vec<String>,
    /// `(where, value)`: the model's own secrets
    /// ([`LanguageModel::secrets`]), the value of every key variable that
    /// is set, and the URL credentials of every endpoint in the settings.
    pub values: Vec<(String, String)>,
}

impl std::fmt::Debug for RunSecrets {
    /// The names only, never a value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunSecrets")
            .field("key_vars", &self.key_vars)
            .field("values", &self.values.len())
            .finish()
    }
}

/// Every secret a run with `model` must never write, report, send or hand
/// to a candidate ([`RunSecrets`]).
pub fn run_secrets(model: &dyn LanguageModel) -> RunSecrets {
    let mut values = model.secrets();
    let mut key_vars = vec![openai::DEFAULT_API_KEY_ENV.to_owned()];
    // Keys of other providers may be set for other tools, whatever the model.
    key_vars.extend(PRESETS.iter().map(|p| p.api_key_env.to_owned()));
    key_vars.extend(model.key_env_vars());
    // An unreadable settings file was reported when the model was chosen;
    // its endpoints cannot be known here.
    if let Ok(settings) = load_user_settings() {
        for endpoint in settings.endpoints {
            values.extend(url::url_secrets(&endpoint.api_base));
            key_vars.push(endpoint.api_key_env);
        }
    }
    key_vars.sort();
    key_vars.dedup();
    values.extend(env_secrets(&key_vars));
    RunSecrets { key_vars, values }
}

/// The model used when nothing is configured: the built-in offline model.
pub fn default_model() -> std::sync::Arc<dyn LanguageModel> {
    std::sync::Arc::new(OfflineModel::new())
}

// Real language models (OpenAI-compatible client, ensembles, settings, prices).
pub mod bandit;
pub mod check;
pub mod embeddings;
pub mod ensemble;
pub mod openai;
pub mod presets;
pub mod pricing;
pub mod quirks;
pub mod redacted;
pub mod relay;
pub mod resolve;
pub mod url;
pub mod user_settings;
pub mod wire;
pub use bandit::{BanditSettings, ModelOutcome, Weights};
pub use ensemble::{EnsembleMember, EnsembleModel};
pub use openai::{EndpointHandle, OpenAiConfig, OpenAiModel};
pub use presets::{PRESETS, Preset};
pub use pricing::{Price, PriceTable};
pub use redacted::RedactedModel;
pub use resolve::{ModelOverrides, build_model};
pub use url::{ApiBase, redact_url};
pub use user_settings::{EndpointSettings, ModelSettings, load_user_settings, save_user_settings};
pub use wire::Protocol;
