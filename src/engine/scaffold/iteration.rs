//! One iteration, run concurrently with others: up to `attempts` proposals
//! with the parent held fixed, each prompt built, proposed and evaluated,
//! stopping at the first valid child. It owns what it needs ([`Job`],
//! [`Shared`]) and hands back genomes ([`Outcome`]); admission is the loop's.

use std::sync::Arc;
use std::time::Instant;

use rand::Rng as _;

use crate::engine::evaluator::{Candidate, Evaluator, confirm};
use crate::engine::genome::{Genome, GenomeMeta, PERSON_PATCH, Timings, Tree};
use crate::engine::memory::Knowledge;
use crate::engine::prompt::{FailedAttempt, PromptBuilder, PromptContext, TaskBrief};
use crate::engine::proposer::{
    ProposalError, ProposalRequest, Proposer, ProposerEnv, SharedMemory,
};
use crate::engine::rng::seeded;

use super::gate::Gate;

pub(super) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// Name the task's fitness metric on a scored genome: its fitness is that
/// metric, and a valid genome that does not report it is invalid.
pub(super) fn name_fitness(genome: &mut Genome, metric: Option<&str>) {
    let Some(metric) = metric else {
        return;
    };
    genome.fitness_metric = Some(metric.to_owned());
    if genome.valid && !genome.scores.contains_key(metric) {
        genome.valid = false;
        genome.error = Some(format!(
            "the evaluator reported no `{metric}`, the task's fitness metric (fitness_metric in its config)"
        ));
    }
}

/// A raw reply as stored on a genome: whole when it fits in `cap` bytes,
/// else its first `cap` bytes (cut on a character boundary) with a line
/// saying so, and the whole reply's length.
pub(super) fn bounded_reply(reply: Option<&str>, cap: usize) -> (Option<String>, Option<u64>) {
    let Some(reply) = reply else {
        return (None, None);
    };
    if reply.len() <= cap {
        return (Some(reply.to_owned()), None);
    }
    let mut end = cap;
    while !reply.is_char_boundary(end) {
        end -= 1;
    }
    let kept = format!(
        "{}\n[reply cut: the first {end} of {} bytes are kept (general.max_response_bytes)]",
        &reply[..end],
        reply.len()
    );
    (Some(kept), Some(reply.len() as u64))
}

/// Everything an in-flight iteration needs (owned, so it can run concurrently).
pub(super) struct Job {
    pub(super) iteration: u64,
    pub(super) parent: Arc<Genome>,
    /// Every parent the policy chose, primary (`parent`) first.
    pub(super) parents: Vec<Arc<Genome>>,
    pub(super) grandparent: Option<Arc<Genome>>,
    pub(super) inspirations: Vec<Arc<Genome>>,
    pub(super) knowledge: Knowledge,
    pub(super) seed: u64,
    pub(super) attempts: u32,
    /// The best fitness when the iteration was dispatched: a child above it
    /// is confirmed when the evaluator asks for it.
    pub(super) best: Option<f64>,
    pub(super) island: Option<u32>,
    pub(super) pool: Vec<Arc<Genome>>,
    /// The population's fittest, for the novelty gate (empty without one).
    pub(super) compared: Vec<Arc<Genome>>,
    /// A program a person wrote: evaluated as the parent's child instead of
    /// proposing one, with the edit rule the person overrode, if any.
    pub(super) program: Option<(Tree, Option<String>)>,
}

pub(super) struct Shared {
    pub(super) brief: TaskBrief,
    /// Bytes of a raw reply kept on a genome (`general.max_response_bytes`).
    pub(super) max_response_bytes: usize,
    /// The metric the task names as its fitness, if any.
    pub(super) fitness_metric: Option<String>,
    pub(super) prompt_builder: Arc<dyn PromptBuilder>,
    pub(super) proposer: Arc<dyn Proposer>,
    pub(super) evaluator: Arc<dyn Evaluator>,
    pub(super) memory: SharedMemory,
    /// The novelty gate between proposal and evaluation, when the card has one.
    pub(super) gate: Option<Arc<Gate>>,
}

pub(super) struct Outcome {
    pub(super) genomes: Vec<Genome>,
    pub(super) fatal: Option<String>,
    /// Every attempt failed in the model call itself (the endpoint, not the
    /// reply): the last such error.
    pub(super) model_down: Option<String>,
    /// Lines for the run's log (the novelty gate's fallbacks).
    pub(super) warnings: Vec<String>,
    /// Counts toward the iteration budget (a person's child does not).
    pub(super) counts: bool,
}

/// Evaluate `content` as `genome`'s program: the evaluator's verdict, the
/// task's fitness metric named, a would-be best confirmed when the evaluator
/// asks for it, and the time it took.
async fn score(shared: &Shared, job: &Job, genome: &mut Genome, content: Tree) {
    let t_eval = Instant::now();
    let candidate = Candidate {
        id: job.iteration,
        content,
    };
    let eval = shared.evaluator.evaluate(&candidate).await;
    genome.valid = eval.valid;
    genome.scores = eval.scores;
    genome.artifacts = eval.artifacts;
    genome.error = eval.error;
    genome.private = eval.private;
    genome.placement = eval.placement;
    name_fitness(genome, shared.fitness_metric.as_deref());
    let settings = shared.evaluator.confirmation();
    let new_best = genome
        .fitness()
        .is_some_and(|f| job.best.is_none_or(|b| f > b));
    if settings.times > 0 && new_best {
        confirm(shared.evaluator.as_ref(), &candidate, genome, settings).await;
    }
    genome.timings.evaluate_ms = ms(t_eval);
    genome.content = candidate.content;
}

/// A program a person wrote, as a child of the job's parent: evaluated and
/// scored as a proposal's child is (no model call, no prompt, no novelty
/// gate: the person chose it), marked with its proposer label. It does not
/// count toward the iteration budget.
async fn person_child(
    shared: &Shared,
    job: &Job,
    program: Tree,
    rule_override: Option<String>,
) -> Outcome {
    let parent = &job.parent;
    let mut genome = Genome {
        parent_id: Some(parent.id),
        iteration: job.iteration,
        metadata: GenomeMeta {
            generation: parent.metadata.generation + 1,
            depth: parent.metadata.depth + 1,
            island: parent.metadata.island,
            model: None,
            patch_type: PERSON_PATCH.to_owned(),
            features: Default::default(),
        },
        diff: Some(program.diff_from(&parent.content)),
        rule_override,
        ..Genome::default()
    };
    score(shared, job, &mut genome, program).await;
    Outcome {
        genomes: vec![genome],
        fatal: None,
        model_down: None,
        warnings: Vec::new(),
        counts: false,
    }
}

/// One iteration: up to `attempts` proposals with the parent held fixed,
/// stopping at the first valid child. Every attempt becomes a genome.
/// A job that carries a person's program evaluates it instead.
pub(super) async fn run_iteration(shared: Arc<Shared>, job: Job) -> Outcome {
    if let Some((program, rule_override)) = job.program.clone() {
        return person_child(&shared, &job, program, rule_override).await;
    }
    let mut rng = seeded(job.seed);
    let mut failed: Vec<FailedAttempt> = Vec::new();
    let mut genomes = Vec::new();
    let mut model_down: Option<String> = None;
    let mut other_outcome = false;
    let mut warnings = Vec::new();
    for attempt in 0..job.attempts {
        let t_prompt = Instant::now();
        let mode = shared.proposer.edit_mode(&job.inspirations, &mut rng);
        let ctx = PromptContext {
            task: &shared.brief,
            parent: &job.parent,
            grandparent: job.grandparent.as_deref(),
            inspirations: &job.inspirations,
            knowledge: &job.knowledge,
            failed_attempts: &failed,
            mode,
        };
        let prompt = shared.prompt_builder.build(&ctx, &mut rng);
        let prompt_ms = ms(t_prompt);
        let t_propose = Instant::now();
        let proposal = shared
            .proposer
            .propose(ProposalRequest {
                prompt: prompt.clone(),
                parent: Arc::clone(&job.parent),
                parents: job.parents.clone(),
                inspirations: job.inspirations.clone(),
                seed: rng.next_u64(),
                pool: job.pool.clone(),
                mode,
                env: ProposerEnv::new(
                    Arc::clone(&shared.evaluator),
                    Arc::clone(&shared.memory),
                    job.iteration,
                ),
            })
            .await;
        let propose_ms = ms(t_propose);
        // The proposer may have made the child from another of the parents
        // it was handed; one it was not handed is an error.
        let chosen = match proposal.parent_id {
            None => Ok(Arc::clone(&job.parent)),
            Some(id) => job.parents.iter().find(|p| p.id == id).cloned().ok_or(id),
        };
        let foreign = chosen.as_ref().err().copied();
        let parent = chosen.unwrap_or_else(|_| Arc::clone(&job.parent));
        let mut genome = Genome {
            parent_id: Some(parent.id),
            inspiration_ids: job.inspirations.iter().map(|g| g.id).collect(),
            iteration: job.iteration,
            attempt,
            metadata: GenomeMeta {
                generation: parent.metadata.generation + 1,
                depth: parent.metadata.depth + 1,
                island: job.island.or(parent.metadata.island),
                model: proposal.model.clone(),
                patch_type: proposal.patch_type.clone(),
                features: Default::default(),
            },
            prompt: Some(prompt),
            usage: proposal.usage,
            agent: proposal.agent,
            timings: Timings {
                prompt_ms,
                propose_ms,
                evaluate_ms: 0.0,
            },
            ..Genome::default()
        };
        (genome.response, genome.response_bytes) =
            bounded_reply(proposal.response.as_deref(), shared.max_response_bytes);
        let content = match (proposal.content, foreign) {
            (Ok(_), Some(id)) => Err(ProposalError::Parse(format!(
                "the proposer made the child from #{id}, which is not among the parents it was handed"
            ))),
            (content, _) => content,
        };
        match content {
            Err(ProposalError::Fatal(msg)) => {
                genome.content = parent.content.clone();
                genome.error = Some(msg.clone());
                genomes.push(genome);
                return Outcome {
                    genomes,
                    fatal: Some(msg),
                    model_down: None,
                    warnings,
                    counts: true,
                };
            }
            Err(ProposalError::Model(msg)) => {
                genome.content = parent.content.clone();
                genome.error = Some(msg.clone());
                failed.push(FailedAttempt {
                    error: msg.clone(),
                    response: proposal.response,
                });
                model_down = Some(msg);
            }
            Err(e) => {
                other_outcome = true;
                genome.content = parent.content.clone();
                genome.error = Some(e.to_string());
                failed.push(FailedAttempt {
                    error: e.to_string(),
                    response: proposal.response,
                });
            }
            Ok(content) => {
                other_outcome = true;
                genome.diff = Some(content.diff_from(&parent.content));
                if let Some(gate) = &shared.gate {
                    let verdict = gate.check(&content.text(), &parent, &job.compared).await;
                    warnings.extend(verdict.warning);
                    if let Some(rejection) = verdict.rejection {
                        let why = rejection.summary();
                        genome.error = Some(format!("rejected before evaluation: {why}"));
                        genome.content = content;
                        genome.rejected = Some(rejection);
                        genomes.push(genome);
                        if !gate.settings.retry {
                            break;
                        }
                        failed.push(FailedAttempt {
                            error: format!(
                                "the program was not evaluated: it is {why}, a near-duplicate; propose a substantially different change"
                            ),
                            response: None,
                        });
                        continue;
                    }
                }
                score(&shared, &job, &mut genome, content).await;
                if !genome.valid {
                    failed.push(FailedAttempt {
                        error: format!(
                            "the evaluator rejected the program: {}",
                            genome.error.as_deref().unwrap_or("invalid")
                        ),
                        response: None,
                    });
                }
            }
        }
        let valid = genome.valid;
        genomes.push(genome);
        if valid {
            break;
        }
    }
    Outcome {
        genomes,
        fatal: None,
        model_down: if other_outcome { None } else { model_down },
        warnings,
        counts: true,
    }
}

#[cfg(test)]
mod tests {
    use super::bounded_reply;

    #[test]
    fn a_reply_over_the_cap_keeps_its_head_and_records_its_length() {
        assert_eq!(bounded_reply(None, 10), (None, None));
        assert_eq!(
            bounded_reply(Some("short"), 10),
            (Some("short".to_owned()), None)
        );
        // 'é' is two bytes: a cut inside it moves back to the boundary.
        let reply = "ab".to_owned() + &"é".repeat(2000);
        let (kept, full) = bounded_reply(Some(&reply), 1025);
        let kept = kept.unwrap();
        assert_eq!(full, Some(4002));
        assert!(kept.starts_with(&reply[..1024]), "{kept}");
        assert!(
            kept.ends_with(
                "[reply cut: the first 1024 of 4002 bytes are kept (general.max_response_bytes)]"
            ),
            "{kept}"
        );
    }
}
