//! The wire formats between the run and the Python worker
//! (`assets/python/galapagos_worker.py`, whose module docs give the whole
//! protocol): the worker's greeting and status reports (JSON lines on its
//! stdout), the first line of a child's lane connection (with the child's
//! output pipes), a request (one JSON line on the lane) and a result
//! (length-prefixed JSON on the lane).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::evaluator::{Evaluation, Metric, Observed};
use crate::engine::platform::{self, OwnedFd, UnixStream};
use crate::engine::sandbox::limits::{Evidence, Limits, Raised};
use crate::engine::sandbox::process::wait_signal;

/// Bytes of big-endian length before a result's JSON.
pub(crate) const RESULT_HEADER: usize = 8;
/// Largest result a child may send (its artifacts are clipped far below this).
pub(crate) const MAX_RESULT_BYTES: u64 = 64 << 20;

/// The first line of a lane connection (at most 16 bytes, read one at a
/// time so nothing after it is consumed) and the fds that came with it.
pub(crate) async fn read_hello(stream: &UnixStream) -> Option<(String, Vec<OwnedFd>)> {
    let mut line = Vec::new();
    let mut fds = Vec::new();
    loop {
        stream.readable().await.ok()?;
        let mut byte = [0u8; 1];
        match platform::recv_with_fds(stream, &mut byte, &mut fds) {
            Ok(0) => return None,
            Ok(_) if byte[0] == b'\n' => return String::from_utf8(line).ok().map(|l| (l, fds)),
            Ok(_) if line.len() < 16 => line.push(byte[0]),
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
        }
    }
}

/// The worker's report of how a child ended.
#[derive(Deserialize)]
pub(crate) struct Exited {
    pub exited: u32,
    pub status: i32,
    /// CPU seconds it used.
    #[serde(default)]
    pub cpu: Option<f64>,
}

/// One candidate for a child, on its lane.
#[derive(Serialize)]
pub(crate) struct Request<'a> {
    pub id: u64,
    /// A single-file program's text (empty for a folder).
    pub program: &'a str,
    /// A folder program: `{"files": {path: text}, "binary": {path: base64}}`,
    /// written into a folder of the child's own scratch dir, whose path the
    /// evaluator gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<&'a crate::engine::tree::Tree>,
    pub timeout: f64,
    pub cascade: bool,
    pub thresholds: &'a [f64],
}

/// The worker's first line: ready (with the zygote's pid) or why it cannot
/// serve.
#[derive(Deserialize)]
pub(crate) struct Hello {
    pub ready: bool,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub traceback: String,
    /// Not ready because evaluator.py itself did not import (otherwise the
    /// worker could not start around it: the sandbox, its socket, Python).
    #[serde(default)]
    pub import_failed: bool,
    /// The zygote's pid (lanes are accepted from its children only).
    #[serde(default)]
    pub zygote: Option<u32>,
    /// The worker's code ran without up-to-date bytecode beside it.
    #[serde(default)]
    pub stale: bool,
}

/// A candidate's result, as its child sent it (or as the run made it up for
/// a timeout or a crash).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Reply {
    /// Every metric as `[key, kind, value]` (the worker's `raw_metric`).
    #[serde(default)]
    pub metrics: Vec<(String, String, serde_json::Value)>,
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub timeout: bool,
    /// The exception the evaluator raised and those it came from (its
    /// classes, `errno`, whether it was starting a process), for naming a
    /// limit it hit.
    #[serde(default)]
    pub exception: Vec<Raised>,
    /// The wait status of a child that ended without a result.
    #[serde(skip)]
    pub status: Option<i32>,
    /// CPU seconds the child used, when it ended without a result.
    #[serde(skip)]
    pub cpu_secs: Option<f64>,
    /// The child will serve another candidate.
    #[serde(default)]
    pub reusable: bool,
}

impl Reply {
    /// Name the limit of `limits` the candidate hit first in its error,
    /// when what it raised, or how its process ended, shows one
    /// ([`Limits::hit`]).
    pub(crate) fn explain_limit(&mut self, limits: Limits) {
        let Some(error) = self.error.as_deref() else {
            return;
        };
        // what the evaluator reported counts as what the candidate's process
        // said (`galapagos_eval`: "construct()'s process was killed by
        // SIGXCPU")
        let said = [error];
        let evidence = Evidence {
            signal: self.status.and_then(wait_signal),
            cpu_secs: self.cpu_secs,
            raised: &self.exception,
            said: &said,
            ..Evidence::default()
        };
        if let Some(hit) = limits.hit(&evidence) {
            self.error = Some(hit.name(error));
        }
    }

    /// The evaluation this reply stands for (the validity rule is
    /// [`Observed::judge`]'s).
    pub(crate) fn into_evaluation(self) -> Evaluation {
        Observed {
            metrics: self
                .metrics
                .into_iter()
                .map(|(key, kind, value)| (key, metric(&kind, value)))
                .collect(),
            artifacts: self.artifacts,
            error: self.error,
            timeout: self.timeout,
        }
        .judge()
    }
}

/// A metric from its wire kind and value.
fn metric(kind: &str, value: serde_json::Value) -> Metric {
    use serde_json::Value;
    match (kind, value) {
        ("number", Value::Number(n)) => Metric::Number(n.as_f64().unwrap_or(f64::NAN)),
        ("nonfinite", Value::String(s)) => Metric::Number(match s.as_str() {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => f64::NAN,
        }),
        ("bool", Value::Bool(b)) => Metric::Bool(b),
        ("none", _) => Metric::Missing,
        ("text", Value::String(s)) => Metric::Text(s),
        (kind, value) => Metric::Other {
            type_name: kind.to_owned(),
            text: match value {
                Value::String(s) => s,
                other => other.to_string(),
            },
        },
    }
}
