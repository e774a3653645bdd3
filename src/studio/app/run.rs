//! The live run and recorded runs: start, pause, stop, open a recorded run
//! read-only, read its curve for the comparison plot, resume it.

use std::path::{Path, PathBuf};

use super::App;
use super::consent::Then;
use crate::engine::launch::RunPlan;
use crate::studio::command::UiCommand;
use crate::studio::run::{ArchivedRun, read_archive};
use crate::studio::runs::read_curve;
use crate::studio::state::Tab;

impl App {
    /// Apply a command of the run group.
    pub(super) fn apply_run_command(&mut self, command: UiCommand) {
        match command {
            UiCommand::StartRun => self.start_run(),
            UiCommand::PauseOrResume => {
                if !self.run_view.is_running() {
                    self.info("No run is in progress");
                } else if self.run_view.history().paused {
                    self.resume_live();
                } else if !self.run_view.is_paused() {
                    self.run_view.pause();
                }
            }
            UiCommand::StopRun => {
                if self.run_view.is_running() {
                    self.run_view.stop();
                } else {
                    self.info("No run is in progress");
                }
            }
            UiCommand::RefreshRuns => self.runs.refresh(),
            UiCommand::OpenRun(dir) => self.open_run(dir),
            UiCommand::LoadCurve(dir) => {
                if let Some(ctx) = self.ctx.clone() {
                    self.spawn_job("curve", &ctx, move || {
                        let curve = read_curve(&dir);
                        Box::new(move |app: &mut App| app.runs.set_curve(dir, curve))
                    });
                }
            }
            UiCommand::ResumeRun { dir, iterations } => self.resume_run(&dir, iterations),
            UiCommand::ShowConnect => {
                self.connect_dialog = Some(
                    self.state
                        .recent_remotes
                        .first()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            UiCommand::ConnectRun(address) => self.connect_run(&address),
            UiCommand::ListRemoteRuns(address) => self.list_remote_runs(address),
            UiCommand::ForkRun { dir, genome } => self.fork_run(&dir, genome, false),
            UiCommand::ForkInstead { dir, genome } => self.fork_run(&dir, genome, true),
            UiCommand::AllowLowered => self.allow_lowered(),
            UiCommand::CancelLowered => self.cancel_lowered(),
            other => self.misrouted(&other),
        }
    }

    /// A recorded run was read: show it read-only, unless a run started
    /// meanwhile.
    pub(super) fn opened_run(&mut self, run: Box<ArchivedRun>) {
        if self.run_view.is_running() {
            self.error("A run started meanwhile; the recorded run was not opened");
        } else {
            let dir = run.dir.display().to_string();
            self.run_view.show_archived(*run);
            self.state.tab = Tab::Run;
            self.info(format!("Opened {dir} (read-only)"));
        }
    }

    fn start_run(&mut self) {
        self.refresh_problems();
        if let Some(why) = self.run_blocker() {
            self.error(why);
            return;
        }
        if self.ctx.is_none() {
            return;
        }
        let model = match self.resolve_model() {
            Ok((m, _)) => m,
            Err(e) => {
                self.error(format!("Model: {e}"));
                return;
            }
        };
        let card = match self.doc.card.clone().check(&self.registry) {
            Ok(c) => c,
            Err(problems) => {
                let first = problems
                    .first()
                    .map(|p| format!("{}: {}", p.field, p.message));
                return self.error(format!("Fix the card first: {}", first.unwrap_or_default()));
            }
        };
        // The folder is made once the card's lowered isolation is cleared.
        let plan = match crate::engine::task::Task::load(&self.task_dir)
            .map_err(crate::engine::launch::LaunchError::from)
            .and_then(|task| RunPlan::new(card, task, None, &self.registry))
        {
            Ok(p) => p,
            Err(e) => return self.error(format!("Cannot start: {e}")),
        };
        self.start_cleared(plan, model, Then::New);
    }

    fn open_run(&mut self, dir: PathBuf) {
        if self.run_view.is_running() {
            self.error("A run is in progress; stop it before opening a recorded run");
            return;
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        self.info(format!("Reading {}", dir.display()));
        self.spawn_job("open-run", &ctx, move || {
            let run = read_archive(&dir).map(Box::new);
            Box::new(move |app: &mut App| match run {
                Ok(run) => app.opened_run(run),
                Err(e) => app.error(format!("open run: {e}")),
            })
        });
    }

    /// Start a new run from genome `genome` of the run in `dir` with the
    /// card being edited, recorded under the runs folder (the engine's
    /// [`RunPlan::fork`], as the CLI's `fork`).
    /// `instead`: the live run is stopped for it (its settings could not
    /// change in flight).
    fn fork_run(&mut self, dir: &Path, genome: u64, instead: bool) {
        if self.run_view.is_running() && !instead {
            self.error(
                "A run is in progress; stop it before forking (the studio runs one run at a time)",
            );
            return;
        }
        let card = match self.doc.card.clone().check(&self.registry) {
            Ok(c) => c,
            Err(problems) => {
                let first = problems
                    .first()
                    .map(|p| format!("{}: {}", p.field, p.message));
                return self.error(format!(
                    "Fork: fix the card first: {}",
                    first.unwrap_or_default()
                ));
            }
        };
        let model = match self.resolve_model() {
            Ok((m, _)) => m,
            Err(e) => return self.error(format!("Fork: model: {e}")),
        };
        let plan = match RunPlan::fork(dir, genome, Some(card), &self.registry) {
            Ok(p) => p,
            Err(e) => return self.error(format!("Fork: {e}")),
        };
        self.start_cleared(
            plan,
            model,
            Then::Fork {
                dir: dir.to_path_buf(),
                genome,
            },
        );
    }

    /// Resume the paused live run with the settings of the card on the
    /// Blocks tab (those that can change in flight; see
    /// [`crate::studio::run::RunView::resume_with`]), or say what cannot.
    fn resume_live(&mut self) {
        let card = match self.doc.card.clone().check(&self.registry) {
            Ok(c) => c,
            Err(problems) => {
                let first = problems
                    .first()
                    .map(|p| format!("{}: {}", p.field, p.message));
                return self.error(format!(
                    "Resume: the card on the Blocks tab does not check ({}); fix or undo the change first",
                    first.unwrap_or_default()
                ));
            }
        };
        let model = self.build_run_model(card.card()).map(|(m, _)| m);
        match self.run_view.resume_with(card, model, &self.registry) {
            Ok(changes) if changes.is_empty() => {}
            Ok(changes) => {
                let list: Vec<String> = changes.iter().map(ToString::to_string).collect();
                self.info(format!("Resumed with {}", list.join(", ")));
            }
            Err(fixed) => {
                let list: Vec<String> = fixed.iter().map(ToString::to_string).collect();
                self.error(format!(
                    "Still paused: cannot change in flight: {}",
                    list.join("; ")
                ));
            }
        }
    }

    /// Continue the recorded run in `dir` live up to `iterations` total: the
    /// archive's own card with the budget raised, on its recorded task
    /// folder, appending to the same folder (the engine's [`RunPlan::resume`],
    /// as the CLI's `resume`).
    fn resume_run(&mut self, dir: &Path, iterations: u64) {
        if self.run_view.is_running() {
            self.error("A run is in progress; stop it before resuming another");
            return;
        }
        let plan = match RunPlan::resume(dir, Some(iterations), &self.registry) {
            Ok(p) => p,
            Err(e) => return self.error(format!("resume: {e}")),
        };
        let run = match read_archive(dir) {
            Ok(r) => r,
            Err(e) => return self.error(format!("resume: {e}")),
        };
        let model = match self.build_run_model(plan.card()) {
            Ok((m, _)) => m,
            Err(e) => return self.error(format!("resume: model: {e}")),
        };
        self.start_cleared(
            plan,
            model,
            Then::Resume {
                history: Box::new(run.history),
                dir: dir.to_path_buf(),
                iterations,
            },
        );
    }

    /// Reach runs on servers with `options` instead of the environment's
    /// ssh settings (tests, embedding).
    pub fn set_connect_options(&mut self, options: crate::engine::service::ConnectOptions) {
        self.connect_options = Some(options);
    }

    fn connect_options(&self) -> crate::engine::service::ConnectOptions {
        self.connect_options
            .clone()
            .unwrap_or_else(|| crate::engine::service::ConnectOptions::new("galapagos studio"))
    }

    /// Follow the run at `address` in the run view.
    fn connect_run(&mut self, address: &str) {
        let address = address.trim();
        if self.run_view.is_running() && self.run_view.remote().is_none() {
            self.error("A run is in progress; stop it before following another");
            return;
        }
        let target = match crate::engine::service::Target::parse(address) {
            Ok(t) => t,
            Err(e) => return self.error(e),
        };
        if let crate::engine::service::Target::Local(dir) = &target
            && !dir.join(crate::engine::archive::ARCHIVE_FILE).is_file()
        {
            return self.error(format!("{}: not a run folder", dir.display()));
        }
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        self.connect_dialog = None;
        self.state.remember_remote(address);
        let options = self.connect_options();
        self.run_view.connect_remote(target, options, &ctx);
        self.state.tab = Tab::Run;
        self.info(format!("Following {address}"));
    }

    /// List a server's runs in the Runs panel, in the background.
    fn list_remote_runs(&mut self, address: String) {
        let target = match crate::engine::service::Target::parse(address.trim()) {
            Ok(t) => t,
            Err(e) => return self.runs.set_host_rows(address, Err(e)),
        };
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let mut options = self.connect_options();
        options.read_only = true;
        self.runs.host_listing_started();
        self.spawn_job("list-remote-runs", &ctx, move || {
            let rows = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| {
                    rt.block_on(async {
                        let client = crate::engine::service::Client::connect(&target, &options)
                            .await
                            .map_err(|e| e.to_string())?;
                        match client
                            .request(crate::engine::service::protocol::RequestBody::Runs)
                            .await
                            .map_err(|e| e.to_string())?
                        {
                            crate::engine::service::protocol::Reply::Runs(rows) => Ok(rows),
                            other => Err(format!("an unexpected answer: {other:?}")),
                        }
                    })
                });
            Box::new(move |app: &mut App| {
                if rows.is_ok() {
                    app.state.remember_remote(&address);
                }
                app.runs.set_host_rows(address, rows);
            })
        });
    }

    /// The Connect to a run dialog: an address (recent ones offered),
    /// Connect and Cancel.
    pub(super) fn connect_dialog_ui(&mut self, ctx: &egui::Context) {
        let Some(mut address) = self.connect_dialog.take() else {
            return;
        };
        let mut open = true;
        let mut connect = false;
        let response = egui::Modal::new(egui::Id::unique("connect-to-a-run")).show(ctx, |ui| {
            ui.set_max_width(520.0);
            ui.heading("Connect to a run");
            ui.label(
                "A run on a server, reached through your own ssh (your config, keys and agent): \
                 ssh://[user@]host[:port]/path/to/run. The server needs galapagos on its PATH.",
            );
            ui.add_space(crate::studio::theme::SECTION_GAP);
            let label = ui.label("Run address");
            let field = ui
                .add(
                    egui::TextEdit::singleline(&mut address)
                        .hint_text("ssh://user@host/path/to/run")
                        .desired_width(480.0),
                )
                .labelled_by(label.id);
            // the address takes the keyboard when the dialog opens
            let focused_id = egui::Id::unique("connect-to-a-run-focused");
            if !ui
                .ctx()
                .data(|d| d.get_temp::<bool>(focused_id).unwrap_or(false))
            {
                field.request_focus();
                // the last address, selected: typing replaces it
                if let Some(mut edit) = egui::TextEdit::load_state(ui.ctx(), field.id) {
                    edit.cursor
                        .set_char_range(Some(egui::text::CCursorRange::select_all_str(&address)));
                    edit.store(ui.ctx(), field.id);
                }
                ui.ctx().data_mut(|d| d.insert_temp(focused_id, true));
            }
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                connect = true;
            }
            if !self.state.recent_remotes.is_empty() {
                ui.add_space(crate::studio::theme::SECTION_GAP);
                ui.label("Recent:");
                for recent in &self.state.recent_remotes {
                    if ui.selectable_label(recent == &address, recent).clicked() {
                        address.clone_from(recent);
                    }
                }
            }
            ui.add_space(crate::studio::theme::SECTION_GAP);
            ui.horizontal(|ui| {
                if ui
                    .add_enabled(!address.trim().is_empty(), egui::Button::new("Connect"))
                    .clicked()
                {
                    connect = true;
                }
                if ui.button("Cancel").clicked() {
                    open = false;
                }
            });
        });
        if response.should_close() {
            open = false;
        }
        if connect {
            self.commands.push(UiCommand::ConnectRun(address));
        } else if open {
            self.connect_dialog = Some(address);
            return;
        }
        ctx.data_mut(|d| d.remove::<bool>(egui::Id::unique("connect-to-a-run-focused")));
    }
}
