//! `best_of_n` with four iterations in flight, through a real run whose
//! model answers only when the test says so: the test decides the order in
//! which children land, and reads the parent of every dispatched iteration
//! from the run's events.
//!
//! The rule under test (the card README's): the policy reuses a parent
//! until N valid children, then commits to the global best, which may be
//! the same genome again. A commit starts a new cycle, and only children
//! dispatched in it count toward its N: a child selected in the previous
//! cycle that lands after the re-commit does not, although its parent is
//! the same genome.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use galapagos::engine::events::{RunEvent, RunStatus};
use galapagos::engine::genome::GenomeId;
use galapagos::engine::model::{LanguageModel, ModelError, ModelReply, ModelRequest};
use galapagos::engine::params::ParamValue;
use galapagos::engine::run_thread::RunHandle;

/// A model whose every call waits until the test answers it; calls are
/// answered oldest first.
#[derive(Default)]
struct Gate {
    waiting: Mutex<VecDeque<tokio::sync::oneshot::Sender<String>>>,
}

impl Gate {
    fn waiting(&self) -> usize {
        self.waiting.lock().unwrap().len()
    }

    /// Answer the oldest waiting call with `text`.
    fn answer(&self, text: &str) {
        let call = self.waiting.lock().unwrap().pop_front().unwrap();
        call.send(text.to_owned()).unwrap();
    }
}

#[async_trait::async_trait]
impl LanguageModel for Gate {
    async fn complete(&self, _request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.waiting.lock().unwrap().push_back(tx);
        match rx.await {
            Ok(text) => ScriptedModel::text(&text),
            Err(_) => Err(ModelError::Failed {
                message: "the test stopped answering".to_owned(),
                raw: None,
            }),
        }
    }

    fn describe(&self) -> String {
        "a model the test answers".to_owned()
    }
}

/// What the test saw of the run: each dispatched iteration's parent, each
/// admitted genome's score.
#[derive(Default)]
struct Seen {
    parents: BTreeMap<u64, GenomeId>,
    scores: BTreeMap<GenomeId, Option<f64>>,
    finished: Option<RunStatus>,
}

/// Read the run's events until `done(seen)` holds (at most a minute).
fn until(handle: &mut RunHandle, seen: &mut Seen, what: &str, done: impl Fn(&Seen) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(seen) {
        assert!(Instant::now() < deadline, "waited a minute for {what}");
        match handle.events.try_recv() {
            Ok(RunEvent::IterationStarted {
                iteration,
                parent_id,
            }) => {
                seen.parents.insert(iteration, parent_id);
            }
            Ok(RunEvent::GenomeAdmitted { genome, .. }) => {
                seen.scores.insert(genome.id, genome.fitness());
            }
            Ok(RunEvent::Finished(summary)) => seen.finished = Some(summary.status),
            Ok(_) => {}
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                panic!("the run ended while waiting for {what}")
            }
        }
    }
}

/// A child of the initial program (`A = 1.0`) with `A` set to `a`: 2.0
/// scores above the initial program, 0.0 below it.
fn child(a: &str) -> String {
    format!("Set A.\n<<<<<<< SEARCH\nA = 1.0\n=======\nA = {a}\n>>>>>>> REPLACE\n")
}

#[test]
fn a_recommit_to_the_same_parent_counts_only_children_dispatched_after_it() {
    let registry = registry();
    let mut card = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    card.selection_policy
        .params
        .set("best_of_n", ParamValue::Int(2));
    card.general.parallel = 4;
    card.general.max_iterations = 8;
    card.general.inner_retry_times = 0;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let gate = Arc::new(Gate::default());
    let mut handle = spawn_with(
        plan_in(card, &task, None, &registry),
        Arc::clone(&gate) as Arc<dyn LanguageModel>,
    );
    let mut seen = Seen::default();
    let calls = |n: usize| {
        let gate = Arc::clone(&gate);
        move |_: &Seen| gate.waiting() == n
    };

    // Cycle 1 commits to the initial program (genome 0): iterations 1-4.
    until(&mut handle, &mut seen, "iterations 1-4", |s| {
        s.parents.len() == 4
    });
    until(&mut handle, &mut seen, "four model calls", calls(4));
    assert!(seen.parents.values().all(|&p| p == 0), "{:?}", seen.parents);
    let initial = seen.scores[&0].unwrap();

    // Two valid children below the initial program: genome 0 has had its
    // N = 2. Iteration 5 still belongs to cycle 1; iteration 6 re-commits to
    // genome 0 (still the global best) and starts cycle 2.
    gate.answer(&child("0.0"));
    until(&mut handle, &mut seen, "iteration 5", |s| {
        s.parents.len() == 5
    });
    gate.answer(&child("0.0"));
    until(&mut handle, &mut seen, "iteration 6", |s| {
        s.parents.len() == 6
    });
    until(&mut handle, &mut seen, "four model calls", calls(4));
    assert_eq!(seen.parents[&5], 0);
    assert_eq!(seen.parents[&6], 0, "the re-commit goes to the global best");

    // Two children selected in cycle 1 land now, in cycle 2: the first
    // beats genome 0. Neither counts toward cycle 2's N, which has had no
    // child of its own: iteration 8 keeps genome 0 as its parent.
    gate.answer(&child("2.0"));
    until(&mut handle, &mut seen, "iteration 7", |s| {
        s.parents.len() == 7
    });
    gate.answer(&child("0.0"));
    until(&mut handle, &mut seen, "iteration 8", |s| {
        s.parents.len() == 8
    });
    let better: Vec<GenomeId> = seen
        .scores
        .iter()
        .filter(|(_, s)| s.is_some_and(|s| s > initial))
        .map(|(&id, _)| id)
        .collect();
    assert_eq!(
        better.len(),
        1,
        "one child beat genome 0: {:?}",
        seen.scores
    );
    assert_eq!(
        (seen.parents[&7], seen.parents[&8]),
        (0, 0),
        "children dispatched before the re-commit counted toward its N, so the \
         policy moved to the new best #{} early",
        better[0]
    );

    // The rest land; the run ends at its budget.
    for _ in 0..4 {
        until(&mut handle, &mut seen, "a model call", |_| {
            gate.waiting() > 0
        });
        gate.answer(&child("0.0"));
    }
    until(&mut handle, &mut seen, "the end of the run", |s| {
        s.finished.is_some()
    });
    assert_eq!(seen.finished, Some(RunStatus::Completed));
    handle.join();
}
