//! `BeamPopulation`: a keep-all store plus a fixed-width active beam
//! (a port of the semantics of SkyDiscover's beam search database).
//!
//! Every admitted valid genome joins the beam; when the beam grows past its
//! width it is pruned back, by pure score when the diversity weight is 0, or
//! greedily by `(1−w)·score + w·min_distance_to_already_kept` otherwise (the
//! best member is always kept). Pruned members never return. The beam score
//! is the raw fitness times `exp(−depth_penalty · depth)`, where the depth is
//! the search-tree depth tracked here (parent's depth + 1, unknown parent 0).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{BeamView, GenomeStore, Population, Query, Structure, beam_score, query_store};
use crate::engine::component::{BuildContext, Component, ComponentInfo, Feature};
use crate::engine::genome::{Genome, GenomeId, OrdF64};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::text::ngrams::NgramSet;

/// Parameters of [`BeamPopulation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BeamParams {
    /// Number of genomes kept in the active beam.
    pub beam_width: u64,
    /// Weight `w` of the diversity term in pruning (0 = pure score).
    pub beam_diversity_weight: f64,
    /// Exponential score penalty per search-tree depth (0 = off).
    pub beam_depth_penalty: f64,
}

impl Default for BeamParams {
    fn default() -> Self {
        Self {
            beam_width: 5,
            beam_diversity_weight: 0.3,
            beam_depth_penalty: 0.0,
        }
    }
}

/// Counters shown in the studio.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BeamStats {
    /// How many times the beam was pruned.
    pub beam_updates: u64,
    /// Deepest search-tree depth admitted so far.
    pub max_depth_reached: u32,
}

/// One beam member with its (fixed) beam score.
#[derive(Clone, Copy, Debug)]
struct Member {
    id: GenomeId,
    score: f64,
}

impl Member {
    /// Sort key: best score first, ties by earliest id.
    fn key(&self) -> (Reverse<OrdF64>, GenomeId) {
        (Reverse(OrdF64(self.score)), self.id)
    }
}

/// A keep-all store plus a fixed-width, diversity-aware beam.
#[derive(Clone)]
pub struct BeamPopulation {
    store: GenomeStore,
    width: usize,
    diversity_weight: f64,
    depth_penalty: f64,
    /// The active beam, best first.
    beam: Vec<Member>,
    /// Search-tree depth of every admitted genome.
    depth: HashMap<GenomeId, u32>,
    /// 3-gram sets of the beam members (only when the diversity weight > 0).
    grams: HashMap<GenomeId, Arc<NgramSet>>,
    stats: BeamStats,
}

impl Default for BeamPopulation {
    fn default() -> Self {
        Self::new(BeamParams::default())
    }
}

impl Component for BeamPopulation {
    type Slot = dyn Population;
    type Params = BeamParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "beam",
        type_name: "BeamPopulation",
        summary: "Keep-all store plus a fixed-width beam with diversity-aware pruning and depth tracking",
        params: &[
            ParamSpec {
                key: "beam_width",
                doc: "Number of programs kept in the active beam",
                ty: ParamType::Int {
                    min: 1,
                    max: i64::MAX,
                },
            },
            ParamSpec {
                key: "beam_diversity_weight",
                doc: "Weight w of the 3-gram diversity term when pruning (0 = pure fitness); \
                      also read by beam selection",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "beam_depth_penalty",
                doc: "Score multiplier exp(-penalty * depth) per search-tree depth (0 = off)",
                ty: ParamType::Float {
                    min: 0.0,
                    max: f64::MAX,
                },
            },
        ],
    };
    const PROVIDES: &'static [Feature] = &[Feature::Beam];

    fn build(params: BeamParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }

    fn detached(params: BeamParams) -> Option<Self> {
        Some(Self::new(params))
    }
}

impl BeamPopulation {
    /// A beam population with the given parameters. Out-of-range values are
    /// clamped (width ≥ 1, weight in 0..=1, penalty ≥ 0).
    pub fn new(params: BeamParams) -> Self {
        let weight = params.beam_diversity_weight;
        let penalty = params.beam_depth_penalty;
        Self {
            store: GenomeStore::new(),
            width: usize::try_from(params.beam_width.max(1)).unwrap_or(usize::MAX),
            diversity_weight: if weight.is_finite() {
                weight.clamp(0.0, 1.0)
            } else {
                0.0
            },
            depth_penalty: if penalty.is_finite() && penalty > 0.0 {
                penalty
            } else {
                0.0
            },
            beam: Vec::new(),
            depth: HashMap::new(),
            grams: HashMap::new(),
            stats: BeamStats::default(),
        }
    }

    /// Ids of the active beam, best first.
    pub fn beam_ids(&self) -> Vec<GenomeId> {
        self.beam.iter().map(|m| m.id).collect()
    }

    /// The beam score of a beam member.
    pub fn score_of(&self, id: GenomeId) -> Option<f64> {
        self.beam.iter().find(|m| m.id == id).map(|m| m.score)
    }

    /// Prune and depth counters.
    pub fn stats(&self) -> BeamStats {
        self.stats
    }

    fn grams_for(&mut self, genome: &Genome) {
        if self.diversity_weight > 0.0 {
            self.grams
                .entry(genome.id)
                .or_insert_with(|| Arc::new(NgramSet::new(&genome.content.text())));
        }
    }

    fn insert_member(&mut self, member: Member) {
        let key = member.key();
        let pos = self.beam.partition_point(|m| m.key() < key);
        self.beam.insert(pos, member);
    }

    fn distance(&self, a: GenomeId, b: GenomeId) -> f64 {
        match (self.grams.get(&a), self.grams.get(&b)) {
            (Some(x), Some(y)) => x.distance(y),
            // a member without content on record counts as maximally distant
            _ => 1.0,
        }
    }

    /// Shrink the beam back to its width.
    fn prune(&mut self) {
        if self.beam.len() <= self.width {
            return;
        }
        self.stats.beam_updates += 1;
        let kept: Vec<Member> = if self.diversity_weight <= 0.0 {
            self.beam[..self.width].to_vec()
        } else {
            let w = self.diversity_weight;
            // candidates are best first; the best is always kept
            let mut remaining: Vec<(Member, f64)> = self.beam[1..]
                .iter()
                .map(|m| (*m, self.distance(m.id, self.beam[0].id)))
                .collect();
            let mut kept = vec![self.beam[0]];
            while kept.len() < self.width && !remaining.is_empty() {
                let mut pick = 0;
                let mut pick_value = OrdF64(f64::NEG_INFINITY);
                for (i, (m, min_dist)) in remaining.iter().enumerate() {
                    let value = OrdF64((1.0 - w) * m.score + w * min_dist);
                    // strict `>`: ties go to the better-scored (earlier) one
                    if i == 0 || value > pick_value {
                        pick = i;
                        pick_value = value;
                    }
                }
                let (chosen, _) = remaining.remove(pick);
                for (m, min_dist) in &mut remaining {
                    let d = self.distance(m.id, chosen.id);
                    if d < *min_dist {
                        *min_dist = d;
                    }
                }
                kept.push(chosen);
            }
            kept.sort_by_key(Member::key);
            kept
        };
        let kept_ids: std::collections::HashSet<GenomeId> = kept.iter().map(|m| m.id).collect();
        self.grams.retain(|id, _| kept_ids.contains(id));
        self.beam = kept;
    }
}

impl Population for BeamPopulation {
    fn add(&mut self, genome: Arc<Genome>) {
        let id = genome.id;
        if self.store.contains(id) {
            // re-admission of a known id: refresh the stored genome and, if it
            // is in the beam, its score; it never re-enters the beam otherwise
            self.store.insert(genome.clone());
            if let Some(pos) = self.beam.iter().position(|m| m.id == id) {
                self.beam.remove(pos);
                self.grams.remove(&id);
                if genome.valid {
                    let depth = self.depth.get(&id).copied().unwrap_or(0);
                    let score = beam_score(genome.fitness_or_min(), depth, self.depth_penalty);
                    self.grams_for(&genome);
                    self.insert_member(Member { id, score });
                }
            }
            return;
        }
        let depth = genome
            .parent_id
            .and_then(|p| self.depth.get(&p))
            .map_or(0, |d| d.saturating_add(1));
        self.depth.insert(id, depth);
        self.stats.max_depth_reached = self.stats.max_depth_reached.max(depth);
        self.store.insert(genome.clone());
        if genome.valid {
            let score = beam_score(genome.fitness_or_min(), depth, self.depth_penalty);
            self.grams_for(&genome);
            self.insert_member(Member { id, score });
            self.prune();
        }
    }

    fn store(&self) -> &GenomeStore {
        &self.store
    }

    fn query(&self, query: &Query) -> Vec<Arc<Genome>> {
        match query {
            Query::Active => self
                .beam
                .iter()
                .filter_map(|m| self.store.get(m.id).cloned())
                .collect(),
            other => query_store(&self.store, other),
        }
    }

    fn structure(&self) -> Structure {
        Structure::Beam(BeamView {
            members: self.beam_ids(),
            width: self.width,
            diversity_weight: self.diversity_weight,
            depth_penalty: self.depth_penalty,
        })
    }

    fn depth(&self, id: GenomeId) -> Option<u32> {
        self.depth
            .get(&id)
            .copied()
            .or_else(|| self.store.get(id).map(|g| g.metadata.depth))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::FITNESS_KEY;
    use crate::engine::params::ParamMap;
    use crate::engine::params::ParamValue;

    fn g(id: GenomeId, parent: Option<GenomeId>, score: Option<f64>, content: &str) -> Arc<Genome> {
        let mut genome = Genome {
            id,
            parent_id: parent,
            valid: score.is_some(),
            content: content.to_owned().into(),
            ..Genome::default()
        };
        if let Some(s) = score {
            genome.scores.insert(FITNESS_KEY.into(), s);
        }
        Arc::new(genome)
    }

    fn pop(width: u64, w: f64, penalty: f64) -> BeamPopulation {
        BeamPopulation::new(BeamParams {
            beam_width: width,
            beam_diversity_weight: w,
            beam_depth_penalty: penalty,
        })
    }

    #[test]
    fn params_decode_and_validate() {
        let mut m = ParamMap::default();
        m.set("beam_width", ParamValue::Int(3));
        m.set("beam_diversity_weight", ParamValue::Int(0));
        assert!(m.validate(BeamPopulation::INFO.params).is_empty());
        let p: BeamParams = m.decode().unwrap();
        assert_eq!(p.beam_width, 3);
        assert_eq!(p.beam_diversity_weight, 0.0);
        assert_eq!(p.beam_depth_penalty, 0.0);
        m.set("beam_diversity_weight", ParamValue::Float(1.5));
        assert_eq!(m.validate(BeamPopulation::INFO.params).len(), 1);
    }

    #[test]
    fn depth_tracks_parent_chain_and_unknown_parent_is_zero() {
        let mut p = pop(5, 0.0, 0.0);
        p.add(g(0, None, Some(0.1), "a"));
        p.add(g(1, Some(0), Some(0.2), "b"));
        p.add(g(2, Some(1), None, "c"));
        p.add(g(3, Some(1), Some(0.3), "d"));
        p.add(g(4, Some(99), Some(0.4), "e"));
        assert_eq!(p.depth(0), Some(0));
        assert_eq!(p.depth(1), Some(1));
        assert_eq!(p.depth(2), Some(2));
        assert_eq!(p.depth(3), Some(2));
        assert_eq!(p.depth(4), Some(0));
        assert_eq!(p.depth(77), None);
        assert_eq!(p.stats().max_depth_reached, 2);
    }

    #[test]
    fn invalid_genomes_are_stored_but_never_join_the_beam() {
        let mut p = pop(2, 0.3, 0.0);
        p.add(g(0, None, Some(0.5), "x = 1"));
        p.add(g(1, Some(0), None, "x = ?"));
        assert_eq!(p.beam_ids(), vec![0]);
        assert_eq!(p.len(), 2);
        assert!(p.get(1).is_some());
    }

    #[test]
    fn depth_penalty_scales_scores() {
        let mut p = pop(5, 0.0, 0.5);
        p.add(g(0, None, Some(1.0), "a"));
        p.add(g(1, Some(0), Some(1.0), "b"));
        assert_eq!(p.score_of(0), Some(1.0));
        let s1 = p.score_of(1).unwrap();
        assert!((s1 - (-0.5f64).exp()).abs() < 1e-12);
        assert_eq!(p.beam_ids(), vec![0, 1]);
        assert!((beam_score(2.0, 3, 0.0) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn diverse_prune_prefers_a_distant_member_over_a_near_duplicate() {
        // w = 0.9 makes diversity dominate the small score gaps
        let mut p = pop(2, 0.9, 0.0);
        let base = "def solve(x):\n    return sorted(x)\n";
        p.add(g(0, None, Some(1.0), base));
        p.add(g(1, Some(0), Some(0.99), &format!("{base}# v2\n")));
        p.add(g(
            2,
            Some(0),
            Some(0.5),
            "while True:\n    pass  # something else entirely",
        ));
        assert_eq!(p.beam_ids(), vec![0, 2]);
        assert_eq!(p.stats().beam_updates, 1);
        // the same adds with w = 0 keep the top two by score
        let mut q = pop(2, 0.0, 0.0);
        q.add(g(0, None, Some(1.0), base));
        q.add(g(1, Some(0), Some(0.99), &format!("{base}# v2\n")));
        q.add(g(2, Some(0), Some(0.5), "while True: pass"));
        assert_eq!(q.beam_ids(), vec![0, 1]);
    }

    #[test]
    fn structure_and_active_query_report_the_beam() {
        let mut p = pop(2, 0.0, 0.0);
        p.add(g(0, None, Some(0.1), "a"));
        p.add(g(1, None, Some(0.3), "b"));
        p.add(g(2, None, Some(0.2), "c"));
        let Structure::Beam(view) = p.structure() else {
            panic!("beam population must report a beam structure");
        };
        assert_eq!(view.members, vec![1, 2]);
        assert_eq!(view.width, 2);
        assert_eq!(view.diversity_weight, 0.0);
        let active: Vec<GenomeId> = p.query(&Query::Active).iter().map(|g| g.id).collect();
        assert_eq!(active, vec![1, 2]);
        // keep-all underneath
        assert_eq!(p.query(&Query::All).len(), 3);
        assert_eq!(p.best().unwrap().id, 1);
    }
}
