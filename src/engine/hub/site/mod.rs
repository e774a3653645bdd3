//! The hub's static site, built from a hub folder: plain HTML pages, one
//! stylesheet and one small script, readable with JavaScript off (search is
//! the one thing that needs it), with relative links so any static host or
//! a file share serves it from any path.
//!
//! ```text
//! SITE/index.html                      every card, search, tag links
//! SITE/index.json                      machine-readable index (what a pull reads)
//! SITE/how-to-run.html                 how to run a card from the hub
//! SITE/tags/TAG.html                   the cards with one tag
//! SITE/leaderboards/index.html         the tasks with published results
//! SITE/leaderboards/TASK.html          every published Results line of a task
//! SITE/leaderboards/suites/SUITE.html  every published Results line of a suite (see `suites.rs`)
//! SITE/cards/NS/NAME/index.html        the card page (its latest version)
//! SITE/cards/NS/NAME/VERSION/card.yaml the raw card of each version (stable URL)
//! SITE/cards/NS/NAME/VERSION/README.md its README
//! SITE/style.css, SITE/site.js
//! ```
//!
//! Every piece of card text is escaped; README Markdown shows raw HTML as
//! text and drops unsafe link targets (see [`html`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::folder::{CardVersions, HubFolder, PublishedResult, VersionEntry};
use super::{CARD_FILE, HubError, README_FILE, io_err};
use crate::engine::card::Card;
use crate::engine::foreign::{Refused, RelPath, Target};
use crate::engine::registry::Registry;

mod assets;
pub mod blocks;
pub mod html;
mod pages;
mod suites;

pub use blocks::blocks_svg;
use html::esc;

/// The site's machine-readable index.
pub const INDEX_JSON: &str = "index.json";

/// One card in `index.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexCard {
    pub namespace: String,
    pub name: String,
    pub title: String,
    pub summary: String,
    pub tags: Vec<String>,
    pub license: String,
    /// The latest version.
    pub latest: String,
    /// The card page, relative to the site.
    pub page: String,
    pub versions: Vec<IndexVersion>,
}

/// One version in `index.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexVersion {
    pub version: String,
    pub published: String,
    /// The raw `card.yaml`, relative to the site.
    pub card: String,
}

/// `index.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteIndex {
    pub format: u32,
    pub cards: Vec<IndexCard>,
}

/// Everything the pages need about one version.
struct Version {
    entry: VersionEntry,
    yaml: String,
    readme: String,
    result: Option<PublishedResult>,
}

/// Everything the pages need about one card.
struct CardData {
    list: CardVersions,
    /// The latest version's card, loaded strictly.
    card: Card,
    versions: Vec<Version>,
}

impl CardData {
    fn dir(&self) -> String {
        format!("cards/{}/{}", self.list.namespace, self.list.name)
    }
}

/// What a build wrote.
#[derive(Clone, Debug)]
pub struct BuiltSite {
    pub out: PathBuf,
    pub cards: usize,
    pub pages: usize,
    pub leaderboards: usize,
}

/// A file name for a free-text name (a tag, a task): letters, digits, `-`
/// and `_` kept, anything else `-`; names that would clash get `-2`, `-3`.
fn slugs<'a>(names: impl IntoIterator<Item = &'a String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut taken = std::collections::BTreeSet::new();
    for name in names {
        if out.contains_key(name) {
            continue;
        }
        let mut base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(60)
            .collect();
        if base.is_empty() || base.starts_with('-') {
            base.insert(0, 'x');
        }
        let mut slug = base.clone();
        let mut n = 2;
        while !taken.insert(slug.clone()) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        out.insert(name.clone(), slug);
    }
    out
}

fn load_cards(hub: &HubFolder, registry: &Registry) -> Result<Vec<CardData>, HubError> {
    let mut out = Vec::new();
    for list in hub.cards()? {
        let (ns, name) = (&list.namespace, &list.name);
        let mut versions = Vec::new();
        for entry in &list.versions {
            let yaml = hub.read(ns, name, &entry.version, CARD_FILE)?;
            let readme = hub.read(ns, name, &entry.version, README_FILE)?;
            let result = hub.result(ns, name, &entry.version)?;
            versions.push(Version {
                entry: entry.clone(),
                yaml,
                readme,
                result,
            });
        }
        let Some(latest) = versions.last() else {
            continue;
        };
        let origin = hub
            .version_dir(ns, name, &latest.entry.version)
            .join(CARD_FILE)
            .display()
            .to_string();
        let card = Card::from_yaml(&latest.yaml, &origin, registry)?;
        out.push(CardData {
            list,
            card,
            versions,
        });
    }
    Ok(out)
}

/// Write the site's file `rel` (names from the hub folder are checked, and
/// no link in `out` is followed: see [`crate::engine::foreign`]).
fn write(out: &Target, rel: &str, text: &str, pages: &mut usize) -> Result<(), HubError> {
    let path = RelPath::new(rel)
        .map_err(|e| Refused::new(out.root(), crate::engine::foreign::Why::BadPath(e)))?;
    if rel.ends_with(".html") {
        *pages += 1;
    }
    Ok(out.write_atomic(&path, text.as_bytes())?)
}

/// Build the site of `hub` into `out` (created; files of an earlier build
/// are replaced, and a folder that is not an earlier build is refused).
pub fn build_site(hub: &HubFolder, registry: &Registry, out: &Path) -> Result<BuiltSite, HubError> {
    // read (and refused) before an earlier build is replaced
    let cards = load_cards(hub, registry)?;
    if out.exists() {
        let empty = fs::read_dir(out).map_err(io_err(out))?.next().is_none();
        if !empty && !out.join(INDEX_JSON).is_file() {
            return Err(HubError::NotAHub {
                path: out.to_path_buf(),
                reason: format!(
                    "the folder is not empty and is not a built hub site (no {INDEX_JSON}); \
                     --out takes a new or empty folder, or an earlier build"
                ),
            });
        }
        if !empty {
            fs::remove_dir_all(out).map_err(io_err(out))?;
        }
    }
    let target = Target::create(out)?;
    let tags = slugs(cards.iter().flat_map(|c| c.card.tags.iter()));
    let mut results: BTreeMap<String, Vec<(&CardData, &Version, &PublishedResult)>> =
        BTreeMap::new();
    let mut suite_lines: suites::Suites<'_> = BTreeMap::new();
    for c in &cards {
        for v in &c.versions {
            match &v.result {
                Some(r) if r.suite.is_some() => {
                    suite_lines
                        .entry(r.task.clone())
                        .or_default()
                        .push((c, v, r));
                }
                Some(r) => results.entry(r.task.clone()).or_default().push((c, v, r)),
                None => {}
            }
        }
    }
    let tasks = slugs(results.keys());
    let suite_slugs = slugs(suite_lines.keys());
    let mut pages = 0;

    write(&target, "style.css", assets::STYLE_CSS, &mut pages)?;
    write(&target, "site.js", assets::SITE_JS, &mut pages)?;

    let index = SiteIndex {
        format: 1,
        cards: cards
            .iter()
            .map(|c| IndexCard {
                namespace: c.list.namespace.clone(),
                name: c.list.name.clone(),
                title: c.card.title.clone(),
                summary: c.card.summary.clone(),
                tags: c.card.tags.clone(),
                license: c.card.license.clone(),
                latest: c
                    .list
                    .latest()
                    .map(|v| v.version.clone())
                    .unwrap_or_default(),
                page: format!("{}/index.html", c.dir()),
                versions: c
                    .versions
                    .iter()
                    .map(|v| IndexVersion {
                        version: v.entry.version.clone(),
                        published: v.entry.published.clone(),
                        card: format!("{}/{}/{CARD_FILE}", c.dir(), v.entry.version),
                    })
                    .collect(),
            })
            .collect(),
    };
    let json = serde_json::to_string_pretty(&index).unwrap_or_default() + "\n";
    write(&target, INDEX_JSON, &json, &mut pages)?;

    write(
        &target,
        "index.html",
        &pages::index(&cards, &tags, None, ""),
        &mut pages,
    )?;
    for (tag, slug) in &tags {
        let with: Vec<&CardData> = cards.iter().filter(|c| c.card.tags.contains(tag)).collect();
        let page = pages::index_of(&with, cards.len(), &tags, Some(tag), "../");
        write(&target, &format!("tags/{slug}.html"), &page, &mut pages)?;
    }
    write(
        &target,
        "how-to-run.html",
        &pages::how_to_run(&cards),
        &mut pages,
    )?;
    write(
        &target,
        "leaderboards/index.html",
        &pages::leaderboards_index(&results, &tasks, &suite_lines, &suite_slugs),
        &mut pages,
    )?;
    for (suite, rows) in &suite_lines {
        let slug = suite_slugs.get(suite).cloned().unwrap_or_default();
        write(
            &target,
            &suites::suite_path(&slug),
            &suites::suite_page(suite, rows),
            &mut pages,
        )?;
    }
    for (task, rows) in &results {
        let slug = tasks.get(task).cloned().unwrap_or_default();
        write(
            &target,
            &format!("leaderboards/{slug}.html"),
            &pages::leaderboard(task, rows),
            &mut pages,
        )?;
    }
    for c in &cards {
        for v in &c.versions {
            let dir = format!("{}/{}", c.dir(), v.entry.version);
            write(&target, &format!("{dir}/{CARD_FILE}"), &v.yaml, &mut pages)?;
            write(
                &target,
                &format!("{dir}/{README_FILE}"),
                &v.readme,
                &mut pages,
            )?;
        }
        let boards = pages::Boards {
            results: &results,
            tasks: &tasks,
            suites: &suite_lines,
            suite_slugs: &suite_slugs,
        };
        let page = pages::card_page(c, registry, &tags, &boards);
        write(
            &target,
            &format!("{}/index.html", c.dir()),
            &page,
            &mut pages,
        )?;
    }
    Ok(BuiltSite {
        out: out.to_path_buf(),
        cards: cards.len(),
        pages,
        leaderboards: results.len() + suite_lines.len(),
    })
}

/// A whole page: `prefix` leads from the page back to the site's root.
fn page(title: &str, prefix: &str, body: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · Galapagos hub</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{prefix}style.css">
<script src="{prefix}site.js" defer></script>
</head>
<body>
<header class="top"><nav aria-label="Site">
<a class="brand" href="{prefix}index.html">Galapagos hub</a>
<a href="{prefix}index.html">Cards</a>
<a href="{prefix}leaderboards/index.html">Leaderboards</a>
<a href="{prefix}how-to-run.html">How to run a card</a>
</nav></header>
<main>
{body}
</main>
<footer>Built by <code>galapagos hub build</code>. Cards are YAML files: pull one with <code>galapagos run NAMESPACE/NAME --task TASK</code>.</footer>
</body>
</html>
"#,
        title = esc(title),
    );
    s
}
