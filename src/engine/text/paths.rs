//! File paths in a model reply: checking that a path stays inside the
//! program's tree, and finding the path a model wrote above an edit (`src/x.py`,
//! `` `src/x.py` ``, `**src/x.py**`, `### src/x.py`, `File: src/x.py`, ...).

/// Why a path named by a reply is refused. Messages are shown to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("an edit names an empty file path")]
    Empty,
    #[error(
        "`{0}` is an absolute path; name files relative to the program's folder (as `src/x.py`)"
    )]
    Absolute(String),
    #[error("`{0}` leaves the program's folder (`..`); name files inside it")]
    Parent(String),
    #[error("`{0}` is not a usable file path: {1}")]
    Invalid(String, &'static str),
}

/// `raw` as a path inside the tree: `./` and repeated `/` dropped; absolute
/// paths, `..`, backslashes, control characters and `.git` refused.
pub fn clean_path(raw: &str) -> Result<String, PathError> {
    let p = raw.trim();
    if p.is_empty() {
        return Err(PathError::Empty);
    }
    let bytes = p.as_bytes();
    if p.starts_with('/')
        || p.starts_with('~')
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
    {
        return Err(PathError::Absolute(p.to_owned()));
    }
    if p.contains('\\') {
        return Err(PathError::Invalid(
            p.to_owned(),
            "use `/` between folders, not `\\`",
        ));
    }
    if p.chars().any(char::is_control) {
        return Err(PathError::Invalid(
            p.to_owned(),
            "it has a control character",
        ));
    }
    let mut parts = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathError::Parent(p.to_owned())),
            part if crate::engine::foreign::is_git_name(part) => {
                return Err(PathError::Invalid(
                    p.to_owned(),
                    "`.git` (or a name git takes for it) is not part of the program",
                ));
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(PathError::Empty);
    }
    if p.ends_with('/') {
        return Err(PathError::Invalid(
            p.to_owned(),
            "it names a folder, not a file",
        ));
    }
    Ok(parts.join("/"))
}

/// Whether `s` looks like a file path: no spaces, path characters only, a
/// `/` or an extension.
fn looks_like_path(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+' | '@'))
        && (s.contains('/') || s.rfind('.').is_some_and(|i| i > 0 && i + 1 < s.len()))
        && !s.starts_with("...")
}

/// `line` without the decoration a model puts around a file name: heading
/// `#`s (or a comment's `#` / `//`), list bullets, `>` quotes, `File:` /
/// `Path:` labels, a trailing `:`, bold, italics, backticks and quotes.
fn strip_decoration(line: &str) -> &str {
    let mut t = line.trim();
    loop {
        let before = t;
        t = t.trim_start_matches('#').trim_start();
        t = t.trim_start_matches('>').trim_start();
        if let Some(rest) = t.strip_prefix("// ") {
            t = rest.trim_start();
        }
        for bullet in ["- ", "* ", "+ "] {
            if let Some(rest) = t.strip_prefix(bullet) {
                t = rest.trim_start();
            }
        }
        for label in [
            "file:",
            "File:",
            "FILE:",
            "path:",
            "Path:",
            "filename:",
            "Filename:",
            "File name:",
            "In",
            "in",
        ] {
            if let Some(rest) = t.strip_prefix(label)
                && (label.ends_with(':') || rest.starts_with(' '))
            {
                t = rest.trim_start();
            }
        }
        t = t.trim_end_matches(':').trim_end();
        for wrap in ["**", "__", "`", "*", "_", "\"", "'"] {
            if let Some(inner) = t.strip_prefix(wrap).and_then(|r| r.strip_suffix(wrap)) {
                t = inner.trim();
            }
        }
        if t == before {
            return t;
        }
    }
}

/// Spans of `line` between backticks or double asterisks.
fn quoted_spans(line: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    for delim in ["`", "**"] {
        let mut rest = line;
        while let Some(open) = rest.find(delim) {
            let after = &rest[open + delim.len()..];
            let Some(close) = after.find(delim) else {
                break;
            };
            spans.push(after[..close].trim().trim_matches('`'));
            rest = &after[close + delim.len()..];
        }
    }
    spans
}

/// The file path a line of a reply names, if it names one: the whole line
/// once decoration is stripped (`### `src/x.py``, `**src/x.py**:`), else the
/// one backticked or bold span that is a file of the tree (`Now change
/// `src/x.py`:`). `known` says whether a path is a file of the tree; an
/// unknown path counts only when it stands alone on the line.
pub fn path_in_line(line: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    let t = strip_decoration(line).replace("\\_", "_");
    if looks_like_path(&t) {
        return Some(t);
    }
    let spans: Vec<String> = quoted_spans(line)
        .into_iter()
        .map(|s| s.replace("\\_", "_"))
        .filter(|s| known(s))
        .collect();
    match spans.as_slice() {
        [one] => Some(one.clone()),
        [first, rest @ ..] if rest.iter().all(|s| s == first) => Some(first.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_paths_and_refusals() {
        assert_eq!(clean_path("./src//x.py").unwrap(), "src/x.py");
        assert_eq!(clean_path(" a.py ").unwrap(), "a.py");
        assert!(matches!(
            clean_path("/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            clean_path("C:\\x.py"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(clean_path("~/x.py"), Err(PathError::Absolute(_))));
        assert!(matches!(
            clean_path("src/../../x.py"),
            Err(PathError::Parent(_))
        ));
        assert!(matches!(clean_path("../x.py"), Err(PathError::Parent(_))));
        assert!(matches!(
            clean_path("src\\x.py"),
            Err(PathError::Invalid(..))
        ));
        assert!(matches!(
            clean_path(".git/config"),
            Err(PathError::Invalid(..))
        ));
        assert!(matches!(clean_path("src/"), Err(PathError::Invalid(..))));
        assert!(matches!(clean_path("./"), Err(PathError::Empty)));
        let e = clean_path("../secrets.txt").unwrap_err().to_string();
        assert!(
            e.contains("`../secrets.txt`") && e.contains("leaves"),
            "{e}"
        );
    }

    #[test]
    fn paths_models_write_above_edits() {
        let known = |p: &str| ["src/score.py", "src/my_helper.py", "README.md"].contains(&p);
        for line in [
            "src/score.py",
            "`src/score.py`",
            "**src/score.py**",
            "**`src/score.py`**:",
            "### src/score.py",
            "// src/score.py",
            "## File: `src/score.py`",
            "File: src/score.py",
            "- `src/score.py`:",
            "In `src/score.py`:",
            "Now let's change `src/score.py` so the weights are tuned:",
        ] {
            assert_eq!(
                path_in_line(line, &known).as_deref(),
                Some("src/score.py"),
                "{line}"
            );
        }
        // Markdown escapes an underscore.
        assert_eq!(
            path_in_line("src/my\\_helper.py", &known).as_deref(),
            Some("src/my_helper.py")
        );
        // A new file counts when it stands alone.
        assert_eq!(
            path_in_line("`src/new_module.py`", &known).as_deref(),
            Some("src/new_module.py")
        );
        for line in [
            "Here is the change:",
            "print(x.y())",
            "x = a.b",
            "Both `src/score.py` and `README.md` change:",
            "...",
        ] {
            assert_eq!(path_in_line(line, &known), None, "{line}");
        }
    }
}
