//! The app's side of the Leaderboard tab: the cards it offers, the one model
//! every run uses, starting a batch from the form (on one task or a suite),
//! and showing a batch folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{App, ResolvedModel};
use crate::engine::leaderboard::{BatchSpec, BatchTasks, Board};
use crate::engine::model::LanguageModel;
use crate::studio::command::UiCommand;
use crate::studio::jobs::Pick;
use crate::studio::leaderboard::{BUILTIN_PREFIX, CardChoice, load_card_ref};
use crate::studio::state::LeaderboardScope;

impl App {
    /// The cards the Leaderboard tab offers: the built-in ones, the library
    /// folder's and the recent ones, each once (a copy of a built-in card
    /// is the built-in). Read again when the library or the recent cards
    /// change.
    pub fn leaderboard_choices(&mut self) -> Vec<CardChoice> {
        if let Some((recent, choices)) = &self.lb_choices
            && *recent == self.state.recent_cards
        {
            return choices.clone();
        }
        let choices = self.list_choices();
        self.lb_choices = Some((self.state.recent_cards.clone(), choices.clone()));
        choices
    }

    fn list_choices(&self) -> Vec<CardChoice> {
        let mut out: Vec<CardChoice> = self
            .library
            .builtin
            .iter()
            .filter(|b| b.ok)
            .map(|b| CardChoice {
                reference: format!("{BUILTIN_PREFIX}{}", b.name),
                name: b.name.to_owned(),
                label: b.name.to_owned(),
                hover: format!("built-in card {}: {}", b.name, b.summary),
            })
            .collect();
        let file_name = |p: &Path| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        };
        for f in self.library.files.iter().filter(|f| f.ok) {
            out.push(CardChoice {
                reference: f.path.display().to_string(),
                name: f.name.clone(),
                label: file_name(&f.path),
                hover: format!("{}: {}", f.path.display(), f.summary),
            });
        }
        for p in &self.state.recent_cards {
            let reference = p.display().to_string();
            let builtin_copy = p
                .file_stem()
                .and_then(|stem| crate::engine::builtin::card(&stem.to_string_lossy()))
                .is_some_and(|b| std::fs::read(p).ok().as_deref() == Some(b.yaml.as_bytes()));
            if builtin_copy || out.iter().any(|c| c.reference == reference) || !p.is_file() {
                continue;
            }
            let name = p
                .file_stem()
                .map_or_else(|| reference.clone(), |s| s.to_string_lossy().into_owned());
            out.push(CardChoice {
                label: format!("{} (recent)", file_name(p)),
                reference,
                name,
                hover: p.display().to_string(),
            });
        }
        out
    }

    /// The model every run of the form's batch uses, and its description:
    /// each card's model as a run of it would use, which must be one and
    /// the same (cached per ticked cards and settings version).
    fn leaderboard_model(&mut self) -> ResolvedModel {
        let key = (
            self.state.leaderboard.cards.clone(),
            self.settings_version,
            self.state.leaderboard.parallel,
        );
        if let Some((k, r)) = &self.lb_model
            && *k == key
        {
            return r.clone();
        }
        let r = self.resolve_leaderboard_model(&key.0, key.2);
        self.lb_model = Some((key, r.clone()));
        r
    }

    /// The one model of the batch's `cards`, run `runs_at_once` at a time:
    /// as many model calls in flight as the runs at once times the largest
    /// `general.parallel` among the cards.
    fn resolve_leaderboard_model(&self, cards: &[String], runs_at_once: usize) -> ResolvedModel {
        let mut loaded = Vec::new();
        for reference in cards {
            loaded.push((reference, load_card_ref(reference, &self.registry)?));
        }
        let widest = loaded
            .iter()
            .map(|(_, c)| c.card().general.parallel as usize)
            .max()
            .unwrap_or(1);
        let in_flight = runs_at_once.max(1) * widest;
        let mut first: Option<(Arc<dyn LanguageModel>, String, String)> = None;
        for (reference, card) in &loaded {
            let (model, desc) = self
                .build_model_for(card.card(), in_flight)
                .map_err(|e| format!("{reference}: {e}"))?;
            match &first {
                None => first = Some((model, desc, (*reference).clone())),
                Some((_, d, r)) if *d != desc => {
                    return Err(format!(
                        "{reference} uses the model {desc}, {r} uses {d}: every card must run with one model \
                         (give the cards the same llm section, or none)"
                    ));
                }
                Some(_) => {}
            }
        }
        match first {
            Some((m, d, _)) => Ok((m, d)),
            // nothing ticked: the model a card without an llm section gets
            None => self.build_run_model(&crate::engine::card::Card::new_default("untitled")),
        }
    }

    /// Start the form's batch.
    fn start_leaderboard(&mut self) {
        if self.ctx.is_none() {
            return;
        }
        let form = self.state.leaderboard.clone();
        if let Some(why) = self.leaderboard.start_blocker(&form) {
            return self.error(format!("Leaderboard: {why}"));
        }
        let mut cards = Vec::new();
        for reference in &form.cards {
            match load_card_ref(reference, &self.registry) {
                Ok(c) => cards.push((reference.clone(), c)),
                Err(e) => return self.error(format!("Leaderboard: {e}")),
            }
        }
        let (model, _) = match self.leaderboard_model() {
            Ok(m) => m,
            Err(e) => return self.error(format!("Leaderboard: model: {e}")),
        };
        let tasks = match form.scope {
            LeaderboardScope::Task => {
                // a folder or a built-in task's name, by the one rule
                let task_dir = if form.task.as_os_str().is_empty() {
                    self.task_dir.clone()
                } else {
                    match crate::engine::builtin::resolve_task_in(&form.task, &self.tasks_root) {
                        Ok(t) => t.dir,
                        Err(e) => return self.error(format!("Leaderboard: task: {e}")),
                    }
                };
                match crate::engine::task::Task::load(&task_dir) {
                    Ok(t) => BatchTasks::One(Box::new(t)),
                    Err(e) => return self.error(format!("Leaderboard: task: {e}")),
                }
            }
            LeaderboardScope::Suite => match crate::engine::builtin::resolve_suite(&form.suite) {
                Ok(s) => BatchTasks::Suite(s),
                Err(e) => return self.error(format!("Leaderboard: suite: {e}")),
            },
        };
        let baseline = cards
            .iter()
            .find(|(r, _)| *r == form.baseline)
            .or_else(|| cards.first())
            .map(|(_, c)| c.card().name.clone())
            .unwrap_or_default();
        let spec = BatchSpec {
            cards: cards.into_iter().map(|(_, c)| c).collect(),
            tasks,
            seeds: (0..form.seeds).collect(),
            iterations: form.iterations,
            parallel_runs: form.parallel.max(1),
            out: form.out.clone(),
            model,
            consents: Vec::new(),
            fraction: form.fraction,
        };
        self.start_batch_cleared(spec, baseline, form.target);
    }

    /// Start a batch whose cards' lowered isolation is cleared.
    pub(super) fn start_batch(&mut self, spec: BatchSpec, baseline: String, target: Option<f64>) {
        let Some(ctx) = self.ctx.clone() else {
            return;
        };
        let runs = spec.cards.len() * spec.seeds.len() * spec.tasks.tasks().len();
        let out = spec.out.clone();
        match self
            .leaderboard
            .start(spec, Arc::clone(&self.registry), baseline, target, &ctx)
        {
            Ok(()) => self.info(format!("Leaderboard: {runs} runs into {}", out.display())),
            Err(e) => self.error(format!("Leaderboard: {e}")),
        }
    }

    /// A batch folder's leaderboard arrived: show it, and fill the form
    /// with what it ran (so Start resumes or extends that batch).
    fn opened_leaderboard(&mut self, dir: PathBuf, board: Board) {
        let form = &mut self.state.leaderboard;
        form.out.clone_from(&dir);
        let (iterations, seeds, target, baseline) = match &board {
            Board::Task(lb) => {
                form.scope = LeaderboardScope::Task;
                form.task.clone_from(&lb.task_dir);
                (
                    lb.iterations,
                    lb.seeds.clone(),
                    lb.target,
                    lb.baseline.clone(),
                )
            }
            Board::Suite(sl) => {
                form.scope = LeaderboardScope::Suite;
                form.suite = sl
                    .suite_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&sl.suite));
                form.fraction = sl.fraction;
                (
                    sl.iterations,
                    sl.seeds.clone(),
                    sl.target,
                    sl.baseline.clone(),
                )
            }
        };
        form.iterations = iterations;
        if seeds.iter().copied().eq(0..seeds.len() as u64) && !seeds.is_empty() {
            form.seeds = seeds.len() as u64;
        }
        form.target = target;
        let choices = self.leaderboard_choices();
        let mut missing = Vec::new();
        let mut ticked = Vec::new();
        for card in board.cards() {
            match choices.iter().find(|ch| ch.name == card) {
                Some(ch) => ticked.push(ch.reference.clone()),
                None => missing.push(card.to_owned()),
            }
        }
        let form = &mut self.state.leaderboard;
        form.baseline = choices
            .iter()
            .find(|ch| ch.name == baseline)
            .map_or_else(String::new, |ch| ch.reference.clone());
        form.cards = ticked;
        self.leaderboard.resync_form();
        self.leaderboard.show_folder(dir.clone(), board);
        if missing.is_empty() {
            self.info(format!("Opened the leaderboard in {}", dir.display()));
        } else {
            self.info(format!(
                "Opened the leaderboard in {}; not in the library: {} (Start needs their files)",
                dir.display(),
                missing.join(", ")
            ));
        }
    }

    /// Apply a command of the leaderboard group.
    pub(super) fn apply_leaderboard_command(&mut self, command: UiCommand) {
        match command {
            UiCommand::StartLeaderboard => self.start_leaderboard(),
            UiCommand::StopLeaderboard => self.leaderboard.stop(),
            UiCommand::OpenLeaderboard(dir) => {
                if self.leaderboard.is_running() {
                    self.error("A leaderboard batch is running; stop it before opening another");
                } else if let Some(ctx) = self.ctx.clone() {
                    self.spawn_job("open-leaderboard", &ctx, move || {
                        let leaderboard =
                            crate::engine::leaderboard::read_board(&dir).map(|(_, b)| b);
                        Box::new(move |app: &mut App| app.leaderboard_read(dir, leaderboard))
                    });
                }
            }
            UiCommand::BrowseLeaderboard => {
                if let Some(ctx) = self.ctx.clone() {
                    let start = self.state.leaderboard.out.parent().map(Path::to_path_buf);
                    self.pick_path(Pick::LeaderboardFolder, start, &ctx);
                }
            }
            other => self.misrouted(&other),
        }
    }

    /// A batch folder's leaderboard was read (or could not be).
    pub(super) fn leaderboard_read(&mut self, dir: PathBuf, leaderboard: Result<Board, String>) {
        match leaderboard {
            Ok(board) => self.opened_leaderboard(dir, board),
            Err(e) => self.error(format!("open leaderboard: {e}")),
        }
    }

    /// What the Leaderboard tab is told this frame: the cards it offers
    /// and the model its runs would use (or why there is none).
    pub(super) fn leaderboard_frame(&mut self) -> (Vec<CardChoice>, Result<String, String>) {
        let choices = self.leaderboard_choices();
        let model = self.leaderboard_model().map(|(_, d)| d);
        (choices, model)
    }
}
