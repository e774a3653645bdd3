//! The run loop end to end: determinism, retries with feedback, failures,
//! stop/pause, parallel iterations.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use galapagos::engine::events::{RunCommand, RunEvent, RunStatus};
use galapagos::engine::model::default_model;

fn fingerprint(g: &galapagos::engine::genome::Genome) -> String {
    format!(
        "{}|{:?}|{:?}|{}|{}|{:?}|{}|{:?}",
        g.id, g.parent_id, g.inspiration_ids, g.iteration, g.valid, g.scores, g.content, g.error
    )
}

#[test]
fn same_card_seed_and_responses_give_the_same_run() {
    let registry = registry();
    for file in [
        "best_of_n.yaml",
        "best_of_n_attempts.yaml",
        "beam_search.yaml",
    ] {
        let mut c = with_evaluator(card(file, &registry), "trivial");
        c.general.max_iterations = 60;
        let dir = tempfile::tempdir().unwrap();
        let task = temp_task(dir.path());
        let (a, sa) = run_collect(c.clone(), &task, default_model(), Arc::clone(&registry));
        let (b, _) = run_collect(c.clone(), &task, default_model(), Arc::clone(&registry));
        assert_eq!(sa.status, RunStatus::Completed, "{file}");
        assert_eq!(a.len(), b.len(), "{file}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(fingerprint(x), fingerprint(y), "{file}");
        }
        assert!(
            a.iter().any(|g| !g.inspiration_ids.is_empty()),
            "{file}: inspirations used"
        );
        c.seed = 99;
        let (d, _) = run_collect(c, &task, default_model(), Arc::clone(&registry));
        assert!(
            a.iter()
                .zip(&d)
                .any(|(x, y)| fingerprint(x) != fingerprint(y)),
            "{file}: another seed should give another run"
        );
        assert!(
            sa.best_score > sa.initial_score,
            "{file}: {:?} vs {:?}",
            sa.best_score,
            sa.initial_score
        );
    }
}

const GOOD: &str = "Raise A.\n<<<<<<< SEARCH\nA = 1.0\n=======\nA = 2.0\n>>>>>>> REPLACE\n";

#[test]
fn a_garbled_reply_is_recorded_and_retried_with_feedback() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 1;
    c.general.inner_retry_times = 1;
    let model = Arc::new(ScriptedModel::new(vec![
        Ok("I think you should do something.".into()),
        Ok(GOOD.into()),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let (genomes, summary) = run_collect(c, &task, model.clone(), registry);
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(genomes.len(), 3, "initial + failed attempt + retry");
    let failed = &genomes[1];
    assert!(!failed.valid);
    assert_eq!(failed.attempt, 0);
    assert_eq!(
        failed.response.as_deref(),
        Some("I think you should do something.")
    );
    assert!(failed.error.as_deref().unwrap_or("").len() > 5);
    let child = &genomes[2];
    assert!(child.valid && child.attempt == 1 && child.content.text().contains("A = 2.0"));
    assert!(child.diff.as_deref().unwrap_or("").contains("+A = 2.0"));
    let seen = model.seen.lock().unwrap();
    assert!(
        seen[1].user.contains("Previous Failed Attempts"),
        "the retry prompt shows the failure"
    );
    assert_eq!(summary.usage.prompt_tokens, 20);
}

#[test]
fn a_fatal_model_error_stops_the_run_at_once() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 50;
    let model = Arc::new(ScriptedModel::new(vec![Err(
        "FATAL: authentication failed (key from OPENAI_API_KEY)".into(),
    )]));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let (genomes, summary) = run_collect(c, &task, model, registry);
    assert!(
        matches!(&summary.status, RunStatus::Failed(m) if m.contains("OPENAI_API_KEY")),
        "{:?}",
        summary.status
    );
    assert_eq!(genomes.len(), 2, "initial + the failed attempt");
}

#[test]
fn model_failures_never_hang_and_are_counted_invalid() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n_attempts.yaml", &registry), "trivial");
    c.general.max_iterations = 4;
    c.general.inner_retry_times = 0;
    let model = Arc::new(ScriptedModel::new(vec![Err(
        "HTTP 500 after 3 attempts".into()
    )]));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let (genomes, summary) = run_collect(c.clone(), &task, model, Arc::clone(&registry));
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(summary.invalid, 4);
    assert!(
        genomes[1..]
            .iter()
            .all(|g| g.response.as_deref() == Some("{\"raw\":true}"))
    );
}

#[test]
fn an_invalid_initial_program_fails_clearly() {
    let registry = registry();
    let c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    std::fs::write(task.join("initial_program.py"), "CRASH = 1\n").unwrap();
    let (_, summary) = run_collect(c, &task, default_model(), registry);
    assert!(
        matches!(&summary.status, RunStatus::Failed(m) if m.contains("initial program")),
        "{:?}",
        summary.status
    );
}

#[test]
fn a_broken_task_folder_is_a_clear_error() {
    // Refused when the run is planned, before anything starts or is written.
    let dir = tempfile::tempdir().unwrap();
    let e = galapagos::engine::task::Task::load(&dir.path().join("missing")).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    // A folder with a program but no evaluator, for a card whose evaluator
    // runs the task's evaluator.py.
    let registry = registry();
    let c = card("best_of_n.yaml", &registry)
        .check(&registry)
        .unwrap_or_else(|p| panic!("{p:?}"));
    std::fs::write(dir.path().join("initial_program.py"), PROGRAM).unwrap();
    let task = galapagos::engine::task::Task::load(dir.path()).unwrap();
    let e = galapagos::engine::launch::RunPlan::new(c, task, None, &registry).unwrap_err();
    assert!(e.to_string().contains("no evaluator"), "{e}");
}

/// Every evaluator that runs the task's own evaluator.py is refused on a
/// folder without one, before anything starts: the cluster's as well as the
/// local one (what the block provides decides, not its kind).
#[test]
fn a_cluster_evaluator_also_needs_the_task_evaluator_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("initial_program.py"), PROGRAM).unwrap();
    let registry = registry();
    let c = card("best_of_n_slurm.yaml", &registry)
        .check(&registry)
        .unwrap_or_else(|p| panic!("{p:?}"));
    let task = galapagos::engine::task::Task::load(dir.path()).unwrap();
    let e = galapagos::engine::launch::RunPlan::new(c, task, None, &registry).unwrap_err();
    assert!(e.to_string().contains("no evaluator"), "{e}");
}

#[test]
fn stop_ends_the_run_within_one_iteration_even_while_evaluating() {
    let registry = registry();
    let mut c = with_slow_evaluator(card("best_of_n.yaml", &registry), 3000);
    c.general.max_iterations = 100;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let handle = spawn(request(c, &task, None));
    let mut stopped_at = None;
    let (genomes, summary) = collect(handle, |n, h| {
        if n == 1 {
            // the initial program is in; iteration 1 is now evaluating (3 s)
            stopped_at = Some(Instant::now());
            stop(h);
        }
    });
    let took = stopped_at.unwrap().elapsed();
    assert_eq!(summary.status, RunStatus::Stopped);
    assert!(took < Duration::from_secs(2), "stop took {took:?}");
    assert!(genomes.len() <= 2);
}

#[test]
fn pause_holds_new_iterations_and_resume_continues() {
    let registry = registry();
    // 20 ms per child: the run must still be going when the pause is sent
    // (30 instant iterations can all finish first on a busy machine).
    let mut c = with_slow_evaluator(card("best_of_n.yaml", &registry), 20);
    c.general.max_iterations = 30;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut handle = spawn(request(c, &task, None));
    assert!(handle.send(RunCommand::Pause));
    let mut paused = false;
    let mut admitted_after_pause = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline);
        match handle.events.blocking_recv().unwrap() {
            RunEvent::Paused => {
                paused = true;
                // nothing new may start while paused
                std::thread::sleep(Duration::from_millis(300));
                while let Ok(ev) = handle.events.try_recv() {
                    if matches!(ev, RunEvent::IterationStarted { .. }) {
                        admitted_after_pause += 1;
                    }
                }
                assert!(handle.send(RunCommand::Resume));
            }
            RunEvent::Finished(s) => {
                assert_eq!(s.status, RunStatus::Completed);
                assert_eq!(s.iterations, 30);
                break;
            }
            _ => {}
        }
    }
    assert!(paused);
    assert_eq!(admitted_after_pause, 0);
    handle.join();
}

#[test]
fn parallel_iterations_overlap_and_lose_nothing() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 24;
    c.general.parallel = 4;
    let mut model = ScriptedModel::new(vec![Ok(GOOD.into())]);
    model.delay_ms = 100;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let t = Instant::now();
    let (genomes, summary) = run_collect(c, &task, Arc::new(model), registry);
    let took = t.elapsed();
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(summary.iterations, 24);
    let mut ids: Vec<u64> = genomes.iter().map(|g| g.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), genomes.len(), "no duplicate ids");
    let mut iters: Vec<u64> = genomes[1..].iter().map(|g| g.iteration).collect();
    iters.sort_unstable();
    iters.dedup();
    assert_eq!(iters.len(), 24, "every iteration was admitted");
    // sequential would take >= 2.4 s of model latency
    assert!(took < Duration::from_millis(2000), "P=4 took {took:?}");
}

/// best_of_n at parallel 4: children of a parent land after the policy moved
/// on, yet every parent the policy leaves has had N valid children of its own
/// by then (late children of an earlier parent do not count for the next).
#[test]
fn best_of_n_at_parallel_4_gives_each_parent_n_valid_children_of_its_own() {
    let registry = registry();
    let n = 3;
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 60;
    c.general.parallel = 4;
    c.selection_policy
        .params
        .set("best_of_n", galapagos::engine::params::ParamValue::Int(n));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut handle = spawn_with(request(c, &task, None), SlowOffline::model(5));
    let mut own_valid = std::collections::HashMap::<u64, i64>::new();
    let (mut current, mut switches) = (None, 0);
    while let Some(event) = handle.events.blocking_recv() {
        match event {
            RunEvent::GenomeAdmitted { genome, .. } => {
                if let (true, Some(p)) = (genome.valid, genome.parent_id) {
                    *own_valid.entry(p).or_default() += 1;
                }
            }
            RunEvent::IterationStarted { parent_id, .. } => {
                if let Some(previous) = current.filter(|p| *p != parent_id) {
                    switches += 1;
                    let had = own_valid.get(&previous).copied().unwrap_or(0);
                    assert!(
                        had >= n,
                        "left parent #{previous} after {had} valid children of its own (N = {n})"
                    );
                }
                current = Some(parent_id);
            }
            RunEvent::Finished(summary) => {
                assert_eq!(summary.status, RunStatus::Completed);
                break;
            }
            _ => {}
        }
    }
    handle.join();
    assert!(switches >= 3, "the policy moved on only {switches} times");
}

/// The identity policy hands the whole pool to the proposer, and an
/// agent-style proposer that picks a parent other than the best (and tries
/// its edit with the evaluator through its environment) gets that parent on
/// the child it hands in.
#[test]
fn the_identity_pool_reaches_an_agent_proposer_which_picks_its_own_parent() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.selection_policy = galapagos::engine::card::SlotSpec::new("identity");
    c.proposer = galapagos::engine::card::SlotSpec::new("agent");
    c.proposer
        .params
        .set("max_steps", galapagos::engine::params::ParamValue::Int(1));
    c.general.max_iterations = 2;
    c.general.inner_retry_times = 0;
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(GOOD.into()),
        Ok(
            "PARENT: #0\nLower B.\n<<<<<<< SEARCH\nB = 0.0\n=======\nB = -1.0\n>>>>>>> REPLACE\n"
                .into(),
        ),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let (genomes, summary) = run_collect(c, &task, model.clone(), registry);
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(genomes.len(), 3);
    // iteration 2 was handed #1 (the best) and #0, and chose #0
    assert_eq!(genomes[2].parent_id, Some(0));
    assert!(
        genomes[2].content.text().contains("A = 1.0\nB = -1.0"),
        "{}",
        genomes[2].content
    );
    assert!(genomes[2].valid);
    let user = &model.seen()[1].user;
    assert!(user.contains("## Program #0 (combined_score"), "{user}");
    // the edit was tried through the proposer's environment
    let transcript = genomes[2].response.as_deref().unwrap_or("");
    assert!(
        transcript.contains("Result: trial of the edit of #0"),
        "{transcript}"
    );
}

#[test]
fn a_hanging_candidate_is_killed_at_the_timeout_and_the_run_goes_on() {
    let registry = registry();
    let mut c = card("best_of_n.yaml", &registry);
    c.evaluator.params.set(
        "timeout_secs",
        galapagos::engine::params::ParamValue::Float(1.0),
    );
    c.general.max_iterations = 2;
    c.general.inner_retry_times = 0;
    let hang = "Loop forever.\n<<<<<<< SEARCH\nSHIFT = 0.0\n=======\nSHIFT = 0.0\nwhile True:\n    pass\n>>>>>>> REPLACE\n";
    let raise = "Raise.\n<<<<<<< SEARCH\nSHIFT = 0.0\n=======\nSHIFT = 0.0\nraise ValueError('boom')\n>>>>>>> REPLACE\n";
    let model = Arc::new(ScriptedModel::new(vec![Ok(hang.into()), Ok(raise.into())]));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let t = Instant::now();
    let (genomes, summary) = run_collect(c, &task, model, registry);
    assert_eq!(summary.status, RunStatus::Completed, "{genomes:#?}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(genomes.len(), 3);
    assert!(genomes[0].valid);
    let hung = &genomes[1];
    assert!(
        !hung.valid && hung.error.as_deref().unwrap_or("").contains("time"),
        "{:?}",
        hung.error
    );
    let raised = &genomes[2];
    assert!(!raised.valid);
    assert!(
        raised
            .artifacts
            .get("traceback")
            .is_some_and(|t| t.contains("ValueError: boom")),
        "{:?}",
        raised.artifacts
    );
}

#[test]
fn a_dead_endpoint_stops_the_run_after_a_few_iterations_not_the_whole_budget() {
    let registry = registry();
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 1000;
    let model = Arc::new(ScriptedModel::new(vec![Err(
        "cannot connect: connection refused".into(),
    )]));
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let (_, summary) = run_collect(c, &task, model, registry);
    assert!(
        matches!(&summary.status, RunStatus::Failed(m) if m.contains("5 iterations in a row") && m.contains("connection refused")),
        "{:?}",
        summary.status
    );
    assert_eq!(summary.iterations, 5);
}

#[test]
fn budget_caps_stop_the_run_cleanly() {
    let registry = registry();
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    // every call: 15 tokens, $0.001
    let mut c = with_evaluator(card("best_of_n.yaml", &registry), "trivial");
    c.general.max_iterations = 100;
    c.general.max_tokens = Some(40);
    let (_, s) = run_collect(
        c.clone(),
        &task,
        Arc::new(ScriptedModel::new(vec![Ok(GOOD.into())])),
        Arc::clone(&registry),
    );
    assert!(
        matches!(&s.status, RunStatus::BudgetReached(m) if m.contains("tokens")),
        "{:?}",
        s.status
    );
    assert_eq!(s.iterations, 3);
    c.general.max_tokens = None;
    c.general.max_cost_usd = Some(0.0025);
    let (_, s) = run_collect(
        c,
        &task,
        Arc::new(ScriptedModel::new(vec![Ok(GOOD.into())])),
        registry,
    );
    assert!(
        matches!(&s.status, RunStatus::BudgetReached(m) if m.contains('$')),
        "{:?}",
        s.status
    );
    assert_eq!(s.iterations, 3);
}
