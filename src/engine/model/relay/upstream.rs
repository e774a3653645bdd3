//! Where the relay forwards to: the run's model endpoints, the protocols
//! each speaks, the name of the variable holding each key (never the key)
//! and the run's prices.

use reqwest::Url;

use super::RelayError;
use crate::engine::model::LanguageModel;
use crate::engine::model::openai::{KeyHeader, OpenAiConfig};
use crate::engine::model::pricing::PriceTable;
use crate::engine::model::url::ApiBase;
use crate::engine::model::wire::Protocol;

/// One endpoint the relay forwards to.
#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamEndpoint {
    /// The base URL (`https://api.openai.com/v1`); shown without the
    /// credentials it may carry.
    pub api_base: ApiBase,
    /// The protocols it answers; a request in another is refused.
    pub protocols: Vec<Protocol>,
    /// The environment variable holding its key.
    pub api_key_env: String,
    /// Whether a missing key is an error (local servers take none).
    pub key_required: bool,
    /// How the key is sent.
    pub key_header: KeyHeader,
    /// Headers added to every forwarded request (never credentials).
    pub headers: Vec<(String, String)>,
    /// The `api-version` query parameter (Azure OpenAI).
    pub api_version: Option<String>,
}

impl UpstreamEndpoint {
    /// An endpoint at `api_base` speaking `protocols`, its key in `api_key_env`
    /// sent the way the first protocol sends it.
    pub fn new(api_base: &str, protocols: &[Protocol], api_key_env: &str) -> Self {
        Self {
            api_base: ApiBase::new(api_base),
            protocols: protocols.to_vec(),
            api_key_env: api_key_env.to_owned(),
            key_required: true,
            key_header: KeyHeader::for_protocol(
                protocols
                    .first()
                    .copied()
                    .unwrap_or(Protocol::ChatCompletions),
            ),
            headers: Vec::new(),
            api_version: None,
        }
    }

    /// The endpoint of one model's settings: the protocol the settings name
    /// (and, at OpenAI itself, both of its protocols).
    pub fn from_config(config: &OpenAiConfig) -> Self {
        let mut protocols = vec![config.protocol];
        let at_openai = Url::parse(config.api_base.expose())
            .ok()
            .and_then(|u| u.host_str().map(|h| h == "api.openai.com"))
            .unwrap_or(false);
        if at_openai {
            for p in [Protocol::ChatCompletions, Protocol::Responses] {
                if !protocols.contains(&p) {
                    protocols.push(p);
                }
            }
        }
        Self {
            api_base: config.api_base.clone(),
            protocols,
            api_key_env: config.api_key_env.clone(),
            key_required: config.key_required,
            key_header: config.key_header,
            headers: config.headers.clone(),
            api_version: config.api_version.clone(),
        }
    }

    /// True when it answers `protocol`.
    pub fn speaks(&self, protocol: Protocol) -> bool {
        self.protocols.contains(&protocol)
    }

    /// The URL of `suffix` (`/chat/completions`, `/models`,
    /// `/messages/count_tokens`) at this endpoint, for `model` (an Azure
    /// deployment slot takes its name).
    pub(super) fn url(&self, suffix: &str, model: Option<&str>) -> Result<Url, String> {
        self.api_base
            .request_url(suffix, model, self.api_version.as_deref())
            .map_err(|e| e.to_string())
    }
}

/// Everything the relay needs to know about where requests go. Holds the
/// names of key variables, never a key: [`super::Relay::start`] reads the
/// values when it starts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RelayUpstream {
    /// In order of preference: a request goes to the first endpoint that
    /// speaks its protocol.
    pub endpoints: Vec<UpstreamEndpoint>,
    /// USD per million tokens by model name: a step's cost.
    pub prices: PriceTable,
    /// The run's models (its llm section's): the only ones a request may
    /// name; none named, none relayed.
    pub models: Vec<String>,
}

impl RelayUpstream {
    /// The endpoints of the run's model settings, with their prices.
    pub fn from_configs(configs: &[OpenAiConfig]) -> Self {
        let mut upstream = Self::default();
        for config in configs {
            let endpoint = UpstreamEndpoint::from_config(config);
            if !upstream.endpoints.contains(&endpoint) {
                upstream.endpoints.push(endpoint);
            }
            if let Some(price) = config.price {
                upstream.prices.insert(&config.model, price);
            }
            if !upstream.models.contains(&config.model) {
                upstream.models.push(config.model.clone());
            }
        }
        upstream
    }

    /// The endpoints of the run's model (each member of an ensemble); an
    /// error when it calls none (the offline model).
    pub fn for_model(model: &dyn LanguageModel) -> Result<Self, RelayError> {
        let upstream = Self::from_configs(&model.endpoint_configs());
        if upstream.endpoints.is_empty() {
            return Err(RelayError::NoEndpoint(model.describe()));
        }
        Ok(upstream)
    }

    /// Whether `model` is one of the run's.
    pub fn names(&self, model: &str) -> bool {
        self.models.iter().any(|m| m == model)
    }

    /// The first endpoint speaking `protocol`.
    pub(super) fn endpoint_for(&self, protocol: Protocol) -> Option<(usize, &UpstreamEndpoint)> {
        self.endpoints
            .iter()
            .enumerate()
            .find(|(_, e)| e.speaks(protocol))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::pricing::Price;

    #[test]
    fn settings_become_endpoints_with_their_prices_and_never_a_key() {
        let mut openai = OpenAiConfig::new("gpt-x", "https://api.openai.com/v1");
        openai.price = Some(Price::new(1.0, 2.0));
        let mut claude = OpenAiConfig::new("claude-x", "https://api.anthropic.com/v1");
        claude.protocol = Protocol::AnthropicMessages;
        claude.key_header = KeyHeader::XApiKey;
        claude.api_key_env = "ANTHROPIC_API_KEY".into();
        let up = RelayUpstream::from_configs(&[openai, claude]);
        assert_eq!(up.endpoints.len(), 2);
        assert!(up.endpoints[0].speaks(Protocol::Responses));
        assert!(!up.endpoints[1].speaks(Protocol::ChatCompletions));
        assert_eq!(
            up.endpoint_for(Protocol::AnthropicMessages).map(|(i, _)| i),
            Some(1)
        );
        assert_eq!(up.prices.lookup("gpt-x"), Some(Price::new(1.0, 2.0)));
        assert_eq!(up.models, ["gpt-x", "claude-x"]);
        assert!(up.names("claude-x") && !up.names("claude-y"));
        let url = up.endpoints[1].url("/messages/count_tokens", Some("claude-x"));
        assert_eq!(
            url.map(|u| u.to_string()).ok().as_deref(),
            Some("https://api.anthropic.com/v1/messages/count_tokens")
        );
        let shown = format!("{up:?}");
        assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
    }

    #[test]
    fn the_offline_model_has_no_endpoint_to_relay_to() {
        let offline = crate::engine::model::default_model();
        assert!(matches!(
            RelayUpstream::for_model(offline.as_ref()),
            Err(RelayError::NoEndpoint(_))
        ));
    }
}
