//! The run view's notes box: notes for the model, added to every following
//! prompt through the run's memory, and the genomes pinned as inspirations
//! (pinned from the inspector, removed here). Changes go to the live run as
//! commands; what the run reports back (its `Steered` events, or a recorded
//! run's checkpoint) is what is shown as in force.

use egui::RichText;

use crate::engine::genome::{Genome, GenomeId};
use crate::engine::steering::Steering;

/// What the person asked for in the notes box this frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SteerAction {
    /// Replace the notes (empty: clear them).
    SetNotes(String),
    /// Stop showing this pinned genome.
    Unpin(GenomeId),
    /// Select this genome (a pin's link).
    Select(GenomeId),
}

/// The notes box's state.
#[derive(Default)]
pub struct NotesBox {
    /// Shown under the toolbar.
    pub open: bool,
    /// The text being written.
    draft: String,
    /// The notes in force the draft last followed: while the draft is
    /// unchanged from them, it follows what the run reports.
    followed: String,
}

impl NotesBox {
    /// Forget the draft (a new run is shown).
    pub fn reset(&mut self) {
        self.draft.clear();
        self.followed.clear();
    }

    /// Replace the text being written (what typing does; for tests).
    pub fn set_draft(&mut self, text: impl Into<String>) {
        self.draft = text.into();
    }

    /// Draw the box for the steering in force; `live`: a run takes changes.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        steering: &Steering,
        live: bool,
    ) -> Option<SteerAction> {
        if self.draft == self.followed && self.followed != steering.notes {
            self.draft.clone_from(&steering.notes);
        }
        self.followed.clone_from(&steering.notes);
        let mut action = None;
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new("Notes for the model").strong());
            let state = if steering.notes.trim().is_empty() {
                "none in force".to_owned()
            } else {
                format!("in every prompt from iteration {}", steering.notes_since)
            };
            ui.label(RichText::new(state).weak());
        });
        let edit = egui::TextEdit::multiline(&mut self.draft)
            .id_salt("steer_notes")
            .hint_text("Added to every following prompt, e.g. \"keep the layout hexagonal; the last five edits only renamed variables\"")
            .desired_rows(3)
            .desired_width(f32::INFINITY)
            .interactive(live);
        ui.add(edit).on_hover_text(
            "Given to the model through the run's memory: recorded in each genome's prompt (the Prompt tab shows it)",
        );
        ui.horizontal_wrapped(|ui| {
            let changed = self.draft.trim_end() != steering.notes;
            if ui
                .add_enabled(live && changed, egui::Button::new("Apply notes"))
                .on_hover_text("from the next iteration on")
                .clicked()
            {
                action = Some(SteerAction::SetNotes(self.draft.clone()));
            }
            if ui
                .add_enabled(
                    live && !steering.notes.is_empty(),
                    egui::Button::new("Clear notes"),
                )
                .clicked()
            {
                self.draft.clear();
                action = Some(SteerAction::SetNotes(String::new()));
            }
            ui.separator();
            ui.label("Pinned inspirations:");
            if steering.pins.is_empty() {
                ui.label(RichText::new("none (pin a genome from the inspector)").weak());
            }
            for pin in &steering.pins {
                if ui
                    .link(format!("#{}", pin.genome))
                    .on_hover_text(format!(
                        "shown in every prompt from iteration {}",
                        pin.since
                    ))
                    .clicked()
                {
                    action = Some(SteerAction::Select(pin.genome));
                }
                if ui
                    .add_enabled(
                        live,
                        egui::Button::new(format!("Unpin #{}", pin.genome)).small(),
                    )
                    .on_hover_text(format!("Unpin #{}", pin.genome))
                    .clicked()
                {
                    action = Some(SteerAction::Unpin(pin.genome));
                }
            }
            if !live {
                ui.label(
                    RichText::new(
                        "(the run is not live: `galapagos steer` changes a stopped run's)",
                    )
                    .weak(),
                );
            }
        });
        action
    }
}

/// Steering asked for from the inspector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InspectorAction {
    /// Open the genome's program in the editor.
    Edit(GenomeId),
    Pin(GenomeId),
    Unpin(GenomeId),
}

impl super::Inspector {
    /// Edit (and inject as a child) and pin or unpin, for a live run.
    pub(super) fn steer_buttons(&mut self, ui: &mut egui::Ui, genome: &Genome) {
        let why_not = "the run is not live: resume it, or use `galapagos inject` / `galapagos steer` on its folder";
        ui.horizontal_wrapped(|ui| {
            let edit = ui
                .add_enabled(self.live, egui::Button::new("Edit"))
                .on_hover_text("Edit this program and submit it as a child, written by a person")
                .on_disabled_hover_text(why_not);
            if edit.clicked() {
                self.action = Some(InspectorAction::Edit(genome.id));
            }
            if self.pinned.contains(&genome.id) {
                if ui
                    .add_enabled(self.live, egui::Button::new("Unpin"))
                    .on_disabled_hover_text(why_not)
                    .clicked()
                {
                    self.action = Some(InspectorAction::Unpin(genome.id));
                }
            } else if ui
                .add_enabled(
                    self.live && genome.fitness().is_some(),
                    egui::Button::new("Pin as inspiration"),
                )
                .on_hover_text("Show it to the model as an inspiration in every following prompt")
                .on_disabled_hover_text(if self.live {
                    "only a valid genome can be shown to the model"
                } else {
                    why_not
                })
                .clicked()
            {
                self.action = Some(InspectorAction::Pin(genome.id));
            }
        });
    }
}
