//! The hub from the studio, all off the UI thread: export the card as a
//! bundle (with a leaderboard's results when one is attached), import a
//! bundle as a new card, publish the card to a hub folder, list the
//! configured hubs' cards and open one by pulling it.

use std::path::{Path, PathBuf};

use super::App;
use super::card_files::Pending;
use crate::engine::card::Card;
use crate::engine::hub::HubError;
use crate::engine::hub::pull::HubRef;
use crate::engine::registry::Registry;
use crate::studio::command::UiCommand;
use crate::studio::editor::publish::PulledFrom;
use crate::studio::jobs::{Done, Pick};
use crate::studio::state::Tab;

impl App {
    /// Apply a command of the hub group.
    pub(super) fn apply_hub_command(&mut self, command: UiCommand) {
        match command {
            UiCommand::ExportBundle(dir) => self.export_bundle(dir),
            UiCommand::ImportBundle(path) => {
                if let Some(ctx) = self.ctx.clone() {
                    let registry = self.registry.clone();
                    self.spawn_job("import", &ctx, move || {
                        // an imported card is from elsewhere, and stays so
                        // when saved (see `crate::engine::provenance`)
                        let imported = crate::engine::hub::import_bundle(&path, &registry)
                            .map(|mut card| {
                                card.provenance =
                                    Some(crate::engine::hub::bundle_provenance(&path));
                                Box::new(card)
                            })
                            .map_err(|e| e.to_string());
                        Box::new(move |app: &mut App| match imported {
                            Ok(card) => app.imported(card),
                            Err(e) => app.error(format!("import: {e}")),
                        })
                    });
                }
            }
            UiCommand::BrowseExport => {
                if let Some(ctx) = self.ctx.clone() {
                    self.pick_path(Pick::ExportFolder, self.dialog_start(), &ctx);
                }
            }
            UiCommand::BrowseImport => {
                if let Some(ctx) = self.ctx.clone() {
                    self.pick_path(Pick::ImportBundle, self.dialog_start(), &ctx);
                }
            }
            UiCommand::SetExportResults(dir) => {
                self.details.results_field = dir.display().to_string();
                self.state.tab = Tab::Details;
                self.info(format!(
                    "The next hub export attaches the leaderboard in {} as its Results section",
                    dir.display()
                ));
            }
            UiCommand::BrowseExportResults => {
                if let Some(ctx) = self.ctx.clone() {
                    let start = Some(self.state.leaderboard.out.clone());
                    self.pick_path(Pick::ExportResults, start, &ctx);
                }
            }
            UiCommand::PublishToHub {
                hub,
                namespace,
                version,
            } => self.publish_to_hub(hub, namespace, version),
            UiCommand::RefreshHubCards => {
                // the publish form offers the same hubs: it reads them again
                self.details.publish.reload_hubs();
                // Which hubs: a small read of the user settings file. With
                // none there is nothing to list, and no job to wait for.
                let hubs = match self.library.hubs.hubs_override.clone() {
                    Some(hubs) => Ok(hubs),
                    None => crate::engine::hub::pull::configured_hubs(&[]),
                };
                match hubs {
                    Err(e) => self.library.hubs.set(Vec::new(), vec![e]),
                    Ok(hubs) if hubs.is_empty() => self.library.hubs.set(Vec::new(), Vec::new()),
                    Ok(hubs) => {
                        if let Some(ctx) = self.ctx.clone() {
                            self.library.hubs.loading = true;
                            let registry = self.registry.clone();
                            self.spawn_job("hub-list", &ctx, move || list_hubs(&hubs, &registry));
                        }
                    }
                }
            }
            UiCommand::OpenHubCard { hub, reference } => {
                if let Some(ctx) = self.ctx.clone() {
                    let registry = self.registry.clone();
                    let cache = self.library.hubs.cache_override.clone();
                    let configured = self.library.hubs.hubs_override.clone();
                    self.spawn_job("hub-pull", &ctx, move || {
                        let cache = cache.unwrap_or_else(crate::engine::hub::pull::cache_dir);
                        let hubs = match (hub, configured) {
                            (Some(hub), _) => Ok(vec![hub]),
                            (None, Some(hubs)) => Ok(hubs),
                            (None, None) => crate::engine::hub::pull::configured_hubs(&[]),
                        };
                        let pulled =
                            hubs.and_then(|h| pull_card(&h, &reference, &registry, &cache));
                        Box::new(move |app: &mut App| match pulled {
                            Ok((card, from)) => {
                                app.details.publish.pulled(from);
                                app.imported(card);
                            }
                            Err(e) => app.error(e),
                        })
                    });
                }
            }
            other => self.misrouted(&other),
        }
    }

    fn publish_to_hub(&mut self, hub: PathBuf, namespace: Option<String>, version: Option<String>) {
        self.refresh_problems();
        if let Some(why) = self.save_blocker() {
            self.error(why);
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let card = self.doc.card.clone();
        let registry = self.registry.clone();
        let results = Some(self.details.results_field.trim())
            .filter(|r| !r.is_empty())
            .map(PathBuf::from);
        self.spawn_job("publish", &ctx, move || {
            let opts = crate::engine::hub::folder::PublishOptions {
                namespace,
                version,
                results,
                known_secrets: Vec::new(),
            };
            let outcome = crate::engine::hub::folder::HubFolder::open(&hub)
                .and_then(|h| h.publish(&card, &registry, &opts))
                .map(|done| {
                    format!(
                        "Published {}/{} version {} to {}",
                        done.namespace,
                        done.name,
                        done.version,
                        hub.display()
                    )
                })
                .map_err(|e| refusal(&e));
            Box::new(move |app: &mut App| app.published(outcome))
        });
    }

    /// A publication finished: say so in the status bar and the Publish
    /// section, and list the hubs' cards again (the library shows the new
    /// version).
    pub(super) fn published(&mut self, outcome: Result<String, String>) {
        self.details.publish.finished(outcome.clone());
        self.commands.push(UiCommand::RefreshHubCards);
        match outcome {
            Ok(text) => self.info(text),
            Err(e) => self.error(format!("Not published: {e}")),
        }
    }

    /// A bundle was read: open it, or ask first when the card has unsaved
    /// changes.
    pub(super) fn imported(&mut self, card: Box<Card>) {
        if self.doc.dirty {
            self.pending = Some(Pending::Import(card));
        } else {
            self.import_now(*card);
        }
    }

    pub(super) fn export_bundle(&mut self, dir: PathBuf) {
        self.refresh_problems();
        if let Some(why) = self.save_blocker() {
            self.error(why);
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let card = self.doc.card.clone();
        let registry = self.registry.clone();
        let results = Some(self.details.results_field.trim())
            .filter(|r| !r.is_empty())
            .map(PathBuf::from);
        self.spawn_job("export", &ctx, move || {
            let outcome = export_with_results(&card, &registry, &dir, results.as_deref());
            Box::new(move |app: &mut App| match outcome {
                Ok(text) => app.info(text),
                Err(e) => app.error(format!("export: {e}")),
            })
        });
    }
}

/// Export `card` as a hub bundle into `dir`, with the Results section of the
/// leaderboard in `results` (a batch folder or its `leaderboard.json`) when
/// given, as `galapagos export --results` does.
fn export_with_results(
    card: &Card,
    registry: &Registry,
    dir: &Path,
    results: Option<&Path>,
) -> Result<String, String> {
    let section = results
        .map(|r| crate::engine::leaderboard::results_section(r, &card.name))
        .transpose()
        .map_err(|e| format!("results: {e}"))?;
    crate::engine::hub::export_bundle_with_results(
        card,
        registry,
        dir,
        &crate::engine::hub::secret_env_values(),
        section.as_deref(),
    )
    .map(|p| match results {
        Some(r) => format!(
            "Exported the bundle to {} with the results of {}",
            p.display(),
            r.display()
        ),
        None => format!("Exported the bundle to {}", p.display()),
    })
    .map_err(|e| e.to_string())
}

/// The cards of every configured hub (`hubs`, else the user settings file's),
/// and why a hub could not be read.
fn list_hubs(hubs: &[String], registry: &Registry) -> Done<App> {
    let mut cards = Vec::new();
    let mut problems = Vec::new();
    for hub in hubs {
        match crate::engine::hub::pull::list_cards(hub, registry) {
            Ok(listed) => cards.extend(listed),
            Err(e) => problems.push(e),
        }
    }
    Box::new(move |app: &mut App| app.library.hubs.set(cards, problems))
}

/// Pull `reference` (`NAMESPACE/NAME[@VERSION]`) from the first of `hubs`
/// that has it, with the same checks and cache as the command line, and say
/// where it came from.
fn pull_card(
    hubs: &[String],
    reference: &str,
    registry: &Registry,
    cache: &Path,
) -> Result<(Box<Card>, PulledFrom), String> {
    let r = HubRef::parse(reference)
        .ok_or_else(|| format!("`{reference}` is not NAMESPACE/NAME[@VERSION]"))?;
    let pulled = crate::engine::hub::pull::pull_into(&r, hubs, registry, cache)
        .map_err(|e| format!("cannot open {r}: {e}"))?;
    let p = &pulled.provenance;
    let from = PulledFrom {
        id: format!("{}/{}", p.namespace, p.name),
        text: format!(
            "{}/{}@{} from {} (published {}, cached in {})",
            p.namespace,
            p.name,
            p.version,
            p.hub,
            p.published,
            pulled.cached.display()
        ),
    };
    Ok((Box::new(pulled.card.into_card()), from))
}

/// Why a publication was refused, in the Publish section's words (the
/// engine's messages name the command line's flags).
fn refusal(e: &HubError) -> String {
    match e {
        HubError::Taken { card, versions } => format!(
            "{card} is already published (versions {versions}). Fill in a new Version to publish \
             another version, or change the Namespace or the card's name"
        ),
        HubError::VersionExists { card, version } => format!(
            "{card} version {version} is already published, and a published version is never \
             replaced: fill in a new Version"
        ),
        HubError::Secret { path, what } => format!(
            "The card holds {what} (found in {}). Keys belong in the environment, never in a card: \
             remove it and publish again; nothing was written",
            path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            )
        ),
        HubError::NotAHub { path, reason } => format!(
            "{} is not a hub folder ({reason}); make one with galapagos hub init",
            path.display()
        ),
        other => other.to_string(),
    }
}
