//! Per-user model settings.
//!
//! The settings file (`settings.json` in the platform config directory, e.g.
//! `~/.config/galapagos/settings.json` on Linux) lists endpoints — base URL,
//! the *name* of the environment variable holding the key, default model,
//! timeouts, attempts, concurrency — and a price table. It never holds keys.
//!
//! [`super::resolve::build_model`] chooses a run's model from them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::openai::{DEFAULT_API_KEY_ENV, KeyHeader, OpenAiConfig, validate_env_name};
use super::presets::{self, Preset};
use super::pricing::PriceTable;
use super::wire::Protocol;

/// Longest timeout accepted in settings (one day), so durations stay sane.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// One endpoint: where, in which protocol, with which key variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EndpointSettings {
    /// A label for the studio ("openai", "local vLLM"); optional.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The provider preset it was made from (`anthropic`, `azure`, `ollama`,
    /// …, see `presets.rs`): what it leaves unset comes from the preset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Base URL, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`;
    /// Azure OpenAI's has a `{deployment}` slot for the model's name.
    pub api_base: String,
    /// The wire protocol (unset: OpenAI Chat Completions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// How the key is sent (unset: the protocol's usual header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_header: Option<KeyHeader>,
    /// Extra headers sent with every request (never a key).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The `api-version` query parameter (Azure OpenAI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Ask for replies as streams of events (the stall limit then guards
    /// every chunk of a long reply).
    #[serde(skip_serializing_if = "is_false")]
    pub stream: bool,
    /// Mark the prompt's stable prefix for the provider's prompt cache.
    #[serde(skip_serializing_if = "is_true")]
    pub prompt_cache: bool,
    /// `reasoning_effort` for reasoning models (`minimal`, `low`, `medium`,
    /// `high`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Name of the environment variable holding the key (never the key).
    pub api_key_env: String,
    /// Whether a key is required; unset = required unless the host is local.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_required: Option<bool>,
    /// Model used when neither the CLI nor the card names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model names served here; empty = any name without a better match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// Default sampling temperature (a card's value wins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Default nucleus sampling (a card's value wins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Default completion token limit (a card's value wins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Longest time one attempt may take, in seconds.
    pub timeout_secs: f64,
    /// Longest wait for the response's header after sending, in seconds (a
    /// server that accepts and never answers fails after this, not after
    /// `timeout_secs`). Above the slowest whole reply: most servers send the
    /// header only with the reply.
    pub first_byte_timeout_secs: f64,
    /// Longest silence between reply chunks, in seconds.
    pub stall_timeout_secs: f64,
    /// Attempts per request (1 = no retries).
    pub max_attempts: u32,
    /// Requests in flight at once to this endpoint; unset: as many as the
    /// run has iterations in flight (its `general.parallel`; a leaderboard's
    /// runs at once times that), so `--parallel 16` puts 16 requests in
    /// flight. Set it below that to spare a server, and the run says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

/// Requests in flight at once to an endpoint when neither its settings nor
/// a run say (a `models check`, a model built for no run).
pub const DEFAULT_CONCURRENCY: usize = 8;

impl Default for EndpointSettings {
    fn default() -> Self {
        Self {
            name: String::new(),
            provider: None,
            api_base: String::new(),
            protocol: None,
            key_header: None,
            headers: BTreeMap::new(),
            api_version: None,
            stream: false,
            prompt_cache: true,
            reasoning_effort: None,
            api_key_env: DEFAULT_API_KEY_ENV.to_owned(),
            key_required: None,
            model: None,
            models: Vec::new(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            timeout_secs: 300.0,
            first_byte_timeout_secs: 120.0,
            stall_timeout_secs: 60.0,
            max_attempts: 4,
            concurrency: None,
        }
    }
}

impl EndpointSettings {
    /// An endpoint with `preset`'s settings and default model.
    pub fn of_preset(preset: &Preset) -> Self {
        EndpointSettings {
            name: preset.name.to_owned(),
            provider: Some(preset.name.to_owned()),
            model: Some(preset.model.to_owned()),
            ..EndpointSettings::default().filled_from(preset)
        }
    }

    /// This endpoint with what it leaves unset taken from `preset`: the base
    /// when empty, the key variable when it is the default, the protocol,
    /// key header, headers and `api-version` when unset.
    pub fn filled_from(mut self, preset: &Preset) -> Self {
        let defaults = EndpointSettings::default();
        if self.api_base.trim().is_empty() {
            preset.api_base.clone_into(&mut self.api_base);
        }
        if self.api_key_env == defaults.api_key_env {
            preset.api_key_env.clone_into(&mut self.api_key_env);
        }
        if self.key_required.is_none() && !preset.key_required {
            self.key_required = Some(false);
        }
        if self.protocol.is_none() {
            self.protocol = Some(preset.protocol);
        }
        if self.key_header.is_none()
            && preset.key_header != KeyHeader::for_protocol(preset.protocol)
        {
            self.key_header = Some(preset.key_header);
        }
        if self.headers.is_empty() {
            self.headers = preset
                .headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>();
        }
        if self.api_version.is_none() {
            self.api_version = preset.api_version.map(str::to_owned);
        }
        self
    }

    /// Default settings for `api_base`.
    pub fn for_base(api_base: &str) -> Self {
        Self {
            api_base: api_base.to_owned(),
            ..Self::default()
        }
    }

    /// This endpoint with what it leaves unset filled from its provider
    /// preset, if it names one.
    pub fn with_preset(self) -> Result<Self, ConfigError> {
        match self.provider.as_deref() {
            None => Ok(self),
            Some(name) => match presets::preset(name) {
                Some(p) => Ok(self.filled_from(p)),
                None => Err(ConfigError::invalid(format!(
                    "unknown provider `{name}` (known: {})",
                    presets::names()
                ))),
            },
        }
    }

    /// The protocol requests are written in.
    pub fn protocol(&self) -> Protocol {
        self.protocol.unwrap_or_default()
    }

    /// The client settings of `model` at this endpoint (timeouts, attempts,
    /// protocol, headers; sampling from the endpoint's defaults).
    pub fn client_config(&self, model: &str) -> Result<OpenAiConfig, ConfigError> {
        let secs = |v: f64| {
            std::time::Duration::try_from_secs_f64(v)
                .map_err(|e| ConfigError::invalid(format!("bad duration {v}: {e}")))
        };
        let mut c = OpenAiConfig::new(model, &self.api_base);
        c.api_key_env = self.api_key_env.clone();
        c.key_required = self
            .key_required
            .unwrap_or(!super::openai::is_local_base(&self.api_base));
        c.temperature = self.temperature;
        c.top_p = self.top_p;
        c.max_tokens = self.max_tokens;
        c.request_timeout = secs(self.timeout_secs)?;
        c.stall_timeout = secs(self.stall_timeout_secs)?;
        c.first_byte_timeout = secs(self.first_byte_timeout_secs)?;
        c.max_attempts = self.max_attempts;
        c.protocol = self.protocol();
        if c.protocol == Protocol::AnthropicMessages {
            // the Anthropic SDK's base (no `/v1`) as well as the API's
            c.api_base = c.api_base.with_version_segment();
        }
        c.key_header = self
            .key_header
            .unwrap_or_else(|| KeyHeader::for_protocol(c.protocol));
        c.headers = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        c.api_version = self.api_version.clone();
        c.stream = self.stream;
        c.prompt_cache = self.prompt_cache;
        c.reasoning_effort = self.reasoning_effort.clone();
        Ok(c)
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let what = if self.name.is_empty() {
            format!("endpoint {}", super::url::redact_url(&self.api_base))
        } else {
            format!("endpoint `{}`", self.name)
        };
        let this = self
            .clone()
            .with_preset()
            .map_err(|e| e.within(what.clone()))?;
        let probe = OpenAiConfig::new("probe", &this.api_base);
        probe
            .api_base
            .request_url(this.protocol().path(), None, this.api_version.as_deref())
            .map_err(|e| e.within(what.clone()))?;
        validate_env_name(&self.api_key_env).map_err(|e| e.within(what.clone()))?;
        for (field, v) in [
            ("timeout_secs", self.timeout_secs),
            ("first_byte_timeout_secs", self.first_byte_timeout_secs),
            ("stall_timeout_secs", self.stall_timeout_secs),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= MAX_TIMEOUT_SECS) {
                return Err(ConfigError::invalid(format!(
                    "{what}: {field} must be in (0, {MAX_TIMEOUT_SECS}], got {v}"
                )));
            }
        }
        if self.max_attempts == 0 || self.max_attempts > 100 {
            return Err(ConfigError::invalid(format!(
                "{what}: max_attempts must be in 1..=100, got {}",
                self.max_attempts
            )));
        }
        if let Some(c) = self.concurrency
            && (c == 0 || c > 4096)
        {
            return Err(ConfigError::invalid(format!(
                "{what}: concurrency must be in 1..=4096, got {c}"
            )));
        }
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty())
            || self.models.iter().any(|m| m.trim().is_empty())
        {
            return Err(ConfigError::invalid(format!("{what}: empty model name")));
        }
        let model = this
            .model
            .clone()
            .or_else(|| this.models.first().cloned())
            .unwrap_or_else(|| "probe".to_owned());
        let probe = this
            .client_config(&model)
            .map_err(|e| e.within(what.clone()))?;
        probe.validate().map_err(|e| e.within(what))
    }

    fn serves(&self, model: &str) -> bool {
        self.models.iter().any(|m| m == model) || self.model.as_deref() == Some(model)
    }
}

/// The per-user model settings (never keys).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSettings {
    /// Endpoints; a model name goes to the first that lists it, else to the
    /// first with an empty `models` list.
    pub endpoints: Vec<EndpointSettings>,
    /// USD per 1M tokens by model name.
    #[serde(skip_serializing_if = "PriceTable::is_empty")]
    pub prices: PriceTable,
    /// Hubs to pull `NAMESPACE/NAME` cards from, in order: hub folders or
    /// the HTTP(S) addresses of built hub sites.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hubs: Vec<String>,
}

impl ModelSettings {
    /// Checks every endpoint and price.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for e in &self.endpoints {
            e.validate()?;
        }
        self.prices.validate()
    }

    /// True when no endpoint is configured.
    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    pub(super) fn endpoint_for(&self, model: &str) -> Option<&EndpointSettings> {
        self.endpoints
            .iter()
            .find(|e| e.serves(model))
            .or_else(|| self.endpoints.iter().find(|e| e.models.is_empty()))
    }

    pub(super) fn endpoint_with_base(&self, api_base: &str) -> Option<&EndpointSettings> {
        let want = normalize_base(api_base);
        self.endpoints
            .iter()
            .find(|e| normalize_base(&e.api_base) == want)
    }
}

/// Where the user settings file lives (`settings.json` in the platform config
/// directory), or `None` when the platform has no home directory.
pub fn user_settings_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("org", "galapagos", "galapagos")
        .map(|d| d.config_dir().join("settings.json"))
}

/// Loads the user settings; a missing file gives the defaults.
pub fn load_user_settings() -> Result<ModelSettings, ConfigError> {
    match user_settings_path() {
        Some(path) => load_settings_from(&path),
        None => Ok(ModelSettings::default()),
    }
}

/// Saves the user settings (creating the config directory).
pub fn save_user_settings(settings: &ModelSettings) -> Result<(), ConfigError> {
    let path = user_settings_path().ok_or(ConfigError::NoConfigDir)?;
    save_settings_to(&path, settings)
}

/// Loads settings from `path`; a missing file gives the defaults. Unknown
/// fields (such as a pasted `api_key`) and bad values are errors.
pub fn load_settings_from(path: &Path) -> Result<ModelSettings, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ModelSettings::default()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut settings: ModelSettings =
        serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    settings.endpoints = settings
        .endpoints
        .into_iter()
        .map(EndpointSettings::with_preset)
        .collect::<Result<_, _>>()
        .map_err(|e| e.within(path.display().to_string()))?;
    settings
        .validate()
        .map_err(|e| e.within(path.display().to_string()))?;
    Ok(settings)
}

/// Validates and writes settings to `path` (through a temporary file and a
/// rename, so a crash never leaves half a file).
pub fn save_settings_to(path: &Path, settings: &ModelSettings) -> Result<(), ConfigError> {
    settings.validate()?;
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConfigError::Write { path, source }
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    }
    let json = serde_json::to_string_pretty(settings)
        .map_err(|e| ConfigError::invalid(format!("cannot serialise settings: {e}")))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json + "\n").map_err(write_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(write_err(path))
}

/// The fields of the settings file that [`update_settings_file`] writes:
/// the endpoints and the prices (what the studio's model dialog edits).
pub const EDITED_FIELDS: [&str; 2] = ["endpoints", "prices"];

/// Write `edited`'s endpoints and prices into the settings file at `path`,
/// read again at this moment: every other key (`hubs`, and keys this build
/// does not know) is kept as the file has it now, whatever was read before.
/// `base` is the settings the edit started from: when the file changed
/// since in a field that is written here, and not to what `edited` holds,
/// nothing is written and [`ConfigError::ChangedOnDisk`] names the fields
/// (a hand edit is never overwritten unseen). Returns the settings as the
/// file now holds them.
pub fn update_settings_file(
    path: &Path,
    base: &ModelSettings,
    edited: &ModelSettings,
) -> Result<ModelSettings, ConfigError> {
    edited.validate()?;
    let parse_err = |message: String| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let mut file = match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(_) => return Err(parse_err("not a JSON object".to_owned())),
            Err(e) => return Err(parse_err(e.to_string())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::Map::new(),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    // the edited fields as the file holds them now, read as a load reads them
    let owned: serde_json::Map<String, serde_json::Value> = file
        .iter()
        .filter(|(k, _)| EDITED_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut now: ModelSettings = serde_json::from_value(serde_json::Value::Object(owned))
        .map_err(|e| parse_err(e.to_string()))?;
    now.endpoints = now
        .endpoints
        .into_iter()
        .map(EndpointSettings::with_preset)
        .collect::<Result<_, _>>()
        .map_err(|e| e.within(path.display().to_string()))?;
    let mut changed = Vec::new();
    if now.endpoints != base.endpoints && now.endpoints != edited.endpoints {
        changed.push("endpoints");
    }
    if now.prices != base.prices && now.prices != edited.prices {
        changed.push("prices");
    }
    if !changed.is_empty() {
        return Err(ConfigError::ChangedOnDisk {
            path: path.to_path_buf(),
            fields: changed.join(", "),
        });
    }
    let serde_json::Value::Object(written) = serde_json::to_value(edited)
        .map_err(|e| ConfigError::invalid(format!("cannot serialise settings: {e}")))?
    else {
        return Err(ConfigError::invalid(
            "settings do not serialise to an object",
        ));
    };
    for field in EDITED_FIELDS {
        match written.get(field) {
            Some(v) => file.insert(field.to_owned(), v.clone()),
            None => file.remove(field),
        };
    }
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConfigError::Write { path, source }
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    }
    let json = serde_json::to_string_pretty(&serde_json::Value::Object(file))
        .map_err(|e| ConfigError::invalid(format!("cannot serialise settings: {e}")))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json + "\n").map_err(write_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(write_err(path))?;
    load_settings_from(path)
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

pub(super) fn normalize_base(base: &str) -> String {
    base.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::pricing::Price;

    #[test]
    fn settings_round_trip_and_reject_keys() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { panic!("tempdir") };
        let path = dir.path().join("sub").join("settings.json");
        assert_eq!(
            load_settings_from(&path).ok(),
            Some(ModelSettings::default())
        );
        let mut s = ModelSettings::default();
        s.endpoints.push(EndpointSettings {
            name: "local".into(),
            model: Some("qwen".into()),
            concurrency: Some(2),
            ..EndpointSettings::for_base("http://localhost:11434/v1")
        });
        s.prices.insert("qwen", Price::new(0.1, 0.2));
        assert!(save_settings_to(&path, &s).is_ok());
        assert_eq!(load_settings_from(&path).ok(), Some(s));

        std::fs::write(
            &path,
            r#"{"endpoints":[{"api_base":"https://x/v1","api_key":"sk-123"}]}"#,
        )
        .ok();
        let err = load_settings_from(&path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("api_key"), "{err}");
        std::fs::write(
            &path,
            r#"{"endpoints":[{"api_base":"https://x/v1","timeout_secs":-1}]}"#,
        )
        .ok();
        let err = load_settings_from(&path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("timeout_secs"), "{err}");
        std::fs::write(&path, "{broken").ok();
        assert!(load_settings_from(&path).is_err());
    }
}
