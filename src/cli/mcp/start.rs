//! `start_run`: a detached run, as `galapagos run CARD --task TASK
//! --detach` starts one ([`crate::cli::detach::launch`]): everything is
//! checked first (the card, the settings, the task, the budget, the
//! isolation, the model), then the run folder is made under the runs
//! folder and the run started in it, in a session of its own; the tool
//! waits until the run answers on its socket (or says why it ended) and
//! returns its folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use super::reply::Outcome;
use crate::cli::ModelArgs;
use crate::engine::launch::RunPlan;
use crate::engine::registry::Registry;

/// How long `start_run` waits for the run to answer on its socket.
const ANSWER: Duration = Duration::from_secs(60);

/// `start_run`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StartArgs {
    pub card: String,
    pub task: String,
    pub iterations: u64,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub parallel: Option<u32>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub out: Option<String>,
    #[serde(default)]
    pub insist: bool,
}

/// Where a card given as YAML text is kept for its run: the per-user data
/// dir, named by the text's hash.
fn card_file(yaml: &str) -> Result<PathBuf, String> {
    let digest = ring::digest::digest(&ring::digest::SHA256, yaml.as_bytes());
    let name: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = crate::engine::builtin::data_dir().join("mcp-cards");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// A path argument made absolute (the detached run starts from this
/// server's folder too, but says absolute paths in its record).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `start_run`.
pub(super) fn start(args: StartArgs) -> Outcome {
    let registry = Registry::builtin();
    let card =
        super::catalog::load_card(&args.card, &registry).map_err(|e| e.message(&args.card))?;
    let card = card
        .with_settings(|general, seed| {
            general.max_iterations = args.iterations;
            if let Some(s) = args.seed {
                *seed = s;
            }
            if let Some(p) = args.parallel {
                general.parallel = p;
            }
        })
        .map_err(|problems| {
            let lines: Vec<String> = problems
                .iter()
                .map(|p| match p.field.as_str() {
                    "general.max_iterations" => format!("iterations: {}", p.message),
                    "general.parallel" if args.parallel.is_some() => {
                        format!("parallel: {}", p.message)
                    }
                    field => format!("the card's {field}: {}", p.message),
                })
                .collect();
            format!("start_run: {}", lines.join("; "))
        })?;
    if let Some(why) = super::budget::refusal(card.card(), args.iterations, args.insist) {
        return Err(why);
    }
    if args.task.trim().is_empty() {
        return Err(
            "task: empty: give a task folder or a built-in task's name (list_tasks)".into(),
        );
    }
    let task_dir = crate::engine::builtin::resolve_task(Path::new(&args.task))
        .map_err(|e| format!("task: {e}"))?
        .dir;
    let task_dir = absolute(&task_dir);
    let task = crate::engine::task::Task::load(&task_dir).map_err(|e| format!("task: {e}"))?;
    let plan = RunPlan::new(card, task, None, &registry).map_err(|e| e.to_string())?;
    if let Some(why) = super::isolation::refusal(&plan, &args.card, &args.task) {
        return Err(why);
    }
    // The detached run's command line: what `galapagos run --detach` gives its child.
    let card_path = if super::catalog::is_yaml_text(&args.card) {
        card_file(&args.card)?
    } else if Path::new(&args.card).exists() {
        absolute(Path::new(&args.card))
    } else {
        PathBuf::from(&args.card)
    };
    let mut argv: Vec<OsString> = vec!["run".into(), card_path.into(), "--task".into()];
    argv.push(task_dir.into());
    argv.extend(["--iterations".into(), args.iterations.to_string().into()]);
    if let Some(s) = args.seed {
        argv.extend(["--seed".into(), s.to_string().into()]);
    }
    if let Some(p) = args.parallel {
        argv.extend(["--parallel".into(), p.to_string().into()]);
    }
    let model = ModelArgs {
        model: args.model.clone(),
        ..ModelArgs::default()
    };
    if let Some(m) = &args.model {
        argv.extend(["--model".into(), m.into()]);
    }
    argv.push("--quiet".into());
    let root = args
        .out
        .as_ref()
        .map_or_else(crate::cli::remote::default_runs_folder, PathBuf::from);
    let root = absolute(&root);
    let started = crate::cli::detach::launch(plan, &model, Some(&root), Some(argv))
        .map_err(|(e, _)| format!("start_run: {e}"))?;
    let dir = started.dir;
    let mut child = started.child;
    let pid = child.id();
    let answered = wait_for_answer(&dir, &mut child);
    // the run outlives this call; its end is collected here
    std::thread::spawn(move || child.wait().ok());
    match answered {
        Answer::Live => Ok(json!({
            "run": dir.display().to_string(),
            "pid": pid,
            "state": "running",
            "next": "run_status {run} to watch it; steer_run to add notes, pin, pause or stop; \
                     get_genome for the best program; apply_genome to take it home.",
        })),
        Answer::Done => Ok(json!({
            "run": dir.display().to_string(),
            "pid": pid,
            "state": "finished",
            "next": "run_status {run} for its summary; get_genome for the best program.",
        })),
        Answer::Ended(log) => Err(format!(
            "start_run: the run in {} ended at its start:\n{log}",
            dir.display()
        )),
        Answer::Slow => Ok(json!({
            "run": dir.display().to_string(),
            "pid": pid,
            "state": "starting",
            "next": format!("it did not answer within {} s; run_status tells when it does", ANSWER.as_secs()),
        })),
    }
}

enum Answer {
    Live,
    /// The run's process ended well before it was asked.
    Done,
    /// The run's process ended first: the end of its output.
    Ended(String),
    Slow,
}

/// Wait until the run in `dir` answers on its socket, its process ends, or
/// [`ANSWER`] passes.
fn wait_for_answer(dir: &Path, child: &mut std::process::Child) -> Answer {
    let deadline = Instant::now() + ANSWER;
    loop {
        if crate::engine::service::local::connect_std(dir).is_ok() {
            return Answer::Live;
        }
        if let Ok(Some(exit)) = child.try_wait() {
            // a run that finished before it was asked: its record answers
            if exit.success() && dir.join("archive.sqlite").is_file() {
                return Answer::Done;
            }
            let log = std::fs::read_to_string(dir.join(crate::cli::detach::OUTPUT_LOG))
                .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Answer::Ended(tail.join("\n"));
        }
        if Instant::now() >= deadline {
            return Answer::Slow;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
