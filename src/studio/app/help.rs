//! The Help window: the page asked for (`UiCommand::ShowHelp`), in a window
//! sized to the studio's; its text is `crate::studio::help`'s.

use super::{App, UiCommand};

impl App {
    /// The Help page, in a window of its own (sized to the studio's).
    pub(super) fn help_ui(&mut self, ctx: &egui::Context) {
        let Some(page) = self.help else {
            return;
        };
        let mut open = true;
        let screen = ctx.content_rect();
        egui::Window::new(page.title())
            .id(egui::Id::unique("help-window"))
            .open(&mut open)
            .collapsible(false)
            .default_width((screen.width() * 0.6).min(720.0))
            .max_height(screen.height() * 0.8)
            .default_pos(screen.center() - egui::vec2(screen.width() * 0.3, screen.height() * 0.4))
            .show(ctx, |ui| crate::studio::help::page_ui(ui, page));
        if !open {
            self.commands.push(UiCommand::ShowHelp(None));
        }
    }
}
