//! The studio's toolbar: the menus, the run and file buttons, the tab strip,
//! the status bar and the keyboard shortcuts the menus list. Every button
//! queues a [`UiCommand`]; nothing here changes the app directly.

use std::path::PathBuf;

use egui::{Key, KeyboardShortcut, Modifiers, RichText, Ui};

use super::App;
use crate::studio::command::UiCommand;
use crate::studio::help::HelpPage;
use crate::studio::state::Tab;
use crate::studio::theme::{Palette, ThemeChoice};

/// Start a run (listed in the Run menu).
pub const START_SHORTCUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F5);
/// Pause or resume the live run.
pub const PAUSE_SHORTCUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F6);
/// Stop the live run.
pub const STOP_SHORTCUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::SHIFT, Key::F5);
/// How long an information message stays in the status bar (an error stays
/// until the next message, or a click on it).
const INFO_SHOWN_FOR: std::time::Duration = std::time::Duration::from_secs(8);

impl App {
    /// The keyboard shortcuts, as commands.
    pub(super) fn shortcuts(&mut self, ctx: &egui::Context) {
        let cmd = Modifiers::COMMAND;
        let shift = Modifiers::COMMAND | Modifiers::SHIFT;
        let typing = ctx.text_edit_focused();
        ctx.input_mut(|i| {
            if i.consume_shortcut(&KeyboardShortcut::new(shift, Key::S)) {
                self.commands.push(UiCommand::BrowseSaveAs);
            }
            if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::S)) {
                self.commands.push(UiCommand::Save);
            }
            if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::N)) {
                self.commands.push(UiCommand::NewCard);
            }
            if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::O)) {
                self.commands.push(UiCommand::BrowseOpen);
            }
            // runs: F5 start, F6 pause / resume, Shift+F5 stop (listed in the Run menu)
            if i.consume_shortcut(&STOP_SHORTCUT) {
                self.commands.push(UiCommand::StopRun);
            }
            if i.consume_shortcut(&START_SHORTCUT) {
                self.commands.push(UiCommand::StartRun);
            }
            if i.consume_shortcut(&PAUSE_SHORTCUT) {
                self.commands.push(UiCommand::PauseOrResume);
            }
            // tabs: Ctrl+1 .. in the tab list's order (listed in the View menu)
            for tab in Tab::ALL {
                if i.consume_shortcut(&KeyboardShortcut::new(cmd, tab.key())) {
                    self.commands.push(UiCommand::ShowTab(tab));
                }
            }
            // text fields keep their own undo while focused
            if !typing {
                if i.consume_shortcut(&KeyboardShortcut::new(shift, Key::Z))
                    || i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::Y))
                {
                    self.commands.push(UiCommand::Redo);
                }
                if i.consume_shortcut(&KeyboardShortcut::new(cmd, Key::Z)) {
                    self.commands.push(UiCommand::Undo);
                }
            }
        });
    }

    /// The menus, the toolbar and the tab strip.
    pub(super) fn top_bar_ui(&mut self, ui: &mut Ui) {
        self.menu_bar_ui(ui);
        ui.add_space(2.0);
        self.tool_row_ui(ui);
        ui.add_space(2.0);
        // the tabs, above the side panels: reached right after the toolbar
        self.tab_strip_ui(ui);
    }

    /// File, Edit, Run and View, then the card's title and file.
    fn menu_bar_ui(&mut self, ui: &mut Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui
                    .add(egui::Button::new("New card").shortcut_text("Ctrl+N"))
                    .clicked()
                {
                    self.commands.push(UiCommand::NewCard);
                }
                if ui
                    .add(egui::Button::new("Open card…").shortcut_text("Ctrl+O"))
                    .clicked()
                {
                    self.commands.push(UiCommand::BrowseOpen);
                }
                if ui
                    .add(egui::Button::new("Save card").shortcut_text("Ctrl+S"))
                    .clicked()
                {
                    self.commands.push(UiCommand::Save);
                }
                if ui
                    .add(egui::Button::new("Save card as…").shortcut_text("Ctrl+Shift+S"))
                    .clicked()
                {
                    self.commands.push(UiCommand::BrowseSaveAs);
                }
                ui.separator();
                if ui
                    .button("Connect to a run…")
                    .on_hover_text(
                        "follow a run on a server (ssh://[user@]host[:port]/path) through your ssh",
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::ShowConnect);
                }
                ui.separator();
                if ui.button("Export hub bundle…").clicked() {
                    self.commands.push(UiCommand::BrowseExport);
                }
                if ui.button("Import hub bundle…").clicked() {
                    self.commands.push(UiCommand::BrowseImport);
                }
                ui.separator();
                if ui.button("Model settings…").clicked() {
                    self.commands.push(UiCommand::OpenModelSettings);
                }
            });
            ui.menu_button("Edit", |ui| {
                if ui
                    .add_enabled(
                        self.doc.can_undo(),
                        egui::Button::new("Undo edit").shortcut_text("Ctrl+Z"),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::Undo);
                }
                if ui
                    .add_enabled(
                        self.doc.can_redo(),
                        egui::Button::new("Redo edit").shortcut_text("Ctrl+Shift+Z"),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::Redo);
                }
            });
            ui.menu_button("Run", |ui| {
                let blocker = self.run_blocker();
                let start = ui
                    .add_enabled(
                        blocker.is_none(),
                        egui::Button::new("Start run")
                            .shortcut_text(ui.ctx().format_shortcut(&START_SHORTCUT)),
                    )
                    .on_disabled_hover_text(blocker.unwrap_or_default());
                if start.clicked() {
                    self.commands.push(UiCommand::StartRun);
                }
                let running = self.run_view.is_running();
                let pause = if self.run_view.history().paused {
                    "Resume run"
                } else {
                    "Pause run"
                };
                if ui
                    .add_enabled(
                        running,
                        egui::Button::new(pause)
                            .shortcut_text(ui.ctx().format_shortcut(&PAUSE_SHORTCUT)),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::PauseOrResume);
                }
                if ui
                    .add_enabled(
                        running,
                        egui::Button::new("Stop run")
                            .shortcut_text(ui.ctx().format_shortcut(&STOP_SHORTCUT)),
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::StopRun);
                }
            });
            ui.menu_button("View", |ui| {
                for tab in Tab::ALL {
                    let shortcut = KeyboardShortcut::new(Modifiers::COMMAND, tab.key());
                    if ui
                        .add(
                            egui::Button::selectable(self.state.tab == tab, tab.label())
                                .shortcut_text(ui.ctx().format_shortcut(&shortcut)),
                        )
                        .clicked()
                    {
                        self.commands.push(UiCommand::ShowTab(tab));
                    }
                }
                ui.separator();
                for t in [ThemeChoice::Dark, ThemeChoice::Light] {
                    if ui.radio(self.state.theme == t, t.label()).clicked() {
                        self.commands.push(UiCommand::SetTheme(t));
                    }
                }
                ui.separator();
                if ui
                    .checkbox(
                        &mut self.state.layout.show_left.clone(),
                        "Library and palette",
                    )
                    .clicked()
                {
                    self.commands.push(UiCommand::ToggleLeftPanel);
                }
                if ui
                    .checkbox(&mut self.state.layout.show_inspector.clone(), "Inspector")
                    .clicked()
                {
                    self.commands.push(UiCommand::ToggleInspector);
                }
            });
            ui.menu_button("Help", |ui| {
                for page in HelpPage::ALL {
                    if ui.button(page.title()).clicked() {
                        self.commands.push(UiCommand::ShowHelp(Some(page)));
                    }
                }
            });
            ui.separator();
            let title = RichText::new(self.doc.card.display_title()).strong();
            ui.label(title);
            let file = RichText::new(self.doc.title()).weak();
            let file = if self.doc.dirty {
                file.color(ui.visuals().warn_fg_color)
            } else {
                file
            };
            ui.label(file).on_hover_text(
                self.doc
                    .path
                    .as_ref()
                    .map_or_else(|| "Not saved yet".to_owned(), |p| p.display().to_string()),
            );
        });
    }

    /// The run's actions and the card's file actions.
    fn tool_row_ui(&mut self, ui: &mut Ui) {
        // The run's actions first (right-aligned, and first in the focus
        // order), then the card's, which wrap onto a second row in a narrow
        // window instead of running under the Model button.
        ui.horizontal(|ui| {
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                let blocker = self.run_blocker();
                let model_text = match self.resolved.as_ref().map(|r| &r.2) {
                    Some(Ok((_, desc))) => desc.clone(),
                    Some(Err(e)) => e.clone(),
                    None => String::new(),
                };
                let run = ui.add_enabled(
                    blocker.is_none(),
                    egui::Button::new(RichText::new("Start run").strong()),
                );
                let run = match &blocker {
                    Some(why) => run.on_disabled_hover_text(why),
                    None => run.on_hover_text(format!(
                        "Run on {} ({})",
                        self.task_dir.display(),
                        ui.ctx().format_shortcut(&START_SHORTCUT)
                    )),
                };
                if run.clicked() {
                    self.commands.push(UiCommand::StartRun);
                }
                let short = model_text.split(" (").next().unwrap_or_default();
                let model = ui.scope(|ui| {
                    ui.set_max_width((ui.available_width() * 0.3).clamp(120.0, 280.0));
                    ui.add(egui::Button::new(format!("Model: {short}")).truncate())
                });
                if model
                    .inner
                    .on_hover_text(format!(
                        "Runs will use: {model_text}\nClick to edit the model settings"
                    ))
                    .clicked()
                {
                    self.commands.push(UiCommand::OpenModelSettings);
                }
                ui.separator();
                ui.with_layout(
                    egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true),
                    |ui| {
                        if ui
                            .button("New")
                            .on_hover_text("New card (Ctrl+N)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::NewCard);
                        }
                        if ui
                            .button("Open…")
                            .on_hover_text("Open a card with a file dialog (Ctrl+O)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::BrowseOpen);
                        }
                        let save_blocker = self.save_blocker();
                        let can_save = save_blocker.is_none();
                        let save = ui
                            .add_enabled(can_save, egui::Button::new("Save"))
                            .on_hover_text("Save the card (Ctrl+S)");
                        let save = match &save_blocker {
                            Some(why) => save.on_disabled_hover_text(why),
                            None => save,
                        };
                        if save.clicked() {
                            self.commands.push(UiCommand::Save);
                        }
                        let save_as = ui.add_enabled(can_save, egui::Button::new("Save As…"));
                        let save_as = match &save_blocker {
                            Some(why) => save_as.on_disabled_hover_text(why),
                            None => {
                                save_as.on_hover_text("Save under a new name with a file dialog")
                            }
                        };
                        if save_as.clicked() {
                            self.commands.push(UiCommand::BrowseSaveAs);
                        }
                        ui.separator();
                        let label = ui.label("Card path");
                        ui.add(
                            egui::TextEdit::singleline(&mut self.path_field)
                                .hint_text("path/to/card.yaml")
                                // what is left once the buttons after it
                                // (about 320 points) have their room: the
                                // row stays one row down to 1024 px
                                .desired_width(
                                    (ui.max_rect().right() - ui.cursor().left() - 320.0)
                                        .clamp(100.0, 260.0),
                                ),
                        )
                        .labelled_by(label.id);
                        let typed = PathBuf::from(self.path_field.trim());
                        let has_path = !self.path_field.trim().is_empty();
                        if ui
                            .add_enabled(has_path, egui::Button::new("Open path"))
                            .on_hover_text(
                                "Open the card at this path, a built-in card by name (best_of_n) \
                                 or a hub card (NAMESPACE/NAME[@VERSION])",
                            )
                            .clicked()
                        {
                            // the one rule for a card named by path or name,
                            // as the command line has it
                            use crate::engine::builtin::CardArg;
                            match crate::engine::builtin::resolve_card(&typed) {
                                Ok(CardArg::Path(path)) => {
                                    self.commands.push(UiCommand::OpenCard(path));
                                }
                                Ok(CardArg::Builtin(card)) => {
                                    self.commands
                                        .push(UiCommand::OpenBuiltin(card.name.to_owned()));
                                }
                                Ok(CardArg::Hub(reference)) => {
                                    self.commands.push(UiCommand::OpenHubCard {
                                        hub: None,
                                        reference: reference.to_string(),
                                    });
                                }
                                Err(e) => self.error(format!("Open path: {e}")),
                            }
                        }
                        let save_path =
                            ui.add_enabled(has_path && can_save, egui::Button::new("Save to path"));
                        let save_path = match &save_blocker {
                            Some(why) => save_path.on_disabled_hover_text(why),
                            None => save_path.on_hover_text("Save the card at this path"),
                        };
                        if save_path.clicked() {
                            self.commands.push(UiCommand::SaveAs(typed));
                        }
                        ui.separator();
                        if ui
                            .add_enabled(self.doc.can_undo(), egui::Button::new("Undo"))
                            .on_hover_text("Undo the last card edit (Ctrl+Z)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::Undo);
                        }
                        if ui
                            .add_enabled(self.doc.can_redo(), egui::Button::new("Redo"))
                            .on_hover_text("Redo (Ctrl+Shift+Z or Ctrl+Y)")
                            .clicked()
                        {
                            self.commands.push(UiCommand::Redo);
                        }
                    },
                );
            });
        });
    }

    /// One button per tab, marked while its work runs.
    fn tab_strip_ui(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            for tab in Tab::ALL {
                let text = match self.panel_mut(tab).activity() {
                    Some(activity) => format!("{} ({activity})", tab.label()),
                    None => tab.label().to_owned(),
                };
                let shortcut = KeyboardShortcut::new(Modifiers::COMMAND, tab.key());
                if ui
                    .selectable_label(self.state.tab == tab, text)
                    .on_hover_text(ui.ctx().format_shortcut(&shortcut))
                    .clicked()
                {
                    self.commands.push(UiCommand::ShowTab(tab));
                }
            }
        });
    }

    /// The run's progress, the card's status and the last message.
    pub(super) fn status_bar_ui(&mut self, ui: &mut Ui) {
        let palette = Palette::of(self.state.theme);
        // the run's status on the right first; the card's status and the
        // last message share what is left, each truncated (full on hover)
        ui.horizontal(|ui| {
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                self.run_view.status_bar_ui(ui);
                if self.jobs.busy() {
                    ui.spinner();
                }
                ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                    // a valid card that still cannot start (the task, the
                    // model) says what blocks the run, not only that the
                    // card is valid
                    let blocked = self
                        .run_blocker()
                        .filter(|_| self.problems.is_empty() && !self.run_view.is_running());
                    if let Some(why) = blocked {
                        let half = ui.available_width() * 0.6;
                        ui.scope(|ui| {
                            ui.set_max_width(half);
                            ui.add(
                                egui::Label::new(
                                    RichText::new(format!("Card is valid; cannot start: {why}"))
                                        .color(palette.warn),
                                )
                                .wrap(),
                            )
                            .on_hover_text("Start run is disabled until this is fixed");
                        });
                    } else if self.problems.is_empty() {
                        ui.label(RichText::new("Card is valid").color(palette.ok));
                    } else {
                        let n = self.problems.len();
                        let first = self.problems.summary().unwrap_or_default();
                        let text = format!("{n} problem{}: {first}", if n == 1 { "" } else { "s" });
                        let lines: Vec<String> = self
                            .problems
                            .0
                            .iter()
                            .map(|p| format!("{}: {}", p.field, p.message))
                            .collect();
                        let half = ui.available_width() * 0.6;
                        ui.scope(|ui| {
                            ui.set_max_width(half);
                            ui.add(
                                egui::Label::new(RichText::new(text).color(palette.error))
                                    .truncate()
                                    .show_tooltip_when_elided(false),
                            )
                            .on_hover_text(lines.join("\n"));
                        });
                    }
                    // an information message goes stale: it leaves after a while
                    if let Some(m) = &self.message
                        && !m.error
                    {
                        let age = m.at.elapsed();
                        if age >= INFO_SHOWN_FOR {
                            self.message = None;
                        } else {
                            ui.ctx().request_repaint_after(INFO_SHOWN_FOR - age);
                        }
                    }
                    if let Some(m) = &self.message {
                        ui.separator();
                        let text = RichText::new(&m.text);
                        let text = if m.error {
                            text.color(palette.error)
                        } else {
                            text.weak()
                        };
                        // an error wrapped, whole: a refusal says what to do
                        // at its end; information on one line, whole on hover
                        let label = if m.error {
                            ui.add(egui::Label::new(text).wrap().sense(egui::Sense::click()))
                                .on_hover_text("Click to dismiss")
                        } else {
                            ui.add(
                                egui::Label::new(text)
                                    .truncate()
                                    .show_tooltip_when_elided(false)
                                    .sense(egui::Sense::click()),
                            )
                            .on_hover_text(format!("{}\n\nClick to dismiss", m.text))
                        };
                        if label.clicked() {
                            self.commands.push(UiCommand::DismissMessage);
                        }
                    }
                });
            });
        });
    }
}
