//! Run records: a run folder holds `card.yaml` (the exact card run),
//! `genomes.jsonl` (every genome, one JSON object per line, flushed as it is
//! admitted), `run.json` (run facts) and `summary.json` (the final tally).

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::card::Card;
use crate::engine::events::{RunInfo, RunSummary};
use crate::engine::genome::Genome;

/// Where a run's record goes. Implementations must have written a genome
/// durably when `record` returns.
pub trait RunRecorder: Send {
    fn begin(&mut self, info: &RunInfo, card: &Card) -> std::io::Result<()>;
    fn record(&mut self, genome: &Genome) -> std::io::Result<()>;
    fn finish(&mut self, summary: &RunSummary) -> std::io::Result<()>;
}

/// Writes the run folder described in the module docs.
pub struct JsonlRecorder {
    dir: PathBuf,
    genomes: Option<BufWriter<File>>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    card: &'a str,
    task: &'a str,
    model: &'a str,
    offline: bool,
    seed: u64,
    max_iterations: u64,
    parallel: u32,
    started_unix: u64,
}

#[derive(Serialize)]
struct SummaryJson<'a> {
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
    #[serde(skip)]
    _p: std::marker::PhantomData<&'a ()>,
}

fn unix_now() -> u64 {
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

/// A fresh run folder name under `root`: `<card>-<task>-<timestamp>`.
pub fn new_run_dir(root: &Path, card: &str, task: &str) -> PathBuf {
    let base = format!("{card}-{task}-{}", timestamp(unix_now()));
    let mut dir = root.join(&base);
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = root.join(format!("{base}-{n}"));
    }
    dir
}

impl JsonlRecorder {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            genomes: None,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

impl RunRecorder for JsonlRecorder {
    fn begin(&mut self, info: &RunInfo, card: &Card) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(self.dir.join("card.yaml"), card.to_yaml())?;
        write_json(
            &self.dir.join("run.json"),
            &RunJson {
                card: &info.card_name,
                task: &info.task_name,
                model: &info.model,
                offline: info.offline,
                seed: info.seed,
                max_iterations: info.max_iterations,
                parallel: info.parallel,
                started_unix: unix_now(),
            },
        )?;
        let file = File::create(self.dir.join("genomes.jsonl"))?;
        self.genomes = Some(BufWriter::new(file));
        Ok(())
    }

    fn record(&mut self, genome: &Genome) -> std::io::Result<()> {
        let Some(w) = self.genomes.as_mut() else {
            return Err(std::io::Error::other("run record not started"));
        };
        serde_json::to_writer(&mut *w, genome).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
        w.flush()
    }

    fn finish(&mut self, s: &RunSummary) -> std::io::Result<()> {
        if let Some(mut w) = self.genomes.take() {
            w.flush()?;
            w.get_ref().sync_all()?;
        }
        write_json(
            &self.dir.join("summary.json"),
            &SummaryJson {
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
                _p: std::marker::PhantomData,
            },
        )
    }
}

/// Read a `genomes.jsonl` back (for tests, export and reopening runs).
/// A torn last line (crash mid-write) is skipped; any other bad line is an
/// error naming its line number.
pub fn read_genomes(path: &Path) -> Result<Vec<Genome>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Genome>(line) {
            Ok(g) => out.push(g),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => return Err(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    Ok(out)
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
