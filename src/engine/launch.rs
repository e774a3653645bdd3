//! What a run is started from, new or resumed: the one API the command line
//! and the studio both use. A [`RunPlan`] holds a checked card, the task
//! folder and the run folder; [`crate::engine::run_thread::start`] runs it on
//! its own thread.
//!
//! The budget rule for resuming, in one place: the budget is the *total*
//! number of iterations (as `general.max_iterations` and `run --iterations`
//! are), and a resume must leave something to do. Resuming a run that did
//! `done` iterations towards a budget `N` continues it up to `N`; with
//! `N <= done` nothing would run, so the plan is refused with an error that
//! names the smallest budget that would ([`LaunchError::NothingToDo`]).
//!
//! # Starting a run
//!
//! `RunPlan::new(valid_card, task_dir, run_dir)`, `RunPlan::fork(run_dir, genome, card, registry)`
//! or `RunPlan::resume(run_dir, budget, registry)` says what to run; `run_thread::start(plan,
//! model, waker)` starts it on a thread named `galapagos-run` with a single-threaded tokio runtime
//! (the whole run is one future; P iterations in flight are a `FuturesUnordered` inside it) and
//! returns a `RunHandle`. The command line and the studio both go through this API.
//!
//! # Forks
//!
//! `RunPlan::fork` reads one genome of a recorded run (`Archive::genome`) and makes it the initial
//! program of a new run on that run's task folder (the task loaded as usual, its program replaced
//! by the genome's tree), with the card given or the run's own (`launch::recorded_card`). The plan
//! carries a `RunOrigin` (the parent's canonical folder and the genome id) into
//! `RunInfo::forked_from`, which the recorders write into the archive's meta and `summary.json`
//! (never the card) and the loop says first in its log. `RunPlan::resume` of a fork reads the
//! origin back and takes genome 0 of its own record as the initial program, so a resumed fork is
//! still one. The studio's Runs tab draws the tree from `RunListing::forked_from`
//! (`runs::fork_tree`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::archive::{Archive, ArchiveError, RunLock, RunMeta};
use crate::engine::card::{Card, CardErrors, ValidCard};
use crate::engine::component::{Feature, Place, Slot};
use crate::engine::consent::{Clearance, Consent, ConsentNeeded};
use crate::engine::events::RunCommand;
use crate::engine::events::RunOrigin;
use crate::engine::genome::GenomeId;
use crate::engine::provenance::Provenance;
use crate::engine::registry::Registry;
use crate::engine::task::{Task, TaskError};
use crate::engine::task_settings::{SettingsError, TaskSettings};

/// Why a run cannot be started as asked.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// A fork names a genome the run does not have.
    #[error("{}: the run has no genome #{id} (its genomes are #0 to #{})", run.display(), count.saturating_sub(1))]
    NoGenome {
        run: PathBuf,
        id: GenomeId,
        count: u64,
    },
    /// A fork names a genome that is invalid: its program did not pass the
    /// evaluator, so a run started from it would fail at once.
    #[error(
        "{}: genome #{id} is invalid ({why}): fork from a valid genome",
        run.display()
    )]
    InvalidGenome {
        run: PathBuf,
        id: GenomeId,
        why: String,
    },
    /// The card recorded in the run folder does not load with this build's
    /// components.
    #[error("the recorded card is not valid here:\n{0}")]
    RecordedCard(CardErrors),
    /// The budget is already spent.
    #[error("the run already did {done} of {budget} iterations: raise the budget above {done}")]
    NothingToDo { done: u64, budget: u64 },
    /// The task folder cannot be used.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// A setting of the task's config file cannot be applied.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// A stopped run can be steered only once its initial program is on
    /// record.
    #[error("{}: the run has no scored initial program yet: resume it first", dir.display())]
    NothingToSteer { dir: PathBuf },
    /// The initial program is already over a limit every child must keep,
    /// so every proposal would be rejected.
    #[error(
        "{program}: the initial program has {length} characters, more than the proposer's max_code_length \
         ({limit}): every child would be rejected; raise max_code_length ({where_set}) or shorten the program"
    )]
    ProgramTooLong {
        program: PathBuf,
        length: usize,
        limit: i64,
        where_set: &'static str,
    },
    /// The card lowers isolation and the rule asks for a consent that was
    /// not given (see [`crate::engine::consent`]).
    #[error("{0}")]
    ConsentNeeded(Box<ConsentNeeded>),
    /// A block runs processes on this machine, and they cannot run here
    /// (see [`crate::engine::platform`]).
    #[error("the card's {slot}: {reason}")]
    NotHere { slot: Slot, reason: String },
}

/// Why a genome is invalid, on one short line (its error's first line).
pub fn invalid_reason(error: Option<&str>) -> String {
    let first = error
        .and_then(|e| e.lines().find(|l| !l.trim().is_empty()))
        .map_or("no reason recorded", str::trim);
    let mut cut: String = first.chars().take(120).collect();
    if cut.len() < first.len() {
        cut.push('…');
    }
    cut
}

/// Check the resume rule: a budget of `budget` total iterations leaves work
/// for a run that did `done`.
pub fn check_resume_budget(done: u64, budget: u64) -> Result<(), LaunchError> {
    if budget > done {
        Ok(())
    } else {
        Err(LaunchError::NothingToDo { done, budget })
    }
}

/// The card the run in `run_dir` ran with, checked with this build's
/// components, with the provenance its record vouches for: the record's when
/// this account signed it for this card, else [`Provenance::RunFolder`]
/// (see [`crate::engine::consent`]).
pub fn recorded_card(run_dir: &Path, registry: &Registry) -> Result<ValidCard, LaunchError> {
    let archive = Archive::open(run_dir)?;
    let meta = archive.meta()?;
    let origin = format!("{} (card stored in the run archive)", run_dir.display());
    let card = ValidCard::from_yaml(&meta.card_yaml, &origin, registry)
        .map_err(LaunchError::RecordedCard)?;
    let (provenance, _) = vouched(run_dir, &archive, &card)?;
    Ok(card.with_provenance(provenance))
}

/// What the record of the run in `run_dir` vouches for about its `card`:
/// (its provenance, the record itself) when this account signed it for this
/// card; else (the run folder as provenance, no record).
fn vouched(
    run_dir: &Path,
    archive: &Archive,
    card: &ValidCard,
) -> Result<(Option<Provenance>, Option<Clearance>), LaunchError> {
    match archive.clearance()? {
        Some(record) if record.is_signed_for(&card.card().hash()) => {
            Ok((record.provenance.clone(), Some(record)))
        }
        _ => Ok((
            Some(Provenance::RunFolder {
                run: std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf()),
            }),
            None,
        )),
    }
}

/// The standing of a run of `card` (fitted to the task in `task_dir`), from
/// a card of `provenance` hashed `hash` before the task's settings were
/// mapped onto it.
fn clearance_of(
    card: &ValidCard,
    task_dir: &Path,
    provenance: Option<Provenance>,
    hash: String,
) -> Clearance {
    let as_root = crate::engine::consent::running_as_root();
    Clearance {
        card_name: card.card().name.clone(),
        provenance,
        hash,
        lowered: crate::engine::sandbox::lowered::lowered(card.reaches(), task_dir, as_root),
        as_root,
        consent: None,
        recorded: String::new(),
        tag: None,
    }
}

/// Refused where candidates and agents cannot run (any system but Linux):
/// the first block that runs processes on this machine, with what to do
/// instead ([`crate::engine::platform::refusal`]). Checked before a
/// run folder is made, so a refused run writes nothing.
fn check_runs_here(card: &ValidCard) -> Result<(), LaunchError> {
    for (slot, reach) in card.reaches() {
        if reach.place == Place::ThisMachine {
            crate::engine::platform::runs_here()
                .map_err(|reason| LaunchError::NotHere { slot, reason })?;
        }
    }
    Ok(())
}

/// A run ready to start.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// The card as it will run: the user's card with the task's settings
    /// mapped onto it (see [`crate::engine::task_settings`]).
    card: ValidCard,
    task: Task,
    settings: TaskSettings,
    run_dir: Option<PathBuf>,
    /// The run folder's writer lock, held from the plan to the run's end.
    lock: Option<Arc<RunLock>>,
    /// Iterations already done, when this continues a recorded run.
    resumed_after: Option<u64>,
    /// Genomes on record (valid, invalid), when this continues a recorded run.
    recorded: (u64, u64),
    /// Reopened only to take a person's changes, these (see [`RunPlan::steer`]).
    steer_only: Option<Vec<RunCommand>>,
    /// The run and genome this run was forked from, when it is a fork (kept
    /// when a fork is resumed).
    origin: Option<RunOrigin>,
    /// Where the card came from, what it lowers and the consent given (see
    /// [`crate::engine::consent`]).
    clearance: Clearance,
}

/// The card fitted to the task: its config's settings mapped onto it, and a
/// task with no evaluator file refused when the card's evaluator runs the
/// task's own (`Feature::TaskEvaluatorFile`).
fn fit(
    card: ValidCard,
    task: &Task,
    registry: &Registry,
) -> Result<(ValidCard, TaskSettings), LaunchError> {
    let (card, settings) = crate::engine::task_settings::apply(card, task, registry)?;
    let evaluator = &card.card().slot(Slot::Evaluator).kind;
    if registry.provides(Slot::Evaluator, evaluator, Feature::TaskEvaluatorFile) {
        task.require_evaluator_file()?;
    }
    check_limits(&card, task, registry)?;
    Ok((card, settings))
}

/// `card` as a run of `task` would use it (the task's settings mapped onto
/// it, as [`RunPlan::new`] does): what a front end sends a paused run as its
/// new settings ([`crate::engine::events::RunCommand::Reconfigure`]), so
/// that only what the user changed differs from the card the run has.
pub fn fit_to_task(
    card: ValidCard,
    task: &Task,
    registry: &Registry,
) -> Result<ValidCard, LaunchError> {
    fit(card, task, registry).map(|(card, _)| card)
}

/// The limits a child program must keep, checked against the initial
/// program before any model is asked: a program already over them would
/// have every child rejected while each prompt carried it whole.
fn check_limits(card: &ValidCard, task: &Task, registry: &Registry) -> Result<(), LaunchError> {
    let block = card.card().slot(Slot::Proposer);
    let Ok(entry) = registry.entry(Slot::Proposer, &block.kind) else {
        return Ok(());
    };
    if entry.default_of("max_code_length").is_none() {
        return Ok(());
    }
    let crate::engine::params::ParamValue::Int(limit) =
        entry.value_or_default(&block.params, "max_code_length")
    else {
        return Ok(());
    };
    let length = task.initial_program.longest_text_chars();
    if i64::try_from(length).is_ok_and(|n| n <= limit) {
        return Ok(());
    }
    Err(LaunchError::ProgramTooLong {
        program: task.dir.join(&task.program_file),
        length,
        limit,
        where_set: if task.config.get("max_code_length").is_some() {
            "max_code_length in the task's config"
        } else {
            "the card's proposer.max_code_length"
        },
    })
}

impl RunPlan {
    /// A new run of `card` on `task` (see [`Task::load`]), recorded in
    /// `run_dir` (`None` records nothing). The task's settings are mapped
    /// onto the card here; a value the card cannot take, or a folder with no
    /// evaluator for the card's evaluator, is an error and nothing is
    /// written. Then the folder is created and its writer lock taken
    /// (refused while another process writes there).
    pub fn new(
        card: ValidCard,
        task: Task,
        run_dir: Option<PathBuf>,
        registry: &Registry,
    ) -> Result<Self, LaunchError> {
        let hash = card.card().hash();
        let provenance = card.card().provenance.clone();
        let (card, settings) = fit(card, &task, registry)?;
        check_runs_here(&card)?;
        let clearance = clearance_of(&card, &task.dir, provenance, hash);
        let lock = match &run_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| ArchiveError::Io {
                    path: dir.clone(),
                    message: e.to_string(),
                })?;
                Some(Arc::new(RunLock::acquire(dir)?))
            }
            None => None,
        };
        Ok(Self {
            card,
            task,
            settings,
            run_dir,
            lock,
            resumed_after: None,
            recorded: (0, 0),
            steer_only: None,
            origin: None,
            clearance,
        })
    }

    /// A new run forked from genome `genome` of the run recorded in
    /// `source`: its initial program is that genome's program (a single file
    /// or a whole tree), on the source run's task folder, with `card` (the
    /// source run's own card when `None`, see [`recorded_card`]). Not
    /// recorded yet: give it a folder
    /// with [`RunPlan::in_new_folder`]. The fork records where it came from
    /// in its archive and `summary.json` ([`RunOrigin`]), never in its card.
    pub fn fork(
        source: &Path,
        genome: GenomeId,
        card: Option<ValidCard>,
        registry: &Registry,
    ) -> Result<Self, LaunchError> {
        let archive = Archive::open(source)?;
        let meta = archive.meta()?;
        let Some(g) = archive.genome(genome)? else {
            return Err(LaunchError::NoGenome {
                run: source.to_path_buf(),
                id: genome,
                count: archive.genome_count()?,
            });
        };
        if !g.valid {
            return Err(LaunchError::InvalidGenome {
                run: source.to_path_buf(),
                id: genome,
                why: invalid_reason(g.error.as_deref()),
            });
        }
        let card = match card {
            Some(card) => card,
            None => recorded_card(source, registry)?,
        };
        let mut task = Task::load(&meta.task_dir)?;
        task.initial_program = g.content;
        let run = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        let mut plan = Self::new(card, task, None, registry)?;
        plan.origin = Some(RunOrigin { run, genome });
        Ok(plan)
    }

    /// A new run recorded in a fresh folder under `runs_root`, named
    /// `<card>-<task>-<time>` and claimed atomically (two runs started at
    /// once get two folders). The folder is made only once the card and task
    /// fit (see [`RunPlan::new`]).
    pub fn new_in(
        card: ValidCard,
        task: Task,
        runs_root: &Path,
        registry: &Registry,
    ) -> Result<Self, LaunchError> {
        Self::new(card, task, None, registry)?.in_new_folder(runs_root)
    }

    /// Record this new run in a fresh folder under `runs_root` (see
    /// [`RunPlan::new_in`]); for a front end that checks more (the model)
    /// before anything is written.
    pub fn in_new_folder(mut self, runs_root: &Path) -> Result<Self, LaunchError> {
        let dir =
            crate::engine::archive::new_run_dir(runs_root, &self.card().name, &self.task.name)?;
        self.lock = Some(Arc::new(RunLock::acquire(&dir)?));
        self.run_dir = Some(dir);
        Ok(self)
    }

    /// Record this new run in `dir`, a fresh folder made for it (a detached
    /// run's, made by the command that started it), taking its lock.
    pub fn in_folder(mut self, dir: PathBuf) -> Result<Self, LaunchError> {
        std::fs::create_dir_all(&dir).map_err(|e| ArchiveError::Io {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        self.lock = Some(Arc::new(RunLock::acquire(&dir)?));
        self.run_dir = Some(dir);
        Ok(self)
    }

    /// Continue the run recorded in `run_dir`: its own card and task folder,
    /// up to `budget` total iterations (the card's `max_iterations` when
    /// `None`). Refused when the budget is already spent (see the module
    /// docs) or the archive cannot be read; nothing is written here.
    pub fn resume(
        run_dir: &Path,
        budget: Option<u64>,
        registry: &Registry,
    ) -> Result<Self, LaunchError> {
        Self::reopen(run_dir, budget, false, registry)
    }

    /// Reopen the run recorded in `run_dir`, stopped, to apply `changes` (a
    /// program a person wrote, notes, pins) without running an iteration:
    /// its own card, budget and task folder, its record read back as a
    /// resume reads it, each change applied, evaluated and recorded as in a
    /// live run. Refused while another process writes the folder
    /// ([`ArchiveError::Locked`]: a live run holds its folder's lock to its
    /// end) and when the run has no scored initial program yet.
    pub fn steer(
        run_dir: &Path,
        changes: Vec<RunCommand>,
        registry: &Registry,
    ) -> Result<Self, LaunchError> {
        let checkpoint = Archive::open(run_dir)?.checkpoint()?;
        if checkpoint.is_none() {
            return Err(LaunchError::NothingToSteer {
                dir: run_dir.to_path_buf(),
            });
        }
        let mut plan = Self::reopen(run_dir, None, true, registry)?;
        plan.steer_only = Some(changes);
        Ok(plan)
    }

    fn reopen(
        run_dir: &Path,
        budget: Option<u64>,
        steer_only: bool,
        registry: &Registry,
    ) -> Result<Self, LaunchError> {
        // The record: its facts, iterations done and genomes (valid, invalid).
        let read = || -> Result<(RunMeta, u64, (u64, u64)), ArchiveError> {
            let archive = Archive::open(run_dir)?;
            let checkpoint = archive.checkpoint()?;
            Ok((
                archive.meta()?,
                checkpoint.as_ref().map_or(0, |c| c.iterations_done),
                checkpoint.as_ref().map_or((0, 0), |c| (c.valid, c.invalid)),
            ))
        };
        // Everything that can refuse is checked before the folder's lock is
        // taken, so a refused resume writes nothing, not even the lock file.
        let (meta, done, _) = read()?;
        let origin = format!("{} (card stored in the run archive)", run_dir.display());
        let card = ValidCard::from_yaml(&meta.card_yaml, &origin, registry)
            .map_err(LaunchError::RecordedCard)?;
        // What its record vouches for: a record this account signed for
        // this card carries its provenance, hash and consent; any other
        // makes the card one from the run folder.
        let (provenance, record) = vouched(run_dir, &Archive::open(run_dir)?, &card)?;
        let hash = record
            .as_ref()
            .map_or_else(|| card.card().hash(), |r| r.hash.clone());
        let consent = record.and_then(|r| r.consent);
        let card = card.with_provenance(provenance.clone());
        let budget = budget.unwrap_or(card.card().general.max_iterations);
        if !steer_only {
            check_resume_budget(done, budget)?;
            check_runs_here(&card)?;
        }
        let card = card
            .with_settings(|general, _| general.max_iterations = budget)
            .map_err(|problems| {
                LaunchError::RecordedCard(CardErrors(
                    problems
                        .into_iter()
                        .map(|p| crate::engine::card::CardError {
                            origin: origin.clone(),
                            line: 0,
                            col: 0,
                            field: p.field,
                            message: p.message,
                        })
                        .collect(),
                ))
            })?;
        let mut task = Task::load(&meta.task_dir)?;
        // A fork's initial program is the genome it came from, not the
        // task folder's: genome 0 on its record.
        if meta.forked_from.is_some()
            && let Some(initial) = Archive::open(run_dir)?.genome(0)?
        {
            task.initial_program = initial.content;
        }
        let (card, settings) = fit(card, &task, registry)?;
        let mut clearance = clearance_of(&card, &task.dir, provenance, hash);
        clearance.consent = consent;
        // Read again under the lock: a writer that held it may have gone on.
        let lock = RunLock::acquire(run_dir)?;
        let (_, done, recorded) = read()?;
        if !steer_only {
            check_resume_budget(done, budget)?;
            check_runs_here(&card)?;
        }
        Ok(Self {
            card,
            task,
            settings,
            run_dir: Some(run_dir.to_path_buf()),
            lock: Some(Arc::new(lock)),
            resumed_after: Some(done),
            recorded,
            steer_only: None,
            origin: meta.forked_from,
            clearance,
        })
    }

    /// Where the card came from, what it lowers and the consent given.
    pub fn clearance(&self) -> &Clearance {
        &self.clearance
    }

    /// Whether the run may go: refused, with what the card asks for and how
    /// to allow it, when its lowered settings need a consent it lacks (see
    /// [`crate::engine::consent`]). The run itself checks again before it
    /// starts anything.
    pub fn check_consent(&self) -> Result<(), LaunchError> {
        self.clearance.check().map_err(LaunchError::ConsentNeeded)
    }

    /// This plan with `consent` (it counts only for the card hashed
    /// `consent.card`, and only for the settings it names).
    #[must_use]
    pub fn with_consent(mut self, consent: Consent) -> Self {
        self.clearance.consent = Some(consent);
        self
    }

    /// This plan with the first of `consents` given for its card, if any.
    #[must_use]
    pub fn with_consent_from(self, consents: &[Consent]) -> Self {
        match consents.iter().find(|c| c.card == self.clearance.hash) {
            Some(c) => self.with_consent(c.clone()),
            None => self,
        }
    }

    /// The run and genome this run was forked from, when it is a fork.
    pub fn origin(&self) -> Option<&RunOrigin> {
        self.origin.as_ref()
    }

    /// The card as it will run.
    pub fn card(&self) -> &Card {
        self.card.card()
    }

    /// The checked card (what the scaffold is built from).
    pub fn valid_card(&self) -> &ValidCard {
        &self.card
    }

    pub fn task_dir(&self) -> &Path {
        &self.task.dir
    }

    /// The task, as loaded when the plan was made.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// What was made of the task's settings.
    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    /// What a run's output says before it starts, in order: the task's
    /// layout and description, the settings mapped from its config, and
    /// warnings about the folder. Each with its level.
    pub fn notices(&self) -> Vec<(crate::engine::events::LogLevel, String)> {
        use crate::engine::events::LogLevel;
        let mut out: Vec<(LogLevel, String)> = self
            .task
            .notices()
            .into_iter()
            .chain(self.settings.lines())
            .map(|l| (LogLevel::Info, l))
            .collect();
        out.extend(
            self.task
                .warnings()
                .into_iter()
                .map(|w| (LogLevel::Warn, w)),
        );
        out.extend(self.clearance.notice().map(|n| (LogLevel::Warn, n)));
        out
    }

    pub fn run_dir(&self) -> Option<&Path> {
        self.run_dir.as_deref()
    }

    /// True when the run is reopened only to take a person's changes
    /// ([`RunPlan::steer`]): no iteration is dispatched.
    pub fn is_steer_only(&self) -> bool {
        self.steer_only.is_some()
    }

    /// This plan made by [`RunPlan::steer`], applying `changes` instead.
    #[must_use]
    pub fn with_changes(mut self, changes: Vec<RunCommand>) -> Self {
        if self.steer_only.is_some() {
            self.steer_only = Some(changes);
        }
        self
    }

    /// The changes a plan made by [`RunPlan::steer`] applies.
    pub fn steering_changes(&self) -> Option<&[RunCommand]> {
        self.steer_only.as_deref()
    }

    /// True when this continues a recorded run.
    pub fn is_resume(&self) -> bool {
        self.resumed_after.is_some()
    }

    /// Iterations the recorded run had done, when this continues one.
    pub fn resumed_after(&self) -> Option<u64> {
        self.resumed_after
    }

    /// Genomes the recorded run had admitted, (valid, invalid); (0, 0) for a
    /// new run. A front end counting admissions starts from these.
    pub fn recorded_counts(&self) -> (u64, u64) {
        self.recorded
    }

    /// The run folder's writer lock; the run holds it until it ends.
    pub fn lock(&self) -> Option<Arc<RunLock>> {
        self.lock.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_budget_must_exceed_the_iterations_done() {
        assert!(check_resume_budget(4, 5).is_ok());
        assert!(check_resume_budget(0, 1).is_ok());
        for budget in [0, 3, 4] {
            let e = check_resume_budget(4, budget).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("the run already did 4 of {budget} iterations: raise the budget above 4")
            );
        }
    }
}
