//! [`GenomeHead`]: a genome without its bodies, compact, as a viewer of a
//! run holds every genome of it (the studio's run history): its id and
//! lineage, its scores, its error cut short, its metadata and usage, and the
//! rare parts (a confirmation, a placement, a rejection, an override) boxed
//! behind one pointer. The bodies (program, diff, artifacts, prompt, reply,
//! private metrics, agent transcript) are read from the run's archive, or
//! asked of the run service, when a genome is looked at.
//!
//! [`Heads`] is the list of a run's heads with the names they share (metric
//! names, models, patch types) interned: a head of a run of 100,000
//! genomes costs a few hundred bytes, where a [`Genome`] without its bodies
//! costs about 2 KB (the struct alone is 816 bytes, its placeholder program
//! and its map of scores as much again).
//!
//! The rules that read a genome ([`GenomeFacts`]: fitness, author,
//! confirmation...) are written once, for both types.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::engine::genome::{
    Confirmation, Genome, GenomeFacts, GenomeId, GenomeMeta, Placement, Rejection, Timings,
    TokenUsage, Tree, genome_rules,
};

/// A name shared by many heads (a metric, a model, a patch type): one copy
/// per run, interned by [`Heads`].
pub type Name = Arc<str>;

/// How many characters of a genome's error its head keeps (the whole of it
/// is in the genome's bodies).
pub const HEAD_ERROR_CHARS: usize = 200;

/// Named values sorted by name (a genome's metrics or features): what a
/// `BTreeMap<String, f64>` holds in one allocation, its names shared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores(Box<[(Name, f64)]>);

impl Scores {
    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&f64> {
        self.0
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .ok()
            .and_then(|i| self.0.get(i))
            .map(|(_, v)| v)
    }

    /// Whether `name` has a value.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The names, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().map(|(n, _)| &**n)
    }

    /// The values, in name order.
    pub fn values(&self) -> impl Iterator<Item = &f64> + '_ {
        self.0.iter().map(|(_, v)| v)
    }

    /// Names and values, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &f64)> + '_ {
        self.0.iter().map(|(n, v)| (&**n, v))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As the genome has them.
    pub fn to_map(&self) -> BTreeMap<String, f64> {
        self.iter().map(|(n, v)| (n.to_owned(), *v)).collect()
    }
}

/// A head's [`GenomeMeta`]: the same facts, the names shared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeadMeta {
    /// Number of ancestors (root = 0).
    pub generation: u32,
    /// Search-tree depth as tracked by the population.
    pub depth: u32,
    /// Island the genome lives on, for island populations.
    pub island: Option<u32>,
    /// Name of the model that proposed it.
    pub model: Option<Name>,
    /// How the child was produced (diff, full rewrite, crossover, initial).
    pub patch_type: Name,
    /// Feature coordinates and other numeric per-candidate data.
    pub features: Scores,
}

/// What few genomes have, boxed behind one pointer of the head.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rare {
    /// [`Genome::fitness_metric`].
    pub fitness_metric: Option<String>,
    /// [`Genome::confirmation`].
    pub confirmation: Option<Confirmation>,
    /// [`Genome::placement`].
    pub placement: Option<Placement>,
    /// [`Genome::rejected`].
    pub rejected: Option<Rejection>,
    /// [`Genome::rule_override`].
    pub rule_override: Option<String>,
    /// [`Genome::response_bytes`].
    pub response_bytes: Option<u64>,
}

impl Rare {
    fn of(g: &Genome) -> Option<Box<Self>> {
        let rare = Self {
            fitness_metric: g.fitness_metric.clone(),
            confirmation: g.confirmation.clone(),
            placement: g.placement.clone(),
            rejected: g.rejected.clone(),
            rule_override: g.rule_override.clone(),
            response_bytes: g.response_bytes,
        };
        (rare != Self::default()).then(|| Box::new(rare))
    }
}

/// A genome without its bodies, compact (see the module docs). Built by
/// [`Heads::push`].
#[derive(Clone, Debug, PartialEq)]
pub struct GenomeHead {
    pub id: GenomeId,
    pub parent_id: Option<GenomeId>,
    /// Iteration that produced it.
    pub iteration: u64,
    pub inspiration_ids: Box<[GenomeId]>,
    /// The evaluator's metrics.
    pub scores: Scores,
    /// Why it is invalid: the first [`HEAD_ERROR_CHARS`] characters.
    pub error: Option<Box<str>>,
    pub metadata: HeadMeta,
    pub timings: Timings,
    pub usage: Option<TokenUsage>,
    /// Attempt index inside the iteration, from 0.
    pub attempt: u32,
    /// Whether the evaluator scored it.
    pub valid: bool,
    rare: Option<Box<Rare>>,
}

impl GenomeFacts for GenomeHead {
    fn is_valid(&self) -> bool {
        self.valid
    }
    fn score(&self, metric: &str) -> Option<f64> {
        self.scores.get(metric).copied()
    }
    fn score_values(&self) -> impl Iterator<Item = f64> + '_ {
        self.scores.values().copied()
    }
    fn fitness_metric_name(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.fitness_metric.as_deref())
    }
    fn patch_type_name(&self) -> &str {
        &self.metadata.patch_type
    }
    fn model_name(&self) -> Option<&str> {
        self.metadata.model.as_deref()
    }
    fn confirmation_facts(&self) -> Option<&Confirmation> {
        self.rare.as_ref().and_then(|r| r.confirmation.as_ref())
    }
}

genome_rules!(GenomeHead);

impl GenomeHead {
    /// [`Genome::confirmation`].
    pub fn confirmation(&self) -> Option<&Confirmation> {
        self.confirmation_facts()
    }

    /// [`Genome::placement`].
    pub fn placement(&self) -> Option<&Placement> {
        self.rare.as_ref().and_then(|r| r.placement.as_ref())
    }

    /// [`Genome::rejected`].
    pub fn rejected(&self) -> Option<&Rejection> {
        self.rare.as_ref().and_then(|r| r.rejected.as_ref())
    }

    /// [`Genome::rule_override`].
    pub fn rule_override(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.rule_override.as_deref())
    }

    /// [`Genome::fitness_metric`].
    pub fn fitness_metric(&self) -> Option<&str> {
        self.fitness_metric_name()
    }

    /// [`Genome::response_bytes`].
    pub fn response_bytes(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.response_bytes)
    }

    /// The genome this is the head of, its bodies left out (an empty
    /// program, as the run service's heads have it), for what takes a
    /// [`Genome`] (a population replayed from the heads).
    pub fn to_genome(&self) -> Genome {
        let rare = self.rare.as_deref().cloned().unwrap_or_default();
        Genome {
            id: self.id,
            parent_id: self.parent_id,
            inspiration_ids: self.inspiration_ids.to_vec(),
            iteration: self.iteration,
            attempt: self.attempt,
            valid: self.valid,
            scores: self.scores.to_map(),
            content: Tree::single(crate::engine::tree::SINGLE_FILE, ""),
            error: self.error.as_deref().map(str::to_owned),
            metadata: GenomeMeta {
                generation: self.metadata.generation,
                depth: self.metadata.depth,
                island: self.metadata.island,
                model: self.metadata.model.as_deref().map(str::to_owned),
                patch_type: self.metadata.patch_type.to_string(),
                features: self.metadata.features.to_map(),
            },
            timings: self.timings,
            usage: self.usage,
            fitness_metric: rare.fitness_metric,
            confirmation: rare.confirmation,
            placement: rare.placement,
            rejected: rare.rejected,
            rule_override: rare.rule_override,
            response_bytes: rare.response_bytes,
            ..Genome::default()
        }
    }
}

/// A run's heads in admission order, with the names they share interned.
/// Reads as a slice of [`GenomeHead`] (`heads[i]`, `iter()`, `len()`).
#[derive(Clone, Debug, Default)]
pub struct Heads {
    heads: Vec<GenomeHead>,
    names: HashSet<Name>,
}

impl std::ops::Deref for Heads {
    type Target = [GenomeHead];

    fn deref(&self) -> &[GenomeHead] {
        &self.heads
    }
}

impl<'a> IntoIterator for &'a Heads {
    type Item = &'a GenomeHead;
    type IntoIter = std::slice::Iter<'a, GenomeHead>;

    fn into_iter(self) -> Self::IntoIter {
        self.heads.iter()
    }
}

impl Heads {
    /// No heads.
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `n` more heads.
    pub fn reserve(&mut self, n: usize) {
        self.heads.reserve(n);
    }

    /// Add `genome`'s head (a genome with its bodies, or a head the run
    /// service sent): returns it.
    pub fn push(&mut self, genome: &Genome) -> &GenomeHead {
        let head = self.head_of(genome);
        self.heads.push(head);
        let last = self.heads.len() - 1;
        &self.heads[last]
    }

    /// Add a head made elsewhere (of another list: its names stay shared
    /// with it).
    pub fn push_head(&mut self, head: GenomeHead) {
        self.heads.push(head);
    }

    /// Forget every head (the names stay interned).
    pub fn clear(&mut self) {
        self.heads.clear();
    }

    fn name(&mut self, s: &str) -> Name {
        if let Some(n) = self.names.get(s) {
            return Arc::clone(n);
        }
        let n: Name = Arc::from(s);
        self.names.insert(Arc::clone(&n));
        n
    }

    fn scores(&mut self, map: &BTreeMap<String, f64>) -> Scores {
        Scores(map.iter().map(|(k, v)| (self.name(k), *v)).collect())
    }

    /// `genome`'s head, its names interned here.
    pub fn head_of(&mut self, g: &Genome) -> GenomeHead {
        let error = g
            .error
            .as_deref()
            .map(|e| match e.char_indices().nth(HEAD_ERROR_CHARS) {
                Some((cut, _)) => Box::from(&e[..cut]),
                None => Box::from(e),
            });
        GenomeHead {
            id: g.id,
            parent_id: g.parent_id,
            iteration: g.iteration,
            inspiration_ids: g.inspiration_ids.clone().into_boxed_slice(),
            scores: self.scores(&g.scores),
            error,
            metadata: HeadMeta {
                generation: g.metadata.generation,
                depth: g.metadata.depth,
                island: g.metadata.island,
                model: g.metadata.model.as_deref().map(|m| self.name(m)),
                patch_type: self.name(&g.metadata.patch_type),
                features: self.scores(&g.metadata.features),
            },
            timings: g.timings,
            usage: g.usage,
            attempt: g.attempt,
            valid: g.valid,
            rare: Rare::of(g),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::{FITNESS_KEY, FitnessBasis, PERSON_PATCH};

    fn genome() -> Genome {
        let mut g = Genome {
            id: 9,
            parent_id: Some(4),
            inspiration_ids: vec![1, 2],
            iteration: 5,
            attempt: 1,
            valid: true,
            content: Tree::single("main.py", "print(1)\n"),
            diff: Some("--- a\n+++ b\n".into()),
            error: Some("é".repeat(HEAD_ERROR_CHARS + 50)),
            response: Some("reply".into()),
            ..Genome::default()
        };
        g.scores.insert("b".into(), 2.0);
        g.scores.insert("a".into(), 4.0);
        g.metadata.model = Some("m".into());
        g.metadata.patch_type = "diff".into();
        g
    }

    /// A head answers every rule as its genome does, keeps its metrics in
    /// order and its error cut short (on a character boundary).
    #[test]
    fn a_head_answers_as_its_genome() {
        let mut heads = Heads::new();
        let mut g = genome();
        let h = heads.push(&g).clone();
        assert_eq!(h.fitness(), g.fitness());
        assert_eq!(h.fitness(), Some(3.0));
        assert_eq!(h.fitness_basis(), FitnessBasis::Mean(2));
        assert_eq!(h.author(), Some("m"));
        assert_eq!(h.scores.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(h.scores.get("b"), Some(&2.0));
        assert_eq!(h.scores.get("c"), None);
        assert_eq!(h.scores.to_map(), g.scores);
        assert_eq!(
            h.error.as_deref().map(|e| e.chars().count()),
            Some(HEAD_ERROR_CHARS)
        );
        assert!(h.rare.is_none(), "nothing rare here");
        assert_eq!(&*h.inspiration_ids, &[1, 2]);

        g.scores.insert(FITNESS_KEY.into(), f64::NAN);
        g.metadata.patch_type = PERSON_PATCH.into();
        g.fitness_metric = Some("a".into());
        g.confirmation = Some(Confirmation {
            unconfirmed: true,
            ..Confirmation::default()
        });
        let h = heads.push(&g).clone();
        assert_eq!(h.fitness(), Some(4.0));
        assert_eq!(h.fitness_basis(), FitnessBasis::Metric("a"));
        assert_eq!(h.author(), g.author());
        assert!(h.is_by_person() && h.unconfirmed());
        assert_eq!(h.selection_fitness(), None);
        assert_eq!(h.fitness_metric(), Some("a"));
        assert_eq!(heads.len(), 2);
        assert!(
            Arc::ptr_eq(
                heads[0].metadata.model.as_ref().unwrap(),
                heads[1].metadata.model.as_ref().unwrap()
            ),
            "one copy of a name"
        );
        // back to a genome: everything but the bodies
        let back = h.to_genome();
        assert_eq!(back.scores.len(), g.scores.len());
        assert_eq!(back.confirmation, g.confirmation);
        assert_eq!(back.content.single_text(), Some(""));
        assert!(back.diff.is_none() && back.response.is_none());
    }

    /// What keeps a run of 100,000 genomes under 50 MB in a viewer: a head
    /// is a quarter of a kilobyte at most, its rare parts behind one box.
    #[test]
    fn a_head_stays_small() {
        let size = std::mem::size_of::<GenomeHead>();
        assert!(size <= 256, "GenomeHead is {size} bytes");
        assert!(std::mem::size_of::<Option<Box<Rare>>>() == 8);
    }
}
