//! The errors of a card's shape (wrong types, unknown keys), all of them in
//! one pass and in a user's words: serde stops at the first error, so the
//! card is read again as a YAML value with each offending key taken out
//! until it decodes, and serde's wording ("invalid type: integer `-3`,
//! expected u64") is said as what the field must be ("must be a whole number
//! ≥ 0, got -3").

use serde_yaml::Value;

use super::Card;

/// At most this many shape errors are collected from one card.
const MAX_SHAPE_ERRORS: usize = 64;

/// One shape error: the field's dotted path (empty: the whole card) and the
/// reason, already in plain words.
#[derive(Debug)]
pub(super) struct ShapeError {
    pub field: String,
    pub message: String,
}

/// A serde error's field path and message as a user reads them: the path
/// printed once, a missing key named as the field, serde's type words said
/// as what the field must be.
pub(super) fn shape_error(path: String, mut message: String) -> ShapeError {
    // serde_yaml appends " at line L column C"; the caller prints it in front.
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    let mut field = if path == "." { String::new() } else { path };
    // serde_yaml may already prefix the path; print it once.
    if !field.is_empty()
        && let Some(rest) = message.strip_prefix(&format!("{field}: "))
    {
        message = rest.to_owned();
    }
    if let Some(missing) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next())
    {
        field = if field.is_empty() {
            missing.to_owned()
        } else {
            format!("{field}.{missing}")
        };
        message = "missing (this key is required)".to_owned();
    }
    if let Some(big) = too_large_integer(&message) {
        message = big;
    } else if let Some(plain) = plain_type_error(&message) {
        message = plain;
    }
    if field.ends_with("api_key") || message.contains("`api_key`") {
        message.push_str(
            " (keys never go in cards: put the key in an environment variable and name the variable in your settings)",
        );
    }
    ShapeError { field, message }
}

/// serde's words for an integer outside every integer type it was asked
/// for ("invalid type: integer `1e23` as u128, expected u64", or "expected
/// any value" for a parameter), said as a range error.
fn too_large_integer(message: &str) -> Option<String> {
    let rest = message.strip_prefix("invalid type: integer `")?;
    let (digits, rest) = rest.split_once('`')?;
    if !(rest.starts_with(" as u128") || rest.starts_with(" as i128")) {
        return None;
    }
    let (word, limit) = if digits.starts_with('-') {
        ("small", i64::MIN.to_string())
    } else if rest.ends_with("expected u64") {
        ("large", u64::MAX.to_string())
    } else if rest.ends_with("expected u32") {
        ("large", u32::MAX.to_string())
    } else {
        ("large", i64::MAX.to_string())
    };
    Some(format!("{digits} is too {word}: the limit is {limit}"))
}

/// "invalid type: integer `-3`, expected u64" as "must be a whole number ≥
/// 0, got -3"; `None` for a message in other words.
fn plain_type_error(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let (got, expected) = rest.rsplit_once(", expected ")?;
    let must = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => {
            let max = match expected {
                "u8" => Some(u64::from(u8::MAX)),
                "u16" => Some(u64::from(u16::MAX)),
                "u32" => Some(u64::from(u32::MAX)),
                _ => None,
            };
            match max {
                Some(max) => format!("a whole number from 0 to {max}"),
                None => "a whole number ≥ 0".to_owned(),
            }
        }
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a string" | "string" => "text".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a sequence" => "a list".to_owned(),
        "a map" => "a mapping (`key: value` lines)".to_owned(),
        e if e.starts_with("struct ") => "a mapping (`key: value` lines)".to_owned(),
        e => e.to_owned(),
    };
    Some(format!("must be {must}, got {}", plain_value(got)))
}

/// serde's name for a value it got (`integer `-3``, `string "x"`) as the
/// value itself or its kind.
fn plain_value(got: &str) -> String {
    for prefix in ["integer ", "floating point ", "boolean ", "character "] {
        if let Some(v) = got.strip_prefix(prefix) {
            return v.trim_matches('`').to_owned();
        }
    }
    if let Some(v) = got.strip_prefix("string ") {
        return v.to_owned();
    }
    match got {
        "sequence" => "a list".to_owned(),
        "map" => "a mapping".to_owned(),
        "unit value" | "unit" => "nothing".to_owned(),
        other => other.to_owned(),
    }
}

/// The card's shape errors after the first (`first`, at `first_path`):
/// the text read as a YAML value, each offending key taken out in turn
/// until the rest decodes. Returns the further errors and the card the
/// rest decodes into (`None` when a key that is required is missing or
/// the text is not YAML).
pub(super) fn further_shape_errors(
    text: &str,
    first_path: &str,
) -> (Vec<ShapeError>, Option<Card>) {
    let Ok(mut value) = serde_yaml::from_str::<Value>(text) else {
        return (Vec::new(), None);
    };
    let mut removed = vec![first_path.to_owned()];
    if !remove_at(&mut value, first_path) {
        return (Vec::new(), None);
    }
    let mut out = Vec::new();
    while out.len() < MAX_SHAPE_ERRORS {
        match serde_path_to_error::deserialize::<_, Card>(value.clone()) {
            Ok(card) => return (out, Some(card)),
            Err(e) => {
                let path = e.path().to_string();
                let error = shape_error(path.clone(), e.into_inner().to_string());
                // a key taken out is missing now: said once already
                if removed.contains(&error.field) {
                    return (out, None);
                }
                if !remove_at(&mut value, &path) {
                    out.push(error);
                    return (out, None);
                }
                removed.push(path);
                out.push(error);
            }
        }
    }
    (out, None)
}

/// Take the value at a serde path (`general.max_iterations`,
/// `llm.models[0].weight`) out of `value`; false when there is none.
fn remove_at(value: &mut Value, path: &str) -> bool {
    if path.is_empty() || path == "." {
        return false;
    }
    let mut segments: Vec<Segment> = Vec::new();
    for part in path.split('.') {
        let (key, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            segments.push(Segment::Key(key.to_owned()));
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            match index.trim_end_matches(']').parse() {
                Ok(i) => segments.push(Segment::Index(i)),
                Err(_) => return false,
            }
        }
    }
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let mut at = value;
    for segment in parents {
        let next = match (segment, at) {
            (Segment::Key(k), Value::Mapping(m)) => m.get_mut(k.as_str()),
            (Segment::Index(i), Value::Sequence(s)) => s.get_mut(*i),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return false,
        }
    }
    match (last, at) {
        (Segment::Key(k), Value::Mapping(m)) => m.remove(k.as_str()).is_some(),
        (Segment::Index(i), Value::Sequence(s)) if *i < s.len() => {
            s.remove(*i);
            true
        }
        _ => false,
    }
}

enum Segment {
    Key(String),
    Index(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_words_become_what_the_field_must_be() {
        let plain = |m: &str| shape_error("general.max_iterations".into(), m.into()).message;
        assert_eq!(
            plain("invalid type: integer `-3`, expected u64"),
            "must be a whole number ≥ 0, got -3"
        );
        assert_eq!(
            plain("invalid value: integer `5000000000`, expected u32"),
            "must be a whole number from 0 to 4294967295, got 5000000000"
        );
        assert_eq!(
            plain("invalid type: string \"lots\", expected f64"),
            "must be a number, got \"lots\""
        );
        assert_eq!(
            plain("invalid type: sequence, expected struct General"),
            "must be a mapping (`key: value` lines), got a list"
        );
        assert_eq!(
            plain("invalid type: integer `1e23` as u128, expected u64"),
            "1e23 is too large: the limit is 18446744073709551615"
        );
        // other words are kept
        assert_eq!(
            plain("unknown field `sede`, expected one of `name`"),
            "unknown field `sede`, expected one of `name`"
        );
    }

    #[test]
    fn a_path_is_taken_out_of_a_value() {
        let mut v: Value =
            serde_yaml::from_str("a:\n  b: 1\n  c: [1, {d: 2, e: 3}]\nf: 4\n").unwrap();
        assert!(remove_at(&mut v, "a.c[1].d"));
        assert!(remove_at(&mut v, "f"));
        assert!(!remove_at(&mut v, "a.x"));
        assert!(!remove_at(&mut v, "."));
        assert_eq!(
            serde_yaml::to_string(&v).unwrap(),
            "a:\n  b: 1\n  c:\n  - 1\n  - e: 3\n"
        );
    }
}
