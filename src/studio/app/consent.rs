//! Asking before a card lowers isolation: every way the studio starts a run
//! (Start run, Fork, Resume, a leaderboard's Start) goes through here. A
//! run whose card needs a consent it lacks (see `crate::engine::consent`:
//! a card from elsewhere that lowers any setting, or one that runs
//! unsandboxed as root) is held, nothing written, while a dialog lists each
//! lowered setting and what it allows, with two buttons: "Allow for this
//! card" (a consent for that card's hash naming exactly those settings,
//! recorded with the run) and "Cancel". A run of the user's own card that
//! lowers something starts, and the status bar says what it lowers once.

use std::path::PathBuf;
use std::sync::Arc;

use egui::RichText;

use super::App;
use crate::engine::consent::{Consent, ConsentNeeded};
use crate::engine::launch::{LaunchError, RunPlan};
use crate::engine::leaderboard::BatchSpec;
use crate::engine::model::LanguageModel;
use crate::studio::command::UiCommand;
use crate::studio::run::RunHistory;
use crate::studio::theme;

/// How a consent given in the studio says it was given.
const VIA: &str = "the studio's dialog";

/// What a run held for a consent becomes once it is given.
pub(super) enum Then {
    /// A new run, recorded in a fresh folder under the runs folder.
    New,
    /// A fork of genome `genome` of the run in `dir`, in a fresh folder.
    Fork { dir: PathBuf, genome: u64 },
    /// The recorded run in `dir` resumed live up to `iterations`, its
    /// record shown.
    Resume {
        history: Box<RunHistory>,
        dir: PathBuf,
        iterations: u64,
    },
}

/// What waits for the person's answer.
enum Held {
    Run {
        plan: Box<RunPlan>,
        model: Arc<dyn LanguageModel>,
        then: Then,
    },
    Leaderboard {
        spec: Box<BatchSpec>,
        baseline: String,
        target: Option<f64>,
    },
}

/// The dialog's question: what each card asks for, and the run held.
pub(super) struct Asking {
    needed: Vec<ConsentNeeded>,
    held: Held,
}

impl App {
    /// Start `plan` as `then` says when its card's lowered isolation needs
    /// no consent it lacks; else hold it and ask.
    pub(super) fn start_cleared(
        &mut self,
        plan: RunPlan,
        model: Arc<dyn LanguageModel>,
        then: Then,
    ) {
        match plan.check_consent() {
            Ok(()) => self.go(plan, model, then),
            Err(LaunchError::ConsentNeeded(needed)) => {
                self.asking = Some(Asking {
                    needed: vec![*needed],
                    held: Held::Run {
                        plan: Box::new(plan),
                        model,
                        then,
                    },
                });
            }
            Err(e) => self.error(format!("Cannot start: {e}")),
        }
    }

    /// Start a leaderboard batch when none of its cards needs a consent it
    /// lacks; else hold it and ask.
    pub(super) fn start_batch_cleared(
        &mut self,
        spec: BatchSpec,
        baseline: String,
        target: Option<f64>,
    ) {
        let needed = crate::engine::leaderboard::consents_needed(&spec, &self.registry);
        if needed.is_empty() {
            self.start_batch(spec, baseline, target);
        } else {
            self.asking = Some(Asking {
                needed,
                held: Held::Leaderboard {
                    spec: Box::new(spec),
                    baseline,
                    target,
                },
            });
        }
    }

    /// The person allowed what the dialog listed: the held run goes on with
    /// a consent for each card's hash, naming exactly those settings.
    pub(super) fn allow_lowered(&mut self) {
        let Some(asking) = self.asking.take() else {
            return;
        };
        let consents: Vec<Consent> = asking.needed.iter().map(|n| Consent::to(n, VIA)).collect();
        match asking.held {
            Held::Run { plan, model, then } => {
                let plan = plan.with_consent_from(&consents);
                self.go(plan, model, then);
            }
            Held::Leaderboard {
                mut spec,
                baseline,
                target,
            } => {
                spec.consents.extend(consents);
                self.start_batch(*spec, baseline, target);
            }
        }
    }

    /// The person declined: nothing runs.
    pub(super) fn cancel_lowered(&mut self) {
        if let Some(asking) = self.asking.take() {
            let names: Vec<&str> = asking.needed.iter().map(|n| n.card_name.as_str()).collect();
            self.info(format!(
                "Not started: {} lowers the sandbox's isolation and was not allowed",
                names.join(", ")
            ));
        }
    }

    /// Start a cleared plan as `then` says.
    fn go(&mut self, plan: RunPlan, model: Arc<dyn LanguageModel>, then: Then) {
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let lowered: Vec<String> = plan
            .clearance()
            .lowered
            .iter()
            .map(|l| l.setting.clone())
            .collect();
        match then {
            Then::New => {
                let plan = match plan.in_new_folder(&self.state.runs_folder) {
                    Ok(p) => p,
                    Err(e) => return self.error(format!("Cannot start: {e}")),
                };
                self.run_view.start(plan, model, &ctx);
                self.state.tab = crate::studio::state::Tab::Run;
            }
            Then::Fork { dir, genome } => {
                let plan = match plan.in_new_folder(&self.state.runs_folder) {
                    Ok(p) => p,
                    Err(e) => return self.error(format!("Fork: {e}")),
                };
                let into = plan
                    .run_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                self.run_view.start(plan, model, &ctx);
                self.state.tab = crate::studio::state::Tab::Run;
                self.runs.refresh();
                self.info(format!(
                    "Forked genome #{genome} of {} into {into}",
                    dir.display()
                ));
            }
            Then::Resume {
                history,
                dir,
                iterations,
            } => {
                self.run_view.continue_recorded(*history, plan, model, &ctx);
                self.state.tab = crate::studio::state::Tab::Run;
                self.info(format!(
                    "Resuming {} up to {iterations} iterations",
                    dir.display()
                ));
            }
        }
        if !lowered.is_empty() {
            self.info(format!(
                "This run lowers the sandbox's isolation: {} (the run's log says what each allows)",
                lowered.join(", ")
            ));
        }
    }

    /// The dialog, while a run waits for the person's answer.
    pub(super) fn consent_ui(&mut self, ctx: &egui::Context) {
        let Some(asking) = &self.asking else {
            return;
        };
        let several = asking.needed.len() > 1;
        let response = egui::Modal::new(egui::Id::unique("consent-lowered")).show(ctx, |ui| {
            ui.set_max_width(640.0);
            ui.heading("Allow lowered isolation?");
            egui::ScrollArea::vertical()
                .max_height(360.0)
                .show(ui, |ui| {
                    for needed in &asking.needed {
                        ui.add_space(6.0);
                        ui.add(egui::Label::new(capitalized(&needed.reason())).wrap());
                        for l in &needed.lowered {
                            ui.horizontal_wrapped(|ui| {
                                ui.label(RichText::new(&l.setting).monospace().strong());
                                ui.label(&l.what);
                            });
                        }
                        ui.weak(format!(
                            "Card hash {}: a changed card asks again.",
                            needed.hash
                        ));
                    }
                });
            ui.add_space(theme::SECTION_GAP);
            ui.horizontal(|ui| {
                let allow = if several {
                    "Allow for these cards"
                } else {
                    "Allow for this card"
                };
                if ui
                    .button(allow)
                    .on_hover_text(
                        "Run with exactly these settings, for this card only; the run records the consent",
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::AllowLowered);
                }
                if ui.button("Cancel").clicked() {
                    self.commands.push(UiCommand::CancelLowered);
                }
            });
        });
        if response.should_close() {
            self.commands.push(UiCommand::CancelLowered);
        }
    }

    /// True while a run waits for the person's consent.
    pub fn is_asking_consent(&self) -> bool {
        self.asking.is_some()
    }
}

/// `text` with its first letter in capitals.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}
