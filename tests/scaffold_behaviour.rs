//! Behaviour of the populations and selection policies of the three default
//! scaffolds (`best_of_n`, `best_of_n_attempts`, `beam_search`), driven
//! directly with hand-made genomes, as their hub READMEs' Algorithm sections
//! state it.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use galapagos::engine::genome::{FITNESS_KEY, Genome, GenomeId};
use galapagos::engine::population::{
    BeamParams, BeamPopulation, BeamView, GenomeStore, InMemoryParams, InMemoryPopulation,
    Population, Query, Structure,
};
use galapagos::engine::rng::{SearchRng, seeded};
use galapagos::engine::selection::{
    BeamPolicy, BeamSelectionParams, BeamStrategy, BestOfNAttemptsParams, BestOfNAttemptsPolicy,
    BestOfNParams, BestOfNPolicy, Selection, SelectionError, SelectionPolicy,
};
use galapagos::engine::text::ngrams::{NgramSet, solution_distance};
use rand::RngExt as _;

/// A genome with an id, an optional parent, a score (`None` = invalid) and content.
fn genome(
    id: GenomeId,
    parent: Option<GenomeId>,
    score: Option<f64>,
    content: &str,
) -> Arc<Genome> {
    let mut g = Genome {
        id,
        parent_id: parent,
        valid: score.is_some(),
        content: content.to_owned().into(),
        ..Genome::default()
    };
    match score {
        Some(s) => {
            g.scores.insert(FITNESS_KEY.into(), s);
        }
        None => g.error = Some("evaluation failed".into()),
    }
    Arc::new(g)
}

fn flat() -> InMemoryPopulation {
    InMemoryPopulation::new(InMemoryParams::default())
}

fn best_of_n(n: u64, k: u64) -> BestOfNPolicy {
    BestOfNPolicy::new(BestOfNParams {
        best_of_n: n,
        num_inspirations: k,
    })
}

fn attempts(n: u64, k: u64) -> BestOfNAttemptsPolicy {
    BestOfNAttemptsPolicy::new(BestOfNAttemptsParams {
        best_of_n: n,
        num_inspirations: k,
    })
}

fn beam_pop(width: u64, w: f64, penalty: f64) -> BeamPopulation {
    BeamPopulation::new(BeamParams {
        beam_width: width,
        beam_diversity_weight: w,
        beam_depth_penalty: penalty,
    })
}

fn beam_policy(strategy: BeamStrategy, temperature: f64, k: u64) -> BeamPolicy {
    BeamPolicy::new(BeamSelectionParams {
        beam_selection_strategy: strategy,
        beam_temperature: temperature,
        num_inspirations: k,
    })
}

fn parent_id(s: &Selection) -> GenomeId {
    s.parent().unwrap().id
}

fn ids(v: &[Arc<Genome>]) -> Vec<GenomeId> {
    v.iter().map(|g| g.id).collect()
}

/// Admit a child and let the policy observe it, as the loop does.
fn admit(pop: &mut dyn Population, policy: &mut dyn SelectionPolicy, g: Arc<Genome>) {
    pop.add(g.clone());
    policy.observe(&g);
}

// ---------------------------------------------------------------- best_of_n

#[test]
fn best_of_n_holds_the_parent_for_n_valid_children_and_failures_are_free() {
    let mut pop = flat();
    let mut policy = best_of_n(3, 4);
    let mut rng = seeded(7);
    // the initial program does not count: no parent is committed yet
    admit(&mut pop, &mut policy, genome(0, None, Some(0.5), "s0"));
    assert_eq!(policy.uses(), 0);

    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    admit(&mut pop, &mut policy, genome(1, Some(0), Some(0.6), "c1"));
    assert_eq!(policy.uses(), 1);

    // an invalid child does not advance the counter
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    admit(&mut pop, &mut policy, genome(2, Some(0), None, "broken"));
    assert_eq!(policy.uses(), 1);

    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    admit(&mut pop, &mut policy, genome(3, Some(0), Some(0.7), "c3"));
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    admit(&mut pop, &mut policy, genome(4, Some(0), Some(0.8), "c4"));
    assert_eq!(policy.uses(), 3);

    // the 4th select after three valid children: the current global best
    let s = policy.select(&pop, &mut rng).unwrap();
    assert_eq!(parent_id(&s), 4);
    assert_eq!(policy.uses(), 0);
    assert_eq!(policy.current_parent_id(), Some(4));
    assert_eq!(
        policy.status().fields,
        vec![
            ("current parent".to_owned(), "#4".to_owned()),
            ("uses".to_owned(), "0/3".to_owned()),
        ]
    );
}

/// With several iterations in flight, children of a parent land after the
/// policy moved on: only children of the current parent spend its budget, so
/// every parent gets N valid children of its own.
#[test]
fn best_of_n_counts_only_children_of_the_current_parent_when_children_land_late() {
    let mut pop = flat();
    let mut policy = best_of_n(2, 0);
    let mut rng = seeded(1);
    admit(&mut pop, &mut policy, genome(0, None, Some(0.5), "s0"));
    // four iterations dispatched at once, all on genome 0
    for _ in 0..4 {
        assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    }
    admit(&mut pop, &mut policy, genome(1, Some(0), Some(0.6), "c1"));
    admit(&mut pop, &mut policy, genome(2, Some(0), Some(0.9), "c2"));
    // 0 has had its two: the next select commits to the best, 2
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 2);
    // the two late children of 0 land now: they are not 2's
    admit(&mut pop, &mut policy, genome(3, Some(0), Some(0.1), "c3"));
    admit(&mut pop, &mut policy, genome(4, Some(0), Some(0.2), "c4"));
    assert_eq!(policy.uses(), 0);
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 2);
    admit(&mut pop, &mut policy, genome(5, Some(2), Some(0.3), "c5"));
    assert_eq!(policy.uses(), 1);
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 2);
    admit(&mut pop, &mut policy, genome(6, Some(2), Some(0.4), "c6"));
    assert_eq!(policy.uses(), 2);
}

#[test]
fn best_of_n_only_invalid_children_hold_the_parent_forever() {
    let mut pop = flat();
    let mut policy = best_of_n(2, 0);
    let mut rng = seeded(1);
    pop.add(genome(0, None, Some(0.5), "s0"));
    for i in 1..=10 {
        assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
        admit(&mut pop, &mut policy, genome(i, Some(0), None, "bad"));
    }
    assert_eq!(policy.uses(), 0);
}

#[test]
fn best_of_n_switch_reselects_the_same_parent_when_no_child_beat_it() {
    let mut pop = flat();
    let mut policy = best_of_n(2, 4);
    let mut rng = seeded(2);
    pop.add(genome(0, None, Some(0.5), "s0"));
    for (i, s) in [(1, 0.1), (2, 0.2)] {
        assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
        admit(&mut pop, &mut policy, genome(i, Some(0), Some(s), "c"));
    }
    assert_eq!(policy.uses(), 2);
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    assert_eq!(policy.uses(), 0, "the switch resets the counter");
}

#[test]
fn best_of_n_ties_go_to_the_earliest_and_empty_is_an_error() {
    let mut pop = flat();
    let mut policy = best_of_n(5, 4);
    let mut rng = seeded(0);
    assert_eq!(
        policy.select(&pop, &mut rng).unwrap_err(),
        SelectionError::Empty
    );
    pop.add(genome(0, None, None, "invalid seed"));
    assert_eq!(
        policy.select(&pop, &mut rng).unwrap_err(),
        SelectionError::Empty
    );
    pop.add(genome(1, None, Some(0.5), "a"));
    pop.add(genome(2, None, Some(0.5), "b"));
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 1);
}

#[test]
fn best_of_n_removal_of_the_current_parent_forces_a_reselect() {
    // capacity 2: the worst valid genome (the old parent) is evicted
    let mut pop = InMemoryPopulation::new(InMemoryParams { capacity: Some(2) });
    let mut policy = best_of_n(5, 4);
    let mut rng = seeded(3);
    pop.add(genome(0, None, Some(0.5), "s0"));
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    admit(&mut pop, &mut policy, genome(1, Some(0), Some(0.9), "c1"));
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    admit(&mut pop, &mut policy, genome(2, Some(0), Some(0.95), "c2"));
    assert!(pop.get(0).is_none(), "the parent was evicted");
    assert_eq!(policy.uses(), 2);
    let s = policy.select(&pop, &mut rng).unwrap();
    assert_eq!(parent_id(&s), 2);
    assert_eq!(policy.uses(), 0);
}

/// 30 valid genomes scored by id plus invalid ones in between.
fn ranked_population() -> InMemoryPopulation {
    let mut pop = flat();
    for i in 0..30u64 {
        pop.add(genome(2 * i, None, Some(i as f64), &format!("p{i}")));
        pop.add(genome(2 * i + 1, None, None, "broken"));
    }
    pop
}

fn inspiration_trace(policy: &mut dyn SelectionPolicy, seed: u64, steps: usize) -> Vec<Vec<u64>> {
    let pop = ranked_population();
    let mut rng = seeded(seed);
    (0..steps)
        .map(|_| {
            let s = policy.select(&pop, &mut rng).unwrap();
            let mut insp = ids(&s.inspirations);
            insp.push(parent_id(&s));
            insp
        })
        .collect()
}

#[test]
fn best_of_n_inspirations_exclude_the_parent_come_from_the_top_pool_and_are_seeded() {
    let pop = ranked_population();
    let k = 4usize;
    // top max(2k, 10) = 10 valid genomes: scores 20..=29 → ids 40, 42, ..., 58
    let pool: HashSet<GenomeId> = (20..30u64).map(|i| 2 * i).collect();
    let mut policy = best_of_n(3, k as u64);
    let mut rng = seeded(11);
    let mut distinct_sets = BTreeSet::new();
    for _ in 0..40 {
        let s = policy.select(&pop, &mut rng).unwrap();
        let parent = parent_id(&s);
        assert_eq!(parent, 58);
        let insp = ids(&s.inspirations);
        assert_eq!(insp.len(), k);
        assert!(
            !insp.contains(&parent),
            "the parent is never an inspiration"
        );
        assert!(
            insp.iter().all(|id| pool.contains(id)),
            "{insp:?} outside the top pool"
        );
        assert_eq!(
            insp.iter().collect::<HashSet<_>>().len(),
            k,
            "no duplicates"
        );
        let mut sorted = insp.clone();
        sorted.sort_unstable();
        distinct_sets.insert(sorted);
    }
    assert!(
        distinct_sets.len() > 1,
        "inspirations are re-drawn every step"
    );

    // same seed → same inspirations; another seed → a different sequence
    let a = inspiration_trace(&mut best_of_n(3, 4), 5, 20);
    let b = inspiration_trace(&mut best_of_n(3, 4), 5, 20);
    let c = inspiration_trace(&mut best_of_n(3, 4), 6, 20);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn best_of_n_inspirations_are_capped_by_what_exists() {
    let mut pop = flat();
    pop.add(genome(0, None, Some(0.5), "a"));
    let mut policy = best_of_n(3, 4);
    let mut rng = seeded(0);
    assert!(
        policy
            .select(&pop, &mut rng)
            .unwrap()
            .inspirations
            .is_empty()
    );
    pop.add(genome(1, None, Some(0.1), "b"));
    pop.add(genome(2, None, None, "c"));
    pop.add(genome(3, None, Some(0.2), "d"));
    let s = policy.select(&pop, &mut rng).unwrap();
    let mut insp = ids(&s.inspirations);
    insp.sort_unstable();
    assert_eq!(insp, vec![1, 3]);
}

// ------------------------------------------------------- best_of_n_attempts

#[test]
fn best_of_n_attempts_rotates_after_exactly_n_selections_even_all_invalid() {
    let mut pop = flat();
    let mut policy = attempts(3, 4);
    let mut rng = seeded(4);
    pop.add(genome(0, None, Some(0.5), "s0"));
    for i in 1..=3 {
        assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
        assert_eq!(policy.uses(), i as usize);
        admit(&mut pop, &mut policy, genome(i, Some(0), None, "bad"));
    }
    // budget spent by three failures: the 4th select switches (to the same
    // best, which no child beat) and the counter restarts
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    assert_eq!(policy.uses(), 1);
}

#[test]
fn best_of_n_attempts_ignores_outcomes_until_the_budget_is_spent() {
    let mut pop = flat();
    let mut policy = attempts(3, 0);
    let mut rng = seeded(5);
    pop.add(genome(0, None, Some(0.5), "s0"));
    let mut parents = Vec::new();
    let children = [
        Some(0.9), // better child right away: still not adopted before 3 attempts
        None,
        Some(0.1),
        Some(0.95),
        None,
        None,
    ];
    for (i, score) in children.iter().enumerate() {
        let s = policy.select(&pop, &mut rng).unwrap();
        parents.push(parent_id(&s));
        let id = i as u64 + 1;
        admit(
            &mut pop,
            &mut policy,
            genome(id, Some(parents[i]), *score, "c"),
        );
    }
    parents.push(parent_id(&policy.select(&pop, &mut rng).unwrap()));
    // selections 1-3 on #0, 4-6 on the best at that time (#1), then #4
    assert_eq!(parents, vec![0, 0, 0, 1, 1, 1, 4]);
}

#[test]
fn best_of_n_attempts_inspirations_exclude_the_parent_and_are_seeded() {
    let a = inspiration_trace(&mut attempts(2, 4), 9, 15);
    let b = inspiration_trace(&mut attempts(2, 4), 9, 15);
    assert_eq!(a, b);
    for step in &a {
        let (parent, insp) = step.split_last().unwrap();
        assert!(!insp.contains(parent));
        assert!(insp.len() <= 4);
    }
}

// ----------------------------------------------------------- beam population

/// Random genomes with random scores, contents and known parents.
fn random_stream(seed: u64, count: u64) -> Vec<Arc<Genome>> {
    let mut rng: SearchRng = seeded(seed);
    let words = [
        "sort", "heap", "loop", "dp", "greedy", "hash", "tree", "graph",
    ];
    (0..count)
        .map(|id| {
            let parent = if id == 0 {
                None
            } else {
                Some(rng.random_range(0..id))
            };
            let score = if rng.random_bool(0.2) {
                None
            } else {
                Some(rng.random_range(0.0..1.0))
            };
            let content: Vec<&str> = (0..6)
                .map(|_| words[rng.random_range(0..words.len())])
                .collect();
            genome(id, parent, score, &content.join(" "))
        })
        .collect()
}

fn beam_view(pop: &dyn Population) -> BeamView {
    match pop.structure() {
        Structure::Beam(view) => view,
        Structure::Flat | Structure::Islands(_) => panic!("expected a beam structure"),
    }
}

#[test]
fn beam_never_exceeds_its_width_keeps_the_best_and_evicted_never_return() {
    for w in [0.0, 0.3, 1.0] {
        let mut pop = beam_pop(5, w, 0.0);
        let mut ever_evicted: HashSet<GenomeId> = HashSet::new();
        let mut previous: Vec<GenomeId> = Vec::new();
        for g in random_stream(42, 120) {
            pop.add(g.clone());
            let beam = pop.beam_ids();
            assert!(beam.len() <= 5, "beam of {} at w={w}", beam.len());
            assert_eq!(ids(&pop.query(&Query::Active)), beam);
            assert_eq!(beam_view(&pop).members, beam);
            if !g.valid {
                assert!(!beam.contains(&g.id), "invalid genomes never join the beam");
            }
            for id in &previous {
                if !beam.contains(id) {
                    ever_evicted.insert(*id);
                }
            }
            assert!(
                beam.iter().all(|id| !ever_evicted.contains(id)),
                "an evicted member came back at w={w}"
            );
            // with no depth penalty the beam's top is the global best
            assert_eq!(beam.first().copied(), pop.best().map(|b| b.id));
            previous = beam;
        }
        assert_eq!(pop.len(), 120, "the store underneath keeps everything");
        assert!(!ever_evicted.is_empty());
    }
}

#[test]
fn beam_with_zero_diversity_is_exactly_the_top_w_of_everything_that_entered() {
    let mut pop = beam_pop(4, 0.0, 0.0);
    let mut entered: Vec<(f64, GenomeId)> = Vec::new();
    for g in random_stream(7, 80) {
        pop.add(g.clone());
        if let Some(f) = g.fitness() {
            entered.push((f, g.id));
        }
        let mut expected = entered.clone();
        expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let expected: Vec<GenomeId> = expected.iter().take(4).map(|(_, id)| *id).collect();
        assert_eq!(pop.beam_ids(), expected);
    }
}

#[test]
fn beam_diverse_prune_evicts_a_near_duplicate_that_never_returns() {
    let base = "def solve(xs):\n    return sorted(xs)\n";
    let mut pop = beam_pop(2, 0.9, 0.0);
    pop.add(genome(0, None, Some(1.0), base));
    pop.add(genome(1, Some(0), Some(0.99), &format!("{base}# tweak\n")));
    pop.add(genome(
        2,
        Some(0),
        Some(0.5),
        "import heapq\nwhile queue: heapq.heappop(queue)",
    ));
    assert_eq!(pop.beam_ids(), vec![0, 2]);
    // #1 is in the global top-2 but was evicted; later adds never bring it back
    assert_eq!(ids(&pop.query(&Query::TopK(2))), vec![0, 1]);
    pop.add(genome(3, Some(2), Some(0.1), "x"));
    pop.add(genome(
        4,
        Some(2),
        Some(0.05),
        "y = [i * i for i in range(10)]",
    ));
    assert!(!pop.beam_ids().contains(&1));
    assert!(pop.beam_ids().contains(&0), "the best is always kept");
}

#[test]
fn beam_depth_penalty_ranks_the_deeper_of_equal_genomes_lower() {
    let mut pop = beam_pop(5, 0.0, 0.1);
    pop.add(genome(0, None, Some(0.5), "root"));
    pop.add(genome(1, Some(0), Some(1.0), "deep child"));
    pop.add(genome(2, None, Some(1.0), "another root"));
    assert_eq!(pop.depth(1), Some(1));
    assert_eq!(pop.depth(2), Some(0));
    // equal raw fitness: the depth-0 genome ranks first despite its later id
    assert_eq!(pop.beam_ids(), vec![2, 1, 0]);
    let mut policy = beam_policy(BeamStrategy::Best, 1.0, 0);
    let mut rng = seeded(0);
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 2);
    // without the penalty the earlier id wins the tie
    let mut plain = beam_pop(5, 0.0, 0.0);
    plain.add(genome(0, None, Some(0.5), "root"));
    plain.add(genome(1, Some(0), Some(1.0), "deep child"));
    plain.add(genome(2, None, Some(1.0), "another root"));
    assert_eq!(plain.beam_ids(), vec![1, 2, 0]);
}

// ---------------------------------------------------------- beam selection

fn three_member_beam() -> BeamPopulation {
    let mut pop = beam_pop(3, 0.0, 0.0);
    pop.add(genome(0, None, Some(0.2), "zero"));
    pop.add(genome(1, None, Some(0.9), "one"));
    pop.add(genome(2, None, Some(0.5), "two"));
    pop
}

#[test]
fn beam_round_robin_cycles_in_score_order() {
    let pop = three_member_beam();
    let mut policy = beam_policy(BeamStrategy::RoundRobin, 1.0, 4);
    let mut rng = seeded(0);
    let picks: Vec<GenomeId> = (0..7)
        .map(|_| parent_id(&policy.select(&pop, &mut rng).unwrap()))
        .collect();
    assert_eq!(picks, vec![1, 2, 0, 1, 2, 0, 1]);
    assert_eq!(policy.total_expansions(), 7);
    assert_eq!(policy.expanded().collect::<Vec<_>>(), picks);
}

#[test]
fn beam_best_and_zero_temperature_stochastic_always_take_the_top() {
    let pop = three_member_beam();
    let mut rng = seeded(3);
    let mut best = beam_policy(BeamStrategy::Best, 1.0, 4);
    let mut cold = beam_policy(BeamStrategy::Stochastic, 0.0, 4);
    for _ in 0..50 {
        assert_eq!(parent_id(&best.select(&pop, &mut rng).unwrap()), 1);
        assert_eq!(parent_id(&cold.select(&pop, &mut rng).unwrap()), 1);
    }
}

#[test]
fn beam_stochastic_is_seeded_and_reaches_every_member() {
    let mut pop = beam_pop(3, 0.0, 0.0);
    pop.add(genome(0, None, Some(0.50), "a"));
    pop.add(genome(1, None, Some(0.49), "b"));
    pop.add(genome(2, None, Some(0.48), "c"));
    let run = |seed: u64| -> Vec<GenomeId> {
        let mut policy = beam_policy(BeamStrategy::Stochastic, 1.0, 0);
        let mut rng = seeded(seed);
        (0..100)
            .map(|_| parent_id(&policy.select(&pop, &mut rng).unwrap()))
            .collect()
    };
    let a = run(21);
    assert_eq!(a, run(21));
    assert_ne!(a, run(22));
    let seen: HashSet<GenomeId> = a.iter().copied().collect();
    assert_eq!(seen.len(), 3);
}

#[test]
fn beam_diversity_weighted_prefers_a_member_far_from_recent_expansions() {
    let mut pop = beam_pop(3, 0.5, 0.0);
    let a = "for i in range(n):\n    total += values[i] * weights[i]\n";
    pop.add(genome(0, None, Some(0.6), a));
    pop.add(genome(1, None, Some(0.55), &format!("{a}    total -= 1\n")));
    pop.add(genome(
        2,
        None,
        Some(0.5),
        "return sum(map(operator.mul, xs, ys))",
    ));
    assert_eq!(pop.beam_ids(), vec![0, 1, 2]);
    let mut policy = beam_policy(BeamStrategy::DiversityWeighted, 0.0, 0);
    let mut rng = seeded(0);
    // nothing expanded yet → stochastic, and T = 0 → the top
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 0);
    // now #0 was expanded: the far-away #2 beats both higher-scored members
    assert_eq!(parent_id(&policy.select(&pop, &mut rng).unwrap()), 2);
    assert_eq!(
        policy.status().fields,
        vec![
            ("strategy".to_owned(), "diversity_weighted".to_owned()),
            ("expansions".to_owned(), "2".to_owned()),
            ("last expanded".to_owned(), "#2".to_owned()),
        ]
    );
    // the score-only strategies would keep taking #0
    let mut plain = beam_policy(BeamStrategy::Stochastic, 0.0, 0);
    assert_eq!(parent_id(&plain.select(&pop, &mut rng).unwrap()), 0);
    assert_eq!(parent_id(&plain.select(&pop, &mut rng).unwrap()), 0);
}

#[test]
fn beam_inspirations_are_the_global_top_without_the_parent() {
    let mut pop = beam_pop(2, 0.0, 0.0);
    pop.add(genome(0, None, Some(0.3), "a"));
    pop.add(genome(1, None, Some(0.9), "b"));
    pop.add(genome(2, None, Some(0.8), "c"));
    pop.add(genome(3, None, Some(0.7), "d"));
    assert_eq!(pop.beam_ids(), vec![1, 2]);
    let mut policy = beam_policy(BeamStrategy::RoundRobin, 1.0, 2);
    let mut rng = seeded(0);
    let first = policy.select(&pop, &mut rng).unwrap();
    assert_eq!(parent_id(&first), 1);
    assert_eq!(ids(&first.inspirations), vec![2, 3]);
    let second = policy.select(&pop, &mut rng).unwrap();
    assert_eq!(parent_id(&second), 2);
    // #3 was pruned from the beam but is still a global-top inspiration
    assert_eq!(ids(&second.inspirations), vec![1, 3]);
}

#[test]
fn beam_selection_needs_a_beam_population() {
    let mut pop = flat();
    pop.add(genome(0, None, Some(0.5), "a"));
    let mut policy = beam_policy(BeamStrategy::Best, 1.0, 4);
    let mut rng = seeded(0);
    assert_eq!(
        policy.select(&pop, &mut rng).unwrap_err(),
        SelectionError::Incompatible("beam selection needs a beam population".to_owned())
    );
    let empty = beam_pop(5, 0.3, 0.0);
    assert_eq!(
        policy.select(&empty, &mut rng).unwrap_err(),
        SelectionError::Empty
    );
}

/// A population that reports a beam structure whose beam is empty.
struct EmptyBeam(InMemoryPopulation);

impl Population for EmptyBeam {
    fn add(&mut self, genome: Arc<Genome>) {
        self.0.add(genome);
    }
    fn store(&self) -> &GenomeStore {
        self.0.store()
    }
    fn structure(&self) -> Structure {
        Structure::Beam(BeamView {
            members: Vec::new(),
            width: 3,
            diversity_weight: 0.3,
            depth_penalty: 0.0,
        })
    }
}

#[test]
fn beam_empty_beam_over_a_non_empty_population_uses_the_global_best() {
    let mut pop = EmptyBeam(flat());
    pop.add(genome(0, None, Some(0.2), "a"));
    pop.add(genome(1, None, Some(0.7), "b"));
    pop.add(genome(2, None, None, "c"));
    for strategy in [
        BeamStrategy::Best,
        BeamStrategy::Stochastic,
        BeamStrategy::RoundRobin,
        BeamStrategy::DiversityWeighted,
    ] {
        let mut policy = beam_policy(strategy, 1.0, 4);
        let mut rng = seeded(0);
        let s = policy.select(&pop, &mut rng).unwrap();
        assert_eq!(parent_id(&s), 1, "{strategy:?}");
        assert_eq!(ids(&s.inspirations), vec![0]);
    }
}

// ------------------------------------------------------------------ distance

#[test]
fn distance_edge_cases() {
    assert_eq!(solution_distance("", ""), 1.0);
    assert_eq!(solution_distance("", "abc"), 1.0);
    assert_eq!(solution_distance("xy", "ab"), 0.0);
    assert_eq!(solution_distance("abc", "abc"), 0.0);
    assert_eq!(solution_distance("abc", "xyz"), 1.0);
    // {abc, bcd} vs {bcd, cde}: 1 shared of 3
    assert!((solution_distance("abcd", "bcde") - 2.0 / 3.0).abs() < 1e-12);
    let long_a = "fn main() { println!(\"hi\"); }\n".repeat(2000);
    let long_b = format!("{long_a}// one more line\n");
    let (sa, sb) = (NgramSet::new(&long_a), NgramSet::new(&long_b));
    let d = sa.distance(&sb);
    assert!(d > 0.0 && d < 0.5, "{d}");
    assert_eq!(d, sb.distance(&sa));
}
