//! The keep-all genome store every population builds on: O(1) lookup by id,
//! O(log n) admission, O(k) top-k, O(1) best. Nothing here copies the
//! population.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::engine::genome::{Genome, GenomeId, OrdF64};

type RankKey = (Reverse<OrdF64>, GenomeId);

/// A keep-all archive of genomes with a fitness index over the valid ones.
#[derive(Default, Clone)]
pub struct GenomeStore {
    by_id: HashMap<GenomeId, Arc<Genome>>,
    /// Ids in admission order (evicted ids are skipped on read).
    order: Vec<GenomeId>,
    /// Valid genomes ranked best first; ties by earliest id.
    ranked: BTreeSet<RankKey>,
}

impl GenomeStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn key(genome: &Genome) -> Option<RankKey> {
        genome.fitness().map(|f| (Reverse(OrdF64(f)), genome.id))
    }

    /// Insert (or replace) a genome.
    pub fn insert(&mut self, genome: Arc<Genome>) {
        if let Some(old) = self.by_id.get(&genome.id) {
            if let Some(k) = Self::key(old) {
                self.ranked.remove(&k);
            }
        } else {
            self.order.push(genome.id);
        }
        if let Some(k) = Self::key(&genome) {
            self.ranked.insert(k);
        }
        self.by_id.insert(genome.id, genome);
    }

    /// Remove a genome; returns it if it was present.
    pub fn remove(&mut self, id: GenomeId) -> Option<Arc<Genome>> {
        let genome = self.by_id.remove(&id)?;
        if let Some(k) = Self::key(&genome) {
            self.ranked.remove(&k);
        }
        // `order` is compacted lazily when it is more than half stale.
        if self.order.len() > 2 * self.by_id.len() + 16 {
            let by_id = &self.by_id;
            self.order.retain(|i| by_id.contains_key(i));
        }
        Some(genome)
    }

    pub fn get(&self, id: GenomeId) -> Option<&Arc<Genome>> {
        self.by_id.get(&id)
    }

    pub fn contains(&self, id: GenomeId) -> bool {
        self.by_id.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Number of valid (ranked) genomes.
    pub fn valid_len(&self) -> usize {
        self.ranked.len()
    }

    pub fn best(&self) -> Option<Arc<Genome>> {
        self.ranked
            .first()
            .and_then(|(_, id)| self.by_id.get(id).cloned())
    }

    /// The worst valid genome.
    pub fn worst_valid(&self) -> Option<Arc<Genome>> {
        self.ranked
            .last()
            .and_then(|(_, id)| self.by_id.get(id).cloned())
    }

    /// The `k` fittest valid genomes, best first.
    pub fn top_k(&self, k: usize) -> Vec<Arc<Genome>> {
        self.ranked
            .iter()
            .take(k)
            .filter_map(|(_, id)| self.by_id.get(id).cloned())
            .collect()
    }

    /// Iterate valid genomes best first without allocating.
    pub fn iter_ranked(&self) -> impl Iterator<Item = &Arc<Genome>> + '_ {
        self.ranked.iter().filter_map(|(_, id)| self.by_id.get(id))
    }

    /// Every genome in admission order.
    pub fn all(&self) -> Vec<Arc<Genome>> {
        self.iter().cloned().collect()
    }

    /// Iterate every genome in admission order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Genome>> + '_ {
        self.order.iter().filter_map(|id| self.by_id.get(id))
    }

    /// The oldest invalid genome, if any (first to go under a capacity).
    pub fn oldest_invalid(&self) -> Option<GenomeId> {
        self.iter().find(|g| !g.valid).map(|g| g.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(id: GenomeId, score: Option<f64>) -> Arc<Genome> {
        let mut genome = Genome {
            id,
            valid: score.is_some(),
            ..Genome::default()
        };
        if let Some(s) = score {
            genome.scores.insert("combined_score".into(), s);
        }
        Arc::new(genome)
    }

    #[test]
    fn ranks_valid_only_ties_by_earliest() {
        let mut s = GenomeStore::new();
        s.insert(g(0, Some(0.5)));
        s.insert(g(1, None));
        s.insert(g(2, Some(0.9)));
        s.insert(g(3, Some(0.9)));
        assert_eq!(s.best().unwrap().id, 2);
        let top: Vec<_> = s.top_k(10).iter().map(|g| g.id).collect();
        assert_eq!(top, vec![2, 3, 0]);
        assert_eq!(s.len(), 4);
        assert_eq!(s.valid_len(), 3);
        s.remove(2);
        assert_eq!(s.best().unwrap().id, 3);
        let all: Vec<_> = s.all().iter().map(|g| g.id).collect();
        assert_eq!(all, vec![0, 1, 3]);
    }
}
