//! A recorder on its own thread, so that writing the record is off the
//! loop's critical path.
//!
//! The loop hands each iteration (its genomes, shared `Arc`s, and the
//! checkpoint) to a bounded channel and goes on to the next model call; the
//! writer thread commits them in order, each iteration's genomes and
//! checkpoint in one transaction as before. `begin` and `finish` wait for the
//! writer, so a run that returns has everything on disk, and a write error
//! still stops the run: the loop gets it from the next `record_iteration`.
//!
//! What this trades: a process killed outright (SIGKILL, power loss) can lose
//! the iterations still queued, which is at most the channel's capacity and
//! in practice the last one (the writer keeps up: one commit costs ~60 µs,
//! an iteration at least a model call). A resumed run redoes them. A run
//! stopped, finished or failed in any other way loses nothing.

use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{ArchiveError, Checkpoint, RunRecorder};
use crate::engine::card::Card;
use crate::engine::events::{LogLevel, RunInfo, RunSummary};
use crate::engine::genome::Genome;
use crate::engine::steering::changes::SettingsChange;

/// Iterations that may wait for the writer before `record_iteration` blocks
/// (back-pressure on a disk slower than the loop).
const QUEUE: usize = 64;

/// What the loop sends to the writer thread.
enum Job {
    Begin {
        info: Box<RunInfo>,
        card: Box<Card>,
        task_dir: std::path::PathBuf,
        done: SyncSender<Result<(), ArchiveError>>,
    },
    Iteration {
        genomes: Vec<Arc<Genome>>,
        checkpoint: Box<Checkpoint>,
    },
    Log(LogLevel, String),
    SettingsChanged(Box<Card>, SettingsChange),
    Clearance(Box<crate::engine::consent::Clearance>),
    Finish {
        summary: Box<RunSummary>,
        done: SyncSender<Result<(), ArchiveError>>,
    },
}

/// Wraps a recorder and runs it on a thread of its own (see the module docs).
pub struct BackgroundRecorder {
    jobs: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// The first failed iteration write, not yet reported to the loop.
    failed: Arc<Mutex<Option<ArchiveError>>>,
    /// Where the record goes, for the error when the writer thread is gone.
    dir: std::path::PathBuf,
    /// Iterations written (or failed) so far.
    written: tokio::sync::watch::Receiver<u64>,
}

impl BackgroundRecorder {
    /// Start the writer thread for `inner` (whose files are in `dir`).
    pub fn spawn(inner: Box<dyn RunRecorder>, dir: &Path) -> Result<Self, ArchiveError> {
        let (jobs, queue) = sync_channel(QUEUE);
        let failed = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&failed);
        let (count, written) = tokio::sync::watch::channel(0);
        let thread = std::thread::Builder::new()
            .name("galapagos-record".to_owned())
            .spawn(move || write_all(inner, &queue, &slot, &count))
            .map_err(|e| ArchiveError::Io {
                path: dir.to_path_buf(),
                message: format!("cannot start the record writer thread: {e}"),
            })?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
            failed,
            dir: dir.to_path_buf(),
            written,
        })
    }

    fn gone(&self) -> ArchiveError {
        ArchiveError::Io {
            path: self.dir.clone(),
            message: "the record writer thread stopped".to_owned(),
        }
    }

    fn send(&self, job: Job) -> Result<(), ArchiveError> {
        match &self.jobs {
            Some(jobs) => jobs.send(job).map_err(|_| self.gone()),
            None => Err(self.gone()),
        }
    }

    /// Send a job that answers, and wait for the answer.
    fn call(
        &self,
        job: impl FnOnce(SyncSender<Result<(), ArchiveError>>) -> Job,
    ) -> Result<(), ArchiveError> {
        let (done, answer) = sync_channel(1);
        self.send(job(done))?;
        answer.recv().unwrap_or_else(|_| Err(self.gone()))
    }

    fn take_failure(&self) -> Option<ArchiveError> {
        self.failed.lock().ok().and_then(|mut f| f.take())
    }

    /// Close the queue and wait until everything queued is written.
    fn drain(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
    }
}

fn write_all(
    mut inner: Box<dyn RunRecorder>,
    queue: &Receiver<Job>,
    failed: &Mutex<Option<ArchiveError>>,
    written: &tokio::sync::watch::Sender<u64>,
) {
    while let Ok(job) = queue.recv() {
        match job {
            Job::Begin {
                info,
                card,
                task_dir,
                done,
            } => {
                done.send(inner.begin(&info, &card, &task_dir)).ok();
            }
            Job::Iteration {
                genomes,
                checkpoint,
            } => {
                if let Err(e) = inner.record_iteration(&genomes, &checkpoint)
                    && let Ok(mut f) = failed.lock()
                {
                    f.get_or_insert(e);
                }
                written.send_modify(|n| *n += 1);
            }
            Job::Log(level, message) => inner.log(level, &message),
            Job::SettingsChanged(card, change) => {
                if let Err(e) = inner.settings_changed(&card, &change)
                    && let Ok(mut f) = failed.lock()
                {
                    f.get_or_insert(e);
                }
            }
            Job::Clearance(clearance) => {
                if let Err(e) = inner.clearance_changed(&clearance)
                    && let Ok(mut f) = failed.lock()
                {
                    f.get_or_insert(e);
                }
            }
            Job::Finish { summary, done } => {
                let first = failed.lock().ok().and_then(|mut f| f.take());
                let result = inner.finish(&summary);
                done.send(first.map_or(result, Err)).ok();
            }
        }
    }
}

impl RunRecorder for BackgroundRecorder {
    fn begin(&mut self, info: &RunInfo, card: &Card, task_dir: &Path) -> Result<(), ArchiveError> {
        self.call(|done| Job::Begin {
            info: Box::new(info.clone()),
            card: Box::new(card.clone()),
            task_dir: task_dir.to_path_buf(),
            done,
        })
    }

    /// Queue the iteration; an `Err` is an earlier iteration's write failure
    /// (or a writer that is gone), which must stop the run.
    fn record_iteration(
        &mut self,
        genomes: &[Arc<Genome>],
        checkpoint: &Checkpoint,
    ) -> Result<(), ArchiveError> {
        if let Some(e) = self.take_failure() {
            return Err(e);
        }
        self.send(Job::Iteration {
            genomes: genomes.to_vec(),
            checkpoint: Box::new(checkpoint.clone()),
        })
    }

    fn log(&mut self, level: LogLevel, message: &str) {
        self.send(Job::Log(level, message.to_owned())).ok();
    }

    /// Queued in order with the iterations, so the iterations after it are
    /// recorded after it.
    fn settings_changed(
        &mut self,
        card: &Card,
        change: &SettingsChange,
    ) -> Result<(), ArchiveError> {
        if let Some(e) = self.take_failure() {
            return Err(e);
        }
        self.send(Job::SettingsChanged(Box::new(card.clone()), change.clone()))
    }

    /// Queued in order with the settings change it follows.
    fn clearance_changed(
        &mut self,
        clearance: &crate::engine::consent::Clearance,
    ) -> Result<(), ArchiveError> {
        if let Some(e) = self.take_failure() {
            return Err(e);
        }
        self.send(Job::Clearance(Box::new(clearance.clone())))
    }

    fn progress(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.written.clone())
    }

    /// Wait until everything queued is written, then finish the record.
    fn finish(&mut self, summary: &RunSummary) -> Result<(), ArchiveError> {
        let result = self.call(|done| Job::Finish {
            summary: Box::new(summary.clone()),
            done,
        });
        self.drain();
        result
    }
}

/// A run dropped without `finish` (its thread ended, a test) still gets
/// everything it queued written before the recorder is gone.
impl Drop for BackgroundRecorder {
    fn drop(&mut self) {
        self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::TokenUsage;

    /// Records what it is asked to, and can be told to fail iteration writes.
    struct Probe {
        log: Arc<Mutex<Vec<String>>>,
        fail_from: Option<u64>,
    }

    impl RunRecorder for Probe {
        fn begin(&mut self, _: &RunInfo, _: &Card, _: &Path) -> Result<(), ArchiveError> {
            self.log.lock().unwrap().push("begin".to_owned());
            Ok(())
        }
        fn record_iteration(
            &mut self,
            genomes: &[Arc<Genome>],
            checkpoint: &Checkpoint,
        ) -> Result<(), ArchiveError> {
            if self
                .fail_from
                .is_some_and(|n| checkpoint.iterations_done >= n)
            {
                return Err(ArchiveError::Io {
                    path: "probe".into(),
                    message: format!("disk full at {}", checkpoint.iterations_done),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            let ids: Vec<String> = genomes.iter().map(|g| g.id.to_string()).collect();
            self.log.lock().unwrap().push(format!(
                "iteration {} genomes {}",
                checkpoint.iterations_done,
                ids.join(",")
            ));
            Ok(())
        }
        fn log(&mut self, _: LogLevel, message: &str) {
            self.log.lock().unwrap().push(format!("log {message}"));
        }
        fn finish(&mut self, _: &RunSummary) -> Result<(), ArchiveError> {
            self.log.lock().unwrap().push("finish".to_owned());
            Ok(())
        }
    }

    /// A background recorder over a `Probe` (failing from iteration
    /// `fail_from`), and the probe's log.
    fn probed(fail_from: Option<u64>) -> (Arc<Mutex<Vec<String>>>, BackgroundRecorder) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let probe = Probe {
            log: Arc::clone(&log),
            fail_from,
        };
        let r = BackgroundRecorder::spawn(Box::new(probe), Path::new("probe")).unwrap();
        (log, r)
    }

    fn checkpoint(done: u64) -> Checkpoint {
        Checkpoint {
            iterations_done: done,
            last_iteration: done,
            next_id: done + 1,
            rng: crate::engine::rng::seeded(1),
            policy: serde_json::Value::Null,
            memory: serde_json::Value::Null,
            usage: TokenUsage::default(),
            valid: done,
            invalid: 0,
            rejected: 0,
            wall_secs: 0.0,
            steering: Default::default(),
        }
    }

    fn genome(id: u64) -> Arc<Genome> {
        Arc::new(Genome {
            id,
            ..Genome::default()
        })
    }

    fn info() -> (RunInfo, Card) {
        let registry = crate::engine::registry::Registry::builtin();
        let card = Card::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"),
            &registry,
        )
        .expect("shipped card");
        let info = RunInfo {
            card_name: card.name.clone(),
            task_name: "t".to_owned(),
            max_iterations: 10,
            model: "m".to_owned(),
            offline: true,
            seed: 0,
            parallel: 1,
            run_dir: None,
            unsandboxed: None,
            forked_from: None,
            clearance: None,
        };
        (info, card)
    }

    #[test]
    fn everything_queued_is_written_in_order_before_finish_returns() {
        let (log, mut r) = probed(None);
        let (info, card) = info();
        r.begin(&info, &card, Path::new(".")).unwrap();
        for i in 1..=20 {
            r.record_iteration(&[genome(2 * i), genome(2 * i + 1)], &checkpoint(i))
                .unwrap();
            if i == 10 {
                r.log(LogLevel::Info, "halfway");
            }
        }
        r.finish(&RunSummary::empty(
            crate::engine::events::RunStatus::Completed,
        ))
        .unwrap();
        let log = log.lock().unwrap().clone();
        let mut want = vec!["begin".to_owned()];
        for i in 1..=20u64 {
            want.push(format!("iteration {i} genomes {},{}", 2 * i, 2 * i + 1));
            if i == 10 {
                want.push("log halfway".to_owned());
            }
        }
        want.push("finish".to_owned());
        assert_eq!(log, want);
    }

    #[test]
    fn a_failed_write_reaches_the_loop_and_finish() {
        let (_, mut r) = probed(Some(3));
        let mut reported = None;
        for i in 1..=200 {
            if let Err(e) = r.record_iteration(&[genome(i)], &checkpoint(i)) {
                reported = Some((i, e.to_string()));
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (at, message) = reported.expect("the write failure reaches record_iteration");
        assert!(at > 3, "reported before it happened: {at}");
        assert!(message.contains("disk full at 3"), "{message}");
        // A failure not yet seen by the loop is what finish reports.
        let (_, mut r2) = probed(Some(1));
        r2.record_iteration(&[genome(1)], &checkpoint(1)).unwrap();
        let end = r2.finish(&RunSummary::empty(
            crate::engine::events::RunStatus::Completed,
        ));
        assert!(end.unwrap_err().to_string().contains("disk full at 1"));
    }

    #[test]
    fn progress_counts_iterations_once_written() {
        let (log, mut r) = probed(None);
        let progress = r
            .progress()
            .expect("a background recorder reports progress");
        for i in 1..=5 {
            r.record_iteration(&[genome(i)], &checkpoint(i)).unwrap();
        }
        // Each write takes 2 ms: what the count says is written, is.
        loop {
            let n = *progress.borrow();
            let logged = log.lock().unwrap().len() as u64;
            assert!(n <= logged, "progress {n} ahead of the writes ({logged})");
            if n == 5 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        r.finish(&RunSummary::empty(
            crate::engine::events::RunStatus::Completed,
        ))
        .unwrap();
    }

    #[test]
    fn dropping_without_finish_still_writes_the_queue() {
        let (log, mut r) = probed(None);
        for i in 1..=5 {
            r.record_iteration(&[genome(i)], &checkpoint(i)).unwrap();
        }
        drop(r);
        assert_eq!(log.lock().unwrap().len(), 5);
    }
}
