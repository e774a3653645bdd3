//! A hub folder: the published bundles of a team, kept as plain files (and a
//! git repository when git is installed), from which [`super::site`] builds
//! the static site.
//!
//! ```text
//! HUB/
//!   hub.json                      {"format": 1}: marks the folder as a hub
//!   NAMESPACE/NAME/
//!     versions.json               every version in publishing order, with its date
//!     VERSION/card.yaml           the card as published (never rewritten)
//!     VERSION/README.md           its README (with the Results section, if any)
//!     VERSION/results.json        the leaderboard line it was published with (optional)
//! ```
//!
//! Publishing validates the card, runs the secret scan over every file it
//! would write, refuses a version that exists and a name that is taken
//! unless a new `--version` is given, writes the version folder and commits
//! it. Versions are never overwritten or removed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::{CARD_FILE, HubError, README_FILE, bundle_texts, check_card, io_err, write_atomic};
use crate::engine::card::Card;
use crate::engine::foreign::{Folder, Limit, Links, check_name};
use crate::engine::leaderboard::Board;
use crate::engine::leaderboard::report::{Estimate, Leaderboard};
use crate::engine::leaderboard::suite_report::SuiteLeaderboard;
use crate::engine::leaderboard::value::Record;
use crate::engine::registry::Registry;

/// The file that marks a hub folder.
pub const HUB_FILE: &str = "hub.json";
/// The list of a card's versions, in its `NAMESPACE/NAME/` folder.
pub const VERSIONS_FILE: &str = "versions.json";
/// A version's leaderboard line.
pub const RESULTS_FILE: &str = "results.json";
/// The version a card's first publication gets when none is given.
pub const FIRST_VERSION: &str = "1";

/// One published version of a card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VersionEntry {
    pub version: String,
    /// When it was published, `YYYY-MM-DD HH:MM:SS UTC`.
    pub published: String,
}

/// A card's `versions.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CardVersions {
    pub namespace: String,
    pub name: String,
    /// Oldest first; the last one is the latest.
    pub versions: Vec<VersionEntry>,
}

impl CardVersions {
    /// The newest version.
    pub fn latest(&self) -> Option<&VersionEntry> {
        self.versions.last()
    }

    /// `NAMESPACE/NAME`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The line of a leaderboard a version was published with: enough for the
/// site's leaderboard page (card, model, best mean with its interval,
/// iterations, cost).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedResult {
    pub task: String,
    pub model: String,
    /// The card's name on the leaderboard.
    pub card: String,
    pub iterations: u64,
    pub seeds: Vec<u64>,
    pub best: Option<Estimate>,
    pub cost_usd: Option<f64>,
    pub baseline: String,
    /// A suite's line (then `task` is the suite's name and `best` the card's
    /// score over it, the mean normalised best value); `None` for a task's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<PublishedSuite>,
}

/// What a card did on a suite: its line on every task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedSuite {
    /// The fraction of the best known value the runs were to reach.
    pub fraction: f64,
    /// Tasks on which a run reached it, of the tasks with a best known value.
    pub tasks_reached: u64,
    pub tasks_scored: u64,
    pub tasks: Vec<PublishedTask>,
}

/// A card's line on one task of a suite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedTask {
    pub task: String,
    /// Its best known value.
    pub record: Option<Record>,
    /// The best value at the budget (mean over seeds, interval) and, without a
    /// record, the best score.
    pub best_value: Option<Estimate>,
    pub best_score: Option<Estimate>,
    pub gap: Option<Estimate>,
    pub normalised: Option<Estimate>,
    /// Runs that reached the fraction, of `runs`, and the model calls to it.
    pub reached: u64,
    pub runs: u64,
    pub calls_to_reach: Option<Estimate>,
}

impl PublishedResult {
    /// The line of `card` on a batch's leaderboard, a task's or a suite's.
    pub fn from_board(board: &Board, card: &str) -> Option<Self> {
        match board {
            Board::Task(lb) => Self::from_leaderboard(lb, card),
            Board::Suite(sl) => Self::from_suite(sl, card),
        }
    }

    /// The line of `card` on a suite's leaderboard.
    pub fn from_suite(sl: &SuiteLeaderboard, card: &str) -> Option<Self> {
        let line = sl.cards.iter().find(|c| c.card == card)?;
        let tasks = sl
            .tasks
            .iter()
            .filter_map(|lb| {
                let c = lb.cards.iter().find(|c| c.card == card)?;
                let v = c.value.as_ref();
                Some(PublishedTask {
                    task: lb.task.clone(),
                    record: lb.record.clone(),
                    best_value: v.and_then(|v| v.best),
                    best_score: c.best,
                    gap: v.and_then(|v| v.gap),
                    normalised: v.and_then(|v| v.normalised),
                    reached: v.map_or(0, |v| v.reached),
                    runs: v.map_or(c.runs.len() as u64, |v| v.runs),
                    calls_to_reach: v.and_then(|v| v.calls_to_reach),
                })
            })
            .collect();
        Some(Self {
            task: sl.suite.clone(),
            model: sl.model.clone(),
            card: card.to_owned(),
            iterations: sl.iterations,
            seeds: sl.seeds.clone(),
            best: line.score,
            cost_usd: line.cost_usd,
            baseline: sl.baseline.clone(),
            suite: Some(PublishedSuite {
                fraction: sl.fraction,
                tasks_reached: line.tasks_reached,
                tasks_scored: line.tasks_scored,
                tasks,
            }),
        })
    }

    /// The line of `card` in `lb`, if it is on it.
    pub fn from_leaderboard(lb: &Leaderboard, card: &str) -> Option<Self> {
        let line = lb.cards.iter().find(|c| c.card == card)?;
        Some(Self {
            task: lb.task.clone(),
            model: lb.model.clone(),
            card: card.to_owned(),
            iterations: lb.iterations,
            seeds: lb.seeds.clone(),
            best: line.best,
            cost_usd: line.cost_usd,
            baseline: lb.baseline.clone(),
            suite: None,
        })
    }
}

/// What to publish besides the card.
#[derive(Clone, Debug, Default)]
pub struct PublishOptions {
    /// Publish under this namespace instead of the card's own.
    pub namespace: Option<String>,
    /// The version to publish as; required when the name already has versions.
    pub version: Option<String>,
    /// A leaderboard (folder or `leaderboard.json`) the card is on: its
    /// Results section goes into the README and its line into `results.json`.
    pub results: Option<PathBuf>,
    /// Secrets to refuse besides those in the environment.
    pub known_secrets: Vec<(String, String)>,
}

/// What a publication wrote.
#[derive(Clone, Debug)]
pub struct Published {
    pub namespace: String,
    pub name: String,
    pub version: String,
    /// The version folder.
    pub dir: PathBuf,
    /// The commit made, when the hub is a git repository.
    pub commit: Option<String>,
}

/// An open hub folder.
#[derive(Clone, Debug)]
pub struct HubFolder {
    root: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HubMarker {
    format: u32,
}

pub(crate) fn valid_version(v: &str) -> bool {
    crate::engine::foreign::check_version(v)
}

/// The hub folder, opened by the rules of [`crate::engine::foreign`]: no
/// link followed, every read capped.
fn open_folder(root: &Path) -> Result<Folder, HubError> {
    Ok(Folder::open(root, Links::Never)?)
}

/// The cap of a file of a version.
fn limit_of(file: &str) -> Limit {
    match file {
        CARD_FILE => Limit::CARD,
        README_FILE => Limit::README,
        _ => Limit::SMALL_JSON,
    }
}

fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `YYYY-MM-DD HH:MM:SS UTC` of now.
pub(crate) fn now_utc() -> String {
    let unix = crate::engine::archive::unix_now();
    let stamp = crate::engine::archive::timestamp(unix); // YYYYMMDD-HHMMSS
    let b = stamp.as_bytes();
    if b.len() != 15 {
        return stamp;
    }
    format!(
        "{}-{}-{} {}:{}:{} UTC",
        &stamp[0..4],
        &stamp[4..6],
        &stamp[6..8],
        &stamp[9..11],
        &stamp[11..13],
        &stamp[13..15]
    )
}

impl HubFolder {
    /// Make `dir` a hub: creates it (it may exist, but then must be empty or
    /// already a hub), writes `hub.json` and, when git is installed, makes it
    /// a git repository with a first commit.
    pub fn init(dir: &Path) -> Result<Self, HubError> {
        if dir.join(HUB_FILE).is_file() {
            return Self::open(dir);
        }
        if dir.exists() {
            let mut entries = fs::read_dir(dir).map_err(io_err(dir))?;
            if entries.next().is_some() {
                return Err(HubError::NotAHub {
                    path: dir.to_path_buf(),
                    reason: format!(
                        "the folder is not empty and has no {HUB_FILE}; a hub starts in a new or empty folder"
                    ),
                });
            }
        }
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let marker = serde_json::to_string_pretty(&HubMarker { format: 1 }).unwrap_or_default();
        write_atomic(&dir.join(HUB_FILE), format!("{marker}\n").as_bytes())?;
        let hub = Self {
            root: dir.to_path_buf(),
        };
        if git_available() {
            hub.git(&["init", "--quiet"])?;
            hub.git(&["add", HUB_FILE])?;
            hub.commit("Start the hub")?;
        }
        Ok(hub)
    }

    /// Open an existing hub folder (one with `hub.json`).
    pub fn open(dir: &Path) -> Result<Self, HubError> {
        let read =
            Folder::open(dir, Links::Never).and_then(|f| f.read_text(HUB_FILE, Limit::SMALL_JSON));
        let text = read.map_err(|e| HubError::NotAHub {
            path: dir.to_path_buf(),
            reason: if e.is_not_found() {
                format!("no {HUB_FILE} (make one with `galapagos hub init DIR`)")
            } else {
                format!("cannot read {HUB_FILE}: {e}")
            },
        })?;
        let parsed: HubMarker = serde_json::from_str(&text).map_err(|e| HubError::NotAHub {
            path: dir.to_path_buf(),
            reason: format!("{HUB_FILE} is not a hub marker: {e}"),
        })?;
        if parsed.format != 1 {
            return Err(HubError::NotAHub {
                path: dir.to_path_buf(),
                reason: format!(
                    "{HUB_FILE} has format {}; this galapagos reads format 1",
                    parsed.format
                ),
            });
        }
        Ok(Self {
            root: dir.to_path_buf(),
        })
    }

    /// The hub's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when the hub is a git repository.
    pub fn is_git(&self) -> bool {
        self.root.join(".git").exists()
    }

    /// Publish `card` as a new version (see the module doc for the rules).
    pub fn publish(
        &self,
        card: &Card,
        registry: &Registry,
        opts: &PublishOptions,
    ) -> Result<Published, HubError> {
        let mut card = card.clone();
        if let Some(ns) = &opts.namespace {
            card.namespace.clone_from(ns);
        }
        check_card(&card, registry)?;
        let id = format!("{}/{}", card.namespace, card.name);
        let card_dir = self.root.join(&card.namespace).join(&card.name);
        let mut versions = self
            .versions(&card.namespace, &card.name)?
            .unwrap_or(CardVersions {
                namespace: card.namespace.clone(),
                name: card.name.clone(),
                versions: Vec::new(),
            });
        let version = match (&opts.version, versions.versions.is_empty()) {
            (Some(v), _) => v.clone(),
            (None, true) => FIRST_VERSION.to_owned(),
            (None, false) => {
                return Err(HubError::Taken {
                    card: id,
                    versions: versions
                        .versions
                        .iter()
                        .map(|v| v.version.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        };
        if !valid_version(&version) {
            return Err(HubError::InvalidCard {
                card: id,
                problems: format!(
                    "version `{version}` must be letters, digits, `.`, `_` or `-` (at most 64, not starting with `.`)"
                ),
            });
        }
        if versions.versions.iter().any(|v| v.version == version) {
            return Err(HubError::VersionExists { card: id, version });
        }
        let (results_md, results_line) = match &opts.results {
            None => (None, None),
            Some(path) => {
                let md = crate::engine::leaderboard::results_section(path, &card.name)
                    .map_err(HubError::Results)?;
                let (_, board) =
                    crate::engine::leaderboard::read_board(path).map_err(HubError::Results)?;
                (Some(md), PublishedResult::from_board(&board, &card.name))
            }
        };
        let dir = card_dir.join(&version);
        let mut known = super::secret_env_values();
        known.extend(opts.known_secrets.iter().cloned());
        let (yaml, readme) = bundle_texts(&card, registry, &dir, &known, results_md.as_deref())?;
        let results_json = match &results_line {
            Some(line) => {
                let text = serde_json::to_string_pretty(line).unwrap_or_default() + "\n";
                if let Some(what) = super::find_secret(&text, &known) {
                    return Err(HubError::Secret {
                        path: dir.join(RESULTS_FILE),
                        what,
                    });
                }
                Some(text)
            }
            None => None,
        };

        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        write_atomic(&dir.join(CARD_FILE), yaml.as_bytes())?;
        write_atomic(&dir.join(README_FILE), readme.as_bytes())?;
        if let Some(text) = results_json {
            write_atomic(&dir.join(RESULTS_FILE), text.as_bytes())?;
        }
        versions.versions.push(VersionEntry {
            version: version.clone(),
            published: now_utc(),
        });
        let list = serde_json::to_string_pretty(&versions).unwrap_or_default() + "\n";
        write_atomic(&card_dir.join(VERSIONS_FILE), list.as_bytes())?;

        let commit = if self.is_git() && git_available() {
            let rel = format!("{}/{}", card.namespace, card.name);
            self.git(&["add", "--", &rel])?;
            Some(self.commit(&format!("Publish {id} version {version}"))?)
        } else {
            None
        };
        Ok(Published {
            namespace: card.namespace,
            name: card.name,
            version,
            dir,
            commit,
        })
    }

    /// The versions of `NAMESPACE/NAME`, or `None` when it was never published.
    pub fn versions(&self, namespace: &str, name: &str) -> Result<Option<CardVersions>, HubError> {
        let path = self.root.join(namespace).join(name).join(VERSIONS_FILE);
        let not_names = |reason: String| HubError::NotAHub {
            path: path.clone(),
            reason,
        };
        for (what, value) in [("namespace", namespace), ("name", name)] {
            if let Some(problem) = check_name(what, value) {
                return Err(not_names(problem));
            }
        }
        let rel = Path::new(namespace).join(name).join(VERSIONS_FILE);
        let Some(text) = open_folder(&self.root)?.read_text_if_any(&rel, Limit::SMALL_JSON)? else {
            return Ok(None);
        };
        let list: CardVersions = serde_json::from_str(&text).map_err(|e| HubError::NotAHub {
            path: path.clone(),
            reason: format!("not a versions list: {e}"),
        })?;
        // Names, never paths: they become folders of sites and caches.
        for (what, value) in [("namespace", &list.namespace), ("name", &list.name)] {
            if let Some(problem) = check_name(what, value) {
                return Err(not_names(format!("refused: {problem}")));
            }
        }
        if let Some(bad) = list.versions.iter().find(|v| !valid_version(&v.version)) {
            return Err(not_names(format!(
                "refused: it lists version `{}`; a version is a name (letters, digits, `.`, `_`, `-`), never a path",
                bad.version
            )));
        }
        Ok(Some(list))
    }

    /// Every published card, sorted by `NAMESPACE/NAME`.
    pub fn cards(&self) -> Result<Vec<CardVersions>, HubError> {
        let mut out = Vec::new();
        for ns in sorted_dirs(&self.root)? {
            for name in sorted_dirs(&self.root.join(&ns))? {
                if let Some(list) = self.versions(&ns, &name)?
                    && !list.versions.is_empty()
                {
                    out.push(list);
                }
            }
        }
        Ok(out)
    }

    /// The folder of one version.
    pub fn version_dir(&self, namespace: &str, name: &str, version: &str) -> PathBuf {
        self.root.join(namespace).join(name).join(version)
    }

    /// The text of a file of one version (`card.yaml`, `README.md`, ...).
    pub fn read(
        &self,
        namespace: &str,
        name: &str,
        version: &str,
        file: &str,
    ) -> Result<String, HubError> {
        let rel = self.checked_rel(namespace, name, version, file)?;
        Ok(open_folder(&self.root)?.read_text(rel, limit_of(file))?)
    }

    /// The leaderboard line a version was published with, if any.
    pub fn result(
        &self,
        namespace: &str,
        name: &str,
        version: &str,
    ) -> Result<Option<PublishedResult>, HubError> {
        let path = self
            .version_dir(namespace, name, version)
            .join(RESULTS_FILE);
        let rel = self.checked_rel(namespace, name, version, RESULTS_FILE)?;
        let Some(text) = open_folder(&self.root)?.read_text_if_any(rel, Limit::SMALL_JSON)? else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| HubError::NotAHub {
                path,
                reason: format!("not a results line: {e}"),
            })
    }

    /// `NAMESPACE/NAME/VERSION/file`, each a name (never a path).
    fn checked_rel(
        &self,
        namespace: &str,
        name: &str,
        version: &str,
        file: &str,
    ) -> Result<PathBuf, HubError> {
        let path = self.version_dir(namespace, name, version).join(file);
        let problem = check_name("namespace", namespace)
            .or_else(|| check_name("name", name))
            .or_else(|| {
                (!valid_version(version))
                    .then(|| format!("version `{version}`: a version is a name, never a path"))
            });
        if let Some(reason) = problem {
            return Err(HubError::NotAHub {
                path,
                reason: format!("refused: {reason}"),
            });
        }
        Ok(Path::new(namespace).join(name).join(version).join(file))
    }

    fn git(&self, args: &[&str]) -> Result<String, HubError> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(args)
            .output()
            .map_err(io_err(&self.root))?;
        if !out.status.success() {
            return Err(HubError::Git {
                path: self.root.clone(),
                message: format!(
                    "git {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Commit what is staged; a user without a git identity commits as
    /// "galapagos hub". Returns the commit's hash.
    fn commit(&self, message: &str) -> Result<String, HubError> {
        let has_identity = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(["config", "user.email"])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.trim_ascii().is_empty());
        let mut args: Vec<&str> = Vec::new();
        if !has_identity {
            args.extend([
                "-c",
                "user.name=galapagos hub",
                "-c",
                "user.email=hub@localhost",
            ]);
        }
        args.extend(["commit", "--quiet", "--no-gpg-sign", "-m", message]);
        self.git(&args)?;
        self.git(&["rev-parse", "HEAD"])
    }
}

/// Sub-folders of `dir` whose names are valid namespace or card names, sorted.
fn sorted_dirs(dir: &Path) -> Result<Vec<String>, HubError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir())
            && super::check_path_name("", &name).is_none()
        {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_plain_names() {
        assert!(valid_version("1"));
        assert!(valid_version("1.2.0-rc1"));
        assert!(!valid_version(""));
        assert!(!valid_version(".."));
        assert!(!valid_version("a/b"));
        assert!(!valid_version("1 2"));
        assert!(now_utc().ends_with(" UTC"));
    }
}
