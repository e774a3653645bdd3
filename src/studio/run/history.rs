//! [`RunHistory`]: everything the run view shows, built purely from
//! [`RunEvent`]s. Plain data (no egui), so a finished run stays browsable
//! until another one starts, and benchmarks/tests can fill it synthetically.
//!
//! Over 800 lines: the history of a live run and of a recorded one are one
//! type built in one place, and a third of the file is its unit tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::archive::{Archive, Checkpoint, RunMeta};
use crate::engine::events::{LogLevel, RunEvent, RunInfo, RunStatus, RunSummary};
use crate::engine::genome::{FITNESS_KEY, Genome, GenomeId, TokenUsage};
use crate::engine::head::{GenomeHead, Heads};

use super::bodies::{Bodies, BodySource, RECENT_BODIES};
use crate::engine::selection::PolicyStatus;

/// How many log lines are kept (oldest dropped first).
pub const MAX_LOG_LINES: usize = 2000;

/// One point of the best-so-far series: after the genome admitted at
/// `position` (admission order), the best fitness was `score`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BestPoint {
    /// Iteration of the admitted genome (made monotone: the running maximum).
    pub iteration: u64,
    pub score: f64,
    pub best_id: GenomeId,
}

/// What the plot shows on its y axis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Metric {
    /// The fitness used by selection (`combined_score`, or the mean of the
    /// metrics when there is none).
    #[default]
    Fitness,
    /// Any other metric the evaluator reported.
    Named(String),
}

impl Metric {
    /// The value of this metric for a genome (invalid genomes have none).
    pub fn value(&self, genome: &GenomeHead) -> Option<f64> {
        if !genome.valid {
            return None;
        }
        match self {
            Self::Fitness => genome.fitness(),
            Self::Named(name) => genome.scores.get(name).copied(),
        }
        .filter(|v| v.is_finite())
    }

    /// The label used in the dropdown and the axis; `fitness` says what the
    /// fitness is ([`RunHistory::fitness_basis`]).
    pub fn label(&self, fitness: &str) -> String {
        match self {
            Self::Fitness => format!("fitness ({fitness})"),
            Self::Named(name) => name.clone(),
        }
    }
}

/// The whole observable state of one run.
#[derive(Debug, Default)]
pub struct RunHistory {
    /// Static facts, once `Started` arrived.
    pub info: Option<RunInfo>,
    /// Every admitted genome's head, in admission order (ids are dense, so
    /// normally `genomes[id].id == id`); the bodies of some are in
    /// [`RunHistory::body`].
    pub genomes: Heads,
    /// The bodies held, and where the others come from.
    bodies: Bodies,
    body_source: BodySource,
    /// Best fitness after each admission that changed it.
    pub best_series: Vec<BestPoint>,
    pub best_id: Option<GenomeId>,
    pub best_score: Option<f64>,
    /// Iterations finished.
    pub iterations_done: u64,
    /// Highest iteration dispatched so far.
    pub iterations_started: u64,
    /// The parent of the most recently dispatched iteration.
    pub current_parent: Option<GenomeId>,
    pub valid: u64,
    pub invalid: u64,
    /// Of the invalid, children the novelty gate rejected before evaluation.
    pub rejected: u64,
    /// Token usage summed over all genomes.
    pub usage: TokenUsage,
    /// Whether any genome reported usage (so "0 tokens" is not shown for a
    /// model that reports none).
    pub usage_known: bool,
    /// The selection policy's latest status.
    pub policy: PolicyStatus,
    /// Ids in the population's active structure (the beam), if any.
    pub active: Vec<GenomeId>,
    /// Number of children (all attempts) of each genome, indexed like `genomes`.
    pub children: Vec<u32>,
    /// Seconds since the first event when each genome arrived (live runs;
    /// empty for a recorded run, whose genomes carry no wall time).
    pub arrived_secs: Vec<f64>,
    /// Every metric name seen, sorted.
    pub metric_names: BTreeSet<String>,
    /// Log lines (level, message).
    pub logs: Vec<(LogLevel, String)>,
    /// Whether the worker acknowledged a pause.
    pub paused: bool,
    /// The final tally, once `Finished` arrived.
    pub summary: Option<RunSummary>,
    /// When the first event was applied.
    pub started_at: Option<Instant>,
    /// When `Finished` was applied.
    pub finished_at: Option<Instant>,
    /// Since when the run is paused (not counted in `elapsed`).
    paused_at: Option<Instant>,
    /// Time spent paused before `paused_at`.
    paused_for: Duration,
    /// Bumped whenever `genomes` changes (caches key on it).
    pub version: u64,
    /// Running maximum of admitted iterations (x of the step line).
    max_iteration: u64,
    /// What the run's memory holds (e.g. a scratchpad), latest first-class copy.
    pub memory_notes: Vec<String>,
    /// The person's notes and pins in force (from the run's checkpoint or
    /// its latest `Steered` event).
    pub steering: crate::engine::steering::Steering,
    /// The last warning since a genome was last admitted (a model attempt
    /// that failed and is retried: which attempt of how many, and why), shown
    /// in the run view while the run waits; a genome admitted or the run's
    /// end clears it.
    pub warning: Option<String>,
    /// The settings changed in flight, each with the iteration it took
    /// effect at.
    pub settings_changes: Vec<crate::engine::steering::changes::SettingsChange>,
    /// What the last change of settings could not change, until the next
    /// change or resume.
    pub refused: Option<Vec<crate::engine::steering::changes::Fixed>>,
}

impl RunHistory {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The history of a recorded run: its genomes (in id order; their
    /// heads are kept, the bodies are read back when looked at), metadata,
    /// log and checkpoint, as read from the run folder `dir`. The best-so-far
    /// series is rebuilt from the genomes; a run whose record never ended
    /// (killed, crashed, or still running elsewhere) is marked interrupted.
    pub fn from_archive(
        dir: &Path,
        meta: &RunMeta,
        genomes: impl IntoIterator<Item = Genome>,
        events: &[(u64, String, String)],
        checkpoint: Option<&Checkpoint>,
    ) -> Self {
        let mut h = Self::archived(dir, meta);
        let genomes = genomes.into_iter();
        h.genomes.reserve(genomes.size_hint().0);
        h.children.reserve(genomes.size_hint().0);
        for g in genomes {
            h.push_archived(&g);
        }
        h.end_archived(meta, events, checkpoint);
        h
    }

    /// The start of a recorded run's history ([`RunHistory::from_archive`]):
    /// its facts, no genome yet.
    fn archived(dir: &Path, meta: &RunMeta) -> Self {
        let mut h = Self::new();
        let task_name = meta
            .task_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        h.info = Some(RunInfo {
            card_name: card_name_of(&meta.card_yaml),
            task_name,
            max_iterations: meta.max_iterations,
            model: meta.model.clone(),
            offline: meta.model.starts_with("offline model"),
            seed: meta.seed,
            parallel: 0,
            run_dir: Some(dir.to_path_buf()),
            unsandboxed: None,
            forked_from: meta.forked_from.clone(),
            clearance: None,
        });
        h.body_source = BodySource::Archive(dir.to_path_buf());
        h
    }

    /// A recorded genome (its head, or the whole of it: the head is kept).
    fn push_archived(&mut self, g: &Genome) {
        // An unconfirmed genome was never the run's best.
        let fitness = g.selection_fitness().filter(|f| !f.is_nan());
        self.push_genome(g, None);
        if let Some(f) = fitness
            && self.best_score.is_none_or(|b| f > b)
        {
            self.set_best(Some(g.id), Some(f));
        }
    }

    /// The end of a recorded run's history: its log, its checkpoint, how
    /// it ended.
    fn end_archived(
        &mut self,
        meta: &RunMeta,
        events: &[(u64, String, String)],
        checkpoint: Option<&Checkpoint>,
    ) {
        let h = self;
        for (_, level, message) in events {
            let level = match level.as_str() {
                "error" => LogLevel::Error,
                "warn" => LogLevel::Warn,
                _ => LogLevel::Info,
            };
            if h.logs.len() >= MAX_LOG_LINES {
                h.logs.drain(..MAX_LOG_LINES / 4);
            }
            h.logs.push((level, message.clone()));
        }
        let iterations = checkpoint.map_or(h.max_iteration, |c| c.iterations_done);
        if let Some(c) = checkpoint {
            h.steering = c.steering.clone();
        }
        h.iterations_done = iterations;
        h.iterations_started = iterations;
        let status = status_from_label(&meta.status);
        h.summary = Some(RunSummary {
            status,
            iterations,
            genomes: h.genomes.len() as u64,
            valid: h.valid,
            invalid: h.invalid,
            rejected: h.rejected,
            best_id: h.best_id,
            best_score: h.best_score,
            initial_score: h.genomes.first().and_then(|g| g.fitness()),
            usage: h.usage,
            wall_secs: 0.0,
            run_wall_secs: checkpoint.map_or(0.0, |c| c.wall_secs),
        });
        let wall = meta
            .ended_unix
            .map(|end| Duration::from_secs(end.saturating_sub(meta.started_unix)))
            .unwrap_or_default();
        let now = Instant::now();
        h.started_at = Some(now.checked_sub(wall).unwrap_or(now));
        h.finished_at = Some(now);
        if let Some(s) = &mut h.summary {
            s.wall_secs = wall.as_secs_f64();
        }
    }

    /// Make a history read from an archive ready to receive the events of its
    /// resumed run: not finished any more, elapsed time counted afresh.
    pub fn reopen_for_resume(&mut self) {
        self.summary = None;
        self.finished_at = None;
        self.started_at = None;
        self.paused = false;
        self.paused_at = None;
        self.paused_for = Duration::ZERO;
    }

    /// The pause in progress ends now: its time is set aside.
    fn end_pause(&mut self) {
        if let Some(at) = self.paused_at.take() {
            self.paused_for += at.elapsed();
        }
    }

    /// Where the bodies not held come from.
    pub fn body_source(&self) -> &BodySource {
        &self.body_source
    }

    /// Say where the bodies not held come from (a followed run: the run
    /// service).
    pub fn set_body_source(&mut self, source: BodySource) {
        self.body_source = source;
    }

    /// Genome `id` with its bodies (program, diff, artifacts, prompt,
    /// reply), when the history holds them; else see
    /// [`RunHistory::body_source`].
    pub fn body(&self, id: GenomeId) -> Option<&Arc<Genome>> {
        self.bodies.get(id)
    }

    /// Keep genome `id`'s body while it is looked at: one the events
    /// brought is kept beside the newest ones.
    pub fn hold_body(&mut self, id: GenomeId) {
        self.bodies.hold(id);
    }

    /// Keep `genome`'s bodies, read back or fetched for a genome looked at;
    /// false (and nothing kept) when the history has no genome of its id.
    pub fn insert_body(&mut self, genome: Genome) -> bool {
        if self.position(genome.id).is_none() {
            return false;
        }
        self.bodies.add_looked(Arc::new(genome));
        true
    }

    /// Apply one event.
    pub fn apply(&mut self, event: RunEvent) {
        if self.started_at.is_none() {
            self.started_at = Some(Instant::now());
        }
        match event {
            RunEvent::Started(info) => {
                // a recorded run's bodies can be read back from its archive
                if self.body_source == BodySource::Kept
                    && let Some(dir) = &info.run_dir
                {
                    self.body_source = BodySource::Archive(dir.clone());
                }
                self.info = Some(info);
            }
            RunEvent::IterationStarted {
                iteration,
                parent_id,
            } => {
                self.iterations_started = self.iterations_started.max(iteration);
                self.current_parent = Some(parent_id);
            }
            RunEvent::GenomeAdmitted {
                genome,
                best_id,
                best_score,
                iterations_done,
                policy,
                active,
            } => {
                if self.arrived_secs.len() == self.genomes.len() {
                    let since = self.started_at.map_or(0.0, |s| s.elapsed().as_secs_f64());
                    self.arrived_secs.push(since);
                }
                let keep = match self.body_source {
                    BodySource::Kept => Some(usize::MAX),
                    BodySource::Archive(_) => Some(RECENT_BODIES),
                    // the events carry heads
                    BodySource::Remote => None,
                };
                self.push_genome(&genome, keep.map(|cap| (genome.clone(), cap)));
                self.iterations_done = iterations_done;
                self.policy = policy;
                self.active = active;
                self.set_best(best_id, best_score);
                self.warning = None;
            }
            RunEvent::Log { level, message } => {
                if level == LogLevel::Warn {
                    self.warning = Some(message.clone());
                }
                if self.logs.len() >= MAX_LOG_LINES {
                    self.logs.drain(..MAX_LOG_LINES / 4);
                }
                self.logs.push((level, message));
            }
            RunEvent::MemoryUpdated { notes } => self.memory_notes = notes,
            RunEvent::Steered(steering) => self.steering = steering,
            RunEvent::SettingsChanged(change) => {
                if let Some(info) = &mut self.info {
                    info.max_iterations = change.max_iterations;
                }
                self.refused = None;
                self.settings_changes.push(change);
            }
            RunEvent::SettingsRefused(fixed) => self.refused = Some(fixed),
            RunEvent::Paused => {
                self.paused = true;
                self.paused_at.get_or_insert_with(Instant::now);
            }
            RunEvent::Resumed => {
                self.paused = false;
                self.end_pause();
            }
            RunEvent::Finished(summary) => {
                self.warning = None;
                self.paused = false;
                self.end_pause();
                self.iterations_done = self.iterations_done.max(summary.iterations);
                if summary.best_id.is_some() {
                    self.set_best(summary.best_id, summary.best_score);
                }
                // the log says how every run ended, a resumed one too
                match &summary.status {
                    RunStatus::Failed(why) => self
                        .logs
                        .push((LogLevel::Error, format!("run failed: {why}"))),
                    status => self.logs.push((
                        LogLevel::Info,
                        format!(
                            "run {} after {} iterations ({} valid, {} invalid{})",
                            status.label(),
                            summary.iterations,
                            summary.valid,
                            summary.invalid,
                            if summary.rejected == 0 {
                                String::new()
                            } else {
                                format!(
                                    ", of which {} rejected before evaluation",
                                    summary.rejected
                                )
                            }
                        ),
                    )),
                }
                self.summary = Some(summary);
                self.finished_at = Some(Instant::now());
            }
        }
    }

    fn set_best(&mut self, best_id: Option<GenomeId>, best_score: Option<f64>) {
        self.best_id = best_id;
        self.best_score = best_score;
        if let (Some(id), Some(score)) = (best_id, best_score) {
            let changed = self
                .best_series
                .last()
                .is_none_or(|p| p.best_id != id || p.score != score);
            if changed {
                self.best_series.push(BestPoint {
                    iteration: self.max_iteration,
                    score,
                    best_id: id,
                });
            }
        }
    }

    /// Add `genome`'s head; `body`: keep its bodies too, among the newest
    /// this many.
    fn push_genome(&mut self, genome: &Genome, body: Option<(Arc<Genome>, usize)>) {
        self.max_iteration = self.max_iteration.max(genome.iteration);
        if genome.valid {
            self.valid += 1;
        } else {
            self.invalid += 1;
        }
        if genome.rejected.is_some() {
            self.rejected += 1;
        }
        if let Some(u) = &genome.usage {
            self.usage.add(u);
            self.usage_known = true;
        }
        for name in genome.scores.keys() {
            if !self.metric_names.contains(name) {
                self.metric_names.insert(name.clone());
            }
        }
        if let Some(pos) = genome.parent_id.and_then(|p| self.position(p))
            && let Some(c) = self.children.get_mut(pos)
        {
            *c += 1;
        }
        self.genomes.push(genome);
        if let Some((body, cap)) = body {
            self.bodies.add_recent(body, cap);
        }
        self.children.push(0);
        self.version += 1;
    }

    /// Position of a genome id in `genomes` (O(1) for dense ids).
    pub fn position(&self, id: GenomeId) -> Option<usize> {
        let guess = usize::try_from(id).ok()?;
        if self.genomes.get(guess).is_some_and(|g| g.id == id) {
            return Some(guess);
        }
        self.genomes.iter().position(|g| g.id == id)
    }

    /// What the fitness is in this run, as the best genome (else the first
    /// valid one) has it: `combined_score`, a metric the task named, or
    /// "mean of N metrics (no combined_score)".
    pub fn fitness_basis(&self) -> String {
        self.best_id
            .and_then(|id| self.get(id))
            .or_else(|| self.genomes.iter().find(|g| g.valid))
            .map_or_else(|| FITNESS_KEY.to_owned(), |g| g.fitness_basis().to_string())
    }

    /// A genome's head by id (its bodies: [`RunHistory::body`]).
    pub fn get(&self, id: GenomeId) -> Option<&GenomeHead> {
        self.position(id).and_then(|p| self.genomes.get(p))
    }

    /// How many children (attempts included) a genome has.
    pub fn child_count(&self, id: GenomeId) -> u32 {
        self.position(id)
            .and_then(|p| self.children.get(p).copied())
            .unwrap_or(0)
    }

    /// The chain from the root to `id` (root first, `id` last). Stops at a
    /// missing ancestor or a cycle.
    pub fn lineage(&self, id: GenomeId) -> Vec<GenomeId> {
        let mut chain = Vec::new();
        let mut cursor = self.get(id).map(|g| g.id);
        while let Some(cur) = cursor {
            if chain.contains(&cur) || chain.len() > self.genomes.len() {
                break;
            }
            chain.push(cur);
            cursor = self.get(cur).and_then(|g| g.parent_id);
        }
        chain.reverse();
        chain
    }

    /// The iteration budget, once known.
    pub fn max_iterations(&self) -> Option<u64> {
        self.info.as_ref().map(|i| i.max_iterations)
    }

    /// True once `Finished` arrived.
    pub fn is_finished(&self) -> bool {
        self.summary.is_some()
    }

    /// The run has been going for `secs` (a remote run's snapshot says so):
    /// its elapsed time and ETA count from then, not from when it was
    /// first seen here.
    pub fn running_for(&mut self, secs: f64) {
        if let Some(wall) = Duration::try_from_secs_f64(secs).ok()
            && self.finished_at.is_none()
        {
            let now = Instant::now();
            self.started_at = Some(now.checked_sub(wall).unwrap_or(now));
        }
    }

    /// Wall time the run has been going, pauses left out (frozen while
    /// paused and once it finished).
    pub fn elapsed(&self) -> Duration {
        let wall = match (self.started_at, self.finished_at, self.paused_at) {
            (Some(s), Some(f), _) => f.saturating_duration_since(s),
            (Some(s), None, Some(p)) => p.saturating_duration_since(s),
            (Some(s), None, None) => s.elapsed(),
            _ => Duration::ZERO,
        };
        wall.saturating_sub(self.paused_for)
    }

    /// Estimated time to finish the iteration budget, from the mean time per
    /// finished iteration so far.
    pub fn eta(&self) -> Option<Duration> {
        if self.is_finished() || self.iterations_done == 0 {
            return None;
        }
        let total = self.max_iterations()?;
        let left = total.saturating_sub(self.iterations_done);
        let per = self.elapsed().as_secs_f64() / self.iterations_done as f64;
        Some(Duration::from_secs_f64(per * left as f64))
    }

    /// A short state word: waiting, running, paused, or how the run ended.
    pub fn state_label(&self) -> String {
        match (&self.summary, self.paused, self.started_at) {
            (Some(s), _, _) => s.status.label(),
            (None, true, _) => "paused".to_owned(),
            (None, false, Some(_)) => "running".to_owned(),
            (None, false, None) => "starting".to_owned(),
        }
    }
}

/// A metric's value for display: whole numbers as whole numbers (a count,
/// `validity` 1), others with six decimals.
pub fn format_metric(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.6}")
    }
}

/// The `name:` of a card's YAML, without a full parse (top-level key only).
pub fn card_name_of(yaml: &str) -> String {
    yaml.lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map(|v| v.trim().trim_matches(['"', '\'']).to_owned())
        .unwrap_or_default()
}

/// The run status recorded as a label ([`RunStatus::label`]) read back; a
/// record still saying `running` ended without its last write.
pub fn status_from_label(label: &str) -> RunStatus {
    RunStatus::from_label(label)
}

/// `mm:ss` or `h:mm:ss`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// `950`, `12.3k`, `4.56M`.
pub fn format_tokens(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.2}M", n as f64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

/// A recorded run read from its folder: the history to show and the task
/// folder it ran on.
#[derive(Debug)]
pub struct ArchivedRun {
    /// The run folder.
    pub dir: PathBuf,
    /// Everything the archive holds, as a history.
    pub history: RunHistory,
    /// The task folder recorded in the archive.
    pub task_dir: PathBuf,
    /// The card as run (YAML), to resume with.
    pub card_yaml: String,
}

/// Read a run folder's archive (read-only; the file is never modified) into
/// a history. Errors name the file and say what is wrong with it.
pub fn read_archive(dir: &Path) -> Result<ArchivedRun, String> {
    let archive = Archive::open(dir).map_err(|e| e.to_string())?;
    let meta = archive.meta().map_err(|e| e.to_string())?;
    let mut history = RunHistory::archived(dir, &meta);
    history
        .genomes
        .reserve(usize::try_from(archive.genome_count().map_err(|e| e.to_string())?).unwrap_or(0));
    // the heads only: the bodies are read back when a genome is looked at
    let mut bad = None;
    archive
        .genome_heads_json(0, |id, json| match serde_json::from_str::<Genome>(&json) {
            Ok(g) => {
                history.push_archived(&g);
                true
            }
            Err(e) => {
                bad = Some(format!(
                    "{}: genome {id}: {e}",
                    dir.join(crate::engine::archive::ARCHIVE_FILE).display()
                ));
                false
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(bad) = bad {
        return Err(bad);
    }
    let events = archive.events().map_err(|e| e.to_string())?;
    let checkpoint = archive.checkpoint().map_err(|e| e.to_string())?;
    history.end_archived(&meta, &events, checkpoint.as_ref());
    history.settings_changes = archive.settings_changes().map_err(|e| e.to_string())?;
    drop(archive);
    Ok(ArchivedRun {
        dir: dir.to_path_buf(),
        history,
        task_dir: meta.task_dir,
        card_yaml: meta.card_yaml,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn genome(
        id: GenomeId,
        parent: Option<GenomeId>,
        iteration: u64,
        score: Option<f64>,
    ) -> Arc<Genome> {
        let mut g = Genome {
            id,
            parent_id: parent,
            iteration,
            valid: score.is_some(),
            ..Genome::default()
        };
        if let Some(s) = score {
            g.scores.insert(FITNESS_KEY.to_owned(), s);
            g.scores.insert("speed".to_owned(), s * 2.0);
        }
        g.usage = Some(TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            cost_usd: None,
            ..TokenUsage::default()
        });
        Arc::new(g)
    }

    fn admitted(g: Arc<Genome>, best: Option<(GenomeId, f64)>, done: u64) -> RunEvent {
        RunEvent::GenomeAdmitted {
            genome: g,
            best_id: best.map(|b| b.0),
            best_score: best.map(|b| b.1),
            iterations_done: done,
            policy: PolicyStatus {
                fields: vec![("current parent".into(), "#0".into())],
            },
            active: vec![0],
        }
    }

    /// Elapsed time (and so the ETA) stands still while the run is paused,
    /// and the log says how the run ended.
    #[test]
    fn whole_metrics_show_no_decimals() {
        assert_eq!(format_metric(1.0), "1");
        assert_eq!(format_metric(-12.0), "-12");
        assert_eq!(format_metric(0.5), "0.500000");
        assert_eq!(format_metric(f64::NAN), "NaN");
        assert_eq!(format_metric(1e20), "100000000000000000000.000000");
    }

    /// A run followed from a server counts its time from the run's start,
    /// not from the connection: an hour-old run's ETA is not a second.
    #[test]
    fn a_remote_runs_elapsed_time_is_the_runs() {
        let mut h = RunHistory::new();
        h.apply(RunEvent::Started(RunInfo {
            card_name: "c".into(),
            task_name: "t".into(),
            max_iterations: 200,
            model: "m".into(),
            offline: true,
            seed: 0,
            parallel: 1,
            run_dir: None,
            unsandboxed: None,
            forked_from: None,
            clearance: None,
        }));
        h.running_for(3600.0);
        assert!(
            h.elapsed() >= Duration::from_secs(3600),
            "{:?}",
            h.elapsed()
        );
        h.iterations_done = 100;
        let eta = h.eta().unwrap();
        assert!(eta >= Duration::from_secs(3500), "{eta:?}");
    }

    #[test]
    fn a_pause_is_not_counted_and_the_end_is_logged() {
        let mut h = RunHistory::new();
        h.apply(RunEvent::Paused);
        let paused_at = h.elapsed();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(h.elapsed(), paused_at, "elapsed moved while paused");
        h.apply(RunEvent::Resumed);
        std::thread::sleep(Duration::from_millis(20));
        let after = h.elapsed();
        assert!(
            after >= Duration::from_millis(20) && after < Duration::from_millis(60),
            "{after:?}"
        );
        h.apply(RunEvent::Finished(RunSummary {
            iterations: 3,
            ..RunSummary::empty(RunStatus::Stopped)
        }));
        let (level, line) = h.logs.last().unwrap();
        assert_eq!(*level, LogLevel::Info);
        assert!(line.starts_with("run stopped after 3 iterations"), "{line}");
    }

    #[test]
    fn builds_counts_best_series_lineage_and_children_from_events() {
        let mut h = RunHistory::new();
        h.apply(RunEvent::Started(RunInfo {
            card_name: "c".into(),
            task_name: "t".into(),
            max_iterations: 4,
            model: "m".into(),
            offline: true,
            seed: 0,
            parallel: 1,
            run_dir: None,
            unsandboxed: None,
            forked_from: None,
            clearance: None,
        }));
        h.apply(admitted(genome(0, None, 0, Some(1.0)), Some((0, 1.0)), 0));
        h.apply(RunEvent::IterationStarted {
            iteration: 1,
            parent_id: 0,
        });
        h.apply(admitted(genome(1, Some(0), 1, None), Some((0, 1.0)), 1));
        h.apply(admitted(
            genome(2, Some(0), 2, Some(3.0)),
            Some((2, 3.0)),
            2,
        ));
        h.apply(admitted(
            genome(3, Some(2), 3, Some(2.0)),
            Some((2, 3.0)),
            3,
        ));
        assert_eq!((h.valid, h.invalid), (3, 1));
        assert_eq!(h.usage.total_tokens(), 60);
        assert_eq!(h.best_series.len(), 2);
        assert_eq!(
            h.best_series[1],
            BestPoint {
                iteration: 2,
                score: 3.0,
                best_id: 2
            }
        );
        assert_eq!(h.lineage(3), vec![0, 2, 3]);
        assert_eq!(h.child_count(0), 2);
        assert_eq!(h.current_parent, Some(0));
        assert!(h.metric_names.contains("speed"));
        assert_eq!(h.version, 4);
        assert!(h.eta().is_some());
        assert_eq!(
            Metric::Named("speed".into()).value(&h.genomes[2]),
            Some(6.0)
        );
        assert_eq!(Metric::Fitness.value(&h.genomes[1]), None);
        assert_eq!(h.state_label(), "running");
    }

    /// Children the novelty gate rejected are counted apart from other
    /// invalid ones, and the log line of the run's end says how many.
    #[test]
    fn counts_rejected_children_and_says_so_at_the_end() {
        let mut h = RunHistory::new();
        h.apply(admitted(genome(0, None, 0, Some(1.0)), Some((0, 1.0)), 0));
        let mut rejected = (*genome(1, Some(0), 1, None)).clone();
        rejected.rejected = Some(crate::engine::genome::Rejection {
            nearest: 0,
            similarity: 0.99,
            threshold: 0.98,
            method: "tokens".into(),
        });
        h.apply(admitted(Arc::new(rejected), Some((0, 1.0)), 1));
        h.apply(admitted(genome(2, Some(0), 2, None), Some((0, 1.0)), 2));
        assert_eq!((h.valid, h.invalid, h.rejected), (1, 2, 1));
        h.apply(RunEvent::Finished(RunSummary {
            iterations: 2,
            valid: 1,
            invalid: 2,
            rejected: 1,
            ..RunSummary::empty(RunStatus::Completed)
        }));
        let (_, line) = h.logs.last().unwrap();
        assert_eq!(
            line,
            "run completed after 2 iterations (1 valid, 2 invalid, of which 1 rejected before evaluation)"
        );
    }

    #[test]
    fn formats_durations_and_tokens() {
        assert_eq!(format_duration(Duration::from_secs(75)), "01:15");
        assert_eq!(format_duration(Duration::from_secs(3725)), "1:02:05");
        assert_eq!(format_tokens(950), "950");
        assert_eq!(format_tokens(12_345), "12.3k");
    }
}
