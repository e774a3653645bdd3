//! `genomes.jsonl`, `card.yaml`, `summary.json`: the plain-text side of a run
//! folder.

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::{ArchiveError, Checkpoint, RunRecorder};
use crate::engine::card::Card;
use crate::engine::consent::Clearance;
use crate::engine::events::{RunInfo, RunOrigin, RunSummary};
use crate::engine::genome::Genome;
use crate::engine::steering::changes::SettingsChange;

/// Writes `card.yaml`, `genomes.jsonl` (flushed per iteration) and `summary.json`.
pub struct JsonlRecorder {
    dir: PathBuf,
    append: bool,
    genomes: Option<BufWriter<File>>,
    /// The run's origin when it is a fork, for `summary.json`.
    forked_from: Option<RunOrigin>,
    /// The run's standing on lowered isolation, for `summary.json`.
    clearance: Option<Clearance>,
}

impl JsonlRecorder {
    /// `append`: continue an existing `genomes.jsonl` (resume).
    pub fn new(dir: &Path, append: bool) -> Self {
        Self {
            dir: dir.to_path_buf(),
            append,
            genomes: None,
            forked_from: None,
            clearance: None,
        }
    }
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> ArchiveError {
    ArchiveError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

#[derive(Serialize, serde::Deserialize)]
struct SummaryJson {
    status: String,
    iterations: u64,
    genomes: u64,
    valid: u64,
    invalid: u64,
    /// Of the invalid, rejected by the novelty gate before evaluation.
    #[serde(default)]
    rejected: u64,
    best_id: Option<u64>,
    best_score: Option<f64>,
    initial_score: Option<f64>,
    prompt_tokens: u64,
    completion_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    cached_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    cache_write_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    reasoning_tokens: u64,
    cost_usd: Option<f64>,
    /// This invocation's wall time.
    wall_secs: f64,
    /// The run's wall time over every invocation.
    #[serde(default)]
    run_wall_secs: f64,
    /// The run and genome a fork started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forked_from: Option<RunOrigin>,
    /// Where the card came from, the settings it lowers and the consent
    /// given for them (see `crate::engine::consent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    clearance: Option<Clearance>,
}

/// The tally a finished run wrote to its folder's `summary.json` (`None`
/// when there is none or it does not read: a run that has not ended).
pub fn read_summary(dir: &Path) -> Option<RunSummary> {
    use crate::engine::foreign::{Folder, Limit, Links};
    let text = Folder::open(dir, Links::Never)
        .ok()?
        .read_text_if_any("summary.json", Limit::SMALL_JSON)
        .ok()??;
    let s: SummaryJson = serde_json::from_str(&text).ok()?;
    Some(RunSummary {
        status: crate::engine::events::RunStatus::from_label(&s.status),
        iterations: s.iterations,
        genomes: s.genomes,
        valid: s.valid,
        invalid: s.invalid,
        rejected: s.rejected,
        best_id: s.best_id,
        best_score: s.best_score,
        initial_score: s.initial_score,
        usage: crate::engine::genome::TokenUsage {
            prompt_tokens: s.prompt_tokens,
            completion_tokens: s.completion_tokens,
            cost_usd: s.cost_usd,
            cached_tokens: s.cached_tokens,
            cache_write_tokens: s.cache_write_tokens,
            reasoning_tokens: s.reasoning_tokens,
        },
        wall_secs: s.wall_secs,
        run_wall_secs: s.run_wall_secs,
    })
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RunRecorder for JsonlRecorder {
    fn begin(&mut self, info: &RunInfo, card: &Card, _task_dir: &Path) -> Result<(), ArchiveError> {
        self.forked_from.clone_from(&info.forked_from);
        self.clearance = info.clearance.as_deref().cloned();
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        let card_path = self.dir.join("card.yaml");
        std::fs::write(&card_path, card.to_yaml()).map_err(|e| io_err(&card_path, e))?;
        let path = self.dir.join("genomes.jsonl");
        let file = if self.append {
            match_archive(&path, &self.dir)?;
            OpenOptions::new().create(true).append(true).open(&path)
        } else {
            File::create(&path)
        }
        .map_err(|e| io_err(&path, e))?;
        self.genomes = Some(BufWriter::new(file));
        Ok(())
    }

    /// `card.yaml` is the card the run goes on with.
    fn settings_changed(
        &mut self,
        card: &Card,
        _change: &SettingsChange,
    ) -> Result<(), ArchiveError> {
        let path = self.dir.join("card.yaml");
        std::fs::write(&path, card.to_yaml()).map_err(|e| io_err(&path, e))
    }

    /// `summary.json` says the standing the run ended with.
    fn clearance_changed(&mut self, clearance: &Clearance) -> Result<(), ArchiveError> {
        self.clearance = Some(clearance.clone());
        Ok(())
    }

    fn record_iteration(
        &mut self,
        genomes: &[Arc<Genome>],
        _checkpoint: &Checkpoint,
    ) -> Result<(), ArchiveError> {
        let path = self.dir.join("genomes.jsonl");
        let Some(w) = self.genomes.as_mut() else {
            return Err(io_err(&path, "run record not started"));
        };
        for g in genomes {
            let (json, _) = super::blobs::encode(g).map_err(|e| io_err(&path, e))?;
            w.write_all(json.as_bytes())
                .and_then(|()| w.write_all(b"\n"))
                .map_err(|e| io_err(&path, e))?;
        }
        w.flush().map_err(|e| io_err(&path, e))
    }

    fn finish(&mut self, s: &RunSummary) -> Result<(), ArchiveError> {
        if let Some(mut w) = self.genomes.take() {
            w.flush().map_err(|e| io_err(&self.dir, e))?;
        }
        let path = self.dir.join("summary.json");
        let text = serde_json::to_string_pretty(&SummaryJson {
            status: s.status.label(),
            iterations: s.iterations,
            genomes: s.genomes,
            valid: s.valid,
            invalid: s.invalid,
            rejected: s.rejected,
            best_id: s.best_id,
            best_score: s.best_score,
            initial_score: s.initial_score,
            prompt_tokens: s.usage.prompt_tokens,
            completion_tokens: s.usage.completion_tokens,
            cached_tokens: s.usage.cached_tokens,
            cache_write_tokens: s.usage.cache_write_tokens,
            reasoning_tokens: s.usage.reasoning_tokens,
            cost_usd: s.usage.cost_usd,
            wall_secs: s.wall_secs,
            run_wall_secs: s.run_wall_secs,
            forked_from: self.forked_from.clone(),
            clearance: self.clearance.clone(),
        })
        .map_err(|e| io_err(&path, e))?;
        std::fs::write(&path, text + "\n").map_err(|e| io_err(&path, e))
    }
}

/// Before a resume appends to `genomes.jsonl`, make it hold exactly the
/// archive's genomes, in id order. The two can differ after a crash: a torn
/// last line; genomes the archive lost (its WAL deleted or damaged, so the
/// resumed run numbers them again) that would otherwise be written twice; or
/// the last iteration committed to the archive but not yet appended here.
/// The longest prefix of lines whose ids run 0, 1, 2... and that the archive
/// also holds is kept, the rest cut, and what the archive has beyond it is
/// appended as the archive stored it.
fn match_archive(path: &Path, dir: &Path) -> Result<(), ArchiveError> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: u64,
    }
    let archive = super::Archive::open(dir)?;
    let on_record = archive.genome_count()?;
    // Line by line: the file holds every prompt of the run.
    let (mut keep, mut len) = (0u64, 0u64); // bytes of the good prefix, of the file
    let mut next = 0u64; // ids in the good prefix
    match File::open(path) {
        Ok(f) => {
            let mut reader = std::io::BufReader::new(f);
            let mut line = Vec::new();
            let mut good = true;
            loop {
                line.clear();
                let n = reader
                    .read_until(b'\n', &mut line)
                    .map_err(|e| io_err(path, e))?;
                if n == 0 {
                    break;
                }
                len += n as u64;
                good = good
                    && line.ends_with(b"\n")
                    && next < on_record
                    && serde_json::from_slice::<Id>(line.trim_ascii()).is_ok_and(|g| g.id == next);
                if good {
                    keep += n as u64;
                    next += 1;
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path, e)),
    }
    if keep == len && next == on_record {
        return Ok(());
    }
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    file.set_len(keep).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::new(
        OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| io_err(path, e))?,
    );
    for (_, json) in archive.genome_json_from(next)? {
        w.write_all(json.as_bytes())
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|e| io_err(path, e))?;
    }
    w.flush().map_err(|e| io_err(path, e))?;
    file.sync_all().map_err(|e| io_err(path, e))
}

/// Read a `genomes.jsonl` back. A torn last line (crash mid-write) is
/// skipped; any other bad line is an error naming its line number. Folder
/// programs are read from the `archive.sqlite` beside it.
pub fn read_genomes(path: &Path) -> Result<Vec<Genome>, ArchiveError> {
    let text =
        crate::engine::foreign::read_named_text(path, crate::engine::foreign::Limit::GENOMES_JSONL)
            .map_err(|e| io_err(path, e.why))?;
    let archive = path
        .parent()
        .filter(|d| d.join(super::ARCHIVE_FILE).is_file())
        .and_then(|d| super::Archive::open(d).ok());
    let mut reader = match &archive {
        Some(a) => a.tree_reader(),
        None => super::blobs::TreeReader::new(None),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match reader.decode(line) {
            Ok(g) => out.push(g),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => {
                return Err(ArchiveError::Corrupt {
                    path: path.to_path_buf(),
                    message: format!("line {}: {e}", i + 1),
                });
            }
        }
    }
    Ok(out)
}
