//! What a tool answers: a JSON value, or an error the agent reads (an
//! `isError` result, never a protocol error, which clients hide).

use rmcp::model::{CallToolResult, ContentBlock};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A tool's outcome: its answer, or what to fix.
pub(super) type Outcome = Result<Value, String>;

/// The result sent for `outcome`.
pub(super) fn result(outcome: Outcome) -> CallToolResult {
    match outcome {
        Ok(value) => CallToolResult::structured(value),
        Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
    }
}

/// The arguments of `tool` as `T`, or an error naming the tool, what was
/// wrong and where (unknown fields are refused, with the known ones).
pub(super) fn args<T: DeserializeOwned>(
    tool: &str,
    arguments: Option<serde_json::Map<String, Value>>,
) -> Result<T, String> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            format!("{tool}: {inner}")
        } else {
            format!("{tool}: argument `{path}`: {inner}")
        }
    })
}

/// A one-or-many list argument (`pin: 3` or `pin: [3, 4]`).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    #[default]
    None,
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    pub fn into_vec(self) -> Vec<T> {
        match self {
            Self::None => Vec::new(),
            Self::One(t) => vec![t],
            Self::Many(v) => v,
        }
    }
}
