//! Pulling a card by name, `NAMESPACE/NAME[@VERSION]`, from the configured
//! hubs. A hub is given in any of three forms, wherever one is given
//! (`--hub`, the settings file's `hubs`, the studio): a hub folder on disk
//! (`hub.json`, what `hub publish` writes to) or a built hub site's folder
//! (`index.json`, what `hub build` writes), each as a path or a `file://`
//! address; or the HTTP(S) address of a built hub site. A site's
//! `index.json` names each version's raw `card.yaml`. The card is
//! checked as strictly as a local file; only then is it cached per user
//! (`~/.cache/galapagos/hub/` on Linux) beside a `source.json` saying which
//! hub, version and address it came from. A hub that is down or answers
//! with something that is not a hub is an error naming its address, and
//! nothing is cached.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::folder::HubFolder;
use super::site::{INDEX_JSON, SiteIndex};
use super::{CARD_FILE, check_path_name};
use crate::engine::card::{CardErrors, ValidCard};
use crate::engine::foreign::{Folder, Limit, Links, RelPath, Target};
use crate::engine::provenance::Provenance as CardProvenance;
use crate::engine::registry::Registry;

/// The largest `index.json` read from a hub site.
const MAX_INDEX_BYTES: usize = 16 * 1024 * 1024;
/// The largest `card.yaml` read from a hub site.
const MAX_CARD_BYTES: usize = 1024 * 1024;
/// How long one request to a hub site may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// `NAMESPACE/NAME[@VERSION]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubRef {
    pub namespace: String,
    pub name: String,
    pub version: Option<String>,
}

impl std::fmt::Display for HubRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if let Some(v) = &self.version {
            write!(f, "@{v}")?;
        }
        Ok(())
    }
}

impl HubRef {
    /// Parse `NAMESPACE/NAME[@VERSION]` (names of letters, digits, `_`, `-`).
    pub fn parse(text: &str) -> Option<Self> {
        let (path, version) = match text.split_once('@') {
            Some((p, v)) => (p, Some(v)),
            None => (text, None),
        };
        let (namespace, name) = path.split_once('/')?;
        if check_path_name("", namespace).is_some() || check_path_name("", name).is_some() {
            return None;
        }
        if let Some(v) = version
            && !super::folder::valid_version(v)
        {
            return None;
        }
        Some(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            version: version.map(str::to_owned),
        })
    }
}

/// Where a pulled card came from (`source.json` in the cache).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The hub as configured (folder or address).
    pub hub: String,
    pub namespace: String,
    pub name: String,
    pub version: String,
    /// When that version was published.
    pub published: String,
    /// The file or URL the card was read from.
    pub source: String,
    /// When it was pulled, `YYYY-MM-DD HH:MM:SS UTC`.
    pub pulled: String,
}

/// A pulled, checked and cached card.
#[derive(Debug)]
pub struct Pulled {
    /// The card, its provenance the hub it came from.
    pub card: ValidCard,
    pub provenance: Provenance,
    /// The cached `card.yaml`.
    pub cached: PathBuf,
}

impl Provenance {
    /// Where the card came from, as the card records it
    /// ([`CardProvenance::Hub`]).
    pub fn of_card(&self) -> CardProvenance {
        CardProvenance::Hub {
            hub: self.hub.clone(),
            card: format!("{}/{}@{}", self.namespace, self.name, self.version),
            source: self.source.clone(),
            pulled: self.pulled.clone(),
        }
    }
}

/// Load and check the card file `path` a person names, with its provenance:
/// what the file records, except that a file of the per-user hub cache is
/// from its hub (see [`crate::engine::provenance`]).
pub fn load_card_file(path: &Path, registry: &Registry) -> Result<ValidCard, CardErrors> {
    let card = ValidCard::load(path, registry)?;
    Ok(match cached_provenance(path, &cache_dir()) {
        Some(from) => card.with_provenance(Some(from)),
        None => card,
    })
}

/// The provenance of a card file in the hub cache `cache`
/// (`cache/HUB/NAMESPACE/NAME/VERSION/card.yaml` beside its `source.json`),
/// or `None` for a file elsewhere. A cached card whose note is missing or
/// unreadable is still from a hub.
fn cached_provenance(path: &Path, cache: &Path) -> Option<CardProvenance> {
    let file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let cache = std::fs::canonicalize(cache).unwrap_or_else(|_| cache.to_path_buf());
    if !file.starts_with(&cache) {
        return None;
    }
    let note = std::fs::read_to_string(file.with_file_name("source.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Provenance>(&t).ok());
    Some(match note {
        Some(p) => p.of_card(),
        None => CardProvenance::Hub {
            hub: "unknown (the hub cache's note is missing)".to_owned(),
            card: String::new(),
            source: file.display().to_string(),
            pulled: String::new(),
        },
    })
}

/// The hubs to pull from: those given (`--hub`) first, then the user
/// settings file's `hubs`.
pub fn configured_hubs(given: &[String]) -> Result<Vec<String>, String> {
    let mut hubs: Vec<String> = given.to_vec();
    let settings = crate::engine::model::load_user_settings().map_err(|e| e.to_string())?;
    for h in settings.hubs {
        if !hubs.contains(&h) {
            hubs.push(h);
        }
    }
    Ok(hubs)
}

/// The per-user cache of pulled cards.
pub fn cache_dir() -> PathBuf {
    directories::ProjectDirs::from("org", "galapagos", "galapagos")
        .map_or_else(
            || std::env::temp_dir().join("galapagos-cache"),
            |d| d.cache_dir().to_path_buf(),
        )
        .join("hub")
}

fn is_url(hub: &str) -> bool {
    let lower = hub.trim().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Where a hub is, by what it was given as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HubPlace {
    /// A hub folder (`hub.json`): cards are published into it.
    Folder(PathBuf),
    /// A built hub site's folder on disk (`index.json`).
    SiteDir(PathBuf),
    /// A built hub site at an HTTP(S) address.
    SiteUrl(String),
}

/// Where `hub` is: an HTTP(S) address is a site; a path or `file://`
/// address is a hub folder when it holds `hub.json`, a built site when it
/// holds `index.json`; anything else an error saying which forms a hub
/// takes.
pub fn locate(hub: &str) -> Result<HubPlace, String> {
    let given = hub.trim();
    if is_url(given) {
        return Ok(HubPlace::SiteUrl(given.to_owned()));
    }
    let dir = local_path(given)?;
    if dir.join(super::folder::HUB_FILE).is_file() {
        Ok(HubPlace::Folder(dir))
    } else if dir.join(INDEX_JSON).is_file() {
        Ok(HubPlace::SiteDir(dir))
    } else if !dir.is_dir() {
        Err(format!("{given}: no such folder"))
    } else {
        Err(format!(
            "{given}: not a hub: a hub folder has {} (`galapagos hub init`), a built hub site has \
             {INDEX_JSON} (`galapagos hub build`)",
            super::folder::HUB_FILE
        ))
    }
}

/// The folder a hub given as a path or a `file://` address is in (nothing
/// is read); an error for an address of another scheme or a `file://`
/// address that is not a local path.
pub fn local_path(hub: &str) -> Result<PathBuf, String> {
    let given = hub.trim();
    if given
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("file://"))
    {
        reqwest::Url::parse(given)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .ok_or_else(|| {
                format!("{given}: not a file:// address of a folder (file:///path/to/hub)")
            })
    } else if given.contains("://") {
        Err(format!(
            "{given}: a hub is a folder, a file:// address or an http(s):// address"
        ))
    } else {
        Ok(PathBuf::from(given))
    }
}

/// The hub folder `hub` names (a path or `file://` address of a folder
/// with `hub.json`), when it names one: where cards can be published.
pub fn hub_folder(hub: &str) -> Option<PathBuf> {
    match locate(hub) {
        Ok(HubPlace::Folder(dir)) => Some(dir),
        _ => None,
    }
}

/// A folder name for a hub: readable, and unique by a hash of the address.
fn hub_key(hub: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, hub.as_bytes());
    let hex: String = digest.as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let slug: String = hub
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_start_matches("file://")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    format!("{slug}-{hex}")
}

/// What one hub has for a name: `Ok(None)` when it does not have it.
struct Found {
    yaml: String,
    version: String,
    published: String,
    source: String,
}

fn from_folder(dir: &Path, r: &HubRef) -> Result<Option<Found>, String> {
    let hub = HubFolder::open(dir).map_err(|e| e.to_string())?;
    let Some(list) = hub
        .versions(&r.namespace, &r.name)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let entry = match &r.version {
        Some(v) => list
            .versions
            .iter()
            .find(|e| &e.version == v)
            .ok_or_else(|| {
                no_version(
                    r,
                    dir.display().to_string(),
                    list.versions.iter().map(|e| e.version.as_str()),
                )
            })?,
        None => match list.latest() {
            Some(e) => e,
            None => return Ok(None),
        },
    };
    let path = hub
        .version_dir(&r.namespace, &r.name, &entry.version)
        .join(CARD_FILE);
    let yaml = hub
        .read(&r.namespace, &r.name, &entry.version, CARD_FILE)
        .map_err(|e| e.to_string())?;
    Ok(Some(Found {
        yaml,
        version: entry.version.clone(),
        published: entry.published.clone(),
        source: path.display().to_string(),
    }))
}

fn no_version<'a>(r: &HubRef, hub: String, have: impl Iterator<Item = &'a str>) -> String {
    format!(
        "{hub}: {}/{} has no version `{}` (it has {})",
        r.namespace,
        r.name,
        r.version.as_deref().unwrap_or(""),
        have.collect::<Vec<_>>().join(", ")
    )
}

/// An error with its causes ("connection refused" is a cause of reqwest's
/// error, not its message).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

async fn get(
    client: &reqwest::Client,
    url: &str,
    max: usize,
    what: &str,
) -> Result<Vec<u8>, String> {
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{url}: cannot reach the hub: {}", error_chain(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url}: the hub answered {status} for its {what}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("{url}: reading the {what} failed: {e}"))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > max {
            return Err(format!("{url}: the {what} is larger than {max} bytes"));
        }
    }
    Ok(body)
}

/// The version of `r` a site's index lists, and its card's path on the
/// site: `Ok(None)` when the index does not list the card.
fn pick<'i>(
    index: &'i SiteIndex,
    r: &HubRef,
    index_label: &str,
) -> Result<Option<&'i super::site::IndexVersion>, String> {
    let Some(card) = index
        .cards
        .iter()
        .find(|c| c.namespace == r.namespace && c.name == r.name)
    else {
        return Ok(None);
    };
    let want = r.version.as_deref().unwrap_or(&card.latest);
    let Some(entry) = card.versions.iter().find(|v| v.version == want) else {
        return Err(no_version(
            r,
            index_label.to_owned(),
            card.versions.iter().map(|v| v.version.as_str()),
        ));
    };
    // The index's names are names and its paths stay on the site: a
    // version becomes a folder of the cache.
    if !super::folder::valid_version(&entry.version) {
        return Err(format!(
            "{index_label}: refused: it lists version `{}` of {}/{}; a version is a name (letters, digits, \
             `.`, `_`, `-`), never a path",
            entry.version, r.namespace, r.name
        ));
    }
    if let Err(e) = RelPath::new(&entry.card) {
        return Err(format!(
            "{index_label}: refused: the card path `{}` does not stay on the site: {e}",
            entry.card
        ));
    }
    Ok(Some(entry))
}

fn from_site(base: &str, r: &HubRef) -> Result<Option<Found>, String> {
    let client = http_client(base)?;
    let root = site_root(base);
    let index_url = format!("{root}{INDEX_JSON}");
    runtime()?.block_on(async {
        let index = read_index(&client, &root).await?;
        let Some(entry) = pick(&index, r, &index_url)? else {
            return Ok(None);
        };
        let url = format!("{root}{}", entry.card);
        let bytes = get(&client, &url, MAX_CARD_BYTES, CARD_FILE).await?;
        let yaml =
            String::from_utf8(bytes).map_err(|_| format!("{url}: the card is not UTF-8 text"))?;
        Ok(Some(Found {
            yaml,
            version: entry.version.clone(),
            published: entry.published.clone(),
            source: url,
        }))
    })
}

/// A built site's folder, opened as every folder from elsewhere is
/// (no symbolic link followed, regular files only).
fn site_folder(root: &Path) -> Result<Folder, String> {
    Folder::open(root, Links::Never).map_err(|e| e.to_string())
}

/// A built site's `index.json`, read from its folder.
fn site_dir_index(root: &Path) -> Result<SiteIndex, String> {
    let body = site_folder(root)?
        .read(INDEX_JSON, Limit::HUB_INDEX)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&body).map_err(|e| {
        format!(
            "{}: not a hub site's {INDEX_JSON} ({e})",
            root.join(INDEX_JSON).display()
        )
    })
}

fn from_site_dir(root: &Path, r: &HubRef) -> Result<Option<Found>, String> {
    let index = site_dir_index(root)?;
    let Some(entry) = pick(&index, r, &root.join(INDEX_JSON).display().to_string())? else {
        return Ok(None);
    };
    let yaml = site_folder(root)?
        .read_text(&entry.card, Limit::CARD)
        .map_err(|e| e.to_string())?;
    Ok(Some(Found {
        yaml,
        version: entry.version.clone(),
        published: entry.published.clone(),
        source: root.join(&entry.card).display().to_string(),
    }))
}

/// One card a hub lists (for the studio's library).
#[derive(Clone, Debug, PartialEq)]
pub struct ListedCard {
    /// The hub as configured.
    pub hub: String,
    pub namespace: String,
    pub name: String,
    pub title: String,
    pub summary: String,
    pub tags: Vec<String>,
    /// Every version, oldest first.
    pub versions: Vec<String>,
}

impl ListedCard {
    /// `NAMESPACE/NAME`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The cards `hub` (a folder or a site's address) lists, with their titles
/// and summaries.
pub fn list_cards(hub: &str, registry: &Registry) -> Result<Vec<ListedCard>, String> {
    let dir = match locate(hub)? {
        HubPlace::Folder(dir) => dir,
        place => {
            let index = match place {
                HubPlace::SiteDir(root) => site_dir_index(&root)?,
                _ => fetch_index(hub)?,
            };
            return Ok(listed_from_index(hub, index));
        }
    };
    list_folder_cards(hub, &dir, registry)
}

/// The cards a site's index lists.
fn listed_from_index(hub: &str, index: SiteIndex) -> Vec<ListedCard> {
    index
        .cards
        .into_iter()
        .map(|c| ListedCard {
            hub: hub.to_owned(),
            namespace: c.namespace,
            name: c.name,
            title: c.title,
            summary: c.summary,
            tags: c.tags,
            versions: c.versions.into_iter().map(|v| v.version).collect(),
        })
        .collect()
}

/// The cards a hub folder holds, each read for its title and summary.
fn list_folder_cards(
    hub: &str,
    dir: &Path,
    registry: &Registry,
) -> Result<Vec<ListedCard>, String> {
    let folder = HubFolder::open(dir).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for list in folder.cards().map_err(|e| e.to_string())? {
        let Some(latest) = list.latest() else {
            continue;
        };
        let path = folder
            .version_dir(&list.namespace, &list.name, &latest.version)
            .join(CARD_FILE);
        let text = folder
            .read(&list.namespace, &list.name, &latest.version, CARD_FILE)
            .map_err(|e| e.to_string())?;
        let (title, summary, tags) = match crate::engine::card::Card::from_yaml(
            &text,
            &path.display().to_string(),
            registry,
        ) {
            Ok(card) => (card.display_title().to_owned(), card.summary, card.tags),
            Err(e) => (list.name.clone(), format!("cannot open: {e}"), Vec::new()),
        };
        out.push(ListedCard {
            hub: hub.to_owned(),
            namespace: list.namespace.clone(),
            name: list.name.clone(),
            title,
            summary,
            tags,
            versions: list.versions.iter().map(|v| v.version.clone()).collect(),
        });
    }
    Ok(out)
}

/// Where `NAMESPACE/NAME` is published among the folder `hubs`: each hub
/// that has it, with its versions.
pub fn published_in(hubs: &[String], namespace: &str, name: &str) -> Vec<(String, Vec<String>)> {
    hubs.iter()
        .filter_map(|h| {
            let folder = HubFolder::open(&hub_folder(h)?).ok()?;
            let list = folder.versions(namespace, name).ok()??;
            Some((
                h.clone(),
                list.versions.into_iter().map(|v| v.version).collect(),
            ))
        })
        .collect()
}

fn http_client(base: &str) -> Result<reqwest::Client, String> {
    crate::engine::model::openai::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(crate::engine::foreign::same_origin_redirects())
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("galapagos/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("{base}: cannot make an HTTP client: {e}"))
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP runtime: {e}"))
}

async fn read_index(client: &reqwest::Client, root: &str) -> Result<SiteIndex, String> {
    let index_url = format!("{root}{INDEX_JSON}");
    let body = get(client, &index_url, MAX_INDEX_BYTES, INDEX_JSON).await?;
    serde_json::from_slice(&body).map_err(|e| {
        format!("{index_url}: not a hub site's {INDEX_JSON} ({e}); the hub address is the site's root, the folder with {INDEX_JSON}")
    })
}

fn site_root(base: &str) -> String {
    format!("{}/", base.trim_end_matches('/'))
}

fn fetch_index(base: &str) -> Result<SiteIndex, String> {
    let client = http_client(base)?;
    runtime()?.block_on(read_index(&client, &site_root(base)))
}

/// Pull `r` from the first of `hubs` that has it, check it and cache it in
/// the per-user cache ([`cache_dir`]).
pub fn pull(r: &HubRef, hubs: &[String], registry: &Registry) -> Result<Pulled, String> {
    pull_into(r, hubs, registry, &cache_dir())
}

/// [`pull`] with the cache in `cache` instead of the per-user one.
pub fn pull_into(
    r: &HubRef,
    hubs: &[String],
    registry: &Registry,
    cache: &Path,
) -> Result<Pulled, String> {
    if hubs.is_empty() {
        return Err(format!(
            "{r}: no hub to pull from: pass --hub DIR|URL or list hubs under \"hubs\" in {}",
            crate::engine::model::user_settings::user_settings_path().map_or_else(
                || "the user settings file".to_owned(),
                |p| p.display().to_string()
            )
        ));
    }
    let mut problems = Vec::new();
    for hub in hubs {
        let found = match locate(hub) {
            Ok(HubPlace::SiteUrl(base)) => from_site(&base, r),
            Ok(HubPlace::SiteDir(root)) => from_site_dir(&root, r),
            Ok(HubPlace::Folder(dir)) => from_folder(&dir, r),
            Err(e) => Err(e),
        };
        let found = match found {
            Ok(Some(f)) => f,
            Ok(None) => {
                problems.push(format!("{hub}: has no {}/{}", r.namespace, r.name));
                continue;
            }
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let card =
            ValidCard::from_yaml(&found.yaml, &found.source, registry).map_err(|errors| {
                errors
                    .0
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        let inner = card.card();
        if inner.namespace != r.namespace || inner.name != r.name {
            return Err(format!(
                "{}: the card calls itself {}/{}, not {}/{}",
                found.source, inner.namespace, inner.name, r.namespace, r.name
            ));
        }
        let provenance = Provenance {
            hub: hub.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            version: found.version.clone(),
            published: found.published,
            source: found.source,
            pulled: super::folder::now_utc(),
        };
        // Names, never paths (checked again here: the cache is written).
        let rel = |file: &str| {
            let key = hub_key(hub);
            RelPath::join([
                key.as_str(),
                r.namespace.as_str(),
                r.name.as_str(),
                found.version.as_str(),
                file,
            ])
            .map_err(|e| format!("{}: refused: {e}", cache.display()))
        };
        let (card_rel, note_rel) = (rel(CARD_FILE)?, rel("source.json")?);
        if !super::folder::valid_version(&found.version) {
            return Err(format!(
                "{}: refused: version `{}` is not a version name",
                provenance.source, found.version
            ));
        }
        let save = || -> Result<PathBuf, String> {
            let target = Target::create(cache).map_err(|e| e.to_string())?;
            target
                .write_atomic(&card_rel, found.yaml.as_bytes())
                .map_err(|e| e.to_string())?;
            let note = serde_json::to_string_pretty(&provenance).unwrap_or_default() + "\n";
            target
                .write_atomic(&note_rel, note.as_bytes())
                .map_err(|e| e.to_string())?;
            Ok(target.path_of(&card_rel))
        };
        let cached = save()?;
        let mut pulled = Pulled {
            card,
            provenance,
            cached,
        };
        // whatever its YAML says, it is from this hub
        let from = pulled.provenance.of_card();
        pulled.card = pulled.card.with_provenance(Some(from));
        return Ok(pulled);
    }
    Err(format!("cannot pull {r}:\n  {}", problems.join("\n  ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_parse() {
        let r = HubRef::parse("team/topk@1.2").unwrap_or_else(|| panic!("no ref"));
        assert_eq!(
            (r.namespace.as_str(), r.name.as_str(), r.version.as_deref()),
            ("team", "topk", Some("1.2"))
        );
        assert!(HubRef::parse("team/topk").is_some_and(|r| r.version.is_none()));
        assert!(HubRef::parse("cards/topk.yaml").is_none());
        assert!(HubRef::parse("a/b/c").is_none());
        assert!(HubRef::parse("../x").is_none());
        assert!(HubRef::parse("a/b@").is_none());
        assert!(hub_key("http://127.0.0.1:1/").starts_with("127_0_0_1_1_-"));
    }

    #[test]
    fn a_file_in_the_hub_cache_is_from_its_hub() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cache = tmp.path().join("hub");
        let dir = cache.join("h-1/team/x/2");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let card = dir.join("card.yaml");
        std::fs::write(&card, "name: x\n").unwrap_or_else(|e| panic!("{e}"));
        // no note: still from a hub
        assert!(matches!(
            cached_provenance(&card, &cache),
            Some(CardProvenance::Hub { .. })
        ));
        std::fs::write(
            dir.join("source.json"),
            r#"{"hub": "http://h/", "namespace": "team", "name": "x", "version": "2",
               "published": "p", "source": "http://h/cards/team/x/2/card.yaml", "pulled": "t"}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let Some(CardProvenance::Hub { hub, card: id, .. }) = cached_provenance(&card, &cache)
        else {
            panic!("not from a hub");
        };
        assert_eq!((hub.as_str(), id.as_str()), ("http://h/", "team/x@2"));
        // a file beside the cache is not in it
        let mine = tmp.path().join("mine.yaml");
        std::fs::write(&mine, "name: x\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached_provenance(&mine, &cache), None);
    }
}
