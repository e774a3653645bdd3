//! Test doubles for the engine's own tests, the integration tests and the
//! benchmarks: an in-process evaluator registered like any component, a model
//! that answers from a script, a proposer environment. Not used by a run
//! unless a registry adds them ([`registry`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::evaluator::{Candidate, Evaluation, Evaluator};
use crate::engine::genome::{FITNESS_KEY, TokenUsage};
use crate::engine::memory::{Memory, NoneMemory};
use crate::engine::model::{LanguageModel, ModelError, ModelReply, ModelRequest};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::proposer::ProposerEnv;
use crate::engine::registry::{Entry, Registry};

/// The targets of [`TrivialEvaluator`]: the four constants of the test
/// program, in order.
pub const TARGETS: [f64; 4] = [2.5, -1.25, 0.75, 0.0];

/// Parameters of [`TrivialEvaluator`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrivialParams {
    /// Milliseconds to wait before scoring a child (never the initial
    /// program, so a run starts at once).
    pub sleep_ms: u64,
}

/// In-process evaluator: reads every `NAME = number` line in order and scores
/// `1 / (1 + mse)` against [`TARGETS`] (`mse` is reported too). A candidate
/// containing `CRASH` is invalid.
#[derive(Clone, Debug, Default)]
pub struct TrivialEvaluator {
    pub sleep_ms: u64,
    /// Evaluations so far (shared by clones).
    calls: Arc<AtomicU64>,
}

impl TrivialEvaluator {
    /// Evaluations so far, by this evaluator and its clones.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Component for TrivialEvaluator {
    type Slot = dyn Evaluator;
    type Params = TrivialParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "trivial",
        type_name: "TrivialEvaluator",
        summary: "Test double: scores the constants of the test program in-process",
        params: &[ParamSpec {
            key: "sleep_ms",
            doc: "Milliseconds to wait before scoring a child (not the initial program)",
            ty: ParamType::Int {
                min: 0,
                max: 3_600_000,
            },
        }],
    };

    fn build(params: TrivialParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self {
            sleep_ms: params.sleep_ms,
            ..Self::default()
        })
    }
}

/// The score [`TrivialEvaluator`] gives `content`.
pub fn trivial_scores(content: &str) -> BTreeMap<String, f64> {
    let values: Vec<f64> = content
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
        .collect();
    let mse: f64 = TARGETS
        .iter()
        .zip(values.iter().chain(std::iter::repeat(&0.0)))
        .map(|(t, v)| (t - v).powi(2))
        .sum::<f64>()
        / TARGETS.len() as f64;
    let mut scores = BTreeMap::new();
    scores.insert(FITNESS_KEY.to_owned(), 1.0 / (1.0 + mse));
    scores.insert("mse".to_owned(), mse);
    scores
}

#[async_trait::async_trait]
impl Evaluator for TrivialEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.sleep_ms > 0 && candidate.id > 0 {
            tokio::time::sleep(Duration::from_millis(self.sleep_ms)).await;
        }
        if candidate.content.text().contains("CRASH") {
            return Evaluation {
                valid: false,
                error: Some("candidate crashed".into()),
                ..Evaluation::default()
            };
        }
        Evaluation {
            valid: true,
            scores: trivial_scores(&candidate.content.text()),
            ..Evaluation::default()
        }
    }
}

/// A model that answers from a script, in order, and records every request
/// it saw. Made with [`ScriptedModel::new`] it repeats its last entry for
/// ever; made with [`ScriptedModel::replies`] it fails once the script is
/// spent.
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Result<ModelReply, ModelError>>>,
    repeat_last: bool,
    /// The requests seen so far, in order.
    pub seen: Mutex<Vec<ModelRequest>>,
    /// Milliseconds to wait before each answer.
    pub delay_ms: u64,
}

impl ScriptedModel {
    /// Texts (`Ok`) and failures (`Err`; one starting with `FATAL` is fatal,
    /// any other a failed call with a raw body); the last entry repeats.
    /// Every answer reports 10 prompt and 5 completion tokens costing $0.001.
    pub fn new(replies: Vec<Result<String, String>>) -> Self {
        let replies = replies
            .into_iter()
            .map(|r| match r {
                Ok(text) => Ok(ModelReply {
                    text,
                    model: "scripted".into(),
                    usage: Some(TokenUsage {
                        prompt_tokens: 10,
                        completion_tokens: 5,
                        cost_usd: Some(0.001),
                        ..TokenUsage::default()
                    }),
                }),
                Err(m) if m.starts_with("FATAL") => Err(ModelError::Fatal { message: m }),
                Err(m) => Err(ModelError::Failed {
                    message: m,
                    raw: Some("{\"raw\":true}".into()),
                }),
            })
            .collect();
        Self {
            replies: Mutex::new(replies),
            repeat_last: true,
            seen: Mutex::new(Vec::new()),
            delay_ms: 0,
        }
    }

    /// Exactly these answers, in order; then every call fails ("script
    /// exhausted").
    pub fn replies(replies: Vec<Result<ModelReply, ModelError>>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            repeat_last: false,
            seen: Mutex::new(Vec::new()),
            delay_ms: 0,
        })
    }

    /// [`ScriptedModel::replies`] of texts, each reporting 10 prompt and 5
    /// completion tokens (no price).
    pub fn texts(texts: &[&str]) -> Arc<Self> {
        Self::replies(texts.iter().map(|t| Self::text(t)).collect())
    }

    /// One answer: `text`, 10 prompt and 5 completion tokens, no price.
    pub fn text(text: &str) -> Result<ModelReply, ModelError> {
        Ok(ModelReply {
            text: text.to_owned(),
            model: "scripted".to_owned(),
            usage: Some(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
                cost_usd: None,
                ..TokenUsage::default()
            }),
        })
    }

    /// The requests seen so far, in order.
    pub fn seen(&self) -> Vec<ModelRequest> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl LanguageModel for ScriptedModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if self.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        }
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let mut replies = self.replies.lock().unwrap_or_else(PoisonError::into_inner);
        let next = if self.repeat_last && replies.len() == 1 {
            replies.front().cloned()
        } else {
            replies.pop_front()
        };
        next.unwrap_or_else(|| {
            Err(ModelError::Failed {
                message: "script exhausted".into(),
                raw: None,
            })
        })
    }

    fn describe(&self) -> String {
        "scripted test model".into()
    }
}

/// The offline model, answering after `delay_ms`: iterations take real time,
/// so a Stop sent after k genomes lands before the run can finish.
pub struct SlowOffline {
    pub delay_ms: u64,
    inner: crate::engine::model::OfflineModel,
}

impl SlowOffline {
    pub fn model(delay_ms: u64) -> Arc<dyn LanguageModel> {
        Arc::new(Self {
            delay_ms,
            inner: crate::engine::model::OfflineModel::new(),
        })
    }
}

#[async_trait::async_trait]
impl LanguageModel for SlowOffline {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        self.inner.complete(request).await
    }

    fn describe(&self) -> String {
        "offline model, slowed down for tests".into()
    }
}

/// A proposer environment over a [`TrivialEvaluator`] and an empty memory.
pub fn proposer_env() -> ProposerEnv {
    let memory: Box<dyn Memory> = Box::new(NoneMemory);
    ProposerEnv::new(
        Arc::new(TrivialEvaluator::default()),
        Arc::new(tokio::sync::RwLock::new(memory)),
        1,
    )
}

/// The built-in registry plus the test doubles above.
pub fn registry() -> Arc<Registry> {
    let mut r = Registry::builtin();
    // `trivial` is not a built-in kind, so this cannot be refused.
    r.register(Entry::of::<TrivialEvaluator>()).ok();
    Arc::new(r)
}
