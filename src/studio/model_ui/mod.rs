//! The Model dialog: edits the per-user model settings (endpoints, each
//! from a provider preset or by hand, and the price table), tests an
//! endpoint's connection on a worker thread, and shows which model a run of
//! the current card will use.
//!
//! Endpoints hold the NAME of the environment variable with the key, never a
//! key: the field is validated as a variable name, and a value that is not
//! one (perhaps a pasted key) is masked and never echoed in messages.

use std::path::Path;
use std::sync::Arc;

use egui::{RichText, Ui};

mod connection;
mod endpoint;

use endpoint::EndpointDraft;

use crate::engine::card::LlmSettings;
use crate::engine::model::{
    EndpointSettings, LanguageModel, ModelOverrides, ModelSettings, PRESETS, Price, build_model,
};
use crate::studio::command::{Commands, UiCommand};
use crate::studio::theme;

/// The model a run of a card with `card_llm` and `in_flight` model calls at
/// once (its `general.parallel`) uses under `settings`, and its
/// description, said in the studio's words: the engine's description
/// tells a command-line user which flags name a real model; here the
/// Model settings dialog does.
pub fn studio_model(
    card_llm: Option<&LlmSettings>,
    settings: &ModelSettings,
    in_flight: usize,
) -> Result<(Arc<dyn LanguageModel>, String), String> {
    build_model(
        card_llm,
        &ModelOverrides {
            in_flight: Some(in_flight),
            ..ModelOverrides::default()
        },
        settings,
        crate::engine::model::default_model(),
    )
    .map(|(model, desc)| (model, in_studio_words(&desc)))
    .map_err(|e| in_studio_words(&e.to_string()))
}

/// A model description or error with its command-line advice (`use
/// --api-base URL --model NAME …`, `pass --api-base`, `--api-key-env`)
/// said as what to do in the studio.
pub fn in_studio_words(text: &str) -> String {
    const REAL: &str = " for a real model";
    let mut out = match (text.find("; use "), text.rfind(REAL)) {
        (Some(a), Some(b)) if a < b && text[a..b].contains("--") => format!(
            "{}; add an endpoint in Model settings (Add endpoint, or Add a provider…){}",
            &text[..a],
            &text[b..]
        ),
        _ => text.to_owned(),
    };
    for (flag, words) in [
        (", pass --api-base, or set", ", or set"),
        (
            "name another variable with --api-key-env",
            "name another variable in the endpoint's key variable field",
        ),
    ] {
        out = out.replace(flag, words);
    }
    out
}

/// Size of a text field in the dialog (grids shrink fields otherwise).
pub(super) const FIELD: [f32; 2] = [210.0, 20.0];

/// Base URL a new endpoint starts with (a local Ollama server).
pub const NEW_ENDPOINT_BASE: &str = "http://localhost:11434/v1";

/// One row of the price table being edited.
#[derive(Clone, Debug, PartialEq)]
struct PriceRow {
    model: String,
    prompt: f64,
    completion: f64,
    /// Cache reads and writes; unset: the prompt price.
    cached: Option<f64>,
    cache_write: Option<f64>,
}

impl PriceRow {
    fn price(&self) -> Price {
        Price {
            cached_per_million: self.cached,
            cache_write_per_million: self.cache_write,
            ..Price::new(self.prompt, self.completion)
        }
    }
}

/// The dialog's state: a draft of the settings, applied only on Save.
#[derive(Default)]
pub struct ModelDialog {
    /// Whether the dialog is shown.
    pub open: bool,
    endpoints: Vec<EndpointDraft>,
    prices: Vec<PriceRow>,
    /// The settings file's hubs, kept as they were (the dialog does not edit them).
    hubs: Vec<String>,
    /// Why the last Save did not write the file (shown in the dialog).
    pub save_error: Option<String>,
    /// Bumped on every draft edit (the preview is cached on it).
    version: u64,
    preview: Option<(u64, u64, Result<String, String>)>,
}

/// What the app tells the dialog.
pub struct ModelDialogCtx<'a> {
    /// Where Save writes (`None`: nowhere, Save is disabled).
    pub path: Option<&'a Path>,
    /// Why the saved settings could not be loaded, if so.
    pub load_error: Option<&'a str>,
    /// The card's `llm` section (for the preview).
    pub card_llm: Option<&'a LlmSettings>,
    /// The card's iterations in flight (`general.parallel`).
    pub in_flight: usize,
    /// Revision of the card (the preview is cached on it).
    pub card_revision: u64,
    /// A model set by the host, overriding the settings (tests, embedding).
    pub fixed_model: Option<&'a str>,
}

impl ModelDialog {
    /// Open the dialog with `settings` as the draft.
    pub fn open_with(&mut self, settings: &ModelSettings) {
        self.endpoints = settings.endpoints.iter().map(EndpointDraft::of).collect();
        self.hubs.clone_from(&settings.hubs);
        self.save_error = None;
        self.prices = settings
            .prices
            .prices
            .iter()
            .map(|(m, p)| PriceRow {
                model: m.clone(),
                prompt: p.prompt_per_million,
                completion: p.completion_per_million,
                cached: p.cached_per_million,
                cache_write: p.cache_write_per_million,
            })
            .collect();
        self.version += 1;
        self.open = true;
    }

    /// The draft as settings (not validated).
    pub fn draft(&self) -> ModelSettings {
        let mut s = ModelSettings {
            endpoints: self
                .endpoints
                .iter()
                .map(EndpointDraft::to_settings)
                .collect(),
            hubs: self.hubs.clone(),
            ..ModelSettings::default()
        };
        for row in &self.prices {
            s.prices.insert(row.model.trim(), row.price());
        }
        s
    }

    /// Why the draft cannot be saved, if so.
    pub fn save_blocker(&self, path: Option<&Path>) -> Option<String> {
        if path.is_none() {
            return Some("No settings file (the platform has no config folder)".to_owned());
        }
        let mut names: Vec<&str> = self.prices.iter().map(|r| r.model.trim()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Some("Two prices name the same model".to_owned());
        }
        self.draft().validate().err().map(|e| e.to_string())
    }

    fn preview(&mut self, ctx: &ModelDialogCtx<'_>) -> Result<String, String> {
        if let Some(fixed) = ctx.fixed_model {
            return Ok(fixed.to_owned());
        }
        if let Some((v, rev, r)) = &self.preview
            && *v == self.version
            && *rev == ctx.card_revision
        {
            return r.clone();
        }
        let r = studio_model(ctx.card_llm, &self.draft(), ctx.in_flight).map(|(_, desc)| desc);
        self.preview = Some((self.version, ctx.card_revision, r.clone()));
        r
    }

    /// Draw the dialog (a modal window) when open.
    pub fn ui(&mut self, ctx: &egui::Context, info: &ModelDialogCtx<'_>, commands: &mut Commands) {
        if !self.open {
            return;
        }
        let response = egui::Modal::new(egui::Id::unique("model-settings")).show(ctx, |ui| {
            ui.set_min_width(720.0);
            ui.set_max_width(760.0);
            ui.heading("Model settings");
            ui.label(
                RichText::new(
                    "Endpoints: a provider's API or a local server. Keys are never stored: give the \
                     NAME of the environment variable that holds each key.",
                )
                .weak(),
            );
            match info.path {
                Some(p) => ui.weak(format!("Settings file: {}", p.display())),
                None => ui.weak("No settings file on this platform"),
            };
            if let Some(e) = info.load_error {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("The saved settings could not be loaded: {e}"),
                );
            }
            ui.add_space(6.0);
            egui::ScrollArea::vertical()
                .max_height(ctx.content_rect().height() * 0.6)
                .show(ui, |ui| {
                    self.endpoints_ui(ui);
                    ui.add_space(theme::SECTION_GAP);
                    self.prices_ui(ui);
                });
            ui.add_space(theme::SECTION_GAP);
            ui.separator();
            let preview = self.preview(info);
            ui.horizontal_wrapped(|ui| {
                ui.label(RichText::new("Runs will use:").strong());
                match &preview {
                    Ok(desc) => ui.label(desc),
                    Err(e) => ui.colored_label(ui.visuals().error_fg_color, e),
                };
            });
            ui.add_space(6.0);
            if let Some(e) = &self.save_error {
                ui.add(
                    egui::Label::new(RichText::new(e).color(ui.visuals().error_fg_color)).wrap(),
                );
            }
            ui.horizontal(|ui| {
                let blocker = self.save_blocker(info.path);
                let save = ui.add_enabled(blocker.is_none(), egui::Button::new("Save settings"));
                let save = match &blocker {
                    Some(why) => save.on_disabled_hover_text(why),
                    None => save.on_hover_text("Write the settings file; the next run uses it"),
                };
                if save.clicked() {
                    commands.push(UiCommand::SaveModelSettings(Box::new(self.draft())));
                }
                if ui.button("Close").clicked() {
                    commands.push(UiCommand::CloseModelSettings);
                }
                if let Some(why) = &blocker {
                    ui.colored_label(ui.visuals().error_fg_color, why);
                }
            });
        });
        if response.should_close() {
            commands.push(UiCommand::CloseModelSettings);
        }
    }

    fn endpoints_ui(&mut self, ui: &mut Ui) {
        ui.label(RichText::new("Endpoints").strong());
        if self.endpoints.is_empty() {
            ui.weak("No endpoint: runs use the card's models with OPENAI_BASE_URL, or the offline model.");
        }
        let mut remove: Option<usize> = None;
        let mut changed = false;
        for (i, ep) in self.endpoints.iter_mut().enumerate() {
            ui.push_id(("endpoint", i), |ui| {
                let edit = ep.ui(ui);
                changed |= edit.changed;
                if edit.remove {
                    remove = Some(i);
                }
            });
        }
        if let Some(i) = remove {
            self.endpoints.remove(i);
            changed = true;
        }
        ui.horizontal(|ui| {
            if ui
                .button("Add endpoint")
                .on_hover_text(
                    "Add an endpoint (a local Ollama server to start with; pick a provider in it)",
                )
                .clicked()
            {
                self.endpoints
                    .push(EndpointDraft::of(&EndpointSettings::for_base(
                        NEW_ENDPOINT_BASE,
                    )));
                changed = true;
            }
            let mut picked = None;
            ui.menu_button("Add a provider…", |ui| {
                for p in PRESETS {
                    if ui.button(p.label).on_hover_text(p.note).clicked() {
                        picked = Some(p);
                        ui.close();
                    }
                }
            })
            .response
            .on_hover_text("An endpoint with a provider's URL, protocol, key variable and headers");
            if let Some(p) = picked {
                self.endpoints
                    .push(EndpointDraft::of(&EndpointSettings::of_preset(p)));
                changed = true;
            }
        });
        if changed {
            self.version += 1;
        }
    }

    fn prices_ui(&mut self, ui: &mut Ui) {
        ui.label(RichText::new("Prices (USD per 1M tokens)").strong());
        let mut remove: Option<usize> = None;
        let mut changed = false;
        if !self.prices.is_empty() {
            egui::Grid::new("prices-grid")
                .num_columns(6)
                .spacing([10.0, 6.0])
                .show(ui, |ui| {
                    for h in ["model", "prompt", "completion", "cache read", "cache write", ""] {
                        ui.label(RichText::new(h).weak());
                    }
                    ui.end_row();
                    for (i, row) in self.prices.iter_mut().enumerate() {
                        ui.push_id(("price", i), |ui| {
                            changed |= ui
                                .add_sized(
                                    FIELD,
                                    egui::TextEdit::singleline(&mut row.model)
                                        .hint_text("model name"),
                                )
                                .changed();
                        });
                        changed |= ui
                            .add(
                                egui::DragValue::new(&mut row.prompt)
                                    .range(0.0..=10_000.0)
                                    .speed(0.01)
                                    .prefix("$"),
                            )
                            .changed();
                        changed |= ui
                            .add(
                                egui::DragValue::new(&mut row.completion)
                                    .range(0.0..=10_000.0)
                                    .speed(0.01)
                                    .prefix("$"),
                            )
                            .changed();
                        for slot in [&mut row.cached, &mut row.cache_write] {
                            let mut v = slot.unwrap_or(row.prompt);
                            if ui
                                .add(
                                    egui::DragValue::new(&mut v)
                                        .range(0.0..=10_000.0)
                                        .speed(0.01)
                                        .prefix("$"),
                                )
                                .on_hover_text("Per 1M input tokens read from / written to the provider's prompt cache")
                                .changed()
                            {
                                *slot = Some(v);
                                changed = true;
                            }
                        }
                        if ui.button("Remove price").clicked() {
                            remove = Some(i);
                        }
                        ui.end_row();
                    }
                });
        }
        if let Some(i) = remove {
            self.prices.remove(i);
            changed = true;
        }
        if ui.button("Add price").clicked() {
            self.prices.push(PriceRow {
                model: String::new(),
                prompt: 0.0,
                completion: 0.0,
                cached: None,
                cache_write: None,
            });
            changed = true;
        }
        if changed {
            self.version += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_round_trips_and_blocks_bad_values_without_echoing_keys() {
        let mut s = ModelSettings::default();
        s.endpoints.push(EndpointSettings {
            name: "local".into(),
            model: Some("qwen".into()),
            models: vec!["a".into(), "b".into()],
            ..EndpointSettings::for_base("http://localhost:8000/v1")
        });
        s.prices
            .insert("qwen", Price::new(0.5, 1.5).with_cache(0.05, 0.625));
        let mut d = ModelDialog::default();
        d.open_with(&s);
        assert!(d.open);
        assert_eq!(d.draft(), s);
        let path = Path::new("/tmp/settings.json");
        assert_eq!(d.save_blocker(Some(path)), None);
        assert!(d.save_blocker(None).is_some());

        d.endpoints[0].settings.api_key_env = "sk-secret-123".into();
        let why = d.save_blocker(Some(path)).unwrap_or_default();
        assert!(
            why.contains("NAME") && !why.contains("sk-secret-123"),
            "{why}"
        );
        d.endpoints[0].settings.api_key_env = "MY_KEY".into();
        d.prices.push(PriceRow {
            model: "qwen".into(),
            prompt: 1.0,
            completion: 1.0,
            cached: None,
            cache_write: None,
        });
        assert!(
            d.save_blocker(Some(path))
                .is_some_and(|w| w.contains("same model"))
        );
    }
}
