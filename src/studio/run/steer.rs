//! The run view's notes box: notes for the model, added to every following
//! prompt through the run's memory, and the genomes pinned as inspirations
//! (pinned from the inspector, removed here). Changes go to the live run as
//! commands; what the run reports back (its `Steered` events, or a recorded
//! run's checkpoint) is what is shown as in force.

use egui::RichText;

use crate::engine::genome::GenomeId;
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
