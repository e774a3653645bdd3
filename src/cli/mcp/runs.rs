//! The tools that read and change runs through the run service
//! ([`crate::engine::service`]): a live run answers on its folder's socket,
//! a finished one from its folder, a run on a server through the user's
//! `ssh` (`ssh://[user@]host[:port]/path`). `run_status`, `list_runs`,
//! `compare_runs`, `get_genome`, `steer_run` and `apply_genome`.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::reply::{OneOrMany, Outcome};
use crate::engine::events::{LogLevel, RunSummary};
use crate::engine::genome::Genome;
use crate::engine::service::protocol::{Message, Reply, RequestBody, RunRow, RunState};
use crate::engine::service::{Client, ClientError, ConnectOptions, Target};

/// Characters of one artifact (evaluator output) a genome's answer holds.
const ARTIFACT_CHARS: usize = 4000;
/// Error and warning lines of the run's log `run_status` gives.
const LAST_ERRORS: usize = 5;
/// How long a snapshot of the run's state may take.
const SNAPSHOT: Duration = Duration::from_secs(20);

fn options(read_only: bool) -> ConnectOptions {
    ConnectOptions {
        read_only,
        ..ConnectOptions::new("galapagos mcp")
    }
}

/// The run an argument names: a folder here or `ssh://…`.
fn target(run: &str) -> Result<Target, String> {
    if run.trim().is_empty() {
        return Err(
            "run: empty: give the run folder start_run returned (or ssh://host/path)".into(),
        );
    }
    let target = Target::parse(run).map_err(|e| format!("run: {e}"))?;
    if let Target::Local(dir) = &target
        && !dir.is_dir()
    {
        return Err(format!(
            "run: {run}: no such folder (give the folder start_run returned, or list_runs)"
        ));
    }
    Ok(target)
}

/// Why a request to a run failed: what to say, and whether the
/// connection closed under it (a live run that ended between the
/// connection and the answer: its folder answers when asked again).
struct Fail {
    message: String,
    closed: bool,
}

impl Fail {
    fn of(run: &str, e: &ClientError) -> Self {
        Self {
            message: format!("run {run}: {e}"),
            closed: matches!(e, ClientError::Closed(_)),
        }
    }
}

impl From<String> for Fail {
    fn from(message: String) -> Self {
        Self {
            message,
            closed: false,
        }
    }
}

/// Times a request is made again after its connection closed under it.
const AGAIN: usize = 3;

/// `work`, made again while its connection closes under it (see [`Fail`]).
async fn again<F, Fut>(mut work: F) -> Outcome
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Value, Fail>>,
{
    let mut tries = 0;
    loop {
        match work().await {
            Ok(v) => return Ok(v),
            Err(f) if f.closed && tries < AGAIN => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(f) => return Err(f.message),
        }
    }
}

async fn connect(run: &str, read_only: bool) -> Result<Client, Fail> {
    let target = target(run)?;
    Client::connect(&target, &options(read_only))
        .await
        .map_err(|e| Fail::of(run, &e))
}

async fn row(client: &Client, run: &str) -> Result<RunRow, Fail> {
    match client.request(RequestBody::Status).await {
        Ok(Reply::Status(row)) => Ok(row),
        Ok(other) => Err(format!("run {run}: an unexpected answer: {other:?}").into()),
        Err(e) => Err(Fail::of(run, &e)),
    }
}

async fn summary(client: &Client, run: &str) -> Result<Option<RunSummary>, Fail> {
    match client.request(RequestBody::Summary).await {
        Ok(Reply::Summary(s)) => Ok(s),
        Ok(other) => Err(format!("run {run}: an unexpected answer: {other:?}").into()),
        Err(e) => Err(Fail::of(run, &e)),
    }
}

/// The run's state (log, steering, paused) from a snapshot without the
/// genomes.
async fn state(client: &Client) -> Option<RunState> {
    let (_, _, mut stream) = client.subscribe(None, false).await.ok()?;
    let read = async {
        let mut state = None;
        while let Some(m) = stream.recv().await {
            match m {
                Message::Snapshot(s) => state = Some(s.state),
                Message::Synced { .. } | Message::Ended { .. } => break,
                _ => {}
            }
        }
        state
    };
    tokio::time::timeout(SNAPSHOT, read).await.ok().flatten()
}

/// True when a run's state word means it is over.
fn over(state: &str) -> bool {
    !matches!(state, "running" | "paused")
}

/// `run_status`.
pub(super) async fn status(run: &str) -> Outcome {
    again(|| status_once(run)).await
}

async fn status_once(run: &str) -> Result<Value, Fail> {
    let client = connect(run, true).await?;
    let row = row(&client, run).await?;
    let summary = summary(&client, run).await?;
    let state = state(&client).await.unwrap_or_default();
    let said: Vec<String> = state
        .logs
        .iter()
        .filter(|(level, _)| *level >= LogLevel::Warn)
        .map(|(level, m)| {
            let level = if *level == LogLevel::Error {
                "error"
            } else {
                "warning"
            };
            format!("{level}: {m}")
        })
        .collect();
    let last_errors = &said[said.len().saturating_sub(LAST_ERRORS)..];
    let usage = summary.as_ref().map(|s| &s.usage);
    Ok(json!({
        "run": row.dir,
        "card": row.card,
        "task": row.task,
        "state": row.state,
        "done": over(&row.state),
        "live": row.live,
        "iteration": row.iterations,
        "max_iterations": row.max_iterations,
        "genomes": row.genomes,
        "valid": summary.as_ref().map(|s| s.valid),
        "invalid": summary.as_ref().map(|s| s.invalid),
        "best_id": summary.as_ref().and_then(|s| s.best_id),
        "best_score": row.best_score.or_else(|| summary.as_ref().and_then(|s| s.best_score)),
        "initial_score": summary.as_ref().and_then(|s| s.initial_score),
        "tokens": usage.map(|u| json!({
            "prompt": u.prompt_tokens,
            "completion": u.completion_tokens,
            "cached": u.cached_tokens,
        })),
        "cost_usd": row.cost_usd.or_else(|| usage.and_then(|u| u.cost_usd)),
        "notes": state.steering.notes,
        "pinned": state.steering.pins.iter().map(|p| p.genome).collect::<Vec<_>>(),
        "paused": state.paused,
        "last_errors": last_errors,
    }))
}

/// `list_runs`: the runs under a folder (default: the one `start_run`
/// records in).
pub(super) async fn list(folder: Option<&str>) -> Outcome {
    let folder = folder.map_or_else(
        || {
            crate::cli::remote::default_runs_folder()
                .display()
                .to_string()
        },
        str::to_owned,
    );
    if !folder.starts_with(crate::engine::service::target::SSH_SCHEME)
        && !Path::new(&folder).is_dir()
    {
        return Ok(json!({"folder": folder, "runs": []}));
    }
    again(|| async {
        let client = connect(&folder, true).await?;
        match client.request(RequestBody::Runs).await {
            Ok(Reply::Runs(rows)) => Ok(json!({"folder": folder, "runs": rows})),
            Ok(other) => Err(format!("{folder}: an unexpected answer: {other:?}").into()),
            Err(e) => Err(Fail::of(&folder, &e)),
        }
    })
    .await
}

/// `compare_runs`: each run's standing side by side, the best first.
pub(super) async fn compare(runs: &[String]) -> Outcome {
    if runs.is_empty() {
        return Err("compare_runs: runs: give at least one run folder".into());
    }
    let mut rows = Vec::new();
    for run in runs {
        rows.push(again(|| compared(run)).await?);
    }
    let score = |v: &Value| v["best_score"].as_f64().unwrap_or(f64::NEG_INFINITY);
    rows.sort_by(|a, b| score(b).total_cmp(&score(a)));
    let best = rows.first().map(|r| r["run"].clone());
    Ok(json!({"runs": rows, "best": best}))
}

/// One run's row of `compare_runs`.
async fn compared(run: &str) -> Result<Value, Fail> {
    let client = connect(run, true).await?;
    let row = row(&client, run).await?;
    let summary = summary(&client, run).await?;
    Ok(json!({
            "run": run,
            "card": row.card,
            "task": row.task,
            "state": row.state,
            "iterations": row.iterations,
            "max_iterations": row.max_iterations,
            "genomes": row.genomes,
            "best_score": row.best_score,
            "best_id": summary.as_ref().and_then(|s| s.best_id),
            "initial_score": summary.as_ref().and_then(|s| s.initial_score),
            "tokens": summary.as_ref().map(|s| s.usage.prompt_tokens + s.usage.completion_tokens),
            "cost_usd": row.cost_usd,
            "wall_secs": summary.as_ref().map(|s| s.wall_secs),
    }))
}

/// `get_genome`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GenomeArgs {
    pub run: String,
    #[serde(default)]
    pub id: Option<u64>,
}

fn capped(text: &str) -> Value {
    if text.chars().count() <= ARTIFACT_CHARS {
        Value::String(text.to_owned())
    } else {
        let cut: String = text.chars().take(ARTIFACT_CHARS).collect();
        Value::String(format!(
            "{cut}\n… ({} characters in all)",
            text.chars().count()
        ))
    }
}

fn genome_json(g: &Genome) -> Value {
    let mut out = json!({
        "id": g.id,
        "parent": g.parent_id,
        "inspirations": g.inspiration_ids,
        "iteration": g.iteration,
        "valid": g.valid,
        "fitness": g.fitness(),
        "scores": g.scores,
        "error": g.error,
        "diff": g.diff,
        "artifacts": g.artifacts.iter().map(|(k, v)| (k.clone(), capped(v))).collect::<serde_json::Map<_, _>>(),
        "usage": g.usage,
    });
    if let Some(text) = g.content.single_text() {
        out["program"] = Value::String(text.to_owned());
    } else {
        let files: serde_json::Map<String, Value> = g
            .content
            .files()
            .map(|(path, blob)| {
                let v = blob.as_text().map_or_else(
                    || Value::String(format!("(binary, {} bytes)", blob.len())),
                    |t| Value::String(t.to_owned()),
                );
                (path.to_owned(), v)
            })
            .collect();
        out["files"] = Value::Object(files);
    }
    out
}

/// `get_genome`: genome `id`, or the run's best.
pub(super) async fn genome(args: GenomeArgs) -> Outcome {
    again(|| genome_once(&args)).await
}

async fn genome_once(args: &GenomeArgs) -> Result<Value, Fail> {
    let client = connect(&args.run, true).await?;
    let id = match args.id {
        Some(id) => id,
        None => summary(&client, &args.run)
            .await?
            .and_then(|s| s.best_id)
            .ok_or_else(|| {
                format!(
                    "run {}: no valid genome yet (run_status says how far it is)",
                    args.run
                )
            })?,
    };
    let g = client.genome(id).await.map_err(|e| Fail {
        message: format!("run {}: genome {id}: {e}", args.run),
        closed: matches!(e, ClientError::Closed(_)),
    })?;
    let mut out = genome_json(&g);
    out["best"] = Value::Bool(args.id.is_none());
    Ok(out)
}

/// `steer_run`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SteerArgs {
    pub run: String,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub pin: OneOrMany<u64>,
    #[serde(default)]
    pub unpin: OneOrMany<u64>,
    #[serde(default)]
    pub pause: bool,
    #[serde(default)]
    pub resume: bool,
    #[serde(default)]
    pub stop: bool,
}

/// `steer_run`: the changes sent as `galapagos steer` sends them, once the
/// run shows each taken.
pub(super) async fn steer(args: SteerArgs) -> Outcome {
    if args.pause && args.resume {
        return Err("steer_run: pause and resume at once: pick one".into());
    }
    let changes = crate::cli::steer_live::LiveChanges {
        notes: args.notes,
        unpin: args.unpin.into_vec(),
        pin: args.pin.into_vec(),
        settings: None,
        pause: args.pause,
        resume: args.resume,
        stop: args.stop,
    };
    if changes.notes.is_none()
        && changes.pin.is_empty()
        && changes.unpin.is_empty()
        && !changes.pause
        && !changes.resume
        && !changes.stop
    {
        return Err(
            "steer_run: nothing to change: give notes, pin, unpin, pause, resume or stop".into(),
        );
    }
    let target = target(&args.run)?;
    let out = crate::cli::steer_live::steer_live(&target, &options(false), changes)
        .await
        .map_err(|e| format!("steer_run: {e}"))?;
    let answer = json!({
        "run": args.run,
        "notes": out.state.steering.notes,
        "pinned": out.state.steering.pins.iter().map(|p| p.genome).collect::<Vec<_>>(),
        "paused": out.state.paused,
        "ended": out.ended,
        "errors": out.errors,
    });
    if out.errors.is_empty() {
        Ok(answer)
    } else {
        Err(format!(
            "steer_run: {}\n(the run's steering now: {answer})",
            out.errors.join("; ")
        ))
    }
}

/// `apply_genome`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApplyArgs {
    pub run: String,
    #[serde(default)]
    pub id: Option<u64>,
    pub to: String,
}

/// `apply_genome`: `galapagos apply` without `--force`: files with local
/// changes are never overwritten.
pub(super) async fn apply(args: ApplyArgs) -> Outcome {
    if args.to.trim().is_empty() {
        return Err("apply_genome: to: empty: give the folder to write the program into".into());
    }
    let to = std::path::PathBuf::from(&args.to);
    let done = match target(&args.run)? {
        Target::Local(dir) => {
            let (genome, to) = (args.id, to.clone());
            tokio::task::spawn_blocking(move || {
                crate::engine::takeout::apply(&dir, genome, &to, false)
            })
            .await
            .map_err(|e| format!("apply_genome: {e}"))?
        }
        remote @ Target::Ssh(_) => {
            let client = Client::connect(&remote, &options(true))
                .await
                .map_err(|e| format!("run {}: {e}", args.run))?;
            let (genome, program, initial) = match client
                .request(RequestBody::Program { genome: args.id })
                .await
            {
                Ok(Reply::Program {
                    genome,
                    program,
                    initial,
                }) => (genome, program, initial),
                Ok(other) => return Err(format!("an unexpected answer: {other:?}")),
                Err(e) => return Err(format!("run {}: {e}", args.run)),
            };
            let to = to.clone();
            tokio::task::spawn_blocking(move || {
                crate::engine::takeout::apply_files(
                    genome,
                    &program,
                    &initial,
                    std::iter::empty(),
                    &to,
                    false,
                )
            })
            .await
            .map_err(|e| format!("apply_genome: {e}"))?
        }
    };
    match done {
        Ok(done) => Ok(json!({
            "genome": done.genome,
            "to": args.to,
            "written": done.written,
            "deleted": done.deleted,
            "unchanged": done.unchanged,
        })),
        Err(e @ crate::engine::takeout::TakeoutError::LocalChanges { .. }) => Err(format!(
            "apply_genome: {e}\n(galapagos mcp never overwrites local changes: ask the person to commit or \
             move them, or to run `galapagos apply {} --to {} --force` themselves)",
            args.run, args.to
        )),
        Err(e) => Err(format!("apply_genome: {e}")),
    }
}
