//! The orchestrator: builds the six components from a card and runs the loop
//! select → build prompt → propose → evaluate → admit → observe until the
//! iteration budget is spent, a budget cap is hit, or it is stopped.
//!
//! Every random choice draws from one RNG seeded by the card's `seed`; each
//! iteration receives a sub-seed drawn from it at dispatch. With
//! `general.parallel == 1` an iteration is selected only after the previous
//! one was admitted (the exact sequential semantics); with P > 1, up to P
//! iterations are in flight and are admitted in completion order.
//!
//! # The loop
//!
//! - An **iteration** selects once, then makes up to `1 + general.inner_retry_times` proposals with
//!   the parent held fixed, stopping at the first valid child. Every attempt becomes a genome (a
//!   parse failure keeps the raw reply). `general.max_iterations` counts iterations; the initial
//!   program is genome 0, iteration 0.
//! - The loop numbers an iteration when it dispatches it and tells the policy
//!   (`SelectionPolicy::dispatched`), so a policy whose state changes at a selection tells the
//!   children selected before the change from those selected after it by `Genome::iteration`:
//!   best_of_n's cycle starts at the iteration that committed to a parent, and only that cycle's
//!   valid children count toward its N, also when it re-committed to the same genome.
//! - **Admission** (`admission.rs`) happens on the loop's task, never concurrently.
//! - What a model goes through on the way to a reply (an attempt that failed and is retried) it
//!   keeps for the loop (`LanguageModel::take_notices`), which logs it as a warning at least once a
//!   second while iterations are in flight.
//! - The loop stops at the budget, at a cost or token cap (`general.max_cost_usd`,
//!   `general.max_tokens`), by a rule of `general.stop`, on `Stop`, on a fatal model error (bad
//!   credentials), after `MAX_CONSECUTIVE_MODEL_FAILURES` iterations in a row whose every model
//!   call failed (resumable), or when the initial program does not score.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use rand::Rng as _;

use crate::engine::archive::{Checkpoint, RunRecorder};
use crate::engine::card::{Card, Progress, ValidCard};
use crate::engine::component::BuildContext;
use crate::engine::evaluator::{Candidate, Evaluator};
use crate::engine::events::{
    EventSink, LogLevel, RunCommand, RunEvent, RunInfo, RunOrigin, RunStatus, RunSummary,
};
use crate::engine::genome::{Genome, GenomeId, GenomeMeta, Timings};
use crate::engine::memory::{Memory, MemoryQuery};
use crate::engine::meter::{RunBudget, RunMeter};
use crate::engine::model::embeddings::{Embedder, embeddings_for};
use crate::engine::model::{LanguageModel, load_user_settings};
use crate::engine::population::{Population, Query};
use crate::engine::prompt::PromptBuilder;
use crate::engine::proposer::{Proposer, SharedMemory};
use crate::engine::rng::{SearchRng, seeded};
use crate::engine::selection::SelectionPolicy;
use crate::engine::steering::Steering;
use crate::engine::task::Task;

mod admission;
mod errors;
mod gate;
mod in_flight;
mod iteration;
mod shares;
mod steering;

pub use errors::{BuildError, ResumeError};
pub use steering::{PERSON_REFUSED, check_person_program};

use gate::Gate;
use iteration::{Job, Shared, ms, name_fitness, run_iteration};
use shares::{ModelShares, SHARES_EVERY};

/// Iterations in a row whose every attempt failed in the model call before
/// the run stops (as `failed`, resumable) instead of burning its budget on an
/// endpoint that is down.
pub const MAX_CONSECUTIVE_MODEL_FAILURES: u32 = 5;

/// How often the loop wakes, while iterations are in flight, to log what the
/// model reports (see [`LanguageModel::take_notices`]).
const NOTICE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// The six components plus the loop's own state.
pub struct Scaffold {
    card: Card,
    task: Task,
    population: Box<dyn Population>,
    policy: Box<dyn SelectionPolicy>,
    prompt_builder: Arc<dyn PromptBuilder>,
    proposer: Arc<dyn Proposer>,
    evaluator: Arc<dyn Evaluator>,
    /// Shared with proposers, which may read and write it mid-iteration.
    memory: SharedMemory,
    model: Arc<dyn LanguageModel>,
    rng: SearchRng,
    /// Set by [`Scaffold::restore`]: continue from this checkpoint.
    resume: Option<Checkpoint>,
    /// Said in the run's log right after it starts (the task's layout, its
    /// mapped settings, warnings about its folder).
    notices: Vec<(LogLevel, String)>,
    /// The novelty gate, handed to the iterations when the run starts.
    gate: Option<Gate>,
    /// Each model's calls and improvements, for the log.
    shares: ModelShares,
    /// The person's notes and pins in force.
    steering: Steering,
    /// The notes as the memory shows them (shared with [`steering::NotedMemory`]).
    notes: Arc<std::sync::RwLock<Option<String>>>,
    /// Dispatch no iteration: apply the commands queued before the start
    /// (a person's program, notes, pins) and end (see [`Scaffold::steer_only`]).
    steer_only: bool,
    /// Commands applied before any from the channel.
    queued: Vec<RunCommand>,
    /// The run and genome this run was forked from, when it is a fork.
    origin: Option<RunOrigin>,
    /// The run's standing on lowered isolation, signed (see `in_flight.rs`).
    clearance: Option<crate::engine::consent::Clearance>,
    /// The run's spend against its budget, shared with the proposer (the
    /// model relay refuses an agent's request once the budget is spent).
    meter: Arc<RunMeter>,
    /// What rebuilding blocks with new settings while paused needs.
    live: in_flight::Rebuild,
}

/// The loop's mutable bookkeeping.
struct LoopState {
    summary: RunSummary,
    next_id: GenomeId,
    last_iteration: u64,
    stop: Option<RunStatus>,
    recorder: Option<Box<dyn RunRecorder>>,
    record_error: Option<String>,
    model_failures_in_a_row: u32,
    /// `record_iteration` calls made so far.
    recorded: u64,
    /// How many of them the recorder has written, when it writes after the
    /// call returns (`None`: written when it returns).
    durable: Option<tokio::sync::watch::Receiver<u64>>,
    /// Admission events waiting for their record (call number, event).
    held: std::collections::VecDeque<(u64, RunEvent)>,
    /// When this invocation started, and the run's wall time before it (its
    /// earlier invocations, from the checkpoint).
    started: Instant,
    wall_before: f64,
}

impl LoopState {
    /// The run's wall time so far, over every invocation.
    fn run_wall_secs(&self) -> f64 {
        self.wall_before + self.started.elapsed().as_secs_f64()
    }
}

/// Wait until the recorder has written more. When its writer is gone, forget
/// the counter (the held events then go out at once; the writer's error
/// reaches the loop through `record_iteration` or `finish`).
async fn written(durable: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    match durable {
        Some(rx) => {
            if rx.changed().await.is_err() {
                *durable = None;
            }
        }
        None => std::future::pending().await,
    }
}

impl Scaffold {
    /// Build every slot from the checked card.
    /// `run_dir` is the run's folder when it is recorded; `key_vars` the
    /// run's key variables ([`crate::engine::model::RunSecrets::key_vars`]).
    pub fn build(
        card: &ValidCard,
        mut task: Task,
        model: Arc<dyn LanguageModel>,
        run_dir: Option<&std::path::Path>,
        key_vars: &[String],
    ) -> Result<Self, BuildError> {
        if !card.card().general.objectives.is_empty() {
            task.objectives = card.card().general.objectives();
        }
        let general = &card.card().general;
        let meter = Arc::new(RunMeter::new(RunBudget::new(
            general.max_tokens,
            general.max_cost_usd,
            general.stop.max_cost_usd,
        )));
        let ctx = BuildContext {
            task: &task,
            model: Arc::clone(&model),
            parallel: general.parallel.max(1) as usize,
            run_dir,
            key_vars,
            meter: Arc::clone(&meter),
        };
        let population = card.build(&ctx)?;
        let policy = card.build(&ctx)?;
        let prompt_builder: Arc<dyn PromptBuilder> = Arc::from(card.build(&ctx)?);
        let proposer: Arc<dyn Proposer> = Arc::from(card.build(&ctx)?);
        let evaluator: Arc<dyn Evaluator> = Arc::from(card.build(&ctx)?);
        let notes = Arc::new(std::sync::RwLock::new(None));
        let memory: Box<dyn Memory> = Box::new(steering::NotedMemory {
            inner: card.build(&ctx)?,
            notes: Arc::clone(&notes),
        });
        let memory = Arc::new(tokio::sync::RwLock::new(memory));
        let seed = card.card().seed;
        let valid = card.clone();
        let card = card.card();
        let gate = match &card.general.novelty {
            None => None,
            Some(settings) => {
                let embedder: Option<Arc<dyn Embedder>> = match &settings.embeddings_model {
                    None => None,
                    Some(name) => {
                        let user = load_user_settings()?;
                        Some(Arc::new(embeddings_for(name, &user, &|var| {
                            std::env::var(var).ok()
                        })?))
                    }
                };
                Some(Gate::new(settings.clone(), embedder))
            }
        };
        Ok(Self {
            card: card.clone(),
            task,
            population,
            policy,
            prompt_builder,
            proposer,
            evaluator,
            memory,
            model,
            rng: seeded(seed),
            resume: None,
            notices: Vec::new(),
            gate,
            shares: ModelShares::default(),
            steering: Steering::default(),
            notes,
            steer_only: false,
            queued: Vec::new(),
            origin: None,
            clearance: None,
            meter,
            live: in_flight::Rebuild::new(valid, run_dir, key_vars),
        })
    }

    /// Lines to say in the run's log (and its record) right after it
    /// starts, each with its level.
    #[must_use]
    pub fn with_notices(mut self, notices: Vec<(LogLevel, String)>) -> Self {
        self.notices = notices;
        self
    }

    /// Mark this run as a fork of `origin` (its initial program is that
    /// genome's): said in its log and kept in its record.
    #[must_use]
    pub fn forked_from(mut self, origin: Option<RunOrigin>) -> Self {
        self.origin = origin;
        self
    }

    /// Get the evaluator ready for the first evaluation (see
    /// [`Evaluator::warm_up`]); the future owns what it needs, so it can run
    /// as a task of its own while the run opens its record.
    pub fn warm_up(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let evaluator = Arc::clone(&self.evaluator);
        async move { evaluator.warm_up().await }
    }

    /// The card this scaffold was built from.
    pub fn card(&self) -> &Card {
        &self.card
    }

    /// Continue a recorded run: re-admit its genomes in order (populations are
    /// a pure function of their admissions) and restore the policy, memory,
    /// RNG and counters from its checkpoint. The initial program is not
    /// evaluated again.
    pub fn restore(
        &mut self,
        genomes: Vec<Genome>,
        mut checkpoint: Checkpoint,
    ) -> Result<(), ResumeError> {
        if genomes.is_empty() {
            return Err(ResumeError::NoGenomes);
        }
        if let Some((at, g)) = genomes.iter().enumerate().find(|(i, g)| g.id != *i as u64) {
            return Err(ResumeError::Gap {
                at: at as u64,
                found: g.id,
            });
        }
        if checkpoint.next_id != genomes.len() as u64 {
            return Err(ResumeError::Count {
                expected: checkpoint.next_id,
                found: genomes.len() as u64,
            });
        }
        // Counted from the genomes, so an archive from before the count was
        // checkpointed resumes with it right.
        checkpoint.rejected = genomes.iter().filter(|g| g.rejected.is_some()).count() as u64;
        for g in genomes {
            let g = Arc::new(g.for_selection());
            self.tell_model(&g);
            self.population.add(g);
        }
        self.policy
            .restore(&checkpoint.policy)
            .map_err(ResumeError::Policy)?;
        self.memory
            .try_write()
            .map_err(|_| ResumeError::MemoryBusy)?
            .restore(&checkpoint.memory)
            .map_err(ResumeError::Memory)?;
        self.rng = checkpoint.rng.clone();
        self.meter.start_from(&checkpoint.usage);
        self.steering = checkpoint.steering.clone();
        self.share_notes();
        self.resume = Some(checkpoint);
        Ok(())
    }

    fn empty_summary(status: RunStatus) -> RunSummary {
        RunSummary::empty(status)
    }

    /// Run to the end. Events go to `events`; commands are read from
    /// `commands` between steps and while waiting; every admitted iteration
    /// goes to the recorder (genomes and checkpoint together) when it is
    /// counted, and the recorder has written them all when this returns.
    #[expect(clippy::too_many_lines, reason = "the loop reads best as one piece")]
    pub async fn run(
        mut self,
        events: EventSink,
        mut commands: tokio::sync::mpsc::Receiver<RunCommand>,
        mut recorder: Option<Box<dyn RunRecorder>>,
        run_dir: Option<std::path::PathBuf>,
    ) -> RunSummary {
        let started = Instant::now();
        let mut general = self.card.general.clone();
        let info = RunInfo {
            card_name: self.card.name.clone(),
            task_name: self.task.name.clone(),
            max_iterations: general.max_iterations,
            model: self.model.describe(),
            offline: self.model.is_offline(),
            seed: self.card.seed,
            parallel: general.parallel,
            run_dir,
            unsandboxed: self.evaluator.unsandboxed(),
            forked_from: self.origin.clone(),
            clearance: self.clearance.clone().map(Box::new),
        };
        if let Some(r) = recorder.as_mut()
            && let Err(e) = r.begin(&info, &self.card, &self.task.dir)
        {
            let msg = format!("cannot write the run record: {e}");
            events.log(LogLevel::Error, msg.clone()).await;
            events.send(RunEvent::Started(info)).await;
            let summary = Self::empty_summary(RunStatus::Failed(msg));
            events.send(RunEvent::Finished(summary.clone())).await;
            return summary;
        }
        let unsandboxed = info.unsandboxed.clone();
        events.send(RunEvent::Started(info)).await;
        if let Some(warning) = unsandboxed {
            if let Some(r) = recorder.as_mut() {
                r.log(LogLevel::Warn, &warning);
            }
            events.log(LogLevel::Warn, warning).await;
        }
        if let Some(origin) = &self.origin {
            self.notices
                .insert(0, (LogLevel::Info, format!("forked from {origin}")));
        }
        for (level, msg) in std::mem::take(&mut self.notices) {
            if let Some(r) = recorder.as_mut() {
                r.log(level, &msg);
            }
            events.log(level, msg).await;
        }
        if self.model.is_offline() {
            let msg = "using the built-in offline model (no endpoint configured): it only tunes numeric literals";
            if let Some(r) = recorder.as_mut() {
                r.log(LogLevel::Info, msg);
            }
            events.log(LogLevel::Info, msg).await;
        }

        let mut shared = Arc::new(Shared {
            brief: self.task.brief(self.evaluator.timeout_secs()),
            max_response_bytes: usize::try_from(general.max_response_bytes).unwrap_or(usize::MAX),
            fitness_metric: self.task.config.fitness_metric(),
            prompt_builder: Arc::clone(&self.prompt_builder),
            proposer: Arc::clone(&self.proposer),
            evaluator: Arc::clone(&self.evaluator),
            memory: Arc::clone(&self.memory),
            gate: self.gate.take().map(Arc::new),
        });
        let gate_pool = shared.gate.as_ref().map(|g| g.settings.pool as usize);
        if let Some(gate) = &shared.gate {
            let msg = gate.describe();
            if let Some(r) = recorder.as_mut() {
                r.log(LogLevel::Info, &msg);
            }
            events.log(LogLevel::Info, msg).await;
        }

        let mut paused = false;
        let mut commands_open = true;
        let mut st = LoopState {
            summary: Self::empty_summary(RunStatus::Completed),
            next_id: 0,
            last_iteration: 0,
            stop: None,
            durable: recorder.as_ref().and_then(|r| r.progress()),
            recorder,
            record_error: None,
            model_failures_in_a_row: 0,
            recorded: 0,
            held: std::collections::VecDeque::new(),
            started,
            wall_before: 0.0,
        };
        let mut admitted: Vec<Arc<Genome>> = Vec::new();

        if let Some(ck) = self.resume.take() {
            st.summary.iterations = ck.iterations_done;
            st.summary.genomes = ck.next_id;
            st.summary.valid = ck.valid;
            st.summary.invalid = ck.invalid;
            st.summary.rejected = ck.rejected;
            st.wall_before = ck.wall_secs;
            st.summary.usage = ck.usage;
            st.next_id = ck.next_id;
            st.last_iteration = ck.last_iteration;
            st.summary.initial_score = self.population.get(0).and_then(|g| g.fitness());
            events
                .log(
                    LogLevel::Info,
                    format!(
                        "resumed after iteration {} ({} genomes on record)",
                        ck.iterations_done, ck.next_id
                    ),
                )
                .await;
            if !self.steering.is_empty() {
                events.send(RunEvent::Steered(self.steering.clone())).await;
            }
        } else {
            // The initial program: genome 0, iteration 0. Commands are read
            // meanwhile: a Stop must not wait for a slow first evaluation
            // (dropping it kills the candidate).
            let t_eval = Instant::now();
            let evaluator = Arc::clone(&self.evaluator);
            let candidate = Candidate {
                id: 0,
                content: self.task.initial_program.clone(),
            };
            let mut evaluation = std::pin::pin!(evaluator.evaluate(&candidate));
            let eval = loop {
                tokio::select! {
                    e = &mut evaluation => break Some(e),
                    cmd = commands.recv(), if commands_open => match cmd {
                        Some(cmd) => {
                            // No genome yet: a person's program has no parent to refer to.
                            drop(self.apply(cmd, &mut paused, &mut st, &events).await);
                            if st.stop.is_some() {
                                break None;
                            }
                        }
                        None => commands_open = false,
                    },
                }
            };
            if let Some(eval) = eval {
                let evaluator_failed = eval.evaluator_failed;
                let mut initial = Genome {
                    iteration: 0,
                    valid: eval.valid,
                    scores: eval.scores,
                    artifacts: eval.artifacts,
                    error: eval.error,
                    private: eval.private,
                    placement: eval.placement,
                    content: self.task.initial_program.clone(),
                    metadata: GenomeMeta {
                        patch_type: "initial".to_owned(),
                        ..GenomeMeta::default()
                    },
                    timings: Timings {
                        evaluate_ms: ms(t_eval),
                        ..Timings::default()
                    },
                    ..Genome::default()
                };
                name_fitness(&mut initial, self.task.config.fitness_metric().as_deref());
                let (out, _) = self.admit_iteration(vec![initial], &mut st, false).await;
                st.summary.initial_score = out.first().and_then(|g| g.fitness());
                if let Some(g) = out.first().filter(|g| !g.valid) {
                    let why = g.error.as_deref().unwrap_or("invalid");
                    // The evaluator's own failure is not the program's.
                    st.stop
                        .get_or_insert(RunStatus::Failed(if evaluator_failed {
                            format!("the task's evaluator cannot run: {why}")
                        } else {
                            format!("the initial program did not score: {why}")
                        }));
                }
                admitted.extend(out);
            }
        }

        let mut in_flight = FuturesUnordered::new();
        let parallel = general.parallel.max(1) as usize;
        let attempts = general.inner_retry_times.saturating_add(1);

        loop {
            // Announce whatever was admitted, once it is on disk.
            self.stage(&mut admitted, &mut st);
            Self::release(&mut st.held, st.durable.as_ref(), &events, false).await;
            self.say_model_notices(&events, &mut st).await;
            if let Some(e) = st.record_error.take() {
                events
                    .log(
                        LogLevel::Error,
                        format!("cannot record the run: {e}; stopping"),
                    )
                    .await;
            }
            if st.stop.is_none() {
                if let Some(cap) = general.max_tokens
                    && st.summary.usage.total_tokens() >= cap
                {
                    st.stop = Some(RunStatus::BudgetReached(format!(
                        "{} tokens used, cap {cap}",
                        st.summary.usage.total_tokens()
                    )));
                }
                if let (Some(cap), Some(cost)) = (general.max_cost_usd, st.summary.usage.cost_usd)
                    && cost >= cap
                {
                    st.stop = Some(RunStatus::BudgetReached(format!(
                        "${cost:.4} spent, cap ${cap:.2}"
                    )));
                }
            }
            if st.stop.is_none()
                && let Some(why) = general.stop.reason(&self.progress(&st))
            {
                st.stop = Some(RunStatus::EarlyStop(why));
            }

            for cmd in std::mem::take(&mut self.queued) {
                if let Some(job) = self.apply(cmd, &mut paused, &mut st, &events).await {
                    in_flight.push(run_iteration(Arc::clone(&shared), job));
                }
            }
            while commands_open {
                match commands.try_recv() {
                    Ok(cmd) => {
                        if let Some(job) = self.apply(cmd, &mut paused, &mut st, &events).await {
                            in_flight.push(run_iteration(Arc::clone(&shared), job));
                        }
                    }
                    Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
                    Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                        commands_open = false
                    }
                }
            }
            if matches!(st.stop, Some(RunStatus::Stopped)) {
                break; // abandon in-flight work: dropping it kills evaluator processes
            }
            self.take_settings(&mut shared, &mut general, &mut st, &events)
                .await;

            while !paused
                && !self.steer_only
                && st.stop.is_none()
                && in_flight.len() < parallel
                && st.summary.iterations + (in_flight.len() as u64) < general.max_iterations
            {
                let selection = match self.policy.select(&*self.population, &mut self.rng) {
                    Ok(s) => self.with_pins(s),
                    Err(e) => {
                        if in_flight.is_empty() {
                            st.stop = Some(RunStatus::Failed(format!("selection failed: {e}")));
                        }
                        break;
                    }
                };
                let Some(parent) = selection.parent().cloned() else {
                    if in_flight.is_empty() {
                        st.stop = Some(RunStatus::Failed(
                            "the selection policy returned no parent".to_owned(),
                        ));
                    }
                    break;
                };
                st.last_iteration += 1;
                let iteration = st.last_iteration;
                self.policy.dispatched(iteration);
                let grandparent = parent.parent_id.and_then(|id| self.population.get(id));
                events
                    .send(RunEvent::IterationStarted {
                        iteration,
                        parent_id: parent.id,
                    })
                    .await;
                let job = Job {
                    iteration,
                    parent,
                    parents: selection.parents,
                    grandparent,
                    inspirations: selection.inspirations,
                    knowledge: self.memory.read().await.read(&MemoryQuery {
                        island: selection.island,
                        max_chars: None,
                    }),
                    seed: self.rng.next_u64(),
                    attempts,
                    best: self.population.best().and_then(|b| b.fitness()),
                    island: selection.island,
                    pool: match self.proposer.novelty_pool_size() {
                        0 => Vec::new(),
                        k => self.population.query(&Query::TopK(k)),
                    },
                    compared: match gate_pool {
                        None | Some(0) => Vec::new(),
                        Some(k) => self.population.query(&Query::TopK(k)),
                    },
                    program: None,
                };
                in_flight.push(run_iteration(Arc::clone(&shared), job));
            }

            let waiting_for_disk = !st.held.is_empty() && st.durable.is_some();
            if in_flight.is_empty() {
                if paused && st.stop.is_none() && commands_open && !self.steer_only {
                    tokio::select! {
                        cmd = commands.recv() => match cmd {
                            Some(cmd) => {
                                if let Some(job) = self.apply(cmd, &mut paused, &mut st, &events).await {
                                    in_flight.push(run_iteration(Arc::clone(&shared), job));
                                }
                            }
                            None => commands_open = false,
                        },
                        () = written(&mut st.durable), if waiting_for_disk => {}
                    }
                    continue;
                }
                break;
            }

            tokio::select! {
                cmd = commands.recv(), if commands_open => match cmd {
                    Some(cmd) => {
                        if let Some(job) = self.apply(cmd, &mut paused, &mut st, &events).await {
                            in_flight.push(run_iteration(Arc::clone(&shared), job));
                        }
                    }
                    None => commands_open = false,
                },
                () = written(&mut st.durable), if waiting_for_disk => {}
                // Wake up to say what the model is going through (retries)
                // while a call takes long.
                () = tokio::time::sleep(NOTICE_INTERVAL) => {}
                Some(outcome) = in_flight.next() => {
                    if outcome.counts {
                        st.summary.iterations += 1;
                    }
                    for warning in &outcome.warnings {
                        if let Some(r) = st.recorder.as_mut() {
                            r.log(LogLevel::Warn, warning);
                        }
                        events.log(LogLevel::Warn, warning.clone()).await;
                    }
                    if let Some(msg) = outcome.fatal {
                        st.stop = Some(RunStatus::Failed(msg));
                    }
                    match &outcome.model_down {
                        _ if !outcome.counts => {}
                        Some(msg) => {
                            st.model_failures_in_a_row += 1;
                            if st.model_failures_in_a_row >= MAX_CONSECUTIVE_MODEL_FAILURES {
                                st.stop.get_or_insert(RunStatus::Failed(format!(
                                    "the model failed {} iterations in a row (last: {msg}); fix the endpoint and resume the run",
                                    st.model_failures_in_a_row
                                )));
                            }
                        }
                        None => st.model_failures_in_a_row = 0,
                    }
                    let (out, memory_changed) =
                        self.admit_iteration(outcome.genomes, &mut st, true).await;
                    if st.summary.iterations.is_multiple_of(SHARES_EVERY)
                        && let Some(line) = self.shares.line()
                    {
                        if let Some(r) = st.recorder.as_mut() {
                            r.log(LogLevel::Info, &line);
                        }
                        events.log(LogLevel::Info, line).await;
                    }
                    if memory_changed {
                        let notes = self.memory.read().await.read(&MemoryQuery::all()).notes;
                        events.send(RunEvent::MemoryUpdated { notes }).await;
                    }
                    admitted.extend(out);
                }
            }
        }
        drop(in_flight);
        self.say_model_notices(&events, &mut st).await;
        if let Some(line) = self.shares.line() {
            if let Some(r) = st.recorder.as_mut() {
                r.log(LogLevel::Info, &line);
            }
            events.log(LogLevel::Info, line).await;
        }
        if shared.gate.is_some() {
            let msg = format!(
                "novelty gate: {} children rejected before evaluation in this run",
                st.summary.rejected
            );
            if let Some(r) = st.recorder.as_mut() {
                r.log(LogLevel::Info, &msg);
            }
            events.log(LogLevel::Info, msg).await;
        }
        self.stage(&mut admitted, &mut st);
        let best = self.population.best();

        let run_wall_secs = st.run_wall_secs();
        let mut summary = st.summary;
        if let Some(best) = best {
            summary.best_id = Some(best.id);
            summary.best_score = best.fitness();
        }
        summary.status = st.stop.unwrap_or(
            if self.steer_only && summary.iterations < general.max_iterations {
                RunStatus::Stopped
            } else {
                RunStatus::Completed
            },
        );
        summary.wall_secs = started.elapsed().as_secs_f64();
        summary.run_wall_secs = run_wall_secs;
        if let Some(r) = st.recorder.as_mut()
            && let Err(e) = r.finish(&summary)
        {
            events
                .log(
                    LogLevel::Error,
                    format!("cannot finish the run record: {e}"),
                )
                .await;
        }
        // Everything is written now (or cannot be): announce the rest.
        Self::release(&mut st.held, None, &events, true).await;
        events.send(RunEvent::Finished(summary.clone())).await;
        summary
    }

    /// What `general.stop` is checked against: the iterations done, the best
    /// fitness and the iteration that found it, the cost and the run's wall
    /// time over every invocation.
    fn progress(&self, st: &LoopState) -> Progress {
        Progress {
            iterations_done: st.summary.iterations,
            best: self
                .population
                .best()
                .and_then(|b| b.fitness().map(|f| (f, b.iteration))),
            cost_usd: st.summary.usage.cost_usd,
            wall_secs: st.run_wall_secs(),
        }
    }

    /// Log what the model reports about its calls (failed attempts it
    /// retries), in the run's output and its record.
    async fn say_model_notices(&self, events: &EventSink, st: &mut LoopState) {
        for notice in self.model.take_notices() {
            if let Some(r) = st.recorder.as_mut() {
                r.log(LogLevel::Warn, &notice);
            }
            events.log(LogLevel::Warn, notice).await;
        }
    }
}
