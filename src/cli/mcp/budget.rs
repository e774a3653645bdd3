//! The smallest budget that makes sense for a card: below it the search
//! cannot do what the card describes (fill its population or beam, give
//! each island a child, finish one round of its selection), so an agent's
//! `start_run` with fewer iterations is refused, saying this number and
//! why, unless it insists.
//!
//! The rule reads the card's own sizes, whichever implementation has them:
//!
//! | parameter | smallest budget |
//! | --- | --- |
//! | `selection_policy.best_of_n` = N | N + 1: N children of one parent, then one of the best |
//! | `selection_policy.k` = k | k: the top k filled |
//! | `selection_policy.survivors` = s | s: as many children as survivors kept |
//! | `population.num_islands` = n | n: a child on every island |
//! | `population.beam_width` = w | w + 1: the beam filled, then pruned once |
//! | `general.parallel` = p | p: every slot in flight used once |
//!
//! and at least 1.

use crate::engine::card::Card;
use crate::engine::component::Slot;
use crate::engine::params::ParamValue;

/// The sizes the rule reads: slot, parameter, iterations beyond the value,
/// and what it needs in words.
const SIZES: &[(Slot, &str, u64, &str)] = &[
    (
        Slot::SelectionPolicy,
        "best_of_n",
        1,
        "N children of one parent, then one of the best",
    ),
    (Slot::SelectionPolicy, "k", 0, "the top k filled"),
    (
        Slot::SelectionPolicy,
        "survivors",
        0,
        "as many children as survivors kept",
    ),
    (
        Slot::Population,
        "num_islands",
        0,
        "a child on every island",
    ),
    (
        Slot::Population,
        "beam_width",
        1,
        "the beam filled, then pruned once",
    ),
];

/// The smallest budget and what sets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Need {
    pub iterations: u64,
    /// Each size that asks for more than one iteration, in words.
    pub why: Vec<String>,
}

/// The smallest budget that makes sense for `card` (see the module docs).
pub(super) fn smallest(card: &Card) -> Need {
    let mut need = Need {
        iterations: 1,
        why: Vec::new(),
    };
    let mut ask = |n: u64, why: String| {
        if n > 1 {
            need.why.push(why);
        }
        need.iterations = need.iterations.max(n);
    };
    for &(slot, key, extra, what) in SIZES {
        let Some(ParamValue::Int(value)) = card.slot(slot).params.get(key) else {
            continue;
        };
        let Ok(value) = u64::try_from(*value) else {
            continue;
        };
        let n = value.saturating_add(extra);
        ask(n, format!("{}.{key} = {value}: {n} ({what})", slot.key()));
    }
    let p = u64::from(card.general.parallel);
    ask(
        p,
        format!("general.parallel = {p}: {p} (every slot in flight used once)"),
    );
    need
}

/// Why `iterations` is too small for `card` and what to pass instead, or
/// `None` when it is enough (or the caller insists).
pub(super) fn refusal(card: &Card, iterations: u64, insist: bool) -> Option<String> {
    let need = smallest(card);
    if insist || iterations >= need.iterations {
        return None;
    }
    Some(format!(
        "iterations = {iterations} is too small for the card {}: the smallest budget that makes sense for \
         it is {} ({}). Pass iterations >= {}, or insist: true to run {iterations} anyway.",
        card.name,
        need.iterations,
        need.why.join("; "),
        need.iterations
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::registry::Registry;

    fn builtin(name: &str) -> Card {
        let b = crate::engine::builtin::card(name).expect("a built-in card");
        b.valid(&Registry::builtin()).expect("valid").into_card()
    }

    #[test]
    fn best_of_n_needs_a_round_and_one_more() {
        let card = builtin("best_of_n");
        // the card's N is 5
        assert_eq!(smallest(&card).iterations, 6);
        let refused = refusal(&card, 3, false).expect("3 is too few");
        assert!(refused.contains("iterations = 3"), "{refused}");
        assert!(refused.contains("is 6"), "{refused}");
        assert!(
            refused.contains("selection_policy.best_of_n = 5"),
            "{refused}"
        );
        assert!(refused.contains("insist: true"), "{refused}");
        assert_eq!(refusal(&card, 6, false), None);
        assert_eq!(refusal(&card, 3, true), None, "insisting runs it");
    }

    #[test]
    fn islands_beams_and_parallel_set_the_budget_too() {
        // openevolve: 5 islands
        assert_eq!(smallest(&builtin("openevolve")).iterations, 5);
        // beam_search: a beam of 5, pruned once
        assert_eq!(smallest(&builtin("beam_search")).iterations, 6);
        // pareto: 16 survivors
        assert_eq!(smallest(&builtin("pareto")).iterations, 16);
        let mut card = builtin("topk");
        assert_eq!(smallest(&card).iterations, 4);
        card.general.parallel = 12;
        let need = smallest(&card);
        assert_eq!(need.iterations, 12);
        assert!(
            need.why
                .iter()
                .any(|w| w.starts_with("general.parallel = 12")),
            "{need:?}"
        );
    }

    #[test]
    fn a_card_without_sizes_needs_one_iteration() {
        // the agent cards pick from a pool: nothing to fill
        let need = smallest(&builtin("agent_claude_code"));
        assert_eq!(need.iterations, 1, "{need:?}");
        assert!(need.why.is_empty());
        assert_eq!(refusal(&builtin("agent_claude_code"), 1, false), None);
    }
}
