//! What the service reads from a run folder: a finished (or not served)
//! run's snapshot, the heads of its genomes in chunks, one genome's body,
//! its programs as files, its export, and the rows of a run list. Blocking
//! (SQLite): called from `spawn_blocking`.

use std::path::Path;

use tokio::sync::mpsc;

use super::protocol::{HISTORY_CHUNK, Message, RunRow, RunState, SNAPSHOT_LOG_LINES, Snapshot};
use crate::engine::archive::{Archive, ArchiveError, RunMeta, read_summary};
use crate::engine::events::{LogLevel, RunInfo, RunStatus, RunSummary};
use crate::engine::genome::TokenUsage;

use crate::engine::archive::card_name;

/// The facts a run's record keeps of it, as a live run's `Started` says
/// them; `clearance` is the record's (what the card lowers and the consent).
pub(crate) fn info_of(
    dir: &Path,
    meta: &RunMeta,
    clearance: Option<crate::engine::consent::Clearance>,
) -> RunInfo {
    RunInfo {
        card_name: card_name(&meta.card_yaml),
        task_name: meta
            .task_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        max_iterations: meta.max_iterations,
        model: meta.model.clone(),
        offline: meta.model.starts_with("offline model"),
        seed: meta.seed,
        parallel: 0,
        run_dir: Some(dir.to_path_buf()),
        unsandboxed: None,
        forked_from: meta.forked_from.clone(),
        clearance: clearance.map(Box::new),
    }
}

fn level(text: &str) -> LogLevel {
    match text {
        "error" => LogLevel::Error,
        "warn" => LogLevel::Warn,
        _ => LogLevel::Info,
    }
}

/// The snapshot of a run from its folder: its facts, its state as its
/// checkpoint and log have it, and its tally when it ended.
pub(crate) fn snapshot(dir: &Path) -> Result<Snapshot, ArchiveError> {
    let archive = Archive::open(dir)?;
    let meta = archive.meta()?;
    let checkpoint = archive.checkpoint()?;
    let logs = archive
        .last_events(SNAPSHOT_LOG_LINES)?
        .into_iter()
        .map(|(_, l, m)| (level(&l), m))
        .collect();
    let summary = if meta.status == "running" || meta.status.is_empty() {
        None
    } else {
        Some(summary_of(&archive, dir, &meta, checkpoint.as_ref())?)
    };
    let iterations = checkpoint.as_ref().map_or(0, |c| c.iterations_done);
    Ok(Snapshot {
        info: Some(info_of(dir, &meta, archive.clearance()?)),
        card_yaml: meta.card_yaml.clone(),
        state: RunState {
            iterations_done: iterations,
            iterations_started: iterations,
            paused: false,
            steering: checkpoint
                .as_ref()
                .map(|c| c.steering.clone())
                .unwrap_or_default(),
            settings_changes: archive.settings_changes()?,
            logs,
            summary,
            ..RunState::default()
        },
        running_secs: meta
            .ended_unix
            .map(|end| end.saturating_sub(meta.started_unix) as f64),
    })
}

/// The run's tally: its `summary.json` when it wrote one, else what its
/// record counts.
pub(crate) fn summary_of(
    archive: &Archive,
    dir: &Path,
    meta: &RunMeta,
    checkpoint: Option<&crate::engine::archive::Checkpoint>,
) -> Result<RunSummary, ArchiveError> {
    if meta.status != "running"
        && let Some(s) = read_summary(dir)
    {
        return Ok(s);
    }
    let (genomes, best_score, _) = archive.quick_stats()?;
    let mut s = RunSummary::empty(RunStatus::from_label(&meta.status));
    s.genomes = genomes;
    s.best_score = best_score;
    if let Some(c) = checkpoint {
        s.iterations = c.iterations_done;
        s.valid = c.valid;
        s.invalid = c.invalid;
        s.rejected = c.rejected;
        s.usage = c.usage;
        s.run_wall_secs = c.wall_secs;
    }
    Ok(s)
}

/// Send the heads of every genome from id `first` on as `History` lines of
/// [`HISTORY_CHUNK`] genomes into `out` (waiting while it is full, so a
/// slow client holds at most its capacity in memory). Returns the id after
/// the last genome sent (`first` when none): the genomes the snapshot
/// holds.
pub(crate) fn send_heads(
    dir: &Path,
    first: u64,
    out: &mpsc::Sender<String>,
) -> Result<u64, ArchiveError> {
    let archive = Archive::open(dir)?;
    let mut next = first;
    let mut chunk = String::new();
    let mut count = 0usize;
    let mut open = true;
    let flush = |chunk: &mut String, count: &mut usize| -> bool {
        if *count == 0 {
            return true;
        }
        chunk.push_str("]}}\n");
        let line = std::mem::take(chunk);
        *count = 0;
        out.blocking_send(line).is_ok()
    };
    archive.genome_heads_json(first, |id, json| {
        if count == 0 {
            chunk.push_str("{\"history\":{\"genomes\":[");
        } else {
            chunk.push(',');
        }
        chunk.push_str(&json);
        count += 1;
        next = id + 1;
        if count >= HISTORY_CHUNK {
            open = flush(&mut chunk, &mut count);
        }
        open
    })?;
    if open {
        flush(&mut chunk, &mut count);
    }
    Ok(next)
}

/// A run folder's row of a run list; `live`: what its service said, if it
/// answered.
pub(crate) fn row(dir: &Path, live: Option<RunRow>) -> RunRow {
    if let Some(row) = live {
        return row;
    }
    let read = || -> Result<RunRow, ArchiveError> {
        let archive = Archive::open(dir)?;
        let meta = archive.meta()?;
        let checkpoint = archive.checkpoint()?;
        let (genomes, best_score, max_iteration) = archive.quick_stats()?;
        let state = if meta.status == "running" || meta.status.is_empty() {
            if crate::engine::archive::RunLock::is_held(dir) {
                "running".to_owned()
            } else {
                "interrupted".to_owned()
            }
        } else {
            meta.status.clone()
        };
        let usage: TokenUsage = checkpoint.as_ref().map(|c| c.usage).unwrap_or_default();
        Ok(RunRow {
            dir: dir.display().to_string(),
            card: card_name(&meta.card_yaml),
            task: meta
                .task_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            state,
            live: false,
            iterations: checkpoint
                .as_ref()
                .map_or(max_iteration, |c| c.iterations_done),
            max_iterations: meta.max_iterations,
            genomes,
            best_score,
            cost_usd: usage.cost_usd,
            started_unix: meta.started_unix,
        })
    };
    read().unwrap_or_else(|e| RunRow {
        dir: dir.display().to_string(),
        state: format!("unreadable: {e}"),
        ..RunRow::default()
    })
}

/// Every run folder directly under `root` (or `root` itself when it is
/// one), newest first, each asked through its service when it answers.
pub(crate) fn rows(root: &Path) -> Vec<RunRow> {
    let dirs: Vec<std::path::PathBuf> = if root.join(crate::engine::archive::ARCHIVE_FILE).is_file()
    {
        vec![root.to_path_buf()]
    } else {
        crate::engine::archive::list_runs(root)
            .into_iter()
            .map(|l| l.dir)
            .collect()
    };
    let mut out: Vec<RunRow> = dirs
        .iter()
        .map(|d| row(d, super::local::status(d)))
        .collect();
    out.sort_by(|a, b| {
        b.started_unix
            .cmp(&a.started_unix)
            .then_with(|| b.dir.cmp(&a.dir))
    });
    out
}

/// Every genome of the run as `export-run --jsonl` writes it, as `Export`
/// chunks of request `id` into `out`, one genome read at a time.
pub(crate) fn export(dir: &Path, id: u64, out: &mpsc::Sender<String>) -> Result<(), String> {
    let archive = Archive::open(dir).map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    for genome in archive.genome_ids().map_err(|e| e.to_string())? {
        if let Some(g) = archive.genome(genome).map_err(|e| e.to_string())? {
            lines.push(serde_json::to_string(&g).map_err(|e| format!("genome {genome}: {e}"))?);
        }
        if lines.len() >= super::protocol::EXPORT_CHUNK {
            let chunk = super::protocol::line(&Message::Export {
                id,
                lines: std::mem::take(&mut lines),
                done: false,
            });
            if out.blocking_send(chunk).is_err() {
                return Ok(());
            }
        }
    }
    out.blocking_send(super::protocol::line(&Message::Export {
        id,
        lines,
        done: true,
    }))
    .ok();
    Ok(())
}
