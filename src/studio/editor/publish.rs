//! The Details tab's Publish to hub: pick a hub folder (the user settings
//! file's, or any typed), a namespace and a version, publish the card as a
//! new version, and read back where the card is published and, for a card
//! pulled from a hub, where it came from.

use std::path::PathBuf;

use egui::{RichText, Ui};

use crate::studio::command::{Commands, UiCommand};
use crate::studio::panel::TabCtx;

/// (namespace, name, hub field) the publications were read for.
type PublishedKey = (String, String, String);
/// A hub and the card's versions in it.
type PublishedIn = (String, Vec<String>);

/// Where a card opened from a hub was pulled from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PulledFrom {
    /// `NAMESPACE/NAME` of the card pulled.
    pub id: String,
    /// `NS/NAME@VERSION from HUB (published DATE, cached in PATH)`.
    pub text: String,
}

/// The Publish to hub form and what it last learnt.
#[derive(Default)]
pub struct PublishForm {
    /// The hub folder to publish into.
    pub hub: String,
    /// The namespace to publish under (empty: the card's own).
    pub namespace: String,
    /// The version to publish (empty: `1` for a name not yet published).
    pub version: String,
    /// The hubs to offer instead of the user settings file's (tests,
    /// embedding).
    pub hubs_override: Option<Vec<String>>,
    /// The configured hubs as read (or why they could not be).
    configured: Option<Result<Vec<String>, String>>,
    /// Where the card is published, for the key it was read for.
    published: Option<(PublishedKey, Vec<PublishedIn>)>,
    /// The last publication: what was published, or why not.
    outcome: Option<Result<String, String>>,
    /// Where the open card was pulled from.
    origin: Option<PulledFrom>,
    /// A pulled card on its way to being opened.
    awaiting: Option<PulledFrom>,
    /// The hub field was filled from the configured hubs once.
    prefilled: bool,
}

impl PublishForm {
    /// A card was pulled from a hub and is about to be opened.
    pub fn pulled(&mut self, from: PulledFrom) {
        self.awaiting = Some(from);
    }

    /// A card was opened: it keeps the origin of the pull that brought it
    /// (if it is that card), and the last outcome only if it is the same card.
    pub fn document_changed(&mut self, namespace: &str, name: &str) {
        let id = format!("{namespace}/{name}");
        if self.origin.as_ref().is_none_or(|o| o.id != id) {
            self.outcome = None;
        }
        self.origin = self.awaiting.take().filter(|from| from.id == id);
    }

    /// Where the open card was pulled from, if it was.
    pub fn origin(&self) -> Option<&PulledFrom> {
        self.origin.as_ref()
    }

    /// A publication finished: show its outcome and read where the card is
    /// published again.
    pub fn finished(&mut self, outcome: Result<String, String>) {
        self.outcome = Some(outcome);
        self.published = None;
    }

    /// The hubs to offer: the override, else the user settings file's.
    fn configured(&mut self) -> &Result<Vec<String>, String> {
        let override_hubs = self.hubs_override.clone();
        self.configured.get_or_insert_with(|| match override_hubs {
            Some(h) => Ok(h),
            None => crate::engine::hub::pull::configured_hubs(&[]),
        })
    }

    /// Offer other hubs (the library's override was set).
    pub fn set_hubs(&mut self, hubs: Vec<String>) {
        self.hubs_override = Some(hubs);
        self.configured = None;
        self.published = None;
        self.prefilled = false;
    }

    /// Read the configured hubs again (the settings file may have changed:
    /// the library's Refresh hubs does this too).
    pub fn reload_hubs(&mut self) {
        self.configured = None;
        self.published = None;
    }

    /// The section.
    pub fn ui(&mut self, ui: &mut Ui, ctx: &TabCtx<'_>, commands: &mut Commands) {
        let card = ctx.card.card;
        let folders: Vec<String> = match self.configured() {
            // the hubs given as folders (a path or a file:// address): a
            // site at an http(s):// address is read-only
            Ok(hubs) => hubs
                .iter()
                .filter(|h| !h.contains("://") || h.starts_with("file://"))
                .filter_map(|h| crate::engine::hub::pull::local_path(h).ok())
                .map(|p| p.display().to_string())
                .collect(),
            Err(_) => Vec::new(),
        };
        // the first configured folder, once (a person may clear the field)
        if !self.prefilled {
            self.prefilled = true;
            if self.hub.is_empty()
                && let Some(first) = folders.first()
            {
                self.hub.clone_from(first);
            }
        }
        ui.heading("Publish to hub");
        if let Some(origin) = &self.origin {
            ui.label(format!("Pulled from a hub: {}", origin.text));
        }
        ui.weak(
            "Writes the card into a hub folder (galapagos hub init makes one) as a new version: \
             the card is checked and scanned for secrets as on export, earlier versions are kept, \
             and a git hub gets one commit",
        );
        let hub = self.hub.trim().to_owned();
        let (id, found) = self.published(ctx, &hub);
        // the versions the name has in the hub folder typed: the version
        // to fill in is a new one
        let taken: Vec<String> = found
            .iter()
            .find(|(h, _)| *h == hub)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let version_hint = match taken.last() {
            None => "1 (a new name)".to_owned(),
            Some(last) => match last.parse::<u64>() {
                Ok(n) => format!("{} (a new one: {id} has {})", n + 1, taken.join(", ")),
                Err(_) => format!("a new one ({id} has {})", taken.join(", ")),
            },
        };
        egui::Grid::new("publish-grid")
            .num_columns(2)
            .spacing([12.0, 6.0])
            .show(ui, |ui| {
                let label = ui.label("Hub folder");
                ui.horizontal(|ui| {
                    ui.add(
                        egui::TextEdit::singleline(&mut self.hub)
                            .hint_text("a folder made by galapagos hub init")
                            .desired_width(320.0),
                    )
                    .labelled_by(label.id);
                    self.hub_picker_ui(ui, &folders);
                });
                ui.end_row();
                let label = ui.label("Namespace");
                ui.add(
                    egui::TextEdit::singleline(&mut self.namespace)
                        .hint_text(card.namespace.as_str())
                        .desired_width(160.0),
                )
                .labelled_by(label.id);
                ui.end_row();
                let label = ui.label("Version");
                ui.add(
                    egui::TextEdit::singleline(&mut self.version)
                        .hint_text(version_hint)
                        .desired_width(320.0),
                )
                .labelled_by(label.id);
                ui.end_row();
            });
        if let Err(e) = self.configured() {
            ui.colored_label(ui.visuals().warn_fg_color, format!("Configured hubs: {e}"));
        } else if folders.is_empty() {
            ui.weak(
                "The user settings file lists no hub folder (\"hubs\"): type one, \
                 or make one with galapagos hub init",
            );
        }
        let blocker = ctx.card.problems.summary();
        let publish = ui.add_enabled(
            !hub.is_empty() && blocker.is_none(),
            egui::Button::new("Publish"),
        );
        let publish = match &blocker {
            Some(why) => publish.on_disabled_hover_text(format!("Fix the card first: {why}")),
            None if hub.is_empty() => publish.on_disabled_hover_text("Fill in the hub folder"),
            None => publish.on_hover_text("Publish the card as a new version into the hub folder"),
        };
        if publish.clicked() {
            let field = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
            commands.push(UiCommand::PublishToHub {
                hub: PathBuf::from(&hub),
                namespace: field(&self.namespace),
                version: field(&self.version),
            });
        }
        match &self.outcome {
            Some(Ok(text)) => {
                ui.label(RichText::new(text).color(ctx.card.palette.ok));
            }
            Some(Err(why)) => {
                ui.label(RichText::new(why).color(ui.visuals().error_fg_color));
            }
            None => {}
        }
        if found.is_empty() {
            ui.weak(format!(
                "{id} is not published in the hub folder above or the configured hubs"
            ));
        }
        for (hub, versions) in &found {
            ui.label(format!(
                "Published as {id} in {hub}: versions {}",
                versions.join(", ")
            ));
        }
    }

    fn hub_picker_ui(&mut self, ui: &mut Ui, folders: &[String]) {
        if folders.is_empty() {
            return;
        }
        let mut picked = None;
        egui::ComboBox::from_id_salt("publish-hub")
            .selected_text("Configured hubs")
            .show_ui(ui, |ui| {
                for folder in folders {
                    if ui.selectable_label(self.hub == *folder, folder).clicked() {
                        picked = Some(folder.clone());
                    }
                }
            })
            .response
            .on_hover_text("The hub folders the user settings file lists");
        if let Some(p) = picked {
            self.hub = p;
        }
    }

    /// `NAMESPACE/NAME` as the card would be published, and where it is
    /// published: the hub folder typed and the configured folders (read
    /// again when one of those changes, or after a publication).
    fn published(&mut self, ctx: &TabCtx<'_>, hub: &str) -> (String, Vec<PublishedIn>) {
        let card = ctx.card.card;
        let namespace = Some(self.namespace.trim())
            .filter(|s| !s.is_empty())
            .unwrap_or(card.namespace.as_str())
            .to_owned();
        let id = format!("{namespace}/{}", card.name);
        let key = (namespace.clone(), card.name.clone(), hub.to_owned());
        if let Some((k, found)) = &self.published
            && *k == key
        {
            return (id, found.clone());
        }
        let mut hubs = self.configured().clone().unwrap_or_default();
        if !hub.is_empty() && !hubs.iter().any(|h| h == hub) {
            hubs.insert(0, hub.to_owned());
        }
        let found = crate::engine::hub::pull::published_in(&hubs, &namespace, &card.name);
        self.published = Some((key, found.clone()));
        (id, found)
    }
}
