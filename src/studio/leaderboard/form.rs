//! The Leaderboard tab's form: the cards, one task or a suite of tasks,
//! seeds, iterations, runs at once, a target, the fraction of the best known
//! value to reach, the baseline and the batch folder; Start, Stop and Open
//! folder.

use std::path::PathBuf;

use egui::{RichText, Ui};

use super::{LeaderboardCtx, LeaderboardPanel};
use crate::studio::command::{Commands, UiCommand};
use crate::studio::state::{LeaderboardForm, LeaderboardScope};
use crate::studio::theme;

/// A card that can be ticked: a built-in or a file of the library.
#[derive(Clone, Debug, PartialEq)]
pub struct CardChoice {
    /// What the form stores: a path, or `built-in:NAME`.
    pub reference: String,
    /// The card's name (what its runs and table line are called).
    pub name: String,
    /// The checkbox's text: a built-in's name, a file's name.
    pub label: String,
    /// Where it comes from (hover).
    pub hover: String,
}

/// The text of the number fields. The form keeps the last values that
/// parsed; the text shows what was typed, and [`Self::problem`] what is
/// wrong with it.
#[derive(Debug, Default)]
pub struct FormText {
    synced: bool,
    pub seeds: String,
    pub iterations: String,
    pub parallel: String,
    pub target: String,
    pub task: String,
    pub suite: String,
    /// The fraction of the best known value to reach, in percent.
    pub reach: String,
    pub out: String,
}

/// `0.99` as `99`, `0.995` as `99.5`.
fn percent_text(fraction: f64) -> String {
    let p = format!("{:.3}", fraction * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl FormText {
    /// Fill the fields from the form once (the first frame, and after the
    /// form changed from outside: a folder was opened).
    pub fn sync_from(&mut self, form: &LeaderboardForm) {
        if self.synced {
            return;
        }
        self.seeds = form.seeds.to_string();
        self.iterations = form.iterations.to_string();
        self.parallel = form.parallel.to_string();
        self.target = form.target.map_or_else(String::new, |t| t.to_string());
        self.task = form.task.display().to_string();
        self.suite = form.suite.display().to_string();
        self.reach = percent_text(form.fraction);
        self.out = form.out.display().to_string();
        self.synced = true;
    }

    /// Read the fields again from the form next frame.
    pub fn resync(&mut self) {
        self.synced = false;
    }

    /// What is wrong with the typed numbers, if anything.
    pub fn problem(&self) -> Option<String> {
        let whole = |name: &str, text: &str| match text.trim().parse::<u64>() {
            Ok(0) => Some(format!("{name} must be at least 1")),
            Ok(_) => None,
            Err(_) => Some(format!("{name} must be a whole number")),
        };
        whole("Seeds", &self.seeds)
            .or_else(|| whole("Iterations", &self.iterations))
            .or_else(|| whole("Runs at once", &self.parallel))
            .or_else(|| {
                let t = self.target.trim();
                (!t.is_empty() && !t.parse::<f64>().is_ok_and(f64::is_finite))
                    .then(|| "Target must be a number (or empty)".to_owned())
            })
            .or_else(|| {
                (!self
                    .reach
                    .trim()
                    .parse::<f64>()
                    .is_ok_and(|v| v > 0.0 && v.is_finite()))
                .then(|| {
                    "Reach % must be a number above 0 (99: 99 % of the best known value)".to_owned()
                })
            })
    }

    /// Write what parses into the form.
    fn write_to(&self, form: &mut LeaderboardForm) {
        if let Ok(v) = self.seeds.trim().parse::<u64>()
            && v > 0
        {
            form.seeds = v;
        }
        if let Ok(v) = self.iterations.trim().parse::<u64>()
            && v > 0
        {
            form.iterations = v;
        }
        if let Ok(v) = self.parallel.trim().parse::<usize>()
            && v > 0
        {
            form.parallel = v;
        }
        let t = self.target.trim();
        if t.is_empty() {
            form.target = None;
        } else if let Ok(v) = t.parse::<f64>()
            && v.is_finite()
        {
            form.target = Some(v);
        }
        if let Ok(v) = self.reach.trim().parse::<f64>()
            && v > 0.0
            && v.is_finite()
        {
            form.fraction = v / 100.0;
        }
        form.task = PathBuf::from(self.task.trim());
        form.suite = PathBuf::from(self.suite.trim());
        form.out = PathBuf::from(self.out.trim());
    }
}

fn field(ui: &mut Ui, label: &str, text: &mut String, width: f32, hover: &str) -> bool {
    let l = ui.label(label);
    ui.add(egui::TextEdit::singleline(text).desired_width(width))
        .labelled_by(l.id)
        .on_hover_text(hover)
        .changed()
}

pub(super) fn form_ui(
    panel: &mut LeaderboardPanel,
    ui: &mut Ui,
    lctx: &LeaderboardCtx<'_>,
    form: &mut LeaderboardForm,
    commands: &mut Commands,
) {
    let running = panel.is_running();
    ui.add_enabled_ui(!running, |ui| cards_ui(ui, lctx, form));
    let mut changed = false;
    ui.add_enabled_ui(!running, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.radio_value(&mut form.scope, LeaderboardScope::Task, "Task")
                .on_hover_text("Run every card on one task");
            ui.radio_value(&mut form.scope, LeaderboardScope::Suite, "Suite")
                .on_hover_text(
                    "Run every card on every task of a suite: a folder of task folders, or math \
                     (the ten mathematical benchmark tasks)",
                );
            let width = (ui.available_width() * 0.2).clamp(200.0, 420.0);
            match form.scope {
                LeaderboardScope::Task => {
                    let task_hint = format!(
                        "The task folder every card runs on, or a built-in task's name \
                         (circle_packing, fit_package, ...); empty: the studio's, {}",
                        lctx.task_dir.display()
                    );
                    let l = ui.label("Task folder");
                    changed |= ui
                        .add(
                            egui::TextEdit::singleline(&mut panel.text.task)
                                .hint_text(lctx.task_dir.display().to_string())
                                .desired_width(width),
                        )
                        .labelled_by(l.id)
                        .on_hover_text(task_hint)
                        .changed();
                }
                LeaderboardScope::Suite => {
                    let l = ui.label("Suite folder or name");
                    changed |= ui
                        .add(
                            egui::TextEdit::singleline(&mut panel.text.suite)
                                .hint_text("math")
                                .desired_width(width),
                        )
                        .labelled_by(l.id)
                        .on_hover_text(
                            "A folder of task folders, or a built-in suite's name (math); each task gets its \
                             leaderboard in a folder of its own inside the batch folder",
                        )
                        .changed();
                }
            }
            changed |= field(
                ui,
                "Seeds",
                &mut panel.text.seeds,
                36.0,
                "Seeds per card: 0, 1, ..., K-1",
            );
            changed |= field(
                ui,
                "Iterations",
                &mut panel.text.iterations,
                48.0,
                "Iterations of every run (the same budget for every card)",
            );
            changed |= field(
                ui,
                "Runs at once",
                &mut panel.text.parallel,
                30.0,
                "Runs at once (each card keeps its own general.parallel)",
            );
            changed |= field(
                ui,
                "Target",
                &mut panel.text.target,
                52.0,
                "A score to reach (optional): the table says how many runs reached it and when",
            );
            changed |= field(
                ui,
                "Reach %",
                &mut panel.text.reach,
                40.0,
                "The share of a task's best known value (its config's best_known) a run must reach: the table \
                 says how many did, and the model calls, tokens and cost until they did",
            );
            baseline_ui(ui, lctx, form);
        });
    });
    if changed {
        panel.text.write_to(form);
    }
    ui.horizontal_wrapped(|ui| {
        ui.add_enabled_ui(!running, |ui| {
            let l = ui.label("Batch folder");
            if ui
                .add(
                    egui::TextEdit::singleline(&mut panel.text.out)
                        .desired_width((ui.available_width() * 0.3).clamp(260.0, 560.0)),
                )
                .labelled_by(l.id)
                .on_hover_text(
                    "runs/ and the leaderboard files go here; Start on a folder that holds a batch resumes it",
                )
                .changed()
            {
                panel.text.write_to(form);
            }
            let out = PathBuf::from(panel.text.out.trim());
            if ui
                .add_enabled(
                    !panel.text.out.trim().is_empty(),
                    egui::Button::new("Open folder"),
                )
                .on_hover_text("Show the leaderboard.json in this folder")
                .clicked()
            {
                commands.push(UiCommand::OpenLeaderboard(out));
            }
            if ui
                .button("Browse…")
                .on_hover_text("Pick a batch folder with a dialog and show its leaderboard")
                .clicked()
            {
                commands.push(UiCommand::BrowseLeaderboard);
            }
        });
        ui.separator();
        let blocker = panel.start_blocker(form);
        let start = ui.add_enabled(
            blocker.is_none(),
            egui::Button::new(RichText::new("Start batch").strong()),
        );
        let start = match &blocker {
            Some(why) => start.on_disabled_hover_text(why),
            None => start.on_hover_text(match form.scope {
                LeaderboardScope::Task => format!(
                    "{} card(s) × {} seed(s) × {} iterations into {}",
                    form.cards.len(),
                    form.seeds,
                    form.iterations,
                    form.out.display()
                ),
                LeaderboardScope::Suite => format!(
                    "{} card(s) × every task of {} × {} seed(s) × {} iterations into {}",
                    form.cards.len(),
                    form.suite.display(),
                    form.seeds,
                    form.iterations,
                    form.out.display()
                ),
            }),
        };
        if start.clicked() {
            commands.push(UiCommand::StartLeaderboard);
        }
        if ui
            .add_enabled(running, egui::Button::new("Stop batch"))
            .on_hover_text("Stop every run; each keeps its record and Start resumes it")
            .clicked()
        {
            commands.push(UiCommand::StopLeaderboard);
        }
        match &lctx.model {
            Ok(desc) => {
                let short = desc.split(" (").next().unwrap_or_default().to_owned();
                ui.add(egui::Label::new(RichText::new(format!("Model: {short}")).weak()).truncate().show_tooltip_when_elided(false))
                    .on_hover_text(format!("Every run uses {desc}"));
            }
            Err(e) => {
                ui.add(
                    egui::Label::new(RichText::new(format!("Model: {e}")).color(lctx.error))
                        .truncate().show_tooltip_when_elided(false),
                )
                .on_hover_text(e);
            }
        }
    });
    if let Some(why) = panel.text.problem() {
        ui.label(RichText::new(why).color(lctx.error));
    }
}

fn cards_ui(ui: &mut Ui, lctx: &LeaderboardCtx<'_>, form: &mut LeaderboardForm) {
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("Cards").strong()).on_hover_text(
            "The built-in cards and the library folder's; each runs with every seed",
        );
        for choice in lctx.choices {
            let mut on = form.cards.contains(&choice.reference);
            if ui
                .checkbox(&mut on, &choice.label)
                .on_hover_text(&choice.hover)
                .changed()
            {
                if on {
                    form.cards.push(choice.reference.clone());
                } else {
                    form.cards.retain(|c| c != &choice.reference);
                }
            }
        }
        // Ticked cards the library no longer lists stay visible, so they
        // can be unticked.
        let missing: Vec<String> = form
            .cards
            .iter()
            .filter(|c| !lctx.choices.iter().any(|ch| &ch.reference == *c))
            .cloned()
            .collect();
        for reference in missing {
            let mut on = true;
            if ui
                .checkbox(&mut on, RichText::new(&reference).color(lctx.warn))
                .on_hover_text("Not in the library (any more): untick to drop it")
                .changed()
                && !on
            {
                form.cards.retain(|c| c != &reference);
            }
        }
        ui.add_space(theme::SECTION_GAP);
    });
}

fn baseline_ui(ui: &mut Ui, lctx: &LeaderboardCtx<'_>, form: &mut LeaderboardForm) {
    let name_of = |reference: &str| {
        lctx.choices
            .iter()
            .find(|c| c.reference == reference)
            .map_or_else(|| reference.to_owned(), |c| c.name.clone())
    };
    if !form.baseline.is_empty() && !form.cards.contains(&form.baseline) {
        form.baseline.clear();
    }
    let shown = match (form.baseline.as_str(), form.cards.first()) {
        ("", Some(first)) => name_of(first),
        ("", None) => "—".to_owned(),
        (b, _) => name_of(b),
    };
    let l = ui.label("Baseline");
    egui::ComboBox::from_id_salt("leaderboard-baseline")
        .selected_text(shown)
        .width(140.0)
        .show_ui(ui, |ui| {
            for reference in form.cards.clone() {
                let name = name_of(&reference);
                ui.selectable_value(&mut form.baseline, reference, name);
            }
        })
        .response
        .labelled_by(l.id)
        .on_hover_text("The card the others are compared with (Mann–Whitney U on the best score)");
}
