//! The runner on the nodes (`assets/python/galapagos_slurm.py`): its
//! configuration (`runner.json` in the staging area: the evaluator, the
//! limits, the candidates' environment and the sandbox's bubblewrap
//! options, built by the isolation kit's [`bwrap::bwrap_args`]), its command
//! lines, and what it reports for a candidate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::client::placement;
use super::{Outcome, SlurmEvaluator, Stage, staged};
use crate::engine::evaluator::python_worker::protocol::Reply;
use crate::engine::evaluator::{Evaluation, Observed};
use crate::engine::foreign::Limit;
use crate::engine::platform;
use crate::engine::sandbox::bwrap::{self, Jail};
use crate::engine::sandbox::capture::Capture;
use crate::engine::sandbox::environment;
use crate::engine::sandbox::interpreter::Interpreter;
use crate::engine::sandbox::isolation::Sandbox;
use crate::engine::sandbox::limits::Limits;
use crate::engine::sandbox::paths::{self, SCRATCH_ROOT};
use crate::engine::sandbox::process::{describe_status, through_sandbox};
use crate::engine::sandbox::run_as;

/// The runner's code, written into the staging area's `code/`.
pub(super) const RUNNER: &str = include_str!("../../../../assets/python/galapagos_slurm.py");

/// Variables the runner takes from the node's own environment when set
/// there (besides GPU selection): what the job is and the CPUs it has.
const NODE_FACTS: [&str; 6] = [
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_CPUS_PER_TASK",
    "SLURM_CPUS_ON_NODE",
    "SLURM_JOB_GPUS",
    "SLURMD_NODENAME",
];

/// What the runner adds to a candidate's result.
#[derive(Default, Deserialize)]
struct Report {
    /// evaluator.py cannot be imported: no candidate can be evaluated.
    #[serde(default)]
    import_failed: bool,
    /// The sandbox cannot be set up on the node (no bubblewrap, no user
    /// namespaces): no candidate can be evaluated there.
    #[serde(default)]
    setup_failed: bool,
    /// The wait status of an evaluation process that ended without a result
    /// (with the sandbox, bubblewrap's, which reports a kill by signal N as
    /// exit status 128 + N).
    #[serde(default)]
    status: Option<i32>,
    /// Its CPU seconds.
    #[serde(default)]
    cpu: Option<f64>,
    /// Per stream: the bytes of its head in the file, and all it carried.
    #[serde(default)]
    output: BTreeMap<String, (usize, u64)>,
}

impl SlurmEvaluator {
    /// What a candidate's process may use.
    pub(super) fn limits(&self) -> Limits {
        self.params.allowance.resolve(self.params.timeout_secs)
    }

    /// Write `runner.json` into `root` for a stage whose task folder (as
    /// the nodes see it) is `task_dir`.
    pub(super) fn write_runner_config(&self, root: &Path, task_dir: &Path) -> Result<(), String> {
        let p = &self.params;
        let code = root.join("code");
        let scratch = Path::new(SCRATCH_ROOT);
        // Listed names that hold a key never pass, however the evaluator
        // was built.
        let listed: Vec<String> = p
            .env
            .iter()
            .filter(|n| {
                environment::refuse_listed(n, &self.key_vars, &|v| std::env::var_os(v)).is_none()
            })
            .cloned()
            .collect();
        let env = environment::environment(
            &listed,
            &scratch.join("home"),
            &scratch.join("tmp"),
            &code,
            std::env::vars_os(),
        );
        let sandbox = match p.isolation.sandbox {
            Sandbox::None => serde_json::Value::Null,
            Sandbox::Bwrap => {
                let mut private = paths::private_dirs();
                // The run folder and the staging area: the runner's
                // files, every candidate's folder.
                private.extend(self.run_dir.iter().cloned());
                private.push(root.to_path_buf());
                private.retain(|d| d.is_absolute());
                let (uid, gid) = platform::user_ids()?;
                let run_as = run_as::run_as(uid, run_as::NOBODY);
                let interpreter = Interpreter {
                    executable: PathBuf::from(&p.python),
                    prefixes: Vec::new(),
                };
                let jail = Jail {
                    network: p.isolation.network,
                    interpreter: &interpreter,
                    task_dir,
                    code_dir: &code,
                    lanes_dir: &code,
                    extra: environment::python_path(&env)
                        .into_iter()
                        .chain(p.allowance.read_paths.iter().map(|r| paths::expand_home(r)))
                        .collect(),
                    writable: Vec::new(),
                    private: private.clone(),
                    uid,
                    gid,
                    // Slurm runs a job as the user who submitted it: as
                    // root (a cluster's service account, CI), the node's
                    // sandbox starts the candidate's process as nobody in a
                    // user namespace of its own, as the local command
                    // evaluator does, so the process limit holds there.
                    run_as,
                    task_copy: None,
                    write_quota_mib: self.limits().write_quota_mib,
                    // A container per candidate: HOME, TMPDIR, /dev/shm
                    // and its program's copy share the one quota.
                    one_scratch: true,
                    shown: Vec::new(),
                };
                let options: Vec<String> = bwrap::bwrap_args(&jail, &[])
                    .into_iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                let as_user: Vec<String> = match run_as {
                    Some(_) => {
                        run_as::as_user(run_as, &["unshare".into(), "--user".into(), "--".into()])
                            .into_iter()
                            .map(|a| a.to_string_lossy().into_owned())
                            .collect()
                    }
                    None => Vec::new(),
                };
                serde_json::json!({
                    "options": options,
                    "hidden": bwrap::hidden_dirs(&private),
                    "network": p.isolation.network,
                    "as_user": as_user,
                })
            }
        };
        let env: Vec<(String, String)> = env
            .into_iter()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let node_env: Vec<&str> = environment::gpu_selection()
            .chain(NODE_FACTS.iter().copied())
            .collect();
        let config = serde_json::json!({
            "evaluator": task_dir.join(&self.evaluator_file),
            "task_dir": task_dir,
            "suffix": self.suffix,
            "limits": self.limits().to_json(),
            "output_bytes": p.allowance.output_bytes(),
            "env": env,
            "node_env": node_env,
            "sandbox": sandbox,
        });
        let path = root.join("runner.json");
        std::fs::write(&path, config.to_string())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The command that starts the runner on a node: `--standby` (a pool's
    /// step, which takes its candidate's folder on stdin) or `--job DIR`.
    pub(super) fn runner(&self, stage: &Stage, dir: Option<&Path>) -> Vec<String> {
        // `-S`: the runner itself needs only the standard library (the
        // evaluation process it starts has `site`).
        let mut argv = vec![
            self.params.python.clone(),
            "-S".to_owned(),
            stage
                .root
                .join("code")
                .join("galapagos_slurm.py")
                .display()
                .to_string(),
        ];
        match dir {
            None => argv.push("--standby".to_owned()),
            Some(_) => argv.push("--job".to_owned()),
        }
        argv.push(stage.root.join("runner.json").display().to_string());
        argv.extend(dir.map(|d| d.display().to_string()));
        argv
    }

    /// The evaluation `dir`'s runner reported, when it did.
    pub(super) fn result(&self, dir: &Path, job: &str, node: &str) -> Option<Outcome> {
        let text = match staged::read_text(dir, "result.json", Limit::STAGED_RESULT) {
            Ok(text) => text?,
            Err(e) => {
                return Some(Outcome::Done(
                    Box::new(self.failed(dir, format!("the node's result file is {e}"))),
                    placement(job, node),
                ));
            }
        };
        let value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                return Some(Outcome::Done(
                    Box::new(self.failed(dir, format!("unreadable result: {e}"))),
                    placement(job, node),
                ));
            }
        };
        let report: Report = serde_json::from_value(value.clone()).unwrap_or_default();
        let mut reply: Reply = serde_json::from_value(value).unwrap_or_default();
        if report.import_failed || report.setup_failed {
            return Some(Outcome::Broken(reply.error.unwrap_or_else(|| {
                "the evaluation cannot start on the node".to_owned()
            })));
        }
        if let Some(status) = report.status
            && reply.error.is_none()
        {
            let (status, cpu_secs) = match self.params.isolation.sandbox {
                // bubblewrap's init reaps the evaluation process, so the
                // node's count of bubblewrap's children misses its time.
                Sandbox::Bwrap => (through_sandbox(status), None),
                Sandbox::None => (status, report.cpu),
            };
            reply.error = Some(describe_status(status));
            reply.status = Some(status);
            reply.cpu_secs = cpu_secs;
        }
        reply.explain_limit(self.limits());
        let mut eval = reply.into_evaluation();
        self.attach_output(dir, &mut eval.artifacts, &report.output);
        Some(Outcome::Done(Box::new(eval), placement(job, node)))
    }

    /// The candidate's stdout and stderr as artifacts: the runner's files
    /// (head and tail, as `kept` says; only the head when the runner was
    /// cancelled before it could write the tail).
    fn attach_output(
        &self,
        dir: &Path,
        artifacts: &mut BTreeMap<String, String>,
        kept: &BTreeMap<String, (usize, u64)>,
    ) {
        let limit = self.params.allowance.output_bytes();
        for name in ["stdout", "stderr"] {
            let bytes = staged::read_bytes(dir, name, Limit::STAGED_OUTPUT)
                .unwrap_or_else(|e| format!("[galapagos: {e}]").into_bytes());
            let capture = match kept.get(name) {
                Some(&(head, total)) if head <= bytes.len() => {
                    Capture::from_parts(limit, &bytes[..head], &bytes[head..], total)
                }
                _ => {
                    let mut capture = Capture::new(limit);
                    capture.push(&bytes);
                    capture
                }
            };
            capture.attach(artifacts, name);
        }
    }

    pub(super) fn failed(&self, dir: &Path, reason: String) -> Evaluation {
        let mut observed = Observed {
            error: Some(reason),
            ..Observed::default()
        };
        self.attach_output(dir, &mut observed.artifacts, &BTreeMap::new());
        observed.judge()
    }

    pub(super) fn timed_out(&self, dir: &Path, job: &str) -> Evaluation {
        let secs = self.params.timeout_secs;
        let mut observed = Observed {
            error: Some(format!(
                "timeout: evaluation exceeded {secs} s; Slurm job {job} was cancelled"
            )),
            timeout: true,
            ..Observed::default()
        };
        self.attach_output(dir, &mut observed.artifacts, &BTreeMap::new());
        observed.judge()
    }
}
