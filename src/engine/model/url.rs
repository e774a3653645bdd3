//! An endpoint's base URL, which may carry credentials: a user and password
//! (`http://user:key@host/v1`) or a key in the query (`?api-key=...`).
//!
//! [`ApiBase`] keeps the URL as given for the requests and shows it with its
//! credentials replaced ([`redact_url`]) wherever it is printed, logged or
//! archived; [`ApiBase::secrets`] lists the credential values so the run's
//! redactor can also take them out of anything else that quotes them.

use std::fmt;

use reqwest::Url;

use super::ConfigError;

/// What replaces a credential in a shown URL.
pub const REDACTED: &str = "[redacted]";

/// The suffix every chat completions URL ends in.
const COMPLETIONS: &str = "/chat/completions";

/// A base URL whose `Display` and `Debug` never show its credentials.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ApiBase(String);

impl ApiBase {
    pub fn new(url: &str) -> Self {
        Self(url.trim().to_owned())
    }

    /// The URL as given, credentials included: only for sending requests.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `(what, value)` for every credential in the URL, each as written and
    /// percent-decoded.
    pub fn secrets(&self) -> Vec<(String, String)> {
        url_secrets(&self.0)
    }

    /// The chat completions URL: `/chat/completions` appended to the path
    /// (unless the path already ends in it), the query kept as a query.
    pub fn completions_url(&self) -> Result<Url, ConfigError> {
        self.request_url(COMPLETIONS, None, None)
    }

    /// The URL of one of the API's operations: `suffix` (`/chat/completions`,
    /// `/responses`, `/messages`, `/models`) appended to the path unless the
    /// path already ends in it; `{deployment}` in the base (Azure OpenAI's
    /// `…/openai/deployments/{deployment}`) replaced by `deployment`; an
    /// `api-version` query parameter added when given; the base's own query
    /// kept as a query.
    pub fn request_url(
        &self,
        suffix: &str,
        deployment: Option<&str>,
        api_version: Option<&str>,
    ) -> Result<Url, ConfigError> {
        let shown = redact_url(&self.0);
        let invalid =
            |why: String| ConfigError::invalid(format!("invalid api_base `{shown}`: {why}"));
        let raw = if self.0.contains(DEPLOYMENT) {
            match deployment {
                Some(d) if plain_deployment_name(d) => self.0.replace(DEPLOYMENT, d),
                Some(d) => {
                    return Err(invalid(format!(
                        "deployment name `{d}` is not a plain name: at most {MAX_DEPLOYMENT} \
                         letters, digits, `-` and `_`, with a `.` only between two of them \
                         (`gpt-4.1`), so that it stays one segment of the path"
                    )));
                }
                // Checking the base alone: any valid name will do.
                None => self.0.replace(DEPLOYMENT, "deployment"),
            }
        } else {
            self.0.clone()
        };
        let mut url = Url::parse(&raw).map_err(|e| invalid(e.to_string()))?;
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(invalid(format!(
                    "scheme must be http or https, not `{other}`"
                )));
            }
        }
        if url.host().is_none() {
            return Err(invalid("no host".to_owned()));
        }
        let path = url.path().trim_end_matches('/').to_owned();
        let path = [COMPLETIONS, "/responses", "/messages", "/models"]
            .iter()
            .find_map(|s| path.strip_suffix(s))
            .unwrap_or(&path)
            .to_owned();
        url.set_path(&format!("{path}{suffix}"));
        url.set_fragment(None);
        if let Some(v) = api_version.map(str::trim).filter(|v| !v.is_empty())
            && !url.query_pairs().any(|(k, _)| k == "api-version")
        {
            url.query_pairs_mut().append_pair("api-version", v);
        }
        Ok(url)
    }

    /// True when the base has a `{deployment}` slot for the model's name.
    pub fn has_deployment_slot(&self) -> bool {
        self.0.contains(DEPLOYMENT)
    }

    /// The base with the API's version segment (`/v1`) at the end of its
    /// path when it has none: the Anthropic SDK's convention
    /// (`ANTHROPIC_BASE_URL=https://api.anthropic.com`, a proxy's
    /// `https://proxy.example/anthropic`) leaves it out and appends
    /// `/v1/messages` itself. A base that ends in a version (`/v1`), in
    /// `/v1/messages`, or that cannot be parsed is kept as it is.
    pub fn with_version_segment(&self) -> ApiBase {
        if self.has_deployment_slot() {
            return self.clone();
        }
        let Ok(mut url) = Url::parse(&self.0) else {
            return self.clone();
        };
        let path = url.path().trim_end_matches('/').to_owned();
        let stem = path.strip_suffix("/messages").unwrap_or(&path);
        let last = stem.rsplit('/').next().unwrap_or("");
        let versioned = last.len() > 1
            && last.starts_with('v')
            && last[1..].chars().all(|c| c.is_ascii_digit());
        if versioned {
            return self.clone();
        }
        url.set_path(&format!("{stem}/v1"));
        ApiBase(url.to_string())
    }
}

/// Where a deployment's name goes in an Azure OpenAI base URL.
pub const DEPLOYMENT: &str = "{deployment}";

/// Longest deployment name (Azure's own limit is 64).
const MAX_DEPLOYMENT: usize = 64;

/// Whether `name` may stand in a `{deployment}` slot: a plain name that is
/// one path segment whatever the URL parser does (no `/`, `\`, `%`, `?`,
/// `#`; no `.` or `..`, no dot at an end or next to another): ASCII
/// letters, digits, `-` and `_`, with a dot only between two of those.
pub fn plain_deployment_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    !bytes.is_empty()
        && bytes.len() <= MAX_DEPLOYMENT
        && bytes.iter().enumerate().all(|(i, &b)| {
            word(b)
                || (b == b'.'
                    && i > 0
                    && i + 1 < bytes.len()
                    && bytes[i - 1].is_ascii_alphanumeric()
                    && bytes[i + 1].is_ascii_alphanumeric())
        })
}

impl fmt::Display for ApiBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl fmt::Debug for ApiBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiBase({})", redact_url(&self.0))
    }
}

/// True for a query parameter whose value is a credential (`api-key`,
/// `access_token`, `sig`, `password`...).
pub fn is_key_like(name: &str) -> bool {
    let n: String = percent_decode(name)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    [
        "key",
        "token",
        "secret",
        "pass",
        "pwd",
        "auth",
        "sig",
        "credential",
        "session",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Where the parts of a URL are, by byte range: the userinfo (before the
/// last `@` of the authority) and the query (after `?`, before `#`).
struct Parts {
    userinfo: Option<(usize, usize)>,
    query: Option<(usize, usize)>,
}

fn parts(url: &str) -> Parts {
    let authority_start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[authority_start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let userinfo = rest[..authority_len]
        .rfind('@')
        .map(|at| (authority_start, authority_start + at));
    let query = url.find('?').map(|q| {
        let end = url[q..].find('#').map_or(url.len(), |h| q + h);
        (q + 1, end)
    });
    Parts { userinfo, query }
}

/// `url` with its userinfo and the values of key-like query parameters
/// replaced by [`REDACTED`]; anything else as written. Works on text that
/// does not parse as a URL too.
pub fn redact_url(url: &str) -> String {
    let p = parts(url);
    let mut out = String::with_capacity(url.len());
    let mut at = 0;
    if let Some((start, end)) = p.userinfo {
        out.push_str(&url[..start]);
        out.push_str(REDACTED);
        at = end;
    }
    match p.query {
        Some((start, end)) if start >= at => {
            out.push_str(&url[at..start]);
            let pairs: Vec<String> = url[start..end]
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) if is_key_like(k) && !v.is_empty() => format!("{k}={REDACTED}"),
                    _ => pair.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
            out.push_str(&url[end..]);
        }
        _ => out.push_str(&url[at..]),
    }
    out
}

/// `(what, value)` for every credential in `url`: the password of its
/// userinfo (or the user, when there is no password), and the values of key-like query parameters, each as
/// written and, when different, percent-decoded.
pub fn url_secrets(url: &str) -> Vec<(String, String)> {
    let p = parts(url);
    let mut out = Vec::new();
    let mut push = |what: &str, raw: &str| {
        if raw.is_empty() {
            return;
        }
        out.push((what.to_owned(), raw.to_owned()));
        let decoded = percent_decode(raw);
        if decoded != raw {
            out.push((what.to_owned(), decoded));
        }
    };
    if let Some((start, end)) = p.userinfo {
        let info = &url[start..end];
        // A user beside a password is a name; alone, it is the token.
        match info.split_once(':') {
            Some((_, password)) => push("the api_base password", password),
            None => push("the api_base user", info),
        }
    }
    if let Some((start, end)) = p.query {
        for pair in url[start..end].split('&') {
            if let Some((k, v)) = pair.split_once('=')
                && is_key_like(k)
            {
                push(
                    &format!("the api_base `{}` parameter", percent_decode(k)),
                    v,
                );
            }
        }
    }
    out
}

/// `%XX` sequences decoded (and `+` kept); invalid sequences left as they are.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anthropic_sdks_base_gets_its_version_segment() {
        let v = |base: &str| {
            ApiBase::new(base)
                .with_version_segment()
                .expose()
                .to_owned()
        };
        assert_eq!(
            v("https://api.anthropic.com"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(
            v("https://api.anthropic.com/"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(
            v("https://api.anthropic.com/v1"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(
            v("https://api.anthropic.com/v1/"),
            "https://api.anthropic.com/v1/"
        );
        assert_eq!(
            v("https://api.anthropic.com/v1/messages"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            v("https://proxy.example/anthropic?team=a"),
            "https://proxy.example/anthropic/v1?team=a"
        );
        assert_eq!(v("http://127.0.0.1:8080/v2"), "http://127.0.0.1:8080/v2");
    }

    #[test]
    fn credentials_are_redacted_and_the_rest_is_kept() {
        assert_eq!(
            redact_url("http://user:sk-secret@host:8000/v1"),
            "http://[redacted]@host:8000/v1"
        );
        assert_eq!(
            redact_url("https://h/v1?api-key=abc123&api-version=2024-06-01#x"),
            "https://h/v1?api-key=[redacted]&api-version=2024-06-01#x"
        );
        assert_eq!(
            redact_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        // An `@` in the path is not a userinfo.
        assert_eq!(redact_url("http://h/v1/@me"), "http://h/v1/@me");
        // Not a URL: still no credentials shown.
        assert_eq!(
            redact_url("user:pw@host/x?token=t"),
            "[redacted]@host/x?token=[redacted]"
        );
        let base = ApiBase::new("http://me:p%40ss@h/v1?access_token=tok-value");
        assert_eq!(
            base.to_string(),
            "http://[redacted]@h/v1?access_token=[redacted]"
        );
        assert!(!format!("{base:?}").contains("tok-value"));
        let values: Vec<String> = base.secrets().into_iter().map(|(_, v)| v).collect();
        assert_eq!(values, ["p%40ss", "p@ss", "tok-value"]);
        let token_as_user = ApiBase::new("https://tok-as-user@h/v1").secrets();
        assert_eq!(
            token_as_user,
            [("the api_base user".to_owned(), "tok-as-user".to_owned())]
        );
    }

    #[test]
    fn the_query_stays_a_query() {
        let url = ApiBase::new("http://h:1/v1?api-key=k1&v=2").completions_url();
        assert_eq!(
            url.map(|u| u.to_string()).unwrap_or_default(),
            "http://h:1/v1/chat/completions?api-key=k1&v=2"
        );
        let url = ApiBase::new("http://h/v1/chat/completions/?x=1").completions_url();
        assert_eq!(
            url.map(|u| u.to_string()).unwrap_or_default(),
            "http://h/v1/chat/completions?x=1"
        );
    }

    #[test]
    fn a_bad_url_is_reported_without_its_credentials() {
        let err = ApiBase::new("ftp://u:hunter22@h/v1").completions_url();
        let text = err.map(|_| String::new()).unwrap_or_else(|e| e.to_string());
        assert!(
            text.contains("scheme") && !text.contains("hunter22"),
            "{text}"
        );
    }
}
