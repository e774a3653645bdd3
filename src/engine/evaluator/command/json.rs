//! Reading the JSON a command reports: Python's `json` writes bare `NaN`,
//! `Infinity` and `-Infinity`, which are not JSON; they are read as the
//! non-finite numbers they stand for. A number beyond a 64-bit float's range
//! (Python prints an integer of any length) is kept as its text, so that the
//! metric it is can be refused by name rather than the whole object.

/// What a bare `NaN`, `Infinity` or `-Infinity` becomes before parsing: the
/// token between two U+0001 characters (a string no evaluator writes).
const NONFINITE_MARK: char = '\u{1}';

/// The value a sentinel stands for, when `s` is one.
pub(super) fn nonfinite(s: &str) -> Option<f64> {
    match s
        .strip_prefix(NONFINITE_MARK)?
        .strip_suffix(NONFINITE_MARK)?
    {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// The number's text, when `s` is the sentinel of a number beyond a 64-bit
/// float's range.
pub(super) fn out_of_range(s: &str) -> Option<&str> {
    s.strip_prefix(NONFINITE_MARK)?
        .strip_suffix(NONFINITE_MARK)?
        .strip_prefix(RANGE_TAG)
}

/// Marks an out-of-range number's sentinel, after [`NONFINITE_MARK`].
const RANGE_TAG: &str = "out of range:";

/// A sentinel's original text (`NaN`, a long number), else `s`.
pub(super) fn original(s: &str) -> &str {
    out_of_range(s).unwrap_or_else(|| {
        s.strip_prefix(NONFINITE_MARK)
            .and_then(|t| t.strip_suffix(NONFINITE_MARK))
            .filter(|t| nonfinite(s).is_some() && !t.is_empty())
            .unwrap_or(s)
    })
}

/// `text` as a JSON object; Python's bare `NaN`, `Infinity` and `-Infinity`
/// are read as non-finite values, numbers beyond a float's range as
/// [`out_of_range`] sentinels.
pub(super) fn parse_object(
    text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let cleaned = replace_nonfinite(text);
    match serde_json::from_str::<serde_json::Value>(&cleaned) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("found {}", kind_of(&other))),
        Err(e) => Err(e.to_string()),
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Replace bare `NaN`, `Infinity` and `-Infinity`, and numbers beyond a
/// float's range, outside strings with a quoted sentinel.
fn replace_nonfinite(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        let token = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t));
        if let Some(t) = token {
            // JSON-escaped, so that it parses into the sentinel.
            out.push_str(&format!("\"\\u0001{t}\\u0001\""));
            rest = &rest[t.len()..];
        } else if c == '-' || c.is_ascii_digit() {
            // A number (outside strings, only numbers hold these characters).
            let end = rest
                .find(|d: char| !(d.is_ascii_digit() || "+-.eE".contains(d)))
                .unwrap_or(rest.len());
            let number = &rest[..end];
            if number.parse::<f64>().is_ok_and(f64::is_infinite) {
                out.push_str(&format!("\"\\u0001{RANGE_TAG}{number}\\u0001\""));
            } else {
                out.push_str(number);
            }
            rest = &rest[end.max(1)..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Largest `metrics.json` / `correct.json` read (a candidate cannot make the
/// run read a file of any size).
pub(super) const MAX_RESULT_FILE: u64 = 16 << 20;

/// The text of a result file: a plain file (not a link to a device or a
/// pipe), at most [`MAX_RESULT_FILE`] bytes.
pub(super) fn read_limited(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read as _;
    let not_plain = || "it is not a plain file".to_owned();
    // Opened without following a link and without waiting for a writer
    // (a fifo), then checked on what was opened: the candidate could have
    // swapped the path between a look and an open.
    let file = match crate::engine::platform::open_no_follow(path) {
        Ok(Some(file)) => file,
        Ok(None) => return Err(not_plain()),
        Err(e) => return Err(e.to_string()),
    };
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err(not_plain());
    }
    let mut bytes = Vec::new();
    file.take(MAX_RESULT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    text_limited(bytes)
}

/// A result file's bytes (at most [`MAX_RESULT_FILE`] + 1 of them) as its
/// text, or why not.
pub(super) fn text_limited(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.len() as u64 > MAX_RESULT_FILE {
        return Err(format!(
            "it is larger than the {MAX_RESULT_FILE} bytes read"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
}

/// The last stdout line that is a JSON object, else all of stdout.
pub(super) fn metrics_from_stdout(
    stdout: &str,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    stdout
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .find_map(|l| parse_object(l).ok())
        .or_else(|| parse_object(stdout.trim()).ok())
}
