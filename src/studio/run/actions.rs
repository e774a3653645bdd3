//! What a click in the run view asks of the run, and applying it after the view is drawn.

use super::RunView;
use crate::engine::genome::GenomeId;

/// What a click in the run view asks of the run: collected while the view is drawn and applied after it
/// (`RunView::apply`), so no button changes the run in the middle of a frame. What needs the rest of the studio
/// (resuming with the Blocks tab's card, forking) goes on as a studio command from there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunAction {
    Pause,
    Resume,
    Stop,
    /// The notes for the model from now on (empty clears them).
    SetNotes(String),
    Pin(GenomeId),
    Unpin(GenomeId),
    /// Open the genome's program in the editor, to submit a child written by a person.
    Edit(GenomeId),
    Select(GenomeId),
}

impl RunView {
    /// Apply this frame's clicks on the run, in the order they came.
    pub(super) fn apply_actions(&mut self) {
        for action in std::mem::take(&mut self.actions) {
            self.apply(action);
        }
    }

    /// Apply one click on the run. In the studio a Resume goes to the app, which resumes with the Blocks tab's
    /// card (settings changed while paused); a view on its own resumes as it was.
    pub fn apply(&mut self, action: RunAction) {
        match action {
            RunAction::Pause => self.pause(),
            RunAction::Resume if self.settings.in_app => self.settings.resume_clicked = true,
            RunAction::Resume => self.resume(),
            RunAction::Stop => self.stop(),
            RunAction::SetNotes(text) => {
                self.set_notes(text);
            }
            RunAction::Pin(id) => {
                self.pin(id);
            }
            RunAction::Unpin(id) => {
                self.unpin(id);
            }
            RunAction::Edit(id) => self.open_editor(id),
            RunAction::Select(id) => self.select(Some(id)),
        }
    }
}
