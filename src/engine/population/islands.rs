//! `IslandsPopulation`: islands, each with a MAP-Elites grid over feature
//! dimensions, plus a global elite archive and ring migration (the semantics
//! of OpenEvolve's program database).
//!
//! * Every genome is kept in the keep-all store. A valid genome is *placed* on
//!   the island named by `genome.metadata.island` (taken modulo the island
//!   count); a root genome (no parent, no island) seeds every island; a child
//!   without an island joins its parent's home island. Invalid genomes are
//!   stored but never placed.
//! * Each placed genome gets feature coordinates: `complexity` = code length
//!   in characters, `diversity` = mean character-3-gram distance to the top
//!   `diversity_reference_size` programs of the elite archive, any other name
//!   = that evaluator metric. Raw values are binned into `feature_bins` bins
//!   from a running min/max per dimension. When a value falls outside the
//!   range, the range grows by half its new width on that side (so re-binning
//!   happens a logarithmic number of times) and every grid is rebuilt.
//! * An island's MAP-Elites cell keeps the better genome (fitness, ties: the
//!   earlier id). Island members are all genomes placed on the island; the
//!   cell occupants are its elites. The global archive is the best
//!   `archive_size` elites over all islands.
//! * Every child counts one generation of its island. When an island has
//!   produced `migration_interval` generations since the last migration, the
//!   top `migration_rate` share (at least one) of every island is copied to
//!   the next island on the ring, as references to the same genome: a genome
//!   may be a member of several islands, the store holds it once, and an
//!   island never holds an id twice.
//!
//! The population is a pure function of its `add` sequence (migration is
//! triggered by counted generations only), so a run rebuilt by re-adding its
//! genomes in order has the same islands, grids and archive.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{GenomeStore, IslandView, IslandsView, Population, Query, Structure, query_store};
use crate::engine::component::{BuildContext, Component, ComponentInfo, Feature};
use crate::engine::genome::{Genome, GenomeId, OrdF64};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::text::ngrams::NgramSet;

type RankKey = (Reverse<OrdF64>, GenomeId);

/// Parameters of [`IslandsPopulation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IslandsParams {
    /// Number of islands.
    pub num_islands: u64,
    /// MAP-Elites feature dimensions (`complexity`, `diversity` or a metric name).
    pub feature_dimensions: Vec<String>,
    /// Bins per feature dimension.
    pub feature_bins: u64,
    /// Size of the global elite archive.
    pub archive_size: u64,
    /// Island generations between ring migrations.
    pub migration_interval: u64,
    /// Share of each island's top members copied to the next island.
    pub migration_rate: f64,
    /// Archive programs the `diversity` feature is measured against.
    pub diversity_reference_size: u64,
}

impl Default for IslandsParams {
    fn default() -> Self {
        Self {
            num_islands: 5,
            feature_dimensions: vec!["complexity".to_owned(), "diversity".to_owned()],
            feature_bins: 10,
            archive_size: 100,
            migration_interval: 50,
            migration_rate: 0.1,
            diversity_reference_size: 20,
        }
    }
}

/// One feature dimension.
#[derive(Clone, Debug, PartialEq)]
enum Dim {
    /// Code length in characters.
    Complexity,
    /// Mean 3-gram distance to the archive's top programs.
    Diversity,
    /// An evaluator metric, by name.
    Metric(String),
}

impl Dim {
    fn parse(name: &str) -> Self {
        match name {
            "complexity" => Self::Complexity,
            "diversity" => Self::Diversity,
            other => Self::Metric(other.to_owned()),
        }
    }

    fn name(&self) -> &str {
        match self {
            Self::Complexity => "complexity",
            Self::Diversity => "diversity",
            Self::Metric(m) => m,
        }
    }
}

/// The running range of one dimension.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Range {
    lo: f64,
    hi: f64,
    seen: bool,
}

impl Range {
    /// Widen the range to hold `v`; `true` when existing bins moved.
    fn include(&mut self, v: f64) -> bool {
        if !v.is_finite() {
            return false;
        }
        if !self.seen {
            *self = Self {
                lo: v,
                hi: v,
                seen: true,
            };
            return false;
        }
        if v > self.hi {
            let width = v - self.lo;
            self.hi = v + 0.5 * width;
            true
        } else if v < self.lo {
            let width = self.hi - v;
            self.lo = v - 0.5 * width;
            true
        } else {
            false
        }
    }

    /// The bin of `v` in `0..bins` (non-finite or a degenerate range → 0).
    fn bin(&self, v: f64, bins: usize) -> usize {
        if !self.seen || !v.is_finite() || self.hi <= self.lo {
            return 0;
        }
        let t = (v - self.lo) / (self.hi - self.lo);
        let b = (t * bins as f64).floor();
        if b.is_nan() || b < 0.0 {
            0
        } else {
            (b as usize).min(bins.saturating_sub(1))
        }
    }
}

/// One island: its members and its MAP-Elites grid.
#[derive(Clone, Debug, Default)]
struct Island {
    ranked: BTreeSet<RankKey>,
    members: HashSet<GenomeId>,
    cells: HashMap<Vec<usize>, GenomeId>,
    generation: u64,
    last_migration: u64,
}

/// Islands × MAP-Elites grids + global elite archive + ring migration.
#[derive(Clone)]
pub struct IslandsPopulation {
    store: GenomeStore,
    dims: Vec<Dim>,
    bins: usize,
    archive_size: usize,
    migration_interval: u64,
    migration_rate: f64,
    reference_size: usize,
    ranges: Vec<Range>,
    /// Raw feature values of every placed genome.
    raw: HashMap<GenomeId, Vec<f64>>,
    /// Cell coordinates of every placed genome under the current ranges.
    coords: HashMap<GenomeId, Vec<usize>>,
    /// The island a genome was first placed on.
    home: HashMap<GenomeId, usize>,
    islands: Vec<Island>,
    /// How many cells (over all islands) each elite occupies.
    elite_refs: HashMap<GenomeId, u32>,
    /// Every cell elite, best first.
    elites: BTreeSet<RankKey>,
    /// 3-gram sets of the current diversity reference programs.
    grams: HashMap<GenomeId, Arc<NgramSet>>,
    migrations: u64,
    rebuilds: u64,
}

impl Default for IslandsPopulation {
    fn default() -> Self {
        Self::new(IslandsParams::default())
    }
}

fn rank_key(genome: &Genome) -> RankKey {
    (Reverse(OrdF64(genome.fitness_or_min())), genome.id)
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl Component for IslandsPopulation {
    type Slot = dyn Population;
    type Params = IslandsParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "islands",
        type_name: "IslandsPopulation",
        summary: "Islands with a MAP-Elites grid each, a global elite archive and ring migration",
        params: &[
            ParamSpec {
                key: "num_islands",
                doc: "Number of islands (sub-populations evolving side by side)",
                ty: ParamType::Int { min: 1, max: 1000 },
            },
            ParamSpec {
                key: "feature_dimensions",
                doc: "MAP-Elites axes: complexity (code length), diversity (mean 3-gram distance \
                      to the archive's top programs) or any evaluator metric (raw values, binned \
                      from the running min/max)",
                ty: ParamType::TextList,
            },
            ParamSpec {
                key: "feature_bins",
                doc: "Bins per feature dimension",
                ty: ParamType::Int { min: 1, max: 1000 },
            },
            ParamSpec {
                key: "archive_size",
                doc: "Size of the global elite archive (the best cell elites of all islands)",
                ty: ParamType::Int {
                    min: 1,
                    max: i64::MAX,
                },
            },
            ParamSpec {
                key: "migration_interval",
                doc: "Island generations (children produced on an island) between ring migrations",
                ty: ParamType::Int {
                    min: 1,
                    max: i64::MAX,
                },
            },
            ParamSpec {
                key: "migration_rate",
                doc: "Share of each island's top programs copied to the next island on the ring \
                      (at least one when above 0)",
                ty: ParamType::Float { min: 0.0, max: 1.0 },
            },
            ParamSpec {
                key: "diversity_reference_size",
                doc: "Top archive programs the diversity feature is measured against",
                ty: ParamType::Int { min: 1, max: 1000 },
            },
        ],
    };
    const PROVIDES: &'static [Feature] = &[Feature::Islands];

    fn build(params: IslandsParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }

    fn detached(params: IslandsParams) -> Option<Self> {
        Some(Self::new(params))
    }
}

impl IslandsPopulation {
    /// A population with the given parameters (counts are at least 1, the
    /// migration rate is clamped to 0..=1).
    pub fn new(params: IslandsParams) -> Self {
        let n = to_usize(params.num_islands.max(1));
        let dims: Vec<Dim> = params
            .feature_dimensions
            .iter()
            .map(|d| Dim::parse(d))
            .collect();
        let rate = if params.migration_rate.is_finite() {
            params.migration_rate.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Self {
            store: GenomeStore::new(),
            ranges: vec![Range::default(); dims.len()],
            dims,
            bins: to_usize(params.feature_bins.max(1)),
            archive_size: to_usize(params.archive_size.max(1)),
            migration_interval: params.migration_interval.max(1),
            migration_rate: rate,
            reference_size: to_usize(params.diversity_reference_size.max(1)),
            raw: HashMap::new(),
            coords: HashMap::new(),
            home: HashMap::new(),
            islands: vec![Island::default(); n],
            elite_refs: HashMap::new(),
            elites: BTreeSet::new(),
            grams: HashMap::new(),
            migrations: 0,
            rebuilds: 0,
        }
    }

    /// Number of islands.
    pub fn num_islands(&self) -> usize {
        self.islands.len()
    }

    /// Members of island `i`, best first (empty for an unknown island).
    pub fn island_members(&self, i: usize) -> Vec<GenomeId> {
        self.islands
            .get(i)
            .map(|isl| isl.ranked.iter().map(|(_, id)| *id).collect())
            .unwrap_or_default()
    }

    /// The islands `id` is a member of, ascending.
    pub fn islands_of(&self, id: GenomeId) -> Vec<usize> {
        (0..self.islands.len())
            .filter(|i| self.islands[*i].members.contains(&id))
            .collect()
    }

    /// The raw feature values of a placed genome, one per dimension.
    pub fn features(&self, id: GenomeId) -> Option<&[f64]> {
        self.raw.get(&id).map(Vec::as_slice)
    }

    /// The occupant of `cell` on island `i`.
    pub fn cell_elite(&self, i: usize, cell: &[usize]) -> Option<GenomeId> {
        self.islands.get(i)?.cells.get(cell).copied()
    }

    /// The global elite archive, best first.
    pub fn archive_ids(&self) -> Vec<GenomeId> {
        self.elites
            .iter()
            .take(self.archive_size)
            .map(|(_, id)| *id)
            .collect()
    }

    /// Times the grids were rebuilt after a feature range grew.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// The raw feature values of `genome`.
    fn raw_features(&mut self, genome: &Genome) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.dims.len());
        for d in 0..self.dims.len() {
            let v = match &self.dims[d] {
                Dim::Complexity => genome.content.text().chars().count() as f64,
                Dim::Diversity => self.diversity(genome),
                Dim::Metric(m) => genome.scores.get(m).copied().unwrap_or(f64::NAN),
            };
            out.push(v);
        }
        out
    }

    /// Mean 3-gram distance of `genome` to the archive's top programs
    /// (0 when the archive is empty). O(reference size).
    fn diversity(&mut self, genome: &Genome) -> f64 {
        let reference: Vec<GenomeId> = self
            .elites
            .iter()
            .map(|(_, id)| *id)
            .filter(|id| *id != genome.id)
            .take(self.reference_size)
            .collect();
        if reference.is_empty() {
            return 0.0;
        }
        let own = NgramSet::new(&genome.content.text());
        let mut total = 0.0;
        for id in &reference {
            let set = match self.grams.get(id) {
                Some(s) => Arc::clone(s),
                None => {
                    let content = self.store.get(*id).map(|g| g.content.text());
                    let s = Arc::new(NgramSet::new(content.as_deref().unwrap_or("")));
                    self.grams.insert(*id, Arc::clone(&s));
                    s
                }
            };
            total += own.distance(&set);
        }
        // keep the cache to the current reference set
        if self.grams.len() > 2 * self.reference_size {
            let keep: HashSet<GenomeId> = reference.iter().copied().collect();
            self.grams.retain(|id, _| keep.contains(id));
        }
        total / reference.len() as f64
    }

    fn coords_of(&self, raw: &[f64]) -> Vec<usize> {
        raw.iter()
            .zip(&self.ranges)
            .map(|(v, r)| r.bin(*v, self.bins))
            .collect()
    }

    fn key_of(&self, id: GenomeId) -> Option<RankKey> {
        self.store.get(id).map(|g| rank_key(g))
    }

    fn elite_inc(&mut self, id: GenomeId) {
        let refs = self.elite_refs.entry(id).or_insert(0);
        *refs += 1;
        if *refs == 1
            && let Some(k) = self.key_of(id)
        {
            self.elites.insert(k);
        }
    }

    fn elite_dec(&mut self, id: GenomeId) {
        let gone = match self.elite_refs.get_mut(&id) {
            Some(refs) => {
                *refs = refs.saturating_sub(1);
                *refs == 0
            }
            None => false,
        };
        if gone {
            self.elite_refs.remove(&id);
            if let Some(k) = self.key_of(id) {
                self.elites.remove(&k);
            }
        }
    }

    /// Place a valid, featured genome on island `i` (no-op if already a
    /// member). The cell keeps the better of the occupant and the newcomer.
    fn place(&mut self, i: usize, id: GenomeId) {
        let Some(key) = self.key_of(id) else { return };
        let Some(cell) = self.coords.get(&id).cloned() else {
            return;
        };
        let Some(island) = self.islands.get_mut(i) else {
            return;
        };
        if !island.members.insert(id) {
            return;
        }
        island.ranked.insert(key);
        let displaced = match island.cells.get(&cell).copied() {
            None => {
                island.cells.insert(cell, id);
                None
            }
            Some(old) => {
                let old_key = self.store.get(old).map(|g| rank_key(g));
                if old_key.is_none_or(|k| key < k) {
                    island.cells.insert(cell, id);
                    Some(Some(old))
                } else {
                    Some(None)
                }
            }
        };
        match displaced {
            None => self.elite_inc(id),
            Some(Some(old)) => {
                self.elite_dec(old);
                self.elite_inc(id);
            }
            Some(None) => {}
        }
        self.home.entry(id).or_insert(i);
    }

    /// Recompute every coordinate and rebuild every grid under the current
    /// ranges. O(placed genomes); called only when a range grows.
    fn rebuild(&mut self) {
        self.rebuilds += 1;
        let coords: HashMap<GenomeId, Vec<usize>> = self
            .raw
            .iter()
            .map(|(id, raw)| (*id, self.coords_of(raw)))
            .collect();
        self.coords = coords;
        self.elite_refs.clear();
        self.elites.clear();
        for i in 0..self.islands.len() {
            let mut cells: HashMap<Vec<usize>, GenomeId> = HashMap::new();
            // best first: the first member reaching a cell is its elite
            for (_, id) in &self.islands[i].ranked {
                if let Some(c) = self.coords.get(id) {
                    cells.entry(c.clone()).or_insert(*id);
                }
            }
            for id in cells.values() {
                *self.elite_refs.entry(*id).or_insert(0) += 1;
            }
            self.islands[i].cells = cells;
        }
        let keys: Vec<RankKey> = self
            .elite_refs
            .keys()
            .filter_map(|id| self.key_of(*id))
            .collect();
        self.elites.extend(keys);
    }

    /// Copy the top share of every island to the next island on the ring.
    fn migrate(&mut self) {
        let n = self.islands.len();
        for island in &mut self.islands {
            island.last_migration = island.generation;
        }
        if n < 2 || self.migration_rate <= 0.0 {
            return;
        }
        let mut moves: Vec<(GenomeId, usize)> = Vec::new();
        for (i, island) in self.islands.iter().enumerate() {
            let len = island.ranked.len();
            if len == 0 {
                continue;
            }
            let k = ((len as f64 * self.migration_rate).ceil() as usize).clamp(1, len);
            moves.extend(
                island
                    .ranked
                    .iter()
                    .take(k)
                    .map(|(_, id)| (*id, (i + 1) % n)),
            );
        }
        for (id, target) in moves {
            self.place(target, id);
        }
        self.migrations += 1;
    }

    /// The islands a new genome joins.
    fn targets(&self, genome: &Genome) -> Vec<usize> {
        let n = self.islands.len();
        match genome.metadata.island {
            Some(i) => vec![usize::try_from(i).unwrap_or(0) % n],
            None if genome.parent_id.is_none() => (0..n).collect(),
            None => vec![
                genome
                    .parent_id
                    .and_then(|p| self.home.get(&p).copied())
                    .unwrap_or(0),
            ],
        }
    }
}

impl Population for IslandsPopulation {
    fn add(&mut self, genome: Arc<Genome>) {
        let id = genome.id;
        if self.store.contains(id) {
            // ids are assigned once; a re-admission changes nothing
            return;
        }
        self.store.insert(Arc::clone(&genome));
        let targets = self.targets(&genome);
        if genome.valid {
            let raw = self.raw_features(&genome);
            let mut grew = false;
            for (r, v) in self.ranges.iter_mut().zip(&raw) {
                grew |= r.include(*v);
            }
            let coords = self.coords_of(&raw);
            self.raw.insert(id, raw);
            self.coords.insert(id, coords);
            if grew {
                self.rebuild();
            }
            for t in &targets {
                self.place(*t, id);
            }
        }
        if genome.parent_id.is_some() {
            let mut due = false;
            for t in &targets {
                let island = &mut self.islands[*t];
                island.generation += 1;
                due |= island.generation - island.last_migration >= self.migration_interval;
            }
            if due {
                self.migrate();
            }
        }
    }

    fn store(&self) -> &GenomeStore {
        &self.store
    }

    fn query(&self, query: &Query) -> Vec<Arc<Genome>> {
        match query {
            Query::Active => self
                .store
                .iter_ranked()
                .filter(|g| self.home.contains_key(&g.id))
                .cloned()
                .collect(),
            // members include migrants, which keep their home island's id
            Query::Island(i) => self.islands.get(*i as usize).map_or_else(Vec::new, |isl| {
                isl.ranked
                    .iter()
                    .filter_map(|(_, id)| self.store.get(*id).cloned())
                    .collect()
            }),
            Query::Cell { island, coords } => self
                .cell_elite(*island as usize, coords)
                .and_then(|id| self.store.get(id).cloned())
                .into_iter()
                .collect(),
            other => query_store(&self.store, other),
        }
    }

    /// Migrations performed so far.
    fn migrations(&self) -> u64 {
        self.migrations
    }

    /// The MAP-Elites cell coordinates of a placed genome.
    fn cell_of(&self, id: GenomeId) -> Option<&[usize]> {
        self.coords.get(&id).map(Vec::as_slice)
    }

    fn structure(&self) -> Structure {
        let islands = self
            .islands
            .iter()
            .map(|isl| {
                let members: Vec<GenomeId> = isl.ranked.iter().map(|(_, id)| *id).collect();
                let elites: Vec<GenomeId> = members
                    .iter()
                    .copied()
                    .filter(|id| {
                        self.coords
                            .get(id)
                            .and_then(|c| isl.cells.get(c))
                            .is_some_and(|e| e == id)
                    })
                    .collect();
                IslandView {
                    best: members.first().copied(),
                    cells: isl.cells.len(),
                    members,
                    elites,
                    generation: isl.generation,
                    last_migration: isl.last_migration,
                }
            })
            .collect();
        Structure::Islands(IslandsView {
            islands,
            archive: self.archive_ids(),
            feature_dimensions: self.dims.iter().map(|d| d.name().to_owned()).collect(),
            feature_bins: self.bins,
            migration_interval: self.migration_interval,
            migrations: self.migrations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::FITNESS_KEY;

    #[test]
    fn ranges_grow_geometrically_and_bin_within_bounds() {
        let mut r = Range::default();
        assert_eq!(r.bin(3.0, 10), 0);
        assert!(!r.include(10.0));
        assert_eq!(r.bin(10.0, 10), 0);
        assert!(r.include(20.0));
        // [10, 25]
        assert_eq!((r.lo, r.hi), (10.0, 25.0));
        assert_eq!(r.bin(25.0, 10), 9);
        assert_eq!(r.bin(17.5, 10), 5);
        assert!(!r.include(12.0));
        assert!(!r.include(f64::NAN));
        assert_eq!(r.bin(f64::NAN, 10), 0);
        // a thousand growing values trigger only a logarithmic number of growths
        let mut growths = 0;
        for i in 0..1000 {
            if r.include(25.0 + f64::from(i)) {
                growths += 1;
            }
        }
        assert!(growths <= 12, "{growths}");
    }

    /// A valid child of genome 0 (genome 0 itself: the root) on `island`.
    fn genome(id: GenomeId, island: Option<u32>, score: f64, content: &str) -> Arc<Genome> {
        let mut g = Genome {
            id,
            parent_id: (id > 0).then_some(0),
            valid: true,
            content: content.to_owned().into(),
            ..Genome::default()
        };
        g.metadata.island = island;
        g.scores.insert(FITNESS_KEY.into(), score);
        Arc::new(g)
    }

    #[test]
    fn diversity_is_measured_against_the_archive() {
        let mut pop = IslandsPopulation::new(IslandsParams {
            num_islands: 1,
            feature_dimensions: vec!["diversity".to_owned(), "complexity".to_owned()],
            ..IslandsParams::default()
        });
        let mk = |id: GenomeId, content: &str| genome(id, None, 1.0, content);
        pop.add(mk(0, "abcdef"));
        pop.add(mk(1, "abcdef"));
        pop.add(mk(2, "zyxwvu!"));
        assert_eq!(pop.features(0), Some(&[0.0, 6.0][..]));
        // identical to the only archive program
        assert_eq!(pop.features(1), Some(&[0.0, 6.0][..]));
        // nothing in common with the archive
        assert_eq!(pop.features(2), Some(&[1.0, 7.0][..]));
    }

    #[test]
    fn island_and_cell_queries_answer_from_the_islands() {
        let mut pop = IslandsPopulation::new(IslandsParams {
            num_islands: 2,
            feature_dimensions: vec!["complexity".to_owned()],
            ..IslandsParams::default()
        });
        let mk = genome;
        pop.add(mk(0, None, 0.1, "root"));
        pop.add(mk(1, Some(1), 0.5, "a longer child"));
        pop.add(mk(2, Some(0), 0.3, "x"));
        let ids = |q: Query| -> Vec<GenomeId> { pop.query(&q).iter().map(|g| g.id).collect() };
        // the root seeds every island
        assert_eq!(ids(Query::Island(1)), vec![1, 0]);
        assert_eq!(ids(Query::Island(0)), vec![2, 0]);
        assert!(ids(Query::Island(7)).is_empty());
        let cell = pop.cell_of(1).unwrap().to_vec();
        assert_eq!(
            ids(Query::Cell {
                island: 1,
                coords: cell.clone()
            }),
            vec![1]
        );
        assert!(
            ids(Query::Cell {
                island: 5,
                coords: cell
            })
            .is_empty()
        );
    }
}
