//! Changing a paused run's settings from the studio: Resume sends the card
//! on the Blocks tab (fitted to the run's task, as a new run's would be)
//! when every difference from the card the run uses can change in flight
//! ([`steering::changes::compare`]); otherwise the run stays paused, the
//! view names what cannot change and offers "Fork instead" (a new run from
//! the selected genome, or the best, with the changed card).

use std::path::Path;
use std::sync::Arc;

use egui::RichText;

use super::RunView;
use crate::engine::card::ValidCard;
use crate::engine::events::{RunCommand, RunEvent};
use crate::engine::launch::{RunPlan, fit_to_task};
use crate::engine::model::LanguageModel;
use crate::engine::registry::Registry;
use crate::engine::steering::changes::{self as steering, Diff, Fixed};
use crate::engine::task::Task;
use crate::studio::command::{Commands, UiCommand};

/// What the run view keeps to change a live run's settings.
#[derive(Default)]
pub struct LiveSettings {
    /// The live run's checked card (as it runs now) and its task: what a
    /// change is compared with and fitted to.
    running: Option<(ValidCard, Task)>,
    /// Settings sent to the paused run and not yet answered.
    sent: Option<ValidCard>,
    /// What the last Resume could not change in flight (the run stays
    /// paused); shown with "Fork instead".
    refused: Option<Vec<Fixed>>,
    /// Drawn as the studio's Run tab: the app resumes a paused run, with
    /// the Blocks tab's settings (a view drawn alone resumes it as it is).
    pub(super) in_app: bool,
    /// The toolbar's Resume was clicked this frame, for the app.
    pub(super) resume_clicked: bool,
    /// "Fork instead" was clicked this frame.
    fork_instead_clicked: bool,
}

impl LiveSettings {
    /// A run of `plan` is starting: its card is what changes are compared
    /// with.
    pub(super) fn track(&mut self, plan: &RunPlan) {
        *self = Self {
            running: Some((plan.valid_card().clone(), plan.task().clone())),
            in_app: self.in_app,
            ..Self::default()
        };
    }

    /// The run answered settings sent to it.
    pub(super) fn answered(&mut self, event: &RunEvent) {
        match event {
            RunEvent::SettingsChanged(_) => {
                if let (Some(sent), Some((running, _))) = (self.sent.take(), self.running.as_mut())
                {
                    *running = sent;
                }
            }
            RunEvent::SettingsRefused(_) => self.sent = None,
            _ => {}
        }
    }
}

impl RunView {
    /// Continue a paused run with the settings of `card` (the card on the
    /// Blocks tab, fitted to the run's task as a new run would be): when
    /// every difference from the card the run uses can change in flight
    /// ([`steering::compare`]), they are sent before the run resumes and the
    /// changes are returned; otherwise the run stays paused and what cannot
    /// change is returned. `model`: the model the studio builds from
    /// `card`'s `llm` section, sent when that section changed.
    pub fn resume_with(
        &mut self,
        card: ValidCard,
        model: Result<Arc<dyn LanguageModel>, String>,
        registry: &Registry,
    ) -> Result<Vec<Diff>, Vec<Fixed>> {
        let Some((running, task)) = &self.settings.running else {
            self.resume();
            return Ok(Vec::new());
        };
        let refuse = |this: &mut Self, fixed: Vec<Fixed>| {
            this.settings.refused = Some(fixed.clone());
            Err(fixed)
        };
        let fitted = match fit_to_task(card, task, registry) {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                return refuse(
                    self,
                    vec![Fixed {
                        what: "card".to_owned(),
                        why,
                    }],
                );
            }
        };
        let changes = match steering::compare(running, &fitted) {
            Ok(c) => c,
            Err(fixed) => return refuse(self, fixed),
        };
        let model = if running.card().llm == fitted.card().llm {
            None
        } else {
            match model {
                Ok(m) => Some(m),
                Err(e) => {
                    let why = format!("no model can be built from it: {e}");
                    return refuse(
                        self,
                        vec![Fixed {
                            what: "llm".to_owned(),
                            why,
                        }],
                    );
                }
            }
        };
        self.settings.refused = None;
        self.history.refused = None;
        if !changes.is_empty()
            && let Some(h) = &self.handle
        {
            if !h.send(RunCommand::reconfigure(fitted.clone(), model)) {
                return Err(vec![Fixed {
                    what: "run".to_owned(),
                    why: "its command queue is full; try again".to_owned(),
                }]);
            }
            self.settings.sent = Some(fitted);
        }
        self.resume();
        Ok(changes)
    }

    /// What cannot change in flight, after a refused Resume or change: a
    /// line naming each, and "Fork instead" (a new run from the selected
    /// genome, or the best, with the Blocks tab's card).
    pub(super) fn refused_ui(&mut self, ui: &mut egui::Ui) {
        if !self.is_running() {
            return;
        }
        let Some(fixed) = self
            .settings
            .refused
            .as_ref()
            .or(self.history.refused.as_ref())
        else {
            return;
        };
        let list: Vec<String> = fixed.iter().map(ToString::to_string).collect();
        let text = format!(
            "Cannot change in flight: {}. Undo that on the Blocks tab and Resume, or fork: a new \
             run from the selected (or best) genome with this card.",
            list.join("; ")
        );
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(text).color(ui.visuals().error_fg_color));
            if ui
                .button("Fork instead")
                .on_hover_text(
                    "stop this run and start a new one from the selected genome (or the best) \
                     with the card on the Blocks tab",
                )
                .clicked()
            {
                self.settings.fork_instead_clicked = true;
            }
        });
    }

    /// The commands this frame's clicks ask the app for: Resume with the
    /// Blocks tab's settings, Fork instead.
    pub(super) fn settings_commands(&mut self, commands: &mut Commands) {
        if std::mem::take(&mut self.settings.resume_clicked) {
            commands.push(UiCommand::PauseOrResume);
        }
        if std::mem::take(&mut self.settings.fork_instead_clicked)
            && let Some(dir) = self.live_run_dir().map(Path::to_path_buf)
            && let Some(genome) = self.selected.or(self.history.best_id)
        {
            commands.push(UiCommand::ForkInstead { dir, genome });
        }
    }
}
