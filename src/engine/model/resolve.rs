//! Choosing the model of a run: CLI overrides > user settings > the card's
//! `llm.models` (with the endpoint from the settings or `OPENAI_BASE_URL`) >
//! the offline fallback. One client pool per endpoint; several models make an
//! ensemble.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::ensemble::{EnsembleMember, EnsembleModel};
use super::openai::{
    BASE_URL_ENV, DEFAULT_API_BASE, EndpointHandle, OpenAiConfig, OpenAiModel, validate_env_name,
};
use super::presets::{self, Preset};
use super::user_settings::{EndpointSettings, ModelSettings, normalize_base};
use super::{ConfigError, LanguageModel, LlmSettings, ModelSpec};

/// Model choices from the command line (`--provider`, `--api-base`,
/// `--model`, `--api-key-env`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelOverrides {
    /// A provider preset: its base (unless `api_base` is given), protocol,
    /// headers and key variable (unless `api_key_env` is given).
    pub provider: Option<String>,
    /// Endpoint base URL for every model of the run.
    pub api_base: Option<String>,
    /// The one model to use (replaces the card's list).
    pub model: Option<String>,
    /// Environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Model calls the run may have in flight at once (its
    /// `general.parallel`; a leaderboard's runs at once times that): the
    /// requests an endpoint whose settings name no `concurrency` allows at
    /// once. `None`: [`super::user_settings::DEFAULT_CONCURRENCY`].
    pub in_flight: Option<usize>,
}

impl ModelOverrides {
    /// True when no flag was given (`in_flight` is the run's, not a flag).
    pub fn is_empty(&self) -> bool {
        self.provider.is_none()
            && self.api_base.is_none()
            && self.model.is_none()
            && self.api_key_env.is_none()
    }
}

/// Builds the run's model. Resolution: CLI overrides > user settings > the
/// card's `llm.models` (endpoint from the settings or `OPENAI_BASE_URL`) >
/// `fallback` (the offline model). Returns the model and a one-line
/// description saying what was chosen and why. Environment variables are
/// read from the process environment.
pub fn build_model(
    card_llm: Option<&LlmSettings>,
    overrides: &ModelOverrides,
    settings: &ModelSettings,
    fallback: Arc<dyn LanguageModel>,
) -> Result<(Arc<dyn LanguageModel>, String), ConfigError> {
    build_model_with_env(card_llm, overrides, settings, fallback, &|name| {
        std::env::var(name).ok()
    })
}

/// [`build_model`] with the environment given as a lookup function (for
/// tests and the studio's preview). Only `OPENAI_BASE_URL` and the key
/// variables are looked up; key values are only checked for presence.
pub fn build_model_with_env(
    card_llm: Option<&LlmSettings>,
    overrides: &ModelOverrides,
    settings: &ModelSettings,
    fallback: Arc<dyn LanguageModel>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Arc<dyn LanguageModel>, String), ConfigError> {
    settings
        .validate()
        .map_err(|e| e.within("model settings"))?;
    if let Some(var) = &overrides.api_key_env {
        validate_env_name(var).map_err(|e| e.within("--api-key-env"))?;
    }
    let preset: Option<&Preset> = match overrides.provider.as_deref() {
        None => None,
        Some(name) => Some(presets::preset(name).ok_or_else(|| {
            ConfigError::invalid(format!(
                "--provider: unknown provider `{name}` (known: {})",
                presets::names()
            ))
        })?),
    };
    let env_base = env(BASE_URL_ENV).filter(|b| !b.trim().is_empty());
    let card_models: &[ModelSpec] = card_llm.map(|l| l.models.as_slice()).unwrap_or(&[]);

    // 1. Which models, and where their names came from.
    let (specs, model_source): (Vec<ModelSpec>, &str) = if let Some(name) = &overrides.model {
        let name = name.trim();
        if name.is_empty() {
            return Err(ConfigError::invalid("--model is empty"));
        }
        let spec = card_models
            .iter()
            .find(|m| m.name == name)
            .cloned()
            .unwrap_or_else(|| plain_spec(name));
        (
            vec![ModelSpec {
                weight: 1.0,
                ..spec
            }],
            "--model",
        )
    } else if !card_models.is_empty() {
        (card_models.to_vec(), "card")
    } else if let Some(name) = overrides
        .api_base
        .as_deref()
        .and_then(|b| settings.endpoint_with_base(b))
        .and_then(|e| e.model.clone())
        .or_else(|| settings.endpoints.iter().find_map(|e| e.model.clone()))
    {
        (vec![plain_spec(&name)], "user settings")
    } else if let Some(p) = preset {
        (vec![plain_spec(p.model)], "--provider")
    } else if overrides.api_base.is_some() {
        return Err(ConfigError::invalid(
            "--api-base is given but no model is named: pass --model NAME, list models in the \
             card's `llm.models`, or set a default model in the user settings",
        ));
    } else {
        let why = if settings.is_empty() && env_base.is_none() {
            "no model configured"
        } else {
            "no model named by --model, the card or the user settings"
        };
        let desc = format!(
            "{}: {why}; use --api-base URL --model NAME or the user settings file for a real model",
            fallback.describe()
        );
        return Ok((fallback, desc));
    };

    // 2. The endpoint of each model.
    let mut resolved: Vec<(ModelSpec, EndpointSettings, &str)> = Vec::new();
    for spec in specs {
        let (mut endpoint, source) = if let Some(p) = preset {
            let mut ep = EndpointSettings::of_preset(p);
            if let Some(base) = &overrides.api_base {
                base.trim().clone_into(&mut ep.api_base);
            }
            (ep, "--provider")
        } else if let Some(base) = &overrides.api_base {
            let ep = settings
                .endpoint_with_base(base)
                .cloned()
                .map(|e| EndpointSettings {
                    api_base: base.trim().to_owned(),
                    ..e
                })
                .unwrap_or_else(|| EndpointSettings::for_base(base.trim()));
            (ep, "--api-base")
        } else if let Some(ep) = settings.endpoint_for(&spec.name) {
            (ep.clone(), "user settings")
        } else if let Some(base) = &env_base {
            (EndpointSettings::for_base(base.trim()), BASE_URL_ENV)
        } else if overrides.model.is_some() || overrides.api_key_env.is_some() {
            (
                EndpointSettings::for_base(DEFAULT_API_BASE),
                "default OpenAI endpoint",
            )
        } else if settings.is_empty() {
            // The card names models but nothing says where to send them.
            let desc = format!(
                "{}: the card names model `{}` but no endpoint is configured; use --api-base URL, \
                 {BASE_URL_ENV} or the user settings file for a real model",
                fallback.describe(),
                spec.name
            );
            return Ok((fallback, desc));
        } else {
            return Err(ConfigError::invalid(format!(
                "model `{}` has no endpoint: no user-settings endpoint lists it and none accepts \
                 any model; add it to an endpoint's `models`, pass --api-base, or set {BASE_URL_ENV}",
                spec.name
            )));
        };
        if let Some(var) = &overrides.api_key_env {
            endpoint.api_key_env = var.clone();
        }
        endpoint.validate()?;
        resolved.push((spec, endpoint, source));
    }

    // 3. Clients: one pool and concurrency limit per endpoint base; an
    // endpoint that sets none follows the run's iterations in flight, and
    // one that sets fewer says so.
    let mut handles: BTreeMap<String, EndpointHandle> = BTreeMap::new();
    let mut members = Vec::with_capacity(resolved.len());
    let mut endpoint_sources: Vec<&str> = Vec::new();
    let mut caps: Vec<String> = Vec::new();
    for (spec, ep, source) in &resolved {
        let config = openai_config(spec, card_llm, ep, settings)?;
        if config.key_required && env(&config.api_key_env).is_none_or(|v| v.trim().is_empty()) {
            return Err(ConfigError::invalid(format!(
                "environment variable {} is not set: it must hold the API key for {} (model `{}`); \
                 set it, or name another variable with --api-key-env",
                config.api_key_env, config.api_base, config.model
            )));
        }
        let key = normalize_base(&ep.api_base);
        let handle = match handles.get(&key) {
            Some(h) => h.clone(),
            None => {
                let limit = match (ep.concurrency, overrides.in_flight) {
                    (Some(c), Some(n)) if (c as usize) < n => {
                        caps.push(format!(
                            "at most {c} requests at once to {} (its `concurrency` setting), \
                             fewer than the run's {n} in flight",
                            config.api_base
                        ));
                        c as usize
                    }
                    (Some(c), _) => c as usize,
                    (None, Some(n)) => n.max(1),
                    (None, None) => super::user_settings::DEFAULT_CONCURRENCY,
                };
                let h = EndpointHandle::new(&ep.api_base, limit, config.connect_timeout)?;
                handles.insert(key, h.clone());
                h
            }
        };
        let model = OpenAiModel::with_endpoint(config, handle)?;
        if !endpoint_sources.contains(source) {
            endpoint_sources.push(source);
        }
        members.push(EnsembleMember {
            name: spec.name.clone(),
            weight: spec.weight,
            model: Arc::new(model),
        });
    }
    let key_vars: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for (_, ep, _) in &resolved {
            if !v.contains(&ep.api_key_env) {
                v.push(ep.api_key_env.clone());
            }
        }
        v
    };
    // each variable as it is: one that is unset sends no key (an endpoint
    // that needs one was refused above)
    let (set, unset): (Vec<&String>, Vec<&String>) = key_vars
        .iter()
        .partition(|var| env(var).is_some_and(|v| !v.trim().is_empty()));
    let mut keys = Vec::new();
    if !set.is_empty() {
        keys.push(format!(
            "key from ${}",
            set.iter()
                .map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", $")
        ));
    }
    if !unset.is_empty() {
        keys.push(format!(
            "no key: ${} {} unset",
            unset
                .iter()
                .map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", $"),
            if unset.len() == 1 { "is" } else { "are" }
        ));
    }
    let caps = if caps.is_empty() {
        String::new()
    } else {
        format!("; {}", caps.join("; "))
    };
    let suffix = format!(
        "(model from {model_source}, endpoint from {}; {}{caps})",
        endpoint_sources.join(" + "),
        keys.join("; ")
    );
    if members.len() == 1
        && let Some(m) = members.pop()
    {
        let desc = format!("{} {suffix}", m.model.describe());
        return Ok((m.model, desc));
    }
    let mut ensemble = EnsembleModel::new(members)?;
    if let Some(llm) = card_llm.filter(|l| !l.weights.is_fixed()) {
        ensemble = ensemble.adaptive(llm.bandit.clone().unwrap_or_default());
    }
    let desc = format!("{} {suffix}", ensemble.describe());
    Ok((Arc::new(ensemble), desc))
}

fn plain_spec(name: &str) -> ModelSpec {
    ModelSpec {
        name: name.to_owned(),
        weight: 1.0,
        temperature: None,
        top_p: None,
        max_tokens: None,
    }
}

/// The client settings of one model: the endpoint's (protocol, headers,
/// timeouts), with sampling from the card's model entry, then the card's
/// `llm` defaults, then the endpoint's defaults.
fn openai_config(
    spec: &ModelSpec,
    card_llm: Option<&LlmSettings>,
    ep: &EndpointSettings,
    settings: &ModelSettings,
) -> Result<OpenAiConfig, ConfigError> {
    let mut c = ep.clone().with_preset()?.client_config(&spec.name)?;
    c.temperature = spec
        .temperature
        .or(card_llm.and_then(|l| l.temperature))
        .or(ep.temperature);
    c.top_p = spec.top_p.or(card_llm.and_then(|l| l.top_p)).or(ep.top_p);
    c.max_tokens = spec
        .max_tokens
        .or(card_llm.and_then(|l| l.max_tokens))
        .or(ep.max_tokens);
    c.price = settings.prices.lookup(&spec.name);
    c.validate()
        .map_err(|e| e.within(format!("model `{}` at {}", spec.name, c.api_base)))?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::pricing::Price;
    use crate::engine::model::{ModelError, ModelReply, ModelRequest};

    struct Offline;

    #[async_trait::async_trait]
    impl LanguageModel for Offline {
        async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
            Ok(ModelReply::default())
        }
        fn describe(&self) -> String {
            "offline model".into()
        }
        fn is_offline(&self) -> bool {
            true
        }
    }

    fn fallback() -> Arc<dyn LanguageModel> {
        Arc::new(Offline)
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn card(models: &[(&str, f64)]) -> LlmSettings {
        LlmSettings {
            models: models
                .iter()
                .map(|(n, w)| ModelSpec {
                    weight: *w,
                    ..plain_spec(n)
                })
                .collect(),
            temperature: Some(0.3),
            top_p: None,
            max_tokens: Some(2048),
            ..LlmSettings::default()
        }
    }

    fn build(
        llm: Option<&LlmSettings>,
        o: &ModelOverrides,
        s: &ModelSettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Arc<dyn LanguageModel>, String), ConfigError> {
        build_model_with_env(llm, o, s, fallback(), env)
    }

    #[test]
    fn nothing_configured_is_offline_and_says_so() {
        let r = build(
            None,
            &ModelOverrides::default(),
            &ModelSettings::default(),
            &no_env,
        );
        let Ok((m, desc)) = r else {
            panic!("{r:?}", r = r.err())
        };
        assert!(m.is_offline());
        assert!(
            desc.contains("offline model") && desc.contains("no model configured"),
            "{desc}"
        );
        // A card naming models, still with no endpoint anywhere: offline too.
        let llm = card(&[("gpt-4o", 1.0)]);
        let r = build(
            Some(&llm),
            &ModelOverrides::default(),
            &ModelSettings::default(),
            &no_env,
        );
        let Ok((m, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(m.is_offline());
        assert!(
            desc.contains("gpt-4o") && desc.contains("no endpoint"),
            "{desc}"
        );
    }

    #[test]
    fn cli_overrides_win() {
        let o = ModelOverrides {
            api_base: Some("http://127.0.0.1:9/v1".into()),
            model: Some("llama3".into()),
            ..ModelOverrides::default()
        };
        let mut s = ModelSettings::default();
        s.endpoints.push(EndpointSettings {
            model: Some("gpt-4o".into()),
            ..EndpointSettings::for_base("https://api.openai.com/v1")
        });
        let llm = card(&[("a", 1.0), ("b", 1.0)]);
        let r = build(Some(&llm), &o, &s, &no_env);
        let Ok((m, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(!m.is_offline());
        assert!(desc.starts_with("llama3 @ http://127.0.0.1:9/v1"), "{desc}");
        assert!(desc.contains("model from --model") && desc.contains("endpoint from --api-base"));
    }

    #[test]
    fn user_settings_then_env_base() {
        let mut s = ModelSettings::default();
        s.endpoints.push(EndpointSettings {
            model: Some("qwen".into()),
            ..EndpointSettings::for_base("http://localhost:11434/v1")
        });
        let r = build(None, &ModelOverrides::default(), &s, &no_env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(
            desc.starts_with("qwen @ http://localhost:11434/v1"),
            "{desc}"
        );
        assert!(desc.contains("model from user settings"), "{desc}");

        // Card models with the endpoint from OPENAI_BASE_URL (local: no key needed).
        let env = |k: &str| (k == BASE_URL_ENV).then(|| "http://localhost:8000/v1".to_owned());
        let llm = card(&[("a", 2.0), ("b", 1.0)]);
        let r = build(
            Some(&llm),
            &ModelOverrides::default(),
            &ModelSettings::default(),
            &env,
        );
        let Ok((m, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(!m.is_offline());
        assert!(
            desc.starts_with("ensemble of 2: a @ http://localhost:8000/v1 ×2"),
            "{desc}"
        );
        assert!(desc.contains("endpoint from OPENAI_BASE_URL"), "{desc}");
    }

    #[test]
    fn missing_key_is_a_clear_error_naming_the_variable() {
        let o = ModelOverrides {
            api_base: None,
            model: Some("gpt-4o".into()),
            api_key_env: Some("MY_LLM_KEY".into()),
            ..ModelOverrides::default()
        };
        let r = build(None, &o, &ModelSettings::default(), &no_env);
        let err = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            err.contains("MY_LLM_KEY") && err.contains("api.openai.com"),
            "{err}"
        );
        // With the variable present the model builds.
        let env = |k: &str| (k == "MY_LLM_KEY").then(|| "sk-test-value".to_owned());
        let r = build(None, &o, &ModelSettings::default(), &env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(
            desc.contains("$MY_LLM_KEY") && !desc.contains("sk-test-value"),
            "{desc}"
        );
        // A key pasted as the variable name is refused without echoing it.
        let o = ModelOverrides {
            api_key_env: Some("sk-live-abc".into()),
            ..o
        };
        let err = build(None, &o, &ModelSettings::default(), &env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("NAME") && !err.contains("sk-live-abc"),
            "{err}"
        );
    }

    #[test]
    fn endpoint_routing_by_model_list() {
        let mut s = ModelSettings::default();
        s.endpoints.push(EndpointSettings {
            models: vec!["local-coder".into()],
            ..EndpointSettings::for_base("http://localhost:8000/v1")
        });
        let llm = card(&[("local-coder", 1.0), ("other", 1.0)]);
        let err = build(Some(&llm), &ModelOverrides::default(), &s, &no_env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("`other` has no endpoint"), "{err}");
        s.endpoints.push(EndpointSettings {
            key_required: Some(false),
            ..EndpointSettings::for_base("https://router.example.com/v1")
        });
        let r = build(Some(&llm), &ModelOverrides::default(), &s, &no_env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(
            desc.contains("local-coder @ http://localhost:8000/v1"),
            "{desc}"
        );
        assert!(
            desc.contains("other @ https://router.example.com/v1"),
            "{desc}"
        );
    }

    #[test]
    fn an_endpoint_follows_the_runs_parallelism_and_says_what_caps_it() {
        let o = ModelOverrides {
            api_base: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            in_flight: Some(16),
            ..ModelOverrides::default()
        };
        let r = build(None, &o, &ModelSettings::default(), &no_env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(!desc.contains("requests at once"), "{desc}");
        let mut s = ModelSettings::default();
        s.endpoints.push(EndpointSettings {
            model: Some("m".into()),
            concurrency: Some(4),
            ..EndpointSettings::for_base("http://127.0.0.1:9/v1")
        });
        let r = build(None, &o, &s, &no_env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(
            desc.contains(
                "at most 4 requests at once to http://127.0.0.1:9/v1 (its `concurrency` \
                 setting), fewer than the run's 16 in flight"
            ),
            "{desc}"
        );
    }

    #[test]
    fn an_unset_key_variable_is_said_unset() {
        let o = ModelOverrides {
            api_base: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            ..ModelOverrides::default()
        };
        let r = build(None, &o, &ModelSettings::default(), &no_env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(
            desc.ends_with("; no key: $OPENAI_API_KEY is unset)") && !desc.contains("key from"),
            "{desc}"
        );
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-x".to_owned());
        let r = build(None, &o, &ModelSettings::default(), &env);
        let Ok((_, desc)) = r else {
            panic!("{:?}", r.err())
        };
        assert!(desc.ends_with("; key from $OPENAI_API_KEY)"), "{desc}");
    }

    #[test]
    fn api_base_alone_needs_a_model_name() {
        let o = ModelOverrides {
            api_base: Some("http://localhost:1/v1".into()),
            ..ModelOverrides::default()
        };
        let err = build(None, &o, &ModelSettings::default(), &no_env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("--model"), "{err}");
    }

    #[test]
    fn sampling_precedence_card_then_endpoint() {
        let ep = EndpointSettings {
            temperature: Some(0.9),
            top_p: Some(0.5),
            max_tokens: Some(100),
            ..EndpointSettings::for_base("http://localhost/v1")
        };
        let llm = card(&[("m", 1.0)]);
        let spec = ModelSpec {
            max_tokens: Some(50),
            ..plain_spec("m")
        };
        let mut s = ModelSettings::default();
        s.prices.insert("m", Price::new(1.0, 2.0));
        let c = openai_config(&spec, Some(&llm), &ep, &s);
        let Ok(c) = c else { panic!("{:?}", c.err()) };
        assert_eq!(c.temperature, Some(0.3)); // card llm level
        assert_eq!(c.top_p, Some(0.5)); // endpoint
        assert_eq!(c.max_tokens, Some(50)); // card model entry
        assert_eq!(c.price, Some(Price::new(1.0, 2.0)));
        assert!(!c.key_required);
    }
}
