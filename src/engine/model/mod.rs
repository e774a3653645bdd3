//! The language-model interface the proposer talks to, plus the built-in
//! offline model that is the default when no endpoint is configured.

pub mod offline;

pub use offline::OfflineModel;

use crate::engine::genome::TokenUsage;

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

/// A text-in, text-out model. Object-safe and shareable across in-flight
/// iterations.
#[async_trait::async_trait]
pub trait LanguageModel: Send + Sync {
    /// Answer one prompt.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;

    /// A one-line description for logs and the studio ("offline model", "gpt-4o @ https://…").
    fn describe(&self) -> String;

    /// True for the built-in offline model.
    fn is_offline(&self) -> bool {
        false
    }
}

/// The model used when nothing is configured: the built-in offline model.
pub fn default_model() -> std::sync::Arc<dyn LanguageModel> {
    std::sync::Arc::new(OfflineModel::new())
}
