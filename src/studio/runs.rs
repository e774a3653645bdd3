//! The Runs panel: the recorded runs in a folder (card, task, best score,
//! iterations, status, start time), opening one read-only in the run view,
//! overlaying the best-so-far curves of several, and resuming one. Forks are
//! listed as a tree: under the run they came from, with the genome named.
//!
//! The panel only keeps its own view state (folder text, list, ticks,
//! curves); everything that touches the app (reading a run into the run
//! view, resuming) goes through [`UiCommand`]s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use egui::{Color32, RichText, Ui};

use crate::engine::archive::{Archive, RunListing, list_runs};
use crate::engine::service::protocol::RunRow;
use crate::studio::command::{Commands, UiCommand};
use crate::studio::compare::RunCompare;
use crate::studio::compare::format_started;
pub use crate::studio::compare::{Curve, RunDigest, read_curve};

/// The runs in tree order: each run followed by the runs forked from it
/// (depth first, in list order), as (index into `listings`, depth). A fork
/// whose parent is not listed is a root.
pub fn fork_tree(listings: &[RunListing]) -> Vec<(usize, usize)> {
    let canonical: Vec<PathBuf> = listings
        .iter()
        .map(|l| std::fs::canonicalize(&l.dir).unwrap_or_else(|_| l.dir.clone()))
        .collect();
    let parent_of = |l: &RunListing| -> Option<usize> {
        let origin = l.forked_from.as_ref()?;
        canonical.iter().position(|c| c == &origin.run)
    };
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); listings.len()];
    let mut roots = Vec::new();
    for (i, l) in listings.iter().enumerate() {
        match parent_of(l).filter(|p| *p != i) {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let mut out = Vec::with_capacity(listings.len());
    let mut seen = vec![false; listings.len()];
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        out.push((i, depth));
        stack.extend(children[i].iter().rev().map(|c| (*c, depth + 1)));
    }
    // Runs in a loop of forks (folders copied over each other) are listed
    // flat at the end rather than dropped.
    out.extend((0..listings.len()).filter(|i| !seen[*i]).map(|i| (i, 0)));
    out
}

/// How far a fork's row is indented under its parent's, per level.
pub const TREE_INDENT: f32 = 16.0;

/// The run column's text of a run `depth` forks deep, with the genome it
/// was forked from (the row is indented by [`TREE_INDENT`] per level).
pub fn tree_label(name: &str, depth: usize, listing: &RunListing) -> String {
    match (&listing.forked_from, depth) {
        (Some(origin), 0) => format!(
            "{name} · fork of #{} of {}",
            origin.genome,
            origin.run.file_name().map_or_else(
                || origin.run.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            )
        ),
        (Some(origin), _) => format!("- {name} · from #{}", origin.genome),
        (None, _) => name.to_owned(),
    }
}

/// What the app tells the panel each frame.
pub struct RunsCtx<'a> {
    /// Why a run cannot be opened or resumed now (a run is active), if so.
    pub busy: Option<&'a str>,
    /// The folder the active run records into.
    pub live_dir: Option<&'a Path>,
    /// Error colour.
    pub error: Color32,
}

/// Facts about the selected run needed to resume it.
#[derive(Clone, Debug, PartialEq)]
struct Selected {
    dir: PathBuf,
    /// Iteration budget recorded in the archive.
    budget: u64,
    /// Iterations done according to the checkpoint (`None`: no checkpoint
    /// although genomes were recorded; `Some(0)`: nothing recorded yet).
    done: Option<u64>,
    /// Why the archive cannot be read.
    error: Option<String>,
}

impl Selected {
    fn read(dir: &Path) -> Self {
        let read = || -> Result<(u64, Option<u64>), String> {
            let a = Archive::open(dir).map_err(|e| e.to_string())?;
            let meta = a.meta().map_err(|e| e.to_string())?;
            let ck = a.checkpoint().map_err(|e| e.to_string())?;
            let done = match ck {
                Some(c) => Some(c.iterations_done),
                // Stopped before the initial program was scored: resuming
                // starts over.
                None if a.genomes().map_err(|e| e.to_string())?.is_empty() => Some(0),
                None => None,
            };
            Ok((meta.max_iterations, done))
        };
        match read() {
            Ok((budget, done)) => Self {
                dir: dir.to_path_buf(),
                budget,
                done,
                error: None,
            },
            Err(e) => Self {
                dir: dir.to_path_buf(),
                budget: 0,
                done: None,
                error: Some(e),
            },
        }
    }
}

/// The Runs panel's state (not persisted; the folder comes from the studio's
/// runs folder setting).
#[derive(Debug, Default)]
pub struct RunsPanel {
    /// The folder field's text.
    pub folder: String,
    listings: Vec<RunListing>,
    /// The listings in tree order (forks under their parent), with depth.
    tree: Vec<(usize, usize)>,
    /// The folder last listed.
    scanned: Option<PathBuf>,
    /// Runs ticked for comparison, in tick order.
    checked: Vec<PathBuf>,
    /// The ticked runs' curves, colours and card diff.
    compare: RunCompare,
    selected: Option<Selected>,
    /// The Resume budget field's text.
    pub iterations: String,
    /// The server field's text (`ssh://[user@]host[:port]/folder`).
    pub host: String,
    /// The server's runs as last listed (and the address), or why not.
    host_rows: Option<(String, Result<Vec<RunRow>, String>)>,
    /// A listing is on its way.
    host_listing: bool,
}

impl RunsPanel {
    /// A panel listing `folder` (when first shown).
    pub fn new(folder: &Path) -> Self {
        Self {
            folder: folder.display().to_string(),
            ..Self::default()
        }
    }

    /// A server's runs were listed (or could not be).
    pub fn set_host_rows(&mut self, address: String, rows: Result<Vec<RunRow>, String>) {
        self.host_listing = false;
        self.host_rows = Some((address, rows));
    }

    /// A server's listing was asked for.
    pub fn host_listing_started(&mut self) {
        self.host_listing = true;
    }

    /// The server's runs as last listed.
    pub fn host_rows(&self) -> Option<&Result<Vec<RunRow>, String>> {
        self.host_rows.as_ref().map(|(_, r)| r)
    }

    /// The runs on a server: its address, List, and a row per run with
    /// Connect (the run view follows it).
    fn host_ui(&mut self, ui: &mut Ui, ctx: &RunsCtx<'_>, commands: &mut Commands) {
        ui.horizontal(|ui| {
            let label = ui.label("Server");
            ui.add(
                egui::TextEdit::singleline(&mut self.host)
                    .hint_text("ssh://[user@]host[:port]/folder")
                    .desired_width(360.0),
            )
            .labelled_by(label.id);
            if ui
                .add_enabled(
                    !self.host.trim().is_empty() && !self.host_listing,
                    egui::Button::new("List server runs"),
                )
                .on_hover_text("List the runs in that folder on the server, through your ssh")
                .clicked()
            {
                commands.push(UiCommand::ListRemoteRuns(self.host.trim().to_owned()));
            }
            if self.host_listing {
                ui.spinner();
            }
        });
        let Some((address, rows)) = &self.host_rows else {
            return;
        };
        let rows = match rows {
            Ok(rows) => rows,
            Err(why) => {
                ui.colored_label(ctx.error, why);
                return;
            }
        };
        if rows.is_empty() {
            ui.weak(format!("no runs in {address}"));
            return;
        }
        let base = address.trim_end_matches('/').to_owned();
        egui::Grid::new("server-runs")
            .striped(true)
            .num_columns(7)
            .show(ui, |ui| {
                for h in ["State", "Iterations", "Genomes", "Best", "Cost", "Run", ""] {
                    ui.strong(h);
                }
                ui.end_row();
                for r in rows {
                    ui.label(&r.state);
                    ui.label(format!("{}/{}", r.iterations, r.max_iterations));
                    ui.label(r.genomes.to_string());
                    ui.label(
                        r.best_score
                            .map_or_else(|| "-".to_owned(), |b| format!("{b:.6}")),
                    );
                    ui.label(
                        r.cost_usd
                            .map_or_else(|| "-".to_owned(), |c| format!("${c:.4}")),
                    );
                    let name = Path::new(&r.dir)
                        .file_name()
                        .map_or_else(|| r.dir.clone(), |n| n.to_string_lossy().into_owned());
                    ui.label(&name);
                    // the run's own address: the listed folder's server, its path
                    let run_address = match crate::engine::service::Target::parse(&base) {
                        Ok(crate::engine::service::Target::Ssh(t)) => {
                            t.with_path(r.dir.clone()).to_string()
                        }
                        _ => r.dir.clone(),
                    };
                    if ui
                        .button("Connect")
                        .on_hover_text(format!("follow {run_address} in the Run tab"))
                        .clicked()
                    {
                        commands.push(UiCommand::ConnectRun(run_address));
                    }
                    ui.end_row();
                }
            });
    }

    /// List the runs in the folder field's folder.
    pub fn refresh(&mut self) {
        let folder = PathBuf::from(self.folder.trim());
        self.listings = list_runs(&folder);
        self.tree = fork_tree(&self.listings);
        let present: BTreeSet<&Path> = self.listings.iter().map(|l| l.dir.as_path()).collect();
        self.checked.retain(|d| present.contains(d.as_path()));
        if self
            .selected
            .as_ref()
            .is_some_and(|s| !present.contains(s.dir.as_path()))
        {
            self.selected = None;
        }
        // Runs may have grown since: their curves stay on screen and are
        // read again.
        self.compare.refreshed(&present);
        self.scanned = Some(folder);
    }

    /// List the folder unless it was listed already.
    pub fn ensure_scanned(&mut self) {
        if self.scanned.as_deref() != Some(Path::new(self.folder.trim())) {
            self.refresh();
        }
    }

    /// The runs listed.
    pub fn listings(&self) -> &[RunListing] {
        &self.listings
    }

    /// The runs ticked for comparison.
    pub fn checked(&self) -> &[PathBuf] {
        &self.checked
    }

    /// Tick or untick a run for comparison.
    pub fn set_checked(&mut self, dir: &Path, on: bool) {
        if on {
            if !self.checked.iter().any(|d| d == dir) {
                self.compare.ticked(dir, &self.checked);
                self.checked.push(dir.to_path_buf());
            }
        } else {
            self.checked.retain(|d| d != dir);
        }
    }

    /// Select a run (for Open and Resume); reads its budget and checkpoint.
    pub fn select(&mut self, dir: &Path) {
        let sel = Selected::read(dir);
        let target = sel.done.map_or(sel.budget, |d| sel.budget.max(d + 1));
        self.iterations = target.to_string();
        self.selected = Some(sel);
    }

    /// The selected run folder.
    pub fn selected(&self) -> Option<&Path> {
        self.selected.as_ref().map(|s| s.dir.as_path())
    }

    /// A curve read in the background arrived.
    pub fn set_curve(&mut self, dir: PathBuf, curve: Result<Curve, String>) {
        self.compare.set_curve(dir, curve);
    }

    /// The curves of the ticked runs that are loaded, in tick order.
    pub fn compared(&self) -> Vec<&Curve> {
        self.compare
            .loaded(&self.checked)
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }

    /// The colour of a run's curve (kept for as long as the panel lives).
    pub fn color_of(&self, dir: &Path) -> Color32 {
        self.compare.color_of(dir)
    }

    /// The legend text of each compared run: its curve's label, with the
    /// folder name added where two runs would read the same.
    pub fn legend_labels(&self) -> BTreeMap<PathBuf, String> {
        let loaded = self.compare.loaded(&self.checked);
        loaded
            .iter()
            .map(|(dir, c)| {
                let clash = loaded.iter().any(|(d, o)| d != dir && o.label == c.label);
                let label = if clash {
                    let name = dir.file_name().map_or_else(
                        || dir.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    format!("{} ({name})", c.label)
                } else {
                    c.label.clone()
                };
                ((*dir).clone(), label)
            })
            .collect()
    }

    /// Why the selected run cannot be resumed now, if so.
    pub fn resume_blocker(&self, ctx: &RunsCtx<'_>) -> Option<String> {
        let Some(sel) = &self.selected else {
            return Some("Select a run first".to_owned());
        };
        if let Some(busy) = ctx.busy {
            return Some(busy.to_owned());
        }
        if let Some(e) = &sel.error {
            return Some(format!("The archive cannot be read: {e}"));
        }
        let Some(done) = sel.done else {
            return Some("The run has no checkpoint to resume from".to_owned());
        };
        match self.iterations.trim().parse::<u64>() {
            Ok(n) => crate::engine::launch::check_resume_budget(done, n)
                .err()
                .map(|e| e.to_string()),
            Err(_) => Some("Iterations must be a whole number".to_owned()),
        }
    }

    /// Draw the panel.
    pub fn ui(&mut self, ui: &mut Ui, ctx: &RunsCtx<'_>, commands: &mut Commands) {
        self.ensure_scanned();
        self.compare.request(&self.checked, commands);
        ui.horizontal(|ui| {
            let label = ui.label("Runs folder");
            ui.add(
                egui::TextEdit::singleline(&mut self.folder)
                    .hint_text("folder holding run folders")
                    .desired_width(360.0),
            )
            .labelled_by(label.id);
            if ui
                .button("Refresh runs")
                .on_hover_text("List the runs in this folder again")
                .clicked()
            {
                commands.push(UiCommand::RefreshRuns);
            }
            ui.weak(format!(
                "{} run{}",
                self.listings.len(),
                if self.listings.len() == 1 { "" } else { "s" }
            ));
        });
        ui.add_space(6.0);
        self.host_ui(ui, ctx, commands);
        ui.add_space(6.0);
        if self.listings.is_empty() {
            ui.label(
                RichText::new(
                    "No recorded runs in this folder. Runs started in the studio or with \
                     `galapagos run` are recorded under the runs folder.",
                )
                .weak(),
            );
            return;
        }
        // the tab scrolls as a whole: in a short window the curves and the
        // card diff keep a usable height below the table and are scrolled to
        let shown = ui.available_height();
        let table_height = (shown * 0.45).clamp(120.0, 360.0);
        egui::ScrollArea::vertical()
            .id_salt("runs-tab")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .id_salt("runs-table")
                    .max_height(table_height)
                    .show(ui, |ui| self.table_ui(ui, ctx, commands));
                ui.separator();
                self.selected_ui(ui, ctx, commands);
                ui.separator();
                self.compare_ui(ui, ctx, shown);
            });
    }

    fn table_ui(&mut self, ui: &mut Ui, ctx: &RunsCtx<'_>, commands: &mut Commands) {
        let mut toggles: Vec<(PathBuf, bool)> = Vec::new();
        let mut select: Option<PathBuf> = None;
        egui::Grid::new("runs-grid")
            .num_columns(8)
            .striped(true)
            .spacing([14.0, 6.0])
            .show(ui, |ui| {
                for h in [
                    "compare",
                    "run",
                    "card",
                    "task",
                    "best",
                    "iterations",
                    "status",
                    "started",
                ] {
                    ui.label(RichText::new(h).strong());
                }
                ui.end_row();
                for &(index, depth) in &self.tree {
                    let Some(l) = self.listings.get(index) else {
                        continue;
                    };
                    let name = l.dir.file_name().map_or_else(
                        || l.dir.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    let unreadable = l.status.starts_with("unreadable");
                    let mut on = self.checked.iter().any(|d| d == &l.dir);
                    let was = on;
                    let accessible = format!("compare {name}");
                    let r = ui
                        .add_enabled(!unreadable, egui::Checkbox::without_text(&mut on))
                        .on_hover_text("Overlay this run's best-so-far curve");
                    r.widget_info(|| {
                        egui::WidgetInfo::selected(
                            egui::Role::CheckBox,
                            !unreadable,
                            on,
                            &accessible,
                        )
                    });
                    if on != was {
                        toggles.push((l.dir.clone(), on));
                    }
                    let is_sel = self.selected.as_ref().is_some_and(|s| s.dir == l.dir);
                    let live = ctx.live_dir == Some(l.dir.as_path());
                    let tree = tree_label(&name, depth, l);
                    let text = if live { format!("{tree} (live)") } else { tree };
                    let hover = match &l.forked_from {
                        Some(origin) => format!("{}\nforked from {origin}", l.dir.display()),
                        None => l.dir.display().to_string(),
                    };
                    ui.horizontal(|ui| {
                        ui.add_space(TREE_INDENT * depth as f32);
                        if ui
                            .selectable_label(is_sel, text)
                            .on_hover_text(hover)
                            .clicked()
                        {
                            select = Some(l.dir.clone());
                        }
                    });
                    ui.label(&l.card);
                    ui.label(&l.task);
                    ui.label(l.best_score.map_or("-".to_owned(), |b| format!("{b:.5}")));
                    ui.label(l.iterations.to_string());
                    if unreadable {
                        ui.add(
                            egui::Label::new(RichText::new(&l.status).color(ctx.error))
                                .truncate()
                                .show_tooltip_when_elided(false),
                        )
                        .on_hover_text(&l.status);
                    } else {
                        ui.label(&l.status);
                    }
                    ui.label(format_started(l.started_unix));
                    ui.end_row();
                }
            });
        for (dir, on) in toggles {
            self.set_checked(&dir, on);
        }
        self.compare.request(&self.checked, commands);
        if let Some(dir) = select {
            self.select(&dir);
        }
    }

    fn selected_ui(&mut self, ui: &mut Ui, ctx: &RunsCtx<'_>, commands: &mut Commands) {
        let Some(sel) = self.selected.clone() else {
            ui.label(RichText::new("Select a run by its name to open or resume it.").weak());
            return;
        };
        ui.horizontal(|ui| {
            ui.label(RichText::new("Selected").strong());
            ui.label(sel.dir.display().to_string());
            if let Some(done) = sel.done {
                ui.weak(format!("{done} of {} iterations done", sel.budget));
            }
        });
        if let Some(origin) = self
            .listings
            .iter()
            .find(|l| l.dir == sel.dir)
            .and_then(|l| l.forked_from.as_ref())
        {
            ui.add(egui::Label::new(RichText::new(format!("Forked from {origin}")).weak()).wrap());
        }
        if let Some(e) = &sel.error {
            ui.add(egui::Label::new(RichText::new(e).color(ctx.error)).wrap());
        }
        ui.horizontal(|ui| {
            let open_blocker = ctx.busy.map(str::to_owned).or_else(|| {
                sel.error
                    .as_ref()
                    .map(|e| format!("The archive cannot be read: {e}"))
            });
            let open = ui.add_enabled(open_blocker.is_none(), egui::Button::new("Open read-only"));
            let open = match &open_blocker {
                Some(why) => open.on_disabled_hover_text(why),
                None => open.on_hover_text("Show this run in the Run tab (plot, table, inspector)"),
            };
            if open.clicked() {
                commands.push(UiCommand::OpenRun(sel.dir.clone()));
            }
            ui.separator();
            let label = ui.label("Iterations");
            ui.add(egui::TextEdit::singleline(&mut self.iterations).desired_width(80.0))
                .labelled_by(label.id)
                .on_hover_text("The budget to reach (the run's total, not the number to add)");
            let blocker = self.resume_blocker(ctx);
            let resume = ui.add_enabled(blocker.is_none(), egui::Button::new("Resume"));
            let resume = match &blocker {
                Some(why) => resume.on_disabled_hover_text(why),
                None => resume.on_hover_text("Continue this run live, appending to its folder"),
            };
            if resume.clicked()
                && let Ok(iterations) = self.iterations.trim().parse::<u64>()
            {
                commands.push(UiCommand::ResumeRun {
                    dir: sel.dir.clone(),
                    iterations,
                });
            }
            if let Some(why) = &blocker {
                ui.label(RichText::new(why).weak().italics());
            }
        });
    }

    /// The compare section; `shown` is the height the tab has on screen.
    fn compare_ui(&mut self, ui: &mut Ui, ctx: &RunsCtx<'_>, shown: f32) {
        ui.label(RichText::new("Compare").strong());
        if self.checked.len() < 2 {
            ui.label(
                RichText::new("Tick two or more runs to compare their curves, results and cards.")
                    .weak(),
            );
            return;
        }
        let labels = self.legend_labels();
        self.compare
            .ui(ui, &self.checked, &labels, ctx.error, shown);
    }
}

/// The Runs tab.
impl crate::studio::panel::TabPanel for RunsPanel {
    fn ui(
        &mut self,
        ui: &mut Ui,
        ctx: &mut crate::studio::panel::TabCtx<'_>,
        commands: &mut Commands,
    ) {
        let rctx = RunsCtx {
            busy: ctx
                .card
                .running
                .then_some("A run is in progress; stop it first"),
            live_dir: ctx.live_run_dir,
            error: ctx.card.palette.error,
        };
        RunsPanel::ui(self, ui, &rctx, commands);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studio::compare::run_label;

    #[test]
    fn start_times_and_labels() {
        assert_eq!(format_started(0), "");
        assert_eq!(format_started(1_795_000_000), "2026-11-18 11:06:40");
        assert_eq!(
            run_label("best_of_n", "quad", 1_795_000_000),
            "best_of_n · quad · 2026-11-18 11:06:40"
        );
    }

    #[test]
    fn ticks_keep_order_and_missing_folders_list_nothing() {
        let mut p = RunsPanel {
            folder: "/nonexistent/galapagos-runs".to_owned(),
            ..RunsPanel::default()
        };
        p.refresh();
        assert!(p.listings().is_empty());
        p.set_checked(Path::new("b"), true);
        p.set_checked(Path::new("a"), true);
        p.set_checked(Path::new("b"), true);
        assert_eq!(p.checked(), [PathBuf::from("b"), PathBuf::from("a")]);
        p.set_checked(Path::new("b"), false);
        assert_eq!(p.checked(), [PathBuf::from("a")]);
        let ctx = RunsCtx {
            busy: None,
            live_dir: None,
            error: Color32::RED,
        };
        assert_eq!(
            p.resume_blocker(&ctx).as_deref(),
            Some("Select a run first")
        );
        p.select(Path::new("/nonexistent/galapagos-runs/x"));
        assert!(
            p.resume_blocker(&ctx)
                .is_some_and(|w| w.contains("cannot be read")),
            "{:?}",
            p.resume_blocker(&ctx)
        );
    }
}
