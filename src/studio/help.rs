//! The Help menu's pages: a quick start, how to write a task, and how a
//! coding agent drives galapagos over MCP, in the studio's own window
//! (docs/studio.md, docs/tasks.md and docs/mcp.md say the same at more
//! length). The agent's page is the repository's `SKILL.md`, the same text
//! `galapagos mcp` gives agents.

use egui::{RichText, Ui};

/// A page of the Help menu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelpPage {
    /// From the first start to a run on a real model.
    QuickStart,
    /// What a task folder holds.
    WritingATask,
    /// A coding agent driving galapagos over MCP (`SKILL.md`).
    Agents,
}

/// The skill `galapagos mcp` gives agents, shown as the Agents page.
pub const SKILL: &str = include_str!("../../SKILL.md");

impl HelpPage {
    /// Every page, in menu order.
    pub const ALL: [Self; 3] = [Self::QuickStart, Self::WritingATask, Self::Agents];

    /// The menu entry and the window's title.
    pub fn title(self) -> &'static str {
        match self {
            Self::QuickStart => "Quick start",
            Self::WritingATask => "Writing a task",
            Self::Agents => "Coding agents (MCP)",
        }
    }

    fn sections(self) -> &'static [Section] {
        match self {
            Self::QuickStart => QUICK_START,
            Self::WritingATask => WRITING_A_TASK,
            Self::Agents => &[],
        }
    }
}

/// A heading, its paragraphs, and code shown as written.
struct Section {
    heading: &'static str,
    text: &'static [&'static str],
    code: Option<&'static str>,
}

const QUICK_START: &[Section] = &[
    Section {
        heading: "1. Run the card that is open",
        text: &[
            "The studio opens on a card (a search method: one block per slot) and a task. Started outside a \
             checkout it opens the built-in best_of_n card on the built-in circle_packing task.",
            "Press Start run (F5). The Run tab shows the fitness plot, the table of every genome and, for the \
             genome you click, its scores against its parent, its diff, the prompt and the model's reply. \
             F6 pauses and resumes, Shift+F5 stops.",
            "With no model configured, runs use the built-in offline model (the \"offline model\" badge): it \
             only tunes numeric literals, enough to see a search work.",
        ],
        code: None,
    },
    Section {
        heading: "2. Use a real model",
        text: &[
            "Click the Model button in the toolbar (or File > Model settings…), then Add a provider… or Add \
             endpoint: the endpoint's URL, the model and the NAME of the environment variable that holds the \
             key (keys are never stored). Test connection checks it; Save settings keeps it for every run.",
            "If a call fails, the run retries it and the Run view says which attempt failed and why.",
        ],
        code: None,
    },
    Section {
        heading: "3. Change the method",
        text: &[
            "On the Blocks tab, pick an implementation for a slot in the palette (click it, or drag it onto its \
             block) and set its parameters in the inspector; a value out of range is shown at its field. Blocks \
             that do not go together are marked, and Fix switches the others in one step.",
            "The task folder, the runs folder and the budget are under General. Save the card with Save, or type \
             a path and press Save to path.",
        ],
        code: None,
    },
    Section {
        heading: "4. Compare",
        text: &[
            "The Runs tab lists the recorded runs: tick two or more to compare their curves, results and cards; \
             open one to browse it, or resume it. The Leaderboard tab runs several cards with several seeds \
             and ranks them with intervals.",
            "Ctrl+1 to Ctrl+6 show the tabs.",
        ],
        code: None,
    },
];

const WRITING_A_TASK: &[Section] = &[
    Section {
        heading: "A task is a folder",
        text: &[
            "It holds the program to improve and the evaluator that scores it, laid out as OpenEvolve or \
             ShinkaEvolve lay theirs out. Pick it in the Blocks tab, under General (task folder), and press \
             Start run.",
        ],
        code: Some(
            "my_task/\n  initial_program.py   the program the search starts from\n  evaluator.py         scores a candidate\n  config.yaml          optional: settings for the run",
        ),
    },
    Section {
        heading: "The program",
        text: &[
            "initial_program.<ext>, in any language. Mark the lines the model may change with EVOLVE-BLOCK-START \
             and EVOLVE-BLOCK-END comments; a program without them gets a warning.",
        ],
        code: Some(
            "# EVOLVE-BLOCK-START\ndef solve(xs):\n    return sorted(xs)\n# EVOLVE-BLOCK-END",
        ),
    },
    Section {
        heading: "The evaluator",
        text: &[
            "evaluator.py exposes evaluate(program_path): it runs the candidate at that path and returns its \
             metrics as a dict of numbers. combined_score is the fitness (without it, the mean of the metrics); \
             a candidate that raises or returns no metrics is invalid. Candidates run in a sandbox, never \
             trusted.",
        ],
        code: Some(
            "import importlib.util\n\ndef evaluate(program_path):\n    spec = importlib.util.spec_from_file_location(\"cand\", program_path)\n    m = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(m)\n    ok = m.solve([3, 1, 2]) == [1, 2, 3]\n    return {\"combined_score\": 1.0 if ok else 0.0}",
        ),
    },
    Section {
        heading: "Other layouts",
        text: &[
            "ShinkaEvolve's: initial.<ext> and evaluate.py, run as python evaluate.py --program_path P \
             --results_dir D, with its metrics in D/metrics.json and D/correct.json.",
            "Any language: give the card's evaluator {kind: command, argv: [...]}; {program}, {results_dir}, \
             {task_dir} and {python} are replaced, and the metrics come from metrics.json in the results folder \
             or the last JSON line of its output.",
            "A whole repository: initial_program/ as a folder, with config.yaml's evolve (may change), context \
             (shown, read-only) and exclude globs.",
        ],
        code: None,
    },
];

/// One block of a Markdown text as the Agents page shows it.
#[derive(Debug, PartialEq, Eq)]
enum Block {
    Heading(String),
    Paragraph(String),
    Code(String),
}

/// The blocks of `markdown` (its front matter left out): headings,
/// paragraphs on one line (a list item is a paragraph of its own) and
/// fenced code as written.
fn blocks(markdown: &str) -> Vec<Block> {
    let mut text = markdown;
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---\n")
    {
        text = &rest[end + 5..];
    }
    let mut out = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut code: Option<Vec<&str>> = None;
    let flush = |paragraph: &mut Vec<&str>, out: &mut Vec<Block>| {
        if !paragraph.is_empty() {
            out.push(Block::Paragraph(paragraph.join(" ")));
            paragraph.clear();
        }
    };
    for line in text.lines() {
        if let Some(lines) = code.as_mut() {
            if line.starts_with("```") {
                out.push(Block::Code(lines.join("\n")));
                code = None;
            } else {
                lines.push(line);
            }
            continue;
        }
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            flush(&mut paragraph, &mut out);
            code = Some(Vec::new());
        } else if trimmed.starts_with('#') {
            flush(&mut paragraph, &mut out);
            out.push(Block::Heading(
                trimmed.trim_start_matches('#').trim().to_owned(),
            ));
        } else if trimmed.is_empty() {
            flush(&mut paragraph, &mut out);
        } else {
            if trimmed.starts_with("- ") {
                flush(&mut paragraph, &mut out);
            }
            paragraph.push(trimmed);
        }
    }
    flush(&mut paragraph, &mut out);
    out
}

/// Draw the skill's text.
fn skill_ui(ui: &mut Ui) {
    for block in blocks(SKILL) {
        match block {
            Block::Heading(h) => {
                ui.add_space(crate::studio::theme::SECTION_GAP);
                ui.label(RichText::new(h).strong());
            }
            Block::Paragraph(p) => {
                ui.add(egui::Label::new(p).wrap());
            }
            Block::Code(c) => {
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    ui.label(RichText::new(c).monospace());
                });
            }
        }
    }
}

/// Draw `page` into a window's `ui`.
pub fn page_ui(ui: &mut Ui, page: HelpPage) {
    egui::ScrollArea::vertical()
        .id_salt(("help", page.title()))
        .show(ui, |ui| {
            if page == HelpPage::Agents {
                skill_ui(ui);
                return;
            }
            for section in page.sections() {
                ui.add_space(crate::studio::theme::SECTION_GAP);
                ui.label(RichText::new(section.heading).strong());
                for paragraph in section.text {
                    ui.add(egui::Label::new(*paragraph).wrap());
                }
                if let Some(code) = section.code {
                    egui::Frame::group(ui.style()).show(ui, |ui| {
                        ui.label(RichText::new(code).monospace());
                    });
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skill_reads_as_headings_paragraphs_and_code() {
        let shown = blocks(SKILL);
        assert!(
            shown.contains(&Block::Heading(
                "Driving Galapagos from a coding agent".to_owned()
            )),
            "{shown:?}"
        );
        // the front matter is not shown
        assert!(
            !shown
                .iter()
                .any(|b| matches!(b, Block::Paragraph(p) if p.starts_with("name:")))
        );
        assert!(
            shown
                .iter()
                .any(|b| matches!(b, Block::Code(c) if c.contains("\"tool\": \"start_run\""))),
            "{shown:?}"
        );
    }
}
