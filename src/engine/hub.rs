//! Hub bundles: a card exported as a shareable folder `NAMESPACE/NAME/` holding
//! `card.yaml` and a generated `README.md` (laid out like the hub's card
//! pages), plus `NAMESPACE/NAME.tar.gz` of that folder; and the way back in.
//!
//! Export refuses to write anything that looks like a secret: API keys, model
//! endpoints inside the `llm` settings, credentials in URLs, or the value of
//! any secret-looking environment variable. Import accepts a bundle folder, a
//! `card.yaml` file or a `.tar.gz`; archives are unpacked into a private
//! temporary folder with every entry checked (no absolute paths, no `..`, no
//! links, bounded size) and the card is then loaded strictly, so errors keep
//! their `file:line:col`.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::engine::card::{Card, CardErrors};
use crate::engine::component::{ComponentInfo, Slot};
use crate::engine::params::ParamValue;
use crate::engine::registry::Registry;

/// File name of the card inside a bundle.
pub const CARD_FILE: &str = "card.yaml";
/// File name of the generated README inside a bundle.
pub const README_FILE: &str = "README.md";
/// Largest total unpacked size accepted from an archive (bytes).
pub const MAX_ARCHIVE_BYTES: u64 = 10 * 1024 * 1024;
/// Most entries accepted from an archive.
pub const MAX_ARCHIVE_ENTRIES: usize = 1000;

/// Why an export or import failed. Every variant names the path involved.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The card to export does not validate (a bundle must load again).
    #[error("card `{card}` cannot be exported: {problems}")]
    InvalidCard { card: String, problems: String },
    /// The bundle would contain something that looks like a secret.
    #[error("{}: refusing to export: {what}", path.display())]
    Secret { path: PathBuf, what: String },
    /// An archive entry would land outside the unpack folder, or is not a
    /// plain file or folder.
    #[error("{}: unsafe archive entry `{entry}`: {reason}", archive.display())]
    UnsafeEntry {
        archive: PathBuf,
        entry: String,
        reason: String,
    },
    /// An archive is larger than [`MAX_ARCHIVE_BYTES`] or has more than
    /// [`MAX_ARCHIVE_ENTRIES`] entries.
    #[error("{}: archive too large: {reason}", archive.display())]
    TooLarge { archive: PathBuf, reason: String },
    /// The path is not a bundle folder, card file or bundle archive.
    #[error("{}: not a bundle: {reason}", path.display())]
    NotABundle { path: PathBuf, reason: String },
    /// The bundle's card has errors (each with `file:line:col`).
    #[error("{0}")]
    Card(#[from] CardErrors),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> HubError + '_ {
    move |source| HubError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------
// README
// ---------------------------------------------------------------------------

/// One line of text fit for a markdown table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// A block of free text, trimmed, or `None` when empty.
fn block(text: &str) -> Option<&str> {
    let t = text.trim();
    (!t.is_empty()).then_some(t)
}

/// `TypeName` (`kind`) of a slot, or the bare kind when it is not registered.
fn implementation(slot: Slot, card: &Card, registry: &Registry) -> (String, Option<ComponentInfo>) {
    let kind = &card.slot(slot).kind;
    match registry.entry(slot, kind) {
        Ok(entry) => (
            format!("`{}` (`{}`)", entry.info.type_name, entry.info.kind),
            Some(entry.info),
        ),
        Err(_) => (format!("`{kind}` (not registered here)"), None),
    }
}

fn kind_phrase(slot: Slot, card: &Card, registry: &Registry) -> String {
    let kind = &card.slot(slot).kind;
    match registry.entry(slot, kind) {
        Ok(entry) => format!("`{}` (`{}`)", entry.info.kind, entry.info.type_name),
        Err(_) => format!("`{kind}`"),
    }
}

/// The generated Algorithm section: the loop, told with this card's parts.
fn generated_algorithm(card: &Card, registry: &Registry) -> String {
    let g = &card.general;
    let mut s = String::new();
    let _ = write!(
        s,
        "Every iteration runs one pass of the Galapagos loop. The {policy} selection policy looks at the \
         {population} population and picks a parent together with a few inspiration programs. The {prompt} \
         prompt builder renders them, along with whatever the {memory} memory currently holds, into the model's \
         input. The {proposer} proposer asks the model for a change and turns its answer into a child program, \
         which the {evaluator} evaluator then scores with the task's own evaluator. The scored (or rejected) \
         child is admitted to the population, the selection policy observes the outcome so it can adapt, and \
         memory records what was learned.",
        policy = kind_phrase(Slot::SelectionPolicy, card, registry),
        population = kind_phrase(Slot::Population, card, registry),
        prompt = kind_phrase(Slot::PromptBuilder, card, registry),
        memory = kind_phrase(Slot::Memory, card, registry),
        proposer = kind_phrase(Slot::Proposer, card, registry),
        evaluator = kind_phrase(Slot::Evaluator, card, registry),
    );
    let _ = write!(
        s,
        "\n\nThe run lasts {} iterations. When a proposal cannot be parsed or evaluated it is drawn again up to {} \
         more time(s) with the parent held fixed, and up to {} iteration(s) are in flight at once.",
        g.max_iterations, g.inner_retry_times, g.parallel
    );
    s.push_str(
        "\n\n```text\n\
         for iteration in 1..=max_iterations:\n    \
         parent, inspirations = selection_policy.select(population)\n    \
         prompt = prompt_builder.build(parent, inspirations, memory.read())\n    \
         repeat up to 1 + inner_retry_times times:\n        \
         child = proposer.propose(prompt, parent)\n        \
         result = evaluator.evaluate(child)\n        \
         stop retrying once the child parsed and was scored\n    \
         population.add(child, result)\n    \
         selection_policy.observe(child, result)\n    \
         memory.write(child, result)\n\
         ```",
    );
    s
}

/// Render the hub README of `card`: title, summary, Overview, Algorithm,
/// Components (slot → implementation → role), Configuration (every key with
/// its default and the card's value), When to use and Source.
pub fn render_readme(card: &Card, registry: &Registry) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} (`{}`)\n", cell(card.display_title()), card.name);
    let summary = block(&card.summary).map_or_else(
        || {
            format!(
                "A Galapagos scaffold published as `{}/{}`.",
                card.namespace, card.name
            )
        },
        cell,
    );
    let _ = writeln!(out, "> {summary}\n");

    // Overview: the card's own overview, else its description.
    let overview = block(&card.overview);
    let description = block(&card.description);
    out.push_str("## Overview\n\n");
    match overview.or(description) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(
                out,
                "`{}` is a scaffold for LLM-driven program search built from the six standard Galapagos \
                 components; the table below says which implementation fills each slot.",
                card.name
            );
        }
    }
    out.push_str("\n\n");

    // Algorithm: the description when the Overview did not already use it.
    out.push_str("## Algorithm\n\n");
    match (overview, description) {
        (Some(_), Some(text)) => out.push_str(text),
        _ => out.push_str(&generated_algorithm(card, registry)),
    }
    out.push_str("\n\n");

    out.push_str("## Components\n\n");
    out.push_str(
        "The scaffold fills the six slots of the Galapagos loop (select, prompt, propose, evaluate, admit, \
         remember) as follows.\n\n",
    );
    out.push_str("| Slot | Implementation | Role |\n|---|---|---|\n");
    for slot in Slot::ALL {
        let (imp, info) = implementation(slot, card, registry);
        let role = match info {
            Some(info) if !info.summary.trim().is_empty() => {
                format!("{}. {}", slot.role(), info.summary.trim())
            }
            _ => slot.role().to_owned(),
        };
        let _ = writeln!(out, "| {} | {} | {} |", slot.title(), imp, cell(&role));
    }
    out.push('\n');

    out.push_str("## Configuration\n\n");
    for line in configuration_lines(card, registry) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');

    out.push_str("## When to use\n\n");
    match block(&card.when_to_use) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(
                out,
                "Use `{}` when its combination of selection policy ({}) and proposer ({}) suits your task: \
                 start from a small budget on the offline model to check that the task evaluator scores \
                 candidates as expected, then raise `general.max_iterations` and switch to a real model.",
                card.name,
                kind_phrase(Slot::SelectionPolicy, card, registry),
                kind_phrase(Slot::Proposer, card, registry),
            );
        }
    }
    out.push_str("\n\n");

    out.push_str("## Source\n\n");
    match block(&card.source) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(
                out,
                "Composed in Galapagos Studio and published as `{}/{}`.",
                card.namespace, card.name
            );
        }
    }
    let _ = writeln!(out, " License: {}.", cell(&card.license));
    out
}

/// A value as the Configuration section shows it (`""` for empty text).
fn show(value: &ParamValue) -> String {
    match value {
        ParamValue::Str(s) if s.is_empty() => "\"\"".to_owned(),
        v => cell(&v.display()),
    }
}

/// `- \`key\` (default) — doc; value: X` for every configurable key.
fn configuration_lines(card: &Card, registry: &Registry) -> Vec<String> {
    let mut lines = Vec::new();
    for slot in Slot::ALL {
        let spec = card.slot(slot);
        match registry.entry(slot, &spec.kind) {
            Ok(entry) => {
                let info = entry.info;
                for p in info.params {
                    lines.push(format!(
                        "- `{}.{}` ({}) — {}; value: {}",
                        slot.key(),
                        p.key,
                        entry.default_of(p.key).map_or_else(String::new, show),
                        cell(p.doc).trim_end_matches('.'),
                        show(&entry.value_or_default(&spec.params, p.key))
                    ));
                }
                for (key, value) in &spec.params.0 {
                    if !info.params.iter().any(|p| p.key == key) {
                        lines.push(format!(
                            "- `{}.{key}` — not a parameter of `{}`; value: {}",
                            slot.key(),
                            info.kind,
                            show(value)
                        ));
                    }
                }
            }
            Err(_) => {
                for (key, value) in &spec.params.0 {
                    lines.push(format!(
                        "- `{}.{key}` — parameter of the unregistered `{}`; value: {}",
                        slot.key(),
                        spec.kind,
                        show(value)
                    ));
                }
            }
        }
    }
    let g = &card.general;
    let d = crate::engine::card::General::default();
    let opt_f = |v: Option<f64>| v.map_or_else(|| "null".to_owned(), |f| format!("{f}"));
    let opt_u = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |u| u.to_string());
    lines.push(format!(
        "- `general.max_iterations` ({}) — number of loop iterations, the run's budget; value: {}",
        d.max_iterations, g.max_iterations
    ));
    lines.push(format!(
        "- `general.inner_retry_times` ({}) — extra proposals per iteration after a parse or evaluation \
         failure, parent held fixed; value: {}",
        d.inner_retry_times, g.inner_retry_times
    ));
    lines.push(format!(
        "- `general.parallel` ({}) — iterations in flight at once (1 keeps the strictly sequential \
         semantics); value: {}",
        d.parallel, g.parallel
    ));
    lines.push(format!(
        "- `general.max_cost_usd` ({}) — stop cleanly once the run has cost this much, when prices are \
         known; value: {}",
        opt_f(d.max_cost_usd),
        opt_f(g.max_cost_usd)
    ));
    lines.push(format!(
        "- `general.max_tokens` ({}) — stop cleanly once the run has used this many model tokens; \
         value: {}",
        opt_u(d.max_tokens),
        opt_u(g.max_tokens)
    ));
    lines.push(format!(
        "- `seed` (0) — seeds the run's random generator, so selection and sampling are reproducible; \
         value: {}",
        card.seed
    ));
    if let Some(llm) = &card.llm {
        let models: Vec<String> = llm
            .models
            .iter()
            .map(|m| format!("{} (weight {})", m.name, m.weight))
            .collect();
        lines.push(format!(
            "- `llm.models` (none) — model names and ensemble weights (endpoints and keys live in each \
             user's settings, never in the card); value: {}",
            if models.is_empty() {
                "none".to_owned()
            } else {
                models.join(", ")
            }
        ));
        let opt = |v: Option<f64>| v.map_or_else(|| "null".to_owned(), |f| format!("{f}"));
        lines.push(format!(
            "- `llm.temperature` (null) — sampling temperature for every model; value: {}",
            opt(llm.temperature)
        ));
        lines.push(format!(
            "- `llm.top_p` (null) — nucleus sampling cut-off for every model; value: {}",
            opt(llm.top_p)
        ));
        lines.push(format!(
            "- `llm.max_tokens` (null) — reply length limit for every model; value: {}",
            llm.max_tokens
                .map_or_else(|| "null".to_owned(), |t| t.to_string())
        ));
    }
    lines
}

// ---------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------

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
fn llm_endpoint(card: &Card) -> Option<String> {
    let llm = card.llm.as_ref()?;
    llm.models.iter().enumerate().find_map(|(i, m)| {
        m.name
            .contains("://")
            .then(|| format!("an endpoint in `llm.models[{i}].name`"))
    })
}

// ---------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------

fn check_path_name(what: &str, value: &str) -> Option<String> {
    let ok = !value.is_empty()
        && value != "."
        && value != ".."
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (!ok).then(|| format!("{what}: `{value}` must be letters, digits, `_` or `-`"))
}

/// Export `card` as a hub bundle under `out_dir`: writes
/// `out_dir/NAMESPACE/NAME/card.yaml`, `out_dir/NAMESPACE/NAME/README.md` and
/// `out_dir/NAMESPACE/NAME.tar.gz`, and returns the bundle folder.
///
/// The card must validate against `registry`. Nothing is written when the
/// card or README looks like it holds a secret (see [`find_secret`]; the
/// values of secret-named environment variables are checked too).
pub fn export_bundle(
    card: &Card,
    registry: &Registry,
    out_dir: &Path,
) -> Result<PathBuf, HubError> {
    export_bundle_checked(card, registry, out_dir, &secret_env_values())
}

/// [`export_bundle`] that also refuses any of the `known` (name, value)
/// secrets, e.g. keys held in the user's settings, besides those in the
/// environment.
pub fn export_bundle_checked(
    card: &Card,
    registry: &Registry,
    out_dir: &Path,
    known: &[(String, String)],
) -> Result<PathBuf, HubError> {
    let label = format!("{}/{}", card.namespace, card.name);
    let mut problems: Vec<String> = [
        check_path_name("namespace", &card.namespace),
        check_path_name("name", &card.name),
    ]
    .into_iter()
    .flatten()
    .collect();
    if problems.is_empty() {
        problems.extend(
            card.validate(registry)
                .into_iter()
                .map(|p| format!("{}: {}", p.field, p.message)),
        );
    }
    if !problems.is_empty() {
        return Err(HubError::InvalidCard {
            card: label,
            problems: problems.join("; "),
        });
    }

    let ns_dir = out_dir.join(&card.namespace);
    let bundle = ns_dir.join(&card.name);
    let card_path = bundle.join(CARD_FILE);
    let readme_path = bundle.join(README_FILE);
    let archive_path = ns_dir.join(format!("{}.tar.gz", card.name));

    let yaml = card.to_yaml();
    let readme = render_readme(card, registry);
    if let Some(what) = llm_endpoint(card) {
        return Err(HubError::Secret {
            path: card_path,
            what,
        });
    }
    for (path, text) in [(&card_path, &yaml), (&readme_path, &readme)] {
        if let Some(what) = find_secret(text, known) {
            return Err(HubError::Secret {
                path: path.clone(),
                what,
            });
        }
    }

    fs::create_dir_all(&bundle).map_err(io_err(&bundle))?;
    write_atomic(&card_path, yaml.as_bytes())?;
    write_atomic(&readme_path, readme.as_bytes())?;
    let tgz = build_archive(&card.name, &[(CARD_FILE, &yaml), (README_FILE, &readme)])
        .map_err(io_err(&archive_path))?;
    write_atomic(&archive_path, &tgz)?;
    Ok(bundle)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HubError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(io_err(path))
}

/// A gzip tar holding `folder/` and `folder/<file>` for each file.
fn build_archive(folder: &str, files: &[(&str, &str)]) -> io::Result<Vec<u8>> {
    let mtime = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let gz = GzEncoder::new(Vec::new(), Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_path(format!("{folder}/"))?;
    dir.set_mode(0o755);
    dir.set_size(0);
    dir.set_mtime(mtime);
    dir.set_cksum();
    tar.append(&dir, io::empty())?;
    for (name, text) in files {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_path(format!("{folder}/{name}"))?;
        h.set_mode(0o644);
        h.set_size(text.len() as u64);
        h.set_mtime(mtime);
        h.set_cksum();
        tar.append(&h, text.as_bytes())?;
    }
    tar.into_inner()?.finish()
}

// ---------------------------------------------------------------------------
// Import
// ---------------------------------------------------------------------------

/// Import a card from a bundle folder (holding `card.yaml`), a `card.yaml`
/// file, or a bundle `.tar.gz`. The card is validated against `registry`;
/// its errors name the file (inside an archive: `ARCHIVE!NAME/card.yaml`)
/// with line and column.
pub fn import_bundle(path: &Path, registry: &Registry) -> Result<Card, HubError> {
    let meta = fs::metadata(path).map_err(io_err(path))?;
    if meta.is_dir() {
        let card = path.join(CARD_FILE);
        if !card.is_file() {
            return Err(HubError::NotABundle {
                path: path.to_path_buf(),
                reason: format!("the folder has no {CARD_FILE}"),
            });
        }
        return Ok(Card::load(&card, registry)?);
    }
    if is_gzip(path)? {
        return import_archive(path, registry);
    }
    Ok(Card::load(path, registry)?)
}

fn is_gzip(path: &Path) -> Result<bool, HubError> {
    let mut magic = [0u8; 2];
    let mut f = fs::File::open(path).map_err(io_err(path))?;
    let mut read = 0;
    while read < 2 {
        match f.read(&mut magic[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(path)(e)),
        }
    }
    Ok(read == 2 && magic == [0x1f, 0x8b])
}

/// A reader that fails once more than `left` bytes have been read.
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(io::Error::other(CAPPED_MESSAGE));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

const CAPPED_MESSAGE: &str = "decompressed archive exceeds the size limit";

/// A private temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let base = std::env::temp_dir();
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!(
                "galapagos-import-{}-{nanos}-{n}",
                std::process::id()
            ));
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("could not create a temporary folder"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The entry's path as plain relative components, or why it is unsafe.
fn safe_relative(path: &Path) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err("contains `..`".to_owned()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("is an absolute path".to_owned());
            }
        }
    }
    Ok(out)
}

fn import_archive(archive: &Path, registry: &Registry) -> Result<Card, HubError> {
    let file = fs::File::open(archive).map_err(io_err(archive))?;
    // Headers and padding add to the payload; allow for them in the stream cap.
    let stream = Capped {
        inner: GzDecoder::new(file),
        left: MAX_ARCHIVE_BYTES + 1024 * 1024,
    };
    let tmp = TempDir::new().map_err(io_err(&std::env::temp_dir()))?;
    let archive_err = |e: io::Error| {
        if e.to_string().contains(CAPPED_MESSAGE) {
            HubError::TooLarge {
                archive: archive.to_path_buf(),
                reason: format!("more than {MAX_ARCHIVE_BYTES} bytes once decompressed"),
            }
        } else {
            HubError::NotABundle {
                path: archive.to_path_buf(),
                reason: format!("cannot read the archive: {e}"),
            }
        }
    };
    let mut tar = tar::Archive::new(stream);
    let mut total: u64 = 0;
    let mut count = 0usize;
    for entry in tar.entries().map_err(archive_err)? {
        let mut entry = entry.map_err(archive_err)?;
        count += 1;
        if count > MAX_ARCHIVE_ENTRIES {
            return Err(HubError::TooLarge {
                archive: archive.to_path_buf(),
                reason: format!("more than {MAX_ARCHIVE_ENTRIES} entries"),
            });
        }
        let raw = entry.path().map_err(archive_err)?.into_owned();
        let shown = raw.display().to_string();
        let unsafe_entry = |reason: String| HubError::UnsafeEntry {
            archive: archive.to_path_buf(),
            entry: shown.clone(),
            reason,
        };
        let rel = safe_relative(&raw).map_err(unsafe_entry)?;
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() {
            continue;
        }
        if rel.as_os_str().is_empty() {
            if kind.is_dir() {
                continue;
            }
            return Err(unsafe_entry("has an empty path".to_owned()));
        }
        let dest = tmp.0.join(&rel);
        if kind.is_dir() {
            fs::create_dir_all(&dest).map_err(io_err(&dest))?;
            continue;
        }
        if !kind.is_file() {
            return Err(unsafe_entry(
                "only plain files and folders are allowed (no links or devices)".to_owned(),
            ));
        }
        total = total.saturating_add(entry.size());
        if total > MAX_ARCHIVE_BYTES {
            return Err(HubError::TooLarge {
                archive: archive.to_path_buf(),
                reason: format!("more than {MAX_ARCHIVE_BYTES} bytes of files"),
            });
        }
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        if dest.exists() {
            return Err(unsafe_entry("appears twice in the archive".to_owned()));
        }
        let mut out = fs::File::create(&dest).map_err(io_err(&dest))?;
        io::copy(&mut (&mut entry).take(MAX_ARCHIVE_BYTES), &mut out).map_err(archive_err)?;
    }

    let (card_path, rel) = find_card(&tmp.0).map_err(|reason| HubError::NotABundle {
        path: archive.to_path_buf(),
        reason,
    })?;
    let text = fs::read_to_string(&card_path).map_err(|e| HubError::NotABundle {
        path: archive.to_path_buf(),
        reason: format!("cannot read {rel}: {e}"),
    })?;
    let origin = format!("{}!{rel}", archive.display());
    Ok(Card::from_yaml(&text, &origin, registry)?)
}

/// The single `card.yaml` of an unpacked bundle: at the top, or inside the one
/// top-level folder. Returns its path and its name inside the archive.
fn find_card(root: &Path) -> Result<(PathBuf, String), String> {
    let top = root.join(CARD_FILE);
    if top.is_file() {
        return Ok((top, CARD_FILE.to_owned()));
    }
    let mut found = Vec::new();
    let entries =
        fs::read_dir(root).map_err(|e| format!("cannot list the unpacked archive: {e}"))?;
    for entry in entries.flatten() {
        let candidate = entry.path().join(CARD_FILE);
        if entry.path().is_dir() && candidate.is_file() {
            let rel = format!("{}/{CARD_FILE}", entry.file_name().to_string_lossy());
            found.push((candidate, rel));
        }
    }
    match found.len() {
        0 => Err(format!(
            "no {CARD_FILE} at the top or in a top-level folder"
        )),
        1 => Ok(found.remove(0)),
        _ => {
            let mut names: Vec<String> = found.into_iter().map(|(_, r)| r).collect();
            names.sort();
            Err(format!("more than one card: {}", names.join(", ")))
        }
    }
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

    #[test]
    fn safe_relative_rejects_escapes() {
        assert!(safe_relative(Path::new("../evil")).is_err());
        assert!(safe_relative(Path::new("a/../../evil")).is_err());
        assert!(safe_relative(Path::new("/etc/passwd")).is_err());
        assert_eq!(
            safe_relative(Path::new("./x/card.yaml")).ok(),
            Some(PathBuf::from("x/card.yaml"))
        );
    }

    #[test]
    fn unpack_folder_is_removed_after_a_rejected_archive() {
        let dir = std::env::temp_dir().join(format!("galapagos-hub-unit-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.tar.gz");
        let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        let mut h = tar::Header::new_gnu();
        let name = b"x/../../escape";
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
        h.set_size(2);
        h.set_mode(0o644);
        h.set_cksum();
        builder.append(&h, &b"hi"[..]).unwrap();
        fs::write(&path, builder.into_inner().unwrap().finish().unwrap()).unwrap();
        let before = import_dirs();
        let err = import_bundle(&path, &Registry::builtin()).unwrap_err();
        assert!(matches!(err, HubError::UnsafeEntry { .. }), "{err}");
        assert_eq!(import_dirs(), before, "the unpack folder was left behind");
        fs::remove_dir_all(&dir).unwrap();
    }

    fn import_dirs() -> usize {
        let prefix = format!("galapagos-import-{}-", std::process::id());
        fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count()
    }

    #[test]
    fn empty_text_values_are_shown_quoted() {
        assert_eq!(show(&ParamValue::Str(String::new())), "\"\"");
        assert_eq!(show(&ParamValue::Int(3)), "3");
    }

    #[test]
    fn table_cells_stay_on_one_line() {
        assert_eq!(cell("a |b\n  c"), "a \\|b c");
    }
}
