//! The errors of a card's shape (wrong types, unknown keys, missing keys),
//! all of them in one pass and in a user's words: serde stops at the first
//! error, so the card is read as a YAML value and decoded again and again,
//! each offending key taken out (a wrong value: the default stands in) or,
//! for a key that is required, a placeholder put in, until it decodes; the
//! card it decodes into is then checked like any other, so the errors of
//! its meaning (unknown kinds, parameters, ranges) come in the same pass.
//! serde's wording ("invalid type: integer `-3`, expected u64") is said as
//! what the field must be ("must be a whole number ≥ 0, got -3").

use serde_yaml::Value;

use super::{Anchor, Card};
use crate::engine::component::Slot;

/// At most this many shape errors are collected from one card.
const MAX_SHAPE_ERRORS: usize = 64;

/// What went wrong with a field's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ShapeKind {
    /// A required key is not there.
    Missing,
    /// A key the card does not have.
    Unknown,
    /// A value of the wrong type (or not one of the allowed words).
    Value,
}

/// One shape error: the field's dotted path (empty: the whole card) and the
/// reason, already in plain words.
#[derive(Debug)]
pub(super) struct ShapeError {
    pub field: String,
    pub message: String,
    pub kind: ShapeKind,
}

impl ShapeError {
    /// Where the error points (see the rule in [`super`]).
    pub fn anchor(&self) -> Anchor {
        match self.kind {
            ShapeKind::Missing => Anchor::Parent,
            ShapeKind::Unknown => Anchor::Key,
            ShapeKind::Value => Anchor::Value,
        }
    }
}

/// A serde error's field path and message as a user reads them: the path
/// printed once, a missing key named as the field (a missing slot with a
/// minimal example of it), an unknown key with the nearest known one,
/// serde's type words said as what the field must be.
pub(super) fn shape_error(path: String, mut message: String) -> ShapeError {
    // serde_yaml appends " at line L column C"; the caller prints it in front.
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    let mut field = if path == "." { String::new() } else { path };
    // serde_yaml may prefix the path, or its parent's; print it once.
    let mut prefix = field.clone();
    loop {
        if !prefix.is_empty()
            && let Some(rest) = message.strip_prefix(&format!("{prefix}: "))
        {
            message = rest.to_owned();
            break;
        }
        match prefix.rfind(['.', '[']) {
            Some(cut) => prefix.truncate(cut),
            None => break,
        }
    }
    let mut kind = ShapeKind::Value;
    if let Some(missing) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next())
    {
        field = if field.is_empty() {
            missing.to_owned()
        } else {
            format!("{field}.{missing}")
        };
        message = match Slot::ALL.iter().find(|s| s.key() == field) {
            Some(slot) => format!(
                "missing (every card names all six slots); add it, for example `{}: {{kind: {}}}`",
                slot.key(),
                Card::new_default("x").slot(*slot).kind
            ),
            None => "missing (this key is required)".to_owned(),
        };
        kind = ShapeKind::Missing;
    } else if let Some(plain) = unknown_key(&message) {
        message = plain;
        kind = ShapeKind::Unknown;
    } else if let Some(big) = too_large_integer(&message) {
        message = big;
    } else if let Some(plain) = plain_type_error(&message) {
        message = plain;
    }
    if field.ends_with("api_key") || message.contains("`api_key`") {
        message.push_str(
            " (keys never go in cards: put the key in an environment variable and name the variable in your settings)",
        );
    }
    ShapeError {
        field,
        message,
        kind,
    }
}

/// serde's "unknown field `paralel`, expected one of `max_iterations`, …"
/// as "unknown key; did you mean `parallel`? (keys here: max_iterations,
/// …)"; `None` for other words.
fn unknown_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let known: Vec<&str> = if let Some(list) = rest.strip_prefix(", expected one of ") {
        list.split(", ").map(|k| k.trim_matches('`')).collect()
    } else if let Some(one) = rest.strip_prefix(", expected ") {
        vec![one.trim_matches('`')]
    } else {
        Vec::new()
    };
    let hint = crate::engine::suggest::did_you_mean(key, known.iter().copied());
    Some(if known.is_empty() {
        format!("unknown key `{key}`; this mapping takes no keys")
    } else {
        format!(
            "unknown key `{key}`{hint} (keys here: {})",
            known.join(", ")
        )
    })
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

/// Every shape error of the card in `value`, and the card it decodes
/// into once each offending key is taken out (a wrong value or an unknown
/// key: the default stands in) or, for a missing required key, a
/// placeholder is put in (a slot of no kind, an empty name): what those
/// errors are about is then said once, and the rest of the card can be
/// checked. `None` for the card when it still does not decode (the text is
/// not a mapping, or a value cannot be taken out).
pub(super) fn shape_errors(mut value: Value) -> (Vec<ShapeError>, Option<Card>) {
    let mut out: Vec<ShapeError> = Vec::new();
    // fields taken out, and fields a placeholder was put in for
    let mut removed: Vec<String> = Vec::new();
    let mut filled: Vec<String> = Vec::new();
    while out.len() < MAX_SHAPE_ERRORS {
        let (path, error) = match serde_path_to_error::deserialize::<_, Card>(value.clone()) {
            Ok(card) => return (out, Some(card)),
            Err(e) => {
                let path = e.path().to_string();
                (path.clone(), shape_error(path, e.into_inner().to_string()))
            }
        };
        match error.kind {
            ShapeKind::Missing => {
                if filled.contains(&error.field) || !fill_at(&mut value, &error.field) {
                    out.push(error);
                    return (out, None);
                }
                filled.push(error.field.clone());
                // a key taken out is missing now: said once already
                if !removed.contains(&error.field) {
                    out.push(error);
                }
            }
            ShapeKind::Unknown | ShapeKind::Value => {
                if removed.contains(&error.field) || !remove_at(&mut value, &path) {
                    out.push(error);
                    return (out, None);
                }
                removed.push(error.field.clone());
                out.push(error);
            }
        }
    }
    (out, None)
}

/// Put a placeholder in for the missing required key at `path`: a slot of
/// no kind (`{kind: ""}`) for a slot, else an empty text; the error already
/// said is what the checks of its meaning leave out. False when the parent
/// is not a mapping.
fn fill_at(value: &mut Value, path: &str) -> bool {
    let (parent, key) = match path.rsplit_once('.') {
        Some((parent, key)) => (Some(parent), key),
        None => (None, path),
    };
    if key.is_empty() || key.contains('[') {
        return false;
    }
    let placeholder = if parent.is_none() && Slot::ALL.iter().any(|s| s.key() == key) {
        let mut slot = serde_yaml::Mapping::new();
        slot.insert(Value::from("kind"), Value::from(""));
        Value::Mapping(slot)
    } else {
        Value::from("")
    };
    let Some(at) = (match parent {
        None => Some(value),
        Some(p) => value_at(value, p),
    }) else {
        return false;
    };
    match at {
        Value::Mapping(m) => {
            m.insert(Value::from(key), placeholder);
            true
        }
        _ => false,
    }
}

/// The value at a serde path, when there is one.
fn value_at<'v>(value: &'v mut Value, path: &str) -> Option<&'v mut Value> {
    walk(value, &segments(path)?)
}

/// The value at the end of `segments`, when there is one.
fn walk<'v>(value: &'v mut Value, segments: &[Segment]) -> Option<&'v mut Value> {
    let mut at = value;
    for segment in segments {
        at = match (segment, at) {
            (Segment::Key(k), Value::Mapping(m)) => m.get_mut(k.as_str())?,
            (Segment::Index(i), Value::Sequence(s)) => s.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

/// A serde path (`general.max_iterations`, `llm.models[0].weight`) as keys
/// and indices.
fn segments(path: &str) -> Option<Vec<Segment>> {
    let mut out: Vec<Segment> = Vec::new();
    for part in path.split('.') {
        let (key, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Segment::Key(key.to_owned()));
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            out.push(Segment::Index(index.trim_end_matches(']').parse().ok()?));
        }
    }
    Some(out)
}

/// Take the value at a serde path (`general.max_iterations`,
/// `llm.models[0].weight`) out of `value`; false when there is none.
fn remove_at(value: &mut Value, path: &str) -> bool {
    if path.is_empty() || path == "." {
        return false;
    }
    let Some(segments) = segments(path) else {
        return false;
    };
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    match (last, walk(value, parents)) {
        (Segment::Key(k), Some(Value::Mapping(m))) => m.remove(k.as_str()).is_some(),
        (Segment::Index(i), Some(Value::Sequence(s))) if *i < s.len() => {
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
        // an unknown key with the nearest known one
        assert_eq!(
            plain("general: unknown field `paralel`, expected one of `max_iterations`, `parallel`"),
            "unknown key `paralel`; did you mean `parallel`? (keys here: max_iterations, parallel)"
        );
        assert_eq!(
            plain("unknown field `zzz`, expected `name`"),
            "unknown key `zzz` (keys here: name)"
        );
        // other words are kept
        assert_eq!(
            plain("invalid length 3, expected 2"),
            "invalid length 3, expected 2"
        );
    }

    #[test]
    fn a_missing_slot_says_what_one_looks_like() {
        let e = shape_error(".".into(), "missing field `memory`".into());
        assert_eq!(e.field, "memory");
        assert_eq!(e.kind, ShapeKind::Missing);
        assert_eq!(
            e.message,
            "missing (every card names all six slots); add it, for example `memory: {kind: none}`"
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
