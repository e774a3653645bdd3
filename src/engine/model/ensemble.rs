//! `EnsembleModel`: several models, one picked per request by weight.
//!
//! The pick draws from a generator seeded with the request's seed (itself
//! drawn from the run's RNG), so the same run seed picks the same members.
//! The reply names the member that answered, so the genome records it.
//!
//! With adaptive weights (`llm.weights: adaptive`) a bandit
//! (`model/bandit.rs`) picks the member instead, learning from the outcomes
//! the loop reports through [`LanguageModel::observe`].

use std::sync::{Arc, Mutex, PoisonError};

use rand::{Rng as _, RngExt as _};

use super::bandit::{Arm, Bandit, BanditSettings, ModelOutcome};
use super::{ConfigError, LanguageModel, ModelError, ModelReply, ModelRequest};
use crate::engine::rng::seeded;

/// One member of an ensemble.
#[derive(Clone)]
pub struct EnsembleMember {
    /// Name recorded on replies (the model name).
    pub name: String,
    /// Relative weight (> 0).
    pub weight: f64,
    /// The model itself.
    pub model: Arc<dyn LanguageModel>,
}

/// Picks one member per request by weight.
pub struct EnsembleModel {
    members: Vec<EnsembleMember>,
    total: f64,
    /// Set for adaptive weights.
    bandit: Option<Mutex<Bandit>>,
}

impl EnsembleModel {
    /// An ensemble of `(name, weight, model)`. Weights must be finite and
    /// positive, and there must be at least one member.
    pub fn new(members: Vec<EnsembleMember>) -> Result<Self, ConfigError> {
        if members.is_empty() {
            return Err(ConfigError::invalid("an ensemble needs at least one model"));
        }
        for m in &members {
            if !(m.weight.is_finite() && m.weight > 0.0) {
                return Err(ConfigError::invalid(format!(
                    "model `{}` has weight {}: weights must be finite and > 0",
                    m.name, m.weight
                )));
            }
        }
        let total = members.iter().map(|m| m.weight).sum();
        Ok(Self {
            members,
            total,
            bandit: None,
        })
    }

    /// This ensemble with adaptive weights: a bandit that starts from the
    /// configured weights.
    #[must_use]
    pub fn adaptive(mut self, settings: BanditSettings) -> Self {
        let weights = self.members.iter().map(|m| m.weight).collect();
        self.bandit = Some(Mutex::new(Bandit::new(settings, weights)));
        self
    }

    /// Each member's name and record (calls, successes, cost), when the
    /// weights are adaptive.
    pub fn arms(&self) -> Option<Vec<(String, Arm)>> {
        let bandit = self.bandit.as_ref()?;
        let bandit = bandit.lock().unwrap_or_else(PoisonError::into_inner);
        Some(
            self.members
                .iter()
                .zip(bandit.arms())
                .map(|(m, a)| (m.name.clone(), *a))
                .collect(),
        )
    }

    /// The members, in order.
    pub fn members(&self) -> &[EnsembleMember] {
        &self.members
    }

    /// Index of the member a request with `seed` goes to, and the seed passed
    /// on to that member (so a sampling member does not reuse the pick's draw).
    pub fn pick(&self, seed: u64) -> (usize, u64) {
        let mut rng = seeded(seed);
        if let Some(bandit) = &self.bandit {
            let member_seed = rng.next_u64();
            let bandit = bandit.lock().unwrap_or_else(PoisonError::into_inner);
            return (bandit.choose(&mut rng), member_seed);
        }
        let u = rng.random::<f64>() * self.total;
        let member_seed = rng.next_u64();
        let mut acc = 0.0;
        for (i, m) in self.members.iter().enumerate() {
            acc += m.weight;
            if u < acc {
                return (i, member_seed);
            }
        }
        // Rounding can leave u == total: the last member takes it.
        (self.members.len() - 1, member_seed)
    }
}

#[async_trait::async_trait]
impl LanguageModel for EnsembleModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let (i, member_seed) = self.pick(request.seed);
        let member = &self.members[i];
        let forwarded = ModelRequest {
            system: request.system.clone(),
            user: request.user.clone(),
            seed: member_seed,
        };
        let mut reply = member.model.complete(&forwarded).await?;
        reply.model = member.name.clone();
        Ok(reply)
    }

    fn describe(&self) -> String {
        if let [only] = self.members.as_slice() {
            return only.model.describe();
        }
        let parts: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{} ×{}", m.model.describe(), m.weight))
            .collect();
        let adaptive = if self.bandit.is_some() {
            ", adaptive weights"
        } else {
            ""
        };
        format!(
            "ensemble of {}: {}{adaptive}",
            self.members.len(),
            parts.join(", ")
        )
    }

    fn observe(&self, outcome: &ModelOutcome) {
        let Some(bandit) = &self.bandit else {
            return;
        };
        if let Some(i) = self.members.iter().position(|m| m.name == outcome.model) {
            bandit
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .observe(i, outcome);
        }
    }

    fn for_run(&self) -> Option<Arc<dyn LanguageModel>> {
        let bandit = self.bandit.as_ref()?;
        let fresh = bandit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .fresh();
        Some(Arc::new(Self {
            members: self.members.clone(),
            total: self.total,
            bandit: Some(Mutex::new(fresh)),
        }))
    }

    fn endpoint_configs(&self) -> Vec<super::OpenAiConfig> {
        let mut configs: Vec<super::OpenAiConfig> = Vec::new();
        for config in self.members.iter().flat_map(|m| m.model.endpoint_configs()) {
            if !configs.contains(&config) {
                configs.push(config);
            }
        }
        configs
    }

    fn key_env_vars(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for name in self.members.iter().flat_map(|m| m.model.key_env_vars()) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    fn is_offline(&self) -> bool {
        self.members.iter().all(|m| m.model.is_offline())
    }

    fn secrets(&self) -> Vec<(String, String)> {
        self.members
            .iter()
            .flat_map(|m| m.model.secrets())
            .collect()
    }

    fn take_notices(&self) -> Vec<String> {
        self.members
            .iter()
            .flat_map(|m| m.model.take_notices())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str);

    #[async_trait::async_trait]
    impl LanguageModel for Named {
        async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
            Ok(ModelReply {
                text: format!("{}:{}", self.0, request.seed),
                model: "inner".into(),
                usage: None,
            })
        }
        fn describe(&self) -> String {
            self.0.to_owned()
        }
    }

    fn member(name: &'static str, weight: f64) -> EnsembleMember {
        EnsembleMember {
            name: name.to_owned(),
            weight,
            model: Arc::new(Named(name)),
        }
    }

    #[test]
    fn rejects_bad_weights_and_empty() {
        assert!(EnsembleModel::new(vec![]).is_err());
        assert!(EnsembleModel::new(vec![member("a", 0.0)]).is_err());
        assert!(EnsembleModel::new(vec![member("a", f64::NAN)]).is_err());
        assert!(EnsembleModel::new(vec![member("a", -1.0)]).is_err());
    }

    #[test]
    fn pick_is_deterministic_and_weighted() {
        let Ok(e) = EnsembleModel::new(vec![member("a", 3.0), member("b", 1.0)]) else {
            panic!("valid ensemble");
        };
        let mut counts = [0usize; 2];
        for seed in 0..4000u64 {
            let (i, s) = e.pick(seed);
            assert_eq!(e.pick(seed), (i, s));
            counts[i] += 1;
        }
        let share = counts[0] as f64 / 4000.0;
        assert!((share - 0.75).abs() < 0.03, "{counts:?}");
        assert_eq!(e.describe(), "ensemble of 2: a ×3, b ×1");
        assert!(!e.is_offline());
    }

    #[tokio::test]
    async fn reply_names_the_member() {
        let Ok(e) = EnsembleModel::new(vec![member("a", 1.0), member("b", 1.0)]) else {
            panic!("valid ensemble");
        };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let r = e
                .complete(&ModelRequest {
                    seed,
                    ..Default::default()
                })
                .await;
            let Ok(r) = r else { panic!("member answers") };
            assert!(r.text.starts_with(&r.model), "{r:?}");
            seen.insert(r.model);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec!["a", "b"]);
    }
}
