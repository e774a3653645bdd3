//! The unit of evolution: one candidate plus everything needed to select,
//! evaluate, trace and inspect it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::engine::agent_run::AgentRun;
pub use crate::engine::tree::Tree;
pub use crate::engine::usage::TokenUsage;

/// Identifier of a genome inside one run. Assigned densely in admission order
/// (the initial program is 0), so it is stable for a given seed and responses.
pub type GenomeId = u64;

/// The metric name whose value is the fitness (see [`Genome::fitness`]).
pub const FITNESS_KEY: &str = "combined_score";

/// `metadata.patch_type` of a child a person wrote (`galapagos inject`, the
/// studio's Edit): its proposer label.
pub const PERSON_PATCH: &str = "human";

/// How a person's child is named where a model's name is shown.
pub const PERSON: &str = "person";

/// The two messages sent to a model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    pub system: String,
    pub user: String,
}

/// Wall-clock spent in each step for this genome, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub prompt_ms: f64,
    pub propose_ms: f64,
    pub evaluate_ms: f64,
}

/// Where a cluster scheduler evaluated a candidate (none for local
/// evaluators).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The scheduler (`slurm`).
    pub scheduler: String,
    /// The job that ran the evaluation: `123`, or `123.4` for step 4 of
    /// allocation 123.
    pub job_id: String,
    /// The node it ran on.
    pub node: String,
    /// Earlier attempts the scheduler ended before they gave a result (a
    /// node failure, a preemption, a cancellation from outside the run),
    /// each saying which job, where and why; the candidate was retried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<String>,
}

/// Per-candidate data used for selection and lineage (a genome's "metadata").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GenomeMeta {
    /// Number of ancestors (root = 0).
    pub generation: u32,
    /// Search-tree depth as tracked by the population (beam depth, etc.).
    #[serde(default)]
    pub depth: u32,
    /// Island the genome lives on, for island populations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub island: Option<u32>,
    /// Name of the model that proposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How the child was produced (diff, full rewrite, crossover, initial).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub patch_type: String,
    /// Feature coordinates and other numeric per-candidate data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, f64>,
}

/// A would-be best evaluated again (`evaluator.confirm`): every
/// evaluation's metrics, and whether they agree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The metrics of every valid evaluation, the first one first.
    pub runs: Vec<BTreeMap<String, f64>>,
    /// The fitness of each of them.
    pub fitness: Vec<f64>,
    /// How the genome's `scores` were made from `runs`: `mean` or `min`.
    pub aggregate: String,
    /// max − min of `fitness` (`None` when not finite).
    #[serde(default)]
    pub spread: Option<f64>,
    /// The evaluations disagree beyond the tolerance, or one failed: never a
    /// parent.
    pub unconfirmed: bool,
    /// Why it is unconfirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Confirmation {
    /// One line for the inspector and logs.
    pub fn summary(&self) -> String {
        let values: Vec<String> = self.fitness.iter().map(|f| format!("{f:.6}")).collect();
        let head = if self.unconfirmed {
            format!(
                "unconfirmed (never a parent): {}",
                self.note.as_deref().unwrap_or("the evaluations disagree")
            )
        } else {
            "confirmed".to_owned()
        };
        format!(
            "{head} · fitness of {} evaluations: {} · scores are their {}",
            self.fitness.len(),
            values.join(", "),
            self.aggregate
        )
    }
}

/// One candidate solution plus everything needed to select, evaluate and
/// trace it, including what the inspector shows: the prompt that produced it,
/// the raw model response, the applied diff, the error, timings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Genome {
    pub id: GenomeId,
    #[serde(default)]
    pub parent_id: Option<GenomeId>,
    #[serde(default)]
    pub inspiration_ids: Vec<GenomeId>,
    /// Iteration that produced it (the initial program is iteration 0).
    pub iteration: u64,
    /// Attempt index inside the iteration (inner retries), from 0.
    #[serde(default)]
    pub attempt: u32,
    /// Whether the evaluator scored it. Invalid genomes are kept for
    /// inspection but are never chosen as parents or inspirations.
    pub valid: bool,
    /// The evaluator's metrics; fitness is `combined_score`.
    #[serde(default)]
    pub scores: BTreeMap<String, f64>,
    /// The evolved program: one file's text for a single-file task, a
    /// folder of files for a repository task (see [`Tree`]).
    pub content: Tree,
    /// Unified diff from the parent's content to this content.
    #[serde(default)]
    pub diff: Option<String>,
    /// Why the genome is invalid (parse failure, no-op, crash, timeout...).
    #[serde(default)]
    pub error: Option<String>,
    /// Evaluator side output: stdout, stderr, traceback, custom artifacts.
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    #[serde(default)]
    pub metadata: GenomeMeta,
    /// The exact prompt sent to the model.
    #[serde(default)]
    pub prompt: Option<Prompt>,
    /// The raw model response, kept for failed proposals too; at most the
    /// card's `general.max_response_bytes` of it (see `response_bytes`).
    #[serde(default)]
    pub response: Option<String>,
    /// The whole reply's length in bytes when `response` keeps only its
    /// first part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<u64>,
    #[serde(default)]
    pub timings: Timings,
    #[serde(default)]
    pub usage: Option<TokenUsage>,
    /// The metric that is this genome's fitness when its task names one
    /// (`None`: `combined_score`, see [`Genome::fitness`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitness_metric: Option<String>,
    /// Metrics the evaluator keeps from the model (ShinkaEvolve's `private`
    /// metrics): recorded and shown to the user, never in a prompt and never
    /// used for selection. The population's copy drops them
    /// ([`Genome::without_transcript`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub private: BTreeMap<String, String>,
    /// Set when it would have become the run's best and was evaluated again
    /// (`evaluator.confirm`); `scores` are then the evaluations' aggregate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// The scheduler's job and node, when a cluster evaluated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Set when the novelty gate rejected it before evaluation (it is then
    /// invalid and was never evaluated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Rejection>,
    /// What a coding agent did when one proposed it (the `agent_command`
    /// proposer): its relayed model calls, its process and what was dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Box<AgentRun>>,
    /// A program written by a person who overrode one of the task's edit
    /// rules (a change outside the EVOLVE-BLOCK markers): which rule, and
    /// where it was broken. Never set on a model's child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_override: Option<String>,
}

/// Why the novelty gate (`general.novelty`) refused a child before its
/// evaluation: the genome it is closest to and how close.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rejection {
    /// The most similar genome among the parent and the compared ones.
    pub nearest: GenomeId,
    /// Its similarity to the child, in [0, 1] (cosine for embeddings).
    pub similarity: f64,
    /// The threshold it was at or above.
    pub threshold: f64,
    /// How it was measured: `tokens`, or `embeddings (MODEL)`.
    pub method: String,
}

impl Rejection {
    /// "0.991 similar to #12 by tokens (threshold 0.98)".
    pub fn summary(&self) -> String {
        format!(
            "{:.3} similar to #{} by {} (threshold {})",
            self.similarity, self.nearest, self.method, self.threshold
        )
    }
}

/// What a genome's fitness is (see [`Genome::fitness`]), for labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitnessBasis<'a> {
    /// The value of this metric (`combined_score`, or the one the task
    /// names).
    Metric(&'a str),
    /// No `combined_score`: the mean of this many finite metrics.
    Mean(usize),
    /// No metrics at all: 0.
    NoMetrics,
}

impl std::fmt::Display for FitnessBasis<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Metric(name) => f.write_str(name),
            Self::Mean(n) => write!(
                f,
                "mean of {n} metric{}, no {FITNESS_KEY}",
                if *n == 1 { "" } else { "s" }
            ),
            Self::NoMetrics => write!(f, "0 (no metrics)"),
        }
    }
}

/// What the rules about a genome read: a [`Genome`] and its compact head
/// ([`crate::engine::head::GenomeHead`], what the studio holds for every
/// genome of a run) both answer these, and each rule ([`GenomeFacts::fitness`],
/// [`GenomeFacts::author`], [`GenomeFacts::unconfirmed`]...) is written once,
/// here, for both. Each type also has the rules as inherent methods of the
/// same names, which call these.
pub trait GenomeFacts {
    /// Whether the evaluator scored it.
    fn is_valid(&self) -> bool;
    /// The value of one metric.
    fn score(&self, metric: &str) -> Option<f64>;
    /// Every metric's value, in metric-name order.
    fn score_values(&self) -> impl Iterator<Item = f64> + '_;
    /// The metric the task names as fitness, if any.
    fn fitness_metric_name(&self) -> Option<&str>;
    /// `metadata.patch_type`.
    fn patch_type_name(&self) -> &str;
    /// `metadata.model`.
    fn model_name(&self) -> Option<&str>;
    /// The confirmation, when it was evaluated again.
    fn confirmation_facts(&self) -> Option<&Confirmation>;

    /// Written by a person, not proposed by a model ([`PERSON_PATCH`]).
    fn is_by_person(&self) -> bool {
        self.patch_type_name() == PERSON_PATCH
    }

    /// Who made it: the model's name, "person" for a person's child, none
    /// for the initial program or a failed call that named no model.
    fn author(&self) -> Option<&str> {
        if self.is_by_person() {
            Some(PERSON)
        } else {
            self.model_name()
        }
    }

    /// The metric whose value is the fitness when present.
    fn fitness_key(&self) -> &str {
        self.fitness_metric_name().unwrap_or(FITNESS_KEY)
    }

    /// Fitness used by selection: `combined_score` (or the metric the task
    /// names, [`Genome::fitness_metric`]) when present and finite, otherwise
    /// the mean of the finite metrics, otherwise 0. Invalid genomes have no
    /// fitness. [`GenomeFacts::fitness_basis`] says which.
    fn fitness(&self) -> Option<f64> {
        if !self.is_valid() {
            return None;
        }
        if let Some(v) = self.score(self.fitness_key()) {
            return Some(if v.is_finite() { v } else { f64::NEG_INFINITY });
        }
        let mut n = 0usize;
        let sum: f64 = self
            .score_values()
            .filter(|v| v.is_finite())
            .inspect(|_| n += 1)
            .sum();
        if n == 0 {
            Some(0.0)
        } else {
            Some(sum / n as f64)
        }
    }

    /// What [`GenomeFacts::fitness`] is for this genome: a metric, the mean
    /// of the metrics, or 0.
    fn fitness_basis(&self) -> FitnessBasis<'_> {
        let key = self.fitness_key();
        if self.score(key).is_some() {
            return FitnessBasis::Metric(key);
        }
        match self.score_values().filter(|v| v.is_finite()).count() {
            0 => FitnessBasis::NoMetrics,
            n => FitnessBasis::Mean(n),
        }
    }

    /// True when it was evaluated again and the evaluations disagreed (see
    /// [`Confirmation`]).
    fn unconfirmed(&self) -> bool {
        self.confirmation_facts().is_some_and(|c| c.unconfirmed)
    }

    /// The fitness selection and a run's best go by: none for an invalid or
    /// an unconfirmed genome (what [`Genome::for_selection`]'s copy has).
    fn selection_fitness(&self) -> Option<f64> {
        if self.unconfirmed() {
            None
        } else {
            self.fitness()
        }
    }

    /// Fitness, with invalid genomes ranked below every valid one.
    fn fitness_or_min(&self) -> f64 {
        self.fitness().unwrap_or(f64::NEG_INFINITY)
    }
}

impl<T: GenomeFacts + ?Sized> GenomeFacts for std::sync::Arc<T> {
    fn is_valid(&self) -> bool {
        (**self).is_valid()
    }
    fn score(&self, metric: &str) -> Option<f64> {
        (**self).score(metric)
    }
    fn score_values(&self) -> impl Iterator<Item = f64> + '_ {
        (**self).score_values()
    }
    fn fitness_metric_name(&self) -> Option<&str> {
        (**self).fitness_metric_name()
    }
    fn patch_type_name(&self) -> &str {
        (**self).patch_type_name()
    }
    fn model_name(&self) -> Option<&str> {
        (**self).model_name()
    }
    fn confirmation_facts(&self) -> Option<&Confirmation> {
        (**self).confirmation_facts()
    }
}

impl GenomeFacts for Genome {
    fn is_valid(&self) -> bool {
        self.valid
    }
    fn score(&self, metric: &str) -> Option<f64> {
        self.scores.get(metric).copied()
    }
    fn score_values(&self) -> impl Iterator<Item = f64> + '_ {
        self.scores.values().copied()
    }
    fn fitness_metric_name(&self) -> Option<&str> {
        self.fitness_metric.as_deref()
    }
    fn patch_type_name(&self) -> &str {
        &self.metadata.patch_type
    }
    fn model_name(&self) -> Option<&str> {
        self.metadata.model.as_deref()
    }
    fn confirmation_facts(&self) -> Option<&Confirmation> {
        self.confirmation.as_ref()
    }
}

/// The rules of [`GenomeFacts`] as inherent methods of a type that answers
/// its facts, so callers need not import the trait; each calls the trait's
/// one copy of the rule.
macro_rules! genome_rules {
    ($t:ty) => {
        impl $t {
            /// Written by a person, not proposed by a model
            /// ([`crate::engine::genome::PERSON_PATCH`]).
            pub fn is_by_person(&self) -> bool {
                $crate::engine::genome::GenomeFacts::is_by_person(self)
            }
            /// Who made it ([`crate::engine::genome::GenomeFacts::author`]).
            pub fn author(&self) -> Option<&str> {
                $crate::engine::genome::GenomeFacts::author(self)
            }
            /// Fitness used by selection
            /// ([`crate::engine::genome::GenomeFacts::fitness`]).
            pub fn fitness(&self) -> Option<f64> {
                $crate::engine::genome::GenomeFacts::fitness(self)
            }
            /// The metric whose value is the fitness when present.
            pub fn fitness_key(&self) -> &str {
                $crate::engine::genome::GenomeFacts::fitness_key(self)
            }
            /// What the fitness is for this genome
            /// ([`crate::engine::genome::GenomeFacts::fitness_basis`]).
            pub fn fitness_basis(&self) -> $crate::engine::genome::FitnessBasis<'_> {
                $crate::engine::genome::GenomeFacts::fitness_basis(self)
            }
            /// Evaluated again, and the evaluations disagreed.
            pub fn unconfirmed(&self) -> bool {
                $crate::engine::genome::GenomeFacts::unconfirmed(self)
            }
            /// The fitness selection and a run's best go by
            /// ([`crate::engine::genome::GenomeFacts::selection_fitness`]).
            pub fn selection_fitness(&self) -> Option<f64> {
                $crate::engine::genome::GenomeFacts::selection_fitness(self)
            }
            /// Fitness, with invalid genomes ranked below every valid one.
            pub fn fitness_or_min(&self) -> f64 {
                $crate::engine::genome::GenomeFacts::fitness_or_min(self)
            }
        }
    };
}
pub(crate) use genome_rules;

genome_rules!(Genome);

impl Genome {
    /// A copy without the prompt and the raw response (the bulk of a genome)
    /// and without the private metrics (which no prompt may show): what the
    /// population keeps in memory once the full record is archived and
    /// announced.
    pub fn without_transcript(&self) -> Self {
        Self {
            prompt: None,
            response: None,
            private: BTreeMap::new(),
            agent: None,
            ..self.clone()
        }
    }

    /// The copy the population and the selection policy are given: without
    /// its transcript, and an unconfirmed genome seen as invalid, so no
    /// policy ever takes it as a parent or an inspiration, nor as the best.
    /// The one place that rule lives (the loop admits and resumes through
    /// it); the record and the events keep the genome as it was scored.
    pub fn for_selection(&self) -> Self {
        let mut copy = self.without_transcript();
        if let Some(c) = self.confirmation.as_ref().filter(|c| c.unconfirmed) {
            copy.valid = false;
            copy.error = Some(format!(
                "unconfirmed: {}",
                c.note.as_deref().unwrap_or("its evaluations disagree")
            ));
        }
        copy
    }
}

/// A total order on f64 for ranking (NaN sorts lowest).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrdF64(pub f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let a = if self.0.is_nan() {
            f64::NEG_INFINITY
        } else {
            self.0
        };
        let b = if other.0.is_nan() {
            f64::NEG_INFINITY
        } else {
            other.0
        };
        a.total_cmp(&b)
    }
}

/// Whether more or less of a metric is better.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    #[default]
    Max,
    Min,
}

impl Direction {
    /// `↑` or `↓`.
    pub fn arrow(self) -> &'static str {
        match self {
            Self::Max => "↑",
            Self::Min => "↓",
        }
    }
}

/// One objective of a multi-objective search (`general.objectives`): a
/// metric, its direction, and the reference point's value for hypervolume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Objective {
    pub metric: String,
    #[serde(default)]
    pub direction: Direction,
    /// The reference point's coordinate (a value every useful program beats);
    /// unset: the initial program's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<f64>,
}

impl Objective {
    /// `genome`'s value of this objective signed so that higher is better
    /// (negated for `min`); `None` when invalid or missing or not finite.
    pub fn signed<G: GenomeFacts + ?Sized>(&self, genome: &G) -> Option<f64> {
        if !genome.is_valid() {
            return None;
        }
        let v = genome.score(&self.metric)?;
        if !v.is_finite() {
            return None;
        }
        Some(match self.direction {
            Direction::Max => v,
            Direction::Min => -v,
        })
    }

    /// "combined_score (max)" (plain text: the studio's font has no arrows).
    pub fn label(&self) -> String {
        let direction = match self.direction {
            Direction::Max => "max",
            Direction::Min => "min",
        };
        format!("{} ({direction})", self.metric)
    }
}

/// `a` dominates `b`: at least as good on every coordinate (higher is
/// better) and better on one.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y)
}

/// A genome with an id and a fitness (`None` = invalid), for unit tests.
#[cfg(test)]
pub(crate) fn scored_for_tests(id: GenomeId, score: Option<f64>) -> std::sync::Arc<Genome> {
    let mut genome = Genome {
        id,
        valid: score.is_some(),
        ..Genome::default()
    };
    if let Some(s) = score {
        genome.scores.insert(FITNESS_KEY.into(), s);
    }
    std::sync::Arc::new(genome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitness_prefers_combined_score_and_invalid_has_none() {
        let mut g = Genome {
            valid: true,
            ..Genome::default()
        };
        g.scores.insert("a".into(), 2.0);
        g.scores.insert("b".into(), 4.0);
        assert_eq!(g.fitness(), Some(3.0));
        g.scores.insert(FITNESS_KEY.into(), 0.5);
        assert_eq!(g.fitness(), Some(0.5));
        g.valid = false;
        assert_eq!(g.fitness(), None);
        assert_eq!(g.fitness_or_min(), f64::NEG_INFINITY);
    }

    #[test]
    fn the_fitness_basis_says_what_fitness_is() {
        let mut g = Genome {
            valid: true,
            ..Genome::default()
        };
        assert_eq!(g.fitness_basis().to_string(), "0 (no metrics)");
        g.scores.insert("sum_radii".into(), 2.5);
        g.scores.insert("output_length".into(), 26.0);
        assert_eq!(
            g.fitness_basis().to_string(),
            "mean of 2 metrics, no combined_score"
        );
        assert_eq!(g.fitness(), Some(14.25));
        g.fitness_metric = Some("sum_radii".into());
        assert_eq!(g.fitness_basis(), FitnessBasis::Metric("sum_radii"));
        assert_eq!(g.fitness(), Some(2.5));
        g.private.insert("secret".into(), "1".into());
        assert!(g.without_transcript().private.is_empty());
    }
}
