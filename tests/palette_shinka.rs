//! The ShinkaEvolve blocks inside the real loop: novelty rejection spends no
//! evaluator call on a near-duplicate, the scratchpad is written on schedule
//! and reaches the next prompts (and survives a resume), and the `shinka`
//! card runs offline from the CLI and beats the initial program.

#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{PROGRAM, ScriptedModel, card, temp_task};
use galapagos::engine::card::SlotSpec;
use galapagos::engine::component::{BuildContext, Component, ComponentInfo, NoParams};
use galapagos::engine::evaluator::{Candidate, Evaluation, Evaluator};
use galapagos::engine::events::{RunEvent, RunStatus};
use galapagos::engine::genome::Genome;
use galapagos::engine::model::{LanguageModel, ModelError, ModelReply, ModelRequest, OfflineModel};
use galapagos::engine::params::ParamError;
use galapagos::engine::params::ParamValue;
use galapagos::engine::registry::{Entry, Registry};
use galapagos::engine::testing::TrivialEvaluator;

/// Evaluations of anything but the initial program (the `counting` evaluator).
static CHILD_EVALUATIONS: AtomicUsize = AtomicUsize::new(0);

/// The trivial evaluator, counting the candidates it scores.
struct CountingEvaluator;

impl Component for CountingEvaluator {
    type Slot = dyn Evaluator;
    type Params = NoParams;
    const INFO: ComponentInfo = ComponentInfo {
        kind: "counting",
        type_name: "CountingEvaluator",
        summary: "test double",
        params: &[],
    };
    fn build(_: NoParams, _: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self)
    }
}

#[async_trait::async_trait]
impl Evaluator for CountingEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        if candidate.content != PROGRAM {
            CHILD_EVALUATIONS.fetch_add(1, Ordering::SeqCst);
        }
        TrivialEvaluator::default().evaluate(candidate).await
    }
}

fn registry() -> Arc<Registry> {
    let mut r = Arc::try_unwrap(common::registry()).ok().unwrap();
    r.register(Entry::of::<CountingEvaluator>()).unwrap();
    Arc::new(r)
}

fn list(items: &[ParamValue]) -> ParamValue {
    ParamValue::List(items.to_vec())
}

/// Run to completion; every admitted genome, every MemoryUpdated notes list.
fn run(
    card: galapagos::engine::card::Card,
    task: &Path,
    model: Arc<dyn LanguageModel>,
    registry: Arc<Registry>,
    run_dir: Option<&Path>,
    resume: bool,
) -> (Vec<Arc<Genome>>, Vec<Vec<String>>, RunStatus) {
    let plan = match (resume, run_dir) {
        (true, Some(dir)) => common::resume_request(dir, card.general.max_iterations, &registry),
        _ => common::plan_in(card, task, run_dir.map(Path::to_path_buf), &registry),
    };
    let mut handle = common::spawn_with(plan, model);
    let (mut genomes, mut memory) = (Vec::new(), Vec::new());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run did not finish"
        );
        match handle.events.blocking_recv() {
            Some(RunEvent::GenomeAdmitted { genome, .. }) => genomes.push(genome),
            Some(RunEvent::MemoryUpdated { notes }) => memory.push(notes),
            Some(RunEvent::Finished(s)) => {
                handle.join();
                return (genomes, memory, s.status);
            }
            Some(_) => {}
            None => panic!("event channel closed without Finished"),
        }
    }
}

fn block(search: &str, replace: &str) -> String {
    format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n")
}

#[test]
fn a_near_duplicate_is_resampled_before_any_evaluator_call() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let registry = registry();
    let mut c = card("shinka.yaml", &registry);
    c.evaluator = SlotSpec::new("counting");
    c.memory = SlotSpec::new("none");
    c.general.max_iterations = 1;
    c.proposer
        .params
        .set("patch_types", list(&[ParamValue::Str("diff".into())]));
    c.proposer
        .params
        .set("patch_type_probs", list(&[ParamValue::Float(1.0)]));
    // first a formatting/comment-only edit, then a real one
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(block("B = 0.0", "B = 0.00   # unchanged value")),
        Ok(block("A = 1.0", "A = 2.5")),
    ]));
    CHILD_EVALUATIONS.store(0, Ordering::SeqCst);
    let (genomes, _, status) = run(c, &task, model.clone(), registry, None, false);
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(
        CHILD_EVALUATIONS.load(Ordering::SeqCst),
        1,
        "only the resampled child reaches the evaluator"
    );
    assert_eq!(model.seen.lock().unwrap().len(), 2, "two model calls");
    let child = genomes.iter().find(|g| g.iteration == 1).unwrap();
    assert!(child.valid && child.content.text().contains("A = 2.5"));
    assert!(!child.content.text().contains("unchanged value"));
    assert_eq!(
        child.metadata.patch_type,
        "diff (resampled 1 near-duplicate: 1.000 to #0)"
    );
    assert_eq!(genomes.iter().filter(|g| g.iteration == 1).count(), 1);
}

/// Answers scratchpad requests with numbered prose and everything else with
/// the offline model's edits.
struct NotebookModel {
    summaries: Mutex<u32>,
    offline: OfflineModel,
}

#[async_trait::async_trait]
impl LanguageModel for NotebookModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if request.user.contains("# Current Scratchpad") {
            let mut n = self.summaries.lock().unwrap();
            *n += 1;
            return Ok(ModelReply {
                text: format!(
                    "## What worked\n- summary number {n}: moving A up paid off\n## Ideas to try next\n- tune C"
                ),
                model: "notebook".into(),
                usage: None,
            });
        }
        self.offline.complete(request).await
    }

    fn describe(&self) -> String {
        "notebook + offline".into()
    }
}

fn scratchpad_card(registry: &Registry, iterations: u64) -> galapagos::engine::card::Card {
    let mut c = card("shinka.yaml", registry);
    c.evaluator = SlotSpec::new("trivial");
    c.general.max_iterations = iterations;
    c
}

#[test]
fn the_scratchpad_is_written_every_interval_and_shown_in_the_next_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let registry = registry();
    let model = Arc::new(NotebookModel {
        summaries: Mutex::new(0),
        offline: OfflineModel::new(),
    });
    let (genomes, updates, status) = run(
        scratchpad_card(&registry, 25),
        &task,
        model.clone(),
        registry,
        None,
        false,
    );
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(
        *model.summaries.lock().unwrap(),
        2,
        "after iterations 10 and 20"
    );
    assert_eq!(
        updates.len(),
        2,
        "one MemoryUpdated event per new scratchpad"
    );
    assert!(updates[0][0].contains("summary number 1"));
    assert!(updates[1][0].contains("summary number 2"));
    for g in genomes.iter().filter(|g| g.iteration > 0) {
        let user = &g.prompt.as_ref().unwrap().user;
        let expected = match g.iteration {
            1..=10 => None,
            11..=20 => Some("summary number 1"),
            _ => Some("summary number 2"),
        };
        match expected {
            None => assert!(
                !user.contains("What We Have Learned"),
                "iteration {} has no scratchpad yet",
                g.iteration
            ),
            Some(text) => {
                assert!(
                    user.contains(&format!(
                        "# What We Have Learned So Far\n## What worked\n- {text}"
                    )),
                    "iteration {}: {user}",
                    g.iteration
                );
            }
        }
    }
}

#[test]
fn a_resumed_run_keeps_its_scratchpad() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let registry = registry();
    let runs = dir.path().join("run");
    let model: Arc<dyn LanguageModel> = Arc::new(NotebookModel {
        summaries: Mutex::new(0),
        offline: OfflineModel::new(),
    });
    let (_, updates, status) = run(
        scratchpad_card(&registry, 10),
        &task,
        Arc::clone(&model),
        Arc::clone(&registry),
        Some(&runs),
        false,
    );
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(updates.len(), 1, "one scratchpad, after iteration 10");
    // the run ended right after the summary: the checkpoint holds it, and
    // the same run continued to 15 iterations still shows it
    let (genomes, updates, status) = run(
        scratchpad_card(&registry, 15),
        &task,
        model,
        registry,
        Some(&runs),
        true,
    );
    assert_eq!(status, RunStatus::Completed);
    assert!(updates.is_empty(), "no new summary before iteration 20");
    let resumed: Vec<&Arc<Genome>> = genomes.iter().filter(|g| g.iteration > 10).collect();
    assert!(
        (11..=15).all(|i| resumed.iter().any(|g| g.iteration == i)),
        "the resumed run produced iterations 11..15"
    );
    for g in resumed {
        let user = &g.prompt.as_ref().unwrap().user;
        assert!(
            user.contains("summary number 1"),
            "iteration {}: {user}",
            g.iteration
        );
    }
}

fn galapagos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_galapagos"))
}

#[test]
fn the_shinka_card_validates_and_beats_the_initial_program_offline() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let v = galapagos()
        .args(["validate", "cards/shinka.yaml"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    let out = tempfile::tempdir().unwrap();
    let (best, initial, stdout) = common::cli_run(
        "cards/shinka.yaml",
        "assets/tasks/circle_packing",
        60,
        out.path(),
    );
    assert!(best > initial, "best {best} <= initial {initial}");
    assert!(stdout.contains("completed"), "{stdout}");
    // the run used all three patch types and the offline scratchpad reached
    // the prompts after iteration 10
    let run_dir = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let genomes = galapagos::engine::archive::read_genomes(&run_dir.join("genomes.jsonl")).unwrap();
    assert!(genomes.len() > 60);
    for kind in ["diff", "full"] {
        assert!(
            genomes
                .iter()
                .any(|g| g.metadata.patch_type.split(' ').next() == Some(kind)),
            "no {kind} patch"
        );
    }
    let late = genomes.iter().find(|g| g.iteration == 11).unwrap();
    assert!(
        late.prompt
            .as_ref()
            .unwrap()
            .user
            .contains("Scratchpad after iteration 10"),
        "the statistics scratchpad is in the prompt"
    );
}
