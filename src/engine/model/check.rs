//! `galapagos models check` and the studio's Test connection: one tiny
//! request per endpoint, its latency and answer, the models the server
//! lists, and for each way a set-up usually goes wrong (a wrong key, a wrong
//! URL, a wrong Azure deployment, a model the server does not know) a plain
//! message with the fix. Nothing here prints or keeps a key: messages name
//! the variable that holds it.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::openai::{NotFound, OpenAiConfig, OpenAiModel, not_found};
use super::user_settings::{EndpointSettings, ModelSettings};
use super::wire::{ApiError, Sampling, WireRequest, excerpt};
use super::{ConfigError, ModelError};

/// What the check asks the model.
pub const PROMPT: &str = "Reply with the single word: ok";
/// The longest the check waits for one answer.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// Models named in a report before "… and N more".
const MODELS_SHOWN: usize = 12;

/// One way a set-up goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mistake {
    /// The key variable is not set and the endpoint needs a key.
    NoKey,
    /// The server refused the key (401/403).
    WrongKey,
    /// Nothing (or not this API) answers at the base URL.
    WrongUrl,
    /// Azure OpenAI has no deployment of that name.
    WrongDeployment,
    /// The server does not know the model.
    UnknownModel,
    /// Anything else (a server error, a timeout, a refused request).
    Other,
}

impl Mistake {
    /// A short heading.
    pub fn label(self) -> &'static str {
        match self {
            Mistake::NoKey => "no key",
            Mistake::WrongKey => "wrong key",
            Mistake::WrongUrl => "wrong URL",
            Mistake::WrongDeployment => "wrong deployment",
            Mistake::UnknownModel => "unknown model",
            Mistake::Other => "failed",
        }
    }
}

/// A check that failed: what went wrong, in plain words, and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub mistake: Mistake,
    pub message: String,
    pub fix: String,
}

/// A check that got an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub latency: Duration,
    pub text: String,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// The outcome for one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The endpoint's name, or its URL.
    pub endpoint: String,
    /// The URL the request went to (credentials hidden).
    pub url: String,
    pub model: String,
    pub protocol: &'static str,
    pub outcome: Result<Answer, Problem>,
    /// The server's model list: `None` when it has no models endpoint (an
    /// Azure deployment), else what listing it gave.
    pub models: Option<Result<Vec<String>, String>>,
}

impl Report {
    /// The report as lines of text (what `models check` prints).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "{}: model `{}` via {} at {}",
            self.endpoint, self.model, self.protocol, self.url
        )];
        match &self.outcome {
            Ok(a) => {
                let tokens = match (a.prompt_tokens, a.completion_tokens) {
                    (Some(p), Some(c)) => format!(" ({p} prompt + {c} completion tokens)"),
                    _ => String::new(),
                };
                out.push(format!(
                    "  ok in {} ms: {:?}{tokens}",
                    a.latency.as_millis(),
                    excerpt(&a.text)
                ));
            }
            Err(p) => {
                out.push(format!("  {}: {}", p.mistake.label(), p.message));
                out.push(format!("  fix: {}", p.fix));
            }
        }
        match &self.models {
            Some(Ok(names)) if !names.is_empty() => {
                let mut shown = names
                    .iter()
                    .take(MODELS_SHOWN)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                if names.len() > MODELS_SHOWN {
                    shown.push_str(&format!(", … ({} in all)", names.len()));
                }
                out.push(format!("  models listed: {shown}"));
            }
            Some(Ok(_)) => out.push("  models listed: none".to_owned()),
            Some(Err(e)) => out.push(format!("  models list: {e}")),
            None => {}
        }
        out
    }

    /// True when the model answered.
    pub fn ok(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// The longest a run's reachability check waits for one endpoint.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why `model`'s endpoints cannot be reached, asked before a run's first
/// iteration: a connection to each endpoint's host and port is opened and
/// closed again (no request is sent, so nothing is spent), and a refused
/// connection, an unknown host or no answer within [`REACH_TIMEOUT`] is
/// said with the fix, in seconds, instead of after every retry of several
/// iterations (~50 s). `None` when every endpoint answered, or when the
/// model has none (the offline model). An endpoint reached through a proxy
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`) is not checked: the proxy
/// answers for it.
pub async fn unreachable_endpoint(model: &dyn super::LanguageModel) -> Option<String> {
    let mut checked: Vec<String> = Vec::new();
    for cfg in model.endpoint_configs() {
        let Ok(url) = cfg.request_url() else {
            continue;
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            continue;
        };
        let address = format!("{host}:{port}");
        if checked.contains(&address) || behind_proxy(&cfg, url.scheme()) {
            continue;
        }
        checked.push(address.clone());
        let timeout = cfg.connect_timeout.min(REACH_TIMEOUT);
        let why =
            match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&address)).await {
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {:.0} s", timeout.as_secs_f64()),
            };
        return Some(format!(
            "cannot reach the model's endpoint {} ({address}: {why}); check api_base: the host, the \
             port and http or https (for a local server: is it running, and on this port?); \
             `galapagos models check` (the studio: Model settings, Test connection) asks it a \
             question",
            cfg.api_base
        ));
    }
    None
}

/// Whether requests to `cfg`'s endpoint go through a proxy from the
/// environment (a local endpoint never does).
fn behind_proxy(cfg: &OpenAiConfig, scheme: &str) -> bool {
    if super::openai::is_local_base(cfg.api_base.expose()) {
        return false;
    }
    let names: &[&str] = if scheme == "https" {
        &["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
    } else {
        &["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
    };
    names
        .iter()
        .any(|n| std::env::var(n).is_ok_and(|v| !v.trim().is_empty()))
}

/// Checks every endpoint of `settings` (each with its default model, or
/// the first it serves).
pub fn check_settings(settings: &ModelSettings) -> Vec<Result<Report, String>> {
    settings
        .endpoints
        .iter()
        .map(|e| {
            let model = e
                .model
                .clone()
                .or_else(|| e.models.first().cloned())
                .ok_or_else(|| {
                    format!(
                        "{}: no model to ask: set the endpoint's `model`",
                        endpoint_label(e)
                    )
                })?;
            check_endpoint(e, &model).map_err(|err| format!("{}: {err}", endpoint_label(e)))
        })
        .collect()
}

/// The name an endpoint is shown by.
pub fn endpoint_label(e: &EndpointSettings) -> String {
    if e.name.trim().is_empty() {
        "endpoint".to_owned()
    } else {
        format!("endpoint `{}`", e.name.trim())
    }
}

/// Checks `model` at one endpoint, on a runtime of its own (call it from a
/// worker thread, never a UI thread).
pub fn check_endpoint(e: &EndpointSettings, model: &str) -> Result<Report, ConfigError> {
    let e = e.clone().with_preset()?;
    let mut cfg = e.client_config(model)?;
    cfg.max_attempts = 1;
    cfg.request_timeout = cfg.request_timeout.min(CHECK_TIMEOUT);
    cfg.first_byte_timeout = cfg.first_byte_timeout.min(CHECK_TIMEOUT);
    let label = endpoint_label(&e);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| ConfigError::invalid(format!("cannot start the check: {err}")))?;
    runtime.block_on(check_config(cfg, &label))
}

/// Checks one model's configuration.
pub async fn check_config(cfg: OpenAiConfig, label: &str) -> Result<Report, ConfigError> {
    let model = OpenAiModel::new(cfg.clone(), 2)?;
    let (_, url) = model.transport();
    let shown_url = super::url::redact_url(url.as_str());
    let protocol = cfg.protocol.label();
    let key = match model.key() {
        Ok(k) => k,
        Err(ModelError::Fatal { .. } | ModelError::Failed { .. }) => {
            return Ok(Report {
                endpoint: label.to_owned(),
                url: shown_url,
                model: cfg.model.clone(),
                protocol,
                outcome: Err(Problem {
                    mistake: Mistake::NoKey,
                    message: format!(
                        "environment variable {} is not set, and {} needs a key",
                        cfg.api_key_env, cfg.api_base
                    ),
                    fix: format!(
                        "export {}=<your key> in the shell that starts galapagos (keys are only read \
                         from the environment), or name the variable that holds it with api_key_env",
                        cfg.api_key_env
                    ),
                }),
                models: None,
            });
        }
    };
    let models = match cfg.models_url() {
        Some(u) => Some(list_models(&model, key.as_deref(), u).await),
        None => None,
    };
    let outcome = ask(&model, &cfg, key.as_deref(), models.as_ref()).await;
    Ok(Report {
        endpoint: label.to_owned(),
        url: shown_url,
        model: cfg.model.clone(),
        protocol,
        outcome,
        models,
    })
}

/// The one tiny request.
async fn ask(
    model: &OpenAiModel,
    cfg: &OpenAiConfig,
    key: Option<&str>,
    models: Option<&Result<Vec<String>, String>>,
) -> Result<Answer, Problem> {
    let (client, url) = model.transport();
    let mut sampling: Sampling = model.current_sampling();
    // Enough for "ok" (and a reasoning model's thinking).
    sampling.max_tokens = Some(sampling.max_tokens.map_or(256, |m| m.min(256)));
    let body = cfg.protocol.body(&WireRequest {
        model: &cfg.model,
        system: "",
        user: PROMPT,
        sampling: &sampling,
        stream: false,
        cache: false,
    });
    let headers = model.headers(key).map_err(|e| Problem {
        mistake: Mistake::WrongKey,
        message: e.to_string(),
        fix: format!(
            "put the key alone, on one line, in {} (no quotes or spaces)",
            cfg.api_key_env
        ),
    })?;
    let started = Instant::now();
    let sent = client
        .post(url.clone())
        .headers(headers)
        .json(&body)
        .timeout(cfg.request_timeout)
        .send()
        .await;
    let response = match sent {
        Ok(r) => r,
        Err(e) => return Err(unreachable(cfg, e)),
    };
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let latency = started.elapsed();
    if status.is_success() {
        return match cfg.protocol.parse(&text) {
            Ok(p) => Ok(Answer {
                latency,
                text: p.text,
                prompt_tokens: p.usage.map(|u| u.prompt_tokens),
                completion_tokens: p.usage.map(|u| u.completion_tokens),
            }),
            Err(super::wire::ReplyError::EmptyContent { finish_reason }) => Ok(Answer {
                latency,
                text: format!("(an empty answer; finish reason {finish_reason})"),
                prompt_tokens: None,
                completion_tokens: None,
            }),
            Err(e) => Err(Problem {
                mistake: Mistake::WrongUrl,
                message: format!(
                    "HTTP {} from {} is not a {} reply: {e}",
                    status.as_u16(),
                    super::url::redact_url(url.as_str()),
                    cfg.protocol.label()
                ),
                fix: format!(
                    "check api_base (it usually ends in /v1) and the protocol: {} is the base, \
                     and {} is appended to it",
                    cfg.api_base,
                    cfg.protocol.path()
                ),
            }),
        };
    }
    Err(diagnose(cfg, status.as_u16(), &text, models))
}

/// A connection that failed.
fn unreachable(cfg: &OpenAiConfig, e: reqwest::Error) -> Problem {
    let timed_out = e.is_timeout();
    let what = if timed_out {
        format!(
            "no answer within {:.0} s",
            cfg.request_timeout.as_secs_f64()
        )
    } else {
        root_cause(&e.without_url())
    };
    Problem {
        mistake: if timed_out {
            Mistake::Other
        } else {
            Mistake::WrongUrl
        },
        message: format!("cannot reach {}: {what}", cfg.api_base),
        fix: "check api_base: the host, the port and http or https (for a local server: is it \
              running, and on this port?)"
            .to_owned(),
    }
}

/// The innermost error of a chain ("Connection refused (os error 111)",
/// "failed to lookup address information: …"): what the user can act on.
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut src = e.source();
    while let Some(err) = src {
        last = err.to_string();
        src = err.source();
    }
    last
}

/// Names the mistake behind an error status.
pub fn diagnose(
    cfg: &OpenAiConfig,
    status: u16,
    body: &str,
    models: Option<&Result<Vec<String>, String>>,
) -> Problem {
    let error = ApiError::parse(body);
    let said = error
        .as_ref()
        .map(ApiError::describe)
        .unwrap_or_else(|| excerpt(body));
    let host = reqwest::Url::parse(cfg.api_base.expose().split('{').next().unwrap_or(""))
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| cfg.api_base.to_string());
    let listed = |names: Option<&Result<Vec<String>, String>>| match names {
        Some(Ok(n)) if !n.is_empty() => {
            let mut s = n
                .iter()
                .take(MODELS_SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if n.len() > MODELS_SHOWN {
                s.push_str(", …");
            }
            format!("; it lists: {s}")
        }
        _ => String::new(),
    };
    match status {
        // The server's message is not quoted: some echo part of the key.
        401 | 403 => Problem {
            mistake: Mistake::WrongKey,
            message: format!(
                "HTTP {status}: {host} refused the key in {}{}",
                cfg.api_key_env,
                error
                    .as_ref()
                    .map(|e| [&e.code, &e.kind]
                        .into_iter()
                        .find(|t| !t.is_empty())
                        .cloned())
                    .unwrap_or_default()
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default()
            ),
            fix: format!(
                "put a valid key for {host} in {} (export {}=<key>), or name the variable that \
                 holds it with api_key_env / --api-key-env",
                cfg.api_key_env, cfg.api_key_env
            ),
        },
        404 => match not_found(cfg, body) {
            NotFound::Deployment => Problem {
                mistake: Mistake::WrongDeployment,
                message: format!(
                    "HTTP 404: {host} has no deployment named `{}` ({said})",
                    cfg.model
                ),
                fix: "use a deployment's name as the model: Azure AI Foundry → your resource → \
                      Deployments lists them (the name you gave, not the model's)"
                    .to_owned(),
            },
            NotFound::Model => Problem {
                mistake: Mistake::UnknownModel,
                message: format!(
                    "HTTP 404: {host} does not know model `{}` ({said})",
                    cfg.model
                ),
                fix: format!(
                    "name a model the server has{}",
                    listed(models).replacen("; it lists", " — it lists", 1)
                ),
            },
            NotFound::Url => Problem {
                mistake: Mistake::WrongUrl,
                message: format!(
                    "HTTP 404: there is no {} API at {} ({said})",
                    cfg.protocol.label(),
                    cfg.api_base
                ),
                fix: format!(
                    "check api_base: it is the part before {} (it usually ends in /v1)",
                    cfg.protocol.path()
                ),
            },
        },
        400 | 422
            if error.as_ref().is_some_and(|e| {
                let m = e.message.to_ascii_lowercase();
                e.code.to_ascii_lowercase().contains("model")
                    || e.param == "model"
                    || (m.contains("model")
                        && [
                            "not found",
                            "does not exist",
                            "invalid",
                            "unknown",
                            "not supported",
                            "not a valid",
                        ]
                        .iter()
                        .any(|w| m.contains(w)))
            }) =>
        {
            Problem {
                mistake: Mistake::UnknownModel,
                message: format!(
                    "HTTP {status}: {host} does not know model `{}` ({said})",
                    cfg.model
                ),
                fix: format!(
                    "name a model the server has{}",
                    listed(models).replacen("; it lists", " — it lists", 1)
                ),
            }
        }
        _ => Problem {
            mistake: Mistake::Other,
            message: format!("HTTP {status} from {host}: {said}"),
            fix: if status >= 500 || status == 429 {
                "the server is busy or failing: try again later (runs retry this on their own)"
                    .to_owned()
            } else {
                "read the server's message above; the request was the smallest one possible"
                    .to_owned()
            },
        },
    }
}

/// The ids in a models listing (`{"data": [{"id": …}]}` at OpenAI-style
/// servers and Anthropic, `{"models": [{"name": …}]}` at some others).
async fn list_models(
    model: &OpenAiModel,
    key: Option<&str>,
    url: reqwest::Url,
) -> Result<Vec<String>, String> {
    let (client, _) = model.transport();
    let headers = model.headers(key).map_err(|e| e.to_string())?;
    let response = client
        .get(url)
        .headers(headers)
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .map_err(|e| format!("not available ({})", root_cause(&e.without_url())))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!("not available (HTTP {})", status.as_u16()));
    }
    let v: Value = serde_json::from_str(&text).map_err(|_| "not a model list".to_owned())?;
    let items = v
        .get("data")
        .or_else(|| v.get("models"))
        .and_then(Value::as_array)
        .ok_or_else(|| "not a model list".to_owned())?;
    let mut names: Vec<String> = items
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))
                .and_then(Value::as_str)
                .map(|s| s.trim_start_matches("models/").to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(model: &str) -> OpenAiConfig {
        OpenAiConfig::new(model, "https://api.example.com/v1")
    }

    #[test]
    fn each_mistake_is_named_from_the_servers_answer() {
        let c = cfg("gpt-9");
        let d = |status, body: &str| diagnose(&c, status, body, None).mistake;
        assert_eq!(
            d(
                401,
                r#"{"error":{"message":"Incorrect API key provided: sk-…","type":"invalid_request_error","code":"invalid_api_key"}}"#
            ),
            Mistake::WrongKey
        );
        assert_eq!(
            d(
                404,
                r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}"#
            ),
            Mistake::UnknownModel
        );
        assert_eq!(
            d(
                404,
                r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}"#
            ),
            Mistake::WrongDeployment
        );
        assert_eq!(d(404, "<html>Not Found</html>"), Mistake::WrongUrl);
        assert_eq!(
            d(
                404,
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: gpt-9"}}"#
            ),
            Mistake::UnknownModel
        );
        assert_eq!(
            d(
                400,
                r#"{"error":{"message":"model \"gpt-9\" not found, try pulling it first","type":"api_error"}}"#
            ),
            Mistake::UnknownModel
        );
        assert_eq!(d(500, "oops"), Mistake::Other);
        let p = diagnose(&c, 401, "{}", None);
        assert!(p.fix.contains("OPENAI_API_KEY"), "{}", p.fix);
    }
}
