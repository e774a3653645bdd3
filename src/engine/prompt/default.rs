//! `DefaultPromptBuilder`: the canonical multi-section message (task →
//! metrics → feedback/artifacts → knowledge → inspirations → current program →
//! instructions) plus a system message. Pure formatting: what goes in was
//! already chosen by the selection policy.

use std::fmt::Write as _;

use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use super::program::{self, fence};
use super::{EditMode, PromptBuilder, PromptContext};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::{FITNESS_KEY, Genome, Prompt};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::rng::SearchRng;
use crate::engine::task::Markers;

/// Parameters of [`DefaultPromptBuilder`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DefaultPromptParams {
    /// Replaces the built-in system message when not empty.
    pub system_message: String,
    /// Show the parent's evaluator artifacts (stderr, feedback...).
    pub include_artifacts: bool,
    /// Truncate each artifact to this many characters.
    pub max_artifact_chars: usize,
    /// Truncate each inspiration program to this many characters.
    pub max_inspiration_chars: usize,
    /// Suggest simplifying when the program is longer than this (0 = never).
    pub suggest_simplification_after_chars: usize,
    /// Stochastic template variation: pick one of several phrasings per
    /// section from the run's RNG (OpenEvolve / AlphaEvolve).
    pub template_variation: bool,
    /// For a folder program: show its read-only context files up to this
    /// many characters in all (the rest are listed by path); its editable
    /// files are always shown in full.
    pub max_context_chars: usize,
}

impl Default for DefaultPromptParams {
    fn default() -> Self {
        Self {
            system_message: String::new(),
            include_artifacts: true,
            max_artifact_chars: 2000,
            max_inspiration_chars: 6000,
            suggest_simplification_after_chars: 0,
            template_variation: false,
            max_context_chars: 20_000,
        }
    }
}

/// The canonical multi-section prompt.
#[derive(Clone, Debug, Default)]
pub struct DefaultPromptBuilder {
    params: DefaultPromptParams,
}

/// The built-in system message; `{fitness}` is the metric to raise.
const DEFAULT_SYSTEM: &str = "You are an expert programmer and researcher improving a program through a \
sequence of small, evaluated edits. Every candidate you propose is run by an automatic evaluator; your goal is \
to maximise its {fitness}. Reason about why the current program scores as it does, then make one focused \
change that is likely to raise the score. Keep the program's interface and output format unchanged. Diverse, \
creative ideas are valued when the current approach has stalled.";

/// Alternative phrasings for template variation: (intro to inspirations,
/// closing instruction).
const INSPIRATION_INTROS: &[&str] = &[
    "Other programs from the archive, with their scores. They may contain ideas worth borrowing:",
    "These programs scored well or differently; study what they do differently from the current one:",
    "Context programs for inspiration (do not copy blindly; combine what works):",
];
const IMPROVE_LINES: &[&str] = &[
    "Suggest an improvement to the current program that raises {fitness}.",
    "Propose one focused change to the current program that should increase {fitness}.",
    "Find the weakest part of the current program and improve it to raise {fitness}.",
];

/// What the instructions say about which lines may change.
fn region_rule(markers: &Markers) -> String {
    match markers {
        Markers::Regions(_) => {
            "Only change code between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers; \
never remove the markers."
                .to_owned()
        }
        Markers::Missing => {
            "The program has no EVOLVE-BLOCK markers: any line may change.".to_owned()
        }
        Markers::Unbalanced { starts, ends, .. } => format!(
            "The program's EVOLVE-BLOCK markers are unbalanced ({starts} START, {ends} END): only the code they \
enclose may change (an unclosed START runs to the end of the file); never edit the marker lines."
        ),
    }
}

impl Component for DefaultPromptBuilder {
    type Slot = dyn PromptBuilder;
    type Params = DefaultPromptParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "default",
        type_name: "DefaultPromptBuilder",
        summary: "Canonical task → metrics → feedback → inspirations → current program message",
        params: &[
            ParamSpec {
                key: "system_message",
                doc: "Replaces the built-in system message when not empty",
                ty: ParamType::Text,
            },
            ParamSpec {
                key: "include_artifacts",
                doc: "Show the parent's evaluator artifacts (stderr, feedback, traceback)",
                ty: ParamType::Bool,
            },
            ParamSpec {
                key: "max_artifact_chars",
                doc: "Truncate each artifact to this many characters",
                ty: ParamType::Int {
                    min: 0,
                    max: 1_000_000,
                },
            },
            ParamSpec {
                key: "max_inspiration_chars",
                doc: "Truncate each inspiration program to this many characters",
                ty: ParamType::Int {
                    min: 0,
                    max: 1_000_000,
                },
            },
            ParamSpec {
                key: "suggest_simplification_after_chars",
                doc: "Suggest simplifying when the program is longer than this (0 = never)",
                ty: ParamType::Int {
                    min: 0,
                    max: 10_000_000,
                },
            },
            ParamSpec {
                key: "template_variation",
                doc: "Pick one of several phrasings per section from the run's RNG",
                ty: ParamType::Bool,
            },
            ParamSpec {
                key: "max_context_chars",
                doc: "For a folder program: show its read-only context files up to this many characters \
                      (the rest are listed by path; editable files are always shown in full)",
                ty: ParamType::Int {
                    min: 0,
                    max: 10_000_000,
                },
            },
        ],
    };

    fn build(params: DefaultPromptParams, _ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(params))
    }
}

impl DefaultPromptBuilder {
    pub fn new(params: DefaultPromptParams) -> Self {
        Self { params }
    }

    fn pick<'a>(&self, options: &'a [&'a str], rng: &mut SearchRng) -> &'a str {
        if self.params.template_variation && options.len() > 1 {
            options[rng.random_range(0..options.len())]
        } else {
            options[0]
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    let _ = write!(
        out,
        "\n... [truncated, {} chars total]",
        text.chars().count()
    );
    out
}

fn fmt_score(v: f64) -> String {
    if v.abs() >= 1e4 || (v != 0.0 && v.abs() < 1e-3) {
        format!("{v:.4e}")
    } else {
        format!("{v:.4}")
    }
}

fn metrics_lines(genome: &Genome, previous: Option<&Genome>) -> String {
    let mut out = String::new();
    if !genome.valid {
        let _ = writeln!(
            out,
            "- status: INVALID ({})",
            genome.error.as_deref().unwrap_or("no reason recorded")
        );
    }
    let mut keys: Vec<&String> = genome.scores.keys().collect();
    keys.sort_by_key(|k| (k.as_str() != FITNESS_KEY, k.as_str()));
    for key in keys {
        let v = genome.scores[key];
        let _ = write!(out, "- {key}: {}", fmt_score(v));
        if let Some(p) = previous.and_then(|p| p.scores.get(key)) {
            let d = v - p;
            let _ = write!(
                out,
                " (parent {}, {}{})",
                fmt_score(*p),
                if d >= 0.0 { "+" } else { "" },
                fmt_score(d)
            );
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("- no metrics yet\n");
    }
    out
}

impl PromptBuilder for DefaultPromptBuilder {
    fn build(&self, ctx: &PromptContext<'_>, rng: &mut SearchRng) -> Prompt {
        let p = &self.params;
        let lang = ctx.task.language.as_str();
        let mut user = String::new();

        let fitness = ctx.task.fitness.as_str();

        let _ = writeln!(user, "# Current Program Metrics");
        user.push_str(&metrics_lines(ctx.parent, ctx.grandparent));
        let _ = writeln!(user, "Focus areas:");
        match (
            ctx.parent.fitness(),
            ctx.grandparent.and_then(Genome::fitness),
        ) {
            (Some(now), Some(before)) if now > before => {
                let _ = writeln!(
                    user,
                    "- {fitness} improved over its parent: {} -> {}",
                    fmt_score(before),
                    fmt_score(now)
                );
            }
            (Some(now), Some(before)) if now < before => {
                let _ = writeln!(
                    user,
                    "- {fitness} declined from its parent: {} -> {}",
                    fmt_score(before),
                    fmt_score(now)
                );
            }
            (Some(_), Some(_)) => {
                let _ = writeln!(
                    user,
                    "- {fitness} unchanged from its parent; try a different idea"
                );
            }
            _ => {
                let _ = writeln!(user, "- raise {fitness}");
            }
        }
        if p.suggest_simplification_after_chars > 0
            && ctx.parent.content.text().chars().count() > p.suggest_simplification_after_chars
        {
            let _ = writeln!(
                user,
                "- the program is long (> {} chars); consider simplifying it",
                p.suggest_simplification_after_chars
            );
        }
        user.push('\n');
        user.push_str(&tradeoffs(ctx));

        if p.include_artifacts && !ctx.parent.artifacts.is_empty() {
            let _ = writeln!(user, "# Evaluator Feedback");
            for (key, value) in &ctx.parent.artifacts {
                if value.trim().is_empty() {
                    continue;
                }
                let _ = writeln!(user, "## {key}");
                user.push_str(&fence("", &truncate(value, p.max_artifact_chars)));
            }
            user.push('\n');
        }

        if !ctx.knowledge.is_empty() {
            let _ = writeln!(user, "# What We Have Learned So Far");
            for note in &ctx.knowledge.notes {
                let _ = writeln!(user, "{}\n", note.trim());
            }
        }

        if !ctx.failed_attempts.is_empty() {
            let _ = writeln!(user, "# Previous Failed Attempts (this iteration)");
            for (i, attempt) in ctx.failed_attempts.iter().enumerate() {
                let _ = writeln!(
                    user,
                    "### Attempt {}\nError: {}",
                    i + 1,
                    attempt.error.trim()
                );
                if let Some(resp) = &attempt.response {
                    let _ = writeln!(user, "Your response was:");
                    user.push_str(&fence("", &truncate(resp, 1500)));
                }
            }
            let _ = writeln!(user, "Avoid repeating these mistakes.\n");
        }

        if !ctx.inspirations.is_empty() {
            let _ = writeln!(
                user,
                "# Inspiration Programs\n{}\n",
                self.pick(INSPIRATION_INTROS, rng)
            );
            for (i, g) in ctx.inspirations.iter().enumerate() {
                let score = g.fitness().map_or_else(|| "invalid".to_owned(), fmt_score);
                let _ = writeln!(
                    user,
                    "## Program {} (id {}, {fitness} {score})",
                    i + 1,
                    g.id
                );
                user.push_str(&fence(
                    lang,
                    &truncate(&g.content.text(), p.max_inspiration_chars),
                ));
                user.push('\n');
            }
        }

        let folder = !ctx.parent.content.is_single();
        if folder {
            user.push_str(&program::current_program(
                &ctx.parent.content,
                ctx.task.files.as_ref(),
                p.max_context_chars,
            ));
        } else {
            let _ = writeln!(user, "# Current Program");
            user.push_str(&fence(lang, &ctx.parent.content.text()));
            user.push('\n');
        }

        let _ = writeln!(
            user,
            "# Instructions\n{}",
            self.pick(IMPROVE_LINES, rng).replace("{fitness}", fitness)
        );
        let rule = region_rule(&ctx.task.markers);
        if folder {
            user.push_str(&program::instructions(
                ctx.mode,
                ctx.task.files.as_ref(),
                &ctx.parent.content,
            ));
        } else {
            match ctx.mode {
                EditMode::Diff => {
                    user.push_str(
                    "Reply with one or more edits in this exact SEARCH/REPLACE format:\n\n\
<<<<<<< SEARCH\n\
<lines copied exactly from the current program>\n\
=======\n\
<the replacement lines>\n\
>>>>>>> REPLACE\n\n\
- Each SEARCH section must match the current program character for character, including indentation.\n",
                );
                    let _ = writeln!(user, "- {rule}");
                    user.push_str(
                    "- Keep every edit small and focused; use several blocks for several changes.\n\
- Briefly explain the idea before the blocks.\n",
                );
                }
                EditMode::FullRewrite => {
                    let _ = writeln!(
                        user,
                        "Reply with the complete new program in one ```{lang} code block. Keep the same inputs and \
outputs. {rule}"
                    );
                }
                EditMode::Crossover => {
                    let _ = writeln!(
                        user,
                        "Combine the strengths of the current program and Inspiration Program 1 into one better program. \
Reply with the complete new program in one ```{lang} code block. {rule}"
                    );
                }
            }
        }
        if let Some(t) = ctx.task.timeout_secs {
            let _ = writeln!(
                user,
                "- The program must finish within {t:.0} seconds or it is killed and scores nothing."
            );
        }

        // The system message is the stable prefix of every prompt of the run
        // (the instructions, then the task), so a provider's prompt cache
        // serves it after the first request; what changes goes in `user`.
        let mut system = if p.system_message.trim().is_empty() {
            DEFAULT_SYSTEM.replace("{fitness}", fitness)
        } else {
            p.system_message.clone()
        };
        if !ctx.task.description.trim().is_empty() {
            let _ = write!(system, "\n\n# Task\n{}\n", ctx.task.description.trim());
        }
        Prompt { system, user }
    }
}

/// A multi-objective task's trade-offs: the objectives with their
/// directions, and the current program's and the inspirations' values (the
/// non-dominated front, with the pareto policy). Empty with one fitness.
fn tradeoffs(ctx: &PromptContext<'_>) -> String {
    let objectives = &ctx.task.objectives;
    if objectives.len() < 2 {
        return String::new();
    }
    let mut out = String::from(
        "# Trade-offs
",
    );
    let names: Vec<String> = objectives
        .iter()
        .map(|o| match o.direction {
            crate::engine::genome::Direction::Max => format!("{} (higher is better)", o.metric),
            crate::engine::genome::Direction::Min => format!("{} (lower is better)", o.metric),
        })
        .collect();
    let _ = writeln!(
        out,
        "This task has several objectives: {}. No program is best on all of them: improve one without \
         giving up the others, or find a new balance between them.\n",
        names.join(", ")
    );
    let header: Vec<String> = objectives
        .iter()
        .map(|o| format!("{} {}", o.metric, o.direction.arrow()))
        .collect();
    let _ = writeln!(out, "| program | {} |", header.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(objectives.len()));
    let row = |label: String, g: &Genome| {
        let values: Vec<String> = objectives
            .iter()
            .map(|o| {
                g.scores
                    .get(&o.metric)
                    .map_or_else(|| "–".to_owned(), |v| fmt_score(*v))
            })
            .collect();
        format!("| {label} | {} |\n", values.join(" | "))
    };
    out.push_str(&row(format!("current (id {})", ctx.parent.id), ctx.parent));
    for g in ctx.inspirations {
        out.push_str(&row(format!("id {}", g.id), g));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::memory::Knowledge;
    use crate::engine::prompt::{FailedAttempt, TaskBrief};

    fn genome(id: u64, score: f64, content: &str) -> Genome {
        let mut g = Genome {
            id,
            valid: true,
            content: content.to_owned().into(),
            ..Genome::default()
        };
        g.scores.insert(FITNESS_KEY.into(), score);
        g
    }

    #[test]
    fn sections_in_canonical_order_and_current_program_last() {
        let task = TaskBrief {
            name: "t".into(),
            description: "Pack circles.".into(),
            language: "python".into(),
            timeout_secs: Some(30.0),
            ..TaskBrief::default()
        };
        let mut parent = genome(3, 0.8, "x = 1\n");
        parent
            .artifacts
            .insert("stderr".into(), "warning: slow".into());
        let grand = genome(1, 0.5, "x = 0\n");
        let insp = vec![Arc::new(genome(2, 0.9, "x = 2\n"))];
        let knowledge = Knowledge {
            notes: vec!["Bigger x helps.".into()],
        };
        let failed = vec![FailedAttempt {
            error: "SEARCH block 1 did not match".into(),
            response: Some("junk".into()),
        }];
        let ctx = PromptContext {
            task: &task,
            parent: &parent,
            grandparent: Some(&grand),
            inspirations: &insp,
            knowledge: &knowledge,
            failed_attempts: &failed,
            mode: EditMode::Diff,
        };
        let b = DefaultPromptBuilder::default();
        let p = b.build(&ctx, &mut crate::engine::rng::seeded(0));
        let order = [
            "# Current Program Metrics",
            "# Evaluator Feedback",
            "# What We Have Learned So Far",
            "# Previous Failed Attempts",
            "# Inspiration Programs",
            "# Current Program\n",
            "# Instructions",
        ];
        let mut last = 0;
        for h in order {
            let at = p.user.find(h).unwrap_or_else(|| panic!("missing {h}"));
            assert!(at >= last, "{h} out of order");
            last = at;
        }
        assert!(
            p.user
                .contains("- combined_score: 0.8000 (parent 0.5000, +0.3000)")
        );
        assert!(p.user.contains("improved over its parent"));
        assert!(p.user.contains("within 30 seconds"));
        let cur = p.user.find("# Current Program\n").unwrap();
        assert!(p.user[cur..].starts_with("# Current Program\n```python\nx = 1\n```"));
        assert!(!p.system.is_empty());
        // The task is part of the stable prefix, not of what changes.
        assert!(p.system.contains("# Task\n") && !p.user.contains("# Task"));
    }

    #[test]
    fn variation_is_seeded() {
        let task = TaskBrief::default();
        let parent = genome(0, 0.1, "a = 1");
        let insp = vec![Arc::new(genome(1, 0.2, "a = 2"))];
        let k = Knowledge::default();
        let ctx = PromptContext {
            task: &task,
            parent: &parent,
            grandparent: None,
            inspirations: &insp,
            knowledge: &k,
            failed_attempts: &[],
            mode: EditMode::Diff,
        };
        let b = DefaultPromptBuilder::new(DefaultPromptParams {
            template_variation: true,
            ..Default::default()
        });
        let a1 = b.build(&ctx, &mut crate::engine::rng::seeded(7)).user;
        let a2 = b.build(&ctx, &mut crate::engine::rng::seeded(7)).user;
        assert_eq!(a1, a2);
        let distinct: std::collections::BTreeSet<String> = (0..20)
            .map(|s| b.build(&ctx, &mut crate::engine::rng::seeded(s)).user)
            .collect();
        assert!(distinct.len() > 1, "variation never varied");
    }
}
