//! Novelty rejection by token-Jaccard similarity (the cheap, offline stand-in
//! for ShinkaEvolve's embedding + judge check): a proposed child whose token
//! set is almost the same as its parent's or a population member's is a
//! near-duplicate, and the proposer resamples it before any evaluator call.
//!
//! Tokens are identifiers (and keywords), numbers and operators. Whitespace
//! and line comments (`#` or `//` to the end of the line) are ignored, and a
//! number is canonicalised through its value, so `1.0` and `1.00` are one
//! token. Similarity is the Jaccard index of the two token *sets*: one changed
//! constant in a program with `D` distinct tokens scores about `(D-1)/(D+1)`,
//! while a whitespace-, comment- or formatting-only edit scores exactly 1.

use std::collections::HashSet;
use std::sync::Arc;

use crate::engine::genome::{Genome, GenomeId};

/// The distinct tokens of a program (see the module docs).
pub fn token_set(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for line in text.lines() {
        tokenize_line(strip_line_comment(line), &mut out);
    }
    out
}

/// `line` without a trailing `#` or `//` comment (a marker inside a string
/// literal is kept as code: quotes are tracked).
fn strip_line_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => {
                if b == b'"' || b == b'\'' {
                    quote = Some(b);
                } else if b == b'#' || (b == b'/' && bytes.get(i + 1) == Some(&b'/')) {
                    return &line[..i];
                }
            }
        }
        i += 1;
    }
    line
}

fn tokenize_line(line: &str, out: &mut HashSet<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.insert(chars[start..i].iter().collect());
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len() {
                let d = chars[i];
                let hex = chars[start..i].starts_with(&['0', 'x'])
                    || chars[start..i].starts_with(&['0', 'X']);
                let exponent_sign =
                    (d == '+' || d == '-') && !hex && matches!(chars[i - 1], 'e' | 'E');
                if d.is_ascii_alphanumeric() || d == '.' || d == '_' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let literal: String = chars[start..i].iter().collect();
            out.insert(canonical_number(&literal));
        } else {
            // operators and punctuation: greedy two-character operators
            let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
            const TWO: &[&str] = &[
                "==", "!=", "<=", ">=", "**", "//", "->", "=>", "+=", "-=", "*=", "/=", "&&", "||",
                "<<", ">>", "::", "%=", "|=", "&=", "^=",
            ];
            if two.chars().count() == 2 && TWO.contains(&two.as_str()) {
                out.insert(two);
                i += 2;
            } else {
                out.insert(c.to_string());
                i += 1;
            }
        }
    }
}

/// A numeric literal by value (`1.0`, `1.00`, `1e0` → `1`); literals that do
/// not parse as a float (hex, suffixed) are kept as written.
fn canonical_number(literal: &str) -> String {
    match literal.replace('_', "").parse::<f64>() {
        Ok(v) if v.is_finite() => format!("{v}"),
        _ => literal.to_owned(),
    }
}

/// Jaccard index |A∩B| / |A∪B| of two token sets (two empty sets: 1).
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Token-Jaccard similarity of two programs.
pub fn similarity(a: &str, b: &str) -> f64 {
    jaccard(&token_set(a), &token_set(b))
}

/// The most similar of `parent` and `pool` to `child`: (similarity, id).
/// Genomes with the same content are compared once.
pub fn most_similar(child: &str, parent: &Genome, pool: &[Arc<Genome>]) -> (f64, GenomeId) {
    let tokens = token_set(child);
    let mut best = (
        jaccard(&tokens, &token_set(&parent.content.text())),
        parent.id,
    );
    let mut seen: HashSet<&crate::engine::tree::Digest> = HashSet::from([parent.content.id()]);
    for g in pool {
        if !seen.insert(g.content.id()) {
            continue;
        }
        let s = jaccard(&tokens, &token_set(&g.content.text()));
        if s > best.0 {
            best = (s, g.id);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> HashSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn tokens_are_identifiers_numbers_and_operators_without_comments() {
        let t = token_set("x_1 = 1.50 ** y  # a comment\nif x_1 >= 2e-3: print('#not')\n");
        assert_eq!(
            t,
            set(&[
                "x_1", "=", "1.5", "**", "y", "if", ">=", "0.002", ":", "print", "(", "'", "#",
                "not", ")"
            ])
        );
        assert_eq!(
            token_set("a = 0x1F // c++ comment"),
            set(&["a", "=", "0x1F"])
        );
    }

    #[test]
    fn formatting_and_comment_edits_are_identical() {
        let a = "def f(x):\n    return x * 2.0  # double\n";
        let b = "def f( x ):\n        return x*2.00\n# another note\n";
        assert_eq!(similarity(a, b), 1.0);
        let c = "def f(x):\n    return x * 3.0\n";
        let s = similarity(a, c);
        assert!(s < 1.0 && s > 0.5, "{s}");
    }

    #[test]
    fn jaccard_counts_distinct_tokens() {
        assert_eq!(jaccard(&set(&["a", "b"]), &set(&["b", "c"])), 1.0 / 3.0);
        assert_eq!(jaccard(&set(&[]), &set(&[])), 1.0);
        assert_eq!(jaccard(&set(&["a"]), &set(&[])), 0.0);
    }

    #[test]
    fn most_similar_checks_parent_and_pool() {
        let parent = Genome {
            id: 3,
            content: "a = 1\nb = 2\n".into(),
            ..Genome::default()
        };
        let twin = Arc::new(Genome {
            id: 9,
            content: "a = 1\nb = 5\n".into(),
            ..Genome::default()
        });
        let (s, id) = most_similar("a = 1\nb = 5  # same\n", &parent, &[twin]);
        assert_eq!((s, id), (1.0, 9));
        let (s, id) = most_similar("a = 1\nb = 2\n", &parent, &[]);
        assert_eq!((s, id), (1.0, 3));
    }
}
