//! `CrossoverProposer`: ShinkaEvolve-style patch-type mixing plus novelty
//! rejection.
//!
//! Before each attempt's prompt is built, [`Proposer::edit_mode`] draws the
//! patch type from `patch_types` with `patch_type_probs` (diff = SEARCH/REPLACE
//! edits, full = whole-program rewrite, crossover = the parent and the first
//! inspiration combined by the model into one whole program; crossover is
//! only drawn when there is an inspiration, the other weights are then
//! renormalised). The reply is applied like the diff proposer does (blocks
//! when present, else the fenced program).
//!
//! Novelty rejection: the child's token-Jaccard similarity (see
//! [`super::novelty`]) to its parent and to the population's fittest
//! `novelty_pool` genomes is computed before any evaluation. Above
//! `novelty_threshold` (or when the edit changed nothing) the child is a
//! near-duplicate: the proposer asks the model again (a new seed, and a note
//! saying what was too similar) up to `max_novelty_attempts` times. If every
//! sample is a near-duplicate the proposal fails without an evaluator call.
//! Resamples are recorded in the proposal's `patch_type`, e.g.
//! `diff (resampled 1 near-duplicate: 1.000 to #4)`.

use std::fmt::Write as _;
use std::sync::Arc;

use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use super::apply_reply;
use super::novelty::most_similar;
use super::{Proposal, ProposalError, ProposalRequest, Proposer};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::{Genome, GenomeId, TokenUsage};
use crate::engine::model::{LanguageModel, ModelError, ModelRequest};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::prompt::EditMode;
use crate::engine::rng::SearchRng;
use crate::engine::task::program_folder::EditRules;
use crate::engine::text::patch::PatchOptions;

/// Parameters of [`CrossoverProposer`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrossoverParams {
    /// Patch types to mix: `diff`, `full`, `crossover` (alias `cross`).
    pub patch_types: Vec<String>,
    /// Relative weight of each patch type (normalised; same length).
    pub patch_type_probs: Vec<f64>,
    /// A child whose token-Jaccard similarity to its parent or a pool member
    /// is above this is a near-duplicate (1.0 turns novelty rejection off).
    pub novelty_threshold: f64,
    /// How many of the population's fittest genomes the child is compared with.
    pub novelty_pool: usize,
    /// Extra model calls allowed to replace a near-duplicate.
    pub max_novelty_attempts: usize,
    /// A child longer than this many characters is rejected.
    pub max_code_length: usize,
}

impl Default for CrossoverParams {
    fn default() -> Self {
        Self {
            patch_types: vec!["diff".into(), "full".into(), "crossover".into()],
            patch_type_probs: vec![0.6, 0.3, 0.1],
            novelty_threshold: 0.995,
            novelty_pool: 20,
            max_novelty_attempts: 3,
            max_code_length: 60_000,
        }
    }
}

/// The patch-mixing proposer with novelty rejection (card kind `crossover`).
pub struct CrossoverProposer {
    model: Arc<dyn LanguageModel>,
    params: CrossoverParams,
    /// (mode, normalised probability), in `patch_types` order.
    mix: Vec<(EditMode, f64)>,
    language: String,
    /// Which files of a folder program may change.
    rules: EditRules,
}

impl std::fmt::Debug for CrossoverProposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossoverProposer")
            .field("model", &self.model.describe())
            .field("params", &self.params)
            .field("language", &self.language)
            .finish()
    }
}

/// The name a mode is recorded under in `GenomeMeta::patch_type`.
pub fn mode_name(mode: EditMode) -> &'static str {
    match mode {
        EditMode::Diff => "diff",
        EditMode::FullRewrite => "full",
        EditMode::Crossover => "crossover",
    }
}

fn parse_mode(name: &str) -> Option<EditMode> {
    match name.trim().to_ascii_lowercase().as_str() {
        "diff" => Some(EditMode::Diff),
        "full" | "full_rewrite" | "rewrite" => Some(EditMode::FullRewrite),
        "crossover" | "cross" => Some(EditMode::Crossover),
        _ => None,
    }
}

/// A well-mixed 64-bit value (splitmix64), for per-resample model seeds.
fn mix_seed(seed: u64, salt: u64) -> u64 {
    let mut z = seed.wrapping_add(salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The normalised patch-type distribution of `params`, or why it is not one.
fn mix_of(params: &CrossoverParams) -> Result<Vec<(EditMode, f64)>, ParamError> {
    if params.patch_types.is_empty() {
        return Err(ParamError {
            key: "patch_types".into(),
            reason: "name at least one patch type (diff, full, crossover)".into(),
        });
    }
    if params.patch_types.len() != params.patch_type_probs.len() {
        return Err(ParamError {
            key: "patch_type_probs".into(),
            reason: format!(
                "{} weights for {} patch types; give one weight per patch type",
                params.patch_type_probs.len(),
                params.patch_types.len()
            ),
        });
    }
    let mut mix = Vec::new();
    for (name, p) in params.patch_types.iter().zip(&params.patch_type_probs) {
        let mode = parse_mode(name).ok_or_else(|| ParamError {
            key: "patch_types".into(),
            reason: format!("unknown patch type `{name}`; known: diff, full, crossover"),
        })?;
        if !p.is_finite() || *p < 0.0 {
            return Err(ParamError {
                key: "patch_type_probs".into(),
                reason: format!("weight {p} of `{name}` must be a non-negative number"),
            });
        }
        mix.push((mode, *p));
    }
    let total: f64 = mix.iter().map(|(_, p)| p).sum();
    if total <= 0.0 {
        return Err(ParamError {
            key: "patch_type_probs".into(),
            reason: "the weights sum to 0; give at least one patch type a positive weight".into(),
        });
    }
    for (_, p) in &mut mix {
        *p /= total;
    }
    Ok(mix)
}

impl Component for CrossoverProposer {
    type Slot = dyn Proposer;
    type Params = CrossoverParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "crossover",
        type_name: "CrossoverProposer",
        summary: "Patch-type mixing (diff / full rewrite / crossover) with token-Jaccard novelty \
                  rejection before evaluation (ShinkaEvolve)",
        params: &[
            ParamSpec {
                key: "patch_types",
                doc: "Patch types to mix: diff (SEARCH/REPLACE), full (whole-program rewrite), \
                      crossover (parent + first inspiration combined)",
                ty: ParamType::TextList,
            },
            ParamSpec {
                key: "patch_type_probs",
                doc: "Relative weight of each patch type, same order and length as patch_types \
                      (normalised; crossover is skipped when there is no inspiration)",
                ty: ParamType::FloatList { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "novelty_threshold",
                doc: "Token-Jaccard similarity to the parent or a pool member above which a child \
                      is a near-duplicate and is resampled before evaluation. 0.995 rejects \
                      formatting/comment-only edits and revisits while letting a one-constant \
                      change through in programs of up to ~400 distinct tokens; 1.0 = off",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "novelty_pool",
                doc: "How many of the population's fittest genomes a child is compared with \
                      (besides its parent)",
                ty: ParamType::Int {
                    min: 0,
                    max: 10_000,
                },
            },
            ParamSpec {
                key: "max_novelty_attempts",
                doc: "Extra model calls allowed to replace a near-duplicate; when all are \
                      near-duplicates the proposal fails without an evaluator call",
                ty: ParamType::Int { min: 0, max: 20 },
            },
            super::MAX_CODE_LENGTH,
        ],
    };

    /// The patch types are known and match their weights.
    fn check(params: &CrossoverParams) -> Result<(), ParamError> {
        mix_of(params).map(|_| ())
    }

    fn build(params: CrossoverParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(
            Self::new(Arc::clone(&ctx.model), params, &ctx.task.language)?
                .with_rules(ctx.task.edit_rules()),
        )
    }
}

impl CrossoverProposer {
    /// A proposer over `model` for programs in `language` (fence tag).
    /// Fails when the patch types are unknown or do not match their weights.
    pub fn new(
        model: Arc<dyn LanguageModel>,
        params: CrossoverParams,
        language: &str,
    ) -> Result<Self, ParamError> {
        let mix = mix_of(&params)?;
        Ok(Self {
            model,
            params,
            mix,
            language: language.to_owned(),
            rules: EditRules::default(),
        })
    }

    /// The same proposer for a folder program whose files change as
    /// `rules` allow (without them, none may).
    pub fn with_rules(mut self, rules: EditRules) -> Self {
        self.rules = rules;
        self
    }

    /// The decoded parameters.
    pub fn params(&self) -> &CrossoverParams {
        &self.params
    }

    /// The normalised patch-type distribution, in `patch_types` order.
    pub fn mix(&self) -> &[(EditMode, f64)] {
        &self.mix
    }

    fn novelty_on(&self) -> bool {
        self.params.novelty_threshold < 1.0
    }

    fn label(mode: EditMode, rejected: &[(f64, GenomeId)]) -> String {
        let mut s = mode_name(mode).to_owned();
        if !rejected.is_empty() {
            let n = rejected.len();
            let _ = write!(
                s,
                " (resampled {n} near-duplicate{}:",
                if n == 1 { "" } else { "s" }
            );
            for (i, (sim, id)) in rejected.iter().enumerate() {
                let _ = write!(s, "{} {sim:.3} to #{id}", if i == 0 { "" } else { "," });
            }
            s.push(')');
        }
        s
    }
}

/// The note appended to the prompt of a resample.
fn resample_note(similarity: f64, id: GenomeId, parent: &Genome) -> String {
    let what = if id == parent.id {
        "the current program".to_owned()
    } else {
        format!("program #{id} of the population")
    };
    format!(
        "\n\n# Novelty Check\nYour previous proposal was rejected before evaluation: it is a \
         near-duplicate of {what} (token similarity {similarity:.3}). Propose a substantively \
         different change.\n"
    )
}

#[async_trait::async_trait]
impl Proposer for CrossoverProposer {
    fn novelty_pool_size(&self) -> usize {
        if self.novelty_on() {
            self.params.novelty_pool
        } else {
            0
        }
    }

    fn edit_mode(&self, inspirations: &[Arc<Genome>], rng: &mut SearchRng) -> EditMode {
        let allowed = |m: EditMode| m != EditMode::Crossover || !inspirations.is_empty();
        let total: f64 = self
            .mix
            .iter()
            .filter(|(m, _)| allowed(*m))
            .map(|(_, p)| p)
            .sum();
        if total <= 0.0 {
            // only crossover has weight and there is nothing to cross with
            return EditMode::FullRewrite;
        }
        let mut r = rng.random::<f64>() * total;
        let mut last = EditMode::Diff;
        for (mode, p) in self.mix.iter().filter(|(m, _)| allowed(*m)) {
            if *p <= 0.0 {
                continue;
            }
            last = *mode;
            if r < *p {
                return *mode;
            }
            r -= p;
        }
        last
    }

    async fn propose(&self, request: ProposalRequest) -> Proposal {
        let mode = request.mode;
        let options = PatchOptions {
            language: &self.language,
            allow_full_rewrite: true,
        };
        let mut usage: Option<TokenUsage> = None;
        let mut rejected: Vec<(f64, GenomeId)> = Vec::new();
        let mut user = request.prompt.user.clone();
        let mut last_response = None;
        let mut last_model = None;
        let mut attempt: u64 = 0;
        loop {
            let model_request = ModelRequest {
                system: request.prompt.system.clone(),
                user: user.clone(),
                seed: if attempt == 0 {
                    request.seed
                } else {
                    mix_seed(request.seed, attempt)
                },
            };
            let reply = match self.model.complete(&model_request).await {
                Ok(reply) => reply,
                Err(e) => {
                    let (content, response) = match e {
                        ModelError::Failed { message, raw } => {
                            (Err(ProposalError::Model(message)), raw)
                        }
                        ModelError::Fatal { message } => (Err(ProposalError::Fatal(message)), None),
                    };
                    return Proposal {
                        content,
                        response: response.or(last_response),
                        model: last_model,
                        usage,
                        patch_type: Self::label(mode, &rejected),
                        parent_id: None,
                        agent: None,
                    };
                }
            };
            if let Some(u) = &reply.usage {
                usage.get_or_insert_with(TokenUsage::default).add(u);
            }
            let near_duplicate = match apply_reply(
                &request.parent.content,
                &reply.text,
                &options,
                self.params.max_code_length,
                &self.rules,
            ) {
                Ok(result) => {
                    let (sim, id) = if self.novelty_on() {
                        most_similar(&result.content.text(), &request.parent, &request.pool)
                    } else {
                        (0.0, request.parent.id)
                    };
                    if sim <= self.params.novelty_threshold {
                        return Proposal {
                            content: Ok(result.content),
                            response: Some(reply.text),
                            model: Some(reply.model),
                            usage,
                            patch_type: Self::label(mode, &rejected),
                            parent_id: None,
                            agent: None,
                        };
                    }
                    (sim, id)
                }
                Err(ProposalError::NoOp(_)) if self.novelty_on() => (1.0, request.parent.id),
                Err(error) => {
                    return Proposal {
                        content: Err(error),
                        response: Some(reply.text),
                        model: Some(reply.model),
                        usage,
                        patch_type: Self::label(mode, &rejected),
                        parent_id: None,
                        agent: None,
                    };
                }
            };
            rejected.push(near_duplicate);
            last_response = Some(reply.text);
            last_model = Some(reply.model);
            if attempt >= self.params.max_novelty_attempts as u64 {
                break;
            }
            attempt += 1;
            user = format!(
                "{}{}",
                request.prompt.user,
                resample_note(near_duplicate.0, near_duplicate.1, &request.parent)
            );
        }
        let (sim, id) = rejected.last().copied().unwrap_or((1.0, request.parent.id));
        Proposal {
            content: Err(ProposalError::NoOp(format!(
                "near-duplicate: {} proposal(s) in a row were too similar to existing programs \
                 (last: token similarity {sim:.3} to #{id}, threshold {}); propose a \
                 substantively different change",
                rejected.len(),
                self.params.novelty_threshold
            ))),
            response: last_response,
            model: last_model,
            usage,
            patch_type: Self::label(mode, &rejected),
            parent_id: None,
            agent: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::Prompt;
    use crate::engine::params::ParamMap;
    use crate::engine::params::ParamValue;
    use crate::engine::registry::Entry;
    use crate::engine::rng::seeded;
    use crate::engine::task::Task;
    use crate::engine::testing::ScriptedModel;

    const PARENT: &str =
        "import sys\n# EVOLVE-BLOCK-START\na = 1.0\nb = 2\n# EVOLVE-BLOCK-END\nprint(a + b)\n";

    fn block(search: &str, replace: &str) -> String {
        format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n")
    }

    fn request(mode: EditMode, pool: Vec<Arc<Genome>>) -> ProposalRequest {
        ProposalRequest {
            prompt: Prompt {
                system: "sys".into(),
                user: "improve".into(),
            },
            parent: Arc::new(Genome {
                id: 7,
                content: PARENT.into(),
                valid: true,
                ..Genome::default()
            }),
            parents: Vec::new(),
            inspirations: vec![],
            seed: 5,
            pool,
            mode,
            env: crate::engine::testing::proposer_env(),
        }
    }

    fn proposer(model: Arc<ScriptedModel>, params: CrossoverParams) -> CrossoverProposer {
        CrossoverProposer::new(model, params, "python").unwrap()
    }

    #[test]
    fn check_validates_the_mix() {
        let task = Task {
            dir: std::env::temp_dir(),
            name: "t".into(),
            initial_program: PARENT.into(),
            program_file: "initial_program.py".into(),
            suffix: ".py".into(),
            language: "python".into(),
            description: "d".into(),
            evaluator_path: std::env::temp_dir().join("evaluator.py"),
            ..Task::default()
        };
        let ctx = BuildContext {
            task: &task,
            model: ScriptedModel::texts(&[]),
            parallel: 1,
            run_dir: None,
            key_vars: &[],
            meter: Default::default(),
        };
        let entry = Entry::of::<CrossoverProposer>();
        assert!(entry.check(&ParamMap::default()).is_ok());
        let p = CrossoverProposer::build(CrossoverParams::default(), &ctx).unwrap();
        assert_eq!(p.params(), &CrossoverParams::default());
        assert_eq!(p.novelty_pool_size(), 20);
        let mut bad = ParamMap::default();
        bad.set(
            "patch_types",
            ParamValue::List(vec![
                ParamValue::Str("diff".into()),
                ParamValue::Str("x".into()),
            ]),
        );
        bad.set(
            "patch_type_probs",
            ParamValue::List(vec![ParamValue::Float(0.5), ParamValue::Float(0.5)]),
        );
        let e = entry.check(&bad).unwrap_err().remove(0);
        assert!(e.reason.contains("unknown patch type `x`"), "{e}");
        let mut bad = ParamMap::default();
        bad.set(
            "patch_type_probs",
            ParamValue::List(vec![ParamValue::Float(1.0)]),
        );
        let e = entry.check(&bad).unwrap_err().remove(0);
        assert_eq!(e.key, "patch_type_probs");
        let mut off = ParamMap::default();
        off.set("novelty_threshold", ParamValue::Float(1.0));
        let p = CrossoverProposer::build(off.decode().unwrap(), &ctx).unwrap();
        assert_eq!(p.novelty_pool_size(), 0);
    }

    #[test]
    fn mixing_frequencies_match_the_weights() {
        let p = proposer(ScriptedModel::texts(&[]), CrossoverParams::default());
        let insp = vec![Arc::new(Genome::default())];
        let mut rng = seeded(11);
        let n = 20_000;
        let mut counts = [0usize; 3];
        for _ in 0..n {
            match p.edit_mode(&insp, &mut rng) {
                EditMode::Diff => counts[0] += 1,
                EditMode::FullRewrite => counts[1] += 1,
                EditMode::Crossover => counts[2] += 1,
            }
        }
        for (c, want) in counts.iter().zip([0.6, 0.3, 0.1]) {
            let got = *c as f64 / n as f64;
            assert!((got - want).abs() < 0.015, "{counts:?}");
        }
        // without an inspiration crossover is never drawn; diff:full stays 2:1
        let mut counts = [0usize; 3];
        for _ in 0..n {
            match p.edit_mode(&[], &mut rng) {
                EditMode::Diff => counts[0] += 1,
                EditMode::FullRewrite => counts[1] += 1,
                EditMode::Crossover => counts[2] += 1,
            }
        }
        assert_eq!(counts[2], 0);
        let ratio = counts[0] as f64 / n as f64;
        assert!((ratio - 2.0 / 3.0).abs() < 0.015, "{counts:?}");
        // as the loop draws: the first draw of a fresh per-iteration RNG
        let mut master = seeded(99);
        let mut counts = [0usize; 3];
        for _ in 0..n {
            let mut rng = seeded(rand::Rng::next_u64(&mut master));
            match p.edit_mode(&insp, &mut rng) {
                EditMode::Diff => counts[0] += 1,
                EditMode::FullRewrite => counts[1] += 1,
                EditMode::Crossover => counts[2] += 1,
            }
        }
        for (c, want) in counts.iter().zip([0.6, 0.3, 0.1]) {
            let got = *c as f64 / n as f64;
            assert!((got - want).abs() < 0.015, "{counts:?}");
        }
    }

    #[tokio::test]
    async fn near_duplicate_is_resampled_with_a_note_and_new_seed() {
        let comment_only = block("a = 1.0", "a = 1.00  # same value");
        let real = block("a = 1.0", "a = 4.5");
        let model = ScriptedModel::texts(&[&comment_only, &real]);
        let p = proposer(Arc::clone(&model), CrossoverParams::default());
        let out = p.propose(request(EditMode::Diff, vec![])).await;
        assert!(out.content.as_ref().unwrap().text().contains("a = 4.5"));
        assert_eq!(
            out.patch_type,
            "diff (resampled 1 near-duplicate: 1.000 to #7)"
        );
        assert_eq!(out.usage.map(|u| u.total_tokens()), Some(30));
        assert_eq!(out.response.as_deref(), Some(real.as_str()));
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].seed, 5);
        assert_ne!(seen[1].seed, 5);
        assert!(seen[1].user.starts_with("improve"));
        assert!(
            seen[1]
                .user
                .contains("near-duplicate of the current program")
        );
    }

    #[tokio::test]
    async fn a_revisit_of_a_pool_member_and_a_noop_are_near_duplicates() {
        let twin = Arc::new(Genome {
            id: 12,
            content: PARENT.replace("b = 2", "b = 3").into(),
            valid: true,
            ..Genome::default()
        });
        let model = ScriptedModel::texts(&[&block("b = 2", "b = 3"), &block("b = 2", "b = 2")]);
        let p = proposer(
            Arc::clone(&model),
            CrossoverParams {
                max_novelty_attempts: 1,
                ..CrossoverParams::default()
            },
        );
        let out = p.propose(request(EditMode::Diff, vec![twin])).await;
        match &out.content {
            Err(ProposalError::NoOp(m)) => assert!(m.contains("near-duplicate"), "{m}"),
            other => panic!("expected a near-duplicate failure, got {other:?}"),
        }
        assert_eq!(
            out.patch_type,
            "diff (resampled 2 near-duplicates: 1.000 to #12, 1.000 to #7)"
        );
        assert_eq!(model.seen.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn full_rewrite_and_parse_errors_and_novelty_off() {
        let rewrite = "```python\na = 9.0\nb = 2\n```";
        let p = proposer(ScriptedModel::texts(&[rewrite]), CrossoverParams::default());
        let out = p.propose(request(EditMode::Crossover, vec![])).await;
        assert!(
            out.content
                .unwrap()
                .text()
                .contains("a = 9.0\nb = 2\n# EVOLVE-BLOCK-END")
        );
        assert_eq!(out.patch_type, "crossover");

        let p = proposer(
            ScriptedModel::texts(&["no code here"]),
            CrossoverParams::default(),
        );
        let out = p.propose(request(EditMode::FullRewrite, vec![])).await;
        assert!(matches!(out.content, Err(ProposalError::Parse(_))));
        assert_eq!(out.patch_type, "full");

        let off = CrossoverParams {
            novelty_threshold: 1.0,
            ..CrossoverParams::default()
        };
        let model = ScriptedModel::texts(&[&block("a = 1.0", "a = 1.0 # c"), "unused"]);
        let p = proposer(Arc::clone(&model), off);
        let out = p.propose(request(EditMode::Diff, vec![])).await;
        assert!(
            out.content.is_ok(),
            "novelty off: a comment edit is accepted"
        );
        assert_eq!(model.seen.lock().unwrap().len(), 1);
    }
}
