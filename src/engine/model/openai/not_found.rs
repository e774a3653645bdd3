//! Why a 404 came back from an endpoint: no such deployment, no such model, or no such API at that URL. The
//! client names it in its error; `models check` turns it into a fix.

use super::OpenAiConfig;
use crate::engine::model::wire::ApiError;

/// Why a 404 came back: no such deployment, no such model, or no such API
/// at that URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotFound {
    Deployment,
    Model,
    Url,
}

impl NotFound {
    /// A plain sentence for the client's error.
    pub fn message(self, cfg: &OpenAiConfig) -> String {
        match self {
            NotFound::Deployment => format!(
                "no deployment named `{}` at this Azure resource (the model is the deployment's name)",
                cfg.model
            ),
            NotFound::Model => format!("the server does not know model `{}`", cfg.model),
            NotFound::Url => "no API at this URL (check api_base)".to_owned(),
        }
    }
}

/// Reads a 404 body.
pub fn not_found(cfg: &OpenAiConfig, body: &str) -> NotFound {
    let Some(e) = ApiError::parse(body) else {
        return NotFound::Url;
    };
    let code = e.code.to_ascii_lowercase();
    let message = e.message.to_ascii_lowercase();
    if code == "deploymentnotfound" || message.contains("deployment") {
        return NotFound::Deployment;
    }
    if code.contains("model") || message.contains("model") || mentions_model(&message, &cfg.model) {
        return NotFound::Model;
    }
    NotFound::Url
}

fn mentions_model(message: &str, model: &str) -> bool {
    !model.is_empty() && message.contains(&model.to_ascii_lowercase())
}
