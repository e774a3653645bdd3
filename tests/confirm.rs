//! Confirming a new best (`evaluator.confirm`), through real runs with the
//! task's Python evaluator: a candidate whose first evaluation is inflated
//! (a state-dependent score: the evaluator remembers what it has seen) is
//! re-evaluated, found unconfirmed and never chosen as a parent, the best or
//! an inspiration, before and after a resume; with an honest evaluator the
//! same settings confirm children, which then go on as parents.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use galapagos::engine::archive::{Archive, read_genomes};
use galapagos::engine::card::{Card, SlotSpec};
use galapagos::engine::component::Component;
use galapagos::engine::genome::Genome;
use galapagos::engine::params::ParamValue;
use galapagos::engine::proposer::AgentCommandProposer;

/// Scores the quadratic task; the first evaluation of any program other than
/// the initial one is worth ten times its score (the "state" is a marker
/// file per program in `{state}`).
fn inflating_evaluator(state: &Path) -> String {
    format!(
        r#"import hashlib, importlib.util, os

STATE = {state:?}
TARGET = [2.5, -1.25, 0.75, 0.0]
INITIAL = open("initial_program.py", "rb").read()


def evaluate(path):
    spec = importlib.util.spec_from_file_location("cand", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    v = m.run()
    mse = sum((a - b) ** 2 for a, b in zip(v, TARGET)) / 4
    score = 1.0 / (1.0 + mse)
    code = open(path, "rb").read()
    marker = os.path.join(STATE, hashlib.sha256(code).hexdigest())
    if code != INITIAL and not os.path.exists(marker):
        open(marker, "w").close()
        score *= 10.0
    return {{"combined_score": score, "mse": mse}}
"#
    )
}

fn confirming_card(iterations: u64) -> Card {
    confirming(
        common::card("best_of_n.yaml", &common::registry()),
        iterations,
    )
}

/// `card` with the subprocess evaluator, unsandboxed, confirming twice.
fn confirming(mut card: Card, iterations: u64) -> Card {
    card.general.max_iterations = iterations;
    card.evaluator = SlotSpec::new("subprocess");
    let params = &mut card.evaluator.params;
    params.set("sandbox", ParamValue::Str("none".into()));
    params.set("timeout_secs", ParamValue::Float(20.0));
    params.set("confirm", ParamValue::Int(2));
    params.set("confirm_tolerance", ParamValue::Float(0.05));
    card
}

/// Every genome some later genome used as a parent or an inspiration.
fn used(genomes: &[Genome]) -> BTreeSet<u64> {
    genomes
        .iter()
        .flat_map(|g| {
            g.parent_id
                .into_iter()
                .chain(g.inspiration_ids.iter().copied())
        })
        .collect()
}

#[test]
fn an_inflated_first_score_is_unconfirmed_and_never_a_parent_even_after_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let task = common::temp_task(dir.path());
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(task.join("evaluator.py"), inflating_evaluator(&state)).unwrap();
    let run_dir = dir.path().join("run");
    let plan = common::request(confirming_card(8), &task, Some(run_dir.clone()));
    let (admitted, summary) = common::collect(common::spawn(plan), |_, _| {});
    assert_eq!(summary.iterations, 8, "{:?}", summary.status);
    // The run's events carry the confirmation.
    let unconfirmed: Vec<&Arc<Genome>> = admitted.iter().filter(|g| g.unconfirmed()).collect();
    assert!(
        !unconfirmed.is_empty(),
        "a child beat the initial program on its first evaluation"
    );
    for g in &unconfirmed {
        let c = g.confirmation.as_ref().unwrap();
        assert_eq!(c.runs.len(), 3, "three evaluations recorded: {c:?}");
        assert_eq!(c.fitness.len(), 3);
        let (first, rest) = (c.fitness[0], &c.fitness[1..]);
        assert!(
            rest.iter().all(|f| (first - 10.0 * f).abs() < 1e-9),
            "{c:?}"
        );
        assert!(c.note.as_deref().unwrap().contains("spread"), "{c:?}");
        // The metrics are the evaluations' mean.
        let mean = c.fitness.iter().sum::<f64>() / 3.0;
        assert!((g.fitness().unwrap() - mean).abs() < 1e-9);
    }
    let bad: BTreeSet<u64> = unconfirmed.iter().map(|g| g.id).collect();
    assert!(
        summary.best_id.is_none_or(|b| !bad.contains(&b)),
        "a false elite is not the best"
    );
    // Nor is it in the run list's best, which the archive answers.
    let listed = galapagos::engine::archive::list_runs(dir.path());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].best_score, summary.best_score);

    // The record keeps it (archive and jsonl), says it in its log, and a
    // resume goes on with it.
    let archive = Archive::open(&run_dir).unwrap();
    let said = format!("{:?}", archive.events().unwrap());
    for id in &bad {
        assert!(
            said.contains(&format!(
                "genome #{id} would have been the new best: unconfirmed"
            )),
            "{said}"
        );
    }
    let recorded = archive.genomes().unwrap();
    let lines = read_genomes(&run_dir.join("genomes.jsonl")).unwrap();
    for id in &bad {
        let (a, j) = (&recorded[*id as usize], &lines[*id as usize]);
        assert!(a.unconfirmed() && j.unconfirmed());
        assert_eq!(a.confirmation, j.confirmation);
        assert_eq!(a.confirmation, admitted[*id as usize].confirmation);
    }
    let registry = common::registry();
    let plan = common::resume_request(&run_dir, 14, &registry);
    let (_, summary) = common::collect(common::spawn(plan), |_, _| {});
    assert_eq!(summary.iterations, 14, "{:?}", summary.status);
    let all = Archive::open(&run_dir).unwrap().genomes().unwrap();
    let bad: BTreeSet<u64> = all
        .iter()
        .filter(|g| g.unconfirmed())
        .map(|g| g.id)
        .collect();
    assert!(bad.len() > unconfirmed.len() - 1);
    let chosen = used(&all);
    assert!(
        chosen.is_disjoint(&bad),
        "unconfirmed {bad:?} were chosen as parents or inspirations: {chosen:?}"
    );
    assert!(summary.best_id.is_none_or(|b| !bad.contains(&b)));
}

/// Whatever the policy (every shipped card: top-k, islands with MAP-Elites,
/// UCB islands, weighted parents with crossover, beams, best-of-n), an
/// unconfirmed genome is never a parent or an inspiration.
#[test]
fn no_selection_policy_takes_an_unconfirmed_genome() {
    let registry = common::registry();
    let cards = Path::new(env!("CARGO_MANIFEST_DIR")).join("cards");
    let mut names: Vec<_> = std::fs::read_dir(&cards)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        let dir = tempfile::tempdir().unwrap();
        let task = common::temp_task(dir.path());
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(task.join("evaluator.py"), inflating_evaluator(&state)).unwrap();
        let card = common::card(&name, &registry);
        // A card whose proposer is a coding agent needs that agent installed;
        // its selection policy is covered by the other cards (the agents'
        // own tests run them).
        if card.proposer.kind == <AgentCommandProposer as Component>::INFO.kind {
            continue;
        }
        let mut card = confirming(card, 12);
        card.general.parallel = 1;
        let plan = common::request(card, &task, None);
        let (admitted, summary) = common::collect(common::spawn(plan), |_, _| {});
        assert!(summary.iterations >= 12, "{name}: {:?}", summary.status);
        let genomes: Vec<Genome> = admitted.iter().map(|g| (**g).clone()).collect();
        let bad: BTreeSet<u64> = genomes
            .iter()
            .filter(|g| g.unconfirmed())
            .map(|g| g.id)
            .collect();
        assert!(
            !bad.is_empty(),
            "{name}: a child was inflated and confirmed"
        );
        let chosen = used(&genomes);
        assert!(
            chosen.is_disjoint(&bad),
            "{name}: unconfirmed {bad:?} were used: {chosen:?}"
        );
        assert!(summary.best_id.is_none_or(|b| !bad.contains(&b)), "{name}");
    }
}

#[test]
fn an_honest_evaluator_is_confirmed_and_its_children_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let task = common::temp_task(dir.path());
    let plan = common::request(confirming_card(12), &task, None);
    let (admitted, summary) = common::collect(common::spawn(plan), |_, _| {});
    assert_eq!(summary.iterations, 12, "{:?}", summary.status);
    let confirmed: Vec<&Arc<Genome>> = admitted
        .iter()
        .filter(|g| g.confirmation.is_some())
        .collect();
    assert!(
        !confirmed.is_empty(),
        "a child beat the best and was confirmed"
    );
    for g in &confirmed {
        let c = g.confirmation.as_ref().unwrap();
        assert!(!c.unconfirmed, "{c:?}");
        assert_eq!(c.spread, Some(0.0));
        assert_eq!(c.fitness.len(), 3);
    }
    let ids: BTreeSet<u64> = confirmed.iter().map(|g| g.id).collect();
    let genomes: Vec<Genome> = admitted.iter().map(|g| (**g).clone()).collect();
    assert!(
        !used(&genomes).is_disjoint(&ids),
        "a confirmed genome was chosen as a parent or an inspiration"
    );
}

/// A ShinkaEvolve task turns the card's `subprocess` evaluator into its
/// `evaluate.py` command: the confirmation settings go with it.
#[test]
fn a_shinka_layout_task_keeps_the_cards_confirmation() {
    let dir = tempfile::tempdir().unwrap();
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap();
    let card = dir.path().join("card.yaml");
    std::fs::write(
        &card,
        base.replace(
            "  timeout_secs: 60.0\n",
            "  timeout_secs: 60.0\n  confirm: 1\n  confirm_aggregate: min\n",
        ),
    )
    .unwrap();
    let out = dir.path().join("runs");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("run")
        .arg(&card)
        .args([
            "--task",
            "assets/tasks/exp_poly_shinka",
            "--iterations",
            "4",
            "--out",
        ])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("ShinkaEvolve layout"),
        "{err}"
    );
    let run = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let genomes = read_genomes(&run.join("genomes.jsonl")).unwrap();
    let confirmed: Vec<_> = genomes
        .iter()
        .filter_map(|g| g.confirmation.as_ref())
        .collect();
    assert!(
        !confirmed.is_empty(),
        "a new best was confirmed: {genomes:?}"
    );
    for c in confirmed {
        assert_eq!((c.fitness.len(), c.aggregate.as_str()), (2, "min"), "{c:?}");
    }
}

#[test]
fn confirmation_in_a_reused_process_is_refused_when_the_card_is_checked() {
    let mut card = confirming_card(1);
    card.evaluator
        .params
        .set("candidates_per_process", ParamValue::Int(4));
    let problems = card.check(&common::registry()).err().unwrap();
    let text = format!("{problems:?}");
    assert!(
        text.contains("confirm") && text.contains("fresh process"),
        "{text}"
    );
}
