//! Embedding models behind an OpenAI-compatible `POST {api_base}/embeddings`,
//! for the novelty gate. An embeddings model is configured like a chat model:
//! its name (in the card's `general.novelty.embeddings_model`) goes to the
//! user settings' endpoint that lists it (else the one that takes any model,
//! else `OPENAI_BASE_URL`), with that endpoint's key variable, timeout and
//! attempts. Keys never leave the environment.

use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};

use super::openai::{BASE_URL_ENV, install_crypto_provider, is_local_base};
use super::url::redact_url;
use super::user_settings::{EndpointSettings, ModelSettings};
use super::{ConfigError, env_secrets};

/// Something that turns texts into vectors.
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// One vector per text, in order; an error says what failed, for the
    /// run's log.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String>;

    /// "embeddings model `e5` at http://127.0.0.1:8000/v1".
    fn describe(&self) -> String;

    /// `(where, value)` of the secrets it uses (its key), for the redactor.
    fn secrets(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// An OpenAI-compatible `/embeddings` endpoint.
pub struct OpenAiEmbeddings {
    model: String,
    url: Url,
    /// The base as shown (credentials hidden).
    shown: String,
    api_key_env: String,
    key_required: bool,
    max_attempts: u32,
    client: reqwest::Client,
}

impl OpenAiEmbeddings {
    /// The client for `model` at `endpoint` (checked here).
    pub fn new(model: &str, endpoint: &EndpointSettings) -> Result<Self, ConfigError> {
        endpoint.validate()?;
        let shown = redact_url(&endpoint.api_base);
        let mut url = Url::parse(endpoint.api_base.trim())
            .map_err(|e| ConfigError::invalid(format!("invalid api_base `{shown}`: {e}")))?;
        let path = url.path().trim_end_matches('/').to_owned();
        if !path.ends_with("/embeddings") {
            url.set_path(&format!("{path}/embeddings"));
        }
        url.set_fragment(None);
        install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs_f64(endpoint.timeout_secs))
            .user_agent(concat!("galapagos/", env!("CARGO_PKG_VERSION")));
        if is_local_base(&endpoint.api_base) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| ConfigError::HttpClient {
            base: shown.clone(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            model: model.to_owned(),
            url,
            shown,
            api_key_env: endpoint.api_key_env.clone(),
            key_required: endpoint
                .key_required
                .unwrap_or_else(|| !is_local_base(&endpoint.api_base)),
            max_attempts: endpoint.max_attempts,
            client,
        })
    }

    async fn attempt(&self, body: &Value, key: Option<&str>) -> Result<Vec<Vec<f32>>, String> {
        let mut request = self.client.post(self.url.clone()).json(body);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            let excerpt: String = text.chars().take(300).collect();
            return Err(format!("HTTP {status}: {excerpt}"));
        }
        parse_embeddings(&text)
    }
}

/// The vectors of an OpenAI `/embeddings` reply, in `index` order.
pub fn parse_embeddings(body: &str) -> Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or("the reply has no `data` array")?;
    let mut out: Vec<(u64, Vec<f32>)> = Vec::with_capacity(data.len());
    for (i, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(i as u64);
        let vector = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("data[{i}] has no `embedding` array"))?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| format!("data[{i}].embedding holds a value that is not a number"))?;
        out.push((index, vector));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbeddings {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let key = std::env::var(&self.api_key_env)
            .ok()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty());
        if key.is_none() && self.key_required {
            return Err(format!(
                "environment variable {} is not set: it must hold the key for {}",
                self.api_key_env, self.shown
            ));
        }
        let body = json!({"model": self.model, "input": texts});
        let mut last = String::new();
        for attempt in 0..self.max_attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 << attempt.min(5))).await;
            }
            match self.attempt(&body, key.as_deref()).await {
                Ok(vectors) if vectors.len() == texts.len() => return Ok(vectors),
                Ok(vectors) => {
                    return Err(format!(
                        "{} returned {} embeddings for {} texts",
                        self.describe(),
                        vectors.len(),
                        texts.len()
                    ));
                }
                Err(e) => last = e,
            }
        }
        // The error may quote the request; the key is never in it.
        Err(format!("{}: {last}", self.describe()))
    }

    fn describe(&self) -> String {
        format!("embeddings model `{}` at {}", self.model, self.shown)
    }

    fn secrets(&self) -> Vec<(String, String)> {
        env_secrets(std::slice::from_ref(&self.api_key_env))
    }
}

/// The embeddings client for `model`: its endpoint is the user settings'
/// endpoint that lists it, else the one that takes any model, else
/// `OPENAI_BASE_URL` (looked up with `env`).
pub fn embeddings_for(
    model: &str,
    settings: &ModelSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<OpenAiEmbeddings, ConfigError> {
    let context = || format!("embeddings model `{model}`");
    let endpoint = match settings.endpoint_for(model) {
        Some(ep) => ep.clone(),
        None => match env(BASE_URL_ENV).filter(|b| !b.trim().is_empty()) {
            Some(base) => EndpointSettings::for_base(base.trim()),
            None => {
                return Err(ConfigError::invalid(format!(
                    "no endpoint serves it: add it to an endpoint's `models` in the user settings, or set \
                     {BASE_URL_ENV}"
                ))
                .within(context()));
            }
        },
    };
    OpenAiEmbeddings::new(model, &endpoint).map_err(|e| e.within(context()))
}

/// Cosine similarity of two vectors (0 when either is zero or they differ
/// in length).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_in_index_order_and_bad_ones_are_named() {
        let body = r#"{"data":[{"index":1,"embedding":[0.0,1.0]},{"index":0,"embedding":[1,0]}]}"#;
        assert_eq!(
            parse_embeddings(body).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
        assert!(parse_embeddings("{}").unwrap_err().contains("no `data`"));
        assert!(
            parse_embeddings(r#"{"data":[{"embedding":["x"]}]}"#)
                .unwrap_err()
                .contains("not a number")
        );
        assert!(
            parse_embeddings("<html>")
                .unwrap_err()
                .starts_with("not JSON")
        );
    }

    #[test]
    fn cosine_is_one_for_the_same_direction() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn a_model_without_an_endpoint_is_an_error_naming_it() {
        let e = embeddings_for("e5", &ModelSettings::default(), &|_| None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("embeddings model `e5`: no endpoint serves it"),
            "{e}"
        );
        let ok = embeddings_for("e5", &ModelSettings::default(), &|name| {
            (name == BASE_URL_ENV).then(|| "http://127.0.0.1:9/v1".to_owned())
        })
        .unwrap();
        assert_eq!(ok.url.as_str(), "http://127.0.0.1:9/v1/embeddings");
        assert!(!ok.key_required);
    }
}
