//! Remote runs over ssh on loopback (not a timed test; needs Debian's
//! `openssh-server`, as the remote-run tests do):
//!
//! 1. History: a recorded run of 100,000 synthetic genomes (`common::genome`,
//!    written with the engine's `SqliteRecorder` in batches of 1,000), and
//!    the time for a client to hold its whole history over ssh: connect
//!    (ssh's own handshake included) until the snapshot is in, in this
//!    process through the service client; and `galapagos attach --quiet`
//!    from start to exit.
//! 2. Live: a run served on its socket, committing about 50 genomes a
//!    second (the test evaluator waits 20 ms per child, one in flight), is
//!    followed over ssh; for each genome, the time from its event reaching
//!    the run's own consumer (after its commit) to its head reaching the
//!    client.
//!
//! `cargo bench --bench remote_attach` (GENOMES=N to change the size).
//! The memory a client adds by holding that history is measured too: every
//! genome's head in the engine's `Heads`, the list the studio's run history
//! holds them in (its bodies are fetched when a genome is looked at).
//!
//! Targets: history under 2 s at 100,000 genomes, under 50 MB held; live
//! under 200 ms.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use galapagos::engine::archive::{Checkpoint, RunRecorder, SqliteRecorder};
use galapagos::engine::card::Card;
use galapagos::engine::events::{RunEvent, RunInfo, RunStatus, RunSummary};
use galapagos::engine::genome::{Genome, TokenUsage};
use galapagos::engine::head::Heads;
use galapagos::engine::redact::Redactor;
use galapagos::engine::rng::seeded;
use galapagos::engine::service::{
    ConnectOptions, Follow, ServeContext, SshOptions, Target, Update,
};

mod common;
#[path = "common/rss.rs"]
mod rss;
use rss::rss_mib;

#[path = "../tests/common/sshd.rs"]
#[allow(dead_code, reason = "the bench uses part of the tests' sshd")]
mod sshd;

const BATCH: u64 = 1_000;

fn write_archive(dir: &Path, n: u64) -> Result<(), String> {
    let mut rec = SqliteRecorder::create(dir).map_err(|e| e.to_string())?;
    let card = Card::new_default("bench");
    let info = RunInfo {
        card_name: "bench".to_owned(),
        task_name: "synthetic".to_owned(),
        max_iterations: n,
        model: "offline model (built-in, no network)".to_owned(),
        offline: true,
        seed: 0,
        parallel: 1,
        run_dir: Some(dir.to_path_buf()),
        unsandboxed: None,
        forked_from: None,
        clearance: None,
    };
    rec.begin(&info, &card, Path::new("synthetic"))
        .map_err(|e| e.to_string())?;
    let mut next = 0u64;
    while next < n {
        let end = (next + BATCH).min(n);
        let batch: Vec<Arc<Genome>> = (next..end).map(|i| Arc::new(common::genome(i))).collect();
        let ck = Checkpoint {
            iterations_done: end - 1,
            last_iteration: end - 1,
            next_id: end,
            rng: seeded(0),
            policy: serde_json::Value::Null,
            memory: serde_json::Value::Null,
            usage: TokenUsage::default(),
            valid: 0,
            invalid: 0,
            rejected: 0,
            wall_secs: 0.0,
            steering: Default::default(),
        };
        rec.record_iteration(&batch, &ck)
            .map_err(|e| e.to_string())?;
        next = end;
    }
    rec.finish(&RunSummary {
        iterations: n - 1,
        genomes: n,
        ..RunSummary::empty(RunStatus::Completed)
    })
    .map_err(|e| e.to_string())
}

fn options(sshd: &sshd::Sshd) -> ConnectOptions {
    ConnectOptions {
        ssh: SshOptions {
            ssh: vec!["ssh".to_owned()],
            config: Some(sshd.client_config()),
            remote: env!("CARGO_BIN_EXE_galapagos").to_owned(),
        },
        read_only: true,
        ..ConnectOptions::new("remote_attach bench")
    }
}

fn target(sshd: &sshd::Sshd, dir: &Path) -> Result<Target, String> {
    Target::parse(&sshd.target(dir))
}

/// Follow `target` until its snapshot is in: the genomes held, the time.
async fn history(target: Target, options: ConnectOptions) -> Result<(u64, Duration), String> {
    let start = Instant::now();
    let mut follow = Follow::start(target, options, true);
    let mut genomes = 0u64;
    while let Some(u) = follow.updates.recv().await {
        match u {
            Update::Event(RunEvent::GenomeAdmitted { .. }) => genomes += 1,
            Update::Synced => return Ok((genomes, start.elapsed())),
            Update::Failed(why) => return Err(why),
            _ => {}
        }
    }
    Err("the follow ended before its snapshot".to_owned())
}

/// Follow `target` until its snapshot is in, keeping every genome it
/// admits as the studio's run history does (a [`Heads`]): the resident
/// memory that added, in MiB.
async fn held_history(target: Target, options: ConnectOptions) -> Result<(usize, f64), String> {
    let before = rss_mib();
    let mut follow = Follow::start(target, options, true);
    let mut held = Heads::new();
    while let Some(u) = follow.updates.recv().await {
        match u {
            Update::Event(RunEvent::GenomeAdmitted { genome, .. }) => {
                held.push(&genome);
            }
            Update::Synced => return Ok((held.len(), rss_mib() - before)),
            Update::Failed(why) => return Err(why),
            _ => {}
        }
    }
    Err("the follow ended before its snapshot".to_owned())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() -> Result<(), String> {
    let n: u64 = std::env::var("GENOMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let Some(sshd) = sshd::Sshd::start() else {
        return Err("no sshd: install openssh-server".to_owned());
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;

    // 1. history
    let dir = tmp.path().join("big-run");
    let t = Instant::now();
    write_archive(&dir, n)?;
    let size = std::fs::metadata(dir.join("archive.sqlite")).map_or(0, |m| m.len());
    println!(
        "wrote {n} genomes (archive {:.0} MB) in {:.1} s",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let o = Command::new("ssh")
        .arg("-F")
        .arg(sshd.client_config())
        .args(["-p", &sshd.port.to_string(), "127.0.0.1", "true"])
        .output()
        .map_err(|e| e.to_string())?;
    let handshake = t.elapsed();
    if !o.status.success() {
        return Err(format!("ssh: {}", String::from_utf8_lossy(&o.stderr)));
    }
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(rt.block_on(history(target(&sshd, &dir)?, options(&sshd)))?);
    }
    let (held, added) = rt.block_on(held_history(target(&sshd, &dir)?, options(&sshd)))?;
    let t = Instant::now();
    let o = sshd
        .galapagos()
        .args(["attach", &sshd.target(&dir), "--quiet"])
        .output()
        .map_err(|e| e.to_string())?;
    let attach = t.elapsed();
    if !o.status.success() {
        return Err(format!("attach: {}", String::from_utf8_lossy(&o.stderr)));
    }
    println!("| history of {n} genomes over ssh on loopback | ms |");
    println!("|---|---:|");
    println!(
        "| `ssh host true` (the handshake alone) | {:.0} |",
        ms(handshake)
    );
    for (i, (genomes, took)) in runs.iter().enumerate() {
        println!(
            "| client: connect until the snapshot is in ({genomes} genomes), run {} | {:.0} |",
            i + 1,
            ms(*took)
        );
    }
    println!("| memory added by holding the {held} genomes' heads (resident, MiB) | {added:.0} |");
    println!(
        "| `galapagos attach --quiet`, start to exit | {:.0} |",
        ms(attach)
    );
    std::fs::remove_dir_all(&dir).ok();

    // 2. live
    let registry = galapagos::engine::testing::registry();
    let mut card = Card::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"),
        &registry,
    )
    .map_err(|e| e.to_string())?;
    card.evaluator = galapagos::engine::card::SlotSpec::new("trivial");
    card.evaluator
        .params
        .set("sleep_ms", galapagos::engine::params::ParamValue::Int(20));
    card.general.max_iterations = 400;
    card.general.parallel = 1;
    let card = card.check(&registry).map_err(|e| format!("{e:?}"))?;
    let task_dir = tmp.path().join("task");
    std::fs::create_dir_all(&task_dir).map_err(|e| e.to_string())?;
    std::fs::write(task_dir.join("initial_program.py"), common::program(0))
        .map_err(|e| e.to_string())?;
    std::fs::write(
        task_dir.join("evaluator.py"),
        "def evaluate(path):\n    return {'combined_score': 0.5}\n",
    )
    .map_err(|e| e.to_string())?;
    let task = galapagos::engine::task::Task::load(&task_dir).map_err(|e| e.to_string())?;
    let live = tmp.path().join("live-run");
    let plan = galapagos::engine::launch::RunPlan::new(card, task, Some(live.clone()), &registry)
        .map_err(|e| e.to_string())?;
    let ctx = ServeContext {
        dir: live.clone(),
        card: plan.valid_card().clone(),
        task: plan.task().clone(),
        registry: Arc::clone(&registry),
        redactor: Arc::new(Redactor::default()),
    };
    let handle =
        galapagos::engine::run_thread::start(plan, galapagos::engine::model::default_model(), None)
            .map_err(|e| e.to_string())?;
    let (mut handle, unserved) = galapagos::engine::service::serve(handle, ctx, None);
    if let Some(e) = unserved {
        return Err(e.to_string());
    }
    // when each genome's event reached the run's own consumer
    let committed: Arc<Mutex<HashMap<u64, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let kept = Arc::clone(&committed);
    let local = std::thread::spawn(move || {
        while let Some(e) = handle.events.blocking_recv() {
            match e {
                RunEvent::GenomeAdmitted { genome, .. } => {
                    if let Ok(mut c) = kept.lock() {
                        c.insert(genome.id, Instant::now());
                    }
                }
                RunEvent::Finished(_) => break,
                _ => {}
            }
        }
        handle.join();
    });
    let (latencies, rate) = rt.block_on(async {
        let mut follow = Follow::start(target(&sshd, &live)?, options(&sshd), true);
        let mut latencies = Vec::new();
        let mut synced = false;
        let mut first: Option<(Instant, u64)> = None;
        let mut last = (Instant::now(), 0u64);
        while let Some(u) = follow.updates.recv().await {
            match u {
                Update::Synced => synced = true,
                Update::Event(RunEvent::GenomeAdmitted { genome, .. }) if synced => {
                    let now = Instant::now();
                    // the run's consumer may not have noted it yet: wait a moment
                    let mut at = None;
                    for _ in 0..50 {
                        at = committed
                            .lock()
                            .ok()
                            .and_then(|c| c.get(&genome.id).copied());
                        if at.is_some() {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    if let Some(at) = at {
                        latencies.push(ms(now.saturating_duration_since(at)));
                    }
                    first.get_or_insert((now, genome.id));
                    last = (now, genome.id);
                }
                Update::Ended { .. } => break,
                Update::Failed(why) => return Err(why),
                _ => {}
            }
        }
        let rate = first.map_or(0.0, |(t0, id0)| {
            (last.1 - id0) as f64 / last.0.duration_since(t0).as_secs_f64().max(1e-9)
        });
        Ok::<_, String>((latencies, rate))
    })?;
    local.join().ok();
    let mut sorted = latencies.clone();
    sorted.sort_by(f64::total_cmp);
    println!();
    println!(
        "| live run over ssh on loopback ({} genomes at {rate:.0} genomes/s) | ms |",
        sorted.len()
    );
    println!("|---|---:|");
    println!(
        "| commit to client, median | {:.1} |",
        percentile(&sorted, 0.5)
    );
    println!(
        "| commit to client, 95th percentile | {:.1} |",
        percentile(&sorted, 0.95)
    );
    println!(
        "| commit to client, max | {:.1} |",
        sorted.last().copied().unwrap_or(f64::NAN)
    );
    println!("(targets: history < 2000 ms at 100,000 genomes; live < 200 ms)");
    Ok(())
}
