//! Hub bundles: export the card (with a leaderboard's results when one is
//! attached) and import a bundle as a new card, both off the UI thread.

use std::path::{Path, PathBuf};

use super::App;
use super::files::Pending;
use crate::engine::card::Card;
use crate::engine::registry::Registry;
use crate::studio::command::UiCommand;
use crate::studio::files::{JobResult, Pick};
use crate::studio::state::Tab;

impl App {
    /// Apply a command of the hub group.
    pub(super) fn apply_hub_command(&mut self, command: UiCommand) {
        match command {
            UiCommand::ExportBundle(dir) => self.export_bundle(dir),
            UiCommand::ImportBundle(path) => {
                if let Some(ctx) = self.ctx.clone() {
                    let registry = self.registry.clone();
                    self.jobs.spawn("import", &ctx, move || {
                        JobResult::Imported(
                            crate::engine::hub::import_bundle(&path, &registry)
                                .map(Box::new)
                                .map_err(|e| e.to_string()),
                        )
                    });
                }
            }
            UiCommand::BrowseExport => {
                if let Some(ctx) = self.ctx.clone() {
                    self.jobs
                        .pick(Pick::ExportFolder, self.dialog_start(), &ctx);
                }
            }
            UiCommand::BrowseImport => {
                if let Some(ctx) = self.ctx.clone() {
                    self.jobs
                        .pick(Pick::ImportBundle, self.dialog_start(), &ctx);
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
                    self.jobs.pick(Pick::ExportResults, start, &ctx);
                }
            }
            other => self.misrouted(&other),
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
        self.jobs.spawn("export", &ctx, move || JobResult::Done {
            what: "export".to_owned(),
            outcome: export_with_results(&card, &registry, &dir, results.as_deref()),
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
        .map(|r| crate::engine::leaderboard::report::results_section(r, &card.name))
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
