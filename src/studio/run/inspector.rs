//! The genome inspector — why did it score like that: header and lineage
//! (each ancestor clickable), then tabs for the scores with deltas against
//! the parent, the coloured diff, the highlighted program, the exact prompt,
//! the raw model response, the evaluator's output (error, stdout, stderr,
//! artifacts, timings) and what a coding agent did (`agent_view.rs`).
//!
//! Over 800 lines with its tests: the code above them is about 720.

use std::borrow::Cow;
use std::collections::BTreeSet;

use egui::text::LayoutJob;
use egui::{Color32, FontId, RichText, TextFormat};

use crate::engine::genome::{FITNESS_KEY, Genome, GenomeId};
use crate::engine::head::GenomeHead;
use crate::studio::run::bars::first_line;
use crate::studio::run::diff_view::{self, DiffMode};
use crate::studio::run::history::{RunHistory, format_metric, format_tokens};
use crate::studio::theme::data;

/// The inspector's tabs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InspectorTab {
    #[default]
    Scores,
    Diff,
    Program,
    Prompt,
    Response,
    Output,
    Agent,
}

impl InspectorTab {
    /// Every tab in display order.
    pub const ALL: [Self; 7] = [
        Self::Scores,
        Self::Diff,
        Self::Program,
        Self::Prompt,
        Self::Response,
        Self::Output,
        Self::Agent,
    ];

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            Self::Scores => "Scores",
            Self::Diff => "Diff",
            Self::Program => "Program",
            Self::Prompt => "Prompt",
            Self::Response => "Response",
            Self::Output => "Output",
            Self::Agent => "Agent",
        }
    }
}

/// The inspector's state.
#[derive(Default)]
pub struct Inspector {
    /// The open tab.
    pub tab: InspectorTab,
    /// Unified or side by side.
    pub diff_mode: DiffMode,
    /// Diff against the picked genome rather than the parent.
    pub against_pick: bool,
    /// Show every ancestor in the lineage, not the root and the last few.
    pub lineage_open: bool,
    /// Metrics whose better way the person flipped from its default (see
    /// [`lower_is_better_by_default`]; Δ colours follow).
    pub flipped: BTreeSet<String>,
    /// The file of a folder genome shown (`None`: the whole tree).
    pub file: super::files_view::FileChoice,
    /// The Agent tab's transcript and choices.
    pub agent: super::agent_view::AgentView,
    /// A live run takes steering (set by the run view each frame).
    pub live: bool,
    /// The genomes pinned as inspirations (set by the run view each frame).
    pub pinned: Vec<GenomeId>,
    /// What the person asked for in the last frame (taken by the run view).
    pub action: Option<InspectorAction>,
    /// Why "Fork run from here" cannot be used now (a run is in progress),
    /// set by the run view before each frame.
    pub fork_blocker: Option<&'static str>,
    /// The genome whose "Fork run from here" was clicked this frame.
    pub fork_clicked: Option<GenomeId>,
}

/// Ancestors shown at the end of a collapsed lineage.
pub const LINEAGE_TAIL: usize = 6;

/// The lineage shown: every id when it is short or open, else the root, the
/// number of ancestors left out, and the last [`LINEAGE_TAIL`].
pub fn lineage_shown(chain: &[GenomeId], open: bool) -> (Vec<GenomeId>, usize) {
    if open || chain.len() <= LINEAGE_TAIL + 2 {
        return (chain.to_vec(), 0);
    }
    let tail = &chain[chain.len() - LINEAGE_TAIL..];
    let mut shown = vec![chain[0]];
    shown.extend_from_slice(tail);
    (shown, chain.len() - LINEAGE_TAIL - 1)
}

/// The colour of a metric's change: good when it moved the way that is
/// better for the metric.
pub fn delta_color(delta: f64, lower_is_better: bool, neutral: Color32) -> Color32 {
    let better = if lower_is_better {
        delta < 0.0
    } else {
        delta > 0.0
    };
    if delta == 0.0 || delta.is_nan() {
        neutral
    } else if better {
        data::GOOD
    } else {
        data::BAD
    }
}

/// Text of a metric delta (`+0.0123`, `−0.5`, `±0`).
pub fn delta_text(delta: f64) -> String {
    if delta == 0.0 {
        "±0".to_owned()
    } else if delta > 0.0 {
        format!("+{delta:.6}")
    } else {
        format!("−{:.6}", -delta)
    }
}

/// A unified diff as a coloured layout job.
pub fn diff_layout(diff: &str, ui: &egui::Ui) -> LayoutJob {
    let font = FontId::monospace(
        ui.style()
            .text_styles
            .get(&egui::TextStyle::Monospace)
            .map_or(12.0, |f| f.size),
    );
    let normal = ui.visuals().text_color();
    let mut job = LayoutJob::default();
    for line in diff.split_inclusive('\n') {
        let color = if line.starts_with("+++") || line.starts_with("---") {
            ui.visuals().weak_text_color()
        } else if line.starts_with('+') {
            data::GOOD
        } else if line.starts_with('-') {
            data::BAD
        } else if line.starts_with("@@") {
            data::STRUCTURE
        } else {
            normal
        };
        job.append(
            line,
            0.0,
            TextFormat {
                font_id: font.clone(),
                color,
                ..TextFormat::default()
            },
        );
    }
    job
}

fn mono_block(ui: &mut egui::Ui, text: &str) {
    ui.add(
        egui::Label::new(RichText::new(text).monospace())
            .wrap()
            .selectable(true),
    );
}

fn section(ui: &mut egui::Ui, title: &str) {
    ui.add_space(6.0);
    ui.label(RichText::new(title).strong());
}

impl Inspector {
    /// Draw the inspector for `selected`. Returns a genome id the user
    /// clicked (an ancestor, the parent, an inspiration).
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
        picked: Option<GenomeId>,
        language: &str,
    ) -> Option<GenomeId> {
        let Some(head) = selected.and_then(|id| history.get(id)) else {
            ui.add_space(8.0);
            ui.label(
                RichText::new(
                    "Select a genome in the plot or the table to see why it scored as it did.",
                )
                .weak(),
            );
            return None;
        };
        // The genome with its bodies when the history holds them; until
        // they are here (read back, fetched), its head: the header and the
        // scores are drawn from it, the tabs that show bodies wait.
        let (genome, parent, bodies_here) = with_bodies(history, head);
        let (genome, parent) = (&*genome, parent.as_deref());
        let mut clicked = None;

        // The header (the genome's facts, its error, its lineage) takes at
        // most about half the pane and scrolls: the tabs below stay in view
        // in a short pane, whatever the genome says.
        let header_max = (ui.available_height() * 0.5).max(48.0);
        egui::ScrollArea::vertical()
            .id_salt("inspector-header")
            .max_height(header_max)
            .auto_shrink([false, true])
            .show(ui, |ui| {
            // Header.
            ui.horizontal_wrapped(|ui| {
                ui.heading(format!("Genome #{}", genome.id));
                if genome.unconfirmed() {
                    ui.label(RichText::new("valid, unconfirmed").color(data::BAD).strong());
                } else if genome.valid {
                    ui.label(RichText::new("valid").color(data::GOOD));
                } else {
                    ui.label(RichText::new("invalid").color(data::BAD).strong());
                }
                if history.best_id == Some(genome.id) {
                    ui.label(RichText::new("best").strong());
                }
                if self.pinned.contains(&genome.id) {
                    ui.label(RichText::new("pinned").strong());
                }
                if history.info.as_ref().is_some_and(|i| i.run_dir.is_some()) {
                    // an invalid program fails a run at once: refused up front,
                    // as the engine refuses it
                    let invalid = (!genome.valid).then(|| {
                        format!(
                            "This genome is invalid ({}): a run forked from it would fail at once; \
                             fork from a valid genome",
                            crate::engine::launch::invalid_reason(genome.error.as_deref())
                        )
                    });
                    let blocker = self.fork_blocker.map(str::to_owned).or(invalid);
                    let r = ui
                        .add_enabled(blocker.is_none(), egui::Button::new("Fork run from here"))
                        .on_hover_text(
                            "Start a new run whose initial program is this genome's, with the card on \
                             the Blocks tab (change it there first); the Runs tab shows it under this run",
                        );
                    let r = match blocker {
                        Some(why) => r.on_disabled_hover_text(why),
                        None => r,
                    };
                    if r.clicked() {
                        self.fork_clicked = Some(genome.id);
                    }
                }
            });
            self.steer_buttons(ui, genome);
            ui.horizontal_wrapped(|ui| {
                ui.label(format!("iteration {}", genome.iteration));
                if genome.attempt > 0 {
                    ui.label(format!("attempt {}", genome.attempt + 1));
                }
                if genome.is_by_person() {
                    ui.label(RichText::new("· written by a person").strong());
                    if let Some(rule) = &genome.rule_override {
                        ui.label(
                            RichText::new(format!("· {rule}, by the person's override"))
                                .color(ui.visuals().warn_fg_color),
                        );
                    }
                } else if !genome.metadata.patch_type.is_empty() {
                    ui.label(format!("· {}", genome.metadata.patch_type));
                }
                if let Some(m) = &genome.metadata.model {
                    ui.label(format!("· model {m}"));
                }
                ui.label(format!("· depth {}", genome.metadata.depth));
                if let Some(i) = genome.metadata.island {
                    ui.label(format!("· island {i}"));
                }
                if !genome.inspiration_ids.is_empty() {
                    ui.label("· inspirations:");
                    for id in &genome.inspiration_ids {
                        if ui.link(format!("#{id}")).clicked() {
                            clicked = Some(*id);
                        }
                    }
                }
            });
            if let Some(err) = &genome.error {
                // a long error scrolls in a few lines of its own (the whole of
                // it is on the Output tab)
                let row = ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y;
                egui::ScrollArea::vertical()
                    .id_salt("inspector-error")
                    .max_height(3.0 * row)
                    .auto_shrink([false, true])
                    .show(ui, |ui| {
                        ui.add(
                            egui::Label::new(
                                RichText::new(format!("error: {}", first_line(err))).color(data::BAD),
                            )
                            .wrap(),
                        );
                    });
            }
            // A would-be best evaluated again: unconfirmed ones are never parents.
            if let Some(c) = &genome.confirmation {
                let text = RichText::new(c.summary());
                ui.label(if c.unconfirmed {
                    text.color(data::BAD).strong()
                } else {
                    text.weak()
                });
            }
            // Lineage back to the root. A deep one shows the root and the last
            // ancestors (wrapping over two lines at most) until opened; opened,
            // it is one line that scrolls sideways.
            let chain = history.lineage(genome.id);
            let (shown, hidden) = lineage_shown(&chain, self.lineage_open);
            let long = chain.len() > LINEAGE_TAIL + 2;
            let mut open = self.lineage_open;
            let header = |ui: &mut egui::Ui, open: &mut bool| {
                ui.label(
                    RichText::new(format!("lineage ({} deep):", chain.len().saturating_sub(1))).weak(),
                );
                if long {
                    let text = if *open { "collapse" } else { "show all" };
                    if ui.small_button(text).clicked() {
                        *open = !*open;
                    }
                }
            };
            if self.lineage_open && long {
                ui.horizontal(|ui| {
                    header(ui, &mut open);
                    egui::ScrollArea::horizontal()
                        .id_salt("lineage")
                        .stick_to_right(true)
                        .show(ui, |ui| {
                            ui.horizontal(|ui| {
                                let (c, _) = lineage_items(ui, history, genome.id, &shown, hidden);
                                clicked = c.or(clicked);
                            });
                        });
                });
            } else {
                ui.horizontal_wrapped(|ui| {
                    header(ui, &mut open);
                    let (c, more) = lineage_items(ui, history, genome.id, &shown, hidden);
                    clicked = c.or(clicked);
                    open |= more;
                });
            }
            self.lineage_open = open;
            });
        ui.separator();
        ui.horizontal(|ui| {
            for tab in InspectorTab::ALL {
                if tab != InspectorTab::Agent || genome.agent.is_some() {
                    ui.selectable_value(&mut self.tab, tab, tab.title());
                }
            }
        });
        ui.separator();
        if self.tab != InspectorTab::Scores && !bodies_here {
            ui.add_space(8.0);
            ui.label(
                RichText::new(format!(
                    "Genome #{}'s program, prompt and reply are on their way…",
                    genome.id
                ))
                .weak(),
            );
            return clicked;
        }
        if self.tab == InspectorTab::Agent {
            self.agent
                .tab_ui(ui, genome, parent, &mut self.file, self.diff_mode);
            return clicked;
        }
        egui::ScrollArea::both()
            .id_salt(("inspector", self.tab))
            .auto_shrink(false)
            .show(ui, |ui| match self.tab {
                InspectorTab::Scores => {
                    scores_ui(ui, genome, parent, &mut self.flipped);
                }
                InspectorTab::Diff => {
                    let picked = picked
                        .filter(|p| *p != genome.id)
                        .and_then(|p| history.body(p));
                    let picked = picked.map(|p| &**p);
                    ui.horizontal_wrapped(|ui| {
                        ui.label("against");
                        let parent_label = parent.map_or_else(
                            || "parent".to_owned(),
                            |p| format!("parent #{}", p.id),
                        );
                        ui.selectable_value(&mut self.against_pick, false, parent_label);
                        match picked {
                            Some(o) => {
                                ui.selectable_value(
                                    &mut self.against_pick,
                                    true,
                                    format!("picked #{}", o.id),
                                );
                            }
                            None => {
                                ui.label(
                                    RichText::new(
                                        "(Ctrl+click another genome in the table or the tree to diff against it)",
                                    )
                                    .weak(),
                                );
                            }
                        }
                        ui.separator();
                        ui.selectable_value(&mut self.diff_mode, DiffMode::Unified, "unified");
                        ui.selectable_value(&mut self.diff_mode, DiffMode::SideBySide, "side by side");
                    });
                    ui.separator();
                    // code keeps its lines: the area scrolls sideways
                    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
                    let base = picked.filter(|_| self.against_pick).or(parent);
                    match base.filter(|b| !b.content.is_single() || !genome.content.is_single()) {
                        Some(base) => {
                            ui.label(RichText::new(format!("from #{} to #{}", base.id, genome.id)).strong());
                            super::files_view::diff_ui(
                                ui,
                                &genome.content,
                                &base.content,
                                &mut self.file,
                                self.diff_mode,
                            );
                        }
                        None => match picked.filter(|_| self.against_pick) {
                        Some(other) => {
                            ui.label(
                                RichText::new(format!("from #{} to #{}", other.id, genome.id)).strong(),
                            );
                            diff_view::diff_ui(ui, &other.content.text(), &genome.content.text(), self.diff_mode);
                        }
                        None => match (self.diff_mode, parent) {
                            (DiffMode::SideBySide, Some(p)) => {
                                ui.label(RichText::new(format!("from #{} to #{}", p.id, genome.id)).strong());
                                diff_view::diff_ui(ui, &p.content.text(), &genome.content.text(), self.diff_mode);
                            }
                            _ => diff_ui(ui, genome, parent),
                        },
                    },
                    }
                }
                InspectorTab::Program if !genome.content.is_single() => {
                    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
                    super::files_view::program_ui(
                        ui,
                        &genome.content,
                        parent.map(|p| &p.content),
                        &mut self.file,
                        language,
                    );
                }
                InspectorTab::Program => {
                    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
                    let theme = egui_extras::syntax_highlighting::CodeTheme::from_memory(
                        ui.ctx(),
                        ui.style(),
                    );
                    egui_extras::syntax_highlighting::code_view_ui(
                        ui,
                        &theme,
                        &genome.content.text(),
                        language,
                    );
                }
                InspectorTab::Prompt => match &genome.prompt {
                    Some(p) => {
                        section(ui, "System");
                        mono_block(ui, &p.system);
                        section(ui, "User");
                        mono_block(ui, &p.user);
                    }
                    None if genome.is_by_person() => {
                        ui.label(RichText::new("No prompt: a person wrote this program.").weak());
                    }
                    None => {
                        ui.label(RichText::new("No prompt: this is the initial program.").weak());
                    }
                },
                InspectorTab::Response => match &genome.response {
                    Some(r) => {
                        let caption = if !genome.valid && genome.diff.is_none() {
                            "The model's raw reply (no usable edit was found in it):"
                        } else {
                            "The model's raw reply:"
                        };
                        ui.label(RichText::new(caption).weak());
                        mono_block(ui, r);
                    }
                    None => {
                        ui.label(
                            RichText::new("No model response recorded for this genome.").weak(),
                        );
                    }
                },
                InspectorTab::Output => output_ui(ui, genome),
                InspectorTab::Agent => {} // drawn above: it scrolls its parts itself
            });
        clicked
    }
}

/// `head`'s genome and its parent, each with its bodies when the history
/// holds them (else made from its head, without them), and whether both
/// bodies are here.
fn with_bodies<'h>(
    history: &'h RunHistory,
    head: &GenomeHead,
) -> (Cow<'h, Genome>, Option<Cow<'h, Genome>>, bool) {
    let full = |id: GenomeId, head: &GenomeHead| match history.body(id) {
        Some(body) => (Cow::Borrowed(&**body), true),
        None => (Cow::Owned(head.to_genome()), false),
    };
    let (genome, here) = full(head.id, head);
    let parent = head
        .parent_id
        .and_then(|p| history.get(p).map(|ph| full(p, ph)));
    let parent_here = parent.as_ref().is_none_or(|(_, here)| *here);
    (genome, parent.map(|(p, _)| p), here && parent_here)
}

/// The lineage's links (the genome itself in bold). Returns an ancestor
/// clicked, and whether "… N more" was clicked.
fn lineage_items(
    ui: &mut egui::Ui,
    history: &RunHistory,
    current: GenomeId,
    shown: &[GenomeId],
    hidden: usize,
) -> (Option<GenomeId>, bool) {
    let mut clicked = None;
    let mut more = false;
    let n = shown.len();
    for (i, id) in shown.iter().enumerate() {
        let score = history
            .get(*id)
            .and_then(|g| g.fitness())
            .map_or("—".to_owned(), |s| format!("{s:.4}"));
        let text = format!("#{id} ({score})");
        if *id == current {
            ui.label(RichText::new(text).strong());
        } else if ui
            .link(text)
            .on_hover_text(format!("inspect ancestor #{id}"))
            .clicked()
        {
            clicked = Some(*id);
        }
        if i == 0 && hidden > 0 {
            ui.label("›");
            more |= ui
                .link(format!("… {hidden} more"))
                .on_hover_text("show every ancestor")
                .clicked();
        }
        if i + 1 < n {
            ui.label("›");
        }
    }
    (clicked, more)
}

/// Whether lower is better for the metric `name` unless the person says
/// otherwise: an error or a loss (`rmse`, `max_abs_error`, `fit_error`,
/// `loss`, `val_loss`, `mse`); higher otherwise.
pub fn lower_is_better_by_default(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let word = |w: &str| {
        n == w
            || n.ends_with(&format!("_{w}"))
            || n.starts_with(&format!("{w}_"))
            || n.contains(&format!("_{w}_"))
    };
    ["error", "errors", "loss", "rmse", "mse", "mae", "regret"]
        .iter()
        .any(|w| word(w))
}

fn scores_ui(
    ui: &mut egui::Ui,
    genome: &Genome,
    parent: Option<&Genome>,
    flipped: &mut BTreeSet<String>,
) {
    let mut names: Vec<&String> = genome.scores.keys().collect();
    if let Some(p) = parent {
        for k in p.scores.keys() {
            if !genome.scores.contains_key(k) {
                names.push(k);
            }
        }
    }
    // combined_score first.
    names.sort_by_key(|n| (n.as_str() != FITNESS_KEY, (*n).clone()));
    if names.is_empty() {
        ui.label(RichText::new("No scores: the evaluator did not score this genome.").weak());
    } else {
        egui::Grid::new("scores_grid")
            .striped(true)
            .num_columns(5)
            .spacing([18.0, 4.0])
            .show(ui, |ui| {
                ui.label(RichText::new("metric").strong());
                ui.label(RichText::new("value").strong());
                ui.label(
                    RichText::new(match parent {
                        Some(p) => format!("parent #{}", p.id),
                        None => "parent".to_owned(),
                    })
                    .strong(),
                );
                ui.label(RichText::new("Δ vs parent").strong());
                ui.label(RichText::new("better").strong()).on_hover_text(
                    "Which way is better for the metric: click to flip (Δ colours follow)",
                );
                ui.end_row();
                for name in names {
                    let v = genome.scores.get(name).copied();
                    let pv = parent.and_then(|p| p.scores.get(name).copied());
                    ui.label(name.as_str());
                    ui.label(v.map_or("—".to_owned(), format_metric));
                    ui.label(pv.map_or("—".to_owned(), format_metric));
                    // the fitness is higher-is-better, whatever its name
                    let fitness = name.as_str() == FITNESS_KEY
                        || genome.fitness_metric.as_deref() == Some(name.as_str());
                    let lower = !fitness
                        && lower_is_better_by_default(name) != flipped.contains(name.as_str());
                    match (v, pv) {
                        (Some(a), Some(b)) => {
                            let d = a - b;
                            let color = delta_color(d, lower, ui.visuals().weak_text_color());
                            ui.label(RichText::new(delta_text(d)).color(color));
                        }
                        _ => {
                            ui.label("—");
                        }
                    }
                    let text = if lower { "lower" } else { "higher" };
                    if fitness {
                        ui.label(RichText::new(text).weak())
                            .on_hover_text("The fitness: higher is better");
                    } else if ui
                        .small_button(text)
                        .on_hover_text(format!(
                            "Click if {} is better for {name}",
                            if lower { "higher" } else { "lower" }
                        ))
                        .clicked()
                        && !flipped.remove(name.as_str())
                    {
                        flipped.insert(name.clone());
                    }
                    ui.end_row();
                }
            });
    }
    if let Some(f) = genome.fitness() {
        ui.add_space(4.0);
        let vs = parent
            .and_then(Genome::fitness)
            .map_or_else(String::new, |p| {
                format!(" · {} vs parent", delta_text(f - p))
            });
        ui.label(format!("fitness {f:.6} = {}{vs}", genome.fitness_basis()));
    }
    if !genome.private.is_empty() {
        section(ui, "Private metrics");
        ui.label(RichText::new("Recorded, never shown to the model.").weak());
        egui::Grid::new("private_grid")
            .striped(true)
            .num_columns(2)
            .spacing([18.0, 4.0])
            .show(ui, |ui| {
                for (name, value) in &genome.private {
                    ui.label(name.as_str());
                    ui.label(value.as_str());
                    ui.end_row();
                }
            });
    }
    placement_ui(ui, genome);
    section(ui, "Timings");
    let t = &genome.timings;
    ui.label(format!(
        "prompt {:.1} ms · propose {:.1} ms · evaluate {:.1} ms",
        t.prompt_ms, t.propose_ms, t.evaluate_ms
    ));
    if let Some(u) = &genome.usage {
        section(ui, "Tokens");
        let cost = u.cost_usd.map_or(String::new(), |c| format!(" · ${c:.4}"));
        ui.label(format!(
            "{} prompt + {} completion = {}{cost}",
            u.prompt_tokens,
            u.completion_tokens,
            format_tokens(u.total_tokens())
        ));
    }
}

fn diff_ui(ui: &mut egui::Ui, genome: &Genome, parent: Option<&Genome>) {
    let Some(parent) = parent else {
        ui.label(RichText::new("The initial program has no parent to diff against.").weak());
        return;
    };
    let diff = match &genome.diff {
        Some(d) => d.clone(),
        None if genome.content != parent.content => genome.content.diff_from(&parent.content),
        None => {
            let why = genome
                .error
                .as_deref()
                .unwrap_or("the program is identical to its parent");
            ui.label(
                RichText::new(format!("No change against parent #{}: {why}", parent.id))
                    .color(data::BAD),
            );
            ui.label(RichText::new("See the Response tab for what the model said.").weak());
            return;
        }
    };
    ui.label(RichText::new(format!("against parent #{}", parent.id)).weak());
    if diff.trim().is_empty() {
        ui.label(RichText::new("(empty diff)").weak());
        return;
    }
    let job = diff_layout(&diff, ui);
    ui.add(egui::Label::new(job).selectable(true));
}

/// Where a cluster evaluated the genome: its job and node, and the work
/// the scheduler ended before (each retry).
fn placement_ui(ui: &mut egui::Ui, genome: &Genome) {
    let Some(p) = &genome.placement else {
        return;
    };
    section(ui, "Cluster");
    ui.label(placement_text(p));
    for retry in &p.retries {
        ui.label(RichText::new(format!("retried after: {retry}")).weak());
    }
}

/// `slurm job 12.3 on node n1`.
pub fn placement_text(p: &crate::engine::genome::Placement) -> String {
    let node = if p.node.is_empty() {
        "an unknown node".to_owned()
    } else {
        format!("node {}", p.node)
    };
    format!("{} job {} on {node}", p.scheduler, p.job_id)
}

fn output_ui(ui: &mut egui::Ui, genome: &Genome) {
    if let Some(err) = &genome.error {
        section(ui, "Error");
        ui.add(
            egui::Label::new(RichText::new(err).monospace().color(data::BAD))
                .wrap()
                .selectable(true),
        );
    }
    let known = ["traceback", "stdout", "stderr"];
    for key in known {
        if let Some(text) = genome.artifacts.get(key) {
            section(ui, key);
            if text.trim().is_empty() {
                ui.label(RichText::new("(empty)").weak());
            } else {
                mono_block(ui, text);
            }
        }
    }
    for (key, text) in &genome.artifacts {
        if known.contains(&key.as_str()) {
            continue;
        }
        section(ui, key);
        mono_block(ui, text);
    }
    if genome.error.is_none() && genome.artifacts.is_empty() {
        ui.label(RichText::new("The evaluator reported no output or artifacts.").weak());
    }
    placement_ui(ui, genome);
    section(ui, "Timings");
    let t = &genome.timings;
    ui.label(format!(
        "prompt {:.1} ms · propose {:.1} ms · evaluate {:.1} ms",
        t.prompt_ms, t.propose_ms, t.evaluate_ms
    ));
}

/// Steering asked for from the inspector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InspectorAction {
    /// Open the genome's program in the editor.
    Edit(GenomeId),
    Pin(GenomeId),
    Unpin(GenomeId),
}

impl Inspector {
    /// Edit (and inject as a child) and pin or unpin, for a live run.
    fn steer_buttons(&mut self, ui: &mut egui::Ui, genome: &Genome) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An unconfirmed genome says so, with every evaluation's fitness.
    #[test]
    fn an_unconfirmed_genome_says_so_in_the_inspector() {
        use crate::engine::events::RunEvent;
        use crate::engine::genome::Confirmation;
        use egui_kittest::kittest::Queryable as _;
        let genome = Genome {
            id: 3,
            valid: true,
            scores: [(FITNESS_KEY.to_owned(), 37.0)].into(),
            confirmation: Some(Confirmation {
                runs: Vec::new(),
                fitness: vec![100.0, 1.0, 10.0],
                aggregate: "mean".to_owned(),
                spread: Some(99.0),
                unconfirmed: true,
                note: Some("fitness spread 99 over 3 evaluations".to_owned()),
            }),
            ..Genome::default()
        };
        let mut history = RunHistory::new();
        history.apply(RunEvent::GenomeAdmitted {
            genome: std::sync::Arc::new(genome),
            best_id: None,
            best_score: None,
            iterations_done: 1,
            policy: Default::default(),
            active: Vec::new(),
        });
        let mut inspector = Inspector::default();
        let harness = egui_kittest::Harness::new_ui(|ui| {
            inspector.ui(ui, &history, Some(3), None, "python");
        });
        let label = harness.get_by_label_contains("unconfirmed (never a parent)");
        let text = format!("{label:?}");
        assert!(text.contains("100.000000, 1.000000, 10.000000"), "{text}");
    }

    /// A genome a cluster evaluated shows its job, node and retries.
    #[test]
    fn a_cluster_genome_shows_its_job_and_node() {
        use crate::engine::events::RunEvent;
        use crate::engine::genome::Placement;
        use egui_kittest::kittest::Queryable as _;
        let genome = Genome {
            id: 4,
            valid: true,
            scores: [(FITNESS_KEY.to_owned(), 0.5)].into(),
            placement: Some(Placement {
                scheduler: "slurm".to_owned(),
                job_id: "812.3".to_owned(),
                node: "gpu-07".to_owned(),
                retries: vec!["allocation 790 on gpu-02 ended NODE_FAIL".to_owned()],
            }),
            ..Genome::default()
        };
        let mut history = RunHistory::new();
        history.apply(RunEvent::GenomeAdmitted {
            genome: std::sync::Arc::new(genome),
            best_id: None,
            best_score: None,
            iterations_done: 1,
            policy: Default::default(),
            active: Vec::new(),
        });
        let mut inspector = Inspector::default();
        let harness = egui_kittest::Harness::new_ui(|ui| {
            inspector.ui(ui, &history, Some(4), None, "python");
        });
        harness.get_by_label("slurm job 812.3 on node gpu-07");
        harness.get_by_label("retried after: allocation 790 on gpu-02 ended NODE_FAIL");
    }

    #[test]
    fn errors_and_losses_are_lower_is_better_by_default() {
        for name in [
            "rmse",
            "max_abs_error",
            "fit_error",
            "loss",
            "val_loss",
            "mse",
            "error",
        ] {
            assert!(lower_is_better_by_default(name), "{name}");
        }
        for name in [
            "combined_score",
            "accuracy",
            "sum_radii",
            "errorless",
            "glossy",
            "terror",
        ] {
            assert!(!lower_is_better_by_default(name), "{name}");
        }
    }

    #[test]
    fn delta_text_signs() {
        assert_eq!(delta_text(0.5), "+0.500000");
        assert_eq!(delta_text(-0.25), "−0.250000");
        assert_eq!(delta_text(0.0), "±0");
    }

    #[test]
    fn a_deep_lineage_collapses_to_its_root_and_last_ancestors() {
        let chain: Vec<GenomeId> = (0..74).collect();
        let (shown, hidden) = lineage_shown(&chain, false);
        assert_eq!(shown.len(), 1 + LINEAGE_TAIL);
        assert_eq!(shown[0], 0);
        assert_eq!(shown.last(), Some(&73));
        assert_eq!(hidden, 74 - 1 - LINEAGE_TAIL);
        assert_eq!(lineage_shown(&chain, true).0.len(), 74);
        assert_eq!(lineage_shown(&chain[..5], false), (chain[..5].to_vec(), 0));
    }

    #[test]
    fn delta_colours_follow_the_metric_direction() {
        let n = Color32::GRAY;
        assert_eq!(delta_color(0.5, false, n), data::GOOD);
        assert_eq!(delta_color(0.5, true, n), data::BAD);
        assert_eq!(delta_color(-0.5, true, n), data::GOOD);
        assert_eq!(delta_color(0.0, true, n), n);
    }
}
