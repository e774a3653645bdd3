//! The tools: each one's name, description and input schema, and the call
//! that runs it. Arguments are read by serde with unknown fields refused,
//! so a wrong call is a tool error naming the argument; the work that
//! blocks (cards, task folders, starting a run, writing files) runs on
//! tokio's blocking threads.

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde::Deserialize;
use serde_json::{Value, json};

use super::reply::{Outcome, args, result};

/// A schema object from JSON.
fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

const RUN: &str = "The run folder start_run returned (or listed by list_runs), or \
                   ssh://[user@]host[:port]/path for a run on a server.";

/// Every tool, in the order an agent uses them.
pub(super) fn list() -> Vec<Tool> {
    let folder = json!({"type": "string", "description": "A folder to look in as well (its card files, or its task folders)."});
    vec![
        Tool::new(
            "list_cards",
            "The search methods (cards) there are: every built-in card with what it is for and when to use it, \
             and the card files in `folder` if given. Each says its default budget and the smallest that makes sense.",
            schema(
                json!({"type": "object", "properties": {"folder": folder}, "additionalProperties": false}),
            ),
        ),
        Tool::new(
            "list_tasks",
            "The tasks there are: every built-in task with what it is, and the task folders in `folder` if given \
             (a task folder: initial_program.<ext>, evaluator.py, README.md).",
            schema(
                json!({"type": "object", "properties": {"folder": folder}, "additionalProperties": false}),
            ),
        ),
        Tool::new(
            "validate_card",
            "Check a card: a file's path, a built-in card's name, NAMESPACE/NAME[@VERSION] on a hub, or the card's \
             YAML text. Every error comes back at once, each with line:col and the field.",
            schema(json!({"type": "object", "properties": {
                "card": {"type": "string", "description": "A card file's path, a built-in card's name, or YAML text."}
            }, "required": ["card"], "additionalProperties": false})),
        ),
        Tool::new(
            "start_run",
            "Start a search in the background (as `galapagos run --detach`): an ordinary run folder under the runs \
             folder, which the studio and `galapagos runs` see. Returns {\"run\": FOLDER}. A budget below what the \
             card needs to search is refused with the smallest that makes sense, unless insist is true. A card that \
             lowers the sandbox's isolation is refused: the person must start it themselves.",
            schema(json!({"type": "object", "properties": {
                "card": {"type": "string", "description": "A built-in card's name (list_cards), a card file's path, or the card's YAML text."},
                "task": {"type": "string", "description": "A built-in task's name (list_tasks) or a task folder."},
                "iterations": {"type": "integer", "minimum": 1, "description": "The budget: iterations (model proposals) to run."},
                "seed": {"type": "integer", "minimum": 0, "description": "The run's seed (default: the card's)."},
                "parallel": {"type": "integer", "minimum": 1, "description": "Iterations in flight at once (default: the card's)."},
                "model": {"type": "string", "description": "The model name sent to the configured endpoint (default: the user's settings, else the built-in offline model)."},
                "out": {"type": "string", "description": "The folder to make the run folder in (default: ./runs when it exists, else the studio's runs folder)."},
                "insist": {"type": "boolean", "description": "Run even a budget below the smallest that makes sense for the card."}
            }, "required": ["card", "task", "iterations"], "additionalProperties": false})),
        ),
        Tool::new(
            "run_status",
            "Where a run stands: state (running, paused, completed, stopped, failed…), done, iteration of \
             max_iterations, genomes, best score and id, tokens, cost, notes and pins in force, the last errors.",
            schema(
                json!({"type": "object", "properties": {"run": {"type": "string", "description": RUN}},
                "required": ["run"], "additionalProperties": false}),
            ),
        ),
        Tool::new(
            "list_runs",
            "The runs under a folder (default: the runs folder start_run uses), each with card, task, state, \
             progress, best score and cost.",
            schema(json!({"type": "object", "properties": {
                "folder": {"type": "string", "description": "A folder of runs, here or ssh://host/path."}
            }, "additionalProperties": false})),
        ),
        Tool::new(
            "get_genome",
            "One program of a run (the best when no id): its program (or files), scores, fitness, error, diff \
             from its parent, evaluator artifacts, parent and usage.",
            schema(json!({"type": "object", "properties": {
                "run": {"type": "string", "description": RUN},
                "id": {"type": "integer", "minimum": 0, "description": "The genome's id (default: the run's best)."}
            }, "required": ["run"], "additionalProperties": false})),
        ),
        Tool::new(
            "steer_run",
            "Steer a running search as a person would: notes for every following prompt (empty string: none), pin \
             genomes as inspirations, unpin them, pause, resume or stop. Waits until the run shows each change taken.",
            schema(json!({"type": "object", "properties": {
                "run": {"type": "string", "description": RUN},
                "notes": {"type": "string", "description": "Notes shown to the model in every following prompt."},
                "pin": {"type": ["integer", "array"], "items": {"type": "integer"}, "description": "Genome id(s) to pin as inspirations."},
                "unpin": {"type": ["integer", "array"], "items": {"type": "integer"}, "description": "Genome id(s) to unpin."},
                "pause": {"type": "boolean"},
                "resume": {"type": "boolean"},
                "stop": {"type": "boolean", "description": "Stop the run (its record is kept)."}
            }, "required": ["run"], "additionalProperties": false})),
        ),
        Tool::new(
            "compare_runs",
            "Several runs side by side, the best first: card, task, state, iterations, best score, tokens, cost, time.",
            schema(json!({"type": "object", "properties": {
                "runs": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Run folders (or ssh:// targets)."}
            }, "required": ["runs"], "additionalProperties": false})),
        ),
        Tool::new(
            "apply_genome",
            "Write a run's program (the best when no id) into a folder, as `galapagos apply`: the whole program into \
             a new or empty folder, else only the files it changed. Files with local changes are never overwritten.",
            schema(json!({"type": "object", "properties": {
                "run": {"type": "string", "description": RUN},
                "id": {"type": "integer", "minimum": 0, "description": "The genome's id (default: the run's best)."},
                "to": {"type": "string", "description": "The folder to write into."}
            }, "required": ["run", "to"], "additionalProperties": false})),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FolderArgs {
    #[serde(default)]
    folder: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CardArgs {
    card: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    run: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunsArgs {
    runs: Vec<String>,
}

/// Run `work` on a blocking thread.
async fn blocking(work: impl FnOnce() -> Outcome + Send + 'static) -> Outcome {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(format!("the tool failed: {e}")))
}

/// Call tool `name` with `arguments`.
pub(super) async fn call(name: &str, arguments: Option<JsonObject>) -> CallToolResult {
    let outcome: Outcome = match name {
        "list_cards" => match args::<FolderArgs>(name, arguments) {
            Ok(a) => blocking(move || super::catalog::list_cards(a.folder.as_deref())).await,
            Err(e) => Err(e),
        },
        "list_tasks" => match args::<FolderArgs>(name, arguments) {
            Ok(a) => blocking(move || super::catalog::list_tasks(a.folder.as_deref())).await,
            Err(e) => Err(e),
        },
        "validate_card" => match args::<CardArgs>(name, arguments) {
            Ok(a) => blocking(move || super::catalog::validate(&a.card)).await,
            Err(e) => Err(e),
        },
        "start_run" => match args::<super::start::StartArgs>(name, arguments) {
            Ok(a) => blocking(move || super::start::start(a)).await,
            Err(e) => Err(e),
        },
        "run_status" => match args::<RunArgs>(name, arguments) {
            Ok(a) => super::runs::status(&a.run).await,
            Err(e) => Err(e),
        },
        "list_runs" => match args::<FolderArgs>(name, arguments) {
            Ok(a) => super::runs::list(a.folder.as_deref()).await,
            Err(e) => Err(e),
        },
        "get_genome" => match args::<super::runs::GenomeArgs>(name, arguments) {
            Ok(a) => super::runs::genome(a).await,
            Err(e) => Err(e),
        },
        "steer_run" => match args::<super::runs::SteerArgs>(name, arguments) {
            Ok(a) => super::runs::steer(a).await,
            Err(e) => Err(e),
        },
        "compare_runs" => match args::<RunsArgs>(name, arguments) {
            Ok(a) => super::runs::compare(&a.runs).await,
            Err(e) => Err(e),
        },
        "apply_genome" => match args::<super::runs::ApplyArgs>(name, arguments) {
            Ok(a) => super::runs::apply(a).await,
            Err(e) => Err(e),
        },
        other => {
            let names: Vec<String> = list().iter().map(|t| t.name.to_string()).collect();
            Err(format!(
                "no tool `{other}`{} (the tools: {})",
                crate::engine::suggest::did_you_mean(other, names.iter().map(String::as_str)),
                names.join(", ")
            ))
        }
    };
    result(outcome)
}
