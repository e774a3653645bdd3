//! Typed parameters of a component: the schema the studio renders as typed
//! widgets and the card loader validates against, plus the neutral value type
//! a card stores them as.
//!
//! Each implementation declares its parameters' types, ranges and docs once as
//! a `&'static [ParamSpec]` table and their defaults once, as its typed
//! `serde` struct's `Default` (see [`crate::engine::component::Component`]);
//! the registry test checks the two agree.
//!
//! # Parameter fragments
//!
//! Settings several components share are written once: a struct with its own `Default`, flattened
//! into each component's `Params` (`#[serde(flatten)]`, so a card writes its keys beside the
//! component's own), and one table (`&[ParamSpec]`) that each component's table joins in with
//! `params::param_table!(OWN_SPECS, isolation::SPECS, confirm::SPECS)`. `Isolation` (sandbox,
//! network, read paths, limits, output limit) and `Confirm` are the two; the `subprocess`,
//! `command` and `slurm` evaluators flatten both, so a setting added to a fragment reaches the
//! three evaluators, the studio's widgets, card checks and the hub README at once, and a mapping of
//! one evaluator's settings onto another's (a ShinkaEvolve task's `subprocess` card evaluator run
//! as its `command`) carries a fragment by its table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// A parameter value as written in a card.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ParamValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<ParamValue>),
}

/// What a parameter's value may be, for the error that names a value it
/// cannot be (a derived untagged enum said only "data did not match any
/// variant of untagged enum ParamValue").
const PARAM_VALUE_EXPECTED: &str = "a parameter's value: a number, a text, true or false, a list \
     of those or null (each parameter is one `key: value` line beside the slot's `kind`, \
     not a block of its own such as `params:`)";

impl<'de> Deserialize<'de> for ParamValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ParamValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(PARAM_VALUE_EXPECTED)
            }
            fn visit_unit<E>(self) -> Result<ParamValue, E> {
                Ok(ParamValue::Null)
            }
            fn visit_none<E>(self) -> Result<ParamValue, E> {
                Ok(ParamValue::Null)
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<ParamValue, D::Error> {
                ParamValue::deserialize(d)
            }
            fn visit_bool<E>(self, b: bool) -> Result<ParamValue, E> {
                Ok(ParamValue::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<ParamValue, E> {
                Ok(ParamValue::Int(i))
            }
            fn visit_u64<E>(self, u: u64) -> Result<ParamValue, E> {
                // past i64: a float, as the derived enum read it
                Ok(i64::try_from(u).map_or(ParamValue::Float(u as f64), ParamValue::Int))
            }
            fn visit_f64<E>(self, f: f64) -> Result<ParamValue, E> {
                Ok(ParamValue::Float(f))
            }
            fn visit_str<E>(self, s: &str) -> Result<ParamValue, E> {
                Ok(ParamValue::Str(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<ParamValue, E> {
                Ok(ParamValue::Str(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ParamValue, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(ParamValue::List(items))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl ParamValue {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            Self::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Short human rendering (used in block summaries and READMEs).
    pub fn display(&self) -> String {
        match self {
            Self::Null => "null".to_owned(),
            Self::Bool(b) => b.to_string(),
            Self::Int(i) => i.to_string(),
            Self::Float(f) => format!("{f}"),
            Self::Str(s) => s.clone(),
            Self::List(items) => {
                let inner: Vec<String> = items.iter().map(Self::display).collect();
                format!("[{}]", inner.join(", "))
            }
        }
    }

    /// The value of a JSON scalar or list (`None` for an object).
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        Some(match value {
            serde_json::Value::Null => Self::Null,
            serde_json::Value::Bool(b) => Self::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Self::Int(i),
                None => Self::Float(n.as_f64()?),
            },
            serde_json::Value::String(s) => Self::Str(s.clone()),
            serde_json::Value::Array(items) => {
                Self::List(items.iter().map(Self::from_json).collect::<Option<_>>()?)
            }
            serde_json::Value::Object(_) => return None,
        })
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Null => serde_json::Value::Null,
            Self::Bool(b) => serde_json::Value::Bool(*b),
            Self::Int(i) => serde_json::Value::from(*i),
            Self::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Self::Str(s) => serde_json::Value::String(s.clone()),
            Self::List(items) => {
                serde_json::Value::Array(items.iter().map(Self::to_json).collect())
            }
        }
    }
}

/// The type (and valid range) of one parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamType {
    /// An integer in `min..=max`.
    Int {
        min: i64,
        max: i64,
    },
    /// A float in `min..=max`.
    Float {
        min: f64,
        max: f64,
    },
    Bool,
    /// One of a fixed set of names.
    Choice(&'static [&'static str]),
    /// An integer in `min..=max`, or null (absent).
    OptionalInt {
        min: i64,
        max: i64,
    },
    /// A float in `min..=max`, or null (absent).
    OptionalFloat {
        min: f64,
        max: f64,
    },
    /// Free text.
    Text,
    /// A list of floats, each in `min..=max`.
    FloatList {
        min: f64,
        max: f64,
    },
    /// A list of free-text names.
    TextList,
}

/// One parameter of a component (its default is the component's
/// `Params::default()`, see [`crate::engine::component::Component`]).
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub key: &'static str,
    pub doc: &'static str,
    pub ty: ParamType,
}

/// A parameter table joined from parts (a component's own entries and the
/// fragments its parameters flatten in), in order: `N` is the parts' total
/// length, which [`param_table`] computes. A wrong `N` fails the build.
pub const fn join_specs<const N: usize>(parts: &[&[ParamSpec]]) -> [ParamSpec; N] {
    const NONE: ParamSpec = ParamSpec {
        key: "",
        doc: "",
        ty: ParamType::Bool,
    };
    let mut table = [NONE; N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            assert!(n < N, "join_specs: more entries than N");
            table[n] = parts[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(n == N, "join_specs: fewer entries than N");
    table
}

/// A component's parameter table (`&'static [ParamSpec]`) joined from
/// constant slices, in order: its own entries and the fragments its
/// parameters flatten in, e.g. `param_table!(OWN, isolation::SPECS,
/// confirm::SPECS)`.
macro_rules! param_table {
    ($($part:expr),+ $(,)?) => {{
        const TABLE: [$crate::engine::params::ParamSpec; 0 $(+ $part.len())+] =
            $crate::engine::params::join_specs(&[$($part),+]);
        &TABLE
    }};
}
pub(crate) use param_table;

/// Why a parameter value is rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct ParamError {
    /// The parameter key (dotted path inside the slot when nested).
    pub key: String,
    pub reason: String,
}

/// The parameters of one slot, as written in a card (without `kind`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ParamMap(pub BTreeMap<String, ParamValue>);

impl ParamMap {
    pub fn get(&self, key: &str) -> Option<&ParamValue> {
        self.0.get(key)
    }

    pub fn set(&mut self, key: &str, value: ParamValue) {
        self.0.insert(key.to_owned(), value);
    }

    /// Check every value against the schema: unknown keys, types, ranges.
    /// Returns every problem, not just the first.
    pub fn validate(&self, specs: &[ParamSpec]) -> Vec<ParamError> {
        let mut errors = Vec::new();
        for (key, value) in &self.0 {
            match specs.iter().find(|s| s.key == key) {
                None => {
                    let known: Vec<&str> = specs.iter().map(|s| s.key).collect();
                    errors.push(ParamError {
                        key: key.clone(),
                        reason: if known.is_empty() {
                            "unknown parameter; this component takes no parameters".to_owned()
                        } else {
                            format!(
                                "unknown parameter{} (known: {})",
                                crate::engine::suggest::did_you_mean(key, known.iter().copied()),
                                known.join(", ")
                            )
                        },
                    });
                }
                Some(spec) => {
                    if let Err(reason) = check_value(spec.ty, value) {
                        errors.push(ParamError {
                            key: key.clone(),
                            reason: reason.to_string(),
                        });
                    }
                }
            }
        }
        errors
    }

    /// Decode into a component's typed parameter struct. Missing keys take the
    /// struct's serde defaults; the error names the offending key.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, ParamError> {
        let json = serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect(),
        );
        serde_path_to_error::deserialize(json).map_err(|e| {
            let key = e.path().to_string();
            ParamError {
                key: if key == "." { String::new() } else { key },
                reason: e.into_inner().to_string(),
            }
        })
    }
}

/// Why a value does not fit its parameter's type (the reason shown at the
/// field).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("{}", range_reason(*min, *max, got))]
    OutOfRange { min: f64, max: f64, got: String },
    #[error("`{got}` is not one of: {}", options.join(", "))]
    NotAChoice {
        got: String,
        options: &'static [&'static str],
    },
    #[error("expected a list of names")]
    NotNames,
    #[error("expected {expected}, got {got}")]
    WrongType { expected: String, got: String },
}

/// Check one value against a type.
pub fn check_value(ty: ParamType, value: &ParamValue) -> Result<(), ValueError> {
    let out_of_range = |min: f64, max: f64, got: String| ValueError::OutOfRange { min, max, got };
    match (ty, value) {
        (ParamType::Int { min, max }, ParamValue::Int(i))
        | (ParamType::OptionalInt { min, max }, ParamValue::Int(i)) => {
            if *i < min || *i > max {
                Err(out_of_range(min as f64, max as f64, i.to_string()))
            } else {
                Ok(())
            }
        }
        (ParamType::OptionalInt { .. } | ParamType::OptionalFloat { .. }, ParamValue::Null) => {
            Ok(())
        }
        (ParamType::Float { min, max } | ParamType::OptionalFloat { min, max }, v)
            if v.as_f64().is_some() =>
        {
            let f = v.as_f64().unwrap_or(f64::NAN);
            if !f.is_finite() || f < min || f > max {
                Err(out_of_range(min, max, v.display()))
            } else {
                Ok(())
            }
        }
        (ParamType::Bool, ParamValue::Bool(_)) | (ParamType::Text, ParamValue::Str(_)) => Ok(()),
        (ParamType::Choice(options), ParamValue::Str(s)) => {
            if options.contains(&s.as_str()) {
                Ok(())
            } else {
                Err(ValueError::NotAChoice {
                    got: s.clone(),
                    options,
                })
            }
        }
        (ParamType::FloatList { min, max }, ParamValue::List(items)) => {
            for item in items {
                check_value(ParamType::Float { min, max }, item)?;
            }
            Ok(())
        }
        (ParamType::TextList, ParamValue::List(items)) => {
            if items.iter().all(|i| matches!(i, ParamValue::Str(_))) {
                Ok(())
            } else {
                Err(ValueError::NotNames)
            }
        }
        (ty, v) => Err(ValueError::WrongType {
            expected: type_name(ty),
            got: v.display(),
        }),
    }
}

fn range_reason(min: f64, max: f64, got: &str) -> String {
    if max >= 1e15 {
        format!("must be at least {min}, got {got}")
    } else {
        format!("must be between {min} and {max}, got {got}")
    }
}

/// Human name of a parameter type ("an integer", "one of best, stochastic").
pub fn type_name(ty: ParamType) -> String {
    match ty {
        ParamType::Int { .. } => "an integer".to_owned(),
        ParamType::Float { .. } => "a number".to_owned(),
        ParamType::Bool => "true or false".to_owned(),
        ParamType::Choice(options) => format!("one of {}", options.join(", ")),
        ParamType::OptionalInt { .. } => "an integer or null".to_owned(),
        ParamType::OptionalFloat { .. } => "a number or null".to_owned(),
        ParamType::Text => "text".to_owned(),
        ParamType::FloatList { .. } => "a list of numbers".to_owned(),
        ParamType::TextList => "a list of names".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec {
            key: "n",
            doc: "count",
            ty: ParamType::Int { min: 1, max: 100 },
        },
        ParamSpec {
            key: "mode",
            doc: "mode",
            ty: ParamType::Choice(&["a", "b"]),
        },
    ];

    #[derive(Deserialize, Serialize, Default, Debug, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct P {
        n: u32,
        mode: String,
    }

    #[test]
    fn validate_reports_every_problem() {
        let mut m = ParamMap::default();
        m.set("n", ParamValue::Int(-3));
        m.set("mode", ParamValue::Str("c".into()));
        m.set("zzz", ParamValue::Bool(true));
        let errs = m.validate(SPECS);
        assert_eq!(errs.len(), 3);
        assert!(
            errs.iter()
                .any(|e| e.key == "n" && e.reason.contains("between 1 and 100"))
        );
        assert!(
            errs.iter()
                .any(|e| e.key == "zzz" && e.reason.contains("known: n, mode"))
        );
    }

    #[test]
    fn decode_names_the_key() {
        let mut m = ParamMap::default();
        m.set("n", ParamValue::Str("x".into()));
        let err = m.decode::<P>().unwrap_err();
        assert_eq!(err.key, "n");
        let mut ok = ParamMap::default();
        ok.set("n", ParamValue::Int(7));
        assert_eq!(
            ok.decode::<P>().unwrap(),
            P {
                n: 7,
                mode: String::new()
            }
        );
    }
}
