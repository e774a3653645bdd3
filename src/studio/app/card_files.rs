//! Card files: new, open (a file or a built-in card), save, the task and
//! runs folders, the library, and the question asked before unsaved changes
//! are discarded (with the dialog listing a card's errors).

use std::path::{Path, PathBuf};

use egui::RichText;

use super::App;
use crate::engine::card::Card;
use crate::studio::command::UiCommand;
use crate::studio::jobs::{Pick, check_task_folder_in, read_card, write_card};
use crate::studio::library::Library;
use crate::studio::state::Document;
use crate::studio::theme;

/// An action that would discard unsaved changes, waiting for a yes.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Pending {
    New,
    Open(PathBuf),
    Builtin(String),
    Import(Box<Card>),
}

impl App {
    /// Apply a command of the file group.
    pub(super) fn apply_file_command(&mut self, command: UiCommand) {
        match command {
            UiCommand::NewCard => {
                if self.doc.dirty {
                    self.pending = Some(Pending::New);
                } else {
                    self.new_now();
                }
            }
            UiCommand::OpenCard(path) => {
                if self.doc.dirty {
                    self.pending = Some(Pending::Open(path));
                } else {
                    self.open_now(&path);
                }
            }
            UiCommand::OpenBuiltin(name) => {
                if self.doc.dirty {
                    self.pending = Some(Pending::Builtin(name));
                } else {
                    self.open_builtin_now(&name);
                }
            }
            UiCommand::BrowseOpen => {
                if let Some(ctx) = self.ctx.clone() {
                    self.pick_path(Pick::OpenCard, self.dialog_start(), &ctx);
                }
            }
            UiCommand::Save => match self.save_target() {
                Some(path) => {
                    self.save_to(&path);
                }
                None => self.commands.push(UiCommand::BrowseSaveAs),
            },
            UiCommand::SaveAs(path) => {
                let then_continue = std::mem::take(&mut self.save_then_continue);
                if let Some(why) = self.overwrites_the_card_opened(&path) {
                    return self.error(why);
                }
                self.name_after_file(&path);
                if self.save_to(&path) && then_continue {
                    self.commands.push(UiCommand::ConfirmDiscard);
                }
            }
            UiCommand::SaveAndContinue => {
                // save the card being edited where it belongs, then do what
                // was waiting; a failed save keeps the question open (the
                // status bar says why). The card path field is not a target
                // here: it may hold the path of the card about to be opened.
                match self.doc.path.clone() {
                    Some(path) => {
                        if self.save_to(&path) {
                            self.commands.push(UiCommand::ConfirmDiscard);
                        }
                    }
                    None => {
                        let typed = self.save_as_field.trim();
                        if typed.is_empty() {
                            self.save_then_continue = true;
                            self.commands.push(UiCommand::BrowseSaveAs);
                        } else {
                            let path = PathBuf::from(typed);
                            self.save_then_continue = true;
                            self.commands.push(UiCommand::SaveAs(path));
                        }
                    }
                }
            }
            UiCommand::BrowseSaveAs => {
                if let Some(why) = self.save_blocker() {
                    self.error(why);
                } else if let Some(ctx) = self.ctx.clone() {
                    self.pick_path(Pick::SaveCard, self.dialog_start(), &ctx);
                }
            }
            UiCommand::BrowseTask => {
                if let Some(ctx) = self.ctx.clone() {
                    let start = self.task_dir.parent().map(Path::to_path_buf);
                    self.pick_path(Pick::TaskFolder, start, &ctx);
                }
            }
            UiCommand::SetTaskFolder(dir) => self.set_task_folder(dir),
            UiCommand::SetRunsFolder(dir) => {
                self.runs.folder = dir.display().to_string();
                self.state.runs_folder = dir;
            }
            UiCommand::RefreshLibrary => {
                let hubs = std::mem::take(&mut self.library.hubs);
                self.library = Library::scan(&self.library.folder.clone(), &self.registry);
                self.library.hubs = hubs;
                self.lb_choices = None;
            }
            UiCommand::ConfirmDiscard => {
                self.save_then_continue = false;
                self.save_as_field.clear();
                match self.pending.take() {
                    Some(Pending::New) => self.new_now(),
                    Some(Pending::Open(path)) => self.open_now(&path),
                    Some(Pending::Builtin(name)) => self.open_builtin_now(&name),
                    Some(Pending::Import(card)) => self.import_now(*card),
                    None => {}
                }
            }
            UiCommand::CancelDiscard => {
                self.pending = None;
                self.save_then_continue = false;
                self.save_as_field.clear();
            }
            other => self.misrouted(&other),
        }
    }

    /// Use the task `arg` names: a folder, or a built-in task's name (the
    /// field keeps what was typed; runs use the folder it resolves to).
    pub(super) fn set_task_folder(&mut self, arg: PathBuf) {
        self.task_check = check_task_folder_in(&arg, &self.tasks_root);
        if self.task_check.problem.is_none() {
            self.state.last_task_folder = Some(arg.clone());
        }
        self.task_dir = self.task_check.dir.clone();
        self.task_field = arg;
    }

    pub(super) fn open_now(&mut self, path: &Path) {
        match read_card(path, &self.registry) {
            Ok(card) => {
                self.set_doc(Document::new(card, Some(path.to_path_buf())));
                self.problems_revision = None;
                self.state.remember_card(path);
                self.card_errors = None;
                self.info(format!("Opened {}", path.display()));
            }
            Err(errors) => {
                self.error(format!(
                    "{} could not be opened ({} error{})",
                    path.display(),
                    errors.0.len(),
                    if errors.0.len() == 1 { "" } else { "s" }
                ));
                self.card_errors = Some(errors);
            }
        }
    }

    /// Saved under another file, the card takes that file's name (a copy
    /// saved as `mine.yaml` is the card `mine`, so two files never show as
    /// one card in the Runs tab); one undo step.
    fn name_after_file(&mut self, path: &Path) {
        if self.doc.path.as_deref() == Some(path) {
            return;
        }
        let Some(stem) = path.file_stem().map(|s| s.to_string_lossy()) else {
            return;
        };
        let name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if name.is_empty() || name == self.doc.card.name {
            return;
        }
        let mut card = self.doc.card.clone();
        card.name = name;
        self.doc.edit("name", card);
    }

    /// Edit another card: the path field follows its file; for a card never
    /// saved it keeps what was typed there, unless that is the previous
    /// card's file, so "Save to path" never writes over the previous file.
    fn set_doc(&mut self, mut doc: Document) {
        let typed = self.path_field.trim();
        let previous = self.doc.path.as_ref().map(|p| p.display().to_string());
        self.path_field = match &doc.path {
            Some(p) => p.display().to_string(),
            None if previous.as_deref() == Some(typed) => String::new(),
            None => typed.to_owned(),
        };
        // a revision the previous card never had: what is kept per revision
        // (the problems, the run model, the YAML text) is made again
        doc.revision = self.doc.revision.wrapping_add(1);
        self.details
            .publish
            .document_changed(&doc.card.namespace, &doc.card.name);
        self.doc = doc;
    }

    /// Open the built-in card `name` as a new card (not tied to a file).
    pub(super) fn open_builtin_now(&mut self, name: &str) {
        let Some(builtin) = crate::engine::builtin::card(name) else {
            return self.error(format!("There is no built-in card {name}"));
        };
        match builtin.valid(&self.registry) {
            Ok(card) => {
                let card = card.into_card();
                self.set_doc(Document::new(card, None));
                self.problems_revision = None;
                self.card_errors = None;
                self.info(format!(
                    "Opened the built-in card {name} (Save asks where to keep it)"
                ));
            }
            Err(errors) => {
                self.error(format!("The built-in card {name} could not be opened"));
                self.card_errors = Some(errors);
            }
        }
    }

    fn new_now(&mut self) {
        self.set_doc(Document::new(Card::new_default("untitled"), None));
        self.problems_revision = None;
        self.info("New card");
    }

    /// Save the card at `path`; false (and why, in the status bar) when not.
    fn save_to(&mut self, path: &Path) -> bool {
        self.refresh_problems();
        if let Some(why) = self.save_blocker() {
            self.error(why);
            return false;
        }
        match write_card(&self.doc.card, path) {
            Ok(saved) => {
                self.state.remember_card(&saved);
                self.path_field = saved.display().to_string();
                self.info(format!("Saved {}", saved.display()));
                self.doc.mark_saved(saved);
                true
            }
            Err(e) => {
                self.error(e);
                false
            }
        }
    }

    /// Where "Save" would write without asking: the card's file, else the
    /// path typed in the card path field.
    fn save_target(&self) -> Option<PathBuf> {
        self.doc.path.clone().or_else(|| {
            let typed = self.path_field.trim();
            (!typed.is_empty()).then(|| PathBuf::from(typed))
        })
    }

    /// Why saving the card being edited at `path` would write over the card
    /// file the waiting action is about to open, if it would.
    fn overwrites_the_card_opened(&self, path: &Path) -> Option<String> {
        let Some(Pending::Open(opening)) = &self.pending else {
            return None;
        };
        (same_path(opening, path) && self.doc.path.as_deref() != Some(path)).then(|| {
            format!(
                "{} is the card being opened: save this card under another file",
                path.display()
            )
        })
    }

    pub(super) fn import_now(&mut self, card: Card) {
        let imported = format!("Imported {}/{} (not saved yet)", card.namespace, card.name);
        self.set_doc(Document::unsaved(card));
        self.problems_revision = None;
        match self.details.publish.origin() {
            Some(from) => {
                let text = format!("Opened {} (not saved yet)", from.text);
                self.info(text);
            }
            None => self.info(imported),
        }
    }

    pub(super) fn dialog_start(&self) -> Option<PathBuf> {
        self.doc
            .path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .or_else(|| std::env::current_dir().ok())
    }

    pub(super) fn modals_ui(&mut self, ctx: &egui::Context) {
        if let Some(pending) = &self.pending {
            let what = match pending {
                Pending::New => "start a new card".to_owned(),
                Pending::Open(p) => format!("open {}", p.display()),
                Pending::Builtin(name) => format!("open the built-in card {name}"),
                Pending::Import(c) => format!("import {}/{}", c.namespace, c.name),
            };
            let title = self.doc.title();
            let response = egui::Modal::new(egui::Id::unique("confirm-discard")).show(ctx, |ui| {
                ui.set_max_width(420.0);
                ui.heading("Unsaved changes");
                ui.label(format!(
                    "{title} has unsaved changes. Discard them to {what}?"
                ));
                ui.add_space(theme::SECTION_GAP);
                // the card is saved to its own file; one never saved asks
                // where here (typed, or with a save dialog), never the card
                // path field, which may hold the file about to be opened
                let own = self.doc.path.clone();
                let opening = match &self.pending {
                    Some(Pending::Open(p)) => Some(p.clone()),
                    _ => None,
                };
                if own.is_none() {
                    ui.horizontal(|ui| {
                        let label = ui.label("Save as");
                        ui.add(
                            egui::TextEdit::singleline(&mut self.save_as_field)
                                .hint_text("path/to/card.yaml (empty: a save dialog asks)")
                                .desired_width(280.0),
                        )
                        .labelled_by(label.id);
                    });
                }
                let typed = PathBuf::from(self.save_as_field.trim());
                let onto_opened = own.is_none()
                    && !typed.as_os_str().is_empty()
                    && opening.as_deref().is_some_and(|o| same_path(o, &typed));
                ui.horizontal(|ui| {
                    let problem = self.problems.summary();
                    let save = ui.add_enabled(
                        problem.is_none() && !onto_opened,
                        egui::Button::new("Save and continue"),
                    );
                    let save = if let Some(why) = problem {
                        save.on_disabled_hover_text(format!("Fix the card first: {why}"))
                    } else if onto_opened {
                        save.on_disabled_hover_text(format!(
                            "{} is the card being opened: save this card under another file",
                            typed.display()
                        ))
                    } else {
                        save.on_hover_text(match (&own, typed.as_os_str().is_empty()) {
                            (Some(p), _) => format!("Save to {}, then {what}", p.display()),
                            (None, false) => format!("Save as {}, then {what}", typed.display()),
                            (None, true) => format!(
                                "This card has no file yet: a save dialog asks where to keep it, then {what}"
                            ),
                        })
                    };
                    if save.clicked() {
                        self.commands.push(UiCommand::SaveAndContinue);
                    }
                    if ui.button("Discard changes").clicked() {
                        self.commands.push(UiCommand::ConfirmDiscard);
                    }
                    if ui.button("Keep editing").clicked() {
                        self.commands.push(UiCommand::CancelDiscard);
                    }
                });
            });
            if response.should_close() {
                self.commands.push(UiCommand::CancelDiscard);
            }
        }
        if let Some(errors) = &self.card_errors {
            let response = egui::Modal::new(egui::Id::unique("card-errors")).show(ctx, |ui| {
                ui.set_max_width(640.0);
                ui.heading("The card could not be opened");
                ui.label(format!(
                    "{} error{}; nothing was opened",
                    errors.0.len(),
                    if errors.0.len() == 1 { "" } else { "s" }
                ));
                ui.add_space(6.0);
                egui::ScrollArea::vertical()
                    .max_height(320.0)
                    .show(ui, |ui| {
                        for e in &errors.0 {
                            ui.add(
                                egui::Label::new(
                                    RichText::new(e.to_string())
                                        .monospace()
                                        .color(ui.visuals().error_fg_color),
                                )
                                .wrap(),
                            );
                        }
                    });
                ui.add_space(theme::SECTION_GAP);
                if ui.button("Close").clicked() {
                    self.commands.push(UiCommand::DismissErrors);
                }
            });
            if response.should_close() {
                self.commands.push(UiCommand::DismissErrors);
            }
        }
    }
}

/// Whether `a` and `b` name one file (the same text, or the same file once
/// resolved).
fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (a.canonicalize(), b.canonicalize()),
            (Ok(x), Ok(y)) if x == y
        )
}
