//! The Help menu's pages: a quick start and how to write a task, in the
//! studio's own window (docs/studio.md and docs/tasks.md say the same at more
//! length).

use egui::{RichText, Ui};

/// A page of the Help menu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelpPage {
    /// From the first start to a run on a real model.
    QuickStart,
    /// What a task folder holds.
    WritingATask,
}

impl HelpPage {
    /// Every page, in menu order.
    pub const ALL: [Self; 2] = [Self::QuickStart, Self::WritingATask];

    /// The menu entry and the window's title.
    pub fn title(self) -> &'static str {
        match self {
            Self::QuickStart => "Quick start",
            Self::WritingATask => "Writing a task",
        }
    }

    fn sections(self) -> &'static [Section] {
        match self {
            Self::QuickStart => QUICK_START,
            Self::WritingATask => WRITING_A_TASK,
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

/// Draw `page` into a window's `ui`.
pub fn page_ui(ui: &mut Ui, page: HelpPage) {
    egui::ScrollArea::vertical()
        .id_salt(("help", page.title()))
        .show(ui, |ui| {
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
