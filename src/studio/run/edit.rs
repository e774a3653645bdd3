//! Edit and inject: a genome's program (every file of a folder program) in
//! an editor with syntax highlighting. Submit hands the edited program to
//! the live run as a child of that genome, written by a person
//! ([`crate::engine::events::RunCommand::Inject`]); the run evaluates and
//! admits it like any child, also while paused. Files the task does not
//! let change are shown read-only, and a program the task's edit rules
//! refuse is said here before it is sent. A change outside the
//! EVOLVE-BLOCK markers is refused as it is for the model unless "Allow
//! edits outside the markers" is ticked; the genome records the override.

use std::collections::BTreeMap;

use egui::RichText;

use crate::engine::genome::{Genome, GenomeId, Tree};
use crate::engine::scaffold::check_person_program;
use crate::engine::task::program_folder::{EditOp, EditRules};
use crate::studio::theme::data;

/// What the person did in the editor this frame.
#[derive(Clone, Debug, PartialEq)]
pub enum EditorAction {
    /// Evaluate this program as a child of the parent (the flag: edits
    /// outside the EVOLVE-BLOCK markers are allowed).
    Submit(Tree, bool),
    /// Close without sending anything.
    Cancel,
}

/// An open editor on one genome's program.
pub struct ProgramEditor {
    /// The genome edited (the child's parent).
    pub parent: GenomeId,
    original: Tree,
    /// Every text file's contents as edited.
    texts: BTreeMap<String, String>,
    /// The file shown.
    file: String,
    /// The run's program language (`py`), for files without an extension.
    language: String,
    /// What may change (`None`: anything).
    rules: Option<EditRules>,
    /// Sent; waiting for the run to admit or refuse it.
    pub pending: bool,
    /// Why the last submission was refused.
    pub error: Option<String>,
    /// The person overrides the rule that only the lines between
    /// EVOLVE-BLOCK markers may change.
    pub outside_markers: bool,
}

impl ProgramEditor {
    /// An editor on `genome`'s program; the first editable file is shown.
    pub fn open(genome: &Genome, rules: Option<EditRules>, language: &str) -> Self {
        let texts = genome.content.texts();
        let editable = |p: &str| {
            rules
                .as_ref()
                .is_none_or(|r| r.check(p, EditOp::Modify).is_ok())
        };
        let file = texts
            .keys()
            .find(|p| editable(p))
            .or_else(|| texts.keys().next())
            .cloned()
            .unwrap_or_default();
        Self {
            parent: genome.id,
            original: genome.content.clone(),
            texts,
            file,
            language: language.to_owned(),
            rules,
            pending: false,
            error: None,
            outside_markers: false,
        }
    }

    /// The program as edited.
    pub fn program(&self) -> Tree {
        if self.original.is_single() {
            self.original
                .with_single_text(self.texts.get(&self.file).cloned().unwrap_or_default())
        } else {
            self.original.with_texts(self.texts.clone())
        }
    }

    /// Replace the text of the file shown (what typing does; for tests and
    /// scripted use).
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.texts.insert(self.file.clone(), text.into());
        self.error = None;
    }

    /// The file shown.
    pub fn file(&self) -> &str {
        &self.file
    }

    fn editable(&self, path: &str) -> bool {
        self.rules
            .as_ref()
            .is_none_or(|r| r.check(path, EditOp::Modify).is_ok())
    }

    /// Why the program as edited cannot be sent (`None`: it can).
    fn problem(&self) -> Option<String> {
        let program = self.program();
        match &self.rules {
            Some(rules) => {
                check_person_program(rules, &self.original, &program, self.outside_markers).err()
            }
            None if program == self.original => {
                Some("the program is its parent's unchanged; change something first".to_owned())
            }
            None => None,
        }
    }

    fn language_of(&self, path: &str) -> String {
        std::path::Path::new(path).extension().map_or_else(
            || self.language.clone(),
            |e| e.to_string_lossy().into_owned(),
        )
    }

    /// Draw the editor (a modal window over the run view); `live`: a run is
    /// there to take the child.
    pub fn ui(&mut self, ctx: &egui::Context, live: bool) -> Option<EditorAction> {
        let screen = ctx.content_rect();
        let width = (screen.width() * 0.8).clamp(320.0, 1000.0);
        let height = (screen.height() * 0.8).clamp(240.0, 760.0);
        let mut action = None;
        let response = egui::Modal::new(egui::Id::unique("program-editor")).show(ctx, |ui| {
            ui.set_width(width);
            ui.set_height(height);
            ui.heading(format!("Edit genome #{}", self.parent));
            action = self.body(ui, live);
        });
        if response.should_close() && !self.pending && action.is_none() {
            action = Some(EditorAction::Cancel);
        }
        action
    }

    fn body(&mut self, ui: &mut egui::Ui, live: bool) -> Option<EditorAction> {
        let mut action = None;
        ui.label(
            RichText::new(format!(
                "Submit evaluates this program as a child of #{} written by a person, and admits it like any child.",
                self.parent
            ))
            .weak(),
        );
        if !self.original.is_single() {
            let changed = self.program().changes_from(&self.original).len();
            ui.horizontal(|ui| {
                let label = ui.label("File");
                let shown = |p: &str, editable: bool| {
                    if editable {
                        p.to_owned()
                    } else {
                        format!("{p} (read-only)")
                    }
                };
                egui::ComboBox::from_id_salt("editor_file")
                    .selected_text(shown(&self.file, self.editable(&self.file)))
                    .show_ui(ui, |ui| {
                        let paths: Vec<String> = self.texts.keys().cloned().collect();
                        for path in paths {
                            let text = shown(&path, self.editable(&path));
                            ui.selectable_value(&mut self.file, path, text);
                        }
                    })
                    .response
                    .labelled_by(label.id);
                ui.label(RichText::new(format!("{changed} changed")).weak());
            });
        }
        let problem = self.problem();
        let bottom = 64.0;
        let editable = self.editable(&self.file) && !self.pending;
        let language = self.language_of(&self.file);
        egui::ScrollArea::both()
            .id_salt("editor_text")
            .max_height((ui.available_height() - bottom).max(80.0))
            .auto_shrink([false, false])
            .show(ui, |ui| {
                let theme =
                    egui_extras::syntax_highlighting::CodeTheme::from_memory(ui.ctx(), ui.style());
                let mut layouter = |ui: &egui::Ui, text: &dyn egui::TextBuffer, wrap: f32| {
                    let mut job = egui_extras::syntax_highlighting::highlight(
                        ui.ctx(),
                        ui.style(),
                        &theme,
                        text.as_str(),
                        &language,
                    );
                    // code lines do not wrap: the area scrolls sideways
                    let _ = wrap;
                    job.wrap.max_width = f32::INFINITY;
                    ui.fonts_mut(|f| f.layout_job(job))
                };
                if let Some(text) = self.texts.get_mut(&self.file) {
                    let edit = egui::TextEdit::multiline(text)
                        .id_salt("editor_code")
                        .code_editor()
                        .desired_width(ui.available_width())
                        .desired_rows(18)
                        .interactive(editable)
                        .layouter(&mut layouter);
                    if ui.add(edit).changed() {
                        self.error = None;
                    }
                }
            });
        ui.separator();
        if let Some(e) = &self.error {
            ui.label(RichText::new(e).color(data::BAD));
        } else if self.pending {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("Evaluating…");
            });
        } else if let Some(p) = &problem {
            ui.label(RichText::new(p).weak());
        } else if !live {
            ui.label(
                RichText::new(
                    "The run has ended: resume it to inject, or use `galapagos inject` on its folder.",
                )
                .weak(),
            );
        }
        ui.horizontal(|ui| {
            let can = live && problem.is_none() && !self.pending;
            if ui
                .add_enabled(
                    can,
                    egui::Button::new(format!("Submit as child of #{}", self.parent)),
                )
                .clicked()
            {
                self.pending = true;
                self.error = None;
                action = Some(EditorAction::Submit(self.program(), self.outside_markers));
            }
            if ui.button("Cancel").clicked() {
                action = Some(EditorAction::Cancel);
            }
            ui.add_enabled(
                !self.pending,
                egui::Checkbox::new(&mut self.outside_markers, "Allow edits outside the markers"),
            )
            .on_hover_text(
                "Keep changes outside the EVOLVE-BLOCK markers (only the lines between them may \
                 change otherwise, for a person as for the model); the genome records the override",
            );
        });
        action
    }
}

impl super::RunView {
    /// The program editor's window, and what its buttons ask for.
    pub(super) fn editor_ui(&mut self, ctx: &egui::Context) {
        let live = self.is_running();
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        match editor.ui(ctx, live) {
            Some(EditorAction::Submit(program, outside_markers)) => {
                let parent = editor.parent;
                if !self.inject(parent, program, outside_markers)
                    && let Some(e) = self.editor.as_mut()
                {
                    e.pending = false;
                    e.error =
                        Some("the run did not take the program: is it still running?".to_owned());
                }
            }
            Some(EditorAction::Cancel) => self.editor = None,
            None => {}
        }
    }
}
