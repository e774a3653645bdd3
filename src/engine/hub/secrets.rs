//! What export refuses to write: anything that looks like a secret (API keys,
//! credentials in URLs, the values of secret-looking environment variables)
//! and model endpoints inside a card's `llm` settings.

use crate::engine::card::Card;

/// Show only the start of a suspected secret.
fn redact(s: &str) -> String {
    let head: String = s.chars().take(6).collect();
    format!("{head}…")
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Tokens that start at a word boundary with `prefix` and continue with at
/// least `min_tail` token characters.
fn prefixed_token(text: &str, prefix: &str, min_tail: usize) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(prefix) {
        let start = from + i;
        from = start + prefix.len();
        let boundary = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        let tail = text[from..]
            .chars()
            .take_while(|c| is_token_char(*c))
            .count();
        if boundary && tail >= min_tail {
            return Some(text[start..from + tail].to_owned());
        }
    }
    None
}

/// `api_key: value`, `token=value` and the like: a secret-named field with a value.
fn assigned_secret(text: &str) -> Option<String> {
    const NAMES: &[&str] = &[
        "api_key",
        "api-key",
        "apikey",
        "secret_key",
        "access_token",
        "auth_token",
        "password",
        "client_secret",
    ];
    let lower = text.to_ascii_lowercase();
    for name in NAMES {
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let end = from + i + name.len();
            from = end;
            let rest = lower[end..].trim_start_matches(['"', '\'', ' ', '\t']);
            let Some(after) = rest.strip_prefix([':', '=']) else {
                continue;
            };
            let value = after.trim_start_matches(['"', '\'', ' ', '\t']);
            if value.chars().next().is_some_and(|c| !c.is_whitespace()) {
                return Some(format!("a `{name}` field with a value"));
            }
        }
    }
    prefixed_token(text, "bearer ", 16).map(|t| format!("a bearer token `{}`", redact(&t)))
}

/// `scheme://user:password@host`.
fn url_credentials(text: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = text[from..].find("://") {
        let start = from + i + 3;
        from = start;
        let authority: String = text[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, '/' | '?' | '#' | '`' | '"' | '\''))
            .collect();
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && userinfo.contains(':')
        {
            return Some("a URL with a password in it".to_owned());
        }
    }
    None
}

/// What in `text` looks like a secret, described without repeating it, or
/// `None`. `known` are (name, value) pairs that must never appear, e.g. the
/// values of secret environment variables or keys held in settings.
pub fn find_secret(text: &str, known: &[(String, String)]) -> Option<String> {
    for (name, value) in known {
        let value = value.trim();
        if value.chars().count() >= 8 && text.contains(value) {
            return Some(format!("the value of `{name}`"));
        }
    }
    const PREFIXES: &[(&str, usize, &str)] = &[
        ("sk-", 16, "an API key"),
        ("ghp_", 20, "a GitHub token"),
        ("github_pat_", 20, "a GitHub token"),
        ("xoxb-", 10, "a Slack token"),
        ("xoxp-", 10, "a Slack token"),
        ("hf_", 20, "a Hugging Face token"),
        ("aiza", 30, "a Google API key"),
        ("akia", 16, "an AWS access key"),
    ];
    for (prefix, tail, what) in PREFIXES {
        if let Some(token) = prefixed_token(text, prefix, *tail) {
            return Some(format!("{what} `{}`", redact(&token)));
        }
    }
    assigned_secret(text).or_else(|| url_credentials(text))
}

/// (name, value) of every environment variable whose name says it holds a
/// secret (`*_API_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`...).
pub fn secret_env_values() -> Vec<(String, String)> {
    const MARKERS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, v)| {
            let upper = k.to_ascii_uppercase();
            MARKERS.iter().any(|m| upper.contains(m)) && v.trim().chars().count() >= 8
        })
        .collect()
}

/// Endpoints inside the card's `llm` settings (a model "name" that is a URL).
pub(super) fn llm_endpoint(card: &Card) -> Option<String> {
    let llm = card.llm.as_ref()?;
    llm.models.iter().enumerate().find_map(|(i, m)| {
        m.name
            .contains("://")
            .then(|| format!("an endpoint in `llm.models[{i}].name`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_scanner_catches_keys_but_not_ordinary_words() {
        assert!(find_secret("the task-supplied evaluator", &[]).is_none());
        assert!(find_secret("a risk-free bet", &[]).is_none());
        assert!(find_secret("key: sk-proj-abcdefghijklmnop1234", &[]).is_some());
        assert!(find_secret("api_key: \"abc\"", &[]).is_some());
        assert!(find_secret("mentions api_key only in prose", &[]).is_none());
        assert!(find_secret("see https://user:hunter22@example.com/x", &[]).is_some());
        assert!(find_secret("see https://github.com/org/repo", &[]).is_none());
        let known = vec![("MY_TOKEN".to_owned(), "zq7Vw3ppLm9XcT".to_owned())];
        let what = find_secret("summary zq7Vw3ppLm9XcT here", &known).unwrap_or_default();
        assert!(what.contains("MY_TOKEN") && !what.contains("zq7Vw3ppLm9XcT"));
    }
}
