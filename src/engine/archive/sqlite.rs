//! `archive.sqlite`: the durable run record (WAL mode).
//!
//! Over 800 lines: the one schema, the reader and the writer of it stay
//! together, so a change of the schema is one file's.
//!
//! Schema (version [`SCHEMA_VERSION`]):
//! - `meta(key PRIMARY KEY, value)`: schema_version, card_yaml, task_dir, seed,
//!   model, offline, started_unix, ended_unix, status, max_iterations, and
//!   for a fork forked_from_run and forked_from_genome, the settings
//!   changed in flight (settings_changes), and the run's standing on lowered
//!   isolation (clearance: see `crate::engine::consent`).
//! - `genomes(id PRIMARY KEY, iteration, attempt, parent_id, valid, score, json)`:
//!   every genome, the whole record as JSON plus indexed columns for listing.
//! - `events(seq PRIMARY KEY, unix, level, message)`: the run's log.
//! - `checkpoint(id = 1, json)`: the state needed to resume, replaced in the
//!   same transaction as each iteration's genomes.
//! - `blobs(id, size, data)`, `trees(id, manifest)`: the files of folder
//!   programs, each stored once (see `blobs.rs`); version 1 archives have
//!   none, and get them when resumed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};

use super::{ArchiveError, Checkpoint, RunRecorder, unix_now};
use crate::engine::card::Card;
use crate::engine::consent::Clearance;
use crate::engine::events::{LogLevel, RunInfo, RunOrigin, RunSummary};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::steering::changes::SettingsChange;

/// File name inside a run folder.
pub const ARCHIVE_FILE: &str = "archive.sqlite";
/// The schema this build writes and reads (2: folder programs as blobs and
/// trees; version 1 archives are read as they are).
pub const SCHEMA_VERSION: i64 = 2;

/// How many characters of a genome's error its head keeps
/// ([`Archive::genome_heads_json`]).
pub const HEAD_ERROR_CHARS: usize = 2000;

/// The `meta` keys of a fork's origin: the parent run's folder and genome.
const FORKED_FROM_RUN: &str = "forked_from_run";
const FORKED_FROM_GENOME: &str = "forked_from_genome";
/// The `meta` key of the run's standing on lowered isolation (a JSON
/// [`Clearance`]: the card's provenance and hash, what it lowers, the consent
/// given, this account's signature).
const CLEARANCE: &str = "clearance";
/// The `meta` key of the settings changed in flight (a JSON list of
/// [`SettingsChange`], each with the iteration it took effect at).
const SETTINGS_CHANGES: &str = "settings_changes";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS genomes (
    id INTEGER PRIMARY KEY,
    iteration INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    parent_id INTEGER,
    valid INTEGER NOT NULL,
    score REAL,
    json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS genomes_iteration ON genomes(iteration);
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, unix INTEGER NOT NULL, level TEXT NOT NULL, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL);
";

fn corrupt(path: &Path, e: impl std::fmt::Display) -> ArchiveError {
    ArchiveError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> ArchiveError {
    ArchiveError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Run facts stored in `meta`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunMeta {
    pub card_yaml: String,
    pub task_dir: PathBuf,
    pub seed: u64,
    pub model: String,
    pub status: String,
    pub max_iterations: u64,
    pub started_unix: u64,
    pub ended_unix: Option<u64>,
    /// The run and genome this run was forked from, when it is a fork.
    pub forked_from: Option<RunOrigin>,
}

/// Everything in an archive.
#[derive(Clone, Debug)]
pub struct ArchiveContents {
    pub meta: RunMeta,
    pub genomes: Vec<Genome>,
    pub checkpoint: Option<Checkpoint>,
    pub events: Vec<(u64, String, String)>,
}

/// Read access to an archive. Opening never modifies the file.
pub struct Archive {
    conn: Connection,
    path: PathBuf,
}

impl Archive {
    /// Open a run folder's archive read-only, checking it is one of ours and
    /// of a schema version we understand.
    pub fn open(run_dir: &Path) -> Result<Self, ArchiveError> {
        let path = run_dir.join(ARCHIVE_FILE);
        if !path.is_file() {
            return Err(io(&path, "no run archive here"));
        }
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| corrupt(&path, e))?;
        let version: Option<String> = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| corrupt(&path, e))?;
        let Some(version) = version else {
            return Err(corrupt(&path, "no schema version"));
        };
        let found: i64 = version
            .parse()
            .map_err(|e| corrupt(&path, format!("schema version {version:?}: {e}")))?;
        if found > SCHEMA_VERSION {
            return Err(ArchiveError::TooNew {
                path,
                found,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(Self { conn, path })
    }

    fn meta_value(&self, key: &str) -> Result<Option<String>, ArchiveError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| corrupt(&self.path, e))
    }

    pub fn meta(&self) -> Result<RunMeta, ArchiveError> {
        let get = |k: &str| -> Result<String, ArchiveError> {
            Ok(self.meta_value(k)?.unwrap_or_default())
        };
        Ok(RunMeta {
            card_yaml: get("card_yaml")?,
            task_dir: PathBuf::from(get("task_dir")?),
            seed: get("seed")?.parse().unwrap_or(0),
            model: get("model")?,
            status: get("status")?,
            max_iterations: get("max_iterations")?.parse().unwrap_or(0),
            started_unix: get("started_unix")?.parse().unwrap_or(0),
            ended_unix: get("ended_unix")?.parse().ok(),
            forked_from: self.forked_from()?,
        })
    }

    /// The settings changed in flight, in order, each with the iteration it
    /// took effect at.
    pub fn settings_changes(&self) -> Result<Vec<SettingsChange>, ArchiveError> {
        match self.meta_value(SETTINGS_CHANGES)? {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| corrupt(&self.path, format!("{SETTINGS_CHANGES}: {e}"))),
        }
    }

    /// The run's standing on lowered isolation as recorded (`None` for a
    /// run recorded before it was kept, or one whose record does not read:
    /// either vouches for nothing).
    pub fn clearance(&self) -> Result<Option<Clearance>, ArchiveError> {
        Ok(self
            .meta_value(CLEARANCE)?
            .and_then(|json| serde_json::from_str(&json).ok()))
    }

    /// The run and genome this run was forked from (`None` for a run
    /// started from its task's program).
    fn forked_from(&self) -> Result<Option<RunOrigin>, ArchiveError> {
        let (Some(run), Some(genome)) = (
            self.meta_value(FORKED_FROM_RUN)?,
            self.meta_value(FORKED_FROM_GENOME)?,
        ) else {
            return Ok(None);
        };
        let genome = genome
            .parse()
            .map_err(|e| corrupt(&self.path, format!("{FORKED_FROM_GENOME} {genome:?}: {e}")))?;
        Ok(Some(RunOrigin {
            run: PathBuf::from(run),
            genome,
        }))
    }

    /// Genome `id` with everything it holds, or `None` when the run has no
    /// such genome.
    pub fn genome(&self, id: GenomeId) -> Result<Option<Genome>, ArchiveError> {
        let json: Option<String> = self
            .conn
            .query_row(
                "SELECT json FROM genomes WHERE id = ?1",
                [i64::try_from(id).unwrap_or(i64::MAX)],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| corrupt(&self.path, e))?;
        json.map(|json| {
            self.tree_reader()
                .decode(&json)
                .map_err(|e| corrupt(&self.path, format!("genome {id}: {e}")))
        })
        .transpose()
    }

    /// Every genome in id (admission) order.
    pub fn genomes(&self) -> Result<Vec<Genome>, ArchiveError> {
        self.genomes_mapped(|g| g)
    }

    /// Every genome in id order without its prompt, raw reply and private
    /// metrics: what a resumed run's population holds. Read one at a time,
    /// so a long run's transcripts are never all in memory at once (the
    /// process would keep that peak for the rest of the run).
    pub fn genomes_without_transcripts(&self) -> Result<Vec<Genome>, ArchiveError> {
        self.genomes_mapped(|g| Genome {
            prompt: None,
            response: None,
            private: std::collections::BTreeMap::new(),
            ..g
        })
    }

    fn genomes_mapped(&self, map: impl Fn(Genome) -> Genome) -> Result<Vec<Genome>, ArchiveError> {
        let mut out = Vec::new();
        self.each_genome("json", 0, |g| {
            out.push(map(g));
            true
        })?;
        Ok(out)
    }

    /// Every genome from `first` on in id order, one at a time, read from `json_expr`.
    fn each_genome(
        &self,
        json_expr: &str,
        first: GenomeId,
        mut each: impl FnMut(Genome) -> bool,
    ) -> Result<(), ArchiveError> {
        let mut reader = self.tree_reader();
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT id, {json_expr} FROM genomes WHERE id >= ?1 ORDER BY id"
            ))
            .map_err(|e| corrupt(&self.path, e))?;
        let rows = stmt
            .query_map([i64::try_from(first).unwrap_or(i64::MAX)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| corrupt(&self.path, e))?;
        for row in rows {
            let (id, json) = row.map_err(|e| corrupt(&self.path, e))?;
            let g = reader
                .decode(&json)
                .map_err(|e| corrupt(&self.path, format!("genome {id}: {e}")))?;
            if !each(g) {
                break;
            }
        }
        Ok(())
    }

    /// Every genome from id `first` on, in id order, one at a time and
    /// without its transcripts (prompt, reply, agent, artifacts, private
    /// metrics), while `each` says go on: where a viewer that holds a run's
    /// heads reads its programs (a search, a population replayed).
    pub fn programs_from(
        &self,
        first: GenomeId,
        each: impl FnMut(Genome) -> bool,
    ) -> Result<(), ArchiveError> {
        let program =
            "json_remove(json, '$.prompt', '$.response', '$.agent', '$.artifacts', '$.private')";
        self.each_genome(program, first, each)
    }

    /// Reads records back with their folder programs resolved from this
    /// archive (a version 1 archive has no tables for them, and needs none).
    pub(crate) fn tree_reader(&self) -> super::blobs::TreeReader<'_> {
        let has_blobs = self
            .conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'trees'",
                [],
                |_| Ok(()),
            )
            .optional()
            .ok()
            .flatten()
            .is_some();
        super::blobs::TreeReader::new(has_blobs.then_some(&self.conn))
    }

    /// The ids of every genome on record, in order.
    pub fn genome_ids(&self) -> Result<Vec<GenomeId>, ArchiveError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM genomes ORDER BY id")
            .map_err(|e| corrupt(&self.path, e))?;
        let rows = stmt
            .query_map([], |r| Ok(r.get::<_, i64>(0)? as u64))
            .map_err(|e| corrupt(&self.path, e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(&self.path, e))
    }

    /// How many genomes are on record.
    pub fn genome_count(&self) -> Result<u64, ArchiveError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM genomes", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| corrupt(&self.path, e))
    }

    /// The stored JSON of every genome from id `first` on, in id order.
    pub fn genome_json_from(&self, first: u64) -> Result<Vec<(u64, String)>, ArchiveError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, json FROM genomes WHERE id >= ?1 ORDER BY id")
            .map_err(|e| corrupt(&self.path, e))?;
        let rows = stmt
            .query_map([first as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?))
            })
            .map_err(|e| corrupt(&self.path, e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(&self.path, e))
    }

    /// Every genome from id `first` on, in id order, as the JSON of a
    /// [`Genome`] without its bodies, handed to `each` one at a time until it
    /// returns false: no program (`content` is empty text), diff, artifacts,
    /// prompt, reply, private metrics or agent transcript, and its error cut
    /// to [`HEAD_ERROR_CHARS`] characters. SQLite takes the bodies out, so a
    /// long run's programs and transcripts are never parsed here, and one
    /// statement reads them all from one snapshot of the record: what a
    /// remote view reads for every genome, the bodies one at a time
    /// ([`Archive::genome`]).
    pub fn genome_heads_json(
        &self,
        first: u64,
        mut each: impl FnMut(u64, String) -> bool,
    ) -> Result<(), ArchiveError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, json_set(json_remove(json, '$.content', '$.diff', '$.artifacts', '$.prompt', \
                 '$.response', '$.private', '$.agent'), '$.content', '', \
                 '$.error', substr(json_extract(json, '$.error'), 1, ?2)) \
                 FROM genomes WHERE id >= ?1 ORDER BY id",
            )
            .map_err(|e| corrupt(&self.path, e))?;
        let mut rows = stmt
            .query(params![
                i64::try_from(first).unwrap_or(i64::MAX),
                HEAD_ERROR_CHARS as i64
            ])
            .map_err(|e| corrupt(&self.path, e))?;
        while let Some(row) = rows.next().map_err(|e| corrupt(&self.path, e))? {
            let id = row.get::<_, i64>(0).map_err(|e| corrupt(&self.path, e))? as u64;
            let json = row
                .get::<_, String>(1)
                .map_err(|e| corrupt(&self.path, format!("genome {id}: {e}")))?;
            if !each(id, json) {
                break;
            }
        }
        Ok(())
    }

    /// The newest `n` lines of the run's log, oldest first: (unix time,
    /// level, message).
    pub fn last_events(&self, n: usize) -> Result<Vec<(u64, String, String)>, ArchiveError> {
        let mut stmt = self
            .conn
            .prepare("SELECT unix, level, message FROM (SELECT seq, unix, level, message FROM events ORDER BY seq DESC LIMIT ?1) ORDER BY seq")
            .map_err(|e| corrupt(&self.path, e))?;
        let rows = stmt
            .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?))
            })
            .map_err(|e| corrupt(&self.path, e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(&self.path, e))
    }

    pub fn checkpoint(&self) -> Result<Option<Checkpoint>, ArchiveError> {
        let json: Option<String> = self
            .conn
            .query_row("SELECT json FROM checkpoint WHERE id = 1", [], |r| r.get(0))
            .optional()
            .map_err(|e| corrupt(&self.path, e))?;
        json.map(|j| {
            serde_json::from_str(&j).map_err(|e| corrupt(&self.path, format!("checkpoint: {e}")))
        })
        .transpose()
    }

    pub fn events(&self) -> Result<Vec<(u64, String, String)>, ArchiveError> {
        let mut stmt = self
            .conn
            .prepare("SELECT unix, level, message FROM events ORDER BY seq")
            .map_err(|e| corrupt(&self.path, e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?))
            })
            .map_err(|e| corrupt(&self.path, e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(&self.path, e))
    }

    /// Best valid score and genome count, cheaply (for run lists).
    pub fn quick_stats(&self) -> Result<(u64, Option<f64>, u64), ArchiveError> {
        self.conn
            .query_row("SELECT COUNT(*), MAX(CASE WHEN valid = 1 THEN score END), COALESCE(MAX(iteration), 0) FROM genomes", [], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Option<f64>>(1)?, r.get::<_, i64>(2)? as u64))
            })
            .map_err(|e| corrupt(&self.path, e))
    }

    /// Read everything.
    pub fn contents(&self) -> Result<ArchiveContents, ArchiveError> {
        Ok(ArchiveContents {
            meta: self.meta()?,
            genomes: self.genomes()?,
            checkpoint: self.checkpoint()?,
            events: self.events()?,
        })
    }
}

/// One row of a run list.
#[derive(Clone, Debug, PartialEq)]
pub struct RunListing {
    pub dir: PathBuf,
    pub card: String,
    pub task: String,
    pub status: String,
    pub genomes: u64,
    pub iterations: u64,
    pub best_score: Option<f64>,
    pub started_unix: u64,
    /// The run and genome this run was forked from, when it is a fork.
    pub forked_from: Option<RunOrigin>,
}

/// Every run folder directly under `root`, newest first; unreadable ones are
/// listed with their error as the status.
pub fn list_runs(root: &Path) -> Vec<RunListing> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<RunListing> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(ARCHIVE_FILE).is_file())
        .map(|dir| {
            let read = || -> Result<RunListing, ArchiveError> {
                let a = Archive::open(&dir)?;
                let meta = a.meta()?;
                let (genomes, best_score, iterations) = a.quick_stats()?;
                let card = serde_yaml_name(&meta.card_yaml);
                Ok(RunListing {
                    dir: dir.clone(),
                    card,
                    task: meta
                        .task_dir
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    status: meta.status,
                    genomes,
                    iterations,
                    best_score,
                    started_unix: meta.started_unix,
                    forked_from: meta.forked_from,
                })
            };
            read().unwrap_or_else(|e| RunListing {
                dir: dir.clone(),
                card: String::new(),
                task: String::new(),
                status: format!("unreadable: {e}"),
                genomes: 0,
                iterations: 0,
                best_score: None,
                started_unix: 0,
                forked_from: None,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.started_unix
            .cmp(&a.started_unix)
            .then_with(|| b.dir.cmp(&a.dir))
    });
    out
}

/// The `name:` of a card's YAML without a full parse (what a run list
/// shows).
pub fn card_name(yaml: &str) -> String {
    serde_yaml_name(yaml)
}

/// The `name:` of a card's YAML without a full parse.
fn serde_yaml_name(yaml: &str) -> String {
    yaml.lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map(|v| v.trim().trim_matches(['"', '\'']).to_owned())
        .unwrap_or_default()
}

/// Writes `archive.sqlite`.
pub struct SqliteRecorder {
    conn: Connection,
    path: PathBuf,
    resume: bool,
    /// Blobs and trees stored (or found stored) so far.
    stored: std::collections::HashSet<crate::engine::tree::Digest>,
    checkpointer: Option<Checkpointer>,
}

/// Moves SQLite's WAL checkpoints off the loop's critical path: the writer
/// turns automatic checkpoints off, and this thread runs passive checkpoints
/// (which never block the writer) from its own connection every half second.
/// The run's last commit is followed by a full (TRUNCATE) checkpoint.
/// Dropping it stops the thread at once (its sender is dropped, which wakes
/// the thread's wait), so a run's shutdown does not wait out a tick.
struct Checkpointer {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    const INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

    fn start(path: &Path) -> Option<Self> {
        use std::sync::mpsc::RecvTimeoutError;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let path = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("galapagos-wal".to_owned())
            .spawn(move || {
                let Ok(conn) = Connection::open(&path) else {
                    return;
                };
                conn.busy_timeout(std::time::Duration::from_millis(200))
                    .ok();
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(Self::INTERVAL) {
                    // A failed passive checkpoint is retried next time; the WAL stays valid.
                    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                        .ok();
                }
            })
            .ok()?;
        Some(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
    }
}

impl SqliteRecorder {
    fn open_rw(path: &Path) -> Result<Connection, ArchiveError> {
        let conn = Connection::open(path).map_err(|e| io(path, e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| io(path, e))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| io(path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| io(path, e))?;
        // checkpoints run on the Checkpointer thread, not inside our commits
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(|e| io(path, e))?;
        Ok(conn)
    }

    /// Start a new archive in `dir` (created). Refuses to overwrite one.
    pub fn create(dir: &Path) -> Result<Self, ArchiveError> {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let path = dir.join(ARCHIVE_FILE);
        if path.exists() {
            return Err(io(
                &path,
                "a run archive already exists here; resume it or pick another folder",
            ));
        }
        let conn = Self::open_rw(&path)?;
        conn.execute_batch(SCHEMA).map_err(|e| io(&path, e))?;
        conn.execute_batch(super::blobs::SCHEMA)
            .map_err(|e| io(&path, e))?;
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', ?1)",
            [SCHEMA_VERSION.to_string()],
        )
        .map_err(|e| io(&path, e))?;
        let checkpointer = Checkpointer::start(&path);
        Ok(Self {
            conn,
            path,
            resume: false,
            stored: Default::default(),
            checkpointer,
        })
    }

    /// Reopen an existing archive to continue it (checks the version first,
    /// read-only, so a newer or corrupt archive is never written to).
    pub fn reopen(dir: &Path) -> Result<Self, ArchiveError> {
        drop(Archive::open(dir)?);
        let path = dir.join(ARCHIVE_FILE);
        let conn = Self::open_rw(&path)?;
        // a version 1 archive gets the tables for folder programs
        conn.execute_batch(super::blobs::SCHEMA)
            .map_err(|e| io(&path, e))?;
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [SCHEMA_VERSION.to_string()],
        )
        .map_err(|e| io(&path, e))?;
        let checkpointer = Checkpointer::start(&path);
        Ok(Self {
            conn,
            path,
            resume: true,
            stored: Default::default(),
            checkpointer,
        })
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<(), ArchiveError> {
        self.conn
            .execute("INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value", params![key, value])
            .map(|_| ())
            .map_err(|e| io(&self.path, e))
    }
}

impl RunRecorder for SqliteRecorder {
    fn begin(&mut self, info: &RunInfo, card: &Card, task_dir: &Path) -> Result<(), ArchiveError> {
        self.set_meta("card_yaml", &card.to_yaml())?;
        self.set_meta("task_dir", &task_dir.display().to_string())?;
        self.set_meta("seed", &info.seed.to_string())?;
        self.set_meta("model", &info.model)?;
        self.set_meta("offline", &info.offline.to_string())?;
        self.set_meta("max_iterations", &info.max_iterations.to_string())?;
        self.set_meta("status", "running")?;
        if let Some(origin) = &info.forked_from {
            self.set_meta(FORKED_FROM_RUN, &origin.run.display().to_string())?;
            self.set_meta(FORKED_FROM_GENOME, &origin.genome.to_string())?;
        }
        if let Some(clearance) = &info.clearance {
            let json = serde_json::to_string(clearance).map_err(|e| io(&self.path, e))?;
            self.set_meta(CLEARANCE, &json)?;
        }
        if !self.resume {
            self.set_meta("started_unix", &unix_now().to_string())?;
        }
        self.log(
            LogLevel::Info,
            if self.resume {
                "run resumed"
            } else {
                "run started"
            },
        );
        Ok(())
    }

    fn record_iteration(
        &mut self,
        genomes: &[Arc<Genome>],
        checkpoint: &Checkpoint,
    ) -> Result<(), ArchiveError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|e| io(&path, e))?;
        {
            let mut stmt = tx
                .prepare_cached("INSERT INTO genomes(id, iteration, attempt, parent_id, valid, score, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .map_err(|e| io(&path, e))?;
            for g in genomes {
                let (json, tree) = super::blobs::encode(g).map_err(|e| io(&path, e))?;
                if let Some(tree) = tree {
                    super::blobs::store_tree(&tx, tree, &mut self.stored)
                        .map_err(|e| io(&path, format!("genome {}: {e}", g.id)))?;
                }
                stmt.execute(params![
                    g.id as i64,
                    g.iteration as i64,
                    i64::from(g.attempt),
                    g.parent_id.map(|p| p as i64),
                    g.valid,
                    g.selection_fitness(),
                    json
                ])
                .map_err(|e| io(&path, format!("genome {}: {e}", g.id)))?;
            }
            let ck = serde_json::to_string(checkpoint).map_err(|e| io(&path, e))?;
            tx.execute("INSERT INTO checkpoint(id, json) VALUES (1, ?1) ON CONFLICT(id) DO UPDATE SET json = excluded.json", [ck])
                .map_err(|e| io(&path, e))?;
        }
        tx.commit().map_err(|e| io(&path, e))
    }

    fn log(&mut self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        };
        // The log is best effort: a failing log write must not stop a run.
        self.conn
            .execute(
                "INSERT INTO events(unix, level, message) VALUES (?1, ?2, ?3)",
                params![unix_now() as i64, level, message],
            )
            .ok();
    }

    /// The card a resumed run is built from becomes the new one; the change
    /// joins the list of changes (`settings_changes`, JSON).
    fn settings_changed(
        &mut self,
        card: &Card,
        change: &SettingsChange,
    ) -> Result<(), ArchiveError> {
        let mut all: Vec<SettingsChange> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [SETTINGS_CHANGES],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| io(&self.path, e))?
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default();
        all.push(change.clone());
        let json = serde_json::to_string(&all).map_err(|e| io(&self.path, e))?;
        self.set_meta("card_yaml", &card.to_yaml())?;
        self.set_meta("max_iterations", &card.general.max_iterations.to_string())?;
        self.set_meta(SETTINGS_CHANGES, &json)
    }

    fn clearance_changed(&mut self, clearance: &Clearance) -> Result<(), ArchiveError> {
        let json = serde_json::to_string(clearance).map_err(|e| io(&self.path, e))?;
        self.set_meta(CLEARANCE, &json)
    }

    fn finish(&mut self, summary: &RunSummary) -> Result<(), ArchiveError> {
        self.set_meta("status", &summary.status.label())?;
        // The checkpoint holds the run's wall time at its last iteration;
        // an invocation that ends cleanly adds what it spent after that.
        let json: Option<String> = self
            .conn
            .query_row("SELECT json FROM checkpoint WHERE id = 1", [], |r| r.get(0))
            .optional()
            .map_err(|e| io(&self.path, e))?;
        if let Some(mut ck) = json.and_then(|j| serde_json::from_str::<Checkpoint>(&j).ok()) {
            ck.wall_secs = ck.wall_secs.max(summary.run_wall_secs);
            let json = serde_json::to_string(&ck).map_err(|e| io(&self.path, e))?;
            self.conn
                .execute("UPDATE checkpoint SET json = ?1 WHERE id = 1", [json])
                .map_err(|e| io(&self.path, e))?;
        }
        self.set_meta("ended_unix", &unix_now().to_string())?;
        self.log(
            LogLevel::Info,
            &format!("run ended: {}", summary.status.label()),
        );
        drop(self.checkpointer.take());
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(|e| io(&self.path, e))
    }
}
