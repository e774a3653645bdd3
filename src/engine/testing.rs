//! Test doubles for the engine's own tests, the integration tests and the
//! benchmarks: an in-process evaluator registered like any component. Not
//! used by a run unless a registry adds it ([`registry`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::evaluator::{Candidate, Evaluation, Evaluator};
use crate::engine::genome::FITNESS_KEY;
use crate::engine::params::{ParamError, ParamSpec, ParamType};
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
        if self.sleep_ms > 0 && candidate.id > 0 {
            tokio::time::sleep(Duration::from_millis(self.sleep_ms)).await;
        }
        if candidate.content.contains("CRASH") {
            return Evaluation {
                valid: false,
                error: Some("candidate crashed".into()),
                ..Evaluation::default()
            };
        }
        Evaluation {
            valid: true,
            scores: trivial_scores(&candidate.content),
            artifacts: BTreeMap::new(),
            error: None,
        }
    }
}

/// The built-in registry plus the test doubles above.
pub fn registry() -> Arc<Registry> {
    let mut r = Registry::builtin();
    // `trivial` is not a built-in kind, so this cannot be refused.
    r.register(Entry::of::<TrivialEvaluator>()).ok();
    Arc::new(r)
}
