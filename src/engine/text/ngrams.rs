//! Cheap, embedding-free program diversity: character 3-gram Jaccard
//! distance, shared by the beam population's diversity-aware
//! prune, the islands population and the beam selection policy's `diversity_weighted` strategy.
//!
//! Each text is turned into its 3-gram set once ([`NgramSet::new`]): every
//! 3-gram of Unicode scalar values is packed exactly into one `u64`
//! (3 × 21 bits, so there are no collisions), and the set is kept as a sorted,
//! de-duplicated vector. A distance is then one linear merge of two sorted
//! vectors, with no hashing or allocation, so callers should build the set
//! once per genome and cache it.

/// Length of the character n-grams compared.
pub const NGRAM: usize = 3;

/// The character 3-gram set of one text, ready for fast distance queries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NgramSet {
    /// Packed 3-grams, sorted ascending, without duplicates.
    grams: Vec<u64>,
    /// Whether the source text was empty.
    empty_text: bool,
}

impl NgramSet {
    /// Build the 3-gram set of `text` (characters, not bytes).
    pub fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let mut grams: Vec<u64> = chars
            .windows(NGRAM)
            .map(|w| (u64::from(w[0]) << 42) | (u64::from(w[1]) << 21) | u64::from(w[2]))
            .collect();
        grams.sort_unstable();
        grams.dedup();
        Self {
            grams,
            empty_text: text.is_empty(),
        }
    }

    /// Number of distinct 3-grams.
    pub fn len(&self) -> usize {
        self.grams.len()
    }

    /// Whether the text had no 3-gram (fewer than three characters).
    pub fn is_empty(&self) -> bool {
        self.grams.is_empty()
    }

    /// Whether the source text was the empty string.
    pub fn is_empty_text(&self) -> bool {
        self.empty_text
    }

    /// Size of the intersection with `other` (linear merge).
    fn intersection_len(&self, other: &Self) -> usize {
        let (a, b) = (&self.grams, &other.grams);
        let (mut i, mut j, mut n) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    n += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        n
    }

    /// `1 − Jaccard(self, other)` in `[0, 1]`. Either text empty → 1.0;
    /// both texts without any 3-gram → 0.0.
    pub fn distance(&self, other: &Self) -> f64 {
        if self.empty_text || other.empty_text {
            return 1.0;
        }
        if self.grams.is_empty() && other.grams.is_empty() {
            return 0.0;
        }
        let inter = self.intersection_len(other);
        let union = self.grams.len() + other.grams.len() - inter;
        // union > 0 here: at least one side has a 3-gram.
        1.0 - inter as f64 / union as f64
    }
}

/// Character 3-gram Jaccard distance between two texts (see
/// [`NgramSet::distance`]). Builds both sets; cache [`NgramSet`]s when the
/// same text is compared repeatedly.
pub fn solution_distance(a: &str, b: &str) -> f64 {
    NgramSet::new(a).distance(&NgramSet::new(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_cases() {
        // either string empty → 1.0, even against another empty string
        assert_eq!(solution_distance("", "abcdef"), 1.0);
        assert_eq!(solution_distance("abcdef", ""), 1.0);
        assert_eq!(solution_distance("", ""), 1.0);
        // both non-empty but without any 3-gram → 0.0
        assert_eq!(solution_distance("ab", "xy"), 0.0);
        assert_eq!(solution_distance("a", "a"), 0.0);
        // one side without 3-grams, the other with → nothing shared → 1.0
        assert_eq!(solution_distance("ab", "abc"), 1.0);
    }

    #[test]
    fn identical_and_disjoint() {
        assert_eq!(
            solution_distance("def f(x): return x", "def f(x): return x"),
            0.0
        );
        assert_eq!(solution_distance("aaaa", "bbbb"), 1.0);
    }

    #[test]
    fn jaccard_value_and_duplicates() {
        // "abcd" → {abc, bcd}; "abce" → {abc, bce}: |∩| = 1, |∪| = 3
        let d = solution_distance("abcd", "abce");
        assert!((d - (1.0 - 1.0 / 3.0)).abs() < 1e-12);
        // repeated 3-grams count once: "aaaaa" → {aaa}
        assert_eq!(NgramSet::new("aaaaa").len(), 1);
        assert_eq!(solution_distance("aaaaa", "aaa"), 0.0);
        // symmetric
        assert_eq!(
            solution_distance("hello world", "yellow word"),
            solution_distance("yellow word", "hello world")
        );
    }

    #[test]
    fn unicode_characters_not_bytes() {
        // three multi-byte characters form exactly one 3-gram
        let s = NgramSet::new("äöü");
        assert_eq!(s.len(), 1);
        assert!(!s.is_empty_text());
        assert_eq!(solution_distance("äöü", "äöü"), 0.0);
        assert_eq!(solution_distance("äöü", "äöx"), 1.0);
    }
}
