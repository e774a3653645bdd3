//! `genomes.jsonl`, `card.yaml`, `summary.json`: the plain-text side of a run
//! folder.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::{ArchiveError, Checkpoint, RunRecorder};
use crate::engine::card::Card;
use crate::engine::events::{RunInfo, RunSummary};
use crate::engine::genome::Genome;

/// Writes `card.yaml`, `genomes.jsonl` (flushed per iteration) and `summary.json`.
pub struct JsonlRecorder {
    dir: PathBuf,
    append: bool,
    genomes: Option<BufWriter<File>>,
}

impl JsonlRecorder {
    /// `append`: continue an existing `genomes.jsonl` (resume).
    pub fn new(dir: &Path, append: bool) -> Self {
        Self {
            dir: dir.to_path_buf(),
            append,
            genomes: None,
        }
    }
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> ArchiveError {
    ArchiveError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

#[derive(Serialize)]
struct SummaryJson {
    status: String,
    iterations: u64,
    genomes: u64,
    valid: u64,
    invalid: u64,
    best_id: Option<u64>,
    best_score: Option<f64>,
    initial_score: Option<f64>,
    prompt_tokens: u64,
    completion_tokens: u64,
    cost_usd: Option<f64>,
    wall_secs: f64,
}

impl RunRecorder for JsonlRecorder {
    fn begin(
        &mut self,
        _info: &RunInfo,
        card: &Card,
        _task_dir: &Path,
    ) -> Result<(), ArchiveError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        let card_path = self.dir.join("card.yaml");
        std::fs::write(&card_path, card.to_yaml()).map_err(|e| io_err(&card_path, e))?;
        let path = self.dir.join("genomes.jsonl");
        let file = if self.append {
            // drop a torn last line left by a crash, then append
            if let Ok(text) = std::fs::read_to_string(&path)
                && !text.is_empty()
                && !text.ends_with('\n')
            {
                let keep = text.rfind('\n').map_or(0, |i| i + 1);
                std::fs::write(&path, &text[..keep]).map_err(|e| io_err(&path, e))?;
            }
            OpenOptions::new().create(true).append(true).open(&path)
        } else {
            File::create(&path)
        }
        .map_err(|e| io_err(&path, e))?;
        self.genomes = Some(BufWriter::new(file));
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
            serde_json::to_writer(&mut *w, &**g).map_err(|e| io_err(&path, e))?;
            w.write_all(b"\n").map_err(|e| io_err(&path, e))?;
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
            best_id: s.best_id,
            best_score: s.best_score,
            initial_score: s.initial_score,
            prompt_tokens: s.usage.prompt_tokens,
            completion_tokens: s.usage.completion_tokens,
            cost_usd: s.usage.cost_usd,
            wall_secs: s.wall_secs,
        })
        .map_err(|e| io_err(&path, e))?;
        std::fs::write(&path, text + "\n").map_err(|e| io_err(&path, e))
    }
}

/// Read a `genomes.jsonl` back. A torn last line (crash mid-write) is
/// skipped; any other bad line is an error naming its line number.
pub fn read_genomes(path: &Path) -> Result<Vec<Genome>, ArchiveError> {
    let text = std::fs::read_to_string(path).map_err(|e| io_err(path, e))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Genome>(line) {
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
