//! The novelty gate (`general.novelty`), between the Proposer and the
//! Evaluator: a child whose similarity to its parent or to one of the
//! population's fittest genomes is at or above the threshold is not
//! evaluated. It becomes an invalid genome carrying a [`Rejection`] (the
//! nearest genome and the similarity), and, with `retry`, the iteration's
//! next attempt is prompted with what it was too close to.
//!
//! Similarity is the normalised token similarity of `proposer::novelty`
//! (the Jaccard index of token sets, comments and formatting ignored), or,
//! with `embeddings_model`, the cosine of the programs' embeddings from an
//! OpenAI-compatible `/embeddings` endpoint. Embeddings of compared genomes
//! are cached by id; a failed embeddings call falls back to the token
//! similarity for that child and says so in the run's log.
//!
//! # In the loop
//!
//! The gate sits between the proposer and the evaluator inside an iteration: a child at or above
//! the threshold of similarity to its parent or to one of the population's fittest (the `Job`'s
//! `compared`, queried at dispatch) becomes an invalid genome carrying `Genome::rejected` (nearest
//! id, similarity, threshold, method) and is never evaluated; with `retry` it is a failed attempt
//! whose reason the next prompt shows. Token similarity is `proposer::novelty`'s (shared with the
//! proposer-level check of the `shinka` card); embeddings come from `model::embeddings` (an
//! OpenAI-compatible `/embeddings` client, resolved from the user settings like a chat model when
//! the scaffold is built), cached per genome id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::card::NoveltySettings;
use crate::engine::genome::{Genome, GenomeId, Rejection};
use crate::engine::model::embeddings::{Embedder, cosine};
use crate::engine::proposer::novelty::most_similar;

/// The gate of one run.
pub(super) struct Gate {
    pub(super) settings: NoveltySettings,
    embedder: Option<Arc<dyn Embedder>>,
    cache: Mutex<HashMap<GenomeId, Arc<Vec<f32>>>>,
}

/// What the gate decided about one child.
pub(super) struct Verdict {
    pub(super) rejection: Option<Rejection>,
    /// Said in the run's log (an embeddings call that failed).
    pub(super) warning: Option<String>,
}

impl Gate {
    pub(super) fn new(settings: NoveltySettings, embedder: Option<Arc<dyn Embedder>>) -> Self {
        Self {
            settings,
            embedder,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// One line for the run's log.
    pub(super) fn describe(&self) -> String {
        let by = self.embedder.as_ref().map_or_else(
            || "token similarity".to_owned(),
            |e| format!("cosine of the {}", e.describe()),
        );
        format!(
            "novelty gate: a child at or above {} similarity ({by}) to its parent or one of the {} fittest is not evaluated{}",
            self.settings.threshold,
            self.settings.pool,
            if self.settings.retry {
                "; its iteration retries, told why"
            } else {
                ""
            }
        )
    }

    /// Compare `child` with `parent` and `pool`.
    pub(super) async fn check(
        &self,
        child: &str,
        parent: &Genome,
        pool: &[Arc<Genome>],
    ) -> Verdict {
        let threshold = self.settings.threshold;
        let reject = |(similarity, nearest): (f64, GenomeId), method: String| {
            (similarity >= threshold).then_some(Rejection {
                nearest,
                similarity,
                threshold,
                method,
            })
        };
        let Some(embedder) = &self.embedder else {
            return Verdict {
                rejection: reject(most_similar(child, parent, pool), "tokens".to_owned()),
                warning: None,
            };
        };
        match self
            .nearest_by_embedding(embedder.as_ref(), child, parent, pool)
            .await
        {
            Ok(found) => Verdict {
                rejection: reject(found, format!("embeddings ({})", embedder.describe())),
                warning: None,
            },
            Err(e) => Verdict {
                rejection: reject(
                    most_similar(child, parent, pool),
                    "tokens (the embeddings call failed)".to_owned(),
                ),
                warning: Some(format!(
                    "novelty gate: {e}; this child was compared by token similarity"
                )),
            },
        }
    }

    /// The most similar of `parent` and `pool` to `child` by the cosine of
    /// their embeddings: (similarity, id).
    async fn nearest_by_embedding(
        &self,
        embedder: &dyn Embedder,
        child: &str,
        parent: &Genome,
        pool: &[Arc<Genome>],
    ) -> Result<(f64, GenomeId), String> {
        let mut compared: Vec<&Genome> = vec![parent];
        for g in pool {
            if compared.iter().all(|c| c.id != g.id) {
                compared.push(g);
            }
        }
        let missing: Vec<&Genome> = {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            compared
                .iter()
                .copied()
                .filter(|g| !cache.contains_key(&g.id))
                .collect()
        };
        let mut texts = vec![child.to_owned()];
        texts.extend(missing.iter().map(|g| g.content.text().into_owned()));
        let mut vectors = embedder.embed(&texts).await?.into_iter();
        let child_vector = vectors.next().ok_or("no embedding for the child")?;
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        for (g, v) in missing.iter().zip(vectors) {
            cache.insert(g.id, Arc::new(v));
        }
        let mut best = (f64::NEG_INFINITY, parent.id);
        for g in &compared {
            if let Some(v) = cache.get(&g.id) {
                let s = cosine(&child_vector, v);
                if s > best.0 {
                    best = (s, g.id);
                }
            }
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Embeds a text as (length, count of `x`).
    struct Counting(std::sync::atomic::AtomicUsize);

    #[async_trait::async_trait]
    impl Embedder for Counting {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
            self.0
                .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, t.matches('x').count() as f32])
                .collect())
        }
        fn describe(&self) -> String {
            "counting".into()
        }
    }

    fn genome(id: GenomeId, content: &str) -> Genome {
        Genome {
            id,
            content: content.into(),
            valid: true,
            ..Genome::default()
        }
    }

    #[tokio::test]
    async fn tokens_reject_a_reformatted_child_and_pass_a_changed_one() {
        let gate = Gate::new(NoveltySettings::default(), None);
        let parent = genome(1, "a = 1\nb = 2\nc = a + b\n");
        let v = gate
            .check("a = 1  # same\nb = 2\nc = a+b\n", &parent, &[])
            .await;
        let r = v.rejection.unwrap();
        assert_eq!(
            (r.nearest, r.similarity, r.method.as_str()),
            (1, 1.0, "tokens")
        );
        let v = gate.check("a = 1\nb = 7\nc = a * b\n", &parent, &[]).await;
        assert!(v.rejection.is_none());
    }

    #[tokio::test]
    async fn embeddings_find_the_nearest_and_are_cached_by_id() {
        let embedder = Arc::new(Counting(0.into()));
        let gate = Gate::new(
            NoveltySettings {
                threshold: 0.999,
                ..NoveltySettings::default()
            },
            Some(embedder.clone()),
        );
        let parent = genome(1, "yyyy");
        let twin = Arc::new(genome(5, "xxxx"));
        let v = gate
            .check("xxxxxxxx", &parent, std::slice::from_ref(&twin))
            .await;
        let r = v.rejection.unwrap();
        assert_eq!(r.nearest, 5);
        assert!(r.similarity > 0.999);
        assert!(r.method.starts_with("embeddings"));
        assert_eq!(embedder.0.load(std::sync::atomic::Ordering::SeqCst), 3);
        // The parent and the twin are cached: only the child is embedded.
        let v = gate.check("yyyyyyyy", &parent, &[twin]).await;
        assert_eq!(v.rejection.unwrap().nearest, 1);
        assert_eq!(embedder.0.load(std::sync::atomic::Ordering::SeqCst), 4);
    }
}
