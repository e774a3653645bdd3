//! "Did you mean …?": the known name closest to a mistyped one (a card's
//! kind, key or parameter, a built-in card's or task's name), by edit
//! distance (optimal string alignment, so a swapped pair of letters counts
//! once).

/// The candidate closest to `word`, when it is close enough to be what was
/// meant: at most a third of the word's letters off (at least one, at most
/// three), or a candidate that starts with the word (four letters or more).
/// Case is ignored; an exact match is not a suggestion.
pub fn closest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let word = word.trim().to_ascii_lowercase();
    if word.is_empty() {
        return None;
    }
    let limit = (word.chars().count() / 3).clamp(1, 3);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let lower = candidate.to_ascii_lowercase();
        if lower == word {
            return None;
        }
        let distance = strsim::osa_distance(&word, &lower);
        let prefix = word.chars().count() >= 4 && lower.starts_with(&word);
        if (distance <= limit || prefix) && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// `"; did you mean `NAME`?"` for the closest candidate, or nothing.
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    closest(word, candidates).map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_suggested_and_far_ones_are_not() {
        let kinds = ["default", "agent"];
        assert_eq!(closest("defualt", kinds), Some("default"));
        assert_eq!(closest("Default ", kinds), None);
        assert_eq!(closest("zzz", kinds), None);
        let cards = ["best_of_n", "best_of_n_attempts", "topk"];
        assert_eq!(closest("best_of_m", cards), Some("best_of_n"));
        assert_eq!(closest("bestofn", cards), Some("best_of_n"));
        assert_eq!(closest("top", cards), Some("topk"));
        let tasks = ["circle_packing", "curve_fitting"];
        assert_eq!(closest("circle_pack", tasks), Some("circle_packing"));
        assert_eq!(closest("circel_packing", tasks), Some("circle_packing"));
        assert_eq!(closest("quadratic", tasks), None);
        assert_eq!(
            did_you_mean("paralel", ["parallel", "seed"]),
            "; did you mean `parallel`?"
        );
        assert_eq!(did_you_mean("xyzzy", ["parallel"]), "");
    }
}
