//! A suite's leaderboard, built from its tasks' own leaderboards:
//! `suite.json` (everything, every task's leaderboard included) and
//! `suite.md` (the summary per card, the card × task tables, and each
//! task's cards against its best known value).
//!
//! A card's score over the suite is the mean, over the tasks that name a best
//! known value, of its best value normalised by that value (1.0 = the record,
//! see [`super::value`]); it is taken per seed (the tasks' runs with that
//! seed) and its interval is the bootstrap over seeds, so a card's luck on one
//! seed moves every task's number together, as it does in a run. The score
//! per iteration is the suite's curve.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::report::{self, Leaderboard, percent};
use super::stats::{self, Estimate};
use super::value;

/// The file a finished suite batch writes its leaderboard into.
pub const SUITE_FILE: &str = "suite.json";

/// The seed of the suite score's bootstrap draws (the curve's at iteration
/// `i`: this seed xor `i`).
pub const BOOTSTRAP_SEED: u64 = 0x5017_E5C0;

/// One card over the whole suite.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteCard {
    pub card: String,
    /// The mean normalised best value over the tasks with a best known
    /// value: per seed, then its 95 % interval over seeds.
    pub score: Option<Estimate>,
    /// Tasks in that score (a best known value and runs of this card).
    pub tasks_scored: u64,
    /// Tasks on which at least one run reached the fraction, and the runs
    /// that did, of `runs`.
    pub tasks_reached: u64,
    pub runs_reached: u64,
    pub runs: u64,
    /// Tasks on which the card is better, or worse, than the baseline
    /// (two-sided Mann–Whitney U on the best score at the budget).
    pub better: Vec<String>,
    pub worse: Vec<String>,
    /// Summed over every run of the suite.
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: Option<f64>,
    pub wall_secs: f64,
    /// A run of this card stopped at a token or cost cap.
    pub capped: bool,
    /// The score per iteration 0..=budget (the plotted band).
    pub curve: Vec<Option<Estimate>>,
}

/// The leaderboard of a suite (`suite.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteLeaderboard {
    pub suite: String,
    /// The folder of task folders it was read from (none: a built-in suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_dir: Option<PathBuf>,
    pub model: String,
    pub iterations: u64,
    pub seeds: Vec<u64>,
    pub baseline: String,
    pub target: Option<f64>,
    /// The fraction of each best known value the runs were to reach.
    pub fraction: f64,
    pub bootstrap_seed: u64,
    pub bootstrap_resamples: usize,
    pub batch_wall_secs: f64,
    /// One per card, in the order the cards were given.
    pub cards: Vec<SuiteCard>,
    /// Every task's leaderboard, in the suite's order.
    pub tasks: Vec<Leaderboard>,
}

impl SuiteLeaderboard {
    /// The line of `card` in the leaderboard of task `t`.
    pub fn cell(&self, t: usize, card: &str) -> Option<&report::CardResult> {
        self.tasks.get(t)?.cards.iter().find(|c| c.card == card)
    }
}

/// What a suite batch was, besides its tasks' leaderboards.
pub struct SuiteHeader {
    pub suite: String,
    pub suite_dir: Option<PathBuf>,
    pub model: String,
    pub iterations: u64,
    pub seeds: Vec<u64>,
    pub baseline: String,
    pub target: Option<f64>,
    pub fraction: f64,
    pub batch_wall_secs: f64,
}

/// The suite's leaderboard from its tasks' (`cards`: the cards' names in
/// their order).
pub fn build(header: SuiteHeader, cards: &[String], tasks: Vec<Leaderboard>) -> SuiteLeaderboard {
    let n = header.iterations as usize;
    let summary = cards
        .iter()
        .map(|card| {
            let lines: Vec<(&Leaderboard, &report::CardResult)> = tasks
                .iter()
                .filter_map(|lb| lb.cards.iter().find(|c| &c.card == card).map(|c| (lb, c)))
                .collect();
            // the normalised best of each seed's run on each task with a record, per iteration
            let per_seed_at = |i: usize| -> Vec<Vec<f64>> {
                header
                    .seeds
                    .iter()
                    .map(|&seed| {
                        lines
                            .iter()
                            .filter_map(|(lb, c)| {
                                let record = lb.record.as_ref()?;
                                let run = c.runs.iter().find(|r| r.seed == seed)?;
                                Some(run.value.as_ref()?.normalised_at(record, i))
                            })
                            .collect()
                    })
                    .filter(|v: &Vec<f64>| !v.is_empty())
                    .collect()
            };
            let values: Vec<&value::ValueStats> =
                lines.iter().filter_map(|(_, c)| c.value.as_ref()).collect();
            let verdict = |word: &str| -> Vec<String> {
                lines
                    .iter()
                    .filter(|(_, c)| c.vs_baseline.as_ref().is_some_and(|v| v.verdict == word))
                    .map(|(lb, _)| lb.task.clone())
                    .collect()
            };
            let costs: Vec<f64> = lines.iter().filter_map(|(_, c)| c.cost_usd).collect();
            SuiteCard {
                card: card.clone(),
                score: value::score_over_seeds(&per_seed_at(n), BOOTSTRAP_SEED),
                tasks_scored: lines
                    .iter()
                    .filter(|(lb, c)| {
                        lb.record.is_some() && c.value.as_ref().is_some_and(|v| v.runs > 0)
                    })
                    .count() as u64,
                tasks_reached: values.iter().filter(|v| v.reached > 0).count() as u64,
                runs_reached: values.iter().map(|v| v.reached).sum(),
                runs: values.iter().map(|v| v.runs).sum(),
                better: verdict("better"),
                worse: verdict("worse"),
                calls: lines.iter().map(|(_, c)| c.calls).sum(),
                prompt_tokens: lines.iter().map(|(_, c)| c.prompt_tokens).sum(),
                completion_tokens: lines.iter().map(|(_, c)| c.completion_tokens).sum(),
                cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
                wall_secs: lines.iter().map(|(_, c)| c.wall_secs).sum(),
                capped: lines.iter().any(|(_, c)| c.capped),
                curve: (0..=n)
                    .map(|i| value::score_over_seeds(&per_seed_at(i), BOOTSTRAP_SEED ^ i as u64))
                    .collect(),
            }
        })
        .collect();
    SuiteLeaderboard {
        suite: header.suite,
        suite_dir: header.suite_dir,
        model: header.model,
        iterations: header.iterations,
        seeds: header.seeds,
        baseline: header.baseline,
        target: header.target,
        fraction: header.fraction,
        bootstrap_seed: BOOTSTRAP_SEED,
        bootstrap_resamples: stats::BOOTSTRAP_RESAMPLES,
        batch_wall_secs: header.batch_wall_secs,
        cards: summary,
        tasks,
    }
}

fn seeds_text(seeds: &[u64]) -> String {
    seeds
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary table: one line per card.
pub fn summary_table(sl: &SuiteLeaderboard) -> String {
    let p = percent(sl.fraction);
    let mut s = format!(
        "| card | score | 95 % CI | tasks reaching {p} | runs reaching {p} | vs `{}`: better / worse | model calls | tokens | cost | wall s |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        sl.baseline
    );
    for c in &sl.cards {
        let name = if c.capped {
            format!("{} (capped)", c.card)
        } else {
            c.card.clone()
        };
        let vs = if c.card == sl.baseline {
            "baseline".to_owned()
        } else {
            format!("{} / {}", c.better.len(), c.worse.len())
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {}/{} | {}/{} | {vs} | {} | {} | {} | {:.1} |",
            c.score
                .map_or_else(|| "–".to_owned(), |e| format!("{:.4}", e.mean)),
            c.score.map_or_else(
                || "–".to_owned(),
                |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high)
            ),
            c.tasks_reached,
            c.tasks_scored,
            c.runs_reached,
            c.runs,
            c.calls,
            c.prompt_tokens + c.completion_tokens,
            c.cost_usd
                .map_or_else(|| "–".to_owned(), |v| format!("${v:.4}")),
            c.wall_secs
        );
    }
    s
}

/// A card × task table: one line per task (its direction and record first),
/// one column per card, each cell `cell(task's leaderboard, card's line)`.
pub fn matrix(
    sl: &SuiteLeaderboard,
    cell: &dyn Fn(&Leaderboard, &report::CardResult) -> String,
) -> String {
    let mut s = String::from("| task | direction | best known |");
    for c in &sl.cards {
        let _ = write!(s, " {} |", c.card);
    }
    s.push_str("\n|---|---|---|");
    for _ in &sl.cards {
        s.push_str("---|");
    }
    s.push('\n');
    for lb in &sl.tasks {
        let (dir, record) = lb.record.as_ref().map_or_else(
            || ("–".to_owned(), "–".to_owned()),
            |r| (r.direction_word().to_owned(), value::fmt_value(r.value)),
        );
        let _ = write!(s, "| {} | {dir} | {record} |", lb.task);
        for c in &sl.cards {
            let text = lb
                .cards
                .iter()
                .find(|l| l.card == c.card)
                .map_or_else(|| "–".to_owned(), |l| cell(lb, l));
            let _ = write!(s, " {text} |");
        }
        s.push('\n');
    }
    s
}

/// The cell of the best value table: the mean best value over seeds.
pub fn best_value_cell(_: &Leaderboard, c: &report::CardResult) -> String {
    match &c.value {
        Some(v) => v.best.map_or_else(
            || "no valid program".to_owned(),
            |e| format!("{:.6}", e.mean),
        ),
        // no record: the best score (fitness)
        None => c
            .best
            .map_or_else(|| "–".to_owned(), |e| format!("{:.4} (score)", e.mean)),
    }
}

/// The cell of the gap table: the mean gap to the record.
pub fn gap_cell(_: &Leaderboard, c: &report::CardResult) -> String {
    c.value
        .as_ref()
        .and_then(|v| v.gap)
        .map_or_else(|| "–".to_owned(), |e| format!("{:.6}", e.mean))
}

/// The cell of the model-calls table: the mean calls to reach the fraction
/// over the runs that did, or "not reached".
pub fn calls_cell(_: &Leaderboard, c: &report::CardResult) -> String {
    c.value.as_ref().map_or_else(
        || "–".to_owned(),
        |v| match v.calls_to_reach {
            _ if v.reached == 0 => "not reached".to_owned(),
            Some(e) if v.reached == v.runs => format!("{:.1}", e.mean),
            Some(e) => format!("{:.1} ({}/{})", e.mean, v.reached, v.runs),
            None => "–".to_owned(),
        },
    )
}

/// `suite.md`.
pub fn markdown(sl: &SuiteLeaderboard) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Suite leaderboard: {}\n", sl.suite);
    let _ = writeln!(
        s,
        "Every card ran {} iterations on each of the {} tasks of `{}` with seeds {} and the model {}.\n",
        sl.iterations,
        sl.tasks.len(),
        sl.suite,
        seeds_text(&sl.seeds),
        sl.model
    );
    let p = percent(sl.fraction);
    s.push_str(&summary_table(sl));
    let _ = writeln!(
        s,
        "\nscore: per seed, the mean over the tasks with a best known value of the best value at {n} normalised \
         by it (value / best known when higher is better, best known / value when lower is: 1.0 is the record; a \
         run without a valid program scores 0); the mean over seeds and its 95 % bootstrap interval ({r} resamples, \
         seed {seed:#x}). Reaching {p}: the best value normalised at least {f}. vs `{b}`: the tasks on which the \
         card is better or worse than `{b}` (two-sided Mann–Whitney U on the best score at {n}, α = {a}).\n",
        n = sl.iterations,
        r = sl.bootstrap_resamples,
        seed = sl.bootstrap_seed,
        f = sl.fraction,
        b = sl.baseline,
        a = stats::ALPHA,
    );
    let _ = writeln!(
        s,
        "## Best value at {}\n\nThe mean over seeds, in the units the papers print (a task without a best known \
         value: its best score).\n",
        sl.iterations
    );
    s.push_str(&matrix(sl, &best_value_cell));
    s.push_str(
        "\n## Gap to the best known value\n\nbest known − value when higher is better, value − best known when \
         lower is (negative: beyond the record); the mean over the seeds with a valid program.\n\n",
    );
    s.push_str(&matrix(sl, &gap_cell));
    let _ = writeln!(
        s,
        "\n## Model calls to reach {p} of the best known value\n\nThe mean over the runs that reached it (how \
         many did, when not all), or not reached.\n"
    );
    s.push_str(&matrix(sl, &calls_cell));
    let _ = writeln!(
        s,
        "\n## Tasks\n\nEach card's best value at {n} (mean over the seeds with a valid program, 95 % bootstrap \
         interval, and the best of the seeds), its gap to the best known value, the best normalised by it, the runs \
         whose best reached {p} of it, and over those runs the model calls, tokens and cost until the first iteration \
         that did. Every task's own leaderboard (scores, curves, runs) is `<task>/leaderboard.md`.",
        n = sl.iterations
    );
    for lb in &sl.tasks {
        let _ = writeln!(s, "\n### {}\n", lb.task);
        match (report::record_table(lb), &lb.record) {
            (Some(table), Some(record)) => {
                let _ = writeln!(
                    s,
                    "Best known: {} ({}{}).\n",
                    value::fmt_value(record.value),
                    if record.direction == crate::engine::genome::Direction::Max {
                        "higher is better"
                    } else {
                        "lower is better"
                    },
                    if record.source.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", record.source)
                    }
                );
                s.push_str(&table);
            }
            _ => {
                s.push_str("No best known value (its config has no `best_known`): the best score at the budget.\n\n| card | best (mean) | 95 % CI |\n|---|---|---|\n");
                for c in &lb.cards {
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} |",
                        c.card,
                        c.best
                            .map_or_else(|| "–".to_owned(), |e| format!("{:.4}", e.mean)),
                        c.best.map_or_else(
                            || "–".to_owned(),
                            |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high)
                        )
                    );
                }
            }
        }
    }
    if sl.cards.iter().any(|c| c.capped) {
        s.push_str(
            "\n(capped): a run of this card stopped at its token or cost cap before the budget.\n",
        );
    }
    s
}

/// Read a suite leaderboard: a suite batch folder's `suite.json`, or that
/// file itself.
pub fn read_suite(path: &Path) -> Result<(PathBuf, SuiteLeaderboard), String> {
    let file = if path.is_dir() {
        path.join(SUITE_FILE)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let sl: SuiteLeaderboard = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a suite leaderboard: {e}", file.display()))?;
    Ok((file, sl))
}

/// A hub README's "Results" section for `card` from a suite leaderboard.
pub fn results_section(file: &Path, sl: &SuiteLeaderboard, card: &str) -> Result<String, String> {
    let Some(mine) = sl.cards.iter().find(|c| c.card == card) else {
        return Err(format!(
            "{}: the card `{card}` is not on this leaderboard (it has {})",
            file.display(),
            sl.cards
                .iter()
                .map(|c| c.card.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let full = markdown(sl);
    let body = full
        .split_once('\n')
        .map_or(full.as_str(), |(_, rest)| rest)
        .trim();
    let mut s = String::from("## Results\n\n");
    let _ = writeln!(
        s,
        "On the suite `{}` ({} tasks), {} iterations per run, seeds {}, model {}: `{card}` scored {} (the mean \
         normalised best value, 95 % CI {}) and reached {} of the best known value on {} of {} tasks.\n",
        sl.suite,
        sl.tasks.len(),
        sl.iterations,
        seeds_text(&sl.seeds),
        sl.model,
        mine.score
            .map_or_else(|| "–".to_owned(), |e| format!("{:.4}", e.mean)),
        mine.score.map_or_else(
            || "–".to_owned(),
            |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high)
        ),
        percent(sl.fraction),
        mine.tasks_reached,
        mine.tasks_scored,
    );
    s.push_str(body);
    s.push('\n');
    Ok(s)
}
