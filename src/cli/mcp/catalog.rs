//! What there is to run: the built-in cards and tasks and those in a
//! folder (`list_cards`, `list_tasks`), and a card checked
//! (`validate_card`). A card argument is resolved by the command line's
//! one rule ([`crate::engine::builtin::resolve_card`]: a file, a built-in
//! card's name, `NAMESPACE/NAME[@VERSION]` on a hub) or, when it holds a
//! line break, read as the card's YAML text.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::reply::Outcome;
use crate::engine::builtin::{self, CardArg};
use crate::engine::card::ValidCard;
use crate::engine::registry::Registry;

/// The name YAML text given in an argument is reported under.
pub(super) const TEXT_ORIGIN: &str = "card";

/// True when a card argument is the card's YAML text rather than a path
/// or a name (names and paths have no line break).
pub(super) fn is_yaml_text(arg: &str) -> bool {
    arg.contains('\n')
}

/// Why a card argument gave no card: each line a problem (every error of
/// the card with its line:col, or why the name does not resolve).
pub(super) struct NoCard(pub Vec<String>);

impl NoCard {
    fn one(message: impl Into<String>) -> Self {
        Self(vec![message.into()])
    }

    /// The problems as a tool's error text.
    pub fn message(&self, arg: &str) -> String {
        let shown = if is_yaml_text(arg) {
            "the card's YAML text".to_owned()
        } else {
            format!("card `{arg}`")
        };
        match self.0.as_slice() {
            [one] => format!("{shown}: {one}"),
            all => format!(
                "{shown}: {} errors (fix them all and validate again):\n{}",
                all.len(),
                all.join("\n")
            ),
        }
    }
}

/// The checked card an argument names or holds.
pub(super) fn load_card(arg: &str, registry: &Registry) -> Result<ValidCard, NoCard> {
    let errors =
        |e: crate::engine::card::CardErrors| NoCard(e.0.iter().map(ToString::to_string).collect());
    if is_yaml_text(arg) {
        return ValidCard::from_yaml(arg, TEXT_ORIGIN, registry).map_err(errors);
    }
    if arg.trim().is_empty() {
        return Err(NoCard::one(
            "empty: give a card file's path, a built-in card's name (list_cards) or the card's YAML",
        ));
    }
    match builtin::resolve_card(Path::new(arg)) {
        Ok(CardArg::Builtin(card)) => card.valid(registry).map_err(errors),
        Ok(CardArg::Path(path)) => {
            crate::engine::hub::pull::load_card_file(&path, registry).map_err(errors)
        }
        Ok(CardArg::Hub(r)) => {
            let hubs = crate::engine::hub::pull::configured_hubs(&[]).map_err(NoCard::one)?;
            crate::engine::hub::pull::pull(&r, &hubs, registry)
                .map(|p| p.card)
                .map_err(|e| NoCard(e.lines().map(str::to_owned).collect()))
        }
        Err(e) => Err(NoCard::one(e.to_string())),
    }
}

/// `validate_card`: the card's name and summary, or every error.
pub(super) fn validate(arg: &str) -> Outcome {
    let registry = Registry::builtin();
    let card = load_card(arg, &registry).map_err(|e| e.message(arg))?;
    let card = card.card();
    Ok(json!({
        "ok": true,
        "card": format!("{}/{}", card.namespace, card.name),
        "title": card.display_title(),
        "summary": card.summary,
        "budget": card.general.max_iterations,
        "smallest_budget": super::budget::smallest(card).iterations,
    }))
}

/// A card as a list shows it.
fn card_entry(card: &crate::engine::card::Card, source: &str) -> Value {
    json!({
        "name": card.name,
        "source": source,
        "title": card.display_title(),
        "summary": card.summary,
        "when_to_use": first_paragraph(&card.when_to_use),
        "tags": card.tags,
        "budget": card.general.max_iterations,
        "smallest_budget": super::budget::smallest(card).iterations,
    })
}

/// `list_cards`: the built-in cards, and the card files in `folder`.
pub(super) fn list_cards(folder: Option<&str>) -> Outcome {
    let registry = Registry::builtin();
    let mut cards = Vec::new();
    for b in builtin::CARDS {
        match b.valid(&registry) {
            Ok(c) => cards.push(card_entry(c.card(), "built-in")),
            Err(e) => {
                cards.push(json!({"name": b.name, "source": "built-in", "errors": e.to_string()}))
            }
        }
    }
    if let Some(folder) = folder {
        for path in files_in(folder)? {
            let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            if !is_yaml {
                continue;
            }
            let shown = path.display().to_string();
            match crate::engine::hub::pull::load_card_file(&path, &registry) {
                Ok(c) => cards.push(card_entry(c.card(), &shown)),
                Err(e) => cards.push(json!({
                    "source": shown,
                    "errors": e.0.iter().map(ToString::to_string).collect::<Vec<_>>(),
                })),
            }
        }
    }
    Ok(json!({
        "cards": cards,
        "how": "Pass a card's name (built-in) or its file's path to start_run; validate_card checks a card \
                file or YAML text and gives every error with line:col.",
    }))
}

/// The entries of `folder`, sorted; an error saying what is wrong with it.
fn files_in(folder: &str) -> Result<Vec<PathBuf>, String> {
    let dir = Path::new(folder);
    let entries = std::fs::read_dir(dir).map_err(|e| format!("folder `{folder}`: {e}"))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    Ok(paths)
}

/// The first paragraph of Markdown text that is not a heading, on one line.
fn first_paragraph(text: &str) -> String {
    text.split("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty() && !p.starts_with('#'))
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A task folder as a list shows it.
fn task_entry(task: &crate::engine::task::Task, source: &str) -> Value {
    json!({
        "name": task.name,
        "source": source,
        "path": task.dir.display().to_string(),
        "language": task.language,
        "program": task.program_file,
        "about": first_paragraph(&task.description),
    })
}

/// `list_tasks`: the built-in tasks, and the task folders in `folder`
/// (the folder itself when it is one).
pub(super) fn list_tasks(folder: Option<&str>) -> Outcome {
    let mut tasks = Vec::new();
    for t in builtin::TASKS {
        let readme = t
            .files
            .iter()
            .find(|(f, _)| *f == "README.md")
            .map_or("", |(_, text)| text);
        tasks.push(json!({
            "name": t.name,
            "source": "built-in",
            "about": first_paragraph(readme),
        }));
    }
    if let Some(folder) = folder {
        let mut candidates = vec![PathBuf::from(folder)];
        candidates.extend(files_in(folder)?.into_iter().filter(|p| p.is_dir()));
        for dir in candidates {
            let looks_like_one = std::fs::read_dir(&dir).is_ok_and(|mut entries| {
                entries.any(|e| {
                    e.ok().is_some_and(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.starts_with("initial_program") || name.starts_with("initial.")
                    })
                })
            });
            if !looks_like_one {
                continue;
            }
            let shown = dir.display().to_string();
            match crate::engine::task::Task::load(&dir) {
                Ok(task) => tasks.push(task_entry(&task, &shown)),
                Err(e) => tasks.push(json!({"source": shown, "error": e.to_string()})),
            }
        }
    }
    Ok(json!({
        "tasks": tasks,
        "how": "Pass a task's name (built-in) or its folder to start_run. A task folder holds \
                initial_program.<ext> (the program to improve, its EVOLVE-BLOCK-START/END markers around \
                what may change), evaluator.py with evaluate(program_path) -> {\"combined_score\": ...}, \
                and a README.md saying what the program should do.",
    }))
}
