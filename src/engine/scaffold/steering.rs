//! The loop's side of steering (see [`crate::engine::steering`]): the
//! person's notes reach every prompt through the memory slot
//! ([`NotedMemory`]), pinned genomes join every selection's inspirations,
//! and a person's program becomes a job evaluated and admitted like any
//! child. Every change is logged and recorded with a checkpoint at once,
//! so it survives a stop before the next iteration.
//!
//! # The commands
//!
//! What a person changes by hand goes through the loop, on its task, as commands
//! (`scaffold/steering.rs`):
//!
//! - `RunCommand::Inject { parent, program }`: the loop checks the program against the parent with
//!   `scaffold::check_person_program` (changed, and every changed path allowed by the task's
//!   `EditRules`; the studio's editor and `galapagos inject` run the same check first), numbers it
//!   as the next iteration and runs it as a `Job` whose `program` is set: `run_iteration` evaluates
//!   it as it evaluates a proposal's child (the evaluator, the fitness metric, confirmation of a
//!   would-be best) without a prompt, a model call or the novelty gate, marks it
//!   `metadata.patch_type = "human"` (`genome::PERSON_PATCH`; `Genome::is_by_person`,
//!   `Genome::author` "person") and hands it back as an `Outcome` that does not count toward the
//!   budget. Admission is the one for every child: population, policy `observe`, memory
//!   `after_iteration`, the record with its diff. Such a job is in flight like any iteration, so it
//!   is evaluated and admitted while the run is paused too. A refusal is an error in the log that
//!   begins with `scaffold::PERSON_REFUSED`, and nothing is recorded.
//! - `SetNotes`, `Pin`, `Unpin` change the `Steering` from the next dispatched iteration on. The
//!   notes reach prompts through the memory slot: the scaffold wraps the card's memory in
//!   `NotedMemory`, whose `read` puts them first among the notes (so the prompt builder and a
//!   proposer's `env.read_memory` see them, and each genome's prompt records them). Pins are
//!   applied to every `Selection` the policy returns (`Scaffold::with_pins`): each pinned genome
//!   that is a valid member and not a parent goes first among the inspirations. A pin of an unknown
//!   or invalid genome is refused in the log. Each change is logged, sent as `RunEvent::Steered`
//!   and recorded at once as a checkpoint with no genomes (`record_iteration(&[], …)`), so it
//!   survives a stop before the next iteration; `Checkpoint::steering` carries the notes, the pins
//!   and the history of changes with their iterations, and `Scaffold::restore` puts them back.
//! - **A stopped run** (`galapagos inject`, `galapagos steer`): `RunPlan::steer(run_dir, changes)`
//!   reopens the run as a resume does (its card, task, the lock) and `Scaffold::steer_only` applies
//!   `changes` as if they were commands sent before the start, dispatches no iteration, waits for a
//!   person's job and ends (`completed` when the budget is spent, else `stopped`). **Concurrency**
//!   is the run folder's lock: a live run holds `run.lock` to its end, so `RunPlan::steer` on its
//!   folder fails with `ArchiveError::Locked` (the holder's PID) before anything is read for
//!   writing; a live run is steered through its own command channel only.

use std::sync::{Arc, RwLock};

use crate::engine::archive::Checkpoint;
use crate::engine::component::RestoreError;
use crate::engine::events::{EventSink, LogLevel, RunCommand, RunEvent, RunStatus};
use crate::engine::genome::{Genome, GenomeId, Tree};
use crate::engine::memory::{Knowledge, Memory, MemoryQuery};
use crate::engine::population::Population;
use crate::engine::selection::Selection;
use crate::engine::steering::Change;
use crate::engine::task::program_folder::{EditOp, EditRules};
use crate::engine::tree::ChangeKind;

use super::iteration::Job;
use super::{LoopState, Scaffold};

/// The card's memory with the person's notes in front of what it knows: a
/// prompt (and a proposer reading memory) sees them as the first note.
pub(super) struct NotedMemory {
    pub(super) inner: Box<dyn Memory>,
    /// The notes as a prompt shows them, set by the loop.
    pub(super) notes: Arc<RwLock<Option<String>>>,
}

#[async_trait::async_trait]
impl Memory for NotedMemory {
    fn read(&self, query: &MemoryQuery) -> Knowledge {
        let mut knowledge = self.inner.read(query);
        if let Some(note) = self.notes.read().ok().and_then(|n| n.clone()) {
            knowledge.notes.insert(0, note);
        }
        knowledge
    }

    fn write(&mut self, knowledge: Knowledge) {
        self.inner.write(knowledge);
    }

    async fn after_iteration(
        &mut self,
        admitted: &[Arc<Genome>],
        population: &dyn Population,
    ) -> bool {
        self.inner.after_iteration(admitted, population).await
    }

    fn checkpoint(&self) -> serde_json::Value {
        self.inner.checkpoint()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        self.inner.restore(state)
    }
}

/// How the log line that refuses a person's program begins.
pub const PERSON_REFUSED: &str = "the program written by a person was not evaluated";

/// Why a person's program cannot be a child of `parent`: nothing changed, a
/// change the task's edit rules refuse (the message names the path and the
/// rule), or a change outside a marked file's EVOLVE-BLOCK markers. People
/// are held to the rules the model is; `outside_markers` overrides the
/// markers' rule (never the others), and then the rule broken is returned
/// to be recorded on the genome. The one check the loop, the command line
/// and the studio share (with the task's
/// [`crate::engine::task::Task::edit_rules`]).
pub fn check_person_program(
    rules: &EditRules,
    parent: &Tree,
    program: &Tree,
    outside_markers: bool,
) -> Result<Option<String>, String> {
    let unchanged =
        || Err("the program is its parent's unchanged; change something first".to_owned());
    // each changed file of a marked parent: (path, the parent's text, the
    // program's text; None when deleted)
    let mut marked: Vec<(String, String, Option<String>)> = Vec::new();
    match (parent.is_single(), program.is_single()) {
        // a single-file program is its text, whatever its file is called
        (true, true) if parent.single_text() == program.single_text() => return unchanged(),
        (true, true) => {
            // named as the task names its one file
            let path = match rules.editable().iter().collect::<Vec<_>>().as_slice() {
                [only] => only.as_str(),
                _ => "the program",
            };
            marked.push((
                path.to_owned(),
                parent.single_text().unwrap_or_default().to_owned(),
                program.single_text().map(str::to_owned),
            ));
        }
        (true, false) => return Err("the run's program is one file, not a folder".to_owned()),
        (false, true) => {
            return Err("the run's program is a folder: give every file of it".to_owned());
        }
        (false, false) => {
            let changes = program.changes_from(parent);
            if changes.is_empty() {
                return unchanged();
            }
            for change in &changes {
                let op = match change.kind {
                    ChangeKind::Added => EditOp::Add,
                    ChangeKind::Modified => EditOp::Modify,
                    ChangeKind::Deleted => EditOp::Delete,
                };
                rules.check(&change.path, op)?;
                if let Some(old) = parent.text_of(&change.path) {
                    marked.push((
                        change.path.clone(),
                        old.to_owned(),
                        program.text_of(&change.path).map(str::to_owned),
                    ));
                }
            }
            rules.check_count(program.len())?;
        }
    }
    let mut broken = Vec::new();
    for (path, old, new) in &marked {
        let outside = match new {
            Some(new) => crate::engine::text::tree_edits::outside_markers_kept(old, new)
                .err()
                .map(|(line, text)| format!("{path} line {line}: `{text}`")),
            None if !crate::engine::text::markers::evolve_regions(
                &old.lines().collect::<Vec<_>>(),
            )
            .is_empty() =>
            {
                Some(format!("{path} deleted"))
            }
            None => None,
        };
        broken.extend(outside);
    }
    if broken.is_empty() {
        return Ok(None);
    }
    let rule = format!(
        "changed outside the EVOLVE-BLOCK markers ({})",
        broken.join("; ")
    );
    if outside_markers {
        Ok(Some(rule))
    } else {
        Err(format!(
            "{rule}: the task's edit rules let only the lines between EVOLVE-BLOCK-START and \
             EVOLVE-BLOCK-END change, for a person as for the model; to keep the change, \
             override the rule (`galapagos inject --outside-markers`, or \"Allow edits outside \
             the markers\" in the studio's editor), which the genome records"
        ))
    }
}

impl Scaffold {
    /// Start no iteration: a recorded run reopened to take what a person
    /// changed while it is stopped (`changes`: a program of theirs, notes,
    /// pins), which are applied, evaluated and recorded as in a live run;
    /// then it ends, as `stopped`, or `completed` when its budget is spent.
    #[must_use]
    pub fn steer_only(mut self, changes: Vec<RunCommand>) -> Self {
        self.steer_only = true;
        self.queued = changes;
        self
    }

    /// The checkpoint of the loop's state now.
    pub(super) async fn checkpoint(&self, st: &LoopState) -> Checkpoint {
        Checkpoint {
            iterations_done: st.summary.iterations,
            last_iteration: st.last_iteration,
            next_id: st.next_id,
            rng: self.rng.clone(),
            policy: self.policy.checkpoint(),
            memory: self.memory.read().await.checkpoint(),
            usage: st.summary.usage,
            valid: st.summary.valid,
            invalid: st.summary.invalid,
            rejected: st.summary.rejected,
            wall_secs: st.run_wall_secs(),
            steering: self.steering.clone(),
        }
    }

    /// Make the memory show the notes in force.
    pub(super) fn share_notes(&self) {
        if let Ok(mut shown) = self.notes.write() {
            *shown = self.steering.note();
        }
    }

    /// Apply a person's change from the next dispatched iteration on: log
    /// it, record it (a checkpoint with no genomes) and report the steering
    /// now in force. A pin of a genome that is not a valid member of the
    /// population is refused with an error in the log.
    pub(super) async fn steer(&mut self, change: Change, st: &mut LoopState, events: &EventSink) {
        if let Change::Pin { genome } = &change
            && let Err(why) = self.pinnable(*genome)
        {
            self.say(
                st,
                events,
                LogLevel::Error,
                format!("cannot pin genome #{genome}: {why}"),
            )
            .await;
            return;
        }
        let Some(changed) = self.steering.apply(change, st.last_iteration + 1) else {
            return;
        };
        self.share_notes();
        self.say(st, events, LogLevel::Info, changed.describe())
            .await;
        if st.recorder.is_some() {
            let checkpoint = self.checkpoint(st).await;
            if let Some(r) = st.recorder.as_mut() {
                st.recorded += 1;
                if let Err(e) = r.record_iteration(&[], &checkpoint) {
                    st.record_error = Some(e.to_string());
                    st.stop
                        .get_or_insert(RunStatus::Failed(format!("cannot record the run: {e}")));
                }
            }
        }
        events.send(RunEvent::Steered(self.steering.clone())).await;
    }

    fn pinnable(&self, id: GenomeId) -> Result<(), String> {
        match self.population.get(id) {
            None => Err("no such genome in this run".to_owned()),
            Some(g) if g.fitness().is_none() => Err(
                "it is not valid (or unconfirmed), and only valid genomes are shown to the model"
                    .to_owned(),
            ),
            Some(_) => Ok(()),
        }
    }

    /// Put the pinned genomes first among the selection's inspirations
    /// (those still valid members, and not a parent of this selection).
    pub(super) fn with_pins(&self, mut selection: Selection) -> Selection {
        let mut pinned: Vec<Arc<Genome>> = Vec::new();
        for pin in &self.steering.pins {
            let Some(g) = self.population.get(pin.genome) else {
                continue;
            };
            if g.fitness().is_none() || selection.parents.iter().any(|p| p.id == g.id) {
                continue;
            }
            pinned.push(g);
        }
        if pinned.is_empty() {
            return selection;
        }
        selection
            .inspirations
            .retain(|g| !pinned.iter().any(|p| p.id == g.id));
        pinned.append(&mut selection.inspirations);
        selection.inspirations = pinned;
        selection
    }

    /// A person's program as a job for the loop: the next iteration number,
    /// the parent from the population. Refused (`None`, with an error in the
    /// log) when the parent is unknown or the program breaks the task's
    /// edit rules.
    pub(super) async fn person_job(
        &mut self,
        parent: GenomeId,
        program: Tree,
        outside_markers: bool,
        st: &mut LoopState,
        events: &EventSink,
    ) -> Option<Job> {
        let refused = match self.population.get(parent) {
            None => Err(format!("no genome #{parent} in this run")),
            Some(p) => check_person_program(
                &self.task.edit_rules(),
                &p.content,
                &program,
                outside_markers,
            )
            .map(|overridden| (p, overridden)),
        };
        let (parent, program, overridden) = match refused {
            // a single file keeps its parent's file name
            Ok((p, overridden)) => {
                let program = match program.single_text() {
                    Some(text) if p.content.is_single() => p.content.with_single_text(text),
                    _ => program.clone(),
                };
                (p, program, overridden)
            }
            Err(why) => {
                let msg = format!("{PERSON_REFUSED}: {why}");
                self.say(st, events, LogLevel::Error, msg).await;
                return None;
            }
        };
        st.last_iteration += 1;
        let iteration = st.last_iteration;
        let msg = format!(
            "evaluating a program written by a person as a child of #{} (iteration {iteration})",
            parent.id
        );
        self.say(st, events, LogLevel::Info, msg).await;
        if let Some(rule) = &overridden {
            let msg = format!(
                "the program written by a person {rule}: the person overrode the task's edit rule, \
                 and the genome records it"
            );
            self.say(st, events, LogLevel::Warn, msg).await;
        }
        let grandparent = parent.parent_id.and_then(|id| self.population.get(id));
        Some(Job {
            iteration,
            parents: vec![Arc::clone(&parent)],
            parent,
            grandparent,
            inspirations: Vec::new(),
            knowledge: Knowledge::default(),
            seed: 0,
            attempts: 1,
            best: self.population.best().and_then(|b| b.fitness()),
            island: None,
            pool: Vec::new(),
            compared: Vec::new(),
            program: Some((program, overridden)),
        })
    }

    /// Apply a command; a person's program comes back as the job to run.
    pub(super) async fn apply(
        &mut self,
        cmd: RunCommand,
        paused: &mut bool,
        st: &mut LoopState,
        events: &EventSink,
    ) -> Option<Job> {
        let stop = &mut st.stop;
        match cmd {
            RunCommand::Pause if !*paused => {
                *paused = true;
                events.send(RunEvent::Paused).await;
            }
            RunCommand::Resume if *paused => {
                *paused = false;
                events.send(RunEvent::Resumed).await;
            }
            RunCommand::Stop => {
                *stop = Some(RunStatus::Stopped);
            }
            RunCommand::Inject {
                parent,
                program,
                outside_markers,
            } => {
                return self
                    .person_job(parent, program, outside_markers, st, events)
                    .await;
            }
            RunCommand::SetNotes(text) => self.steer(Change::Notes { text }, st, events).await,
            RunCommand::Pin(genome) => self.steer(Change::Pin { genome }, st, events).await,
            RunCommand::Unpin(genome) => self.steer(Change::Unpin { genome }, st, events).await,
            RunCommand::Reconfigure(new) => self.live.pending = Some((new, *paused)),
            RunCommand::Pause | RunCommand::Resume => {}
        }
        None
    }

    /// A line in the run's log and its record.
    pub(super) async fn say(
        &self,
        st: &mut LoopState,
        events: &EventSink,
        level: LogLevel,
        message: String,
    ) {
        if let Some(r) = st.recorder.as_mut() {
            r.log(level, &message);
        }
        events.log(level, message).await;
    }
}
