//! The model runs use: one fixed by the host, or the one the user's model
//! settings and the card's `llm` section choose; the settings file and the
//! model settings dialog.

use std::path::PathBuf;
use std::sync::Arc;

use super::{App, ResolvedModel};
use crate::engine::card::Card;
use crate::engine::model::{LanguageModel, ModelSettings};
use crate::studio::command::UiCommand;
use crate::studio::model_ui::ModelDialogCtx;

impl App {
    /// Apply a command of the model group.
    pub(super) fn apply_model_command(&mut self, command: UiCommand) {
        match command {
            UiCommand::OpenModelSettings => {
                // the dialog starts from the file as it is now (a hand edit
                // since the studio started included)
                let path = self.settings_path.clone();
                self.set_settings_path(path);
                self.model_dialog.open_with(&self.settings);
            }
            UiCommand::CloseModelSettings => self.model_dialog.open = false,
            UiCommand::SaveModelSettings(settings) => self.save_model_settings(*settings),
            other => self.misrouted(&other),
        }
    }

    /// The model settings dialog, when open.
    pub(super) fn model_dialog_ui(&mut self, ctx: &egui::Context) {
        let fixed = self.fixed_model.as_ref().map(|m| m.describe());
        let dctx = ModelDialogCtx {
            path: self.settings_path.as_deref(),
            load_error: self.settings_error.as_deref(),
            card_llm: self.doc.card.llm.as_ref(),
            in_flight: self.doc.card.general.parallel as usize,
            card_revision: self.doc.revision,
            fixed_model: fixed.as_deref(),
        };
        self.model_dialog.ui(ctx, &dctx, &mut self.commands);
    }

    pub fn with_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.fixed_model = Some(model);
        self.resolved = None;
        self
    }

    pub fn with_settings_path(mut self, path: Option<PathBuf>) -> Self {
        self.set_settings_path(path);
        self
    }

    /// See [`Self::with_settings_path`]; reloads the settings.
    pub fn set_settings_path(&mut self, path: Option<PathBuf>) {
        let loaded = path.as_deref().map_or_else(
            || Ok(ModelSettings::default()),
            crate::engine::model::user_settings::load_settings_from,
        );
        match loaded {
            Ok(s) => {
                self.settings = s;
                self.settings_error = None;
            }
            Err(e) => {
                self.settings = ModelSettings::default();
                self.settings_error = Some(e.to_string());
            }
        }
        self.settings_path = path;
        self.settings_version += 1;
        self.resolved = None;
    }

    /// The model settings in use (as last loaded or saved).
    pub fn model_settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// Whether the model dialog is open.
    pub fn model_dialog_open(&self) -> bool {
        self.model_dialog.open
    }

    /// Which model a run of the current card will use (its description), or
    /// why it cannot be built.
    pub fn model_description(&mut self) -> Result<String, String> {
        self.resolve_model().map(|(_, d)| d)
    }

    pub(super) fn build_run_model(&self, card: &Card) -> ResolvedModel {
        self.build_model_for(card, card.general.parallel as usize)
    }

    /// The model of `card` for `in_flight` model calls at once.
    pub(super) fn build_model_for(&self, card: &Card, in_flight: usize) -> ResolvedModel {
        if let Some(m) = &self.fixed_model {
            return Ok((Arc::clone(m), m.describe()));
        }
        if let Some(e) = &self.settings_error {
            return Err(format!("model settings: {e}"));
        }
        crate::studio::model_ui::studio_model(card.llm.as_ref(), &self.settings, in_flight)
    }

    /// The run model of the current card (cached per card revision and
    /// settings version).
    pub(super) fn resolve_model(&mut self) -> ResolvedModel {
        let key = (self.doc.revision, self.settings_version);
        if let Some((rev, ver, r)) = &self.resolved
            && (*rev, *ver) == key
        {
            return r.clone();
        }
        let r = self.build_run_model(&self.doc.card);
        self.resolved = Some((key.0, key.1, r.clone()));
        r
    }

    /// Write the dialog's endpoints and prices into the settings file as it
    /// is now (its other keys, such as `hubs`, are kept), unless the file
    /// changed in those fields since the dialog opened: then nothing is
    /// written and the dialog says so.
    fn save_model_settings(&mut self, settings: ModelSettings) {
        let Some(path) = self.settings_path.clone() else {
            return self.error("There is no settings file to save to");
        };
        match crate::engine::model::user_settings::update_settings_file(
            &path,
            &self.settings,
            &settings,
        ) {
            Ok(saved) => {
                self.settings = saved;
                self.settings_error = None;
                self.settings_version += 1;
                self.resolved = None;
                self.model_dialog.open = false;
                self.model_dialog.save_error = None;
                self.info(format!("Saved the model settings to {}", path.display()));
            }
            Err(e) => {
                let text = match e {
                    crate::engine::model::ConfigError::ChangedOnDisk { .. } => format!(
                        "model settings: {e} (Close, then open Model settings again to see the file's)"
                    ),
                    e => format!("model settings: {e}"),
                };
                self.model_dialog.save_error = Some(text.clone());
                self.error(text);
            }
        }
    }
}
