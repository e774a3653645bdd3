//! Studio state, split in two: [`State`] is what persists between sessions
//! (theme, recent cards, panel layout, folders); [`Document`] is the card being
//! edited with its undo/redo history, which never persists.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::engine::card::Card;
use crate::studio::theme::ThemeChoice;

/// How many recent cards are remembered.
pub const MAX_RECENT: usize = 10;
/// How many undo steps are kept.
pub const MAX_UNDO: usize = 200;
/// Edits of the same field closer together than this merge into one undo step
/// (typing, dragging a value).
pub const COALESCE_WINDOW: Duration = Duration::from_millis(1200);

/// Which side panels are shown and how wide they are (persisted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PanelLayout {
    /// Library and palette panel on the left.
    pub show_left: bool,
    /// Inspector panel on the right.
    pub show_inspector: bool,
    /// Width of the left panel in points.
    pub left_width: f32,
    /// Width of the inspector in points.
    pub inspector_width: f32,
    /// The Run tab's panes.
    pub run: RunPanes,
    /// The block canvas's share of the Blocks tab's height (the general
    /// settings take the rest), once its divider was dragged; until then
    /// the canvas takes 70% of the height, at most 480 points.
    pub canvas_share: Option<f32>,
}

/// How the Run tab divides its room (persisted): the share of its height
/// the search views (plot, tree, islands, beam...) take above the table, and
/// the share of its width the genome inspector takes beside it. Both follow
/// their dividers when dragged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunPanes {
    /// The search views' share of the Run tab's height.
    pub plot_share: f32,
    /// The genome inspector's share of the width under the search views.
    pub inspector_share: f32,
}

impl Default for RunPanes {
    fn default() -> Self {
        Self {
            plot_share: 0.5,
            inspector_share: 0.42,
        }
    }
}

impl Default for PanelLayout {
    fn default() -> Self {
        Self {
            show_left: true,
            show_inspector: true,
            left_width: 240.0,
            inspector_width: 300.0,
            run: RunPanes::default(),
            canvas_share: None,
        }
    }
}

/// The tab shown in the central area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tab {
    /// The six-block editor with the general settings.
    #[default]
    Editor,
    /// The card's metadata (name, summary, hub texts).
    Details,
    /// The card as YAML (read-only preview).
    Yaml,
    /// The live run view.
    Run,
    /// Recorded runs: reopen, compare, resume.
    Runs,
    /// Several cards on one task, seeds and budget: a leaderboard.
    Leaderboard,
}

impl Tab {
    /// Every tab, in display order: the one list that the tab strip, the View menu, the shortcuts and the
    /// per-frame work follow (`tests` checks that it holds every variant, in [`Tab::position`] order).
    pub const ALL: [Self; 6] = [
        Self::Editor,
        Self::Details,
        Self::Yaml,
        Self::Run,
        Self::Runs,
        Self::Leaderboard,
    ];

    /// Where the tab stands in [`Tab::ALL`]; the match makes a new variant name its place.
    pub const fn position(self) -> usize {
        match self {
            Self::Editor => 0,
            Self::Details => 1,
            Self::Yaml => 2,
            Self::Run => 3,
            Self::Runs => 4,
            Self::Leaderboard => 5,
        }
    }

    /// Tab label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Editor => "Blocks",
            Self::Details => "Details",
            Self::Yaml => "YAML",
            Self::Run => "Run",
            Self::Runs => "Runs",
            Self::Leaderboard => "Leaderboard",
        }
    }

    /// The key that shows the tab with Ctrl (Cmd): its position, from 1.
    pub fn key(self) -> egui::Key {
        const KEYS: [egui::Key; 9] = [
            egui::Key::Num1,
            egui::Key::Num2,
            egui::Key::Num3,
            egui::Key::Num4,
            egui::Key::Num5,
            egui::Key::Num6,
            egui::Key::Num7,
            egui::Key::Num8,
            egui::Key::Num9,
        ];
        KEYS[self.position() % KEYS.len()]
    }

    /// Whether the tab shows the card being edited (the library and palette stand beside it).
    pub fn shows_card(self) -> bool {
        match self {
            Self::Editor | Self::Details | Self::Yaml => true,
            Self::Run | Self::Runs | Self::Leaderboard => false,
        }
    }
}

/// Everything the studio remembers between sessions. Never holds the card
/// itself, endpoints or keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Dark or light.
    pub theme: ThemeChoice,
    /// Recently opened or saved cards, newest first.
    pub recent_cards: Vec<PathBuf>,
    /// Side panels.
    pub layout: PanelLayout,
    /// Where runs are recorded (`<runs>/<card>-<task>-<time>`); by default
    /// `runs/` in the per-user data dir.
    pub runs_folder: PathBuf,
    /// The task folder used last.
    pub last_task_folder: Option<PathBuf>,
    /// The central tab shown last.
    pub tab: Tab,
    /// The Leaderboard tab's form.
    pub leaderboard: LeaderboardForm,
    /// Runs on servers connected to lately (`ssh://…` addresses), newest
    /// first.
    pub recent_remotes: Vec<String>,
}

/// What a leaderboard batch runs every card on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaderboardScope {
    /// One task folder.
    #[default]
    Task,
    /// Every task of a suite.
    Suite,
}

/// What the Leaderboard tab runs (persisted; the batch itself is not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaderboardForm {
    /// The cards compared: a card file's path, or `built-in:NAME`.
    pub cards: Vec<String>,
    /// One task, or a suite of tasks.
    pub scope: LeaderboardScope,
    /// The task folder every card runs on (empty: the studio's task folder).
    pub task: PathBuf,
    /// The suite every card runs on: a folder of task folders, or a built-in
    /// suite's name (`math`).
    pub suite: PathBuf,
    /// Seeds per card: 0, 1, ..., K-1.
    pub seeds: u64,
    /// Iterations of every run.
    pub iterations: u64,
    /// Runs at once.
    pub parallel: usize,
    /// The card the others are compared with (one of `cards`; empty: the
    /// first).
    pub baseline: String,
    /// A score to reach, if any.
    pub target: Option<f64>,
    /// The batch folder (`runs/` and the leaderboard files).
    pub out: PathBuf,
    /// The fraction of a task's best known value the table says whether,
    /// and at what spend, each run reached.
    pub fraction: f64,
}

impl Default for LeaderboardForm {
    fn default() -> Self {
        Self {
            cards: Vec::new(),
            scope: LeaderboardScope::Task,
            task: PathBuf::new(),
            suite: PathBuf::from("math"),
            seeds: 5,
            iterations: 30,
            parallel: 1,
            baseline: String::new(),
            target: None,
            out: crate::engine::builtin::data_dir().join("leaderboard"),
            fraction: crate::engine::leaderboard::value::DEFAULT_FRACTION,
        }
    }
}

impl Default for State {
    fn default() -> Self {
        Self {
            theme: ThemeChoice::default(),
            recent_cards: Vec::new(),
            layout: PanelLayout::default(),
            // per user, so a studio opened anywhere records its runs in one place
            runs_folder: crate::engine::builtin::data_dir().join("runs"),
            last_task_folder: None,
            tab: Tab::default(),
            leaderboard: LeaderboardForm::default(),
            recent_remotes: Vec::new(),
        }
    }
}

impl State {
    /// Put a remote run's address at the front of the recent list
    /// (deduplicated, bounded).
    pub fn remember_remote(&mut self, address: &str) {
        self.recent_remotes.retain(|a| a != address);
        self.recent_remotes.insert(0, address.to_owned());
        self.recent_remotes.truncate(MAX_RECENT);
    }

    /// Put `path` at the front of the recent list (deduplicated, bounded).
    pub fn remember_card(&mut self, path: &Path) {
        self.recent_cards.retain(|p| p != path);
        self.recent_cards.insert(0, path.to_path_buf());
        self.recent_cards.truncate(MAX_RECENT);
    }
}

/// One undo step: the card before an edit, and what the edit was.
#[derive(Clone, Debug)]
struct Step {
    card: Card,
    /// Field the edit touched; consecutive edits of the same field merge.
    key: String,
    at: Instant,
}

/// The card being edited, its file and its history.
#[derive(Clone, Debug)]
pub struct Document {
    /// The card as edited (may be invalid while a person types).
    pub card: Card,
    /// The file it was loaded from or last saved to.
    pub path: Option<PathBuf>,
    /// True when the card differs from the file.
    pub dirty: bool,
    /// Bumped on every change (cache key for validation).
    pub revision: u64,
    /// The card as last opened or saved (`None`: never saved, e.g. an
    /// import): undoing back to it clears `dirty`.
    saved: Option<Card>,
    undo: Vec<Step>,
    redo: Vec<Card>,
}

impl Document {
    /// A document for `card`, clean, with an empty history.
    pub fn new(card: Card, path: Option<PathBuf>) -> Self {
        Self {
            saved: Some(card.clone()),
            card,
            path,
            dirty: false,
            revision: 0,
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }

    /// A document for a card that was never saved (an import): unsaved from
    /// the start.
    pub fn unsaved(card: Card) -> Self {
        Self {
            saved: None,
            dirty: true,
            ..Self::new(card, None)
        }
    }

    /// Replace the card by an edited version, recording an undo step. Edits
    /// of the same `key` within [`COALESCE_WINDOW`] merge into one step. An
    /// edit that changes nothing records nothing.
    pub fn edit(&mut self, key: &str, edited: Card) {
        if edited == self.card {
            return;
        }
        let now = Instant::now();
        let merge = self
            .undo
            .last()
            .is_some_and(|s| s.key == key && now.duration_since(s.at) < COALESCE_WINDOW);
        if merge {
            if let Some(last) = self.undo.last_mut() {
                last.at = now;
            }
        } else {
            let previous = std::mem::replace(&mut self.card, edited.clone());
            self.undo.push(Step {
                card: previous,
                key: key.to_owned(),
                at: now,
            });
            if self.undo.len() > MAX_UNDO {
                self.undo.remove(0);
            }
        }
        self.card = edited;
        self.redo.clear();
        self.touch();
    }

    /// Step back one edit; false when there is nothing to undo.
    pub fn undo(&mut self) -> bool {
        let Some(step) = self.undo.pop() else {
            return false;
        };
        let current = std::mem::replace(&mut self.card, step.card);
        self.redo.push(current);
        self.touch();
        true
    }

    /// Re-apply an undone edit; false when there is nothing to redo.
    pub fn redo(&mut self) -> bool {
        let Some(card) = self.redo.pop() else {
            return false;
        };
        let current = std::mem::replace(&mut self.card, card);
        self.undo.push(Step {
            card: current,
            key: String::new(),
            at: Instant::now(),
        });
        self.touch();
        true
    }

    /// Whether undo would do something.
    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    /// Whether redo would do something.
    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Mark the document saved at `path`.
    pub fn mark_saved(&mut self, path: PathBuf) {
        self.path = Some(path);
        self.dirty = false;
        self.saved = Some(self.card.clone());
        // a new edit after saving never merges into a pre-save step
        if let Some(last) = self.undo.last_mut() {
            last.key.clear();
        }
    }

    /// File name (or "untitled") with `*` when unsaved.
    pub fn title(&self) -> String {
        let name = self.path.as_ref().and_then(|p| p.file_name()).map_or_else(
            || format!("{}.yaml", self.card.name),
            |n| n.to_string_lossy().into_owned(),
        );
        if self.dirty {
            format!("{name} *")
        } else {
            name
        }
    }

    fn touch(&mut self) {
        // back at the saved card (undo, or an edit undone by hand) is clean
        self.dirty = self.saved.as_ref() != Some(&self.card);
        self.revision = self.revision.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tab_list_holds_every_tab_once_in_its_place() {
        for (i, tab) in Tab::ALL.into_iter().enumerate() {
            assert_eq!(tab.position(), i, "{tab:?}");
        }
        // a variant missing from ALL has a position at or past its length, which the match gives it
        let keys: std::collections::BTreeSet<String> = Tab::ALL
            .into_iter()
            .map(|t| format!("{:?}", t.key()))
            .collect();
        assert_eq!(keys.len(), Tab::ALL.len(), "each tab has a key of its own");
        assert!(Tab::ALL.len() <= 9, "Ctrl+1 .. Ctrl+9 name the tabs");
    }

    #[test]
    fn undo_redo_and_coalescing() {
        let mut doc = Document::new(Card::new_default("a"), None);
        assert!(!doc.can_undo());
        let mut c = doc.card.clone();
        c.seed = 1;
        doc.edit("seed", c.clone());
        c.seed = 2;
        doc.edit("seed", c.clone()); // merges
        c.name = "b".into();
        doc.edit("name", c);
        assert!(doc.dirty);
        assert!(doc.undo());
        assert_eq!(doc.card.name, "a");
        assert_eq!(doc.card.seed, 2);
        assert!(doc.undo());
        assert_eq!(doc.card.seed, 0);
        assert!(!doc.undo());
        assert!(doc.redo());
        assert_eq!(doc.card.seed, 2);
        assert!(doc.redo());
        assert_eq!(doc.card.name, "b");
        assert!(!doc.redo());
    }

    #[test]
    fn no_op_edit_records_nothing_and_title_marks_dirty() {
        let mut doc = Document::new(Card::new_default("x"), Some(PathBuf::from("/t/x.yaml")));
        doc.edit("seed", doc.card.clone());
        assert!(!doc.can_undo());
        assert_eq!(doc.title(), "x.yaml");
        let mut c = doc.card.clone();
        c.seed = 5;
        doc.edit("seed", c);
        assert_eq!(doc.title(), "x.yaml *");
        doc.mark_saved(PathBuf::from("/t/x.yaml"));
        assert_eq!(doc.title(), "x.yaml");
    }

    #[test]
    fn undoing_back_to_the_saved_card_clears_the_unsaved_marker() {
        let mut doc = Document::new(Card::new_default("x"), Some(PathBuf::from("/t/x.yaml")));
        let mut c = doc.card.clone();
        c.seed = 5;
        doc.edit("seed", c);
        assert!(doc.dirty);
        assert!(doc.undo());
        assert!(!doc.dirty, "back at the opened card");
        assert!(doc.redo());
        assert!(doc.dirty);
        doc.mark_saved(PathBuf::from("/t/x.yaml"));
        assert!(doc.undo());
        assert!(doc.dirty, "the saved card is the edited one now");
        assert!(doc.redo());
        assert!(!doc.dirty);
        // an import was never saved: dirty until saved, undo or not
        let mut imported = Document::unsaved(Card::new_default("y"));
        assert!(imported.dirty);
        let mut c = imported.card.clone();
        c.seed = 1;
        imported.edit("seed", c);
        assert!(imported.undo());
        assert!(imported.dirty);
    }

    #[test]
    fn recent_cards_are_deduplicated_and_bounded() {
        let mut s = State::default();
        for i in 0..15 {
            s.remember_card(Path::new(&format!("c{i}.yaml")));
        }
        s.remember_card(Path::new("c3.yaml"));
        assert_eq!(s.recent_cards.len(), MAX_RECENT);
        assert_eq!(s.recent_cards[0], PathBuf::from("c3.yaml"));
        assert_eq!(
            s.recent_cards
                .iter()
                .filter(|p| p.as_path() == Path::new("c3.yaml"))
                .count(),
            1
        );
    }
}
