//! The request boundary of the run's redactor: a model that takes the run's
//! secrets out of every prompt before the model it wraps sees it (an
//! evaluator's output that echoed a key reaches the next prompt as
//! feedback).

use std::sync::Arc;

use super::{LanguageModel, ModelError, ModelReply, ModelRequest};
use crate::engine::redact::Redactor;

/// `inner`, sent only redacted prompts.
pub struct RedactedModel {
    inner: Arc<dyn LanguageModel>,
    redactor: Arc<Redactor>,
}

impl RedactedModel {
    /// `inner` itself when there is nothing to redact.
    pub fn wrap(inner: Arc<dyn LanguageModel>, redactor: Arc<Redactor>) -> Arc<dyn LanguageModel> {
        if redactor.is_empty() {
            inner
        } else {
            Arc::new(Self { inner, redactor })
        }
    }
}

#[async_trait::async_trait]
impl LanguageModel for RedactedModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let r = &self.redactor;
        if !r.finds(&request.system) && !r.finds(&request.user) {
            return self.inner.complete(request).await;
        }
        let clean = ModelRequest {
            system: r.text(&request.system).into_owned(),
            user: r.text(&request.user).into_owned(),
            seed: request.seed,
        };
        self.inner.complete(&clean).await
    }

    fn describe(&self) -> String {
        self.redactor.text(&self.inner.describe()).into_owned()
    }

    fn identity(&self) -> String {
        self.redactor.text(&self.inner.identity()).into_owned()
    }

    fn is_offline(&self) -> bool {
        self.inner.is_offline()
    }

    fn key_env_vars(&self) -> Vec<String> {
        self.inner.key_env_vars()
    }

    fn secrets(&self) -> Vec<(String, String)> {
        self.inner.secrets()
    }

    fn endpoint_configs(&self) -> Vec<super::OpenAiConfig> {
        self.inner.endpoint_configs()
    }

    fn observe(&self, outcome: &super::ModelOutcome) {
        self.inner.observe(outcome);
    }

    fn take_notices(&self) -> Vec<String> {
        self.inner
            .take_notices()
            .into_iter()
            .map(|n| self.redactor.text(&n).into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Keeps the prompts it is sent.
    #[derive(Default)]
    struct Recording(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl LanguageModel for Recording {
        async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
            if let Ok(mut seen) = self.0.lock() {
                seen.push(format!("{}|{}", request.system, request.user));
            }
            Ok(ModelReply::default())
        }
        fn describe(&self) -> String {
            "recording".to_owned()
        }
    }

    #[test]
    fn a_prompt_reaches_the_model_without_the_secrets() {
        let inner = Arc::new(Recording::default());
        let redactor = Arc::new(Redactor::new([(
            "$K".to_owned(),
            "sk-prompt-secret".to_owned(),
        )]));
        let model = RedactedModel::wrap(inner.clone(), redactor);
        let request = ModelRequest {
            system: "sys sk-prompt-secret".into(),
            user: "stdout: sk-prompt-secret\n".into(),
            seed: 3,
        };
        let rt = tokio::runtime::Builder::new_current_thread().build();
        let done = rt.map(|rt| rt.block_on(model.complete(&request)).is_ok());
        assert!(matches!(done, Ok(true)));
        let seen = inner.0.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen, ["sys [redacted: $K]|stdout: [redacted: $K]\n"]);
    }
}
