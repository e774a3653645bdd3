//! Run records. A run folder holds:
//! - `archive.sqlite` — the durable record (SQLite, WAL): run metadata (card
//!   snapshot, task path, seed, model description — never secrets), every
//!   genome with every field the inspector shows, an event log, and the
//!   checkpoint the loop needs to resume. Each iteration's genomes and the
//!   checkpoint are committed in one transaction, on a writer thread of
//!   their own (see `background`), so the loop does not wait for the disk.
//! - `genomes.jsonl` — every genome as one JSON object per line (a plain,
//!   greppable export written alongside). A folder program is recorded in
//!   both as a reference to its tree, whose files `archive.sqlite` stores
//!   once each (see `blobs`).
//! - `card.yaml`, `summary.json` — the card as run, and the final tally.
//!
//! # The record
//!
//! A recorded run owns a folder `runs/<card>-<task>-<time>/`:
//!
//! - `archive.sqlite` (SQLite, WAL): the card as run, the task path, seed, model description (never
//!   a key), every genome with every field the inspector shows, the event log, and the checkpoint
//!   (counters, policy state, memory state, RNG state). Each iteration's genomes and checkpoint are
//!   committed in one transaction by a writer thread while the loop goes on.
//! - `genomes.jsonl` (one genome per line), `card.yaml`, `summary.json`.
//! - Folder programs (repository tasks) are stored by content (`archive/blobs.rs`): each file's
//!   bytes once in `blobs(id = SHA-256, size, data deflated)`, each program's `path\0blob` manifest
//!   once in `trees(id, manifest)`, and the genome's record (in both files) holds `"content":
//!   {"tree": ID}`. A child that changes one file of a 200-file program costs that file and a
//!   manifest; reading back (`TreeReader`) shares every blob and tree among the genomes that have
//!   it, so a resumed run's memory grows with the distinct files, not with genomes × files. A
//!   single-file program stays inline as its text, the format records have always had, so version 1
//!   archives read and resume unchanged (a resume adds the two tables).
//! - `run.lock`: one writer per folder. A `RunPlan` takes the folder's `flock` (`archive/lock.rs`)
//!   before anything is written and the run holds it to its end; a refused writer gets
//!   `ArchiveError::Locked` with the holder's PID. New folders are claimed by `create_dir`
//!   (`reserve_run_dir`), so concurrent runs never share one.
//! - A fork's origin: `forked_from_run`, `forked_from_genome` in `meta`; `forked_from` in
//!   `summary.json`.
//! - Settings changed in flight: `settings_changes` in `meta` (JSON, each change with the iteration
//!   it took effect at); `card_yaml`, `max_iterations` and `card.yaml` are the card the run goes on
//!   with, which a resume builds.
//! - The archive is the record: on resume `genomes.jsonl` is cut or completed to hold exactly the
//!   archive's genomes before anything is appended.
//! - Resume re-admits the recorded genomes in order (a population is a pure function of its
//!   admissions), restores the policy, memory and RNG from the checkpoint and numbers on from the
//!   last iteration: a resumed run makes the same choices as one that never stopped, given the same
//!   model replies.

mod background;
mod blobs;
mod jsonl;
mod lock;
mod redacted;
mod sqlite;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::card::Card;
use crate::engine::events::{LogLevel, RunInfo, RunSummary};
use crate::engine::genome::{Genome, TokenUsage};
use crate::engine::rng::SearchRng;
use crate::engine::steering::changes::SettingsChange;

pub use background::BackgroundRecorder;
pub use jsonl::{JsonlRecorder, read_genomes, read_summary};
pub use lock::{LOCK_FILE, RunLock, reserve_run_dir};
pub use redacted::Redacted;
pub use sqlite::{
    ARCHIVE_FILE, Archive, ArchiveContents, HEAD_ERROR_CHARS, RunListing, RunMeta, SCHEMA_VERSION,
    SqliteRecorder, card_name, list_runs,
};

/// Why a run record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: not a readable Galapagos run archive: {message}")]
    Corrupt { path: PathBuf, message: String },
    /// Another process is writing the run folder.
    #[error(
        "{dir} is in use by {}: one process writes a run folder at a time; wait for it to end or stop it, then resume",
        pid.map_or_else(|| "another galapagos process".to_owned(), |p| format!("another galapagos process (PID {p})"))
    )]
    Locked { dir: PathBuf, pid: Option<u32> },
    #[error(
        "{path}: archive schema version {found} is newer than this build understands ({supported}); upgrade galapagos to open it"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
}

/// What the loop needs to continue exactly where it was: saved with every
/// admitted iteration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Iterations completed (the initial program not counted).
    pub iterations_done: u64,
    /// Highest iteration number admitted; a resumed run numbers on from here.
    pub last_iteration: u64,
    /// Next genome id.
    pub next_id: u64,
    /// The run RNG's state.
    pub rng: SearchRng,
    /// The selection policy's checkpoint.
    pub policy: serde_json::Value,
    /// The memory's checkpoint.
    pub memory: serde_json::Value,
    /// Tokens and cost so far.
    pub usage: TokenUsage,
    /// Genomes so far (valid, invalid).
    pub valid: u64,
    pub invalid: u64,
    /// Genomes the novelty gate rejected before evaluation so far (a resume
    /// counts them again from the genomes; absent in older archives).
    #[serde(default)]
    pub rejected: u64,
    /// The run's wall time so far, over every invocation (seconds; at the
    /// last recorded iteration, and at the end of an invocation that ended
    /// cleanly). Absent in older archives: 0.
    #[serde(default)]
    pub wall_secs: f64,
    /// The person's notes and pins in force, and their history (none in
    /// archives written before steering existed).
    #[serde(default)]
    pub steering: crate::engine::steering::Steering,
}

/// Where a run's record goes. `record_iteration` of a plain recorder has made
/// the genomes and checkpoint durable when it returns `Ok`; a
/// [`BackgroundRecorder`] has queued them, and has written everything queued
/// when `finish` returns.
pub trait RunRecorder: Send {
    fn begin(&mut self, info: &RunInfo, card: &Card, task_dir: &Path) -> Result<(), ArchiveError>;
    fn record_iteration(
        &mut self,
        genomes: &[Arc<Genome>],
        checkpoint: &Checkpoint,
    ) -> Result<(), ArchiveError>;
    fn log(&mut self, _level: LogLevel, _message: &str) {}
    /// The run's settings changed in flight: from `change.iteration` on it
    /// runs with `card` (what a resumed run is built from). A recorder that
    /// keeps the card keeps the new one and the change.
    fn settings_changed(
        &mut self,
        _card: &Card,
        _change: &SettingsChange,
    ) -> Result<(), ArchiveError> {
        Ok(())
    }
    /// The run's standing on lowered isolation changed in flight (new
    /// settings lower it otherwise): a recorder that keeps it keeps this one.
    fn clearance_changed(
        &mut self,
        _clearance: &crate::engine::consent::Clearance,
    ) -> Result<(), ArchiveError> {
        Ok(())
    }
    fn finish(&mut self, summary: &RunSummary) -> Result<(), ArchiveError>;
    /// For a recorder that writes after `record_iteration` returns: how many
    /// of its calls have been written (or failed) so far. `None` (the
    /// default): each is written when the call returns.
    fn progress(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// Several recorders as one (archive + JSON lines).
pub struct Recorders(pub Vec<Box<dyn RunRecorder>>);

impl RunRecorder for Recorders {
    fn begin(&mut self, info: &RunInfo, card: &Card, task_dir: &Path) -> Result<(), ArchiveError> {
        self.0
            .iter_mut()
            .try_for_each(|r| r.begin(info, card, task_dir))
    }

    fn record_iteration(
        &mut self,
        genomes: &[Arc<Genome>],
        checkpoint: &Checkpoint,
    ) -> Result<(), ArchiveError> {
        self.0
            .iter_mut()
            .try_for_each(|r| r.record_iteration(genomes, checkpoint))
    }

    fn log(&mut self, level: LogLevel, message: &str) {
        for r in &mut self.0 {
            r.log(level, message);
        }
    }

    fn settings_changed(
        &mut self,
        card: &Card,
        change: &SettingsChange,
    ) -> Result<(), ArchiveError> {
        self.0
            .iter_mut()
            .try_for_each(|r| r.settings_changed(card, change))
    }

    fn clearance_changed(
        &mut self,
        clearance: &crate::engine::consent::Clearance,
    ) -> Result<(), ArchiveError> {
        self.0
            .iter_mut()
            .try_for_each(|r| r.clearance_changed(clearance))
    }

    fn finish(&mut self, summary: &RunSummary) -> Result<(), ArchiveError> {
        self.0.iter_mut().try_for_each(|r| r.finish(summary))
    }
}

/// The standard recorder for a run folder: `archive.sqlite` + `genomes.jsonl`,
/// written on a thread of their own ([`BackgroundRecorder`]).
/// `resume` appends to an existing run instead of starting one.
pub fn open_run_folder(dir: &Path, resume: bool) -> Result<Box<dyn RunRecorder>, ArchiveError> {
    let sqlite = if resume {
        SqliteRecorder::reopen(dir)?
    } else {
        SqliteRecorder::create(dir)?
    };
    let both = Recorders(vec![
        Box::new(sqlite),
        Box::new(JsonlRecorder::new(dir, resume)),
    ]);
    Ok(Box::new(BackgroundRecorder::spawn(Box::new(both), dir)?))
}

pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `YYYYMMDD-HHMMSS` (UTC) of a unix time.
pub fn timestamp(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// A fresh run folder under `root`, created here: `<card>-<task>-<timestamp>`
/// (with `-2`, `-3`... when that name is taken; see [`reserve_run_dir`]).
pub fn new_run_dir(root: &Path, card: &str, task: &str) -> Result<PathBuf, ArchiveError> {
    reserve_run_dir(root, &format!("{card}-{task}-{}", timestamp(unix_now())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(0), "19700101-000000");
        assert_eq!(timestamp(1_795_000_000), "20261118-110640");
    }
}
