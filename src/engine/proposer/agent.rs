//! `AgentProposer`: an agent-style proposer, the way Meta-Harness and CORAL
//! work. It is handed every parent the policy chose (pair it with the
//! `identity` policy, which hands over the whole pool), reads the run's
//! memory, picks the program it wants to improve from a leaderboard, edits
//! it, and tries each edit with the task's evaluator before it hands in the
//! best one: up to `max_steps` model calls, stopping at the first edit that
//! beats its parent. Everything it uses comes through the
//! [`ProposerEnv`](super::ProposerEnv); the loop still scores what it hands
//! in, so each trial costs one evaluation more.
//!
//! The reply names its parent on a line `PARENT: #<id>` (anywhere; without
//! one, the program the prompt shows) and gives SEARCH/REPLACE edits against
//! that program, or the whole program in a code block.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::apply_reply;
use super::{Proposal, ProposalError, ProposalRequest, Proposer};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::Tree;
use crate::engine::genome::{Genome, GenomeId, TokenUsage};
use crate::engine::memory::MemoryQuery;
use crate::engine::model::{LanguageModel, ModelError, ModelRequest};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::task::program_folder::EditRules;
use crate::engine::text::patch::PatchOptions;

/// Parameters of [`AgentProposer`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentParams {
    /// Model calls (each followed by a trial evaluation) per proposal.
    pub max_steps: u64,
    /// Parents listed with their code on the leaderboard, best first.
    pub leaderboard_size: u64,
    /// Characters of the run's memory read into the prompt (0: none).
    pub memory_chars: u64,
    /// A child longer than this many characters is rejected.
    pub max_code_length: u64,
}

impl Default for AgentParams {
    fn default() -> Self {
        Self {
            max_steps: 3,
            leaderboard_size: 4,
            memory_chars: 2000,
            max_code_length: 60_000,
        }
    }
}

/// The agent-style proposer (card kind `agent`).
pub struct AgentProposer {
    model: Arc<dyn LanguageModel>,
    params: AgentParams,
    language: String,
    /// Which files of a folder program may change.
    rules: EditRules,
}

impl Component for AgentProposer {
    type Slot = dyn Proposer;
    type Params = AgentParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "agent",
        type_name: "AgentProposer",
        summary: "Picks its own parent from the pool, reads memory, tries each edit with the \
                  evaluator and hands in the best (pair with the identity policy)",
        params: &[
            ParamSpec {
                key: "max_steps",
                doc: "Model calls per proposal, each edit tried with the task's evaluator; stops at \
                      the first edit that beats its parent",
                ty: ParamType::Int { min: 1, max: 20 },
            },
            ParamSpec {
                key: "leaderboard_size",
                doc: "Programs listed with their code and scores for the agent to choose from, best \
                      first (from the parents the selection policy handed over)",
                ty: ParamType::Int { min: 1, max: 50 },
            },
            ParamSpec {
                key: "memory_chars",
                doc: "Characters of the run's memory read into the prompt at each proposal (0: none)",
                ty: ParamType::Int {
                    min: 0,
                    max: 1_000_000,
                },
            },
            super::MAX_CODE_LENGTH,
        ],
    };

    fn build(params: AgentParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self {
            model: Arc::clone(&ctx.model),
            params,
            language: ctx.task.language.clone(),
            rules: ctx.task.edit_rules(),
        })
    }
}

/// The `#id` named on a `PARENT:` line of `reply`, if any.
fn named_parent(reply: &str) -> Option<GenomeId> {
    reply.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("PARENT:")?;
        rest.trim()
            .trim_start_matches('#')
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

fn score(genome_scores: Option<f64>) -> String {
    genome_scores.map_or_else(|| "none".to_owned(), |s| format!("{s:.6}"))
}

/// A candidate that applied, with its trial.
struct Tried {
    content: Tree,
    parent: Arc<Genome>,
    fitness: Option<f64>,
}

impl AgentProposer {
    fn usize(v: u64) -> usize {
        usize::try_from(v).unwrap_or(usize::MAX)
    }

    /// The prompt's user message plus the leaderboard, the memory and the
    /// agent's instructions.
    fn opening(&self, request: &ProposalRequest, notes: &[String]) -> String {
        let mut user = request.prompt.user.clone();
        let listed: Vec<&Arc<Genome>> = request
            .parents
            .iter()
            .take(Self::usize(self.params.leaderboard_size))
            .collect();
        let _ = write!(
            user,
            "\n\n# Leaderboard\nYou may improve any of these programs instead of the current one \
             (#{}).\n",
            request.parent.id
        );
        for g in &listed {
            let _ = write!(
                user,
                "\n## Program #{} (combined_score {})\n",
                g.id,
                score(g.fitness())
            );
            if g.id != request.parent.id {
                let _ = write!(
                    user,
                    "```{}\n{}\n```\n",
                    self.language,
                    g.content.text().trim_end()
                );
            } else {
                user.push_str("(the current program, shown above)\n");
            }
        }
        if !notes.is_empty() {
            user.push_str("\n# Notes from memory\n");
            for n in notes {
                let _ = write!(user, "{}\n\n", n.trim());
            }
        }
        let _ = write!(
            user,
            "\n# How to answer\nStart with a line `PARENT: #<id>` naming the program you improve \
             (without it: #{}), then give SEARCH/REPLACE edits against that program. Each edit is \
             tried with the evaluator and you see the result.\n",
            request.parent.id
        );
        user
    }
}

#[async_trait::async_trait]
impl Proposer for AgentProposer {
    async fn propose(&self, request: ProposalRequest) -> Proposal {
        let notes = if self.params.memory_chars == 0 {
            Vec::new()
        } else {
            let query = MemoryQuery {
                island: None,
                max_chars: Some(Self::usize(self.params.memory_chars)),
            };
            request.env.read_memory(&query).await.notes
        };
        let opening = self.opening(&request, &notes);
        let options = PatchOptions {
            language: &self.language,
            allow_full_rewrite: true,
        };
        let mut transcript = String::new();
        let mut usage: Option<TokenUsage> = None;
        let mut model_name = None;
        let mut best: Option<Tried> = None;
        let mut last_error = None;
        for step in 0..self.params.max_steps.max(1) {
            let model_request = ModelRequest {
                system: request.prompt.system.clone(),
                user: if transcript.is_empty() {
                    opening.clone()
                } else {
                    format!("{opening}\n# Your attempts so far\n{transcript}")
                },
                seed: request.seed.wrapping_add(step),
            };
            let reply = match self.model.complete(&model_request).await {
                Ok(reply) => reply,
                Err(ModelError::Fatal { message }) => {
                    return self.proposal(
                        Err(ProposalError::Fatal(message)),
                        transcript,
                        None,
                        usage,
                        model_name,
                    );
                }
                Err(ModelError::Failed { message, raw }) => {
                    if let Some(raw) = raw {
                        let _ = write!(transcript, "\n## Step {} (model error)\n{raw}\n", step + 1);
                    }
                    last_error = Some(ProposalError::Model(message));
                    break;
                }
            };
            if let Some(u) = &reply.usage {
                usage.get_or_insert_with(TokenUsage::default).add(u);
            }
            model_name = Some(reply.model.clone());
            let _ = write!(
                transcript,
                "\n## Step {}\n{}\n",
                step + 1,
                reply.text.trim()
            );
            let parent = named_parent(&reply.text)
                .and_then(|id| request.parents.iter().find(|p| p.id == id))
                .unwrap_or(&request.parent);
            let content = apply_reply(
                &parent.content,
                &reply.text,
                &options,
                Self::usize(self.params.max_code_length),
                &self.rules,
            )
            .map(|edited| edited.content);
            let content = match content {
                Ok(c) => c,
                Err(e) => {
                    let _ = writeln!(
                        transcript,
                        "Result: the edit of #{} did not apply: {e}",
                        parent.id
                    );
                    last_error = Some(e);
                    continue;
                }
            };
            let trial = request.env.evaluate(&content).await;
            // the loop's own fitness rule, applied to the trial's scores
            let fitness = Genome {
                valid: trial.valid,
                scores: trial.scores.clone(),
                ..Genome::default()
            }
            .fitness();
            let _ = match fitness {
                Some(f) => writeln!(
                    transcript,
                    "Result: trial of the edit of #{}: combined_score {f:.6} (the parent has {})",
                    parent.id,
                    score(parent.fitness())
                ),
                None => writeln!(
                    transcript,
                    "Result: trial of the edit of #{}: invalid ({})",
                    parent.id,
                    trial.error.as_deref().unwrap_or("no reason given")
                ),
            };
            let beats_parent = match (fitness, parent.fitness()) {
                (Some(f), Some(p)) => f > p,
                (Some(_), None) => true,
                _ => false,
            };
            let better_than_best = match (&best, fitness) {
                (None, _) => true,
                (Some(b), Some(f)) => b.fitness.is_none_or(|bf| f > bf),
                (Some(_), None) => false,
            };
            if better_than_best {
                best = Some(Tried {
                    content,
                    parent: Arc::clone(parent),
                    fitness,
                });
            }
            if beats_parent {
                break;
            }
        }
        match best {
            Some(t) => {
                let parent_id = (t.parent.id != request.parent.id).then_some(t.parent.id);
                self.proposal(Ok(t.content), transcript, parent_id, usage, model_name)
            }
            None => self.proposal(
                Err(last_error
                    .unwrap_or_else(|| ProposalError::Parse("the agent made no edit".to_owned()))),
                transcript,
                None,
                usage,
                model_name,
            ),
        }
    }
}

impl AgentProposer {
    fn proposal(
        &self,
        content: Result<Tree, ProposalError>,
        transcript: String,
        parent_id: Option<GenomeId>,
        usage: Option<TokenUsage>,
        model: Option<String>,
    ) -> Proposal {
        Proposal {
            content,
            response: (!transcript.is_empty()).then_some(transcript),
            model,
            usage,
            patch_type: "agent".to_owned(),
            parent_id,
            agent: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::Prompt;
    use crate::engine::memory::{Knowledge, Memory};
    use crate::engine::proposer::ProposerEnv;
    use crate::engine::testing::{ScriptedModel, TrivialEvaluator};

    /// A memory that says what it was asked.
    struct Echo;

    #[async_trait::async_trait]
    impl Memory for Echo {
        fn read(&self, query: &MemoryQuery) -> Knowledge {
            Knowledge {
                notes: vec![format!("a note read with max_chars {:?}", query.max_chars)],
            }
        }
    }

    fn program(a: &str) -> String {
        format!(
            "# EVOLVE-BLOCK-START\nA = {a}\nB = 0.0\nC = 0.0\nSHIFT = 0.0\n# EVOLVE-BLOCK-END\n"
        )
    }

    fn genome(id: GenomeId, a: &str) -> Arc<Genome> {
        let content = program(a);
        Arc::new(Genome {
            id,
            valid: true,
            scores: crate::engine::testing::trivial_scores(&content),
            content: content.into(),
            ..Genome::default()
        })
    }

    fn edit(parent: Option<GenomeId>, from: &str, to: &str) -> Result<String, String> {
        let head = parent.map_or_else(String::new, |id| format!("PARENT: #{id}\n"));
        Ok(format!(
            "{head}Try this.\n<<<<<<< SEARCH\nA = {from}\n=======\nA = {to}\n>>>>>>> REPLACE\n"
        ))
    }

    fn agent(model: Arc<ScriptedModel>) -> AgentProposer {
        AgentProposer {
            model,
            params: AgentParams::default(),
            language: "python".to_owned(),
            rules: EditRules::default(),
        }
    }

    fn request(parents: Vec<Arc<Genome>>, evaluator: &TrivialEvaluator) -> ProposalRequest {
        let memory: Box<dyn Memory> = Box::new(Echo);
        ProposalRequest {
            prompt: Prompt {
                system: "sys".into(),
                user: "# Current Program\n(shown here)".into(),
            },
            parent: Arc::clone(&parents[0]),
            parents,
            inspirations: Vec::new(),
            seed: 3,
            pool: Vec::new(),
            mode: crate::engine::prompt::EditMode::Diff,
            env: ProposerEnv::new(
                Arc::new(evaluator.clone()),
                Arc::new(tokio::sync::RwLock::new(memory)),
                5,
            ),
        }
    }

    /// It picks its own parent from the pool, reads memory, tries each edit
    /// with the evaluator, and stops at the first edit that beats its parent.
    #[tokio::test]
    async fn picks_a_parent_tries_edits_and_hands_in_the_first_that_beats_it() {
        let pool = vec![genome(7, "2.0"), genome(4, "1.0"), genome(9, "0.0")];
        let model = Arc::new(ScriptedModel::new(vec![
            edit(Some(9), "0.0", "-1.0"),
            edit(Some(9), "0.0", "2.4"),
            edit(Some(9), "0.0", "9.0"),
        ]));
        let evaluator = TrivialEvaluator::default();
        let p = agent(Arc::clone(&model))
            .propose(request(pool, &evaluator))
            .await;
        assert_eq!(
            p.content.as_ref().map(|t| t.text()).as_deref(),
            Ok(program("2.4").as_str())
        );
        assert_eq!(p.parent_id, Some(9));
        assert_eq!(p.patch_type, "agent");
        assert_eq!(
            evaluator.calls(),
            2,
            "one trial per edit, none after the improvement"
        );
        let seen = model.seen();
        assert_eq!(seen.len(), 2);
        let first = &seen[0].user;
        assert!(first.contains("## Program #9 (combined_score"), "{first}");
        assert!(
            first.contains(&program("0.0").trim_end().to_owned()),
            "{first}"
        );
        assert!(
            first.contains("a note read with max_chars Some(2000)"),
            "{first}"
        );
        assert!(seen[1].user.contains("# Your attempts so far"));
        assert!(seen[1].user.contains("Result: trial of the edit of #9"));
        let transcript = p.response.unwrap_or_default();
        assert!(transcript.contains("## Step 2"), "{transcript}");
        assert_eq!(p.usage.map(|u| u.prompt_tokens), Some(20));
    }

    /// A parent it was not handed is not used: the edit goes to the primary.
    #[tokio::test]
    async fn an_unknown_parent_falls_back_to_the_primary() {
        let pool = vec![genome(7, "1.0")];
        let model = Arc::new(ScriptedModel::new(vec![edit(Some(99), "1.0", "2.0")]));
        let evaluator = TrivialEvaluator::default();
        let p = agent(model).propose(request(pool, &evaluator)).await;
        assert_eq!(
            p.content.as_ref().map(|t| t.text()).as_deref(),
            Ok(program("2.0").as_str())
        );
        assert_eq!(p.parent_id, None);
    }

    /// No edit applies in any step: the proposal fails with the last reason
    /// and keeps every reply.
    #[tokio::test]
    async fn edits_that_never_apply_fail_with_the_reason() {
        let pool = vec![genome(7, "1.0")];
        let model = Arc::new(ScriptedModel::new(vec![edit(None, "5.0", "6.0")]));
        let evaluator = TrivialEvaluator::default();
        let p = agent(model).propose(request(pool, &evaluator)).await;
        assert!(
            matches!(p.content, Err(ProposalError::Parse(_))),
            "{:?}",
            p.content
        );
        assert_eq!(evaluator.calls(), 0);
        assert!(p.response.unwrap_or_default().contains("## Step 3"));
    }
}
