//! The card library: the built-in cards (embedded in the binary, so listed
//! wherever the studio was opened), the cards of a folder (`cards/`) and the
//! recently opened ones, listed in the left panel, with the cards of the
//! hubs the user settings file lists and a search box over them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::engine::card::Card;
use crate::engine::registry::Registry;
use crate::studio::command::{Commands, UiCommand};
use crate::studio::jobs::read_card;

/// Most files read from the library folder (keeps a scan bounded).
pub const MAX_LIBRARY_FILES: usize = 200;

/// One card file in the library.
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryEntry {
    /// The file.
    pub path: PathBuf,
    /// The card's name (the file stem when the card does not load).
    pub name: String,
    /// Display title (card title, else its name, else the file stem).
    pub title: String,
    /// One-line summary, or the first load error when the card is broken.
    pub summary: String,
    /// True when the card loads cleanly.
    pub ok: bool,
}

impl LibraryEntry {
    fn of(path: &Path, registry: &Registry) -> Self {
        let stem = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        match read_card(path, registry) {
            Ok(card) => Self::from_card(path, &card),
            Err(errors) => Self {
                path: path.to_path_buf(),
                name: stem.clone(),
                title: stem,
                summary: errors
                    .0
                    .first()
                    .map_or_else(String::new, |e| format!("cannot open: {}", e.message)),
                ok: false,
            },
        }
    }

    fn from_card(path: &Path, card: &Card) -> Self {
        Self {
            path: path.to_path_buf(),
            name: card.name.clone(),
            title: card.display_title().to_owned(),
            summary: card.summary.clone(),
            ok: true,
        }
    }
}

/// One built-in card, as the library lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinEntry {
    /// The built-in's name (`best_of_n`).
    pub name: &'static str,
    /// Display title.
    pub title: String,
    /// One-line summary, or why it does not load with this registry.
    pub summary: String,
    /// True when the card loads cleanly.
    pub ok: bool,
}

/// The cards of the configured hubs, as last listed.
#[derive(Clone, Debug, Default)]
pub struct HubShelf {
    /// The cards, in the hubs' order.
    pub cards: Vec<crate::engine::hub::pull::ListedCard>,
    /// Hubs that could not be read, and why.
    pub problems: Vec<String>,
    /// What the search box holds.
    pub search: String,
    /// A listing is under way.
    pub loading: bool,
    /// A listing was asked for (the first one goes when the library is drawn).
    pub requested: bool,
    /// The hubs to list instead of the user settings file's (tests, embedding).
    pub hubs_override: Option<Vec<String>>,
    /// Where pulled cards are cached instead of the per-user cache (tests,
    /// embedding).
    pub cache_override: Option<PathBuf>,
    /// The other hubs that list a card shown once (the same name and latest
    /// version as one listed before), by the card's `NAMESPACE/NAME`.
    pub also_in: BTreeMap<String, Vec<String>>,
}

impl HubShelf {
    /// A listing came back.
    /// A listing came back. A card listed again (a hub configured twice, or
    /// a hub folder beside the site built from it: the same name and latest
    /// version) is kept once, under the first hub, which is the one a pull
    /// reads; the others are remembered in [`Self::also_in`].
    pub fn set(&mut self, cards: Vec<crate::engine::hub::pull::ListedCard>, problems: Vec<String>) {
        let key = |c: &crate::engine::hub::pull::ListedCard| (c.id(), c.versions.last().cloned());
        let mut kept: Vec<crate::engine::hub::pull::ListedCard> = Vec::new();
        self.also_in.clear();
        for card in cards {
            match kept.iter().find(|k| key(k) == key(&card)) {
                Some(first) => {
                    let others = self.also_in.entry(card.id()).or_default();
                    if first.hub != card.hub && !others.contains(&card.hub) {
                        others.push(card.hub);
                    }
                }
                None => kept.push(card),
            }
        }
        self.also_in.retain(|_, hubs| !hubs.is_empty());
        self.cards = kept;
        self.problems = problems;
        self.loading = false;
    }

    /// The cards the search matches (every word in the name, title, summary
    /// or tags).
    pub fn matching(&self) -> Vec<&crate::engine::hub::pull::ListedCard> {
        let words: Vec<String> = self
            .search
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.cards
            .iter()
            .filter(|c| {
                let text = format!("{} {} {} {}", c.id(), c.title, c.summary, c.tags.join(" "))
                    .to_lowercase();
                words.iter().all(|w| text.contains(w))
            })
            .collect()
    }

    /// Cards, problems or a listing under way.
    fn has_something_to_show(&self) -> bool {
        !self.cards.is_empty() || !self.problems.is_empty() || self.loading
    }

    fn ui(&mut self, ui: &mut egui::Ui, commands: &mut Commands) {
        if !self.requested {
            self.requested = true;
            commands.push(UiCommand::RefreshHubCards);
        }
        ui.horizontal(|ui| {
            ui.label(egui::RichText::new("Hubs").small().strong());
            if self.loading {
                ui.spinner();
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui
                    .small_button("Refresh hubs")
                    .on_hover_text("List the cards of the hubs in the user settings file again")
                    .clicked()
                {
                    commands.push(UiCommand::RefreshHubCards);
                }
            });
        });
        for problem in &self.problems {
            ui.add(
                egui::Label::new(
                    egui::RichText::new(problem)
                        .small()
                        .color(ui.visuals().error_fg_color),
                )
                .truncate()
                .show_tooltip_when_elided(false),
            )
            .on_hover_text(problem);
        }
        if self.cards.is_empty() {
            if !self.loading && self.problems.is_empty() {
                ui.weak("No hub cards. Hubs are listed under \"hubs\" in the user settings file");
            }
            return;
        }
        let label = ui.label(egui::RichText::new("Search hub cards").small());
        ui.add(
            egui::TextEdit::singleline(&mut self.search)
                .hint_text("name, title, summary, tag")
                .desired_width(f32::INFINITY),
        )
        .labelled_by(label.id);
        let shown = self.matching();
        if shown.is_empty() {
            ui.weak("No hub card matches");
        }
        let mut open = None;
        let mut hub: Option<&str> = None;
        for card in shown {
            // each hub's cards under its name
            if hub != Some(card.hub.as_str()) {
                hub = Some(card.hub.as_str());
                ui.add(
                    egui::Label::new(
                        egui::RichText::new(format!("from {}", card.hub))
                            .small()
                            .strong(),
                    )
                    .truncate(),
                );
            }
            let latest = card.versions.last().cloned().unwrap_or_default();
            let also = self
                .also_in
                .get(&card.id())
                .map_or_else(String::new, |hubs| format!("\nalso in {}", hubs.join(", ")));
            let response = ui
                .selectable_label(false, format!("{} ({})", card.title, card.id()))
                .on_hover_text(format!(
                    "{}@{latest} from {}{also} (opens as a new card: Save asks where)\n{}",
                    card.id(),
                    card.hub,
                    card.summary
                ));
            if response.clicked() {
                open = Some(UiCommand::OpenHubCard {
                    hub: Some(card.hub.clone()),
                    reference: format!("{}@{latest}", card.id()),
                });
            }
            summary_ui(ui, &card.summary, true);
        }
        if let Some(c) = open {
            commands.push(c);
        }
    }
}

/// The built-in cards and the cards found in a folder.
#[derive(Clone, Debug, Default)]
pub struct Library {
    /// The folder scanned.
    pub folder: PathBuf,
    /// The built-in cards, by name.
    pub builtin: Vec<BuiltinEntry>,
    /// The folder's cards, sorted by file name, without the copies of
    /// built-in cards (same name, same text).
    pub files: Vec<LibraryEntry>,
    /// The configured hubs' cards.
    pub hubs: HubShelf,
}

impl Library {
    /// Scan `folder` for `*.yaml`/`*.yml` cards (missing folder = empty library).
    pub fn scan(folder: &Path, registry: &Registry) -> Self {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                    .take(MAX_LIBRARY_FILES)
                    .collect()
            })
            .unwrap_or_default();
        paths.sort();
        // a checkout's cards/ holds the built-ins themselves: list them once
        paths.retain(|p| {
            let copy = p
                .file_stem()
                .and_then(|stem| crate::engine::builtin::card(&stem.to_string_lossy()))
                .is_some_and(|b| std::fs::read(p).ok().as_deref() == Some(b.yaml.as_bytes()));
            !copy
        });
        let builtin = crate::engine::builtin::CARDS
            .iter()
            .map(
                |b| match Card::from_yaml(b.yaml, &format!("built-in:{}", b.name), registry) {
                    Ok(card) => BuiltinEntry {
                        name: b.name,
                        title: card.display_title().to_owned(),
                        summary: card.summary,
                        ok: true,
                    },
                    Err(errors) => BuiltinEntry {
                        name: b.name,
                        title: b.name.to_owned(),
                        summary: errors
                            .0
                            .first()
                            .map_or_else(String::new, |e| format!("cannot open: {}", e.message)),
                        ok: false,
                    },
                },
            )
            .collect();
        Self {
            folder: folder.to_path_buf(),
            builtin,
            files: paths
                .iter()
                .map(|p| LibraryEntry::of(p, registry))
                .collect(),
            hubs: HubShelf::default(),
        }
    }

    /// The library panel: the cards of the library folder and the recent ones
    /// (what a person comes back to), the configured hubs' cards with a
    /// search box, then the built-in cards. Clicking opens.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        recent: &[PathBuf],
        current: Option<&Path>,
        commands: &mut Commands,
    ) {
        ui.horizontal(|ui| {
            ui.strong("Library");
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui
                    .small_button("Refresh")
                    .on_hover_text(format!("Re-read {}", self.folder.display()))
                    .clicked()
                {
                    commands.push(UiCommand::RefreshLibrary);
                }
            });
        });
        if !self.files.is_empty() {
            ui.add_space(crate::studio::theme::SECTION_GAP);
            ui.label(
                egui::RichText::new(format!("In {}", self.folder.display()))
                    .small()
                    .strong(),
            );
        }
        for entry in &self.files {
            entry_ui(ui, entry, current, commands);
        }
        if !recent.is_empty() {
            ui.add_space(crate::studio::theme::SECTION_GAP);
            ui.strong("Recent");
            for path in recent {
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                let selected = current == Some(path.as_path());
                let response = ui
                    .selectable_label(selected, name)
                    .on_hover_text(path.display().to_string());
                if response.clicked() {
                    commands.push(UiCommand::OpenCard(path.clone()));
                }
            }
        }
        if !self.files.is_empty() || !recent.is_empty() {
            ui.add_space(crate::studio::theme::SECTION_GAP);
        }
        // the team's cards before the built-in ones: what a person looks
        // for; with no hub card to show, the built-in ones come first
        let hubs_first = self.hubs.has_something_to_show();
        if hubs_first {
            self.hubs.ui(ui, commands);
            ui.add_space(crate::studio::theme::SECTION_GAP);
        }
        ui.label(egui::RichText::new("Built-in").small().strong());
        self.builtin_ui(ui, commands);
        if !hubs_first {
            ui.add_space(crate::studio::theme::SECTION_GAP);
            self.hubs.ui(ui, commands);
        }
    }

    fn builtin_ui(&self, ui: &mut egui::Ui, commands: &mut Commands) {
        for entry in &self.builtin {
            let response = ui
                .selectable_label(false, entry.title.as_str())
                .on_hover_text(format!(
                    "built-in card {} (opens as a new card: Save asks where)\n{}",
                    entry.name, entry.summary
                ));
            if response.clicked() {
                commands.push(UiCommand::OpenBuiltin(entry.name.to_owned()));
            }
            summary_ui(ui, &entry.summary, entry.ok);
        }
    }
}

fn entry_ui(
    ui: &mut egui::Ui,
    entry: &LibraryEntry,
    current: Option<&Path>,
    commands: &mut Commands,
) {
    let selected = current.is_some_and(|c| same_file(c, &entry.path));
    let response = ui
        .selectable_label(selected, entry.title.as_str())
        .on_hover_text(format!("{}\n{}", entry.path.display(), entry.summary));
    if response.clicked() {
        commands.push(UiCommand::OpenCard(entry.path.clone()));
    }
    summary_ui(ui, &entry.summary, entry.ok);
}

/// A card's summary under its title, on one line (the whole on hover).
fn summary_ui(ui: &mut egui::Ui, summary: &str, ok: bool) {
    if !summary.is_empty() {
        let text = egui::RichText::new(summary).small();
        let text = if ok {
            text.weak()
        } else {
            text.color(ui.visuals().error_fg_color)
        };
        ui.add(
            egui::Label::new(text)
                .truncate()
                .show_tooltip_when_elided(false),
        )
        .on_hover_text(summary);
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_lists_cards_and_flags_broken_ones() {
        let registry = Registry::builtin();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.yaml"), "name: [").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        Card::new_default("a")
            .save(&dir.path().join("a.yaml"))
            .unwrap();
        // a copy of a built-in card is listed once, as the built-in
        std::fs::write(
            dir.path().join("topk.yaml"),
            crate::engine::builtin::card("topk").unwrap().yaml,
        )
        .unwrap();
        let lib = Library::scan(dir.path(), &registry);
        assert_eq!(lib.files.len(), 2);
        assert_eq!(lib.files[0].path, dir.path().join("a.yaml"));
        let broken = &lib.files[1];
        assert!(!broken.ok);
        assert_eq!(broken.title, "b");
        assert!(broken.summary.starts_with("cannot open"));
        let empty = Library::scan(&dir.path().join("missing"), &registry);
        assert!(empty.files.is_empty());
        // the built-ins are listed wherever the studio is
        assert_eq!(empty.builtin.len(), crate::engine::builtin::CARDS.len());
        assert!(empty.builtin.iter().all(|b| b.ok), "{:?}", empty.builtin);
    }
}
