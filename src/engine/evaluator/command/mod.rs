//! `CommandEvaluator` (card kind `command`): scores a candidate by running an
//! executable, in any language, with the candidate's file and a results
//! folder, and reading the metrics it reports. ShinkaEvolve's `evaluate.py`
//! runs under it unchanged:
//! `python evaluate.py --program_path P --results_dir D`.
//!
//! For each candidate: a private folder holds `main<suffix>` (the program)
//! and `results/`; `argv` runs with `{program}`, `{results_dir}`,
//! `{task_dir}` and `{python}` replaced (without `{program}` in `argv`, the
//! program's path and the results folder are appended), in the task folder,
//! in a process group of its own with stdin from `/dev/null`. The run kills
//! the whole group at `timeout_secs`, once the command has exited (so
//! nothing it started lingers), and when the evaluation is abandoned.
//!
//! What it reports:
//! - **metrics**: `results/metrics.json`, else the last line of its stdout
//!   that is a JSON object, else its whole stdout as one JSON object. Numbers
//!   and booleans are scores, strings and other values artifacts; an
//!   `artifacts` object adds artifacts. ShinkaEvolve's keys: `public` (its
//!   entries are scores and artifacts, shown to the model), `private`
//!   (recorded, never shown to the model), `text_feedback` (the artifact
//!   `text_feedback`, which prompts show). `NaN` and `Infinity` (as Python's
//!   `json` writes them) are non-finite scores, which make it invalid.
//! - **validity**: `results/correct.json` (`{"correct": bool, "error":
//!   str | null}`) decides when it is there; a ShinkaEvolve task without one
//!   is incorrect, as ShinkaEvolve counts it. Otherwise a command that
//!   exited with a non-zero status, or reported no metrics, is invalid; then
//!   the usual rules apply ([`super::Observed::judge`]).
//! - its **stdout and stderr** (`output_limit_kb` of each kept) are the
//!   artifacts `stdout` and `stderr`, or `stdout (captured)` ... when the
//!   metrics name artifacts so.
//! - a **limit** of the sandbox it hit (memory, CPU time, file size,
//!   processes) is named first in its error, "exceeded the 256 MiB memory
//!   limit (...)", when how it ended and its stderr show it ([`limits`]).
//!
//! Its environment is an allowlist of the run's ([`Profile::Command`]): no model key
//! or other secret reaches a command or the candidate it runs. Its
//! `PYTHONPATH` holds `galapagos_eval` (a candidate run apart from checks).
//!
//! # How it runs a candidate
//!
//! **The command evaluator** (`command/mod.rs`): one process per candidate, any executable (`argv` with `{program}`,
//! `{results_dir}`, `{task_dir}`, `{python}`), started in the task folder in a process group of its own with an
//! environment allowlist (and `PYTHONPATH` holding `galapagos_eval`), the group killed at `timeout_secs`, after the command exits and when the evaluation is
//! dropped; output captured with the worker's `Capture`. Metrics from `metrics.json` or JSON on stdout (ShinkaEvolve's
//! `public` / `private` / `text_feedback`; Python's bare `NaN` / `Infinity` read as such), validity from
//! `correct.json`, the exit status, then `Observed::judge`. Private metrics go to `Evaluation::private` and
//! `Genome::private`, which the population's copy of a genome drops, so no prompt can show them. A number beyond a
//! float's range (a 400-digit integer Python printed) is kept as its text by `command/json.rs`, so the metric is refused
//! by name ("score combined_score is 100000000000…000000 (400 digits), out of range …") rather than the whole object.
//!
//! Its sandbox (`command/sandboxed.rs`, `sandbox: bwrap` by default) is the bubblewrap command line of
//! `sandbox/bwrap.rs`, one container per candidate, which writes nothing the run sees: its one writable file
//! system is its `/dev/shm` of `write_quota_mib` (`Jail::one_scratch`: the scratch dir `/tmp/galapagos`, with `HOME`
//! and `TMPDIR`, is a link into it), the run's candidate folder is shown read-only (`Jail::shown`) and copied into
//! the scratch dir as the sandbox's user before the command starts (`{program}` and `{results_dir}` name the copy),
//! and after the command the container's pid 1 kills what is left (as that user) and sends `metrics.json` and
//! `correct.json` back, framed (`sandboxed::Reported`), on the write end of a pipe that is its stdin (the command's
//! is `/dev/null`). A Slurm node's container per candidate has the same one file system. Inside it, `/bin/sh` is the container's pid 1 (`--as-pid-1`) and runs `prlimit` (memory as RLIMIT_DATA, CPU time
//! with SIGXCPU at the limit and SIGKILL a second later, processes as RLIMIT_NPROC, file size, no core files) and the
//! command under it. The command's CPU time is the kernel's: bubblewrap's monitor reaps its pid 1, so the shell's
//! and its waited-for children's times add to the monitor's children's times, which the run reads from
//! `/proc/<pid>/stat` after the monitor exited and before it reaps it (`sandbox/supervise.rs`: `waitid` with
//! `WNOWAIT`); nothing in the candidate's folder is read for it. (Without `--as-pid-1` bubblewrap's init reports the
//! exit and the monitor exits without reaping it, so the time is lost.) A signal is not passed on: a command killed
//! by signal N is exit status 128 + N.
//! `command/limits.rs` has the isolation kit's `Limits::hit` name the limit hit ("exceeded the 256 MiB memory limit (the evaluator command exited with status
//! 1; stderr: MemoryError)") only on evidence, and only for an invalid candidate: CPU time for a SIGXCPU status (152, or
//! `SIGXCPU` / a shell's "CPU time limit exceeded" in its stderr) with at least the limit's CPU time used, or SIGKILL
//! (137) with the hard limit's; file size for SIGXFSZ (153, which only the kernel sends) or `EFBIG` / "File size limit
//! exceeded" in its stderr; memory for an allocation failure in its stderr or `correct.json`'s error (`MemoryError`,
//! `ENOMEM`, `std::bad_alloc`, Rust's "memory allocation of", "out of memory", not a GPU's); processes for `EAGAIN`
//! from starting a process or thread, never as root (the kernel does not hold root to RLIMIT_NPROC). A command that
//! exits 137 or 152 by itself is described as such, not blamed on a limit; the OOM killer is not this memory limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::confirm::{self, Confirm};
mod json;
mod limits;
mod metrics;
mod sandboxed;

use json::{metrics_from_stdout, parse_object, read_limited};
use metrics::take_metrics;

use super::python_worker::code_dir::EVAL_HELPER;
use super::{Candidate, Evaluation, Evaluator, Metric, Observed};
use crate::engine::component::{BuildContext, Component, ComponentInfo, Feature};
use crate::engine::params::{ParamError, ParamSpec, ParamType, param_table};
use crate::engine::platform;
use crate::engine::sandbox::environment::{self, Profile};
use crate::engine::sandbox::isolation::{self, Isolation, Sandbox};
use crate::engine::sandbox::limits::Allowance;
use crate::engine::sandbox::supervise::{Ended, GroupGuard, Streams, supervise};
use crate::engine::sandbox::{bwrap, paths, prlimit, run_as};
use crate::engine::task::TaskKind;

/// Parameters of [`CommandEvaluator`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommandParams {
    /// The command and its arguments, with `{program}`, `{results_dir}`,
    /// `{task_dir}` and `{python}` replaced.
    pub argv: Vec<String>,
    /// Wall-clock limit per candidate, in seconds.
    pub timeout_secs: f64,
    /// The interpreter `{python}` stands for.
    pub python: String,
    /// The sandbox, the network, read paths and the limits (without the
    /// sandbox, no limit is applied).
    #[serde(flatten)]
    pub isolation: Isolation,
    /// What a candidate may read and use, and the output kept
    /// ([`Allowance`]).
    #[serde(flatten)]
    pub allowance: Allowance,
    /// Confirming a would-be best ([`super::confirm`]).
    #[serde(flatten)]
    pub confirm: Confirm,
}

/// ShinkaEvolve's command line for a task's `evaluate.py` (the default
/// `argv`).
pub const SHINKA_ARGV: [&str; 6] = [
    "{python}",
    "evaluate.py",
    "--program_path",
    "{program}",
    "--results_dir",
    "{results_dir}",
];

impl Default for CommandParams {
    /// ShinkaEvolve's command line, a minute per candidate, `python3`.
    fn default() -> Self {
        Self {
            argv: SHINKA_ARGV.iter().map(|a| (*a).to_owned()).collect(),
            timeout_secs: 60.0,
            python: "python3".to_owned(),
            isolation: Isolation::default(),
            allowance: Allowance::default(),
            confirm: Confirm::default(),
        }
    }
}

/// Runs an executable per candidate and reads the metrics it reports (see
/// the module docs).
pub struct CommandEvaluator {
    params: CommandParams,
    task_dir: PathBuf,
    suffix: String,
    /// ShinkaEvolve's rules: a missing `correct.json` is incorrect, a
    /// missing `combined_score` is 0.
    shinka: bool,
    /// Candidates in flight at once (`BuildContext.parallel`).
    permits: Semaphore,
    /// `bwrap` and `prlimit`, found at build (None: `sandbox: none`).
    jail: Option<(PathBuf, PathBuf)>,
    /// The private folder the candidates' folders go in (created at first
    /// use, removed with the evaluator).
    scratch: tokio::sync::OnceCell<Result<tempfile::TempDir, String>>,
    /// As root: the task folder's copy the sandbox's user can read, if it
    /// needs one (made at first use, in the scratch dir).
    task_copy: tokio::sync::OnceCell<Result<Option<PathBuf>, String>>,
    /// The task's hidden paths, handed to the command (`galapagos_eval`
    /// keeps them from candidates).
    hidden: Vec<PathBuf>,
    next: AtomicU64,
}

impl std::fmt::Debug for CommandEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandEvaluator")
            .field("params", &self.params)
            .field("task_dir", &self.task_dir)
            .finish_non_exhaustive()
    }
}

/// The `command` evaluator's own parameters (the table joins
/// [`isolation::SPECS`] and [`confirm::SPECS`] after them).
const OWN_SPECS: &[ParamSpec] = &[
    ParamSpec {
        key: "argv",
        doc: "The command and its arguments, run in the task folder; {program}, {results_dir}, \
              {task_dir} and {python} are replaced (without {program}, the program and the results \
              folder are appended). Default: ShinkaEvolve's {python} evaluate.py --program_path \
              {program} --results_dir {results_dir}",
        ty: ParamType::TextList,
    },
    ParamSpec {
        key: "python",
        doc: "The interpreter {python} stands for (a name on PATH or a path)",
        ty: ParamType::Text,
    },
    isolation::timeout_spec(
        "Wall-clock limit per candidate in seconds; the command's whole process group is killed when \
         it is exceeded",
    ),
];

impl Component for CommandEvaluator {
    type Slot = dyn Evaluator;
    type Params = CommandParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "command",
        type_name: "CommandEvaluator",
        summary: "Runs any executable per candidate ({program}, {results_dir}); metrics from metrics.json \
                  or JSON on stdout, validity from correct.json (ShinkaEvolve's evaluate.py unchanged)",
        params: param_table!(OWN_SPECS, isolation::SPECS, confirm::SPECS),
    };
    const PROVIDES: &'static [Feature] = &[Feature::CommandLine];

    /// A command must be named; `read_paths` may not show a whole home.
    fn check(params: &CommandParams) -> Result<(), ParamError> {
        if params.argv.first().is_none_or(|a| a.trim().is_empty()) {
            return Err(ParamError {
                key: "argv".to_owned(),
                reason: "name the command to run, e.g. [\"{python}\", \"evaluate.py\", \"--program_path\", \
                         \"{program}\", \"--results_dir\", \"{results_dir}\"]"
                    .to_owned(),
            });
        }
        params.allowance.check()
    }

    /// With the sandbox, `bwrap` and `prlimit` must be installed.
    fn build(params: CommandParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        platform::runs_here().map_err(|reason| ParamError {
            key: "sandbox".to_owned(),
            reason,
        })?;
        let jail = match params.isolation.sandbox {
            Sandbox::None => None,
            Sandbox::Bwrap => {
                let refuse = |reason| ParamError {
                    key: "sandbox".to_owned(),
                    reason,
                };
                let bwrap = bwrap::find_bwrap().map_err(refuse)?;
                Some((bwrap, prlimit::find_prlimit().map_err(refuse)?))
            }
        };
        Ok(Self {
            jail,
            task_dir: ctx.task.dir.clone(),
            suffix: ctx.task.suffix.clone(),
            shinka: ctx.task.kind == TaskKind::ShinkaEvolve,
            permits: Semaphore::new(ctx.parallel.max(1)),
            scratch: tokio::sync::OnceCell::new(),
            task_copy: tokio::sync::OnceCell::new(),
            hidden: crate::engine::task::hidden::hidden_paths(&ctx.task.dir, &ctx.task.config)
                .unwrap_or_default(),
            next: AtomicU64::new(0),
            params,
        })
    }

    /// The card's command and the candidates it runs, on this machine.
    fn reach(params: &CommandParams) -> Option<crate::engine::component::Reach> {
        Some(params.isolation.reach(
            &params.allowance,
            crate::engine::component::Runs::Command(params.argv.clone()),
            crate::engine::component::Place::ThisMachine,
            &[],
        ))
    }
}

/// The scratch dir's dir holding `galapagos_eval.py`: the command's `PYTHONPATH`.
const HELPER_DIR: &str = "lib";

/// Write `galapagos_eval.py` into `scratch`'s [`HELPER_DIR`].
fn write_helper(scratch: &Path) -> Result<(), String> {
    let lib = scratch.join(HELPER_DIR);
    std::fs::create_dir_all(&lib)
        .and_then(|()| std::fs::write(lib.join("galapagos_eval.py"), EVAL_HELPER))
        .map_err(|e| {
            format!(
                "cannot write the evaluator's helper in {}: {e}",
                lib.display()
            )
        })
}

impl CommandEvaluator {
    async fn scratch(&self) -> Result<&Path, String> {
        self.scratch
            .get_or_init(|| async {
                let mut builder = tempfile::Builder::new();
                builder.prefix("galapagos-command-");
                let in_ram = std::env::var_os("TMPDIR")
                    .is_none()
                    .then(|| Path::new("/dev/shm"))
                    .filter(|p| p.is_dir())
                    .and_then(|p| builder.tempdir_in(p).ok());
                let dir = match in_ram {
                    Some(d) => d,
                    None => builder.tempdir().map_err(|e| {
                        format!("cannot create a private temp dir for the evaluator: {e}")
                    })?,
                };
                write_helper(dir.path())?;
                Ok(dir)
            })
            .await
            .as_ref()
            .map(tempfile::TempDir::path)
            .map_err(Clone::clone)
    }

    /// As root, the task folder as `user` sees it ([`run_as::stage_task`]),
    /// decided once per evaluator; `helper_dir`'s parent is the private dir.
    async fn task_copy(
        &self,
        user: run_as::RunAs,
        helper_dir: &Path,
    ) -> Result<Option<PathBuf>, String> {
        self.task_copy
            .get_or_init(|| async {
                let private = helper_dir.parent().unwrap_or(helper_dir);
                let hidden = bwrap::hidden_dirs(&paths::private_dirs());
                run_as::stage_task(user, &self.task_dir, private, &hidden)
            })
            .await
            .clone()
    }

    /// `argv` with the placeholders replaced, its program resolved against
    /// the task folder when it is a relative path.
    fn command_line(&self, program: &Path, results: &Path) -> Vec<String> {
        let fill = |a: &str| {
            a.replace("{program}", &program.to_string_lossy())
                .replace("{results_dir}", &results.to_string_lossy())
                .replace("{task_dir}", &self.task_dir.to_string_lossy())
                .replace("{python}", &self.params.python)
        };
        let mut argv: Vec<String> = self.params.argv.iter().map(|a| fill(a)).collect();
        if !self.params.argv.iter().any(|a| a.contains("{program}")) {
            argv.push(program.to_string_lossy().into_owned());
            argv.push(results.to_string_lossy().into_owned());
        }
        if let Some(first) = argv.first_mut()
            && first.contains('/')
            && Path::new(first.as_str()).is_relative()
        {
            *first = self
                .task_dir
                .join(first.as_str())
                .to_string_lossy()
                .into_owned();
        }
        argv
    }

    async fn run(&self, candidate: &Candidate) -> Evaluation {
        let scratch = match self.scratch().await {
            Ok(s) => s,
            Err(e) => {
                return Evaluation {
                    evaluator_failed: true,
                    ..Evaluation::invalid(e)
                };
            }
        };
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = scratch.join(format!("c{}-{n}", candidate.id));
        // a single file as `main<suffix>`, a folder as `program/`: the
        // candidate's own copy, inside the one folder its sandbox may write
        let (program, prepared) = match candidate.content.single_text() {
            Some(text) => {
                let program = dir.join(format!("main{}", self.suffix));
                let written =
                    std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&program, text));
                (program, written)
            }
            None => {
                let program = dir.join("program");
                let written = candidate.content.write_to(&program);
                (program, written)
            }
        };
        let results = dir.join("results");
        let prepared = prepared.and_then(|()| std::fs::create_dir_all(&results));
        if let Err(e) = prepared {
            return Evaluation::invalid(format!(
                "cannot write the candidate to {}: {e}",
                dir.display()
            ));
        }
        let evaluation = self
            .run_in(&program, &results, &scratch.join(HELPER_DIR))
            .await;
        let _ = std::fs::remove_dir_all(&dir);
        evaluation
    }

    async fn run_in(&self, program: &Path, results: &Path, helper_dir: &Path) -> Evaluation {
        // In the sandbox the command sees its folder's copy.
        let argv = match (&self.jail, program.file_name()) {
            (Some(_), Some(name)) => {
                let work = Path::new(sandboxed::WORK);
                self.command_line(&work.join(name), &work.join("results"))
            }
            _ => self.command_line(program, results),
        };
        let Some((exe, args)) = argv.split_first() else {
            return Evaluation::invalid("the evaluator has no command (argv is empty)".to_owned());
        };
        let mut cmd = match &self.jail {
            None => {
                let mut cmd = tokio::process::Command::new(exe);
                cmd.args(args);
                cmd
            }
            Some((bwrap, prlimit)) => {
                if !sandboxed::exists(exe) {
                    return Evaluation {
                        evaluator_failed: true,
                        ..Evaluation::invalid(format!(
                            "cannot run the evaluator command `{exe}` (in {}): it is not found",
                            self.task_dir.display()
                        ))
                    };
                }
                let candidate_dir = program.parent().unwrap_or(results);
                let ids = match platform::user_ids() {
                    Ok(ids) => ids,
                    Err(e) => return Evaluation::invalid(e),
                };
                let run_as = run_as::run_as(ids.0, run_as::NOBODY);
                let task_copy = match run_as {
                    Some(user) => {
                        if let Err(e) = run_as::hand_over(candidate_dir, user) {
                            return Evaluation::invalid(format!(
                                "cannot give the candidate's folder {} to the sandbox's user: {e}",
                                candidate_dir.display()
                            ));
                        }
                        match self.task_copy(user, helper_dir).await {
                            Ok(copy) => copy,
                            Err(e) => {
                                return Evaluation {
                                    evaluator_failed: true,
                                    ..Evaluation::invalid(e)
                                };
                            }
                        }
                    }
                    None => None,
                };
                let cell = sandboxed::Cell {
                    network: self.params.isolation.network,
                    task_dir: &self.task_dir,
                    helper_dir,
                    candidate_dir,
                    python: &self.params.python,
                    program: exe,
                    read_paths: &self.params.allowance.read_paths,
                    run_as,
                    ids,
                    task_copy: task_copy.as_deref(),
                    limits: self.params.allowance.resolve(self.params.timeout_secs),
                };
                sandboxed::command(bwrap, prlimit, &cell, &argv)
            }
        };
        cmd.env_clear()
            .envs(Profile::Command.filter(std::env::vars_os()))
            .env("PYTHONPATH", helper_dir)
            .envs(environment::hidden_var(&self.hidden));
        if self.jail.is_some() {
            let (home, tmp) = sandboxed::private_home_and_tmp();
            cmd.env("HOME", home).env("TMPDIR", tmp);
        }
        cmd.current_dir(&self.task_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        platform::own_group(&mut cmd);
        // The sandbox sends its results back on the write end of a pipe
        // given as its stdin (the command's own is /dev/null).
        let mut sent = None;
        if self.jail.is_some() {
            match std::io::pipe() {
                Ok((reader, writer)) => {
                    cmd.stdin(Stdio::from(writer));
                    sent = platform::reader_pipe(reader).ok();
                }
                Err(e) => {
                    return Evaluation::invalid(format!("cannot make a pipe for the results: {e}"));
                }
            }
        }
        let spawned = cmd.spawn();
        // The pipe's write end is the child's alone from here.
        drop(cmd);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                return Evaluation {
                    evaluator_failed: true,
                    ..Evaluation::invalid(format!(
                        "cannot run the evaluator command `{exe}` (in {}): {e}",
                        self.task_dir.display()
                    ))
                };
            }
        };
        let guard = GroupGuard::new(child.id());
        let Some((out, err)) = platform::output_pipes(&mut child) else {
            return Evaluation::invalid("cannot read the evaluator command's output".to_owned());
        };
        let streams = Streams {
            out,
            err,
            kept: self.params.allowance.output_bytes(),
            // up to two result files' worth
            sent: sent.as_ref().map(|p| {
                (
                    p,
                    usize::try_from(2 * (json::MAX_RESULT_FILE + 64)).unwrap_or(usize::MAX),
                )
            }),
        };
        let timeout = Duration::from_secs_f64(self.params.timeout_secs);
        let Ended {
            status,
            cpu_secs,
            timed_out,
            stdout: cap_out,
            stderr: cap_err,
            sent: sent_bytes,
            ..
        } = supervise(&mut child, guard, streams, timeout).await;
        let reported = sandboxed::Reported::parse(&sent_bytes);
        let results = match sent {
            Some(_) => Results::Sent(&reported),
            None => Results::Folder(results),
        };
        let stdout_text = cap_out.text();
        let mut observed = Observed::default();
        let mut private = BTreeMap::new();
        if timed_out {
            observed.timeout = true;
            observed.error = Some(format!(
                "timeout: the evaluator command ran over {} s and was killed",
                self.params.timeout_secs
            ));
        } else {
            let exit = match status {
                Some(Ok(s)) => s,
                Some(Err(e)) => {
                    return Evaluation::invalid(format!(
                        "cannot wait for the evaluator command: {e}"
                    ));
                }
                None => {
                    return Evaluation::invalid("the evaluator command did not finish".to_owned());
                }
            };
            self.read_results(&results, &stdout_text, exit, &mut observed, &mut private);
        }
        let mut artifacts = std::mem::take(&mut observed.artifacts);
        cap_out.attach(&mut artifacts, "stdout");
        cap_err.attach(&mut artifacts, "stderr");
        observed.artifacts = artifacts;
        let mut evaluation = observed.judge();
        evaluation.private = private;
        if let (Some(limits), Some(error), Some(Ok(status))) = (
            self.jail
                .as_ref()
                .map(|_| self.params.allowance.resolve(self.params.timeout_secs)),
            evaluation.error.as_deref().filter(|_| !timed_out),
            status,
        ) {
            let ending = limits::Ending {
                status,
                cpu_secs,
                sandboxed: true,
            };
            if let Some(named) = limits::name_limit(limits, Some(ending), &cap_err.text(), error) {
                evaluation.error = Some(named);
            }
        }
        evaluation
    }

    /// The metrics and verdict the command left, into `observed` and
    /// `private`.
    fn read_results(
        &self,
        results: &Results<'_>,
        stdout: &str,
        exit: std::process::ExitStatus,
        observed: &mut Observed,
        private: &mut BTreeMap<String, String>,
    ) {
        let metrics = match results.text("metrics.json") {
            Some(text) => match text.and_then(|t| parse_object(&t)) {
                Ok(m) => Some(m),
                Err(e) => {
                    observed.error = Some(format!("metrics.json is not a JSON object: {e}"));
                    return;
                }
            },
            None => metrics_from_stdout(stdout),
        };
        if let Some(map) = &metrics {
            take_metrics(map, observed, private);
        }
        if self.shinka
            && !observed
                .metrics
                .iter()
                .any(|(k, _)| k == crate::engine::genome::FITNESS_KEY)
        {
            observed.metrics.push((
                crate::engine::genome::FITNESS_KEY.to_owned(),
                Metric::Number(0.0),
            ));
        }
        if let Some(text) = results.text("correct.json") {
            let verdict = text.and_then(|t| parse_object(&t));
            match verdict {
                Ok(v) => match v.get("correct") {
                    Some(serde_json::Value::Bool(true)) => {}
                    Some(serde_json::Value::Bool(false)) => {
                        let why = v
                            .get("error")
                            .and_then(serde_json::Value::as_str)
                            .map(str::trim)
                            .filter(|e| !e.is_empty())
                            .unwrap_or("no reason given");
                        observed.error = Some(format!("not correct (correct.json): {why}"));
                    }
                    _ => {
                        observed.error =
                            Some("correct.json has no true/false `correct`".to_owned());
                    }
                },
                Err(e) => observed.error = Some(format!("correct.json is not a JSON object: {e}")),
            }
            return;
        }
        if self.shinka {
            let how = if exit.success() {
                String::new()
            } else {
                let ending = limits::Ending {
                    status: exit,
                    cpu_secs: None,
                    sandboxed: self.jail.is_some(),
                };
                format!("{}; ", ending.describe())
            };
            observed.error = Some(format!(
                "{how}the evaluator wrote no correct.json (ShinkaEvolve counts that as incorrect)"
            ));
        } else if !exit.success() {
            let ending = limits::Ending {
                status: exit,
                cpu_secs: None,
                sandboxed: self.jail.is_some(),
            };
            observed.error = Some(ending.describe());
        } else if metrics.is_none() {
            observed.error = Some(
                "the evaluator command reported no metrics: expected results_dir/metrics.json or a JSON \
                 object on its stdout"
                    .to_owned(),
            );
        }
    }
}

/// Where the command's result files are read: its folder (no sandbox), or
/// what its sandbox sent back.
enum Results<'a> {
    Folder(&'a Path),
    Sent(&'a sandboxed::Reported),
}

impl Results<'_> {
    /// Result file `name`'s text (or why it cannot be read); None when the
    /// command left none.
    fn text(&self, name: &str) -> Option<Result<String, String>> {
        match self {
            Self::Folder(dir) => {
                let path = dir.join(name);
                std::fs::symlink_metadata(&path)
                    .is_ok()
                    .then(|| read_limited(&path))
            }
            Self::Sent(sent) => sent.text(name),
        }
    }
}

#[async_trait::async_trait]
impl Evaluator for CommandEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        let Ok(_permit) = self.permits.acquire().await else {
            return Evaluation::invalid("the evaluator is shutting down".to_owned());
        };
        self.run(candidate).await
    }

    fn timeout_secs(&self) -> Option<f64> {
        Some(self.params.timeout_secs)
    }

    /// Each evaluation is a new process already.
    fn confirmation(&self) -> Confirm {
        self.params.confirm
    }

    fn unsandboxed(&self) -> Option<String> {
        self.jail.is_none().then(|| {
            "the evaluator command runs without a sandbox (evaluator.sandbox: none): it and the \
             candidates can read and change your files, use the network and leave processes behind"
                .to_owned()
        })
    }
}
