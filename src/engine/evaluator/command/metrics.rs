//! The metrics a command reports, as the evaluator's metrics: ShinkaEvolve's
//! `public` / `private` / `text_feedback`, an `artifacts` object, and plain
//! values (see the command evaluator's module docs).

use std::collections::BTreeMap;

use super::json::{nonfinite, original, out_of_range};
use crate::engine::evaluator::{Metric, Observed};

/// A value as artifact text (the numbers [`super::json`] marked as they
/// were written).
fn as_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => original(s).to_owned(),
        other => {
            // A marked value inside a list or dict: `"\u0001NaN\u0001"`.
            let text = other.to_string();
            let (open, close) = ("\"\\u0001", "\\u0001\"");
            let mut out = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(i) = rest.find(open) {
                let after = &rest[i + open.len()..];
                let Some(j) = after.find(close) else { break };
                out.push_str(&rest[..i]);
                out.push_str(original(&format!("\u{1}{}\u{1}", &after[..j])));
                rest = &after[j + close.len()..];
            }
            out.push_str(rest);
            out
        }
    }
}

/// The error for a metric reported as `number`, a number beyond a 64-bit
/// float's range.
fn out_of_range_error(key: &str, number: &str) -> String {
    let digits = number.chars().filter(char::is_ascii_digit).count();
    let shown = if number.chars().count() > 24 {
        let head: String = number.chars().take(12).collect();
        let tail: String = number.chars().skip(number.chars().count() - 6).collect();
        format!("{head}…{tail} ({digits} digits)")
    } else {
        number.to_owned()
    };
    format!(
        "score {key} is {shown}, out of range: beyond the largest number a 64-bit float holds \
         (about 1.8e308), so it is not a finite score"
    )
}

/// One reported value, as a metric (the validity rule,
/// [`Observed::judge`], decides what becomes a score or an artifact).
fn put(key: &str, value: &serde_json::Value, observed: &mut Observed) {
    let metric = match value {
        serde_json::Value::Null => Metric::Missing,
        serde_json::Value::Bool(b) => Metric::Bool(*b),
        serde_json::Value::Number(n) => Metric::Number(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => {
            if let Some(number) = out_of_range(s) {
                observed
                    .error
                    .get_or_insert_with(|| out_of_range_error(key, number));
                let inf = if number.starts_with('-') {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                };
                Metric::Number(inf)
            } else {
                nonfinite(s).map_or_else(|| Metric::Text(s.clone()), Metric::Number)
            }
        }
        serde_json::Value::Array(_) => Metric::Other {
            type_name: "list".to_owned(),
            text: as_text(value),
        },
        serde_json::Value::Object(_) => Metric::Other {
            type_name: "dict".to_owned(),
            text: as_text(value),
        },
    };
    observed.metrics.push((key.to_owned(), metric));
}

/// The metrics object: ShinkaEvolve's `public` / `private` /
/// `text_feedback`, an `artifacts` object, and plain values.
pub(super) fn take_metrics(
    map: &serde_json::Map<String, serde_json::Value>,
    observed: &mut Observed,
    private: &mut BTreeMap<String, String>,
) {
    for (key, value) in map {
        match (key.as_str(), value) {
            ("public", serde_json::Value::Object(inner)) => {
                for (k, v) in inner {
                    put(k, v, observed);
                }
            }
            ("private", serde_json::Value::Object(inner)) => {
                for (k, v) in inner {
                    if !v.is_null() {
                        private.insert(k.clone(), as_text(v));
                    }
                }
            }
            ("artifacts", serde_json::Value::Object(inner)) => {
                for (k, v) in inner {
                    if !v.is_null() {
                        observed.artifacts.insert(k.clone(), as_text(v));
                    }
                }
            }
            ("text_feedback", v) => {
                let text = as_text(v);
                if !v.is_null() && !text.trim().is_empty() {
                    observed.artifacts.insert("text_feedback".to_owned(), text);
                }
            }
            _ => put(key, value, observed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::evaluator::command::json::{metrics_from_stdout, parse_object};

    #[test]
    fn python_nonfinite_numbers_are_read_as_such() {
        let m = parse_object(r#"{"a": NaN, "b": -Infinity, "s": "NaN and Infinity", "c": 1}"#)
            .unwrap_or_default();
        let mut o = Observed::default();
        take_metrics(&m, &mut o, &mut BTreeMap::new());
        let nonfinite: Vec<&str> = o
            .metrics
            .iter()
            .filter(|(_, m)| matches!(m, Metric::Number(v) if !v.is_finite()))
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(nonfinite, ["a", "b"]);
        assert!(
            matches!(o.metrics[1].1, Metric::Number(v) if v == f64::NEG_INFINITY),
            "{:?}",
            o.metrics
        );
        let e = o.judge();
        assert_eq!(e.error.as_deref(), Some("non-finite score a (NaN)"));
        assert_eq!(e.scores["c"], 1.0);
        assert_eq!(e.artifacts["s"], "NaN and Infinity");
    }

    #[test]
    fn shinka_metrics_split_into_public_private_and_feedback() {
        let m = parse_object(
            r#"{"combined_score": 0.5, "public": {"mse": 2.0, "shape": "ok", "ok": true},
                "private": {"secret": 7, "note": "hidden"}, "text_feedback": "try harder",
                "artifacts": {"plot": "p.png"}, "extra": [1, 2]}"#,
        )
        .unwrap_or_default();
        let mut o = Observed::default();
        let mut private = BTreeMap::new();
        take_metrics(&m, &mut o, &mut private);
        let o = o.judge();
        assert!(o.valid, "{o:?}");
        assert_eq!(o.scores["combined_score"], 0.5);
        assert_eq!(o.scores["mse"], 2.0);
        assert_eq!(o.scores["ok"], 1.0);
        assert_eq!(o.artifacts["shape"], "ok");
        assert_eq!(o.artifacts["text_feedback"], "try harder");
        assert_eq!(o.artifacts["plot"], "p.png");
        assert_eq!(o.artifacts["extra"], "[1,2]");
        assert_eq!(private["secret"], "7");
        assert_eq!(private["note"], "hidden");
        assert!(!o.scores.contains_key("secret") && !o.artifacts.contains_key("note"));
    }

    #[test]
    fn a_number_beyond_a_float_is_refused_by_name() {
        let big = format!("1{}", "0".repeat(399));
        let line = format!(
            "{{\"combined_score\": {big}, \"small\": -1e400, \"ok\": 2.5, \"list\": [{big}, NaN]}}"
        );
        let m = metrics_from_stdout(&format!("progress\n{line}\n")).unwrap_or_default();
        let mut o = Observed::default();
        take_metrics(&m, &mut o, &mut BTreeMap::new());
        let e = o.judge();
        assert!(!e.valid);
        assert_eq!(
            e.error.as_deref(),
            Some(
                "score combined_score is 100000000000…000000 (400 digits), out of range: beyond the \
                 largest number a 64-bit float holds (about 1.8e308), so it is not a finite score"
            )
        );
        assert_eq!(e.scores["ok"], 2.5);
        assert_eq!(e.artifacts["list"], format!("[{big},NaN]"));
        // A number in range, however long, is read as usual.
        let m = parse_object(r#"{"a": 123456789012345678901234567890, "b": -0.5e-3}"#).unwrap();
        assert_eq!(m["a"].as_f64(), Some(1.2345678901234568e29));
        assert_eq!(m["b"].as_f64(), Some(-0.0005));
    }

    #[test]
    fn metrics_on_stdout_are_the_last_json_line() {
        let out =
            "compiling...\n{\"not\": \"this\"}\nprogress 50%\n{\"combined_score\": 3}\ndone\n";
        let m = metrics_from_stdout(out).unwrap_or_default();
        assert_eq!(m.get("combined_score"), Some(&serde_json::json!(3)));
        let whole = "{\n  \"combined_score\": 1\n}\n";
        assert!(metrics_from_stdout(whole).is_some());
        assert!(metrics_from_stdout("no json here").is_none());
    }
}
