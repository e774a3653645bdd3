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
//! credentials); a candidate that transforms a key before printing it
//! (reversed, encoded) is stopped by the first line, the evaluator's
//! environment allowlist and sandbox, not by this one.

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

    /// True when `text` holds a secret.
    pub fn finds(&self, text: &str) -> bool {
        self.secrets.iter().any(|s| text.contains(&s.value))
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
        Cow::Owned(out)
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
