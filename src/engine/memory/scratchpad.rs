//! `ScratchpadMemory`: ShinkaEvolve's meta-scratchpad. Every `interval`
//! iterations one model call reads the previous scratchpad plus what happened
//! since (improvements with their diffs and scores, failures with their
//! errors, changes that did not help) and rewrites a rolling scratchpad of
//! what worked, what failed and what to try next, capped at `max_chars`. The
//! default prompt builder renders it under "What We Have Learned So Far".
//!
//! A reply that is not a usable summary (a failed call, an edit instead of
//! prose, no bullet points) keeps the model's previous insights and adds a
//! deterministic statistics summary of the same window, so the scratchpad is
//! never empty after the first interval. The built-in offline model cannot
//! summarise, so with it only the statistics summary is written (no call).
//! The whole state is checkpointed so a resumed run keeps its scratchpad.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Knowledge, Memory, MemoryQuery};
use crate::engine::component::{BuildContext, Component, ComponentInfo, RestoreError};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::model::{LanguageModel, ModelRequest};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::population::Population;

/// Parameters of [`ScratchpadMemory`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScratchpadParams {
    /// Rewrite the scratchpad after every this many iterations.
    pub interval: u64,
    /// The scratchpad is cut to at most this many characters.
    pub max_chars: u64,
    /// How many improvements / failures / non-improvements the summary sees.
    pub max_examples: u64,
}

impl Default for ScratchpadParams {
    fn default() -> Self {
        Self {
            interval: 10,
            max_chars: 3000,
            max_examples: 5,
        }
    }
}

const SPECS: [ParamSpec; 3] = [
    ParamSpec {
        key: "interval",
        doc: "Summarise what worked and what failed after every this many iterations (one \
              model call each time)",
        ty: ParamType::Int {
            min: 1,
            max: 1_000_000,
        },
    },
    ParamSpec {
        key: "max_chars",
        doc: "Maximum length of the rolling scratchpad shown in every prompt",
        ty: ParamType::Int {
            min: 200,
            max: 100_000,
        },
    },
    ParamSpec {
        key: "max_examples",
        doc: "How many recent improvements, failures and non-improvements (each) the summary \
              call is shown",
        ty: ParamType::Int { min: 1, max: 50 },
    },
];

/// The system message of the summary call.
const SYSTEM: &str = "You keep the research notebook of an automated evolutionary search that \
improves a program with an LLM. You read what happened recently and rewrite a short, factual \
scratchpad that the next proposals will read. Write plain prose bullet points, never code edits.";

/// Upper bound on genome ids remembered between two summaries.
const WINDOW_CAP: usize = 2000;

/// What is persisted (and restored) across a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct State {
    /// Iterations seen so far.
    iterations: u64,
    /// The last usable summary written by the model.
    insights: String,
    /// The statistics summary used when the last call gave nothing usable.
    fallback: Option<String>,
    /// Genomes admitted since the last summary.
    window: Vec<GenomeId>,
    /// Summaries written so far.
    summaries: u64,
}

/// The meta-scratchpad memory (card kind `scratchpad`).
pub struct ScratchpadMemory {
    model: Arc<dyn LanguageModel>,
    params: ScratchpadParams,
    task: String,
    state: State,
}

impl std::fmt::Debug for ScratchpadMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScratchpadMemory")
            .field("model", &self.model.describe())
            .field("params", &self.params)
            .field("state", &self.state)
            .finish()
    }
}

/// `text` cut to at most `max` characters, at a line break when one is near.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(4)).collect();
    let keep = match cut.rfind('\n') {
        Some(i) if i * 4 >= cut.len() * 3 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}\n...", keep.trim_end())
}

fn one_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    truncate(line, max).replace('\n', " ")
}

fn fmt_score(s: f64) -> String {
    format!("{s:.4}")
}

/// The changed lines of a unified diff, as `old → new` pairs on one line.
fn describe_diff(diff: &str, max: usize) -> String {
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for line in diff.lines() {
        if line.starts_with("---") || line.starts_with("+++") {
            continue;
        }
        if let Some(l) = line.strip_prefix('-') {
            if !l.trim().is_empty() {
                removed.push(l.trim().to_owned());
            }
        } else if let Some(l) = line.strip_prefix('+')
            && !l.trim().is_empty()
        {
            added.push(l.trim().to_owned());
        }
    }
    let text = match (removed.is_empty(), added.is_empty()) {
        (true, true) => "no visible change".to_owned(),
        (false, true) => format!("removed `{}`", removed.join("; ")),
        (true, false) => format!("added `{}`", added.join("; ")),
        (false, false) => format!("`{}` → `{}`", removed.join("; "), added.join("; ")),
    };
    one_line(&text, max)
}

/// Whether a model reply can serve as the scratchpad: prose with at least
/// one bullet or heading, no SEARCH/REPLACE edit, some substance.
fn usable_summary(reply: &str) -> Option<String> {
    if reply.contains("<<<<<<< SEARCH") || reply.contains(">>>>>>> REPLACE") {
        return None;
    }
    let mut prose = String::new();
    let mut in_fence = false;
    for line in reply.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let prose = prose.trim();
    let structured = prose.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with("- ")
            || t.starts_with("* ")
            || t.starts_with('#')
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    });
    (prose.chars().count() >= 40 && structured).then(|| prose.to_owned())
}

/// One genome of the window, classified against its parent.
struct Outcome {
    genome: Arc<Genome>,
    parent_score: Option<f64>,
}

impl Outcome {
    fn gain(&self) -> Option<f64> {
        Some(self.genome.fitness()? - self.parent_score?)
    }
}

impl Component for ScratchpadMemory {
    type Slot = dyn Memory;
    type Params = ScratchpadParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "scratchpad",
        type_name: "ScratchpadMemory",
        summary: "Every N iterations a model call rewrites a rolling scratchpad of what worked \
                  and what failed (ShinkaEvolve meta-scratchpad)",
        params: &SPECS,
    };

    fn build(params: ScratchpadParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self::new(
            Arc::clone(&ctx.model),
            params,
            ctx.task.summary_text(),
        ))
    }
}

impl ScratchpadMemory {
    /// A scratchpad over `model` for a task described by `task`.
    pub fn new(model: Arc<dyn LanguageModel>, params: ScratchpadParams, task: &str) -> Self {
        Self {
            model,
            params,
            task: truncate(task, 1500),
            state: State::default(),
        }
    }

    /// The scratchpad text as the prompt shows it (empty before the first
    /// summary).
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(stats) = &self.state.fallback {
            out.push_str(stats);
            if !self.state.insights.trim().is_empty() {
                let _ = write!(out, "\n\nEarlier insights:\n{}", self.state.insights.trim());
            }
        } else {
            out.push_str(self.state.insights.trim());
        }
        truncate(&out, self.max_chars())
    }

    /// Summaries written so far.
    pub fn summaries(&self) -> u64 {
        self.state.summaries
    }

    fn max_chars(&self) -> usize {
        usize::try_from(self.params.max_chars).unwrap_or(usize::MAX)
    }

    fn max_examples(&self) -> usize {
        usize::try_from(self.params.max_examples).unwrap_or(usize::MAX)
    }

    /// The window's genomes with their parents' scores, in admission order.
    fn outcomes(&self, population: &dyn Population) -> Vec<Outcome> {
        self.state
            .window
            .iter()
            .filter_map(|id| population.get(*id))
            .map(|genome| {
                let parent_score = genome
                    .parent_id
                    .and_then(|p| population.get(p))
                    .and_then(|p| p.fitness());
                Outcome {
                    genome,
                    parent_score,
                }
            })
            .collect()
    }

    /// (improvements best first, failures newest first, non-improvements).
    fn classify<'a>(
        &self,
        outcomes: &'a [Outcome],
    ) -> (Vec<&'a Outcome>, Vec<&'a Outcome>, Vec<&'a Outcome>) {
        let k = self.max_examples();
        let mut better: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.gain().is_some_and(|g| g > 0.0))
            .collect();
        better.sort_by(|a, b| b.gain().unwrap_or(0.0).total_cmp(&a.gain().unwrap_or(0.0)));
        better.truncate(k);
        let failed: Vec<&Outcome> = outcomes
            .iter()
            .rev()
            .filter(|o| !o.genome.valid)
            .take(k)
            .collect();
        let flat: Vec<&Outcome> = outcomes
            .iter()
            .rev()
            .filter(|o| o.genome.valid && o.gain().is_some_and(|g| g <= 0.0))
            .take(k)
            .collect();
        (better, failed, flat)
    }

    /// The deterministic statistics summary of the window.
    fn statistics(&self, outcomes: &[Outcome], population: &dyn Population) -> String {
        let (better, failed, flat) = self.classify(outcomes);
        let valid = outcomes.iter().filter(|o| o.genome.valid).count();
        let improved = outcomes
            .iter()
            .filter(|o| o.gain().is_some_and(|g| g > 0.0))
            .count();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Scratchpad after iteration {} (statistics of the last {} iterations):",
            self.state.iterations,
            self.params.interval.min(self.state.iterations)
        );
        let _ = writeln!(
            s,
            "- {} candidates: {valid} valid, {improved} improved on their parent, {} failed.",
            outcomes.len(),
            outcomes.len() - valid
        );
        if let Some(best) = population.best() {
            let _ = writeln!(
                s,
                "- Best so far: #{} with combined_score {}.",
                best.id,
                best.fitness().map_or_else(|| "?".to_owned(), fmt_score)
            );
        }
        if !better.is_empty() {
            let _ = writeln!(s, "What worked:");
            for o in better {
                let _ = writeln!(
                    s,
                    "- #{} (+{}, {}): {}",
                    o.genome.id,
                    fmt_score(o.gain().unwrap_or(0.0)),
                    if o.genome.metadata.patch_type.is_empty() {
                        "edit"
                    } else {
                        o.genome.metadata.patch_type.as_str()
                    },
                    describe_diff(o.genome.diff.as_deref().unwrap_or(""), 160)
                );
            }
        }
        if !flat.is_empty() {
            let _ = writeln!(s, "Did not help:");
            for o in flat {
                let _ = writeln!(
                    s,
                    "- #{} ({}): {}",
                    o.genome.id,
                    fmt_score(o.gain().unwrap_or(0.0)),
                    describe_diff(o.genome.diff.as_deref().unwrap_or(""), 160)
                );
            }
        }
        if !failed.is_empty() {
            let _ = writeln!(s, "What failed:");
            for o in failed {
                let _ = writeln!(
                    s,
                    "- #{}: {}",
                    o.genome.id,
                    one_line(o.genome.error.as_deref().unwrap_or("invalid"), 160)
                );
            }
        }
        s.trim_end().to_owned()
    }

    /// The user message of the summary call.
    fn summary_prompt(&self, outcomes: &[Outcome], population: &dyn Population) -> String {
        let (better, failed, flat) = self.classify(outcomes);
        let mut u = String::new();
        let _ = writeln!(u, "# Task\n{}\n", self.task.trim());
        let _ = writeln!(
            u,
            "# Current Scratchpad\n{}\n",
            if self.text().trim().is_empty() {
                "(empty: this is the first summary)".to_owned()
            } else {
                self.text()
            }
        );
        let _ = writeln!(
            u,
            "# Last {} Iterations\n{} candidates, {} valid.",
            self.params.interval.min(self.state.iterations),
            outcomes.len(),
            outcomes.iter().filter(|o| o.genome.valid).count()
        );
        if let Some(best) = population.best() {
            let _ = writeln!(
                u,
                "Best so far: #{} (combined_score {}).",
                best.id,
                best.fitness().map_or_else(|| "?".to_owned(), fmt_score)
            );
        }
        u.push('\n');
        let metrics = |g: &Genome| {
            g.scores
                .iter()
                .map(|(k, v)| format!("{k}={v:.4}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(u, "## Improvements (child beat its parent)");
        if better.is_empty() {
            let _ = writeln!(u, "(none)");
        }
        for o in better {
            let _ = writeln!(
                u,
                "### #{} ({}, {} → {}; {})",
                o.genome.id,
                o.genome.metadata.patch_type,
                o.parent_score.map_or_else(|| "?".to_owned(), fmt_score),
                o.genome.fitness().map_or_else(|| "?".to_owned(), fmt_score),
                metrics(&o.genome)
            );
            let _ = writeln!(
                u,
                "```diff\n{}\n```",
                truncate(o.genome.diff.as_deref().unwrap_or("").trim_end(), 1200)
            );
        }
        let _ = writeln!(u, "\n## Changes That Did Not Help");
        if flat.is_empty() {
            let _ = writeln!(u, "(none)");
        }
        for o in flat {
            let _ = writeln!(
                u,
                "- #{} ({}): {}",
                o.genome.id,
                fmt_score(o.gain().unwrap_or(0.0)),
                describe_diff(o.genome.diff.as_deref().unwrap_or(""), 300)
            );
        }
        let _ = writeln!(u, "\n## Failures");
        if failed.is_empty() {
            let _ = writeln!(u, "(none)");
        }
        for o in failed {
            let _ = writeln!(
                u,
                "- #{}: {}",
                o.genome.id,
                truncate(o.genome.error.as_deref().unwrap_or("invalid").trim(), 400)
            );
        }
        let _ = writeln!(
            u,
            "\n# Instructions\nRewrite the scratchpad, keeping earlier insights that still hold. \
             Use three short bullet lists headed `## What worked`, `## What failed` and \
             `## Ideas to try next`. Be specific (name the constants, functions and techniques). \
             At most {} characters. Reply with the scratchpad text only, no code edits.",
            self.params.max_chars
        );
        u
    }

    /// Write a new scratchpad from the window; true when the text changed.
    async fn summarise(&mut self, population: &dyn Population) -> bool {
        let before = self.text();
        let outcomes = self.outcomes(population);
        let reply = if self.model.is_offline() {
            None
        } else {
            let request = ModelRequest {
                system: SYSTEM.to_owned(),
                user: self.summary_prompt(&outcomes, population),
                seed: 0x5C4A_7C9A_D000_0000 ^ self.state.iterations,
            };
            self.model
                .complete(&request)
                .await
                .ok()
                .and_then(|r| usable_summary(&r.text))
        };
        match reply {
            Some(text) => {
                self.state.insights = truncate(&text, self.max_chars());
                self.state.fallback = None;
            }
            None => {
                self.state.fallback = Some(self.statistics(&outcomes, population));
            }
        }
        self.state.window.clear();
        self.state.summaries += 1;
        self.text() != before
    }
}

#[async_trait::async_trait]
impl Memory for ScratchpadMemory {
    /// The scratchpad, cut to the query's `max_chars` when it asks for less.
    fn read(&self, query: &MemoryQuery) -> Knowledge {
        let mut text = self.text();
        if let Some(max) = query.max_chars.filter(|m| *m < self.max_chars()) {
            text = truncate(&text, max);
        }
        Knowledge {
            notes: if text.trim().is_empty() {
                Vec::new()
            } else {
                vec![text]
            },
        }
    }

    /// Notes written from outside (e.g. by a user) become the insights.
    fn write(&mut self, knowledge: Knowledge) {
        self.state.insights = truncate(&knowledge.notes.join("\n\n"), self.max_chars());
        self.state.fallback = None;
    }

    async fn after_iteration(
        &mut self,
        admitted: &[Arc<Genome>],
        population: &dyn Population,
    ) -> bool {
        self.state.iterations += 1;
        self.state.window.extend(admitted.iter().map(|g| g.id));
        if self.state.window.len() > WINDOW_CAP {
            let excess = self.state.window.len() - WINDOW_CAP;
            self.state.window.drain(..excess);
        }
        if !self
            .state
            .iterations
            .is_multiple_of(self.params.interval.max(1))
        {
            return false;
        }
        self.summarise(population).await
    }

    fn checkpoint(&self) -> serde_json::Value {
        serde_json::to_value(&self.state).unwrap_or(serde_json::Value::Null)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), RestoreError> {
        if state.is_null() {
            return Ok(());
        }
        self.state = serde_json::from_value(state.clone())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::FITNESS_KEY;
    use crate::engine::model::OfflineModel;
    use crate::engine::population::{InMemoryParams, InMemoryPopulation};
    use crate::engine::testing::ScriptedModel;

    /// The shared scripted model, from `Ok` texts and `Err` failures.
    fn notebook(replies: &[Result<&str, &str>]) -> Arc<ScriptedModel> {
        Arc::new(ScriptedModel::new(
            replies
                .iter()
                .map(|r| r.map(str::to_owned).map_err(str::to_owned))
                .collect(),
        ))
    }

    fn genome(id: GenomeId, parent: Option<GenomeId>, score: Option<f64>) -> Arc<Genome> {
        let mut g = Genome {
            id,
            parent_id: parent,
            valid: score.is_some(),
            content: format!("x = {id}").into(),
            diff: parent.map(|p| format!("--- parent\n+++ child\n-x = {p}\n+x = {id}\n")),
            error: score
                .is_none()
                .then(|| format!("Traceback: boom {id}\nmore")),
            ..Genome::default()
        };
        g.metadata.patch_type = "diff".into();
        if let Some(s) = score {
            g.scores.insert(FITNESS_KEY.into(), s);
        }
        Arc::new(g)
    }

    /// Feeds `n` iterations: genome i is a child of i-1 scoring i/100, every
    /// third one invalid. Returns the iterations after which `changed` held.
    async fn feed(
        memory: &mut ScratchpadMemory,
        pop: &mut InMemoryPopulation,
        from: u64,
        n: u64,
    ) -> Vec<u64> {
        let mut changed = Vec::new();
        for i in from..from + n {
            let g = genome(i, Some(i - 1), (i % 3 != 0).then_some(i as f64 / 100.0));
            pop.add(Arc::clone(&g));
            if memory.after_iteration(&[g], pop).await {
                changed.push(i);
            }
        }
        changed
    }

    fn start() -> InMemoryPopulation {
        let mut pop = InMemoryPopulation::new(InMemoryParams::default());
        pop.add(genome(0, None, Some(0.0)));
        pop
    }

    #[tokio::test]
    async fn model_summary_is_written_on_schedule_and_rolls() {
        let model = notebook(&[
            Ok("## What worked\n- raising x helped a lot\n## What failed\n- #3 crashed"),
            Ok("## What worked\n- x keeps rising; second summary"),
        ]);
        let mut memory = ScratchpadMemory::new(
            Arc::clone(&model) as Arc<dyn LanguageModel>,
            ScratchpadParams {
                interval: 4,
                ..ScratchpadParams::default()
            },
            "Maximise x.",
        );
        let mut pop = start();
        assert!(memory.read(&MemoryQuery::all()).is_empty());
        let changed = feed(&mut memory, &mut pop, 1, 8).await;
        assert_eq!(changed, vec![4, 8]);
        assert_eq!(memory.summaries(), 2);
        assert_eq!(
            memory.read(&MemoryQuery::all()).notes,
            vec!["## What worked\n- x keeps rising; second summary".to_owned()]
        );
        // a reader asking for less gets it cut
        let short = MemoryQuery {
            max_chars: Some(20),
            ..MemoryQuery::all()
        };
        assert_eq!(
            memory.read(&short).notes,
            vec!["## What worked\n...".to_owned()]
        );
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        let first = &seen[0].user;
        assert!(
            first.contains("Maximise x.") && first.contains("first summary"),
            "{first}"
        );
        assert!(first.contains("### #2 (diff, 0.0100 → 0.0200"), "{first}");
        assert!(first.contains("- #3: Traceback: boom 3"), "{first}");
        // the second call sees the first scratchpad and only the new window
        assert!(seen[1].user.contains("raising x helped a lot"));
        assert!(seen[1].user.contains("### #8 (") && !seen[1].user.contains("### #2 ("));
    }

    #[tokio::test]
    async fn unusable_replies_fall_back_to_statistics_and_keep_insights() {
        let model = notebook(&[
            Ok("- good: a real summary with enough words in it"),
            Ok("<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"),
            Err("HTTP 500"),
        ]);
        let mut memory = ScratchpadMemory::new(
            model,
            ScratchpadParams {
                interval: 3,
                ..ScratchpadParams::default()
            },
            "t",
        );
        let mut pop = start();
        assert_eq!(feed(&mut memory, &mut pop, 1, 3).await, vec![3]);
        assert_eq!(
            memory.text(),
            "- good: a real summary with enough words in it"
        );
        assert_eq!(feed(&mut memory, &mut pop, 4, 3).await, vec![6]);
        let text = memory.text();
        assert!(text.starts_with("Scratchpad after iteration 6"), "{text}");
        assert!(text.contains("3 candidates: 2 valid, 1 improved"), "{text}");
        assert!(
            text.contains("- #5 (+0.0100, diff): `x = 4` → `x = 5`"),
            "{text}"
        );
        assert!(
            text.contains("What failed:\n- #6: Traceback: boom 6"),
            "{text}"
        );
        assert!(
            text.ends_with("Earlier insights:\n- good: a real summary with enough words in it")
        );
        // a failed call: statistics again, still not empty
        assert_eq!(feed(&mut memory, &mut pop, 7, 3).await, vec![9]);
        assert!(memory.text().starts_with("Scratchpad after iteration 9"));
    }

    #[tokio::test]
    async fn offline_model_gets_no_call_but_a_statistics_scratchpad() {
        let mut memory = ScratchpadMemory::new(
            Arc::new(OfflineModel::new()),
            ScratchpadParams {
                interval: 2,
                max_chars: 200,
                ..ScratchpadParams::default()
            },
            "t",
        );
        let mut pop = start();
        assert_eq!(feed(&mut memory, &mut pop, 1, 6).await, vec![2, 4, 6]);
        let text = memory.text();
        assert!(text.chars().count() <= 200, "{text}");
        assert!(text.contains("Best so far: #5"), "{text}");
    }

    #[tokio::test]
    async fn checkpoint_restore_keeps_the_scratchpad_and_schedule() {
        let model = notebook(&[Ok("- insight one: keep x growing steadily\n- more")]);
        let params = ScratchpadParams {
            interval: 5,
            ..ScratchpadParams::default()
        };
        let mut memory = ScratchpadMemory::new(
            Arc::clone(&model) as Arc<dyn LanguageModel>,
            params.clone(),
            "t",
        );
        let mut pop = start();
        feed(&mut memory, &mut pop, 1, 7).await;
        let saved = memory.checkpoint();
        let mut resumed =
            ScratchpadMemory::new(Arc::clone(&model) as Arc<dyn LanguageModel>, params, "t");
        resumed.restore(&saved).unwrap();
        assert_eq!(
            resumed.read(&MemoryQuery::all()),
            memory.read(&MemoryQuery::all())
        );
        assert!(!resumed.read(&MemoryQuery::all()).is_empty());
        // the schedule continues: the next summary is after iteration 10
        assert_eq!(feed(&mut resumed, &mut pop, 8, 3).await, Vec::<u64>::new());
        assert_eq!(resumed.summaries(), 2);
        let last = model.seen.lock().unwrap().last().unwrap().user.clone();
        assert!(
            last.contains("- #6: Traceback: boom 6") && last.contains("### #8 ("),
            "the restored window reaches the summary: {last}"
        );
        assert!(
            resumed
                .restore(&serde_json::json!({"iterations": "x"}))
                .is_err()
        );
    }

    #[test]
    fn helpers() {
        assert!(usable_summary("ok").is_none());
        assert!(
            usable_summary("I could not find the current program in the prompt at all.").is_none()
        );
        assert!(usable_summary("1. Use a hexagonal layout for the outer ring circles").is_some());
        assert_eq!(truncate("abc", 10), "abc");
        assert!(truncate(&"line\n".repeat(100), 50).chars().count() <= 50);
        assert_eq!(describe_diff("-a = 1\n+a = 2\n", 100), "`a = 1` → `a = 2`");
    }
}
