//! The site's pages as HTML text (see the module doc of [`super`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::html::{diff_html, esc, highlight_yaml, markdown};
use super::{CardData, Version, blocks_svg, page};
use crate::engine::hub::CARD_FILE;
use crate::engine::hub::folder::PublishedResult;
use crate::engine::registry::Registry;

type Results<'a> = BTreeMap<String, Vec<(&'a CardData, &'a Version, &'a PublishedResult)>>;

/// The published lines a card page links to: by task, and by suite, with
/// their pages' names.
pub struct Boards<'a, 'b> {
    pub results: &'b Results<'a>,
    pub tasks: &'b BTreeMap<String, String>,
    pub suites: &'b super::suites::Suites<'a>,
    pub suite_slugs: &'b BTreeMap<String, String>,
}

fn tag_links(
    tags: &[String],
    slugs: &BTreeMap<String, String>,
    prefix: &str,
    on: Option<&String>,
) -> String {
    let mut s = String::from("<ul class=\"tags\">");
    for t in tags {
        let slug = slugs.get(t).map_or("", String::as_str);
        let class = if on == Some(t) { "tag on" } else { "tag" };
        let _ = write!(
            s,
            r#"<li><a class="{class}" href="{prefix}tags/{slug}.html">{}</a></li>"#,
            esc(t)
        );
    }
    s.push_str("</ul>");
    s
}

/// The index: every card (or those with `tag`).
pub fn index(
    cards: &[CardData],
    tags: &BTreeMap<String, String>,
    tag: Option<&String>,
    prefix: &str,
) -> String {
    let all: Vec<&CardData> = cards.iter().collect();
    index_of(&all, cards.len(), tags, tag, prefix)
}

/// The index of `cards` (out of `total`), `tag` being the filter shown.
pub fn index_of(
    cards: &[&CardData],
    total: usize,
    tags: &BTreeMap<String, String>,
    tag: Option<&String>,
    prefix: &str,
) -> String {
    let mut b = String::new();
    match tag {
        Some(t) => {
            let _ = write!(
                b,
                r#"<h1>Cards tagged “{}”</h1><p class="muted">{} of {total} cards · <a href="{prefix}index.html">all cards</a></p>"#,
                esc(t),
                cards.len()
            );
        }
        None => {
            let _ = write!(
                b,
                r#"<h1>Scaffold cards</h1><p class="muted">Search programs as six blocks: pick a card, read it, run it with <code>galapagos run NAMESPACE/NAME --task TASK</code>.</p>"#
            );
        }
    }
    let _ = write!(
        b,
        r#"<div class="js-only" hidden><label for="search" class="muted">Search cards</label><br><input id="search" class="search" type="search" placeholder="Search titles, summaries, tags…" autocomplete="off"> <span id="count" class="muted" aria-live="polite"></span></div>"#
    );
    let all_tags: Vec<String> = tags.keys().cloned().collect();
    let _ = write!(
        b,
        r#"<nav aria-label="Tags"><span class="muted">Tags:</span> {}</nav>"#,
        tag_links(&all_tags, tags, prefix, tag)
    );
    b.push_str(r#"<ul class="cards" id="cards">"#);
    for c in cards {
        let card = &c.card;
        let search = format!(
            "{}/{} {} {} {} {}",
            c.list.namespace,
            c.list.name,
            card.title,
            card.summary,
            card.tags.join(" "),
            card.license
        )
        .to_lowercase();
        let latest = c.list.latest().map_or("", |v| v.version.as_str());
        let _ = write!(
            b,
            r#"<li class="card" data-search="{}"><h2><a href="{prefix}{}/index.html">{}</a></h2><div class="id">{}/{} · version {}</div><p>{}</p>{}<p class="muted">License: {}</p></li>"#,
            esc(&search),
            c.dir(),
            esc(if card.title.is_empty() {
                &card.name
            } else {
                &card.title
            }),
            esc(&c.list.namespace),
            esc(&c.list.name),
            esc(latest),
            esc(&card.summary),
            tag_links(&card.tags, tags, prefix, None),
            esc(if card.license.is_empty() {
                "not stated"
            } else {
                &card.license
            }),
        );
    }
    b.push_str("</ul>");
    if cards.is_empty() {
        b.push_str(
            r#"<p>No cards published yet: <code>galapagos hub publish CARD --hub DIR</code>.</p>"#,
        );
    }
    let title = tag.map_or_else(|| "Cards".to_owned(), |t| format!("Tag {t}"));
    page(&title, prefix, &b)
}

/// How to run a card from the hub.
pub fn how_to_run(cards: &[CardData]) -> String {
    let example = cards.first().map_or_else(
        || "NAMESPACE/NAME".to_owned(),
        |c| format!("{}/{}", c.list.namespace, c.list.name),
    );
    let ex = esc(&example);
    let b = format!(
        r#"<h1>How to run a card</h1>
<p>A card is a YAML file naming six blocks (population, selection policy, prompt builder, proposer, evaluator, memory) and their settings. Run one on a task folder with the <code>galapagos</code> command line.</p>
<h2>1. Tell galapagos where this hub is</h2>
<p>Pass the hub's address with <code>--hub</code>, or list it once under <code>"hubs"</code> in your settings file (<code>~/.config/galapagos/settings.json</code> on Linux):</p>
<pre><code>{{ "hubs": ["https://hub.example.org/"] }}</code></pre>
<p>The address is this site's root (the folder with <code>index.json</code>), or a hub folder on disk.</p>
<h2>2. Run it</h2>
<pre><code>galapagos run {ex} --task circle_packing --iterations 20</code></pre>
<p>A name with <code>@VERSION</code> (<code>{ex}@1</code>) picks a version; without it the latest is used. The card is checked as strictly as a local file, then cached under <code>~/.cache/galapagos/hub/</code> with a note of the hub and version it came from.</p>
<h2>3. Or keep a copy</h2>
<pre><code>galapagos validate {ex}
galapagos import {ex} --out cards</code></pre>
<p>Every card page also has the raw <code>{CARD_FILE}</code> of each version to download.</p>
<h2>Publishing</h2>
<pre><code>galapagos hub publish my_card.yaml --hub HUB_FOLDER --namespace team
galapagos hub build HUB_FOLDER --out site
galapagos hub serve HUB_FOLDER</code></pre>
"#
    );
    page("How to run a card", "", &b)
}

fn num(v: f64) -> String {
    format!("{v:.4}")
}

/// The list of tasks and suites with published results.
pub fn leaderboards_index(
    results: &Results<'_>,
    tasks: &BTreeMap<String, String>,
    suites: &super::suites::Suites<'_>,
    suite_slugs: &BTreeMap<String, String>,
) -> String {
    let mut b = String::from(
        "<h1>Leaderboards</h1><p class=\"muted\">One page per task, and one per suite of tasks, gathering the Results published with each card.</p>",
    );
    if !suites.is_empty() {
        b.push_str("<h2>Suites</h2><ul>");
        for (suite, rows) in suites {
            let slug = suite_slugs.get(suite).map_or("", String::as_str);
            let tasks = rows
                .iter()
                .filter_map(|(_, _, r)| r.suite.as_ref())
                .map(|s| s.tasks.len())
                .max()
                .unwrap_or(0);
            let _ = write!(
                b,
                r#"<li><a href="suites/{slug}.html">{}</a> <span class="muted">({tasks} tasks, {} results)</span></li>"#,
                esc(suite),
                rows.len()
            );
        }
        b.push_str("</ul><h2>Tasks</h2>");
    }
    b.push_str("<ul>");
    for (task, rows) in results {
        let slug = tasks.get(task).map_or("", String::as_str);
        let _ = write!(
            b,
            r#"<li><a href="{slug}.html">{}</a> <span class="muted">({} results)</span></li>"#,
            esc(task),
            rows.len()
        );
    }
    b.push_str("</ul>");
    if results.is_empty() && suites.is_empty() {
        b.push_str(
            "<p>No results yet: publish a card with <code>--results LEADERBOARD</code>.</p>",
        );
    }
    page("Leaderboards", "../", &b)
}

/// One task's leaderboard: every published line, best mean first.
pub fn leaderboard(task: &str, rows: &[(&CardData, &Version, &PublishedResult)]) -> String {
    let mut rows: Vec<_> = rows.to_vec();
    rows.sort_by(|a, b| {
        let m = |r: &PublishedResult| r.best.map_or(f64::NEG_INFINITY, |e| e.mean);
        m(b.2).total_cmp(&m(a.2))
    });
    let mut b = format!(
        r#"<h1>Leaderboard: {}</h1><p class="muted">Best score at the budget, mean over seeds with its 95 % bootstrap interval, as published with each card.<span class="js-only" hidden> Click a heading to sort.</span></p><div class="panel"><table class="sortable wide" id="leaderboard"><thead><tr>"#,
        esc(task)
    );
    // the headings are text; the script makes them sort buttons
    for (label, num_col) in [
        ("Card", false),
        ("Version", false),
        ("Model", false),
        ("Best mean", true),
        ("95 % interval", true),
        ("Iterations", true),
        ("Seeds", true),
        ("Cost (USD)", true),
    ] {
        let class = if num_col { " class=\"num\"" } else { "" };
        let _ = write!(b, r#"<th{class} scope="col">{label}</th>"#);
    }
    b.push_str("</tr></thead><tbody>");
    for (c, v, r) in rows {
        let mean = r.best.map(|e| e.mean);
        let _ = write!(
            b,
            r#"<tr><td data-value="{id}"><a href="../{dir}/index.html">{id}</a><div class="muted">{lbcard}</div></td><td>{ver}</td><td class="model">{model}</td><td class="num" data-value="{mean_v}">{mean_t}</td><td class="num" data-value="{low_v}" data-high="{high_v}">{ci}</td><td class="num" data-value="{it}">{it}</td><td class="num" data-value="{seeds}">{seeds}</td><td class="num" data-value="{cost_v}">{cost_t}</td></tr>"#,
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
            it = r.iterations,
            seeds = r.seeds.len(),
            cost_v = r.cost_usd.map_or_else(String::new, |c| c.to_string()),
            cost_t = r
                .cost_usd
                .map_or_else(|| "–".to_owned(), |c| format!("{c:.4}")),
        );
    }
    b.push_str("</tbody></table></div>");
    page(&format!("Leaderboard {task}"), "../", &b)
}

/// A card's page (its latest version, with every version listed).
pub fn card_page(
    c: &CardData,
    registry: &Registry,
    tags: &BTreeMap<String, String>,
    boards: &Boards<'_, '_>,
) -> String {
    let prefix = "../../../";
    let card = &c.card;
    let Some(latest) = c.versions.last() else {
        return page(&card.name, prefix, "<p>No versions.</p>");
    };
    let id = format!("{}/{}", c.list.namespace, c.list.name);
    let ver = &latest.entry.version;
    let title = if card.title.is_empty() {
        &card.name
    } else {
        &card.title
    };
    let mut b = String::new();
    let _ = write!(
        b,
        r#"<h1>{}</h1><div class="id">{}</div><p>{}</p>{}"#,
        esc(title),
        esc(&id),
        esc(&card.summary),
        tag_links(&card.tags, tags, prefix, None)
    );
    let mut links = String::new();
    for (task, rows) in boards.results {
        if rows.iter().any(|(rc, _, _)| std::ptr::eq(*rc, c)) {
            let slug = boards.tasks.get(task).map_or("", String::as_str);
            let _ = write!(
                links,
                r#"<a href="{prefix}leaderboards/{slug}.html">{}</a> "#,
                esc(task)
            );
        }
    }
    for (suite, rows) in boards.suites {
        if rows.iter().any(|(rc, _, _)| std::ptr::eq(*rc, c)) {
            let slug = boards.suite_slugs.get(suite).map_or("", String::as_str);
            let _ = write!(
                links,
                r#"<a href="{prefix}{}">suite {}</a> "#,
                super::suites::suite_path(slug),
                esc(suite)
            );
        }
    }
    let boards = links;
    let _ = write!(
        b,
        r#"<dl class="meta"><dt>License</dt><dd>{}</dd><dt>Latest version</dt><dd>{} ({})</dd><dt>Run it</dt><dd><code>galapagos run {}@{} --task TASK</code> · <a href="{prefix}how-to-run.html">how</a></dd>{}</dl>"#,
        esc(if card.license.is_empty() {
            "not stated"
        } else {
            &card.license
        }),
        esc(ver),
        esc(&latest.entry.published),
        esc(&id),
        esc(ver),
        if boards.is_empty() {
            String::new()
        } else {
            format!("<dt>Leaderboards</dt><dd>{boards}</dd>")
        }
    );
    let _ = write!(
        b,
        r#"<h2>The six blocks</h2><div class="panel blocks-wrap">{}</div>"#,
        blocks_svg(card, registry)
    );
    let _ = write!(
        b,
        r#"<h2 id="card">Card</h2><div class="actions"><button class="button js-only" type="button" data-copy="card-yaml" hidden>Copy</button><a class="button" href="{ver}/{CARD_FILE}" download="{name}.yaml">Download {CARD_FILE}</a></div><pre class="yaml"><code id="card-yaml">{}</code></pre>"#,
        highlight_yaml(&latest.yaml),
        ver = esc(ver),
        name = esc(&card.name),
    );
    let _ = write!(
        b,
        r#"<h2 id="readme">README</h2><div class="panel readme">{}</div>"#,
        markdown(&latest.readme)
    );
    b.push_str(r#"<h2 id="versions">Files and versions</h2><div class="panel"><table><thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">Files</th></tr></thead><tbody>"#);
    for v in c.versions.iter().rev() {
        let vv = esc(&v.entry.version);
        let _ = write!(
            b,
            r#"<tr><td>{vv}</td><td>{}</td><td><a href="{vv}/{CARD_FILE}">{CARD_FILE}</a> · <a href="{vv}/README.md">README.md</a></td></tr>"#,
            esc(&v.entry.published)
        );
    }
    b.push_str("</tbody></table>");
    for pair in c.versions.windows(2) {
        if let [old, new] = pair {
            let (o, n) = (&old.entry.version, &new.entry.version);
            let diff = diff_html(
                &old.yaml,
                &new.yaml,
                &format!("{o}/{CARD_FILE}"),
                &format!("{n}/{CARD_FILE}"),
            )
            .unwrap_or_else(|| "<p class=\"muted\">The card is the same.</p>".to_owned());
            let _ = write!(
                b,
                r#"<details><summary>Changes from version {} to {}</summary>{diff}</details>"#,
                esc(o),
                esc(n)
            );
        }
    }
    b.push_str("</div>");
    page(title, prefix, &b)
}
