//! The inspector's Agent tab: what a coding agent did for one genome. A
//! header (exit, wall time, steps, tokens and cost, the parent it chose,
//! the changes dropped), then the transcript as a list of steps, virtualised
//! (only the rows in view are laid out, each read once and cached by the
//! engine's `Transcript`), with the chosen step's messages, tool calls and
//! results, reply, tokens and cost below; the agent's output; the diff it
//! produced.

use egui::RichText;

use crate::engine::agent_run::{AgentExit, AgentRun};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::model::relay::steps::{MessageView, StepView, Transcript};
use crate::studio::run::diff_view::{self, DiffMode};
use crate::studio::run::files_view::FileChoice;
use crate::studio::run::history::format_tokens;
use crate::studio::theme::data;

/// Characters of one message shown before "… N more".
const MESSAGE_CHARS: usize = 6_000;

/// What the tab shows below its header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AgentSection {
    #[default]
    Transcript,
    Output,
    Diff,
}

/// The tab's state: the transcript read so far, of the genome shown.
#[derive(Default)]
pub struct AgentView {
    genome: Option<GenomeId>,
    transcript: Transcript,
    /// The step shown in full.
    pub selected: usize,
    pub section: AgentSection,
}

fn cost_text(cost: Option<f64>) -> String {
    cost.map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}"))
}

fn secs(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

fn cut(text: &str, chars: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= chars {
        (text.to_owned(), 0)
    } else {
        (text.chars().take(chars).collect(), total - chars)
    }
}

fn mono(ui: &mut egui::Ui, text: &str) {
    let (shown, more) = cut(text, MESSAGE_CHARS);
    ui.add(
        egui::Label::new(RichText::new(shown).monospace())
            .wrap()
            .selectable(true),
    );
    if more > 0 {
        ui.label(RichText::new(format!("… {more} more characters")).weak());
    }
}

fn message_ui(ui: &mut egui::Ui, m: &MessageView) {
    let title = match &m.result_of {
        Some(id) => format!("{} · result of {id}", m.role),
        None => m.role.clone(),
    };
    ui.label(RichText::new(title).strong());
    if !m.text.is_empty() {
        mono(ui, &m.text);
    }
    for c in &m.tool_calls {
        ui.label(
            RichText::new(format!("→ {}", c.line(400)))
                .color(data::STRUCTURE)
                .monospace(),
        );
    }
    ui.add_space(4.0);
}

impl AgentView {
    /// How many of `run`'s steps have been read (for tests).
    pub fn steps_read(&self) -> usize {
        self.transcript.read()
    }

    /// Draws the tab for `genome`, outside the inspector's scroll area (its
    /// parts scroll themselves; the step list lays out only the rows in
    /// view); `parent` for the diff.
    pub fn tab_ui(
        &mut self,
        ui: &mut egui::Ui,
        genome: &Genome,
        parent: Option<&Genome>,
        file: &mut FileChoice,
        mode: DiffMode,
    ) {
        match genome.agent.as_deref() {
            Some(run) => self.ui(ui, genome, run, parent, file, mode),
            None => {
                ui.label(RichText::new("No coding agent proposed this genome.").weak());
            }
        }
    }

    /// Draws the tab for `genome`'s agent run; `parent` for the diff.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        genome: &Genome,
        run: &AgentRun,
        parent: Option<&Genome>,
        file: &mut FileChoice,
        mode: DiffMode,
    ) {
        if self.genome != Some(genome.id) {
            self.genome = Some(genome.id);
            self.transcript = Transcript::new(run);
            self.selected = 0;
        }
        // A short inspector (1024x640) has room for a row or two under the
        // genome's header: the agent's header, the list (four rows high)
        // and the chosen step then scroll as one.
        if self.section == AgentSection::Transcript && ui.available_height() < SHORT {
            egui::ScrollArea::vertical()
                .id_salt("agent_short")
                .auto_shrink(false)
                .show(ui, |ui| {
                    self.header_and_sections(ui, run);
                    self.transcript_ui(ui, run, true);
                });
            return;
        }
        self.header_and_sections(ui, run);
        match self.section {
            AgentSection::Transcript => self.transcript_ui(ui, run, false),
            AgentSection::Output => {
                egui::ScrollArea::vertical()
                    .id_salt("agent_output")
                    .auto_shrink(false)
                    .show(ui, |ui| {
                        for (title, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
                            ui.label(RichText::new(title).strong());
                            if text.is_empty() {
                                ui.label(RichText::new("(empty)").weak());
                            } else {
                                mono(ui, text);
                            }
                            ui.add_space(6.0);
                        }
                    });
            }
            AgentSection::Diff => {
                egui::ScrollArea::both()
                    .id_salt("agent_diff")
                    .auto_shrink(false)
                    .show(ui, |ui| match parent {
                        Some(p) if !p.content.is_single() || !genome.content.is_single() => {
                            super::files_view::diff_ui(ui, &genome.content, &p.content, file, mode);
                        }
                        Some(p) => {
                            diff_view::diff_ui(ui, &p.content.text(), &genome.content.text(), mode);
                        }
                        None => {
                            ui.label(RichText::new("No parent to compare with.").weak());
                        }
                    });
            }
        }
    }

    fn header_and_sections(&mut self, ui: &mut egui::Ui, run: &AgentRun) {
        header_ui(ui, run);
        ui.horizontal(|ui| {
            let n = run.steps.len();
            for (section, title) in [
                (AgentSection::Transcript, format!("Transcript ({n} steps)")),
                (AgentSection::Output, "stdout and stderr".to_owned()),
                (AgentSection::Diff, "Diff it produced".to_owned()),
            ] {
                ui.selectable_value(&mut self.section, section, title);
            }
        });
        ui.separator();
    }

    fn transcript_ui(&mut self, ui: &mut egui::Ui, run: &AgentRun, inline: bool) {
        if run.steps.is_empty() {
            ui.label(RichText::new("The agent sent no request through the relay.").weak());
            return;
        }
        let row_height = ui.text_style_height(&egui::TextStyle::Body).max(18.0);
        let list_height = if inline {
            row_height * 4.0
        } else {
            (ui.available_height() * 0.42).max(row_height * 4.0)
        };
        let mut clicked = None;
        egui::ScrollArea::vertical()
            .id_salt("agent_steps")
            .max_height(list_height)
            .auto_shrink([false, true])
            .show_rows(ui, row_height, run.steps.len(), |ui, rows| {
                for i in rows {
                    let Some(s) = self.transcript.summary(run, i) else {
                        continue;
                    };
                    let tokens = s
                        .usage
                        .map_or_else(String::new, |u| format_tokens(u.total_tokens()));
                    let cost = s
                        .usage
                        .and_then(|u| u.cost_usd)
                        .map_or_else(String::new, |c| format!("${c:.4}"));
                    // The gist comes early, so that a narrow inspector still
                    // shows what the step did; the protocol's full name and the
                    // step's time are in its details below.
                    let text = format!(
                        "#{:<4} {:<5} {:>3} {:>6} {:>8}  {}",
                        s.index,
                        wire_tag(s.wire),
                        s.status,
                        tokens,
                        cost,
                        s.line
                    );
                    let mut rich = RichText::new(text).monospace();
                    if s.trouble {
                        rich = rich.color(data::BAD);
                    }
                    let row = ui.add(
                        egui::Button::selectable(self.selected == i, rich)
                            .truncate()
                            .min_size(egui::vec2(ui.available_width(), row_height)),
                    );
                    if row.clicked() {
                        clicked = Some(i);
                    }
                }
            });
        if let Some(i) = clicked {
            self.selected = i;
        }
        self.selected = self.selected.min(run.steps.len() - 1);
        ui.separator();
        let i = self.selected;
        let step = &run.steps[i];
        let Some(view) = self.transcript.detail(run, i) else {
            return;
        };
        if inline {
            step_ui(ui, step, view);
            return;
        }
        egui::ScrollArea::vertical()
            .id_salt(("agent_step", i))
            .auto_shrink(false)
            .show(ui, |ui| step_ui(ui, step, view));
    }
}

/// Below this height (points) the tab's header, the transcript's list and
/// the chosen step scroll as one.
const SHORT: f32 = 420.0;

/// A protocol in a row of the step list: a few letters.
fn wire_tag(wire: crate::engine::agent_run::AgentWire) -> &'static str {
    use crate::engine::agent_run::AgentWire;
    match wire {
        AgentWire::ChatCompletions => "chat",
        AgentWire::Responses => "resp",
        AgentWire::AnthropicMessages => "msgs",
        AgentWire::Other => "other",
    }
}

/// The command line on one line, each long or multi-line argument (a
/// prompt passed as one) cut to its start with its length.
fn command_line(argv: &[String]) -> String {
    const KEEP: usize = 48;
    argv.iter()
        .map(|a| {
            let first = a.lines().next().unwrap_or("");
            if first.len() == a.len() && a.chars().count() <= KEEP {
                a.clone()
            } else {
                let head: String = first.chars().take(KEEP).collect();
                format!("{head}… ({} characters)", a.chars().count())
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn header_ui(ui: &mut egui::Ui, run: &AgentRun) {
    let usage = run.usage();
    ui.horizontal_wrapped(|ui| {
        let (exit, bad) = match &run.exit {
            AgentExit::Finished => ("finished".to_owned(), false),
            AgentExit::Failed(why) => (format!("failed: {why}"), true),
            AgentExit::TimedOut => ("timed out".to_owned(), true),
            AgentExit::NotStarted(why) => (format!("not started: {why}"), true),
        };
        let exit = RichText::new(exit).strong();
        ui.label(if bad { exit.color(data::BAD) } else { exit });
        ui.label(format!("· wall {}", secs(run.wall_ms)));
        ui.label(format!("· {} steps", run.steps.len()));
        let refused = run.refused();
        if refused > 0 {
            // What stopped its spending: the proposal's cap or the run's budget.
            let text = match run.cap_hit() {
                Some(cap) => format!("({refused} refused: {} reached)", cap.label()),
                None => format!("({refused} refused)"),
            };
            ui.label(RichText::new(text).color(data::BAD));
        }
        ui.label(format!(
            "· {} tokens ({} in, {} out)",
            format_tokens(usage.total_tokens()),
            format_tokens(usage.prompt_tokens),
            format_tokens(usage.completion_tokens)
        ));
        ui.label(format!("· {}", cost_text(usage.cost_usd)));
        if let Some(p) = run.chosen_parent {
            ui.label(format!("· built on #{p}"));
        }
    });
    if !run.command.is_empty() {
        // One line: an argument as long as a prompt would push the
        // transcript out of view; the whole command line is its tooltip.
        ui.add(
            egui::Label::new(RichText::new(command_line(&run.command)).monospace().weak())
                .truncate()
                .show_tooltip_when_elided(false),
        )
        .on_hover_text(run.command.join(" "));
    }
    if !run.dropped.is_empty() {
        ui.label(RichText::new(format!("{} changes dropped:", run.dropped.len())).color(data::BAD));
        for d in &run.dropped {
            ui.label(RichText::new(format!("  {d}")).monospace().color(data::BAD));
        }
    }
    if let Some(notes) = &run.notes {
        ui.label(RichText::new(format!("notes: {}", notes.lines().next().unwrap_or(""))).weak());
    }
}

/// A step's tokens and cost: "2.7k prompt (1.5k cached, 300 cache writes) +
/// 116 completion tokens (40 reasoning) · $0.0071", each part in brackets
/// only when the reply reported some.
fn usage_line(u: &crate::engine::usage::TokenUsage) -> String {
    let mut input = Vec::new();
    if u.cached_tokens > 0 {
        input.push(format!("{} cached", format_tokens(u.cached_tokens)));
    }
    if u.cache_write_tokens > 0 {
        input.push(format!(
            "{} cache writes",
            format_tokens(u.cache_write_tokens)
        ));
    }
    let input = if input.is_empty() {
        String::new()
    } else {
        format!(" ({})", input.join(", "))
    };
    let reasoning = if u.reasoning_tokens > 0 {
        format!(" ({} reasoning)", format_tokens(u.reasoning_tokens))
    } else {
        String::new()
    };
    format!(
        "{} prompt{input} + {} completion tokens{reasoning} · {}",
        format_tokens(u.prompt_tokens),
        format_tokens(u.completion_tokens),
        cost_text(u.cost_usd)
    )
}

fn step_ui(ui: &mut egui::Ui, step: &crate::engine::agent_run::AgentStep, view: &StepView) {
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(format!("Step #{}", step.index)).strong());
        ui.label(format!("{} · {}", step.route, step.wire.label()));
        ui.label(format!("· HTTP {}", step.status));
        if step.streamed {
            ui.label("· streamed");
        }
        ui.label(format!(
            "· at {} · took {}",
            secs(step.started_ms),
            secs(step.duration_ms)
        ));
        if let Some(m) = &view.model {
            ui.label(format!("· model {m}"));
        }
    });
    match &step.usage {
        Some(u) => {
            ui.label(usage_line(u));
        }
        None => {
            ui.label(RichText::new("no usage reported").weak());
        }
    }
    if let Some(why) = &step.refused {
        ui.label(RichText::new(format!("refused by the relay: {why}")).color(data::BAD));
    } else if let Some(e) = &view.error {
        ui.label(RichText::new(format!("error: {e}")).color(data::BAD));
    }
    if let Some(u) = &view.unreadable {
        ui.label(RichText::new(u).color(data::BAD));
    }
    ui.add_space(6.0);
    if view.new_from > 0 {
        ui.label(
            RichText::new(format!(
                "{} earlier messages (sent before), then the new ones:",
                view.new_from
            ))
            .weak(),
        );
    }
    for m in &view.messages[view.new_from.min(view.messages.len())..] {
        message_ui(ui, m);
    }
    if !view.tools.is_empty() {
        ui.label(RichText::new(format!("tools offered: {}", view.tools.join(", "))).weak());
    }
    ui.separator();
    ui.label(RichText::new("Reply").strong());
    if view.reply.is_empty() && view.tool_calls.is_empty() {
        ui.label(RichText::new("(no text, no tool call)").weak());
    }
    if !view.reply.is_empty() {
        mono(ui, &view.reply);
    }
    for c in &view.tool_calls {
        ui.label(
            RichText::new(format!("→ {}", c.line(400)))
                .color(data::STRUCTURE)
                .monospace(),
        );
    }
}
