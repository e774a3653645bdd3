//! The population archive: a virtualised table of every genome, sortable by
//! any column and filterable (valid only, text search in the program), with
//! the scaffold's own structure (beam members, or the current parent and its
//! use count) above it. The sorted, filtered row order is cached and rebuilt
//! only when the settings change, or at most every [`REFRESH_SECS`] while
//! genomes keep arriving.

use std::cmp::Ordering;
use std::time::Instant;

use egui::{RichText, Sense};
use egui_extras::{Column, TableBuilder};

use crate::engine::genome::{GenomeId, OrdF64};
use crate::engine::head::GenomeHead;
use crate::studio::run::GenomeView;
use crate::studio::run::history::{RunHistory, format_tokens};
use crate::studio::theme::data;

/// Minimum time between two re-sorts caused only by new genomes.
pub const REFRESH_SECS: f64 = 0.25;

/// The columns, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortColumn {
    Id,
    Iteration,
    Score,
    Valid,
    Parent,
    Depth,
    Model,
    Tokens,
}

impl SortColumn {
    /// Every column in display order.
    pub const ALL: [Self; 8] = [
        Self::Id,
        Self::Iteration,
        Self::Score,
        Self::Valid,
        Self::Parent,
        Self::Depth,
        Self::Model,
        Self::Tokens,
    ];

    /// Header text.
    pub fn title(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Iteration => "iteration",
            Self::Score => "score",
            Self::Valid => "valid",
            Self::Parent => "parent",
            Self::Depth => "depth/island",
            Self::Model => "model",
            Self::Tokens => "tokens",
        }
    }

    fn compare(self, a: &GenomeHead, b: &GenomeHead) -> Ordering {
        let tokens = |g: &GenomeHead| g.usage.map_or(0, |u| u.total_tokens());
        let primary = match self {
            Self::Id => a.id.cmp(&b.id),
            Self::Iteration => a.iteration.cmp(&b.iteration),
            Self::Score => OrdF64(a.fitness_or_min()).cmp(&OrdF64(b.fitness_or_min())),
            Self::Valid => a.valid.cmp(&b.valid),
            Self::Parent => a.parent_id.cmp(&b.parent_id),
            Self::Depth => {
                (a.metadata.depth, a.metadata.island).cmp(&(b.metadata.depth, b.metadata.island))
            }
            Self::Model => a.author().cmp(&b.author()),
            Self::Tokens => tokens(a).cmp(&tokens(b)),
        };
        primary.then(a.id.cmp(&b.id))
    }
}

/// Settings that define the row order.
#[derive(Clone, Debug, PartialEq)]
struct OrderKey {
    column: SortColumn,
    ascending: bool,
    valid_only: bool,
    search: String,
}

/// The archive table's state.
pub struct ArchiveTable {
    /// Column to sort by.
    pub sort: SortColumn,
    pub ascending: bool,
    /// Hide invalid genomes.
    pub valid_only: bool,
    /// Substring the program (or its error) must contain.
    pub search: String,
    /// Positions into `history.genomes`, in display order.
    order: Vec<u32>,
    order_key: Option<OrderKey>,
    order_len: usize,
    built_at: Option<Instant>,
    /// Scroll to this genome's row on the next frame.
    scroll_to: Option<GenomeId>,
    /// The search through the programs of a run whose bodies are in its
    /// archive (the history holds only some).
    programs: Option<ProgramSearch>,
}

/// A search through the programs in a run's archive, on a thread of its
/// own: the ids of the genomes whose program contains the needle.
struct ProgramSearch {
    needle: String,
    dir: std::path::PathBuf,
    answer: std::sync::mpsc::Receiver<Result<Vec<GenomeId>, String>>,
    /// Sorted; `None` until the answer arrives.
    found: Option<Vec<GenomeId>>,
}

impl ProgramSearch {
    fn start(needle: &str, dir: &std::path::Path) -> Self {
        let (tx, answer) = std::sync::mpsc::channel();
        let (n, d) = (needle.to_owned(), dir.to_path_buf());
        std::thread::Builder::new()
            .name("galapagos-search".to_owned())
            .spawn(move || {
                let mut found = Vec::new();
                let read = crate::engine::archive::Archive::open(&d).and_then(|a| {
                    a.programs_from(0, |g| {
                        found.extend(g.content.text().contains(n.as_str()).then_some(g.id));
                        true
                    })
                });
                let found = read.map(|()| found).map_err(|e| e.to_string());
                tx.send(found).ok();
            })
            .ok();
        Self {
            needle: needle.to_owned(),
            dir: dir.to_path_buf(),
            answer,
            found: None,
        }
    }

    /// Whether the answer arrived in this call.
    fn poll(&mut self) -> bool {
        if self.found.is_some() {
            return false;
        }
        match self.answer.try_recv() {
            Ok(found) => {
                // a search that failed finds nothing more in the archive
                self.found = Some(found.unwrap_or_default());
                true
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => false,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.found = Some(Vec::new());
                true
            }
        }
    }
}

impl Default for ArchiveTable {
    fn default() -> Self {
        Self {
            sort: SortColumn::Id,
            ascending: true,
            valid_only: false,
            search: String::new(),
            order: Vec::new(),
            order_key: None,
            order_len: 0,
            built_at: None,
            scroll_to: None,
            programs: None,
        }
    }
}

/// A small painted triangle: up for ascending, down for descending.
fn sort_arrow(ui: &mut egui::Ui, ascending: bool) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(9.0, 9.0), Sense::hover());
    let c = rect.center();
    let (w, h) = (4.0, 3.5);
    let points = if ascending {
        vec![
            egui::pos2(c.x - w, c.y + h),
            egui::pos2(c.x + w, c.y + h),
            egui::pos2(c.x, c.y - h),
        ]
    } else {
        vec![
            egui::pos2(c.x - w, c.y - h),
            egui::pos2(c.x + w, c.y - h),
            egui::pos2(c.x, c.y + h),
        ]
    };
    let color = ui.visuals().strong_text_color();
    ui.painter().add(egui::Shape::convex_polygon(
        points,
        color,
        egui::Stroke::NONE,
    ));
}

fn depth_text(g: &GenomeHead) -> String {
    match g.metadata.island {
        Some(i) => format!("{} / {i}", g.metadata.depth),
        None => g.metadata.depth.to_string(),
    }
}

impl ArchiveTable {
    /// Forget the cached order (a new run started); settings are kept.
    pub fn reset(&mut self) {
        self.order.clear();
        self.order_key = None;
        self.order_len = 0;
        self.built_at = None;
    }

    /// Scroll to a genome's row on the next frame (it was selected elsewhere).
    pub fn scroll_to(&mut self, id: GenomeId) {
        self.scroll_to = Some(id);
    }

    /// Number of rows after filtering (as of the last rebuild).
    pub fn row_count(&self) -> usize {
        self.order.len()
    }

    /// The ids in display order (as of the last rebuild).
    pub fn ordered_ids<'h>(
        &'h self,
        history: &'h RunHistory,
    ) -> impl Iterator<Item = GenomeId> + 'h {
        self.order
            .iter()
            .filter_map(|&p| history.genomes.get(p as usize).map(|g| g.id))
    }

    /// Rebuild the row order if the settings changed, or if genomes arrived
    /// and the last rebuild is older than [`REFRESH_SECS`]. Returns true if
    /// new genomes are still waiting to be shown (ask for a repaint).
    pub fn refresh(&mut self, history: &RunHistory) -> bool {
        let key = OrderKey {
            column: self.sort,
            ascending: self.ascending,
            valid_only: self.valid_only,
            search: self.search.clone(),
        };
        let n = history.genomes.len();
        // The programs the history holds are searched here; those of a
        // recorded run's other genomes, in its archive on a thread.
        let archive = match history.body_source() {
            super::bodies::BodySource::Archive(dir) if !key.search.is_empty() => Some(dir),
            _ => None,
        };
        let stale = match (&self.programs, archive) {
            (Some(p), Some(dir)) => p.needle != key.search || p.dir != *dir,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if stale && let Some(dir) = archive {
            self.programs = Some(ProgramSearch::start(&key.search, dir));
        } else if archive.is_none() {
            self.programs = None;
        }
        let searching = self.programs.as_ref().is_some_and(|p| p.found.is_none());
        let found_now = self.programs.as_mut().is_some_and(ProgramSearch::poll);
        let settings_changed =
            self.order_key.as_ref() != Some(&key) || n < self.order_len || found_now;
        let grew = n > self.order_len;
        let due = history.is_finished()
            || self
                .built_at
                .is_none_or(|t| t.elapsed().as_secs_f64() >= REFRESH_SECS);
        if !(settings_changed || (grew && due)) {
            return grew || searching;
        }
        let found = self.programs.as_ref().and_then(|p| p.found.as_deref());
        let needle = key.search.as_str();
        let mut order: Vec<u32> = history
            .genomes
            .iter()
            .enumerate()
            .filter(|(_, g)| !key.valid_only || g.valid)
            .filter(|(_, g)| {
                needle.is_empty()
                    || history
                        .body(g.id)
                        .is_some_and(|b| b.content.text().contains(needle))
                    || found.is_some_and(|f| f.binary_search(&g.id).is_ok())
                    || g.error.as_deref().is_some_and(|e| e.contains(needle))
            })
            .filter_map(|(i, _)| u32::try_from(i).ok())
            .collect();
        let genomes = &history.genomes;
        let cmp = |a: &u32, b: &u32| match (genomes.get(*a as usize), genomes.get(*b as usize)) {
            (Some(x), Some(y)) => key.column.compare(x, y),
            _ => a.cmp(b),
        };
        if key.column == SortColumn::Id {
            // admission order is id order already
        } else {
            order.sort_unstable_by(cmp);
        }
        if !key.ascending {
            order.reverse();
        }
        self.order = order;
        self.order_key = Some(key);
        self.order_len = n;
        self.built_at = Some(Instant::now());
        searching && !found_now
    }

    /// The scaffold's structure: beam members, or the current parent and its
    /// use count, plus the policy's own status fields, drawn into `ui`'s
    /// row (a wrapping one). Returns a clicked id.
    fn structure_ui(
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        let mut clicked = None;
        {
            if !history.active.is_empty() {
                ui.label(
                    RichText::new(format!("Beam ({} members):", history.active.len())).strong(),
                );
                for id in history.active.iter().take(24) {
                    let score = history
                        .get(*id)
                        .and_then(|g| g.fitness())
                        .map_or(String::new(), |s| format!(" {s:.4}"));
                    if ui
                        .selectable_label(selected == Some(*id), format!("#{id}{score}"))
                        .clicked()
                    {
                        clicked = Some(*id);
                    }
                }
                if history.active.len() > 24 {
                    ui.label(format!("… {} more", history.active.len() - 24));
                }
            } else if let (Some(p), true) =
                (history.current_parent, history.policy.fields.is_empty())
            {
                ui.label(RichText::new("Current parent:").strong());
                if ui
                    .selectable_label(selected == Some(p), format!("#{p}"))
                    .clicked()
                {
                    clicked = Some(p);
                }
                ui.label(format!("used {} times", history.child_count(p)));
            }
            for (label, value) in &history.policy.fields {
                ui.separator();
                ui.label(format!("{label}: {value}"));
            }
        }
        clicked
    }

    /// The keyboard, while no widget has the focus: Up / Down move the
    /// selection through the rows as sorted and filtered (Home / End to the
    /// first / last), Enter opens the row in the inspector (the first one
    /// when none is selected).
    fn keys(
        &mut self,
        ui: &egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        if self.order.is_empty() || ui.memory(|m| m.focused().is_some()) {
            return None;
        }
        let none = egui::Modifiers::NONE;
        let (down, up, home, end, enter) = ui.input_mut(|i| {
            (
                i.consume_key(none, egui::Key::ArrowDown),
                i.consume_key(none, egui::Key::ArrowUp),
                i.consume_key(none, egui::Key::Home),
                i.consume_key(none, egui::Key::End),
                i.consume_key(none, egui::Key::Enter),
            )
        });
        let id_at = |row: usize| {
            self.order
                .get(row)
                .and_then(|&p| history.genomes.get(p as usize))
                .map(|g| g.id)
        };
        let current = selected.and_then(|id| (0..self.order.len()).find(|&r| id_at(r) == Some(id)));
        let last = self.order.len() - 1;
        let row = match current {
            _ if home => 0,
            _ if end => last,
            Some(r) if down => (r + 1).min(last),
            Some(r) if up => r.saturating_sub(1),
            Some(r) if enter => r,
            None if down || up || enter => 0,
            _ => return None,
        };
        let id = id_at(row)?;
        self.scroll_to = Some(id);
        Some(id)
    }
}

impl GenomeView for ArchiveTable {
    /// Filters, then the table. Returns the genome clicked this frame.
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        history: &RunHistory,
        selected: Option<GenomeId>,
    ) -> Option<GenomeId> {
        let mut clicked = self.keys(ui, history, selected);
        if self.refresh(history) {
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_secs_f64(REFRESH_SECS));
        }
        // the structure, the filters and the count share the lines they
        // need (one on a wide screen), so the rows keep the height
        ui.horizontal_wrapped(|ui| {
            let structure = !history.active.is_empty()
                || history.current_parent.is_some()
                || !history.policy.fields.is_empty();
            if structure {
                if let Some(id) = Self::structure_ui(ui, history, selected) {
                    clicked = Some(id);
                }
                ui.separator();
            }
            ui.checkbox(&mut self.valid_only, "valid only");
            let label = ui.label("search program:");
            ui.add(
                egui::TextEdit::singleline(&mut self.search)
                    .hint_text("text in the program or error")
                    .desired_width(180.0),
            )
            .labelled_by(label.id);
            if !self.search.is_empty() && ui.small_button("clear").clicked() {
                self.search.clear();
            }
            ui.label(
                RichText::new(format!(
                    "{} of {} genomes",
                    self.order.len(),
                    history.genomes.len()
                ))
                .small()
                .weak(),
            );
        });
        let scroll_row = self.scroll_to.take().and_then(|id| {
            self.order
                .iter()
                .position(|&p| history.genomes.get(p as usize).is_some_and(|g| g.id == id))
        });
        let row_height = ui.spacing().interact_size.y;
        // a cell's text is not selectable: a click anywhere on a row selects
        // its genome (selectable text would take the click)
        ui.style_mut().interaction.selectable_labels = false;
        let mut builder = TableBuilder::new(ui)
            .id_salt("archive_table")
            .striped(true)
            .sense(Sense::click())
            .cell_layout(egui::Layout::left_to_right(egui::Align::Center))
            .column(Column::initial(96.0).at_least(50.0))
            .column(Column::initial(64.0).at_least(40.0))
            .column(Column::initial(84.0).at_least(50.0))
            .column(Column::initial(44.0).at_least(36.0))
            .column(Column::initial(54.0).at_least(40.0))
            .column(Column::initial(80.0).at_least(40.0))
            .column(Column::initial(110.0).at_least(40.0).clip(true))
            .column(Column::remainder().at_least(50.0))
            .min_scrolled_height(0.0);
        if let Some(row) = scroll_row {
            builder = builder.scroll_to_row(row, Some(egui::Align::Center));
        }
        let beam: &[GenomeId] = &history.active;
        builder
            .header(row_height + 4.0, |mut header| {
                for col in SortColumn::ALL {
                    header.col(|ui| {
                        let active = self.sort == col;
                        let r = ui.selectable_label(active, RichText::new(col.title()).strong());
                        if active {
                            sort_arrow(ui, self.ascending);
                        }
                        if r.clicked() {
                            if active {
                                self.ascending = !self.ascending;
                            } else {
                                self.sort = col;
                                self.ascending =
                                    !matches!(col, SortColumn::Score | SortColumn::Tokens);
                            }
                        }
                    });
                }
            })
            .body(|body| {
                body.rows(row_height, self.order.len(), |mut row| {
                    let Some(g) = self
                        .order
                        .get(row.index())
                        .and_then(|&p| history.genomes.get(p as usize))
                    else {
                        return;
                    };
                    row.set_selected(selected == Some(g.id));
                    let marker = if beam.contains(&g.id) { "» " } else { "" };
                    let best = if history.best_id == Some(g.id) {
                        " (best)"
                    } else {
                        ""
                    };
                    row.col(|ui| {
                        let text = format!("{marker}#{}{best}", g.id);
                        if ui.selectable_label(selected == Some(g.id), text).clicked() {
                            clicked = Some(g.id);
                        }
                    });
                    row.col(|ui| {
                        ui.label(g.iteration.to_string());
                    });
                    row.col(|ui| {
                        ui.label(
                            g.fitness()
                                .map_or_else(|| "—".to_owned(), |s| format!("{s:.5}")),
                        );
                    });
                    row.col(|ui| {
                        if g.unconfirmed() {
                            ui.colored_label(data::BAD, "unconfirmed").on_hover_text(
                                "valid, but its evaluations disagreed: never a parent",
                            );
                        } else if g.valid {
                            ui.label("yes");
                        } else if let Some(r) = g.rejected() {
                            ui.colored_label(data::REJECTED, "rejected")
                                .on_hover_text(format!(
                                    "not evaluated: a near-duplicate, {}",
                                    r.summary()
                                ));
                        } else {
                            ui.colored_label(data::BAD, "no");
                        }
                    });
                    row.col(|ui| {
                        ui.label(
                            g.parent_id
                                .map_or_else(|| "—".to_owned(), |p| format!("#{p}")),
                        );
                    });
                    row.col(|ui| {
                        ui.label(depth_text(g));
                    });
                    row.col(|ui| {
                        ui.label(g.author().unwrap_or("—"));
                    });
                    row.col(|ui| {
                        ui.label(
                            g.usage.map_or_else(
                                || "—".to_owned(),
                                |u| format_tokens(u.total_tokens()),
                            ),
                        );
                    });
                    if row.response().clicked() {
                        clicked = Some(g.id);
                    }
                });
            });
        clicked
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::events::RunEvent;
    use crate::engine::genome::{FITNESS_KEY, Genome};
    use crate::engine::selection::PolicyStatus;

    fn history() -> RunHistory {
        let mut h = RunHistory::new();
        for i in 0..20u64 {
            let mut g = Genome {
                id: i,
                iteration: i,
                valid: i % 4 != 1,
                content: format!("x = {i}\n").into(),
                ..Genome::default()
            };
            g.scores.insert(FITNESS_KEY.into(), ((i * 7) % 11) as f64);
            h.apply(RunEvent::GenomeAdmitted {
                genome: Arc::new(g),
                best_id: None,
                best_score: None,
                iterations_done: i,
                policy: PolicyStatus::default(),
                active: vec![],
            });
        }
        h
    }

    #[test]
    fn sorts_by_score_descending_and_filters() {
        let h = history();
        let mut t = ArchiveTable {
            sort: SortColumn::Score,
            ascending: false,
            ..ArchiveTable::default()
        };
        t.refresh(&h);
        let ids: Vec<GenomeId> = t.ordered_ids(&h).collect();
        assert_eq!(ids.len(), 20);
        let scores: Vec<f64> = ids
            .iter()
            .map(|id| h.get(*id).map_or(f64::NAN, |g| g.fitness_or_min()))
            .collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        // invalid genomes (no fitness) sort last when descending
        assert!(!h.get(*ids.last().unwrap_or(&0)).is_some_and(|g| g.valid));

        t.valid_only = true;
        t.refresh(&h);
        assert_eq!(t.row_count(), 15);
        t.search = "x = 1".into();
        t.refresh(&h);
        let ids: Vec<GenomeId> = t.ordered_ids(&h).collect();
        // 1 (invalid), 10, 11..19 minus invalid 13, 17
        assert!(ids.iter().all(|id| {
            h.body(*id)
                .is_some_and(|g| g.valid && g.content.text().contains("x = 1"))
        }));
        assert_eq!(ids.len(), 8);
    }

    #[test]
    fn new_genomes_are_picked_up_after_the_refresh_interval_only() {
        let mut h = history();
        let mut t = ArchiveTable::default();
        t.refresh(&h);
        assert_eq!(t.row_count(), 20);
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(Genome {
                id: 20,
                iteration: 20,
                valid: true,
                ..Genome::default()
            }),
            best_id: None,
            best_score: None,
            iterations_done: 20,
            policy: PolicyStatus::default(),
            active: vec![],
        });
        assert!(t.refresh(&h), "a rebuild just happened: the new row waits");
        assert_eq!(t.row_count(), 20);
        t.built_at = None;
        assert!(!t.refresh(&h));
        assert_eq!(t.row_count(), 21);
    }
}
