//! The Leaderboard tab's results: the table (one line per card; for a suite,
//! one line per card over the suite and a card × task table whose cells show
//! the best value, the gap to the best known value, the normalised value or
//! the model calls to reach the fraction), the runs (click one to open it in
//! the Run tab) and each card's mean curve with its 95 % band (for a suite,
//! its score over the suite).

use egui::{Color32, RichText, Ui};
use egui_plot::{FilledArea, Line, Plot, PlotPoints};

use super::{LeaderboardCtx, LeaderboardPanel, Source};
use crate::engine::leaderboard::Board;
use crate::engine::leaderboard::report::{CardResult, Leaderboard, percent};
use crate::engine::leaderboard::suite_report::{self, SuiteLeaderboard};
use crate::engine::leaderboard::value;
use crate::studio::command::{Commands, UiCommand};
use crate::studio::run::history::{format_duration, format_tokens};
use crate::studio::theme;
use crate::studio::theme::data;

/// One card's curve as drawn: its runs of iterations that have a value.
#[derive(Clone, Debug, Default)]
pub struct CardCurve {
    pub card: String,
    pub color: Color32,
    /// (x, mean, low, high) per iteration, in runs without gaps.
    pub segments: Vec<Vec<[f64; 4]>>,
}

/// What the card × task table of a suite shows in its cells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SuiteCell {
    /// The mean best value over seeds.
    #[default]
    Value,
    /// The mean gap to the best known value.
    Gap,
    /// The mean best value normalised by the best known value.
    Normalised,
    /// The mean model calls to reach the fraction, over the runs that did.
    Calls,
}

impl SuiteCell {
    pub const ALL: [Self; 4] = [Self::Value, Self::Gap, Self::Normalised, Self::Calls];

    /// Its button's text.
    pub fn label(self, fraction: f64) -> String {
        match self {
            Self::Value => "Best value".to_owned(),
            Self::Gap => "Gap to best known".to_owned(),
            Self::Normalised => "Normalised".to_owned(),
            Self::Calls => format!("Calls to {}", percent(fraction)),
        }
    }

    fn text(self, lb: &Leaderboard, c: &CardResult) -> String {
        match self {
            Self::Value => suite_report::best_value_cell(lb, c),
            Self::Gap => suite_report::gap_cell(lb, c),
            Self::Normalised => c
                .value
                .as_ref()
                .and_then(|v| v.normalised)
                .map_or_else(|| "–".to_owned(), |e| format!("{:.4}", e.mean)),
            Self::Calls => suite_report::calls_cell(lb, c),
        }
    }
}

/// The curves of a leaderboard, one colour per card in its order: each
/// card's mean best so far, or for a suite its score over the suite.
pub fn curves_of(board: &Board) -> Vec<CardCurve> {
    let series: Vec<(&str, &[Option<crate::engine::leaderboard::stats::Estimate>])> = match board {
        Board::Task(lb) => lb
            .cards
            .iter()
            .map(|c| (c.card.as_str(), c.curve.as_slice()))
            .collect(),
        Board::Suite(sl) => sl
            .cards
            .iter()
            .map(|c| (c.card.as_str(), c.curve.as_slice()))
            .collect(),
    };
    series
        .into_iter()
        .enumerate()
        .map(|(i, (card, curve))| {
            let mut segments: Vec<Vec<[f64; 4]>> = Vec::new();
            let mut current = Vec::new();
            for (x, e) in curve.iter().enumerate() {
                match e {
                    Some(e) => current.push([x as f64, e.mean, e.ci_low, e.ci_high]),
                    None if !current.is_empty() => segments.push(std::mem::take(&mut current)),
                    None => {}
                }
            }
            if !current.is_empty() {
                segments.push(current);
            }
            CardCurve {
                card: card.to_owned(),
                color: data::series(i),
                segments,
            }
        })
        .collect()
}

/// Below this height the suite's tables, plot and runs share one vertical
/// scroll (above it, the tables scroll on their own above the runs and plot).
const SUITE_ONE_SCROLL_BELOW: f32 = 420.0;

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.4}"))
}

pub(super) fn results_ui(
    panel: &LeaderboardPanel,
    ui: &mut Ui,
    lctx: &LeaderboardCtx<'_>,
    commands: &mut Commands,
    cell: &mut SuiteCell,
) {
    status_ui(panel, ui, lctx, commands);
    let Some(board) = &panel.table else {
        if panel.runs.is_empty() {
            ui.label(
                RichText::new(
                    "Tick two or more cards, pick the seeds and the budget and press Start batch; \
                     or open a batch folder to see its leaderboard.",
                )
                .weak(),
            );
        } else {
            // runs under way, none over yet
            runs_ui(panel, ui, lctx, commands, ui.available_height());
        }
        return;
    };
    let iterations = match board {
        Board::Task(lb) => {
            egui::ScrollArea::horizontal()
                .id_salt("leaderboard-table-scroll")
                .show(ui, |ui| table_ui(ui, lb, lctx));
            lb.iterations
        }
        Board::Suite(sl) if ui.available_height() < SUITE_ONE_SCROLL_BELOW => {
            // a small window: the tables in full, then the plot and the runs, in one scroll
            egui::ScrollArea::vertical()
                .id_salt("leaderboard-suite-all")
                .auto_shrink([false, false])
                .show(ui, |ui| {
                    egui::ScrollArea::horizontal()
                        .id_salt("leaderboard-suite-wide")
                        .show(ui, |ui| suite_ui(ui, sl, lctx, cell));
                    ui.separator();
                    plot_ui(panel, ui, sl.iterations, true, 240.0);
                    runs_ui(panel, ui, lctx, commands, 240.0);
                });
            return;
        }
        Board::Suite(sl) => {
            let max = (ui.available_height() * 0.55).max(160.0);
            egui::ScrollArea::both()
                .id_salt("leaderboard-suite-scroll")
                .max_height(max)
                .auto_shrink([false, true])
                .show(ui, |ui| suite_ui(ui, sl, lctx, cell));
            sl.iterations
        }
    };
    let suite = matches!(board, Board::Suite(_));
    ui.separator();
    let height = ui.available_height();
    if height >= 150.0 && ui.available_width() >= 700.0 {
        ui.columns(2, |cols| {
            runs_ui(panel, &mut cols[0], lctx, commands, height);
            plot_ui(panel, &mut cols[1], iterations, suite, height);
        });
    } else {
        egui::ScrollArea::vertical()
            .id_salt("leaderboard-lower-scroll")
            .show(ui, |ui| {
                plot_ui(panel, ui, iterations, suite, 240.0);
                runs_ui(panel, ui, lctx, commands, 240.0);
            });
    }
}

/// A suite's tables: the cards over the suite, then the card × task table
/// with its choice of cell.
fn suite_ui(ui: &mut Ui, sl: &SuiteLeaderboard, lctx: &LeaderboardCtx<'_>, cell: &mut SuiteCell) {
    let p = percent(sl.fraction);
    let headers = [
        String::new(),
        "card".to_owned(),
        "score".to_owned(),
        "95 % CI".to_owned(),
        format!("tasks reaching {p}"),
        format!("runs reaching {p}"),
        "better / worse".to_owned(),
        "model calls".to_owned(),
        "tokens".to_owned(),
        "cost".to_owned(),
        "wall time".to_owned(),
    ];
    egui::Grid::new("leaderboard-suite-summary")
        .num_columns(headers.len())
        .striped(true)
        .spacing([10.0, 4.0])
        .show(ui, |ui| {
            for h in &headers {
                let l = ui.label(RichText::new(h).strong());
                if h == "score" {
                    l.on_hover_text(
                        "Per seed, the mean over the tasks with a best known value of the best value normalised by \
                         it (1.0 = the record; a run without a valid program scores 0); the mean over seeds",
                    );
                }
            }
            ui.end_row();
            for (i, c) in sl.cards.iter().enumerate() {
                let (rect, _) = ui.allocate_exact_size(egui::vec2(18.0, 4.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 1.0, data::series(i));
                let base = if c.card == sl.baseline {
                    format!("{} (baseline)", c.card)
                } else {
                    c.card.clone()
                };
                if c.capped {
                    ui.label(RichText::new(format!("{base} (capped)")).color(lctx.warn));
                } else {
                    ui.label(base);
                }
                ui.label(c.score.map_or_else(|| "–".to_owned(), |e| format!("{:.4}", e.mean)));
                ui.label(c.score.map_or_else(
                    || "–".to_owned(),
                    |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high),
                ));
                ui.label(format!("{}/{}", c.tasks_reached, c.tasks_scored));
                ui.label(format!("{}/{}", c.runs_reached, c.runs));
                if c.card == sl.baseline {
                    ui.weak("baseline");
                } else {
                    ui.label(format!("{} / {}", c.better.len(), c.worse.len()))
                        .on_hover_text(format!(
                            "Against {} (Mann–Whitney U on each task's best score at {}): better on {}; worse on {}",
                            sl.baseline,
                            sl.iterations,
                            if c.better.is_empty() { "none".to_owned() } else { c.better.join(", ") },
                            if c.worse.is_empty() { "none".to_owned() } else { c.worse.join(", ") },
                        ));
                }
                ui.label(c.calls.to_string());
                ui.label(format_tokens(c.prompt_tokens + c.completion_tokens));
                ui.label(c.cost_usd.map_or_else(|| "–".to_owned(), |v| format!("${v:.4}")));
                ui.label(format_duration(std::time::Duration::from_secs_f64(
                    c.wall_secs.max(0.0),
                )));
                ui.end_row();
            }
        });
    ui.add_space(theme::SECTION_GAP);
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("By task").strong());
        for choice in SuiteCell::ALL {
            ui.selectable_value(cell, choice, choice.label(sl.fraction));
        }
    });
    egui::Grid::new("leaderboard-suite-tasks")
        .num_columns(3 + sl.cards.len())
        .striped(true)
        .spacing([10.0, 4.0])
        .show(ui, |ui| {
            for h in ["task", "direction", "best known"] {
                ui.label(RichText::new(h).strong());
            }
            for c in &sl.cards {
                ui.label(RichText::new(&c.card).strong());
            }
            ui.end_row();
            for lb in &sl.tasks {
                ui.label(&lb.task)
                    .on_hover_text(lb.task_dir.display().to_string());
                match &lb.record {
                    Some(r) => {
                        ui.label(r.direction_word());
                        ui.label(value::fmt_value(r.value)).on_hover_text(&r.source);
                    }
                    None => {
                        ui.weak("–");
                        ui.weak("–").on_hover_text("Its config has no best_known");
                    }
                }
                for c in &sl.cards {
                    match lb.cards.iter().find(|l| l.card == c.card) {
                        Some(line) => {
                            ui.label(cell.text(lb, line)).on_hover_text(cell_hover(
                                lb,
                                line,
                                sl.fraction,
                            ));
                        }
                        None => {
                            ui.weak("–");
                        }
                    }
                }
                ui.end_row();
            }
        });
}

/// Everything a card × task cell stands for, on hover.
fn cell_hover(lb: &Leaderboard, c: &CardResult, fraction: f64) -> String {
    let Some(v) = &c.value else {
        return format!(
            "{} on {}: best score {} (no best known value)",
            c.card,
            lb.task,
            value::fmt_estimate(c.best, 4)
        );
    };
    let p = percent(fraction);
    format!(
        "{} on {}\nbest value {}; best of seeds {}\ngap to the best known {}\nnormalised {}\n\
         reached {p}: {}/{} runs\nto {p}: model calls {}, tokens {}, cost {}",
        c.card,
        lb.task,
        value::fmt_estimate(v.best, 6),
        v.best_of_seeds
            .map_or_else(|| "–".to_owned(), value::fmt_value),
        value::fmt_estimate(v.gap, 6),
        value::fmt_estimate(v.normalised, 4),
        v.reached,
        v.runs,
        value::fmt_to_reach(v.calls_to_reach, v.reached, v.runs, 1),
        value::fmt_to_reach(v.tokens_to_reach, v.reached, v.runs, 0),
        value::fmt_to_reach(v.cost_to_reach, v.reached, v.runs, 4),
    )
}

fn status_ui(
    panel: &LeaderboardPanel,
    ui: &mut Ui,
    lctx: &LeaderboardCtx<'_>,
    commands: &mut Commands,
) {
    // One line: what was compared and how far the batch is on the left, the
    // export button on the right; long texts are cut short (whole on hover).
    ui.horizontal(|ui| {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if let Some(dir) = panel.folder()
                && ui
                    .button("Attach to hub export")
                    .on_hover_text(format!(
                        "Use the leaderboard in {} as the Results section of the next hub export (Details tab)",
                        dir.display()
                    ))
                    .clicked()
            {
                commands.push(UiCommand::SetExportResults(dir));
            }
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                if panel.is_running() {
                    let over = panel.runs.iter().filter(|r| r.over).count();
                    ui.spinner();
                    let elapsed = panel
                        .started
                        .map(|t| format_duration(t.elapsed()))
                        .unwrap_or_default();
                    ui.label(format!("{over} of {} runs over · {elapsed}", panel.runs.len()));
                    // the elapsed time ticks
                    ui.ctx()
                        .request_repaint_after(std::time::Duration::from_secs(1));
                }
                if let Some(sl) = panel.suite() {
                    let seeds = sl
                        .seeds
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ");
                    let short_model = sl.model.split(" (").next().unwrap_or_default();
                    let mut hover = format!(
                        "Suite {} ({} tasks: {}), {} iterations per run, seeds {seeds}, model {}",
                        sl.suite,
                        sl.tasks.len(),
                        sl.tasks.iter().map(|t| t.task.as_str()).collect::<Vec<_>>().join(", "),
                        sl.iterations,
                        sl.model
                    );
                    if let Source::Folder(dir) = &panel.source {
                        hover.push_str(&format!("\nRead from {}", dir.display()));
                    }
                    let text = format!(
                        "{} · {} tasks · {} iterations · seeds {seeds} · {short_model}",
                        sl.suite,
                        sl.tasks.len(),
                        sl.iterations
                    );
                    ui.add(egui::Label::new(RichText::new(text).strong()).truncate())
                        .on_hover_text(hover);
                }
                if let Some(lb) = panel.table() {
                    let seeds = lb
                        .seeds
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ");
                    let short_model = lb.model.split(" (").next().unwrap_or_default();
                    let mut hover = format!(
                        "Task {} ({}), {} iterations per run, seeds {seeds}, model {}",
                        lb.task,
                        lb.task_dir.display(),
                        lb.iterations,
                        lb.model
                    );
                    if let Source::Folder(dir) = &panel.source {
                        hover.push_str(&format!("\nRead from {}", dir.display()));
                    }
                    let text = format!(
                        "{} · {} iterations · seeds {seeds} · {short_model}",
                        lb.task, lb.iterations
                    );
                    ui.add(egui::Label::new(RichText::new(text).strong()).truncate().show_tooltip_when_elided(false))
                        .on_hover_text(hover);
                }
                if let Some(Ok(text)) = &panel.outcome {
                    ui.separator();
                    ui.add(egui::Label::new(RichText::new(text).weak()).truncate().show_tooltip_when_elided(false))
                        .on_hover_text(text);
                }
            });
        });
    });
    if let Some(Err(e)) = &panel.outcome {
        ui.add(egui::Label::new(RichText::new(e).color(lctx.error)).wrap());
    }
    if let Some(first) = panel.warnings.first() {
        let text = if panel.warnings.len() == 1 {
            first.clone()
        } else {
            format!("{first} (and {} more)", panel.warnings.len() - 1)
        };
        ui.add(
            egui::Label::new(RichText::new(text).color(lctx.warn))
                .truncate()
                .show_tooltip_when_elided(false),
        )
        .on_hover_text(panel.warnings.join("\n"));
    }
}

fn table_ui(ui: &mut Ui, lb: &Leaderboard, lctx: &LeaderboardCtx<'_>) {
    let n = lb.iterations;
    let target = lb.target.is_some();
    let mut headers = vec![
        String::new(),
        "card".to_owned(),
        "runs".to_owned(),
        "best (mean)".to_owned(),
        "95 % CI".to_owned(),
        "median".to_owned(),
        format!("@{}", n / 4),
        format!("@{}", n / 2),
        format!("@{n}"),
    ];
    if target {
        headers.push("reached target".to_owned());
        headers.push("iterations to target".to_owned());
    }
    for h in ["valid %", "tokens", "cost", "wall time", "vs baseline"] {
        headers.push(h.to_owned());
    }
    egui::Grid::new("leaderboard-table")
        .num_columns(headers.len())
        .striped(true)
        .spacing([10.0, 4.0])
        .show(ui, |ui| {
            for h in &headers {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            for (i, c) in lb.cards.iter().enumerate() {
                let (rect, _) = ui.allocate_exact_size(egui::vec2(18.0, 4.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 1.0, data::series(i));
                card_cell(ui, c, lb, lctx);
                ui.label(format!("{}/{}", c.runs.len(), lb.seeds.len()))
                    .on_hover_text("runs in these numbers / seeds");
                ui.label(num(c.best.map(|e| e.mean)));
                ui.label(c.best.map_or_else(
                    || "–".to_owned(),
                    |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high),
                ));
                ui.label(num(c.best_median));
                ui.label(num(c.at_quarter));
                ui.label(num(c.at_half));
                ui.label(num(c.at_budget));
                if target {
                    ui.label(format!("{}/{}", c.reached_target, c.runs.len()));
                    ui.label(
                        c.mean_iterations_to_target
                            .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}")),
                    );
                }
                ui.label(format!("{:.1}", c.valid_percent));
                ui.label(format_tokens(c.prompt_tokens + c.completion_tokens));
                ui.label(
                    c.cost_usd
                        .map_or_else(|| "–".to_owned(), |v| format!("${v:.4}")),
                );
                ui.label(format_duration(std::time::Duration::from_secs_f64(
                    c.wall_secs.max(0.0),
                )));
                verdict_cell(ui, c, lb);
                ui.end_row();
            }
        });
}

fn card_cell(ui: &mut Ui, c: &CardResult, lb: &Leaderboard, lctx: &LeaderboardCtx<'_>) {
    let base = if c.card == lb.baseline {
        format!("{} (baseline)", c.card)
    } else {
        c.card.clone()
    };
    if c.capped {
        ui.label(RichText::new(format!("{base} (capped)")).color(lctx.warn))
            .on_hover_text(
                "A run of this card stopped at its token or cost cap before the budget: \
                 its numbers cover fewer iterations",
            );
    } else {
        ui.label(base);
    }
}

fn verdict_cell(ui: &mut Ui, c: &CardResult, lb: &Leaderboard) {
    match &c.vs_baseline {
        Some(cmp) => {
            let word = if cmp.verdict.starts_with("no difference") {
                "no difference"
            } else {
                cmp.verdict.as_str()
            };
            ui.label(format!("{word} (p = {:.3})", cmp.p_value))
                .on_hover_text(format!(
                    "{} against the baseline. Two-sided Mann–Whitney U on the best score at {}: \
                     U = {}, p = {:.4}, {}",
                    cmp.verdict, lb.iterations, cmp.u, cmp.p_value, cmp.method
                ));
        }
        None if c.card == lb.baseline => {
            ui.weak("baseline");
        }
        None => {
            ui.weak("–").on_hover_text("Needs runs of both cards");
        }
    }
}

fn runs_ui(
    panel: &LeaderboardPanel,
    ui: &mut Ui,
    lctx: &LeaderboardCtx<'_>,
    commands: &mut Commands,
    height: f32,
) {
    ui.label(RichText::new("Runs").strong())
        .on_hover_text("Click a run to open it in the Run tab");
    egui::ScrollArea::both()
        .id_salt("leaderboard-runs")
        .max_height((height - 24.0).max(80.0))
        .auto_shrink([false, true])
        .show(ui, |ui| {
            egui::Grid::new("leaderboard-runs-grid")
                .num_columns(4)
                .striped(true)
                .spacing([12.0, 4.0])
                .show(ui, |ui| {
                    for r in &panel.runs {
                        let link = ui
                            .add_enabled(r.recorded, egui::Button::selectable(false, r.label()))
                            .on_hover_text(if r.running {
                                format!("Open what {} has recorded so far", r.dir.display())
                            } else {
                                format!("Open {} in the Run tab", r.dir.display())
                            })
                            .on_disabled_hover_text("Not started yet");
                        if link.clicked() {
                            commands.push(UiCommand::OpenRun(r.dir.clone()));
                        }
                        ui.label(num(r.best));
                        ui.label(r.done.map_or_else(
                            || "–".to_owned(),
                            |d| format!("{d}/{}", panel.iterations),
                        ));
                        let word = RichText::new(r.word());
                        let word = if r.failed {
                            word.color(lctx.error)
                        } else if r.capped {
                            word.color(lctx.warn)
                        } else {
                            word
                        };
                        ui.label(word).on_hover_text(&r.state);
                        ui.end_row();
                    }
                });
        });
}

fn plot_ui(panel: &LeaderboardPanel, ui: &mut Ui, iterations: u64, suite: bool, height: f32) {
    let top = ui.cursor().top();
    let (title, y) = if suite {
        (
            "Score over the suite (mean normalised best so far), 95 % band",
            "best so far / best known",
        )
    } else {
        ("Mean best so far, 95 % band", "best score")
    };
    ui.label(RichText::new(title).strong());
    // the legend by hand above the plot: it never covers a curve
    ui.horizontal_wrapped(|ui| {
        for c in &panel.curves {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(18.0, 4.0), egui::Sense::hover());
            ui.painter().rect_filled(rect, 1.0, c.color);
            ui.label(&c.card);
            ui.add_space(theme::SECTION_GAP);
        }
    });
    let used = ui.cursor().top() - top;
    crate::studio::ticks::value_axis(Plot::new("leaderboard-plot"))
        .height((height - used - 8.0).max(140.0))
        .x_axis_label("iteration")
        .y_axis_label(y)
        .include_x(0.0)
        .include_x(iterations as f64)
        .allow_scroll(false)
        .show(ui, |plot| {
            for c in &panel.curves {
                for (k, seg) in c.segments.iter().enumerate() {
                    let xs: Vec<f64> = seg.iter().map(|p| p[0]).collect();
                    let lo: Vec<f64> = seg.iter().map(|p| p[2]).collect();
                    let hi: Vec<f64> = seg.iter().map(|p| p[3]).collect();
                    plot.add(
                        FilledArea::new(format!("{} band", c.card), &xs, &lo, &hi)
                            .fill_color(c.color.gamma_multiply(0.25))
                            .id(("band", &c.card, k)),
                    );
                    let mean: Vec<[f64; 2]> = seg.iter().map(|p| [p[0], p[1]]).collect();
                    plot.line(
                        Line::new(c.card.clone(), PlotPoints::from(mean))
                            .color(c.color)
                            .width(2.0)
                            .id(("mean", &c.card, k)),
                    );
                }
            }
        });
}
