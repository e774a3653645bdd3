//! Shared test doubles: an in-process evaluator, a scripted model, temp tasks.
#![allow(dead_code, reason = "each test binary uses a different subset")]
#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a panic here is a failed test"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use galapagos::engine::card::{Card, SlotSpec};
use galapagos::engine::events::{RunCommand, RunEvent, RunSummary};
use galapagos::engine::genome::Genome;
use galapagos::engine::launch::RunPlan;
use galapagos::engine::model::LanguageModel;
use galapagos::engine::registry::Registry;
use galapagos::engine::run_thread::{RunHandle, start};

pub const PROGRAM: &str = "# EVOLVE-BLOCK-START\nA = 1.0\nB = 0.0\nC = 0.0\nSHIFT = 0.0\n# EVOLVE-BLOCK-END\n\n\ndef run():\n    return [A, B, C, SHIFT]\n";

#[allow(unused_imports, reason = "each test binary uses a different subset")]
pub use galapagos::engine::testing::ScriptedModel;

/// The built-in registry plus the `trivial` test evaluator.
pub fn registry() -> Arc<Registry> {
    galapagos::engine::testing::registry()
}

/// A temp task folder with the quadratic program and a Python evaluator.
pub fn temp_task(dir: &Path) -> PathBuf {
    let t = dir.join("quad");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("initial_program.py"), PROGRAM).unwrap();
    std::fs::write(
        t.join("evaluator.py"),
        r#"import importlib.util

TARGET = [2.5, -1.25, 0.75, 0.0]


def evaluate(path):
    spec = importlib.util.spec_from_file_location("cand", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    v = m.run()
    mse = sum((a - b) ** 2 for a, b in zip(v, TARGET)) / 4
    return {"combined_score": 1.0 / (1.0 + mse), "mse": mse}
"#,
    )
    .unwrap();
    std::fs::write(
        t.join("README.md"),
        "Tune four constants to match a hidden target.\n",
    )
    .unwrap();
    t
}

pub fn card(file: &str, registry: &Registry) -> Card {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cards")
        .join(file);
    Card::load(&path, registry).unwrap_or_else(|e| panic!("{e}"))
}

pub fn with_evaluator(mut card: Card, kind: &str) -> Card {
    card.evaluator = SlotSpec::new(kind);
    card
}

/// `card` with the `trivial` evaluator waiting `sleep_ms` before each child.
pub fn with_slow_evaluator(mut card: Card, sleep_ms: i64) -> Card {
    card.evaluator = SlotSpec::new("trivial");
    card.evaluator.params.set(
        "sleep_ms",
        galapagos::engine::params::ParamValue::Int(sleep_ms),
    );
    card
}

/// Run to completion, returning every admitted genome and the summary.
pub fn run_collect(
    card: Card,
    task: &Path,
    model: Arc<dyn LanguageModel>,
    registry: Arc<Registry>,
) -> (Vec<Arc<Genome>>, RunSummary) {
    collect(
        spawn_with(plan_in(card, task, None, &registry), model),
        |_, _| {},
    )
}

/// Drain events until Finished, calling `on_admit(count, handle)` per genome.
pub fn collect(
    mut handle: RunHandle,
    mut on_admit: impl FnMut(usize, &RunHandle),
) -> (Vec<Arc<Genome>>, RunSummary) {
    let mut genomes = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "run did not finish in time"
        );
        match handle.events.blocking_recv() {
            Some(RunEvent::GenomeAdmitted { genome, .. }) => {
                genomes.push(genome);
                on_admit(genomes.len(), &handle);
            }
            Some(RunEvent::Finished(s)) => {
                handle.join();
                return (genomes, s);
            }
            Some(_) => {}
            None => panic!("event channel closed without Finished"),
        }
    }
}

#[allow(unused_imports, reason = "each test binary uses a different subset")]
pub use galapagos::engine::testing::SlowOffline;

/// A new run of `card` (checked against [`registry`]).
pub fn request(card: Card, task: &Path, run_dir: Option<PathBuf>) -> RunPlan {
    plan_in(card, task, run_dir, &registry())
}

/// A new run of `card`, checked against `registry`.
pub fn plan_in(card: Card, task: &Path, run_dir: Option<PathBuf>, registry: &Registry) -> RunPlan {
    let card = card
        .check(registry)
        .unwrap_or_else(|problems| panic!("invalid card: {problems:?}"));
    let task = galapagos::engine::task::Task::load(task).unwrap_or_else(|e| panic!("{e}"));
    consented(RunPlan::new(card, task, run_dir, registry).unwrap_or_else(|e| panic!("{e}")))
}

/// Continue the run recorded in `run_dir` up to `budget` total iterations.
pub fn resume_request(run_dir: &Path, budget: u64, registry: &Registry) -> RunPlan {
    consented(RunPlan::resume(run_dir, Some(budget), registry).unwrap_or_else(|e| panic!("{e}")))
}

/// The command line's flags that give the consent the card file `card`
/// needs for a run of the task in `task` (none when it needs none), as a
/// person gives them after reading the refusal: these tests' own cards
/// switch the sandbox off, which needs it when they run as root. A card or
/// task that does not load gets none (the run says why).
pub fn consent_flags(card: &Path, task: &Path) -> Vec<String> {
    let registry = Registry::builtin();
    // A card or task that does not load: the run says why.
    let (Ok(card), Ok(task)) = (
        galapagos::engine::card::ValidCard::load(card, &registry),
        galapagos::engine::task::Task::load(task),
    ) else {
        return Vec::new();
    };
    match RunPlan::new(card, task, None, &registry).map(|p| p.check_consent()) {
        Ok(Err(galapagos::engine::launch::LaunchError::ConsentNeeded(needed))) => {
            let allow: Vec<&str> = needed.lowered.iter().map(|l| l.setting.as_str()).collect();
            vec![
                "--consent".to_owned(),
                needed.hash.clone(),
                "--allow".to_owned(),
                allow.join(","),
            ]
        }
        _ => Vec::new(),
    }
}

/// `plan` with the consent its card's lowered isolation needs, as a person
/// gives it: these tests' own cards switch the sandbox off, which needs it
/// when they run as root (see `engine::consent`, tested in `consent.rs`).
pub fn consented(plan: RunPlan) -> RunPlan {
    match plan.check_consent() {
        Err(galapagos::engine::launch::LaunchError::ConsentNeeded(needed)) => {
            plan.with_consent(galapagos::engine::consent::Consent::to(&needed, "the test"))
        }
        _ => plan,
    }
}

/// Start `plan` with the offline model and no UI waker.
pub fn spawn(plan: RunPlan) -> RunHandle {
    spawn_with(plan, galapagos::engine::model::default_model())
}

/// Start `plan` with `model` and no UI waker.
pub fn spawn_with(plan: RunPlan, model: Arc<dyn LanguageModel>) -> RunHandle {
    start(plan, model, None).expect("spawn")
}

pub fn stop(handle: &RunHandle) {
    assert!(handle.send(RunCommand::Stop));
}

/// Run `galapagos run CARD --task TASK --iterations N --quiet --out OUT` from
/// the crate root; assert it succeeded and return (best, initial, stdout).
pub fn cli_run(card: &str, task: &str, iterations: u32, out: &Path) -> (f64, f64, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            card,
            "--task",
            task,
            "--iterations",
            &iterations.to_string(),
            "--quiet",
            "--out",
        ])
        .arg(out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{card} {task}: {stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let grab = |label: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in {stdout}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    (grab("best:"), grab("initial:"), stdout)
}

pub mod agents;
pub mod host_memory;
pub mod hostile;
pub mod hub;
pub mod llm_server;
pub mod scripted_server;
pub mod scripted_upstream;
pub mod slurm;
pub mod sshd;
