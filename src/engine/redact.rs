//! The run's redactor: the second line of defence for secrets.
//!
//! Candidates never get the model's key in their environment, but a
//! candidate run without a sandbox, an evaluator that prints its own
//! environment, or a server that echoes a request can still put a key's
//! value into text. A [`Redactor`] knows the values of the run's secrets
//! (every configured key variable that is set, and the credentials of every
//! endpoint URL) and replaces each occurrence with a marker naming where the
//! secret lives, never the secret. The run applies one redactor at its three
//! boundaries: what is recorded (the archive writer), what is reported (the
//! event sink) and what is sent to a model (the request).
//!
//! It finds exact occurrences (and the percent-decoded form of URL
//! credentials), and the forms a JSON string may give a key: any of its
//! characters written as a `\uXXXX` escape (in either case, at any depth of
//! JSON-in-JSON, so behind any run of backslashes) and `/` written `\/`.
//! [`RedactStream`] does the same for text that comes in pieces (a reply
//! streamed through the model relay): it holds back the end of a piece that
//! may be the start of a secret until the next piece tells. A candidate
//! that transforms a key otherwise before printing it (reversed, encoded)
//! is stopped by the first line, the evaluator's environment allowlist and
//! sandbox, not by this one.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::engine::genome::Genome;

/// Values shorter than this are not searched for: they would match ordinary
/// text, and are no secret worth the name.
pub const MIN_SECRET_LEN: usize = 6;

/// One secret: its value and where it lives (a variable's name, "the
/// api_base password").
#[derive(Clone)]
struct Secret {
    value: String,
    marker: String,
}

/// Replaces the run's secrets in text. Empty (a no-op) when the run has
/// none, e.g. with the offline model.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<Secret>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for `(where, value)` pairs; values shorter than
    /// [`MIN_SECRET_LEN`] (after trimming) are left out, and so are repeats.
    pub fn new(secrets: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut list: Vec<Secret> = Vec::new();
        for (place, value) in secrets {
            for v in [value.as_str(), value.trim()] {
                if v.chars().count() < MIN_SECRET_LEN || list.iter().any(|s| s.value == v) {
                    continue;
                }
                list.push(Secret {
                    value: v.to_owned(),
                    marker: format!("[redacted: {place}]"),
                });
            }
        }
        list.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
        Self { secrets: list }
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// How many distinct secret values it looks for.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// This redactor's secrets and `other`'s.
    pub fn with(&self, other: &Redactor) -> Redactor {
        let mut secrets = self.secrets.clone();
        for s in &other.secrets {
            if !secrets.iter().any(|k| k.value == s.value) {
                secrets.push(s.clone());
            }
        }
        secrets.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
        Self { secrets }
    }

    /// True when `text` holds a secret, as it is or in JSON's escapes.
    pub fn finds(&self, text: &str) -> bool {
        if self.secrets.iter().any(|s| text.contains(&s.value)) {
            return true;
        }
        escaped(text.as_bytes()) && {
            let mut scan = Scan::new(self);
            scan.next_match(text.as_bytes(), 0, true).is_some()
        }
    }

    /// `text` with every secret replaced by its marker (borrowed when it holds
    /// none).
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.finds(text) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(&s.value) {
                out = out.replace(&s.value, &s.marker);
            }
        }
        if escaped(out.as_bytes()) {
            let mut stream = RedactStream::new(self);
            let mut bytes = stream.push(out.as_bytes());
            bytes.extend(stream.finish());
            // Whole characters were replaced by ASCII markers.
            out = String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        }
        Cow::Owned(out)
    }

    /// A redactor for text that comes in pieces.
    pub fn stream(&self) -> RedactStream<'_> {
        RedactStream::new(self)
    }

    /// Redacts `text` in place; true when it changed.
    pub fn string(&self, text: &mut String) -> bool {
        match self.text(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(clean) => {
                *text = clean;
                true
            }
        }
    }

    /// Redacts the keys and values of a string map in place.
    pub fn map<V>(
        &self,
        map: &mut BTreeMap<String, V>,
        mut value: impl FnMut(&mut V) -> bool,
    ) -> bool {
        let mut changed = false;
        for v in map.values_mut() {
            changed |= value(v);
        }
        if map.keys().any(|k| self.finds(k)) {
            let old = std::mem::take(map);
            map.extend(
                old.into_iter()
                    .map(|(k, v)| (self.text(&k).into_owned(), v)),
            );
            changed = true;
        }
        changed
    }

    /// Redacts every string (and object key) of a JSON value in place.
    pub fn json(&self, value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        if self.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => self.string(s),
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.json(v) | c),
            Value::Object(map) => {
                let mut changed = false;
                for v in map.values_mut() {
                    changed |= self.json(v);
                }
                if map.keys().any(|k| self.finds(k)) {
                    let old = std::mem::take(map);
                    map.extend(
                        old.into_iter()
                            .map(|(k, v)| (self.text(&k).into_owned(), v)),
                    );
                    changed = true;
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// Redacts every text field of a genome in place: the program, diff,
    /// error, artifacts, prompt, raw reply, metadata and metric names. True
    /// when one changed.
    pub fn genome_in_place(&self, g: &mut Genome) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut changed = false;
        if let Some(clean) = g.content.map_texts(|t| match self.text(t) {
            Cow::Borrowed(_) => None,
            Cow::Owned(clean) => Some(clean),
        }) {
            g.content = clean;
            changed = true;
        }
        for s in [
            &mut g.diff,
            &mut g.error,
            &mut g.response,
            &mut g.fitness_metric,
        ]
        .into_iter()
        .flatten()
        {
            changed |= self.string(s);
        }
        if let Some(p) = &mut g.prompt {
            changed |= self.string(&mut p.system);
            changed |= self.string(&mut p.user);
        }
        changed |= self.map(&mut g.artifacts, |v| self.string(v));
        changed |= self.map(&mut g.private, |v| self.string(v));
        changed |= self.map(&mut g.scores, |_| false);
        changed |= self.map(&mut g.metadata.features, |_| false);
        if let Some(m) = &mut g.metadata.model {
            changed |= self.string(m);
        }
        changed |= self.string(&mut g.metadata.patch_type);
        if let Some(run) = &mut g.agent {
            for s in agent_texts_mut(run) {
                changed |= self.string(s);
            }
        }
        changed
    }

    /// A redacted copy of `g`, or `None` when it holds no secret (the
    /// common case costs a scan, no copy).
    pub fn genome(&self, g: &Genome) -> Option<Genome> {
        if self.is_empty() || !texts(g).any(|t| self.finds(t)) {
            return None;
        }
        let mut copy = g.clone();
        self.genome_in_place(&mut copy).then_some(copy)
    }
}

/// True when `text` may hold an escaped character (`\u` or `\/`).
fn escaped(text: &[u8]) -> bool {
    text.windows(2)
        .any(|w| w[0] == b'\\' && (w[1] == b'u' || w[1] == b'/' || w[1] == b'\\'))
}

/// One decoded unit of text at a position: the character's bytes as a JSON
/// string (at any depth of escaping) gives them, and where it ends.
enum Unit {
    /// The unit's bytes (a raw byte, or an escape's character) and its end.
    Bytes([u8; 4], usize, usize),
    /// The text ends inside the unit (an escape cut short).
    Short,
}

/// The unit at `at` of `text`.
fn unit(text: &[u8], at: usize) -> Unit {
    let b = text[at];
    if b != b'\\' {
        return Unit::Bytes([b, 0, 0, 0], 1, at + 1);
    }
    // A run of backslashes is one escape at some depth of JSON in JSON.
    let mut j = at;
    while j < text.len() && text[j] == b'\\' {
        j += 1;
        if j - at > RUN_LIMIT {
            return Unit::Bytes([b'\\', 0, 0, 0], 1, at + 1);
        }
    }
    let Some(&next) = text.get(j) else {
        return Unit::Short;
    };
    match next {
        b'/' => Unit::Bytes([b'/', 0, 0, 0], 1, j + 1),
        b'u' | b'U' => {
            let Some(hex) = text.get(j + 1..j + 5) else {
                return if text[j + 1..].iter().all(u8::is_ascii_hexdigit) {
                    Unit::Short
                } else {
                    Unit::Bytes([b'\\', 0, 0, 0], 1, at + 1)
                };
            };
            let code = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32);
            match code {
                Some(c) => {
                    let mut buf = [0u8; 4];
                    let n = c.encode_utf8(&mut buf).len();
                    Unit::Bytes(buf, n, j + 5)
                }
                None => Unit::Bytes([b'\\', 0, 0, 0], 1, at + 1),
            }
        }
        _ => Unit::Bytes([b'\\', 0, 0, 0], 1, at + 1),
    }
}

/// Longest run of backslashes read as one escape.
const RUN_LIMIT: usize = 64;

/// What matching a secret from one position found.
enum Found {
    /// The secret, ending (exclusive) at this position.
    Whole(usize),
    /// Not the secret.
    No,
    /// The text ends before it could tell.
    Short,
}

/// Matches the secrets of a redactor against decoded text.
struct Scan<'r> {
    redactor: &'r Redactor,
    /// Bytes that may start a secret: its first byte, or a backslash.
    starts: [bool; 256],
}

impl<'r> Scan<'r> {
    fn new(redactor: &'r Redactor) -> Self {
        let mut starts = [false; 256];
        starts[usize::from(b'\\')] = true;
        for s in &redactor.secrets {
            if let Some(&b) = s.value.as_bytes().first() {
                starts[usize::from(b)] = true;
            }
        }
        Self { redactor, starts }
    }

    /// Whether `secret` starts at `at`.
    fn at(text: &[u8], at: usize, secret: &[u8]) -> Found {
        let (mut i, mut k) = (at, 0);
        while k < secret.len() {
            if i >= text.len() {
                return Found::Short;
            }
            match unit(text, i) {
                Unit::Short => return Found::Short,
                Unit::Bytes(bytes, n, end) => {
                    for b in &bytes[..n] {
                        if k >= secret.len() || secret[k] != *b {
                            return Found::No;
                        }
                        k += 1;
                    }
                    i = end;
                }
            }
        }
        Found::Whole(i)
    }

    /// The first secret from `from` on: (start, end, index of the secret);
    /// `whole`: the text is complete (else a secret cut off by its end
    /// stops the search there: `Err(start)`).
    fn next_match(
        &mut self,
        text: &[u8],
        from: usize,
        whole: bool,
    ) -> Option<Result<(usize, usize, usize), usize>> {
        let mut i = from;
        while i < text.len() {
            if self.starts[usize::from(text[i])] {
                let mut short = false;
                for (n, s) in self.redactor.secrets.iter().enumerate() {
                    match Self::at(text, i, s.value.as_bytes()) {
                        Found::Whole(end) => return Some(Ok((i, end, n))),
                        Found::Short => short = true,
                        Found::No => {}
                    }
                }
                if short && !whole {
                    return Some(Err(i));
                }
            }
            i += 1;
        }
        None
    }
}

/// A redactor over text that comes in pieces: each piece's text is given
/// back with secrets replaced, less its end when that may be the start of
/// a secret the next piece completes (held until then, or
/// [`RedactStream::finish`]).
pub struct RedactStream<'r> {
    scan: Scan<'r>,
    pending: Vec<u8>,
}

impl<'r> RedactStream<'r> {
    fn new(redactor: &'r Redactor) -> Self {
        Self {
            scan: Scan::new(redactor),
            pending: Vec::new(),
        }
    }

    /// The next piece; what may be passed on of the text so far.
    pub fn push(&mut self, piece: &[u8]) -> Vec<u8> {
        if self.scan.redactor.is_empty() {
            return piece.to_vec();
        }
        self.pending.extend_from_slice(piece);
        self.drain(false)
    }

    /// The text held back, redacted: the stream ended.
    pub fn finish(mut self) -> Vec<u8> {
        self.drain(true)
    }

    fn drain(&mut self, whole: bool) -> Vec<u8> {
        let text = std::mem::take(&mut self.pending);
        let mut out = Vec::with_capacity(text.len());
        let mut from = 0;
        loop {
            match self.scan.next_match(&text, from, whole) {
                Some(Ok((start, end, n))) => {
                    out.extend_from_slice(&text[from..start]);
                    out.extend_from_slice(self.scan.redactor.secrets[n].marker.as_bytes());
                    from = end;
                }
                Some(Err(start)) => {
                    out.extend_from_slice(&text[from..start]);
                    self.pending = text[start..].to_vec();
                    return out;
                }
                None => {
                    out.extend_from_slice(&text[from..]);
                    return out;
                }
            }
        }
    }
}

/// Every text of a genome that [`Redactor::genome_in_place`] redacts.
fn texts(g: &Genome) -> impl Iterator<Item = &str> {
    let options = [
        &g.diff,
        &g.error,
        &g.response,
        &g.fitness_metric,
        &g.metadata.model,
    ];
    let prompt = g
        .prompt
        .iter()
        .flat_map(|p| [p.system.as_str(), p.user.as_str()]);
    let files = g.content.files().filter_map(|(_, b)| b.as_text());
    [g.metadata.patch_type.as_str()]
        .into_iter()
        .chain(files)
        .chain(options.into_iter().flatten().map(String::as_str))
        .chain(prompt)
        .chain(
            g.artifacts
                .iter()
                .flat_map(|(k, v)| [k.as_str(), v.as_str()]),
        )
        .chain(g.private.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
        .chain(g.scores.keys().map(String::as_str))
        .chain(g.metadata.features.keys().map(String::as_str))
        .chain(g.agent.iter().flat_map(|run| agent_texts(run)))
}

/// Every text of a coding agent's record: its command line, output,
/// relayed steps, dropped paths and notes.
fn agent_texts(run: &crate::engine::agent_run::AgentRun) -> impl Iterator<Item = &str> {
    let exit = match &run.exit {
        crate::engine::agent_run::AgentExit::Failed(s)
        | crate::engine::agent_run::AgentExit::NotStarted(s) => Some(s.as_str()),
        _ => None,
    };
    run.command
        .iter()
        .chain(&run.dropped)
        .map(String::as_str)
        .chain([run.stdout.as_str(), run.stderr.as_str()])
        .chain(run.notes.as_deref())
        .chain(exit)
        .chain(run.steps.iter().flat_map(|s| {
            [s.route.as_str(), s.request.as_str(), s.response.as_str()]
                .into_iter()
                .chain(s.refused.as_deref())
        }))
}

/// The same texts, to redact in place.
fn agent_texts_mut(run: &mut crate::engine::agent_run::AgentRun) -> Vec<&mut String> {
    let mut out: Vec<&mut String> = Vec::new();
    out.extend(run.command.iter_mut());
    out.extend(run.dropped.iter_mut());
    out.push(&mut run.stdout);
    out.push(&mut run.stderr);
    out.extend(run.notes.iter_mut());
    match &mut run.exit {
        crate::engine::agent_run::AgentExit::Failed(s)
        | crate::engine::agent_run::AgentExit::NotStarted(s) => out.push(s),
        _ => {}
    }
    for s in &mut run.steps {
        out.push(&mut s.route);
        out.push(&mut s.request);
        out.push(&mut s.response);
        out.extend(s.refused.iter_mut());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_is_replaced_by_a_marker_naming_where_it_lives() {
        let r = Redactor::new([
            ("$OPENAI_API_KEY".to_owned(), "sk-abcdef123456".to_owned()),
            ("the api_base password".to_owned(), "hunter22".to_owned()),
            ("$SHORT".to_owned(), "abc".to_owned()),
        ]);
        assert_eq!(
            r.len(),
            2,
            "a value shorter than {MIN_SECRET_LEN} is left out"
        );
        assert_eq!(
            r.text("k=sk-abcdef123456; again sk-abcdef123456, pw hunter22, abc"),
            "k=[redacted: $OPENAI_API_KEY]; again [redacted: $OPENAI_API_KEY], pw [redacted: the api_base password], abc"
        );
        assert!(matches!(r.text("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::new([]).is_empty());
    }

    #[test]
    fn escaped_keys_are_found_at_any_depth_and_in_pieces() {
        let key = "sk-live/0123456789";
        let r = Redactor::new([("$K".to_owned(), key.to_owned())]);
        let all: String = key
            .chars()
            .map(|c| format!("\\u{:04X}", c as u32))
            .collect();
        for form in [
            all.clone(),
            all.replace('\\', "\\\\"),
            key.replace('/', "\\/"),
            "sk\\u002dlive\\\\/0123456789".to_owned(),
        ] {
            let text = format!("{{\"a\": \"x {form} y\"}}");
            assert!(r.finds(&text), "{form}");
            let clean = r.text(&text);
            assert_eq!(clean, "{\"a\": \"x [redacted: $K] y\"}", "{form}");
            // In pieces, cut anywhere.
            for cut in 0..text.len() {
                let mut s = r.stream();
                let mut out = s.push(&text.as_bytes()[..cut]);
                out.extend(s.push(&text.as_bytes()[cut..]));
                out.extend(s.finish());
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    clean,
                    "{form} cut at {cut}"
                );
            }
        }
        // Held back only while it may be the key.
        let mut s = r.stream();
        assert_eq!(s.push(b"data: sk-li"), b"data: ");
        assert_eq!(s.push(b"ght\n\n"), b"sk-light\n\n");
        assert_eq!(s.push(b"\\u00"), b"");
        assert_eq!(s.push(b"41"), b"\\u0041");
        assert!(!r.finds("sk-live/012345678 \\u0041 \\\\n"));
    }

    #[test]
    fn a_genome_and_json_are_redacted_everywhere() {
        let key = "sk-live-0123456789";
        let r = Redactor::new([("$K".to_owned(), key.to_owned())]);
        let mut g = Genome {
            content: format!("print('{key}')").into(),
            error: Some(format!("boom {key}")),
            response: Some(key.to_owned()),
            prompt: Some(crate::engine::genome::Prompt {
                system: String::new(),
                user: format!("stdout: {key}"),
            }),
            ..Genome::default()
        };
        g.artifacts.insert("stdout".into(), format!("{key}\n"));
        g.artifacts.insert(format!("named {key}"), "x".into());
        g.scores.insert(key.to_owned(), 1.0);
        g.private.insert("p".into(), key.to_owned());
        let clean = r.genome(&g).expect("changed");
        let text = serde_json::to_string(&clean).unwrap_or_default();
        assert!(!text.contains(key), "{text}");
        assert!(text.contains("[redacted: $K]"));
        assert_eq!(clean.scores.values().copied().collect::<Vec<_>>(), [1.0]);
        assert!(r.genome(&clean).is_none(), "nothing left to redact");
        let mut v = serde_json::json!({"notes": [format!("a {key}")], key: 1});
        assert!(r.json(&mut v));
        assert!(!v.to_string().contains(key), "{v}");
    }
}
