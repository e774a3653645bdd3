//! The site's suite pages: every card published with the Results of a suite
//! leaderboard (`galapagos leaderboard --suite`), one page per suite. The
//! first table is the cards over the suite (the mean normalised best value
//! with its interval, the tasks reaching the fraction of the best known
//! value); the second is the card × task table of best values, each cell
//! with its gap, normalised value and runs reaching the fraction on hover.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::html::esc;
use super::{CardData, Version, page};
use crate::engine::hub::folder::PublishedResult;
use crate::engine::leaderboard::report::percent;
use crate::engine::leaderboard::value::fmt_value;

/// Published lines by suite.
pub type Suites<'a> = BTreeMap<String, Vec<(&'a CardData, &'a Version, &'a PublishedResult)>>;

/// Where a suite's page is, relative to the site.
pub fn suite_path(slug: &str) -> String {
    format!("leaderboards/suites/{slug}.html")
}

fn num(v: f64) -> String {
    format!("{v:.4}")
}

fn score_of(r: &PublishedResult) -> f64 {
    r.best.map_or(f64::NEG_INFINITY, |e| e.mean)
}

/// One suite's page.
pub fn suite_page(suite: &str, rows: &[(&CardData, &Version, &PublishedResult)]) -> String {
    let prefix = "../../";
    let mut rows: Vec<_> = rows.to_vec();
    rows.sort_by(|a, b| score_of(b.2).total_cmp(&score_of(a.2)));
    let mut b = format!(
        r#"<h1>Suite leaderboard: {}</h1><p class="muted">Each card's score over the suite: per seed, the mean over the tasks with a best known value of the best value normalised by it (1.0 is the record; a run without a valid program scores 0), the mean over seeds with its 95 % bootstrap interval, as published with each card.<span class="js-only" hidden> Click a heading to sort.</span></p><div class="panel"><table class="sortable wide" id="suite"><thead><tr>"#,
        esc(suite)
    );
    for (label, num_col) in [
        ("Card", false),
        ("Version", false),
        ("Model", false),
        ("Score", true),
        ("95 % interval", true),
        ("Tasks reaching", true),
        ("Iterations", true),
        ("Seeds", true),
        ("Cost (USD)", true),
    ] {
        let class = if num_col { " class=\"num\"" } else { "" };
        let _ = write!(b, r#"<th{class} scope="col">{label}</th>"#);
    }
    b.push_str("</tr></thead><tbody>");
    for (c, v, r) in &rows {
        let mean = r.best.map(|e| e.mean);
        let (reached, scored, fraction) = r.suite.as_ref().map_or((0, 0, 0.0), |s| {
            (s.tasks_reached, s.tasks_scored, s.fraction)
        });
        let _ = write!(
            b,
            r#"<tr><td data-value="{id}"><a href="{prefix}{dir}/index.html">{id}</a><div class="muted">{lbcard}</div></td><td>{ver}</td><td class="model">{model}</td><td class="num" data-value="{mean_v}">{mean_t}</td><td class="num" data-value="{low_v}" data-high="{high_v}">{ci}</td><td class="num" data-value="{reached}">{reached}/{scored} at {p}</td><td class="num" data-value="{it}">{it}</td><td class="num" data-value="{seeds}">{seeds}</td><td class="num" data-value="{cost_v}">{cost_t}</td></tr>"#,
            id = esc(&format!("{}/{}", c.list.namespace, c.list.name)),
            dir = c.dir(),
            lbcard = esc(&format!("as `{}` against `{}`", r.card, r.baseline)),
            ver = esc(&v.entry.version),
            model = esc(&r.model),
            mean_v = mean.map_or_else(String::new, |m| m.to_string()),
            mean_t = mean.map_or_else(|| "–".to_owned(), num),
            low_v = r.best.map_or_else(String::new, |e| e.ci_low.to_string()),
            high_v = r.best.map_or_else(String::new, |e| e.ci_high.to_string()),
            ci = r.best.map_or_else(
                || "–".to_owned(),
                |e| format!("[{}, {}]", num(e.ci_low), num(e.ci_high))
            ),
            p = esc(&percent(fraction)),
            it = r.iterations,
            seeds = r.seeds.len(),
            cost_v = r.cost_usd.map_or_else(String::new, |c| c.to_string()),
            cost_t = r
                .cost_usd
                .map_or_else(|| "–".to_owned(), |c| format!("{c:.4}")),
        );
    }
    b.push_str("</tbody></table></div>");

    // The tasks in the order the first line lists them, then any others.
    let mut tasks: Vec<(String, Option<&crate::engine::leaderboard::value::Record>)> = Vec::new();
    for (_, _, r) in &rows {
        for t in r.suite.iter().flat_map(|s| &s.tasks) {
            if !tasks.iter().any(|(name, _)| *name == t.task) {
                tasks.push((t.task.clone(), t.record.as_ref()));
            }
        }
    }
    b.push_str(r#"<h2 id="by-task">By task</h2><p class="muted">The best value at the budget, the mean over seeds, in the units the papers print (a task without a best known value: its best score). Hover a cell for its gap to the best known value, its normalised value and the runs that reached the fraction.</p><div class="panel"><table class="wide" id="suite-tasks"><thead><tr><th scope="col">Task</th><th scope="col">Direction</th><th class="num" scope="col">Best known</th>"#);
    for (c, v, _) in &rows {
        let _ = write!(
            b,
            r#"<th class="num" scope="col">{}@{}</th>"#,
            esc(&format!("{}/{}", c.list.namespace, c.list.name)),
            esc(&v.entry.version)
        );
    }
    b.push_str("</tr></thead><tbody>");
    for (task, record) in &tasks {
        let _ = write!(
            b,
            r#"<tr><th scope="row">{}</th><td>{}</td><td class="num">{}</td>"#,
            esc(task),
            record.map_or("–", |r| r.direction_word()),
            record.map_or_else(|| "–".to_owned(), |r| fmt_value(r.value)),
        );
        for (_, _, r) in &rows {
            let line = r
                .suite
                .as_ref()
                .and_then(|s| s.tasks.iter().find(|t| &t.task == task));
            let fraction = r.suite.as_ref().map_or(0.0, |s| s.fraction);
            match line {
                None => b.push_str(r#"<td class="num">–</td>"#),
                Some(t) => {
                    let (value, text) = match (t.record.is_some(), t.best_value, t.best_score) {
                        (true, Some(e), _) => (e.mean.to_string(), format!("{:.6}", e.mean)),
                        (true, None, _) => (String::new(), "no valid program".to_owned()),
                        (false, _, Some(e)) => {
                            (e.mean.to_string(), format!("{} (score)", num(e.mean)))
                        }
                        (false, _, None) => (String::new(), "–".to_owned()),
                    };
                    let est = |e: Option<crate::engine::leaderboard::stats::Estimate>, d: usize| {
                        e.map_or_else(
                            || "–".to_owned(),
                            |e| format!("{:.d$} [{:.d$}, {:.d$}]", e.mean, e.ci_low, e.ci_high),
                        )
                    };
                    let title = format!(
                        "{}: best value {}; gap to the best known {}; normalised {}; reached {} in {}/{} runs",
                        r.card,
                        est(t.best_value, 6),
                        est(t.gap, 6),
                        est(t.normalised, 4),
                        percent(fraction),
                        t.reached,
                        t.runs
                    );
                    let _ = write!(
                        b,
                        r#"<td class="num" data-value="{value}" title="{}">{}</td>"#,
                        esc(&title),
                        esc(&text)
                    );
                }
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</tbody></table></div>");
    page(&format!("Suite leaderboard {suite}"), prefix, &b)
}
