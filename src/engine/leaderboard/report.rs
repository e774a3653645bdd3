//! The leaderboard itself, read from the runs' own archives:
//! `leaderboard.json` (everything) and `leaderboard.md` (the table and the
//! comparison with the baseline in words).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::hypervolume;
pub use super::stats::Estimate;
use super::stats::{self, Comparison, estimate};
use super::value::{self, Goal, Record, ValueStats, ValueTrack};
use crate::engine::archive::Archive;
use crate::engine::genome::Objective;

/// The seed of every bootstrap draw of a leaderboard (one fixed seed, so the
/// same runs give the same intervals).
pub const BOOTSTRAP_SEED: u64 = 0x1EAD_B0A2;

/// One run, as its archive has it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub seed: u64,
    pub dir: PathBuf,
    /// The run's status as recorded ("completed", "budget reached (...)").
    pub status: String,
    pub iterations_done: u64,
    /// Best fitness among valid genomes of iterations 0..=i, for i in
    /// 0..=budget (`None` before the first valid genome; the last value is
    /// carried past the iterations a run did not reach).
    pub best_so_far: Vec<Option<f64>>,
    pub best: Option<f64>,
    pub genomes: u64,
    pub valid: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: Option<f64>,
    /// Wall time of the run as its summary says (the last invocation's, for a
    /// resumed run).
    pub wall_secs: Option<f64>,
    /// First iteration whose best-so-far reached the target.
    pub reached_target_at: Option<u64>,
    /// The run stopped at its token or cost cap (`general.max_tokens`,
    /// `general.max_cost_usd`) before the budget.
    #[serde(default)]
    pub capped: bool,
    /// The run ended by a rule of its card's `general.stop` (target score,
    /// patience, cost or wall-time cap) before the budget; its best so far
    /// is carried to the budget.
    #[serde(default)]
    pub stopped_early: bool,
    /// The hypervolume of the run's valid genomes of iterations 0..=i over
    /// the batch's objectives, for i in 0..=budget (empty for a
    /// single-objective batch or without a reference point).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hypervolume_so_far: Vec<f64>,
    /// Model calls the run made (programs a model proposed).
    #[serde(default)]
    pub calls: u64,
    /// The task's raw objective through the run, when the task names its
    /// best known value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ValueTrack>,
}

/// One card's line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CardResult {
    pub card: String,
    pub runs: Vec<RunResult>,
    /// Best score at the budget: mean with CI, and median (runs with a valid
    /// genome only).
    pub best: Option<Estimate>,
    pub best_median: Option<f64>,
    /// Mean best-so-far at N/4, N/2 and N.
    pub at_quarter: Option<f64>,
    pub at_half: Option<f64>,
    pub at_budget: Option<f64>,
    /// Mean best-so-far per iteration 0..=N with its CI (the plotted band).
    pub curve: Vec<Option<Estimate>>,
    /// Runs that reached the target, and the mean iteration they did it at.
    pub reached_target: u64,
    pub mean_iterations_to_target: Option<f64>,
    pub valid_percent: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: Option<f64>,
    pub wall_secs: f64,
    /// A run of this card stopped at a token or cost cap before the budget.
    pub capped: bool,
    /// Runs that ended by their card's `general.stop` before the budget, and
    /// the mean number of iterations the runs did (what early stopping saves).
    #[serde(default)]
    pub stopped_early: u64,
    #[serde(default)]
    pub mean_iterations_run: Option<f64>,
    /// Hypervolume at the budget (mean with CI over runs) and its mean per
    /// iteration, for a multi-objective batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervolume: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hypervolume_curve: Vec<Option<f64>>,
    /// Model calls over its runs.
    #[serde(default)]
    pub calls: u64,
    /// Against the task's best known value, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ValueStats>,
    /// Against the baseline; `None` for the baseline itself.
    pub vs_baseline: Option<Comparison>,
}

/// The whole leaderboard (`leaderboard.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Leaderboard {
    pub task: String,
    pub task_dir: PathBuf,
    pub model: String,
    pub iterations: u64,
    pub seeds: Vec<u64>,
    pub baseline: String,
    pub target: Option<f64>,
    pub bootstrap_seed: u64,
    pub bootstrap_resamples: usize,
    /// Seconds the batch took in this invocation, and the longest per-run
    /// start-up seen in it (first iteration reached).
    pub batch_wall_secs: f64,
    pub max_startup_secs: Option<f64>,
    /// The objectives hypervolume is measured over (empty: one fitness).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<Objective>,
    /// The task's best known value (its config's `best_known`), and the
    /// fraction of it the runs were to reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Record>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    pub cards: Vec<CardResult>,
}

/// Read one run's archive into its result.
pub fn read_run(
    dir: &Path,
    seed: u64,
    budget: u64,
    target: Option<f64>,
    objectives: &[Objective],
    goal: Option<&Goal>,
) -> Result<RunResult, String> {
    let archive = Archive::open(dir).map_err(|e| e.to_string())?;
    let meta = archive.meta().map_err(|e| e.to_string())?;
    let checkpoint = archive.checkpoint().map_err(|e| e.to_string())?;
    let genomes = archive
        .genomes_without_transcripts()
        .map_err(|e| e.to_string())?;
    drop(archive);
    let mut per_iteration: Vec<Option<f64>> = vec![None; budget as usize + 1];
    for g in &genomes {
        if let Some(f) = g.fitness()
            && let Some(slot) = per_iteration.get_mut(g.iteration as usize)
        {
            *slot = Some(slot.map_or(f, |b: f64| b.max(f)));
        }
    }
    let mut best_so_far = Vec::with_capacity(per_iteration.len());
    let mut best: Option<f64> = None;
    for v in per_iteration {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.max(v)));
        }
        best_so_far.push(best);
    }
    let reached_target_at = target.and_then(|t| {
        best_so_far
            .iter()
            .position(|b| b.is_some_and(|b| b >= t))
            .map(|i| i as u64)
    });
    let summary: Option<serde_json::Value> =
        crate::engine::foreign::Folder::open(dir, crate::engine::foreign::Links::Never)
            .and_then(|f| f.read_text("summary.json", crate::engine::foreign::Limit::SMALL_JSON))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
    let hypervolume_so_far = if objectives.len() >= 2 {
        let initial = genomes.iter().find(|g| g.id == 0);
        hypervolume::reference_point(objectives, initial).map_or_else(Vec::new, |reference| {
            hypervolume::curve(&genomes, objectives, &reference, budget)
        })
    } else {
        Vec::new()
    };
    let usage = checkpoint.as_ref().map(|c| c.usage).unwrap_or_default();
    let iterations_done = checkpoint.as_ref().map_or(0, |c| c.iterations_done);
    Ok(RunResult {
        calls: value::calls(&genomes),
        value: goal.map(|g| value::track(&genomes, budget, g)),
        seed,
        dir: dir.to_path_buf(),
        capped: meta.status.starts_with("budget reached") && iterations_done < budget,
        stopped_early: meta.status.starts_with("stopped early") && iterations_done < budget,
        hypervolume_so_far,
        status: meta.status,
        iterations_done,
        best,
        best_so_far,
        genomes: genomes.len() as u64,
        valid: genomes.iter().filter(|g| g.valid).count() as u64,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cost_usd: usage.cost_usd,
        wall_secs: summary.and_then(|s| s.get("wall_secs").and_then(serde_json::Value::as_f64)),
        reached_target_at,
    })
}

/// One card's statistics from its runs.
pub fn card_result(
    card: &str,
    runs: Vec<RunResult>,
    budget: u64,
    record: Option<&Record>,
) -> CardResult {
    let at = |i: u64| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| r.best_so_far.get(i as usize).copied().flatten())
            .collect()
    };
    let finals = at(budget);
    let curve = (0..=budget)
        .map(|i| estimate(&at(i), BOOTSTRAP_SEED ^ i))
        .collect();
    let reached: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.reached_target_at)
        .map(|i| i as f64)
        .collect();
    let genomes: u64 = runs.iter().map(|r| r.genomes).sum();
    let valid: u64 = runs.iter().map(|r| r.valid).sum();
    let costs: Vec<f64> = runs.iter().filter_map(|r| r.cost_usd).collect();
    CardResult {
        card: card.to_owned(),
        best: estimate(&finals, BOOTSTRAP_SEED),
        best_median: stats::median(&finals),
        at_quarter: stats::mean(&at(budget / 4)),
        at_half: stats::mean(&at(budget / 2)),
        at_budget: stats::mean(&finals),
        curve,
        reached_target: reached.len() as u64,
        mean_iterations_to_target: stats::mean(&reached),
        valid_percent: if genomes == 0 {
            0.0
        } else {
            100.0 * valid as f64 / genomes as f64
        },
        prompt_tokens: runs.iter().map(|r| r.prompt_tokens).sum(),
        completion_tokens: runs.iter().map(|r| r.completion_tokens).sum(),
        cost_usd: if costs.is_empty() {
            None
        } else {
            Some(costs.iter().sum())
        },
        wall_secs: runs.iter().filter_map(|r| r.wall_secs).sum(),
        capped: runs.iter().any(|r| r.capped),
        stopped_early: runs.iter().filter(|r| r.stopped_early).count() as u64,
        hypervolume: estimate(
            &runs
                .iter()
                .filter_map(|r| r.hypervolume_so_far.get(budget as usize).copied())
                .collect::<Vec<_>>(),
            BOOTSTRAP_SEED,
        ),
        hypervolume_curve: if runs.iter().any(|r| !r.hypervolume_so_far.is_empty()) {
            (0..=budget as usize)
                .map(|i| {
                    stats::mean(
                        &runs
                            .iter()
                            .filter_map(|r| r.hypervolume_so_far.get(i).copied())
                            .collect::<Vec<_>>(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        },
        mean_iterations_run: stats::mean(
            &runs
                .iter()
                .map(|r| r.iterations_done as f64)
                .collect::<Vec<_>>(),
        ),
        calls: runs.iter().map(|r| r.calls).sum(),
        value: record.map(|record| {
            let tracks: Vec<&ValueTrack> = runs.iter().filter_map(|r| r.value.as_ref()).collect();
            value::value_stats(&tracks, record)
        }),
        vs_baseline: None,
        runs,
    }
}

/// Fill in every card's comparison with the baseline's final scores.
pub fn compare_with_baseline(cards: &mut [CardResult], baseline: &str, budget: u64) {
    let finals = |c: &CardResult| -> Vec<f64> {
        c.runs
            .iter()
            .filter_map(|r| r.best_so_far.get(budget as usize).copied().flatten())
            .collect()
    };
    let Some(base) = cards.iter().find(|c| c.card == baseline).map(finals) else {
        return;
    };
    for c in cards.iter_mut().filter(|c| c.card != baseline) {
        c.vs_baseline = stats::mann_whitney(&finals(c), &base);
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.4}"))
}

/// `leaderboard.md`: what was compared, the table, the verdicts in words.
pub fn markdown(lb: &Leaderboard) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Leaderboard: {}\n", lb.task);
    let _ = writeln!(
        s,
        "Every card ran {} iterations on `{}` with seeds {} and the model {}.\n",
        lb.iterations,
        lb.task,
        lb.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        lb.model
    );
    let _ = writeln!(
        s,
        "Best score at {n}: mean, 95 % bootstrap interval ({} resamples, seed {:#x}) and median over seeds. \
         Best so far: the mean over seeds at iterations {q}, {h} and {n}.\n",
        lb.bootstrap_resamples,
        lb.bootstrap_seed,
        n = lb.iterations,
        q = lb.iterations / 4,
        h = lb.iterations / 2,
    );
    let target_col = lb.target.is_some();
    let early_col = lb.cards.iter().any(|c| c.stopped_early > 0);
    let hv_col = lb.cards.iter().any(|c| c.hypervolume.is_some());
    let _ = write!(
        s,
        "| card | best (mean) | 95 % CI | median | @{} | @{} | @{} |",
        lb.iterations / 4,
        lb.iterations / 2,
        lb.iterations
    );
    if target_col {
        s.push_str(" reached target | iterations to target |");
    }
    if early_col {
        s.push_str(" stopped early | iterations run |");
    }
    if hv_col {
        let _ = write!(
            s,
            " hypervolume @{q} | @{h} | @{n} |",
            q = lb.iterations / 4,
            h = lb.iterations / 2,
            n = lb.iterations
        );
    }
    s.push_str(" valid % | tokens | cost | wall s | vs baseline |\n|---|---|---|---|---|---|---|");
    if target_col {
        s.push_str("---|---|");
    }
    if early_col {
        s.push_str("---|---|");
    }
    if hv_col {
        s.push_str("---|---|---|");
    }
    s.push_str("---|---|---|---|---|\n");
    for c in &lb.cards {
        let name = if c.capped {
            format!("{} (capped)", c.card)
        } else {
            c.card.clone()
        };
        let ci = c.best.map_or_else(
            || "–".to_owned(),
            |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high),
        );
        let _ = write!(
            s,
            "| {name} | {} | {ci} | {} | {} | {} | {} |",
            num(c.best.map(|e| e.mean)),
            num(c.best_median),
            num(c.at_quarter),
            num(c.at_half),
            num(c.at_budget)
        );
        if target_col {
            let _ = write!(
                s,
                " {}/{} | {} |",
                c.reached_target,
                c.runs.len(),
                c.mean_iterations_to_target
                    .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
            );
        }
        if early_col {
            let _ = write!(
                s,
                " {}/{} | {} |",
                c.stopped_early,
                c.runs.len(),
                c.mean_iterations_run
                    .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
            );
        }
        if hv_col {
            let at = |i: u64| {
                c.hypervolume_curve
                    .get(i as usize)
                    .copied()
                    .flatten()
                    .map_or_else(|| "–".to_owned(), |v| format!("{v:.4}"))
            };
            let _ = write!(
                s,
                " {} | {} | {} |",
                at(lb.iterations / 4),
                at(lb.iterations / 2),
                at(lb.iterations)
            );
        }
        let vs = match &c.vs_baseline {
            None if c.card == lb.baseline => "baseline".to_owned(),
            None => "–".to_owned(),
            Some(cmp) => format!("{} (p = {:.3})", cmp.verdict, cmp.p_value),
        };
        let _ = writeln!(
            s,
            " {:.1} | {} | {} | {:.1} | {vs} |",
            c.valid_percent,
            c.prompt_tokens + c.completion_tokens,
            c.cost_usd
                .map_or_else(|| "–".to_owned(), |v| format!("${v:.4}")),
            c.wall_secs
        );
    }
    let _ = writeln!(
        s,
        "\nAgainst the baseline `{}` (two-sided Mann–Whitney U on the best score at {}, α = {}):\n",
        lb.baseline,
        lb.iterations,
        stats::ALPHA
    );
    for c in &lb.cards {
        if let Some(cmp) = &c.vs_baseline {
            let words = match cmp.verdict.as_str() {
                "better" => format!("`{}` is better than `{}`", c.card, lb.baseline),
                "worse" => format!("`{}` is worse than `{}`", c.card, lb.baseline),
                _ => format!(
                    "`{}` and `{}`: no difference at this budget",
                    c.card, lb.baseline
                ),
            };
            let _ = writeln!(
                s,
                "- {words} (U = {}, p = {:.4}, {}).",
                cmp.u, cmp.p_value, cmp.method
            );
        }
    }
    if hv_col {
        let objectives: Vec<String> = lb.objectives.iter().map(Objective::label).collect();
        let _ = writeln!(
            s,
            "\nhypervolume: the region of ({}) the run's valid programs dominate, bounded by the reference point \
             (each objective's value in the task's `reference_point` or the card's `general.reference_point`, else the initial program's value); the mean over seeds.",
            objectives.join(", ")
        );
    }
    if early_col {
        s.push_str(
            "\nstopped early: runs a rule of the card's `general.stop` ended before the budget (their best so far \
             is carried to the budget); iterations run: the mean over seeds.\n",
        );
    }
    if lb.cards.iter().any(|c| c.capped) {
        s.push_str(
            "\n(capped): a run of this card stopped at its token or cost cap before the budget.\n",
        );
    }
    if let Some(table) = record_table(lb) {
        s.push('\n');
        s.push_str(&record_explained(lb));
        s.push('\n');
        s.push_str(&table);
    }
    s
}

/// `0.99` as `99 %`, `0.995` as `99.5 %`.
pub fn percent(fraction: f64) -> String {
    let p = format!("{:.2}", fraction * 100.0);
    format!("{} %", p.trim_end_matches('0').trim_end_matches('.'))
}

/// What the table against the best known value says, in words.
pub fn record_explained(lb: &Leaderboard) -> String {
    let (Some(record), Some(fraction)) = (&lb.record, lb.fraction) else {
        return String::new();
    };
    let p = percent(fraction);
    format!(
        "Against the best known value of `{task}`, {v} ({dir}{source}): the best `{metric}` at {n} (mean over the \
         seeds with a valid program, 95 % bootstrap interval, and the best of the seeds), its gap to the record \
         ({gap}; negative: beyond it), the best normalised by the record (1.0 = the record; a run without a valid \
         program scores 0), the runs whose best reached {p} of the record, and over those runs the model calls, \
         tokens and cost until the first iteration that did.\n",
        task = lb.task,
        v = value::fmt_value(record.value),
        dir = if record.direction == crate::engine::genome::Direction::Max {
            "higher is better"
        } else {
            "lower is better"
        },
        source = if record.source.is_empty() {
            String::new()
        } else {
            format!("; {}", record.source)
        },
        metric = value::VALUE_METRIC,
        n = lb.iterations,
        gap = if record.direction == crate::engine::genome::Direction::Max {
            "record − value"
        } else {
            "value − record"
        },
    )
}

/// The cards against the task's best known value, as a Markdown table;
/// `None` when the task names none.
pub fn record_table(lb: &Leaderboard) -> Option<String> {
    let fraction = lb.fraction?;
    lb.record.as_ref()?;
    let p = percent(fraction);
    let mut s = format!(
        "| card | best value | best of seeds | gap to the record | normalised | reached {p} | model calls to {p} | \
         tokens to {p} | cost to {p} |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for c in &lb.cards {
        let Some(v) = &c.value else {
            continue;
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {} | {} |",
            c.card,
            value::fmt_estimate(v.best, 6),
            v.best_of_seeds
                .map_or_else(|| "–".to_owned(), value::fmt_value),
            value::fmt_estimate(v.gap, 6),
            value::fmt_estimate(v.normalised, 4),
            v.reached,
            v.runs,
            value::fmt_to_reach(v.calls_to_reach, v.reached, v.runs, 1),
            value::fmt_to_reach(v.tokens_to_reach, v.reached, v.runs, 0),
            if v.reached > 0 && v.cost_to_reach.is_none() {
                "– (no prices)".to_owned()
            } else {
                value::fmt_to_reach(v.cost_to_reach, v.reached, v.runs, 4)
            },
        );
    }
    Some(s)
}

/// Read a leaderboard: a batch folder's `leaderboard.json`, or that file
/// itself. Returns the file read and what it holds.
pub fn read_leaderboard(path: &Path) -> Result<(PathBuf, Leaderboard), String> {
    let file = if path.is_dir() {
        path.join(super::LEADERBOARD_FILE)
    } else {
        path.to_path_buf()
    };
    let text = crate::engine::foreign::read_named_text(
        &file,
        crate::engine::foreign::Limit::LEADERBOARD,
    )
    .map_err(|e| {
        if e.is_not_found() && path.is_dir() {
            format!(
                "{}: no leaderboard yet (a batch writes it when it ends; start it again on this folder to finish it)",
                file.display()
            )
        } else {
            e.to_string()
        }
    })?;
    let lb: Leaderboard = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a leaderboard: {e}", file.display()))?;
    Ok((file, lb))
}

/// A hub README's "Results" section for `card` from a leaderboard (its
/// folder or its `leaderboard.json`): what was compared (task, budget, seeds,
/// model), the table, and the card's comparison with the baseline.
pub fn results_section(path: &Path, card: &str) -> Result<String, String> {
    let (file, lb) = read_leaderboard(path)?;
    let Some(mine) = lb.cards.iter().find(|c| c.card == card) else {
        return Err(format!(
            "{}: the card `{card}` is not on this leaderboard (it has {})",
            file.display(),
            lb.cards
                .iter()
                .map(|c| c.card.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let full = markdown(&lb);
    // The table and the verdicts, without the leaderboard's own title.
    let body = full
        .split_once('\n')
        .map_or(full.as_str(), |(_, rest)| rest)
        .trim();
    let mut s = String::from("## Results\n\n");
    let _ = writeln!(
        s,
        "On the task `{}`, {} iterations per run, seeds {}, model {}: `{card}` scored {} (best at {}, mean over \
         seeds, 95 % CI {}).\n",
        lb.task,
        lb.iterations,
        lb.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        lb.model,
        num(mine.best.map(|e| e.mean)),
        lb.iterations,
        mine.best.map_or_else(
            || "–".to_owned(),
            |e| format!("[{:.4}, {:.4}]", e.ci_low, e.ci_high)
        ),
    );
    s.push_str(body);
    s.push('\n');
    Ok(s)
}
