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
//!
//! # The hub
//!
//! A hub is files, not a service: a **hub folder** that publishing writes and git versions, and a
//! **static site** built from it that anything serving files can host. Pulling reads either.
//!
//! ```text
//! HUB/hub.json                           {"format": 1}: marks the folder (publish and build refuse a folder without it)
//! HUB/NS/NAME/versions.json              [{version, published}] oldest first; the last is the latest
//! HUB/NS/NAME/VERSION/card.yaml          the card as published: written once, never rewritten
//! HUB/NS/NAME/VERSION/README.md          the generated README (with the leaderboard's Results section, if any)
//! HUB/NS/NAME/VERSION/results.json       the card's leaderboard line (task, model, best mean and interval, iterations, seeds, cost)
//! ```
//!
//! - `folder.rs` publishes: `check_card` (names usable as folder names, the card validates) → the
//!   version is new (a name with versions needs an explicit new `--version`: the name collision
//!   rule) → `bundle_texts` (the same texts and secret scan as `export`; `results.json` is scanned
//!   too) → files written (temporary file + rename) → `versions.json` → `git add NS/NAME && git
//!   commit`. Nothing is written before every check has passed.
//! - `site/` turns the folder into pages. Every page is made by string building with `html::esc` on
//!   every piece of card text; README Markdown goes through pulldown-cmark with raw HTML turned
//!   into text and link targets other than relative, `http(s)` and `mailto` dropped. The YAML
//!   highlighter only wraps spans around the card's text, so the element's text is the published
//!   `card.yaml` byte for byte (the browser test checks it). `blocks.rs` repeats the studio
//!   canvas's layout numbers and light palette (the engine has no egui). Links are relative, so the
//!   site works from any path and from `file://`; JavaScript only adds search, Copy and column
//!   sorting: their controls are hidden (`[hidden]`, forced by the stylesheet) until the script
//!   shows them, and the script makes the sortable headings buttons, so a reader without it sees no
//!   control that does nothing.
//! - `index.json` is the contract between the site and `pull.rs`: each card's versions with the
//!   relative path of their raw `card.yaml`. A pull reads it, follows the path (which must stay on
//!   the site), loads the card strictly (`ValidCard::from_yaml`, so errors carry the URL with line
//!   and column), checks it is the card asked for, and only then writes the per-user cache
//!   (`ProjectDirs` cache dir `/hub/HUB-KEY/NS/NAME/VERSION/`, `source.json` beside it). A folder
//!   hub is read directly.
//! - `serve.rs` is a preview, not a web server: loopback only, GET/HEAD, paths confined to the site
//!   folder.
//! - The studio reaches the hub through the same functions on a job thread: `pull::list_cards` (a
//!   folder's `versions.json` and latest cards, or a site's `index.json`) fills the library's hub
//!   shelf (`library.rs` `HubShelf`, searched in memory), `pull::pull_into` opens a card (`pull`
//!   with the cache folder given, so tests and embedders keep their own), `HubFolder::publish` is
//!   the Details tab's Publish to hub (`editor/publish.rs`), whose refusals `app/hub.rs` words for
//!   the form instead of the command line's flags, and `pull::published_in` lists where the card is
//!   published.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::engine::card::{Card, CardErrors};
use crate::engine::registry::Registry;

pub mod folder;
pub mod pull;
mod readme;
mod secrets;
pub mod serve;
pub mod site;

pub use readme::render_readme;
use secrets::llm_endpoint;
pub use secrets::{find_secret, secret_env_values};

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
    #[error("{}: holds {what}; a card is never shared with a secret in it (keep keys in the environment)", path.display())]
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
    /// The folder is not a hub (no or a bad `hub.json`), or a file of the
    /// hub is not what it should be.
    #[error("{}: not a hub: {reason}", path.display())]
    NotAHub { path: PathBuf, reason: String },
    /// The name has versions already and no new version was given.
    #[error(
        "`{card}` is already published (versions {versions}); publish a new version with --version, \
         or choose another name or --namespace"
    )]
    Taken { card: String, versions: String },
    /// The version is published already (versions are never overwritten).
    #[error("`{card}` version `{version}` is already published; versions are never overwritten")]
    VersionExists { card: String, version: String },
    /// The leaderboard to attach cannot be read or does not have the card.
    #[error("--results: {0}")]
    Results(String),
    /// A git command in the hub folder failed.
    #[error("{}: {message}", path.display())]
    Git { path: PathBuf, message: String },
    /// A file or path refused (see [`crate::engine::foreign`]).
    #[error(transparent)]
    Refused(#[from] crate::engine::foreign::Refused),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> HubError + '_ {
    move |source| HubError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------

fn check_path_name(what: &str, value: &str) -> Option<String> {
    crate::engine::foreign::check_name(what, value)
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
    export_bundle_with_results(card, registry, out_dir, known, None)
}

/// [`export_bundle_checked`] with `results` (a Markdown section, e.g. a
/// leaderboard's "Results") appended to the README; the secret scan covers it.
pub fn export_bundle_with_results(
    card: &Card,
    registry: &Registry,
    out_dir: &Path,
    known: &[(String, String)],
    results: Option<&str>,
) -> Result<PathBuf, HubError> {
    check_card(card, registry)?;
    let ns_dir = out_dir.join(&card.namespace);
    let bundle = ns_dir.join(&card.name);
    let card_path = bundle.join(CARD_FILE);
    let readme_path = bundle.join(README_FILE);
    let archive_path = ns_dir.join(format!("{}.tar.gz", card.name));
    let (yaml, readme) = bundle_texts(card, registry, &bundle, known, results)?;

    fs::create_dir_all(&bundle).map_err(io_err(&bundle))?;
    write_atomic(&card_path, yaml.as_bytes())?;
    write_atomic(&readme_path, readme.as_bytes())?;
    let tgz = build_archive(&card.name, &[(CARD_FILE, &yaml), (README_FILE, &readme)])
        .map_err(io_err(&archive_path))?;
    write_atomic(&archive_path, &tgz)?;
    Ok(bundle)
}

/// The `card.yaml` and `README.md` texts of a bundle of `card` (which must
/// already have passed [`check_card`]), after the secret scan: an error names
/// the file under `bundle` that would have held the secret.
pub(crate) fn bundle_texts(
    card: &Card,
    registry: &Registry,
    bundle: &Path,
    known: &[(String, String)],
    results: Option<&str>,
) -> Result<(String, String), HubError> {
    let card_path = bundle.join(CARD_FILE);
    let readme_path = bundle.join(README_FILE);
    // Where this copy came from is not shared: whoever pulls or imports the
    // bundle records where they got it (see `crate::engine::provenance`).
    let mut shared = card.clone();
    shared.provenance = None;
    let yaml = shared.to_yaml();
    let mut readme = render_readme(card, registry);
    if let Some(results) = results {
        readme.push('\n');
        readme.push_str(results);
    }
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
    Ok((yaml, readme))
}

/// The card's namespace and name are usable as folder names and the card
/// validates against `registry` (a bundle must load again).
pub(crate) fn check_card(card: &Card, registry: &Registry) -> Result<(), HubError> {
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
    Ok(())
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
        // A bundle's card is a file of the folder: a link is not followed
        // (it could point anywhere, and an error would quote what it found).
        let kind = fs::symlink_metadata(&card).map(|m| m.file_type());
        if kind.as_ref().is_ok_and(fs::FileType::is_symlink) {
            return Err(HubError::NotABundle {
                path: path.to_path_buf(),
                reason: format!(
                    "its {CARD_FILE} is a symbolic link; a bundle's card must be a regular file"
                ),
            });
        }
        if !kind.is_ok_and(|k| k.is_file()) {
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

/// The provenance of a card imported now from the bundle at `path` (a
/// folder, a `card.yaml` or a `.tar.gz`): from elsewhere, whatever the
/// bundle's card says (see [`crate::engine::provenance`]).
pub fn bundle_provenance(path: &Path) -> crate::engine::provenance::Provenance {
    crate::engine::provenance::Provenance::Bundle {
        bundle: path.display().to_string(),
        imported: folder::now_utc(),
    }
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

/// A bundle member's path by the one rule for a path written into a folder
/// ([`crate::engine::foreign::RelPath`]: plain components, no `..`, no
/// absolute path, nothing git reads as its own), after the `./` and a
/// folder's trailing `/` that tar writes; `None` for the archive's root.
fn member_path(raw: &Path) -> Result<Option<crate::engine::foreign::RelPath>, String> {
    let text = raw.to_str().ok_or_else(|| "is not UTF-8".to_owned())?;
    let mut trimmed = text.trim_end_matches('/');
    while let Some(rest) = trimmed.strip_prefix("./") {
        trimmed = rest;
    }
    if trimmed.is_empty() || trimmed == "." {
        return Ok(None);
    }
    crate::engine::foreign::RelPath::new(trimmed)
        .map(Some)
        .map_err(|e| e.to_string())
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
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() {
            continue;
        }
        let Some(rel) = member_path(&raw).map_err(unsafe_entry)? else {
            if kind.is_dir() {
                continue;
            }
            return Err(unsafe_entry("has an empty path".to_owned()));
        };
        let dest = tmp.0.join(rel.as_str());
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

    let (card_path, rel) = find_card(&tmp.0, archive)?;
    let text = fs::read_to_string(&card_path).map_err(|e| HubError::NotABundle {
        path: archive.to_path_buf(),
        reason: format!("cannot read {rel}: {e}"),
    })?;
    let origin = format!("{}!{rel}", archive.display());
    Ok(Card::from_yaml(&text, &origin, registry)?)
}

/// The single `card.yaml` of an unpacked bundle: at the top, or inside the one
/// top-level folder. Returns its path and its name inside the archive.
fn find_card(root: &Path, archive: &Path) -> Result<(PathBuf, String), HubError> {
    let not_a_bundle = |reason: String| HubError::NotABundle {
        path: archive.to_path_buf(),
        reason,
    };
    let top = root.join(CARD_FILE);
    if top.is_file() {
        return Ok((top, CARD_FILE.to_owned()));
    }
    let mut found = Vec::new();
    let entries = fs::read_dir(root)
        .map_err(|e| not_a_bundle(format!("cannot list the unpacked archive: {e}")))?;
    for entry in entries.flatten() {
        let candidate = entry.path().join(CARD_FILE);
        if entry.path().is_dir() && candidate.is_file() {
            let rel = format!("{}/{CARD_FILE}", entry.file_name().to_string_lossy());
            found.push((candidate, rel));
        }
    }
    match found.len() {
        0 => Err(not_a_bundle(format!(
            "no {CARD_FILE} at the top or in a top-level folder"
        ))),
        1 => Ok(found.remove(0)),
        _ => {
            let mut names: Vec<String> = found.into_iter().map(|(_, r)| r).collect();
            names.sort();
            Err(not_a_bundle(format!(
                "more than one card: {}",
                names.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_path_is_held_to_the_one_path_rule() {
        for bad in [
            "../evil",
            "a/../../evil",
            "/etc/passwd",
            "x/.git/config",
            "x/.GIT/hooks/post-checkout",
            "git~1/config",
        ] {
            assert!(member_path(Path::new(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            member_path(Path::new("./x/card.yaml"))
                .unwrap()
                .map(|r| r.to_string()),
            Some("x/card.yaml".to_owned())
        );
        assert_eq!(member_path(Path::new("./")).unwrap(), None);
        assert_eq!(
            member_path(Path::new("x/")).unwrap().map(|r| r.to_string()),
            Some("x".to_owned())
        );
    }

    /// A bundle that would unpack `.git/config` (git runs its
    /// `core.fsmonitor`) is refused whole, as one with `..` is.
    #[test]
    fn a_bundle_with_a_git_member_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("git.tar.gz");
        let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        builder
            .append_data(&mut h, "x/.git/config", &b"hi"[..])
            .unwrap();
        fs::write(&path, builder.into_inner().unwrap().finish().unwrap()).unwrap();
        let err = import_bundle(&path, &Registry::builtin()).unwrap_err();
        assert!(
            matches!(&err, HubError::UnsafeEntry { reason, .. } if reason.contains(".git")),
            "{err}"
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
}
