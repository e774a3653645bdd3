#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Behaviour of the island blocks of the palette: `IslandsPopulation`
//! (MAP-Elites grids, elite archive, ring migration) and the `topk`,
//! `explore_exploit`, `ucb_islands` and `identity` selection policies, driven
//! directly with hand-made genomes; plus offline CLI runs of the `topk`,
//! `openevolve` and `adaevolve` cards.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;

use common::{card, collect, registry, stop, temp_task, with_evaluator};
use galapagos::engine::archive::Archive;
use galapagos::engine::events::RunStatus;
use galapagos::engine::genome::{FITNESS_KEY, Genome, GenomeId, GenomeMeta};
use galapagos::engine::params::ParamValue;
use galapagos::engine::population::{
    InMemoryParams, InMemoryPopulation, IslandsParams, IslandsPopulation, Population, Query,
    Structure,
};
use galapagos::engine::rng::{SearchRng, seeded};
use galapagos::engine::selection::{
    ExploreExploitParams, ExploreExploitPolicy, IdentityPolicy, SampleMode, Selection,
    SelectionPolicy, TopKParams, TopKPolicy, UcbIslandsParams, UcbIslandsPolicy,
};

/// A genome on `island` (None = let the population route it).
fn genome(
    id: GenomeId,
    parent: Option<GenomeId>,
    island: Option<u32>,
    score: Option<f64>,
    content: &str,
) -> Arc<Genome> {
    let mut g = Genome {
        id,
        parent_id: parent,
        valid: score.is_some(),
        content: content.to_owned().into(),
        metadata: GenomeMeta {
            island,
            ..GenomeMeta::default()
        },
        ..Genome::default()
    };
    if let Some(s) = score {
        g.scores.insert(FITNESS_KEY.into(), s);
    }
    Arc::new(g)
}

fn islands(params: IslandsParams) -> IslandsPopulation {
    IslandsPopulation::new(params)
}

fn members(pop: &IslandsPopulation) -> Vec<BTreeSet<GenomeId>> {
    (0..pop.num_islands())
        .map(|i| pop.island_members(i).into_iter().collect())
        .collect()
}

#[test]
fn a_root_seeds_every_island_and_children_follow_their_island() {
    let mut pop = islands(IslandsParams {
        num_islands: 3,
        ..IslandsParams::default()
    });
    pop.add(genome(0, None, None, Some(0.5), "root"));
    assert_eq!(pop.islands_of(0), vec![0, 1, 2]);
    pop.add(genome(1, Some(0), Some(2), Some(0.6), "child on 2"));
    // island ids wrap around the island count
    pop.add(genome(2, Some(0), Some(4), Some(0.1), "child on 1"));
    // no island: the parent's home island
    pop.add(genome(3, Some(1), None, Some(0.2), "grandchild"));
    assert_eq!(pop.islands_of(1), vec![2]);
    assert_eq!(pop.islands_of(2), vec![1]);
    assert_eq!(pop.islands_of(3), vec![2]);
    assert_eq!(pop.island_members(2), vec![1, 0, 3]);
    // invalid genomes are stored, never placed
    pop.add(genome(4, Some(0), Some(0), None, "broken"));
    assert!(pop.get(4).is_some());
    assert!(pop.islands_of(4).is_empty());
    assert!(pop.cell_of(4).is_none());
    assert_eq!(pop.len(), 5);
    // Active = union of island members, best first
    let active: Vec<GenomeId> = pop.query(&Query::Active).iter().map(|g| g.id).collect();
    assert_eq!(active, vec![1, 0, 3, 2]);
    let Structure::Islands(view) = pop.structure() else {
        panic!("an island population reports islands");
    };
    assert_eq!(view.islands.len(), 3);
    assert_eq!(view.islands[2].best, Some(1));
    assert_eq!(view.islands[2].generation, 2);
    assert_eq!(view.islands[0].generation, 1);
    assert_eq!(
        view.feature_dimensions,
        vec!["complexity".to_owned(), "diversity".to_owned()]
    );
}

#[test]
fn migration_copies_the_top_share_ring_wise_without_duplicates() {
    let mut pop = islands(IslandsParams {
        num_islands: 3,
        feature_dimensions: Vec::new(),
        migration_interval: 4,
        migration_rate: 0.5,
        ..IslandsParams::default()
    });
    pop.add(genome(0, None, None, Some(0.0), "root"));
    pop.add(genome(1, Some(0), Some(1), Some(0.5), "a"));
    pop.add(genome(2, Some(0), Some(2), Some(0.6), "b"));
    pop.add(genome(3, Some(0), Some(0), Some(0.3), "c"));
    pop.add(genome(4, Some(0), Some(0), Some(0.2), "d"));
    pop.add(genome(5, Some(0), Some(0), Some(0.1), "e"));
    assert_eq!(pop.migrations(), 0);
    let before = members(&pop);
    assert_eq!(before[0], BTreeSet::from([0, 3, 4, 5]));
    // island 0 reaches 4 generations: every island migrates
    pop.add(genome(6, Some(0), Some(0), Some(0.4), "f"));
    assert_eq!(pop.migrations(), 1);
    let after = members(&pop);
    // island 0 held 5 members → its top ceil(2.5) = 3 (6, 3, 4) go to island 1
    assert_eq!(after[1], BTreeSet::from([0, 1, 3, 4, 6]));
    // island 1 held 2 → its top 1 (1) goes to island 2
    assert_eq!(after[2], BTreeSet::from([0, 1, 2]));
    // island 2 held 2 → its top 1 (2) goes to island 0 (the ring wraps)
    assert_eq!(after[0], BTreeSet::from([0, 2, 3, 4, 5, 6]));
    // copies are references: no new id, the store holds each genome once
    assert_eq!(pop.len(), 7);
    let all: Vec<GenomeId> = pop.query(&Query::All).iter().map(|g| g.id).collect();
    assert_eq!(all, (0..7).collect::<Vec<_>>());
    // the root was already everywhere and is not duplicated anywhere
    for i in 0..3 {
        let list = pop.island_members(i);
        let set: HashSet<GenomeId> = list.iter().copied().collect();
        assert_eq!(list.len(), set.len(), "island {i} holds an id twice");
    }
    // a second migration only copies what is missing
    for (id, s) in [(7, 0.05), (8, 0.04), (9, 0.03), (10, 0.02)] {
        pop.add(genome(id, Some(0), Some(0), Some(s), "g"));
    }
    assert_eq!(pop.migrations(), 2);
    for i in 0..3 {
        let list = pop.island_members(i);
        let set: HashSet<GenomeId> = list.iter().copied().collect();
        assert_eq!(list.len(), set.len());
    }
    assert_eq!(pop.len(), 11);
    let Structure::Islands(view) = pop.structure() else {
        panic!("islands");
    };
    for isl in &view.islands {
        assert_eq!(isl.generation, isl.last_migration);
    }
}

#[test]
fn a_map_elites_cell_keeps_the_better_genome() {
    let mut pop = islands(IslandsParams {
        num_islands: 1,
        feature_dimensions: vec!["x".to_owned()],
        feature_bins: 2,
        ..IslandsParams::default()
    });
    let with_x = |id, score: f64, x: f64| {
        let mut g = (*genome(id, (id > 0).then_some(0), Some(0), Some(score), "p")).clone();
        g.scores.insert("x".into(), x);
        Arc::new(g)
    };
    pop.add(with_x(0, 0.5, 0.0));
    // x = 10 widens the range to [0, 15]: bins [0, 7.5) and [7.5, 15]
    pop.add(with_x(1, 0.1, 10.0));
    assert_eq!(pop.cell_of(0), Some(&[0][..]));
    assert_eq!(pop.cell_of(1), Some(&[1][..]));
    // a better genome takes the cell
    pop.add(with_x(2, 0.9, 1.0));
    assert_eq!(pop.cell_elite(0, &[0]), Some(2));
    // worse genomes do not
    pop.add(with_x(3, 0.2, 2.0));
    pop.add(with_x(4, 0.05, 12.0));
    assert_eq!(pop.cell_elite(0, &[0]), Some(2));
    assert_eq!(pop.cell_elite(0, &[1]), Some(1));
    // a tie keeps the earlier genome
    pop.add(with_x(5, 0.9, 3.0));
    assert_eq!(pop.cell_elite(0, &[0]), Some(2));
    // every placed genome stays a member; the elites form the archive
    assert_eq!(pop.island_members(0).len(), 6);
    assert_eq!(pop.archive_ids(), vec![2, 1]);
    let Structure::Islands(view) = pop.structure() else {
        panic!("islands");
    };
    assert_eq!(view.islands[0].elites, vec![2, 1]);
    assert_eq!(view.islands[0].cells, 2);
    assert_eq!(view.archive, vec![2, 1]);
}

/// A deterministic child of `sel`: content and score depend on the parent,
/// the step and the island only.
fn child_of(sel: &Selection, id: GenomeId, step: u64) -> Arc<Genome> {
    let parent = sel.parent().unwrap();
    let base = parent.fitness().unwrap_or(0.0);
    let wobble = ((id * 37 + step * 11) % 17) as f64 / 17.0 - 0.45;
    let valid = id % 9 != 4;
    let pad = "x".repeat(((id * 13) % 40) as usize);
    genome(
        id,
        Some(parent.id),
        sel.island,
        valid.then_some(base + 0.1 * wobble),
        &format!("def f():\n    return {id} # {pad}\n"),
    )
}

/// Run `steps` select → child → add → observe rounds; returns what was
/// selected (parent, inspirations, island) at each step.
fn drive(
    pop: &mut dyn Population,
    policy: &mut dyn SelectionPolicy,
    rng: &mut SearchRng,
    first_id: GenomeId,
    steps: u64,
) -> Vec<(GenomeId, Vec<GenomeId>, Option<u32>)> {
    let mut out = Vec::new();
    for step in 0..steps {
        let sel = policy.select(pop, rng).unwrap();
        let id = first_id + step;
        let child = child_of(&sel, id, step);
        out.push((
            sel.parent().unwrap().id,
            sel.inspirations.iter().map(|g| g.id).collect(),
            sel.island,
        ));
        pop.add(Arc::clone(&child));
        policy.observe(&child);
    }
    out
}

fn seeded_islands(n: u64) -> IslandsPopulation {
    let mut pop = islands(IslandsParams {
        num_islands: n,
        migration_interval: 5,
        ..IslandsParams::default()
    });
    pop.add(genome(0, None, None, Some(1.0), "def f():\n    return 0\n"));
    pop
}

#[test]
fn explore_exploit_ratios_hold_over_ten_thousand_seeded_draws() {
    let mut pop = seeded_islands(2);
    let mut warm = ExploreExploitPolicy::default();
    let mut rng = seeded(7);
    drive(&mut pop, &mut warm, &mut rng, 1, 60);
    let Structure::Islands(view) = pop.structure() else {
        panic!("islands");
    };
    let archive: HashSet<GenomeId> = view.archive.iter().copied().collect();
    let mut policy = ExploreExploitPolicy::default();
    let mut islands_seen = Vec::new();
    for _ in 0..10_000 {
        let s = policy.select(&pop, &mut rng).unwrap();
        let parent = s.parent().unwrap().id;
        let island = s.island.unwrap() as usize;
        islands_seen.push(island);
        match policy.last_mode().unwrap() {
            SampleMode::Explore => assert!(view.islands[island].members.contains(&parent)),
            SampleMode::Exploit => assert!(archive.contains(&parent)),
            SampleMode::Random => assert!(pop.get(parent).unwrap().valid),
        }
        assert!(s.inspirations.iter().all(|g| g.id != parent));
    }
    // island round-robin
    assert!(islands_seen.iter().enumerate().all(|(i, k)| *k == i % 2));
    let (explore, exploit, random) = policy.mode_counts();
    assert_eq!(explore + exploit + random, 10_000);
    let share = |c: u64| c as f64 / 10_000.0;
    assert!((share(explore) - 0.2).abs() < 0.02, "explore {explore}");
    assert!((share(exploit) - 0.7).abs() < 0.02, "exploit {exploit}");
    assert!((share(random) - 0.1).abs() < 0.02, "random {random}");
    // other ratios are honoured too
    let mut skewed = ExploreExploitPolicy::new(ExploreExploitParams {
        exploration_ratio: 0.5,
        exploitation_ratio: 0.1,
        ..ExploreExploitParams::default()
    });
    for _ in 0..10_000 {
        skewed.select(&pop, &mut rng).unwrap();
    }
    let (e, x, r) = skewed.mode_counts();
    assert!((share(e) - 0.5).abs() < 0.02 && (share(x) - 0.1).abs() < 0.02);
    assert!((share(r) - 0.4).abs() < 0.02);
}

#[test]
fn ucb_visits_every_island_before_exploiting_and_prefers_the_improving_one() {
    let mut pop = seeded_islands(4);
    let mut policy = UcbIslandsPolicy::default();
    policy.observe(&pop.get(0).unwrap());
    let mut rng = seeded(11);
    let mut first_round = BTreeSet::new();
    let mut improving_score = 1.0;
    for step in 0..48 {
        let next_id = step + 1;
        let s = policy.select(&pop, &mut rng).unwrap();
        let k = s.island.unwrap();
        if step < 4 {
            assert!(
                first_round.insert(k),
                "island {k} visited twice in round one"
            );
        }
        // island 2's children double the best score; the others get worse
        let score = if k == 2 {
            improving_score *= 2.0;
            improving_score
        } else {
            0.1
        };
        let child = genome(
            next_id,
            Some(s.parent().unwrap().id),
            Some(k),
            Some(score),
            "c",
        );
        pop.add(Arc::clone(&child));
        policy.observe(&child);
    }
    assert_eq!(first_round, BTreeSet::from([0, 1, 2, 3]));
    let visits = policy.visits().to_vec();
    assert_eq!(visits.iter().sum::<u64>(), 48);
    for k in [0, 1, 3] {
        assert!(
            visits[2] > 2 * visits[k],
            "island 2 must dominate: {visits:?}"
        );
        assert!(visits[k] >= 1);
        // the improving island exploits more
        assert!(policy.intensity(2) < policy.intensity(k));
        assert!(policy.average_reward(2) > policy.average_reward(k));
    }
}

#[test]
fn ucb_exploits_the_island_best_when_intensity_is_zero() {
    let mut pop = seeded_islands(2);
    let mut warm = ExploreExploitPolicy::default();
    let mut rng = seeded(3);
    drive(&mut pop, &mut warm, &mut rng, 1, 30);
    let mut policy = UcbIslandsPolicy::new(UcbIslandsParams {
        intensity_min: 0.0,
        intensity_max: 0.0,
        ..UcbIslandsParams::default()
    });
    let Structure::Islands(view) = pop.structure() else {
        panic!("islands");
    };
    for _ in 0..10 {
        let s = policy.select(&pop, &mut rng).unwrap();
        let k = s.island.unwrap() as usize;
        assert_eq!(Some(s.parent().unwrap().id), view.islands[k].best);
        assert_eq!(policy.last_explored(), Some(false));
    }
}

/// Builds a fresh policy.
type MakePolicy = dyn Fn() -> Box<dyn SelectionPolicy>;

/// Drive a policy, checkpoint it, restore a fresh one, and check both
/// continue identically from identical population and RNG state.
fn continues_identically(make: &MakePolicy, flat: bool) {
    let mut pop_a: Box<dyn Population> = if flat {
        let mut p = InMemoryPopulation::new(InMemoryParams::default());
        p.add(genome(0, None, None, Some(1.0), "def f():\n    return 0\n"));
        Box::new(p)
    } else {
        Box::new(seeded_islands(3))
    };
    let mut a = make();
    let mut rng = seeded(42);
    drive(&mut *pop_a, &mut *a, &mut rng, 1, 25);
    let saved = serde_json::to_string(&a.checkpoint()).unwrap();
    // rebuild the population from its add sequence, as a resumed run does
    let mut pop_b: Box<dyn Population> = if flat {
        Box::new(InMemoryPopulation::new(InMemoryParams::default()))
    } else {
        Box::new(islands(IslandsParams {
            num_islands: 3,
            migration_interval: 5,
            ..IslandsParams::default()
        }))
    };
    for g in pop_a.query(&Query::All) {
        pop_b.add(g);
    }
    let mut b = make();
    b.restore(&serde_json::from_str(&saved).unwrap()).unwrap();
    assert_eq!(a.status(), b.status());
    let mut rng_b = rng.clone();
    let run_a = drive(&mut *pop_a, &mut *a, &mut rng, 26, 25);
    let run_b = drive(&mut *pop_b, &mut *b, &mut rng_b, 26, 25);
    assert_eq!(run_a, run_b);
    assert_eq!(a.checkpoint(), b.checkpoint());
}

#[test]
fn checkpoint_then_restore_continues_identically_for_every_policy() {
    let makers: Vec<(&str, Box<MakePolicy>)> = vec![
        (
            "topk",
            Box::new(|| Box::new(TopKPolicy::new(TopKParams { k: 3 }))),
        ),
        (
            "explore_exploit",
            Box::new(|| Box::new(ExploreExploitPolicy::default())),
        ),
        (
            "ucb_islands",
            Box::new(|| Box::new(UcbIslandsPolicy::default())),
        ),
        ("identity", Box::new(|| Box::new(IdentityPolicy::default()))),
    ];
    for (name, make) in &makers {
        for flat in [false, true] {
            eprintln!("{name} flat={flat}");
            continues_identically(make.as_ref(), flat);
        }
    }
    // a bad checkpoint is an error, not a panic
    let mut p = UcbIslandsPolicy::default();
    assert!(p.restore(&serde_json::json!({"visits": "no"})).is_err());
    let mut e = ExploreExploitPolicy::default();
    assert!(e.restore(&serde_json::json!([1, 2])).is_err());
}

#[test]
fn the_population_rebuilt_from_its_add_sequence_equals_the_original() {
    let mut pop = islands(IslandsParams {
        num_islands: 3,
        migration_interval: 4,
        migration_rate: 0.2,
        feature_bins: 5,
        ..IslandsParams::default()
    });
    pop.add(genome(0, None, None, Some(1.0), "def f():\n    return 0\n"));
    let mut policy = ExploreExploitPolicy::default();
    let mut rng = seeded(9);
    drive(&mut pop, &mut policy, &mut rng, 1, 200);
    assert!(pop.migrations() > 5);
    assert!(pop.rebuilds() > 0);
    // range growth is geometric: few rebuilds for 200 adds
    assert!(pop.rebuilds() < 40, "{} rebuilds", pop.rebuilds());
    let mut again = islands(IslandsParams {
        num_islands: 3,
        migration_interval: 4,
        migration_rate: 0.2,
        feature_bins: 5,
        ..IslandsParams::default()
    });
    for g in pop.query(&Query::All) {
        again.add(g);
    }
    assert_eq!(pop.structure(), again.structure());
    assert_eq!(pop.archive_ids(), again.archive_ids());
    assert_eq!(pop.migrations(), again.migrations());
    for g in pop.query(&Query::All) {
        assert_eq!(pop.cell_of(g.id), again.cell_of(g.id));
        assert_eq!(pop.features(g.id), again.features(g.id));
        assert_eq!(pop.islands_of(g.id), again.islands_of(g.id));
    }
    let ids = |p: &IslandsPopulation| -> Vec<GenomeId> {
        p.query(&Query::Active).iter().map(|g| g.id).collect()
    };
    assert_eq!(ids(&pop), ids(&again));
}

#[test]
fn every_island_card_runs_offline_from_the_cli_and_beats_the_initial_program() {
    let out = tempfile::tempdir().unwrap();
    for card in [
        "cards/topk.yaml",
        "cards/openevolve.yaml",
        "cards/adaevolve.yaml",
    ] {
        let (best, initial, stdout) =
            common::cli_run(card, "assets/tasks/circle_packing", 60, out.path());
        assert!(best > initial, "{card}: best {best} <= initial {initial}");
        assert!(stdout.contains("completed"), "{card}: {stdout}");
    }
}

/// What a genome is, minus timings and usage.
fn fingerprint(g: &Genome) -> String {
    format!(
        "{}|{:?}|{:?}|{}|{}|{:?}|{:?}|{}",
        g.id,
        g.parent_id,
        g.inspiration_ids,
        g.iteration,
        g.valid,
        g.scores,
        g.metadata.island,
        g.content
    )
}

#[test]
fn an_interrupted_and_resumed_island_run_equals_an_uninterrupted_one() {
    let registry = registry();
    for file in ["openevolve.yaml", "adaevolve.yaml", "topk.yaml"] {
        let mut c = with_evaluator(card(file, &registry), "trivial");
        c.general.max_iterations = 30;
        if c.population.kind == "islands" {
            // migrate often so migrations happen before and after the stop
            c.population
                .params
                .set("migration_interval", ParamValue::Int(3));
        }
        let dir = tempfile::tempdir().unwrap();
        let task = temp_task(dir.path());
        let request = |run_dir: &Path| {
            common::spawn_with(
                common::plan_in(c.clone(), &task, Some(run_dir.to_path_buf()), &registry),
                common::SlowOffline::model(10),
            )
        };
        let straight = dir.path().join("straight");
        let (a, sa) = collect(request(&straight), |_, _| {});
        assert_eq!(sa.status, RunStatus::Completed, "{file}");
        let broken = dir.path().join("broken");
        let (_, sb) = collect(request(&broken), |n, h| {
            if n == 14 {
                stop(h);
            }
        });
        assert_eq!(sb.status, RunStatus::Stopped, "{file}");
        let (_, sc) = collect(
            common::spawn_with(
                common::resume_request(&broken, c.general.max_iterations, &registry),
                common::SlowOffline::model(10),
            ),
            |_, _| {},
        );
        assert_eq!(sc.status, RunStatus::Completed, "{file}");
        let b = Archive::open(&broken).unwrap().genomes().unwrap();
        assert_eq!(a.len(), b.len(), "{file}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(fingerprint(x), fingerprint(y), "{file}");
        }
        assert_eq!(sa.best_score, sc.best_score, "{file}");
        if c.population.kind == "islands" {
            // the children really were spread over several islands
            let used: BTreeSet<Option<u32>> = b.iter().map(|g| g.metadata.island).collect();
            assert!(used.len() >= 2, "{file}: {used:?}");
        }
    }
}
