//! The recording boundary of the run's redactor: a recorder that takes the
//! run's secrets out of everything before the recorder it wraps writes it
//! (`archive.sqlite`, `genomes.jsonl`, `summary.json`, the event log).

use std::path::Path;
use std::sync::Arc;

use super::{ArchiveError, Checkpoint, RunRecorder};
use crate::engine::card::Card;
use crate::engine::events::{LogLevel, RunInfo, RunSummary};
use crate::engine::genome::Genome;
use crate::engine::redact::Redactor;
use crate::engine::steering::changes::SettingsChange;

/// `inner`, given only redacted records.
pub struct Redacted {
    inner: Box<dyn RunRecorder>,
    redactor: Arc<Redactor>,
}

impl Redacted {
    /// `inner` itself when there is nothing to redact.
    pub fn wrap(inner: Box<dyn RunRecorder>, redactor: Arc<Redactor>) -> Box<dyn RunRecorder> {
        if redactor.is_empty() {
            inner
        } else {
            Box::new(Self { inner, redactor })
        }
    }
}

impl RunRecorder for Redacted {
    fn begin(&mut self, info: &RunInfo, card: &Card, task_dir: &Path) -> Result<(), ArchiveError> {
        let mut info = info.clone();
        info.redact(&self.redactor);
        self.inner.begin(&info, card, task_dir)
    }

    fn record_iteration(
        &mut self,
        genomes: &[Arc<Genome>],
        checkpoint: &Checkpoint,
    ) -> Result<(), ArchiveError> {
        let r = &self.redactor;
        let genomes: Vec<Arc<Genome>> = genomes
            .iter()
            .map(|g| r.genome(g).map_or_else(|| Arc::clone(g), Arc::new))
            .collect();
        // The policy's and the memory's state may quote candidates' output
        // (a scratchpad of notes).
        let mut policy = checkpoint.policy.clone();
        let mut memory = checkpoint.memory.clone();
        // A person's notes are typed text, kept in every checkpoint.
        let mut steering = checkpoint.steering.clone();
        let mut notes = r.string(&mut steering.notes);
        for changed in &mut steering.history {
            if let crate::engine::steering::Change::Notes { text } = &mut changed.change {
                notes |= r.string(text);
            }
        }
        if r.json(&mut policy) | r.json(&mut memory) | notes {
            let clean = Checkpoint {
                policy,
                memory,
                steering,
                ..checkpoint.clone()
            };
            self.inner.record_iteration(&genomes, &clean)
        } else {
            self.inner.record_iteration(&genomes, checkpoint)
        }
    }

    fn log(&mut self, level: LogLevel, message: &str) {
        self.inner.log(level, &self.redactor.text(message));
    }

    fn settings_changed(
        &mut self,
        card: &Card,
        change: &SettingsChange,
    ) -> Result<(), ArchiveError> {
        let mut change = change.clone();
        for c in &mut change.changes {
            self.redactor.string(&mut c.from);
            self.redactor.string(&mut c.to);
        }
        self.inner.settings_changed(card, &change)
    }

    fn clearance_changed(
        &mut self,
        clearance: &crate::engine::consent::Clearance,
    ) -> Result<(), ArchiveError> {
        self.inner.clearance_changed(clearance)
    }

    fn finish(&mut self, summary: &RunSummary) -> Result<(), ArchiveError> {
        let mut summary = summary.clone();
        summary.status.redact(&self.redactor);
        self.inner.finish(&summary)
    }

    fn progress(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.inner.progress()
    }
}
