//! The two ways the `slurm` evaluator places a candidate: a job step in one
//! of the pool's long-lived allocations, or a job of its own. Each attempt
//! ends as an [`Outcome`]: a result, work the scheduler ended (retried), or a
//! failure no candidate can get past.

use std::path::Path;
use std::time::{Duration, Instant};

use super::client::{CancelOnDrop, last_line, parse_job_id, placement, shell_quote, started};
use super::staged;
use super::{
    Allocation, HEARTBEAT_STALE_SECS, LOST_STATES, Mode, Outcome, SlurmEvaluator, Stage, lock,
};
use crate::engine::evaluator::Candidate;
use crate::engine::foreign::Limit;

impl SlurmEvaluator {
    /// An allocation for the pool: a free one, else a new one once it runs.
    pub(super) async fn allocation(&self, stage: &Stage) -> Result<Allocation, String> {
        if let Some(a) = lock(&self.idle).pop() {
            return Ok(a);
        }
        let mut args = self.sbatch_args(&stage.root, &stage.task_dir, Mode::Pool);
        let beat = shell_quote(&stage.root.join("heartbeat").display().to_string());
        args.push("--wrap".to_owned());
        args.push(format!(
            "while sleep 5; do t=$(stat -c %Y {beat} 2>/dev/null) || exit 0; \
             [ $(( $(date +%s) - t )) -lt {HEARTBEAT_STALE_SECS} ] || exit 0; done"
        ));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self
            .slurm("sbatch", &argv)
            .await
            .map_err(|e| format!("the scheduler rejected the allocation: {e}"))?;
        let job = parse_job_id(&out)?;
        let mut guard = CancelOnDrop(Some(job.clone()));
        let mut pause = Duration::from_millis(100);
        loop {
            match self.queue_state(&job).await {
                Some((state, node)) if state == "RUNNING" => {
                    guard.0 = None;
                    return Ok(Allocation {
                        job,
                        node,
                        standby: None,
                    });
                }
                Some((state, _)) if ["PENDING", "CONFIGURING"].contains(&state.as_str()) => {}
                Some((state, _)) => {
                    return Err(format!("allocation {job} is {state}, not running"));
                }
                None => {
                    let state = self.final_state(&job).await;
                    return Err(format!("allocation {job} ended before it ran ({state})"));
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    /// A job step of `alloc` that starts the interpreter and imports
    /// `evaluator.py`, then waits for a candidate's folder on its stdin.
    fn standby(&self, stage: &Stage, alloc: &Allocation) -> Result<tokio::process::Child, String> {
        let mut c = self.command("srun");
        c.args([
            format!("--jobid={}", alloc.job),
            "--overlap".to_owned(),
            "--nodes=1".to_owned(),
            "--ntasks=1".to_owned(),
            format!("--cpus-per-task={}", self.params.cpus),
            "--job-name=standby".to_owned(),
            format!("--chdir={}", stage.task_dir.display()),
        ]);
        c.args(self.runner(stage, None));
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c.spawn().map_err(|e| format!("cannot run srun: {e}"))
    }

    /// One candidate as a job step of a pool allocation: the allocation's
    /// standby step takes it, and the next standby starts meanwhile.
    pub(super) async fn on_pool(&self, stage: &Stage, candidate: &Candidate) -> Outcome {
        let mut alloc = match self.allocation(stage).await {
            Ok(a) => a,
            Err(e) => return Outcome::Broken(e),
        };
        let dir = match self.attempt_dir(stage, candidate) {
            Ok(d) => d,
            Err(e) => return Outcome::Broken(e),
        };
        let current = match alloc.standby.take() {
            Some(child) => Ok(child),
            None => self.standby(stage, &alloc),
        };
        alloc.standby = self.standby(stage, &alloc).ok();
        let mut child = match current {
            Ok(c) => c,
            Err(e) => return Outcome::Broken(e),
        };
        if let Some(mut stdin) = child.stdin.take() {
            use tokio::io::AsyncWriteExt as _;
            // A step that is gone cannot take it: then it ends without a
            // result, and that is looked into below.
            let _ = stdin
                .write_all(format!("{}\n", dir.display()).as_bytes())
                .await;
        }
        let limit = Duration::from_secs_f64(self.params.timeout_secs);
        let mut keep = true;
        let outcome = match tokio::time::timeout(limit, child.wait_with_output()).await {
            Ok(Ok(out)) => {
                let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
                let (outcome, alive) = self.pool_result(&dir, &alloc, &said).await;
                keep = alive;
                outcome
            }
            Ok(Err(e)) => Outcome::Broken(format!("srun failed: {e}")),
            Err(_) => {
                let step = started(&dir).map_or_else(|| alloc.job.clone(), |s| s.id());
                self.cancel(&step).await;
                let placement = placement(&step, &alloc.node);
                Outcome::Done(Box::new(self.timed_out(&dir, &step)), placement)
            }
        };
        if keep {
            lock(&self.idle).push(alloc);
        }
        let _ = std::fs::remove_dir_all(&dir);
        outcome
    }

    /// How a step that ended went, and whether its allocation still runs.
    pub(super) async fn pool_result(
        &self,
        dir: &Path,
        alloc: &Allocation,
        said: &str,
    ) -> (Outcome, bool) {
        let step = started(dir).map_or_else(|| alloc.job.clone(), |s| s.id());
        if let Some(outcome) = self.result(dir, &step, &alloc.node) {
            return (outcome, true);
        }
        let alive = self
            .queue_state(&alloc.job)
            .await
            .is_some_and(|(s, _)| s == "RUNNING");
        let stderr = staged::read_text(dir, "stderr", Limit::STAGED_OUTPUT)
            .unwrap_or_default()
            .unwrap_or_default();
        if !alive {
            let state = self.final_state(&alloc.job).await;
            let what = format!("allocation {} on {} ended {state}", alloc.job, alloc.node);
            return (Outcome::Lost(what), false);
        }
        if started(dir).is_none() {
            let what = format!(
                "a step of allocation {} on {} ended before it took the candidate: {}",
                alloc.job,
                alloc.node,
                last_line(said)
            );
            return (Outcome::Lost(what), true);
        }
        let cancelled = |t: &str| t.contains("*** STEP") && t.contains("CANCELLED");
        if cancelled(&stderr) || cancelled(said) {
            let what = format!(
                "step {step} on {} was cancelled from outside the run",
                alloc.node
            );
            return (Outcome::Lost(what), true);
        }
        let reason = format!("the evaluation ended without a result: {}", last_line(said));
        (
            Outcome::Done(
                Box::new(self.failed(dir, reason)),
                placement(&step, &alloc.node),
            ),
            true,
        )
    }

    /// One candidate as a job of its own.
    pub(super) async fn as_job(&self, stage: &Stage, candidate: &Candidate) -> Outcome {
        let dir = match self.attempt_dir(stage, candidate) {
            Ok(d) => d,
            Err(e) => return Outcome::Broken(e),
        };
        let outcome = self.job_attempt(stage, &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
        outcome
    }

    pub(super) async fn job_attempt(&self, stage: &Stage, dir: &Path) -> Outcome {
        let mut args = self.sbatch_args(&stage.root, &stage.task_dir, Mode::Job);
        // The runner's own messages; the candidate's output is in `stdout`
        // and `stderr`, which the runner writes.
        args.push(format!("--output={}", dir.join("runner.log").display()));
        let script: Vec<String> = self
            .runner(stage, Some(dir))
            .iter()
            .map(|a| shell_quote(a))
            .collect();
        args.push("--wrap".to_owned());
        args.push(format!("exec {}", script.join(" ")));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let job = match self
            .slurm("sbatch", &argv)
            .await
            .and_then(|o| parse_job_id(&o))
        {
            Ok(j) => j,
            Err(e) => return Outcome::Broken(format!("the scheduler rejected the job: {e}")),
        };
        let mut guard = CancelOnDrop(Some(job.clone()));
        let limit = Duration::from_secs_f64(self.params.timeout_secs);
        let mut start: Option<(Instant, String)> = None;
        let mut last_poll = Instant::now();
        loop {
            if let Some(s) = started(dir).filter(|_| start.is_none()) {
                start = Some((Instant::now(), s.node));
            }
            let node = start.as_ref().map(|s| s.1.clone()).unwrap_or_default();
            if let Some(outcome) = self.result(dir, &job, &node) {
                guard.0 = None;
                return outcome;
            }
            if start.as_ref().is_some_and(|s| s.0.elapsed() > limit) {
                self.cancel(&job).await;
                guard.0 = None;
                return Outcome::Done(Box::new(self.timed_out(dir, &job)), placement(&job, &node));
            }
            if last_poll.elapsed() >= Duration::from_secs(1) {
                last_poll = Instant::now();
                match self.queue_state(&job).await {
                    Some((state, _)) if state == "PENDING" && start.is_some() => {
                        // Requeued: it starts again from the beginning.
                        let _ = std::fs::remove_file(dir.join("started.json"));
                        start = None;
                    }
                    Some(_) => {}
                    None => {
                        guard.0 = None;
                        if let Some(outcome) = self.result(dir, &job, &node) {
                            return outcome;
                        }
                        let state = self.final_state(&job).await;
                        let on = if node.is_empty() {
                            String::new()
                        } else {
                            format!(" on {node}")
                        };
                        if LOST_STATES.iter().any(|s| state.starts_with(s)) {
                            return Outcome::Lost(format!("job {job}{on} ended {state}"));
                        }
                        let reason =
                            format!("the evaluation ended without a result (job {job} {state})");
                        return Outcome::Done(
                            Box::new(self.failed(dir, reason)),
                            placement(&job, &node),
                        );
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
