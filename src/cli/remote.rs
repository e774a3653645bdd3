//! Runs elsewhere: `galapagos runs [FOLDER]` (the runs under a folder,
//! here or `ssh://host/folder`), `galapagos attach TARGET` (a live view of a
//! run until it ends or Ctrl-C, then its summary), `galapagos serve --stdio
//! PATH` (what a client's ssh runs on the server), and `export-run` and
//! `apply` of a run on a server. Each speaks the run service's protocol
//! ([`crate::engine::service`]), to a server through the user's `ssh`, or
//! on this machine to a live run's socket or to the folder itself.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::engine::events::{LogLevel, RunEvent, RunStatus, RunSummary};
use crate::engine::genome::TokenUsage;
use crate::engine::service::protocol::{Reply, RequestBody, RunRow};
use crate::engine::service::{Client, ConnectOptions, Follow, SshOptions, Target, Update};

use super::report::{FitnessLabels, Progress, print_summary};

/// How a server is reached (each also read from the environment).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RemoteArgs {
    /// An ssh config file for ssh:// targets (`ssh -F FILE`; also GALAPAGOS_SSH_CONFIG). The ssh
    /// command itself is GALAPAGOS_SSH (default `ssh`).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// The galapagos command on the server (default `galapagos` on the server's PATH; also
    /// GALAPAGOS_REMOTE).
    #[arg(long, value_name = "CMD")]
    pub remote_galapagos: Option<String>,
}

impl RemoteArgs {
    /// Connection options for `client`, a watcher's when `read_only`.
    pub fn options(&self, client: &str, read_only: bool) -> ConnectOptions {
        ConnectOptions {
            ssh: SshOptions::from_env(self.ssh_config.as_deref(), self.remote_galapagos.as_deref()),
            read_only,
            ..ConnectOptions::new(client)
        }
    }
}

/// A runtime for one command.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, i32> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the runtime: {e}");
            1
        })
}

/// The folder `galapagos runs` lists by default: `runs` here when there is
/// one (where `galapagos run` records by default), else the studio's.
pub fn default_runs_folder() -> PathBuf {
    let here = PathBuf::from("runs");
    if here.is_dir() {
        here
    } else {
        crate::engine::builtin::data_dir().join("runs")
    }
}

fn parse_target(text: &Path) -> Result<Target, i32> {
    Target::of_path(text).map_err(|e| {
        eprintln!("error: {e}");
        2
    })
}

/// `galapagos runs [FOLDER]`.
pub fn runs(folder: Option<&Path>, remote: &RemoteArgs) -> i32 {
    let folder = folder.map_or_else(default_runs_folder, Path::to_path_buf);
    let target = match parse_target(&folder) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if let Target::Local(dir) = &target
        && !dir.is_dir()
    {
        eprintln!("error: {}: no such folder", dir.display());
        return 2;
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let options = remote.options("galapagos runs", true);
    let rows = rt.block_on(async {
        let client = Client::connect(&target, &options).await?;
        match client.request(RequestBody::Runs).await? {
            Reply::Runs(rows) => Ok(rows),
            other => Err(crate::engine::service::ClientError::Request(format!(
                "an unexpected answer: {other:?}"
            ))),
        }
    });
    match rows {
        Ok(rows) => {
            print_rows(&target, &rows);
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn print_rows(target: &Target, rows: &[RunRow]) {
    if rows.is_empty() {
        println!("no runs in {target}");
        return;
    }
    println!(
        "{:<22} {:>13} {:>8} {:>12} {:>9}  {:<15} RUN",
        "STATE", "ITERATIONS", "GENOMES", "BEST", "COST", "STARTED (UTC)"
    );
    for r in rows {
        let state: String = r.state.chars().take(22).collect();
        let best = r
            .best_score
            .map_or_else(|| "-".to_owned(), |b| format!("{b:.6}"));
        let cost = r
            .cost_usd
            .map_or_else(|| "-".to_owned(), |c| format!("${c:.4}"));
        let started = if r.started_unix == 0 {
            "-".to_owned()
        } else {
            crate::engine::archive::timestamp(r.started_unix)
        };
        let name = Path::new(&r.dir)
            .file_name()
            .map_or_else(|| r.dir.clone(), |n| n.to_string_lossy().into_owned());
        println!(
            "{state:<22} {:>13} {:>8} {best:>12} {cost:>9}  {started:<15} {name}",
            format!("{}/{}", r.iterations, r.max_iterations),
            r.genomes,
        );
    }
}

/// `galapagos serve --stdio PATH`.
pub fn serve(path: &Path, read_only: bool) -> i32 {
    crate::engine::service::stdio::serve_stdio(path, read_only)
}

/// What `attach` counts from the events.
#[derive(Default)]
struct Tally {
    valid: u64,
    invalid: u64,
    best_id: Option<u64>,
    best: Option<f64>,
    iterations: u64,
    usage: TokenUsage,
    /// Genomes held (the next id expected).
    genomes: u64,
    model: String,
    max_iterations: u64,
    summary: Option<RunSummary>,
    labels: Option<FitnessLabels>,
}

impl Tally {
    fn summary(&self, started: Instant) -> RunSummary {
        self.summary.clone().unwrap_or_else(|| RunSummary {
            status: RunStatus::Failed("not ended: detached from the run, which goes on".to_owned()),
            iterations: self.iterations,
            genomes: self.genomes,
            valid: self.valid,
            invalid: self.invalid,
            rejected: 0,
            best_id: self.best_id,
            best_score: self.best,
            initial_score: None,
            usage: self.usage,
            wall_secs: started.elapsed().as_secs_f64(),
            run_wall_secs: started.elapsed().as_secs_f64(),
        })
    }
}

/// `galapagos attach TARGET`: follow a run until it ends (or Ctrl-C), then
/// print its summary. A dropped connection is retried with backoff and the
/// stream resumes where it was.
pub fn attach(
    target: &Path,
    quiet: bool,
    verbose: bool,
    read_only: bool,
    remote: &RemoteArgs,
) -> i32 {
    let target = match parse_target(target) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if let Target::Local(dir) = &target
        && !dir.join(crate::engine::archive::ARCHIVE_FILE).is_file()
    {
        eprintln!(
            "error: {}: not a run folder (no archive.sqlite)",
            dir.display()
        );
        return 2;
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let options = remote.options("galapagos attach", read_only);
    let started = Instant::now();
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal() && !verbose,
        quiet,
        total: 0,
        last_draw: Instant::now(),
        last_line: None,
    };
    let mut tally = Tally::default();
    let mut printed: u64 = 0;
    let mut ended: Option<String> = None;
    let mut failed: Option<String> = None;
    let mut interrupted = false;
    rt.block_on(async {
        let mut follow = Follow::start(target.clone(), options, true);
        let mut held_since_reset: u64 = 0;
        loop {
            let update = tokio::select! {
                u = follow.updates.recv() => u,
                _ = tokio::signal::ctrl_c() => {
                    interrupted = true;
                    None
                }
            };
            let Some(update) = update else { break };
            match update {
                Update::Connecting { attempt } if attempt == 0 && !quiet => {
                    eprintln!("connecting to {target}");
                }
                Update::Connecting { .. } => {}
                Update::Connected { welcome, resumed } => {
                    if !quiet {
                        progress.clear();
                        let what = if welcome.live {
                            "a live run"
                        } else {
                            "a recorded run"
                        };
                        if resumed {
                            eprintln!("reconnected to {what}: resumed where the stream left off");
                        } else {
                            eprintln!(
                                "attached to {what} at {}{}",
                                welcome.path,
                                if welcome.read_only {
                                    " (read-only)"
                                } else {
                                    ""
                                }
                            );
                        }
                    }
                }
                Update::Lost { error, retry_in } => {
                    progress.clear();
                    eprintln!(
                        "connection lost ({error}); reconnecting in {:.1} s",
                        retry_in.as_secs_f64()
                    );
                }
                Update::Reset { .. } => {
                    let labels = tally.labels.take();
                    tally = Tally {
                        labels,
                        ..Tally::default()
                    };
                    held_since_reset = 0;
                }
                Update::Synced | Update::Running(_) => {}
                Update::Event(event) => {
                    apply(
                        &event,
                        &mut tally,
                        &mut progress,
                        &mut printed,
                        &mut held_since_reset,
                        verbose,
                        quiet,
                    );
                }
                Update::Ended { status } => {
                    ended = Some(status);
                    break;
                }
                Update::Failed(why) => {
                    failed = Some(why);
                    break;
                }
            }
        }
    });
    progress.clear();
    if let Some(why) = failed {
        eprintln!("error: {why}");
        return 1;
    }
    if interrupted {
        eprintln!("detached: the run goes on (attach again to follow it)");
    }
    let summary = tally.summary(started);
    let labels = tally.labels.take().unwrap_or_else(|| FitnessLabels {
        best: "fitness".to_owned(),
        initial: "fitness".to_owned(),
    });
    print_summary(
        &summary,
        Path::new(&target.to_string()),
        &tally.model,
        &labels,
    );
    if interrupted {
        return 0;
    }
    match (&summary.status, ended) {
        (RunStatus::Completed | RunStatus::BudgetReached(_) | RunStatus::EarlyStop(_), _) => 0,
        (RunStatus::Stopped, _) => 130,
        (RunStatus::Failed(msg), status) => {
            eprintln!("error: {}", status.unwrap_or_else(|| msg.clone()));
            1
        }
    }
}

/// Take in one event: the tally, the progress, the verbose lines.
fn apply(
    event: &RunEvent,
    tally: &mut Tally,
    progress: &mut Progress,
    printed: &mut u64,
    held: &mut u64,
    verbose: bool,
    quiet: bool,
) {
    match event {
        RunEvent::Started(info) => {
            tally.model.clone_from(&info.model);
            tally.max_iterations = info.max_iterations;
            progress.total = info.max_iterations;
            if !quiet {
                progress.clear();
                eprintln!(
                    "{} on {} for {} iterations with {}",
                    info.card_name, info.task_name, info.max_iterations, info.model
                );
            }
        }
        RunEvent::GenomeAdmitted {
            genome,
            best_id,
            best_score,
            iterations_done,
            ..
        } => {
            if genome.id < *held {
                // never expected: the service leaves out what a client holds
                progress.clear();
                eprintln!("warning: genome #{} received twice", genome.id);
            }
            *held = (*held).max(genome.id + 1);
            tally.genomes = tally.genomes.max(genome.id + 1);
            if genome.valid {
                tally.valid += 1;
            } else {
                tally.invalid += 1;
            }
            if let Some(u) = &genome.usage {
                tally.usage.add(u);
            }
            tally.best_id = *best_id;
            tally.best = *best_score;
            tally.iterations = *iterations_done;
            let labels = tally.labels.get_or_insert_with(|| FitnessLabels {
                best: "fitness".to_owned(),
                initial: "fitness".to_owned(),
            });
            if *best_id == Some(genome.id) {
                labels.best = genome.fitness_basis().to_string();
            }
            if genome.id == 0 {
                labels.initial = genome.fitness_basis().to_string();
            }
            if verbose && genome.id >= *printed {
                *printed = genome.id + 1;
                let score = genome.fitness().map_or_else(
                    || format!("invalid: {}", genome.error.as_deref().unwrap_or("")),
                    |f| format!("{} {f:.6}", genome.fitness_basis()),
                );
                println!(
                    "admitted genome {} iteration {} attempt {}: {score}",
                    genome.id, genome.iteration, genome.attempt
                );
            }
            progress.draw(
                tally.iterations,
                tally.valid,
                tally.invalid,
                tally.best,
                false,
            );
        }
        RunEvent::Log { level, message } if *level >= LogLevel::Warn || verbose => {
            progress.clear();
            let tag = match level {
                LogLevel::Info => "info",
                LogLevel::Warn => "warning",
                LogLevel::Error => "error",
            };
            eprintln!("{tag}: {message}");
        }
        RunEvent::Paused if !quiet => {
            progress.clear();
            eprintln!("the run is paused");
        }
        RunEvent::Resumed if !quiet => {
            progress.clear();
            eprintln!("the run resumed");
        }
        RunEvent::SettingsChanged(change) => {
            tally.max_iterations = change.max_iterations;
            progress.total = change.max_iterations;
        }
        RunEvent::Finished(s) => {
            tally.iterations = tally.iterations.max(s.iterations);
            progress.draw(s.iterations, tally.valid, tally.invalid, s.best_score, true);
            let mut s = s.clone();
            // a recorded run's usage is the sum over its genomes when the
            // tally it kept has none
            if s.usage == TokenUsage::default() {
                s.usage = tally.usage;
            }
            tally.summary = Some(s);
        }
        _ => {}
    }
    std::io::stdout().flush().ok();
}

/// Wait at most this long for a remote answer in `export-run` and `apply`.
const TAKEOUT_TIMEOUT: Duration = Duration::from_secs(600);

/// `galapagos export-run --jsonl ssh://…`: the server's record as JSON
/// lines, written here.
pub fn export_run(target: &Target, out: Option<&Path>, remote: &RemoteArgs) -> i32 {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let mut options = remote.options("galapagos export-run", true);
    options.timeout = TAKEOUT_TIMEOUT;
    let mut sink: Box<dyn std::io::Write> = match out {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Box::new(std::io::BufWriter::new(f)),
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return 1;
            }
        },
        None => Box::new(std::io::stdout().lock()),
    };
    let mut count = 0usize;
    let done = rt.block_on(async {
        let client = Client::connect(target, &options).await?;
        client
            .export(|lines| {
                for line in lines {
                    sink.write_all(line.as_bytes())
                        .and_then(|()| sink.write_all(b"\n"))
                        .map_err(|e| e.to_string())?;
                    count += 1;
                }
                Ok(())
            })
            .await
    });
    if let Err(e) = done
        .map_err(|e| e.to_string())
        .and_then(|()| sink.flush().map_err(|e| e.to_string()))
    {
        eprintln!("error: {e}");
        return 1;
    }
    if let Some(path) = out {
        eprintln!("wrote {count} genomes to {}", path.display());
    }
    0
}

/// `galapagos apply ssh://… --to DIR`: a genome's program from the server,
/// written here as a local `apply` writes it.
pub fn apply_program(
    target: &Target,
    genome: Option<u64>,
    to: &Path,
    force: bool,
    remote: &RemoteArgs,
) -> i32 {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let mut options = remote.options("galapagos apply", true);
    options.timeout = TAKEOUT_TIMEOUT;
    let got = rt.block_on(async {
        let client = Client::connect(target, &options).await?;
        client.request(RequestBody::Program { genome }).await
    });
    let (genome, program, initial) = match got {
        Ok(Reply::Program {
            genome,
            program,
            initial,
        }) => (genome, program, initial),
        Ok(other) => {
            eprintln!("error: an unexpected answer: {other:?}");
            return 1;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    super::report::report_applied(
        crate::engine::takeout::apply_files(
            genome,
            &program,
            &initial,
            std::iter::empty(),
            to,
            force,
        ),
        to,
    )
}
