//! Slot 5 — Evaluator: the deterministic verifiable scorer, supplied by the
//! task. Maps a candidate to a metric dict plus artifacts.
//!
//! # The folder and its process model
//!
//! The folder's seams (`engine/evaluator/`):
//!
//! | file | one job |
//! |---|---|
//! | `mod.rs` | the `Evaluator` trait, `Candidate`, `Evaluation`, and **the validity rule** (`Observed::judge`, its one owner): a backend reports the raw metrics it saw (`Metric`: number, bool, None, text, other), its artifacts, an error and whether it timed out; `judge` decides |
//! | `subprocess.rs` | kind `subprocess`: params, the trait impl, starting and replacing the warm worker |
//! | `command/` | kind `command` (`mod.rs`): one process per candidate, any executable; `sandboxed.rs` its bubblewrap sandbox and limits, `limits.rs` naming the limit hit, `json.rs` / `metrics.rs` reading what it reports |
//! | `confirm.rs` | re-evaluating a would-be best (`evaluator.confirm`); its three settings are a fragment too (`Confirm`) |
//! | `slurm/` | kind `slurm` (`mod.rs`): candidates as job steps on a Slurm cluster (see below) |
//! | `python_worker/mod.rs` | the worker and its children: taking a ready child, one evaluation, killing what is left |
//! | `python_worker/lanes.rs` | the lane socket the children connect on; a connection is kept only when its peer (`SO_PEERCRED`) is a child of the zygote |
//! | `python_worker/protocol.rs` | the wire formats (worker lines, lane requests, length-prefixed results) |
//! | `python_worker/code_dir.rs` | the worker's code (`galapagos_worker.py`, `galapagos_sandbox.py`, `galapagos_eval.py`, the `openevolve` shim) in the user's cache, and the private per-run dir |
//! | `python_worker/in_sandbox.rs` | the worker's interpreter (found outside the sandbox), its candidates' scratch dirs, the `isolate` entry of its configuration |
//!
//! The isolation kit every evaluator and the coding-agent proposer use is `engine/sandbox/`, whose module
//! documentation lists its files: `isolation.rs` (`Isolation`: `sandbox`, `network`), `limits.rs` (the one limits
//! table: `Allowance`, the card's `read_paths`, limits and `output_limit_kb`; `Limits`; the rlimits; the one
//! explainer, `Limits::hit`), `environment.rs` (the one allowlist and its profiles), `paths.rs`, `interpreter.rs`,
//! `capture.rs`, `bwrap.rs` (the bubblewrap command line), `run_as.rs`, `prlimit.rs`, `process.rs`, `supervise.rs`.
//!
//! A backend (the Slurm one, a container per candidate next) is one more file or folder beside `command/` that reports an
//! `Observed` and uses the isolation kit (`engine::sandbox`).
//!
//!
//! **Scoring apart from the candidate** (`assets/python/galapagos_eval.py`): the sandbox separates a candidate from the
//! machine and from other candidates, but an evaluator that calls the candidate in its own process shares that process
//! with it. `galapagos_eval.run` / `run_with` fork the evaluator's child: the candidate's process gets its own process
//! group and a parent-death signal, keeps only the standard streams (stdin from `/dev/null`) and the write end of a
//! fresh result pipe, unmaps every shared mapping, and enters a Landlock domain of its own; the evaluator's process is
//! made non-dumpable, so the candidate cannot ptrace it, write its memory or take its descriptors. The result is
//! length-prefixed JSON (numeric arrays tagged and base64-encoded), size-capped and parsed strictly (no duplicate keys,
//! only plain data); a crash, a limit, a timeout or anything else is `CandidateError`. It forks rather than starting a
//! fresh interpreter: a call costs ~3.5 ms of CPU here (0.3 ms in-process), a fresh interpreter 45–70 ms (270 ms and
//! more with numpy), and a fork keeps `run_with`'s harness a plain closure. The shipped Python tasks use it; the validity rule still judges
//! what the evaluator returns. When the task has hidden paths it starts a fresh interpreter instead (`posix_spawn`
//! of `sys.executable -I`, the request on its stdin, the result pipe its one other descriptor, an environment of
//! `PATH`, `HOME`, `TMPDIR` and the locale), which enters a Landlock domain that handles reading, listing, running,
//! writing and changing entries and grants them on every path beside the hidden ones on the way down from `/`
//! (`_visible`); without Landlock it refuses to run the candidate. `run_with`'s harness is then named by its
//! module's file and name and imported there.

use std::collections::BTreeMap;

mod command;
pub mod confirm;
mod python_worker;
mod slurm;
mod subprocess;

use crate::engine::component::{Fills, Slot, SlotTrait};
/// The sandbox-and-limits fragment every process evaluator flattens into
/// its parameters (it lives in the isolation kit, [`crate::engine::sandbox`]).
pub use crate::engine::sandbox::{Allowance, Isolation, Sandbox};
pub use command::{CommandEvaluator, CommandParams, SHINKA_ARGV};
pub use confirm::{Aggregate, Confirm, confirm};
pub use slurm::{SlurmEvaluator, SlurmParams};
pub use subprocess::{SubprocessEvaluator, SubprocessParams};

/// A candidate to score.
#[derive(Clone, Debug, Default)]
pub struct Candidate {
    /// Id the genome will get (for temp-file names and logs).
    pub id: u64,
    /// The program: a single file's text or a folder of files.
    pub content: crate::engine::tree::Tree,
}

/// The evaluator's verdict.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// False when the candidate crashed, timed out, or the evaluator reported
    /// an error; the genome is kept but never selected.
    pub valid: bool,
    /// Numeric metrics (non-finite values are rejected and make it invalid).
    pub scores: BTreeMap<String, f64>,
    /// Side output: stdout, stderr, traceback, custom artifacts.
    pub artifacts: BTreeMap<String, String>,
    /// Why it is invalid.
    pub error: Option<String>,
    /// Metrics the evaluator keeps from the model (ShinkaEvolve's
    /// `private`): recorded, never shown in a prompt.
    pub private: BTreeMap<String, String>,
    /// The evaluator itself could not run (its file does not import, its
    /// interpreter is missing, its process could not start): no candidate
    /// can score, whatever it is. `error` says why.
    pub evaluator_failed: bool,
    /// The scheduler's job and node, for an evaluator that runs candidates
    /// on a cluster.
    pub placement: Option<crate::engine::genome::Placement>,
}

impl Evaluation {
    /// An evaluation that makes the candidate invalid, saying why.
    pub fn invalid(reason: String) -> Self {
        Self {
            valid: false,
            error: Some(reason),
            ..Self::default()
        }
    }

    /// The evaluator cannot run at all (see [`Evaluation::evaluator_failed`]).
    pub fn broken(reason: String) -> Self {
        Self {
            evaluator_failed: true,
            ..Self::invalid(reason)
        }
    }
}

/// The evaluator slot (slot 5 of the loop, see ARCHITECTURE.md). `evaluate`
/// is the one required verb.
/// Implementations never panic and never hang: a crash or timeout is an
/// invalid `Evaluation` with the reason.
#[async_trait::async_trait]
pub trait Evaluator: Send + Sync {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation;

    /// The per-candidate time limit, when there is one (shown in prompts).
    fn timeout_secs(&self) -> Option<f64> {
        None
    }

    /// Get ready for the first `evaluate` (start a process, import the task's
    /// code) while the run sets up its record, so that start-up overlaps.
    /// Optional; a failure here is reported by the first `evaluate`.
    async fn warm_up(&self) {}

    /// A warning when this evaluator runs candidates' code without a sandbox
    /// by the user's choice (logged at the start of every run, shown as a
    /// badge). None for evaluators that run no candidate code of their own
    /// or run it sandboxed.
    fn unsandboxed(&self) -> Option<String> {
        None
    }

    /// Whether a candidate that would become the run's best is evaluated
    /// again before it counts, and how ([`Confirm`]; off by default).
    fn confirmation(&self) -> Confirm {
        Confirm::default()
    }
}

impl SlotTrait for dyn Evaluator {
    const SLOT: Slot = Slot::Evaluator;
}

impl<T: Evaluator + 'static> Fills<dyn Evaluator> for T {
    fn boxed(self) -> Box<dyn Evaluator> {
        Box::new(self)
    }
}

/// The metric that is the genome's fitness.
const COMBINED_SCORE: &str = "combined_score";

/// One metric as an evaluator returned it, before the validity rule.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Metric {
    Number(f64),
    Bool(bool),
    /// `None` in Python.
    Missing,
    Text(String),
    /// Anything else (a list, a dict, an object): its type and its text.
    Other {
        type_name: String,
        text: String,
    },
}

/// What an evaluator backend observed for one candidate, before the
/// validity rule: the metrics the evaluator returned (in its order), its
/// artifacts, an error (the evaluator raised, the candidate crashed, a
/// limit was hit) and whether the time limit was hit.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub metrics: Vec<(String, Metric)>,
    pub artifacts: BTreeMap<String, String>,
    pub error: Option<String>,
    pub timeout: bool,
}

impl Observed {
    /// The validity rule (its one owner; an evaluator backend only reports
    /// what it saw). Finite numbers become scores, and so do bools (0/1);
    /// `None` values are dropped; strings, lists and other values become
    /// artifacts (as text). A candidate is **invalid** when: there is an
    /// error (the evaluator raised, the candidate crashed or exited early or
    /// hit a limit, evaluator.py cannot be imported, the worker stopped
    /// answering); the time limit was hit; `combined_score` is anything but
    /// a finite number (a string, list, None or bool: the error names it and
    /// its type); any metric is NaN or infinite ("non-finite score <key>");
    /// an `error` metric or artifact is a non-empty string; a `validity` (or
    /// `valid`) score is present and <= 0; or a `timeout` score is true.
    /// Everything else is valid, even with a low score.
    pub(crate) fn judge(self) -> Evaluation {
        let Self {
            metrics,
            mut artifacts,
            error,
            timeout,
        } = self;
        let mut scores = BTreeMap::new();
        let mut problem: Option<String> = None;
        for (key, metric) in metrics {
            let fitness = key == COMBINED_SCORE;
            let not_a_number = |what: String| format!("{key} is {what}, not a number");
            match metric {
                Metric::Number(v) if v.is_finite() => {
                    scores.insert(key, v);
                }
                Metric::Number(v) => {
                    problem.get_or_insert(format!("non-finite score {key} ({v})"));
                }
                Metric::Bool(b) if fitness => {
                    let value = if b { "True" } else { "False" };
                    problem.get_or_insert(not_a_number(format!("a bool ({value})")));
                }
                Metric::Bool(b) => {
                    scores.insert(key, if b { 1.0 } else { 0.0 });
                }
                Metric::Missing if fitness => {
                    problem.get_or_insert(not_a_number("None".to_owned()));
                }
                Metric::Missing => {}
                Metric::Text(text) if fitness => {
                    problem.get_or_insert(not_a_number(format!("a string ({:?})", excerpt(&text))));
                }
                Metric::Other { type_name, text } if fitness => {
                    problem
                        .get_or_insert(not_a_number(format!("a {type_name} ({})", excerpt(&text))));
                }
                Metric::Text(text) | Metric::Other { text, .. } => {
                    artifacts.insert(key, text);
                }
            }
        }
        let reason = error
            .filter(|e| !e.trim().is_empty())
            .or_else(|| timeout.then(|| "timeout".to_owned()))
            .or(problem)
            .or_else(|| {
                artifacts
                    .get("error")
                    .filter(|e| !e.trim().is_empty())
                    .map(|e| format!("evaluator reported an error: {}", first_line(e)))
            })
            .or_else(|| {
                ["validity", "valid"].iter().find_map(|key| {
                    scores
                        .get(*key)
                        .filter(|v| **v <= 0.0)
                        .map(|v| format!("evaluator marked the candidate invalid ({key} = {v})"))
                })
            })
            .or_else(|| {
                scores
                    .get("timeout")
                    .filter(|v| **v > 0.0)
                    .map(|_| "evaluator reported a timeout".to_owned())
            });
        Evaluation {
            valid: reason.is_none(),
            scores,
            artifacts,
            error: reason,
            ..Evaluation::default()
        }
    }
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or_default()
}

/// At most 60 characters of `text`, for an error message.
fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(60).collect();
    if text.chars().nth(60).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(metrics: &[(&str, Metric)]) -> Observed {
        Observed {
            metrics: metrics
                .iter()
                .map(|(k, m)| ((*k).to_owned(), m.clone()))
                .collect(),
            ..Observed::default()
        }
    }

    fn number(v: f64) -> Metric {
        Metric::Number(v)
    }

    #[test]
    fn validity_rule() {
        let ok = observed(&[("combined_score", number(0.4))]).judge();
        assert!(ok.valid, "{ok:?}");
        assert_eq!(ok.scores["combined_score"], 0.4);

        let v = observed(&[("combined_score", number(0.4)), ("validity", number(0.0))]).judge();
        assert!(!v.valid);
        assert!(v.error.unwrap_or_default().contains("validity = 0"));

        let v = observed(&[("valid", Metric::Bool(true))]).judge();
        assert!(v.valid);
        assert_eq!(v.scores["valid"], 1.0);

        let v = observed(&[("timeout", Metric::Bool(true))]).judge();
        assert!(!v.valid);

        let v = observed(&[("combined_score", number(1.0)), ("sum", number(f64::NAN))]).judge();
        assert_eq!(v.error.as_deref(), Some("non-finite score sum (NaN)"));
        assert!(!v.scores.contains_key("sum"));

        let mut r = observed(&[("combined_score", number(1.0))]);
        r.artifacts
            .insert("error".to_owned(), "overlap\nmore".to_owned());
        let v = r.judge();
        assert!(!v.valid);
        assert_eq!(
            v.error.as_deref(),
            Some("evaluator reported an error: overlap")
        );

        let mut r = observed(&[("combined_score", number(1.0))]);
        r.artifacts.insert("error".to_owned(), "  ".to_owned());
        assert!(r.judge().valid);

        let mut r = observed(&[]);
        r.timeout = true;
        r.error = Some("timeout: evaluation exceeded 1 s and was killed".to_owned());
        let v = r.judge();
        assert!(!v.valid);
        assert!(v.error.unwrap_or_default().starts_with("timeout"));
    }

    #[test]
    fn a_combined_score_that_is_not_a_number_is_invalid_and_named() {
        let cases = [
            (
                Metric::Text("0.9".to_owned()),
                "combined_score is a string (\"0.9\"), not a number",
            ),
            (Metric::Missing, "combined_score is None, not a number"),
            (
                Metric::Bool(true),
                "combined_score is a bool (True), not a number",
            ),
            (
                Metric::Other {
                    type_name: "list".to_owned(),
                    text: "[1.0, 2.0]".to_owned(),
                },
                "combined_score is a list ([1.0, 2.0]), not a number",
            ),
        ];
        for (metric, error) in cases {
            let v = observed(&[("combined_score", metric), ("other", number(0.5))]).judge();
            assert!(!v.valid, "{v:?}");
            assert_eq!(v.error.as_deref(), Some(error));
            assert!(!v.scores.contains_key("combined_score"));
        }
        // Other metrics of those kinds are kept as scores or artifacts.
        let v = observed(&[
            ("combined_score", number(0.5)),
            ("ok", Metric::Bool(true)),
            ("note", Metric::Text("fine".to_owned())),
            ("gone", Metric::Missing),
            (
                "trace",
                Metric::Other {
                    type_name: "list".to_owned(),
                    text: "[1, 2]".to_owned(),
                },
            ),
        ])
        .judge();
        assert!(v.valid, "{v:?}");
        assert_eq!(v.scores["ok"], 1.0);
        assert_eq!(v.artifacts["note"], "fine");
        assert_eq!(v.artifacts["trace"], "[1, 2]");
        assert!(!v.scores.contains_key("gone") && !v.artifacts.contains_key("gone"));
    }
}
