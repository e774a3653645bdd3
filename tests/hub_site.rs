#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The hub's site in a real browser: a hub of every shipped card, a second
//! version of one, a card full of HTML-looking text and a leaderboard of two
//! cards (offline model) is built and served by `galapagos hub serve` on
//! loopback, and headless Chromium (Debian's package) checks every page
//! loads with no console error, every link resolves, search narrows the
//! index, the card page's YAML is the published card.yaml byte for byte,
//! and the leaderboard page's numbers are leaderboard.json's. Then again
//! with the page's scripts off: the index lists every card, the tag links
//! are pages listing each tag's cards, card pages show the YAML and every
//! version, the leaderboard table has its numbers, and the controls only the
//! script works (search, Copy, sorting) are not shown.
//!
//! Without Chromium the test says so and passes, except under CI=true (or
//! GALAPAGOS_REQUIRE_CHROMIUM=1) where it fails.

#[path = "common/chromium.rs"]
mod chromium;

use std::collections::{BTreeSet, VecDeque};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("OPENAI_API_KEY");
    c
}

fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}{}",
        c,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn require_chromium() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("GALAPAGOS_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1")
}

/// `galapagos hub serve` on a free loopback port; killed on drop.
pub struct Served {
    child: Child,
    pub url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn serve(home: &Path, hub: &Path) -> Served {
    let mut child = galapagos(home)
        .args(["hub", "serve"])
        .arg(hub)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("hub serve printed no address");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Served { child, url }
}

/// A hub of the shipped cards, topk in two versions, a hostile card, and a
/// leaderboard of best_of_n and topk published with them. Returns the hub
/// folder and the leaderboard's folder.
pub fn make_hub(home: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let hub = dir.join("hub");
    ok(galapagos(home).args(["hub", "init"]).arg(&hub));
    let lb = dir.join("lb");
    ok(galapagos(home)
        .arg("leaderboard")
        .arg(root().join("cards/best_of_n.yaml"))
        .arg(root().join("cards/topk.yaml"))
        .arg("--task")
        .arg(root().join("assets/tasks/circle_packing"))
        .args(["--seeds", "2", "--iterations", "4", "-q"])
        .arg("--out")
        .arg(&lb));
    let mut names: Vec<String> = std::fs::read_dir(root().join("cards"))
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "yaml")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    for name in &names {
        let mut c = galapagos(home);
        c.args(["hub", "publish", name, "--hub"]).arg(&hub);
        if name == "topk" || name == "best_of_n" {
            c.arg("--results").arg(&lb);
        }
        ok(&mut c);
    }
    // A second version of topk with a changed parameter.
    let topk = std::fs::read_to_string(root().join("cards/topk.yaml")).unwrap();
    let changed = dir.join("topk.yaml");
    std::fs::write(&changed, topk.replace("  k: 4", "  k: 6")).unwrap();
    ok(galapagos(home)
        .args(["hub", "publish"])
        .arg(&changed)
        .args(["--version", "2", "--results"])
        .arg(&lb)
        .arg("--hub")
        .arg(&hub));
    // Card text is user content: it must show as text, never run.
    let hostile = topk
        .replace("name: topk", "name: hostile")
        .replace(
            "title: Top-K",
            "title: \"<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>\"",
        )
        .replace(
            "summary: Always",
            "summary: \"</p><b onmouseover=x>bold</b> & 'quotes'\" # Always",
        )
        .replace("tags: [", "tags: [\"<i>tag</i>\", ");
    let hostile_path = dir.join("hostile.yaml");
    std::fs::write(&hostile_path, hostile).unwrap();
    ok(galapagos(home)
        .args(["hub", "publish"])
        .arg(&hostile_path)
        .args(["--namespace", "evil", "--hub"])
        .arg(&hub));
    (hub, lb)
}

/// The open leaderboard page's table holds `lb_json`'s numbers: one row per
/// published line (best_of_n, topk 1 and topk 2), each cell's text and value.
fn assert_leaderboard_is(browser: &mut chromium::Browser, lb_json: &Value) {
    let rows: Vec<Vec<(String, String)>> = serde_json::from_value(
        browser
            .eval(
                "Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(tr => \
                 Array.from(tr.cells).map(td => [td.getAttribute('data-value') || '', td.textContent]))",
            )
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rows.len(), 3, "best_of_n, topk 1 and topk 2: {rows:?}");
    for row in &rows {
        let card_id = &row[0].0;
        let name = card_id.rsplit('/').next().unwrap();
        let line = lb_json["cards"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["card"] == name)
            .unwrap_or_else(|| panic!("{name} not in leaderboard.json"));
        let mean = line["best"]["mean"].as_f64().unwrap();
        assert_eq!(row[3].0.parse::<f64>().unwrap(), mean, "{name} mean");
        assert_eq!(row[3].1, format!("{mean:.4}"));
        let (lo, hi) = (
            line["best"]["ci_low"].as_f64().unwrap(),
            line["best"]["ci_high"].as_f64().unwrap(),
        );
        assert_eq!(row[4].0.parse::<f64>().unwrap(), lo);
        assert_eq!(row[4].1, format!("[{lo:.4}, {hi:.4}]"));
        assert_eq!(row[5].1, lb_json["iterations"].to_string());
        assert_eq!(
            row[6].1,
            lb_json["seeds"].as_array().unwrap().len().to_string()
        );
        assert_eq!(row[2].1, lb_json["model"].as_str().unwrap());
    }
}

fn same_origin_html(base: &str, href: &str) -> bool {
    href.starts_with(base) && (href.ends_with(".html") || href.ends_with('/'))
}

#[test]
fn the_site_works_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (hub, lb) = make_hub(&home, tmp.path());
    let served = serve(&home, &hub);
    let base = served.url.clone();

    let mut browser = match chromium::Browser::start(1920, 1080) {
        Ok(b) => b,
        Err(e) if !require_chromium() => {
            eprintln!("skipped: headless Chromium cannot start here ({e}); CI installs it");
            return;
        }
        Err(e) => panic!("headless Chromium cannot start: {e}"),
    };

    // Crawl every page from the index; check every link on each.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = VecDeque::from([format!("{base}index.html")]);
    let mut checked_links: BTreeSet<String> = BTreeSet::new();
    let started = Instant::now();
    while let Some(url) = queue.pop_front() {
        if !seen.insert(url.clone()) {
            continue;
        }
        browser.goto(&url).unwrap();
        let problems = browser.take_problems();
        assert!(problems.is_empty(), "{url}: {problems:?}");
        let links: Vec<String> = serde_json::from_value(
            browser
                .eval(
                    "Array.from(document.querySelectorAll('a[href], link[href], script[src]'))\
                     .map(e => e.href || e.src).filter(h => !h.startsWith('data:'))",
                )
                .unwrap(),
        )
        .unwrap();
        assert!(!links.is_empty(), "{url} has no links");
        for link in links {
            let link = link.split('#').next().unwrap().to_owned();
            assert!(link.starts_with(&base), "{url} links off the site: {link}");
            if checked_links.insert(link.clone()) {
                let status = browser
                    .eval(&format!(
                        "fetch({}).then(r => r.status)",
                        serde_json::to_string(&link).unwrap()
                    ))
                    .unwrap();
                assert_eq!(status, 200, "{url} links to {link}, which answers {status}");
            }
            if same_origin_html(&base, &link) && !seen.contains(&link) {
                queue.push_back(link);
            }
        }
        // No card text ran as script anywhere.
        assert_eq!(
            browser.eval("window.__pwned === undefined").unwrap(),
            true,
            "{url}"
        );
    }
    let card_pages = seen.iter().filter(|u| u.contains("/cards/")).count();
    let shipped = std::fs::read_dir(root().join("cards")).unwrap().count();
    assert!(
        card_pages > shipped,
        "{card_pages} card pages for {shipped} shipped cards (+1 hostile)"
    );
    assert!(
        seen.iter()
            .any(|u| u.contains("/leaderboards/circle_packing")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|u| u.ends_with("how-to-run.html")));
    eprintln!(
        "{} pages and {} links checked in {:.1} s",
        seen.len(),
        checked_links.len(),
        started.elapsed().as_secs_f64()
    );

    // Search narrows the index.
    browser.goto(&format!("{base}index.html")).unwrap();
    let total = browser
        .eval("document.querySelectorAll('#cards > li:not([hidden])').length")
        .unwrap()
        .as_u64()
        .unwrap();
    let shown = browser
        .eval(
            "(() => { const s = document.getElementById('search'); s.value = 'pareto'; \
             s.dispatchEvent(new Event('input')); \
             return Array.from(document.querySelectorAll('#cards > li:not([hidden])')).map(li => li.querySelector('h2').textContent); })()",
        )
        .unwrap();
    let shown: Vec<String> = serde_json::from_value(shown).unwrap();
    assert!(total > 10, "{total} cards on the index");
    assert!(
        !shown.is_empty() && (shown.len() as u64) < total,
        "search showed {shown:?} of {total}"
    );
    assert!(
        shown.iter().any(|t| t.to_lowercase().contains("pareto")),
        "{shown:?}"
    );
    let count = browser
        .eval("document.getElementById('count').textContent")
        .unwrap();
    assert_eq!(count, format!("{} of {total} cards", shown.len()));

    // The card page's YAML is the published card.yaml, byte for byte.
    for (ns, name, version) in [
        ("default", "topk", "2"),
        ("evil", "hostile", "1"),
        ("default", "pareto", "1"),
    ] {
        let published =
            std::fs::read_to_string(hub.join(ns).join(name).join(version).join("card.yaml"))
                .unwrap();
        browser
            .goto(&format!("{base}cards/{ns}/{name}/index.html"))
            .unwrap();
        let shown = browser
            .eval("document.getElementById('card-yaml').textContent")
            .unwrap();
        assert_eq!(shown.as_str().unwrap(), published, "{ns}/{name}");
        let raw = browser
            .eval(&format!("fetch('{version}/card.yaml').then(r => r.text())"))
            .unwrap();
        assert_eq!(
            raw.as_str().unwrap(),
            published,
            "{ns}/{name} raw card.yaml"
        );
    }
    // The hostile card's text is shown as text.
    browser
        .goto(&format!("{base}cards/evil/hostile/index.html"))
        .unwrap();
    let h1 = browser
        .eval("document.querySelector('h1').textContent")
        .unwrap();
    assert_eq!(
        h1,
        "<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('main script, main img, main b').length")
            .unwrap(),
        0
    );
    // topk's page lists both versions and the diff between them.
    browser
        .goto(&format!("{base}cards/default/topk/index.html"))
        .unwrap();
    let diff = browser
        .eval("document.querySelector('.diff').textContent")
        .unwrap();
    let diff = diff.as_str().unwrap();
    assert!(
        diff.contains("-  k: 4") && diff.contains("+  k: 6"),
        "{diff}"
    );
    let svg_blocks = browser
        .eval("document.querySelectorAll('svg.blocks g.block').length")
        .unwrap();
    assert_eq!(svg_blocks, 6);

    // The leaderboard page's numbers are leaderboard.json's.
    let lb_json: Value =
        serde_json::from_str(&std::fs::read_to_string(lb.join("leaderboard.json")).unwrap())
            .unwrap();
    browser
        .goto(&format!("{base}leaderboards/circle_packing.html"))
        .unwrap();
    assert_leaderboard_is(&mut browser, &lb_json);
    // Sorting by a column reorders the rows.
    let order = browser
        .eval(
            "(() => { const b = document.querySelectorAll('#leaderboard thead button')[3]; b.click(); b.click(); \
             return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(tr => Number(tr.cells[3].getAttribute('data-value'))); })()",
        )
        .unwrap();
    let order: Vec<f64> = serde_json::from_value(order).unwrap();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "ascending after two clicks: {order:?}"
    );
    assert!(browser.take_problems().is_empty());
    drop(browser);

    without_scripts(&base, &hub, &lb_json);

    // Screenshots for docs/hub.md (GALAPAGOS_HUB_SCREENSHOTS=DIR), phone and desktop.
    if let Some(dir) = std::env::var_os("GALAPAGOS_HUB_SCREENSHOTS") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (w, h, tag) in [(390, 844, "phone"), (1920, 1080, "desktop")] {
            let mut b = chromium::Browser::start(w, h).unwrap();
            for (page, name) in [
                ("index.html", "index"),
                ("cards/default/topk/index.html", "card"),
                ("leaderboards/circle_packing.html", "leaderboard"),
            ] {
                b.goto(&format!("{base}{page}")).unwrap();
                b.screenshot(&dir.join(format!("hub-{name}-{tag}.png")))
                    .unwrap();
            }
        }
    }
}

/// A visible element's (or every matching element's) text, as a list.
fn texts(browser: &mut chromium::Browser, selector: &str, js_map: &str) -> Vec<String> {
    serde_json::from_value(
        browser
            .eval(&format!(
                "Array.from(document.querySelectorAll({})).filter(e => e.getClientRects().length > 0).map({js_map})",
                serde_json::to_string(selector).unwrap()
            ))
            .unwrap(),
    )
    .unwrap()
}

/// The `NS/NAME` of the cards an index or tag page shows.
fn listed_cards(browser: &mut chromium::Browser) -> BTreeSet<String> {
    texts(
        browser,
        "#cards > li",
        "li => li.querySelector('.id').textContent.split(' · ')[0]",
    )
    .into_iter()
    .collect()
}

/// The site with JavaScript off: everything but search, Copy and sorting.
fn without_scripts(base: &str, hub: &Path, lb_json: &Value) {
    use galapagos::engine::card::Card;
    use galapagos::engine::hub::folder::HubFolder;
    let registry = galapagos::engine::registry::Registry::builtin();
    let folder = HubFolder::open(hub).unwrap();
    // every card: its versions, latest card.yaml and tags
    let mut cards = Vec::new();
    for list in folder.cards().unwrap() {
        let versions: Vec<String> = list.versions.iter().map(|v| v.version.clone()).collect();
        let latest = versions.last().unwrap().clone();
        let path = hub
            .join(&list.namespace)
            .join(&list.name)
            .join(&latest)
            .join("card.yaml");
        let yaml = std::fs::read_to_string(&path).unwrap();
        let tags = Card::from_yaml(&yaml, &path.display().to_string(), &registry)
            .unwrap()
            .tags;
        cards.push((
            format!("{}/{}", list.namespace, list.name),
            versions,
            yaml,
            tags,
        ));
    }
    let all: BTreeSet<String> = cards.iter().map(|c| c.0.clone()).collect();

    let mut browser = chromium::Browser::start(1280, 900).unwrap();
    browser.disable_scripts().unwrap();

    // The index lists every card; the search box, which needs the script,
    // is not shown (and stays hidden: the script is off).
    browser.goto(&format!("{base}index.html")).unwrap();
    assert_eq!(
        browser
            .eval("document.querySelector('.js-only').hidden")
            .unwrap(),
        true,
        "the page's script ran"
    );
    assert_eq!(listed_cards(&mut browser), all);
    assert_eq!(
        browser
            .eval("document.getElementById('search').getClientRects().length")
            .unwrap(),
        0
    );
    assert!(browser.take_problems().is_empty());

    // Tag filters are links to pages: each lists exactly that tag's cards.
    let tag_links: Vec<Vec<String>> = serde_json::from_value(
        browser
            .eval(
                "Array.from(document.querySelectorAll('nav[aria-label=Tags] a'))\
                 .map(a => [a.textContent, a.href])",
            )
            .unwrap(),
    )
    .unwrap();
    let all_tags: BTreeSet<&String> = cards.iter().flat_map(|c| &c.3).collect();
    assert_eq!(
        tag_links
            .iter()
            .map(|l| &l[0])
            .collect::<BTreeSet<&String>>(),
        all_tags,
        "a link per tag"
    );
    for link in &tag_links {
        let (tag, href) = (&link[0], &link[1]);
        browser.goto(href).unwrap();
        let want: BTreeSet<String> = cards
            .iter()
            .filter(|c| c.3.contains(tag))
            .map(|c| c.0.clone())
            .collect();
        assert!(!want.is_empty());
        assert_eq!(listed_cards(&mut browser), want, "tag {tag} ({href})");
        let on = texts(
            &mut browser,
            "nav[aria-label=Tags] a.on",
            "a => a.textContent",
        );
        assert_eq!(on, std::slice::from_ref(tag), "{href} marks its tag");
        assert!(browser.take_problems().is_empty(), "{href}");
    }

    // Every card page shows the card's YAML (byte for byte) and every
    // version, newest first; a version's diff opens without the script.
    for (id, versions, yaml, _) in &cards {
        browser
            .goto(&format!("{base}cards/{id}/index.html"))
            .unwrap();
        let shown = browser
            .eval("document.getElementById('card-yaml').textContent")
            .unwrap();
        assert_eq!(shown.as_str().unwrap(), yaml, "{id}");
        let mut listed = texts(
            &mut browser,
            "#versions + .panel tbody tr",
            "tr => tr.cells[0].textContent",
        );
        listed.reverse();
        assert_eq!(&listed, versions, "{id}");
        assert_eq!(
            texts(&mut browser, "a[download]", "a => a.textContent"),
            ["Download card.yaml"],
            "{id}"
        );
        assert!(
            texts(&mut browser, "button", "b => b.textContent").is_empty(),
            "{id}: no button that needs the script is shown"
        );
        assert_eq!(
            browser
                .eval("document.querySelectorAll('svg.blocks g.block').length")
                .unwrap(),
            6,
            "{id}"
        );
        assert!(browser.take_problems().is_empty(), "{id}");
    }
    browser
        .goto(&format!("{base}cards/default/topk/index.html"))
        .unwrap();
    let diff = browser
        .eval(
            "(() => { const d = document.querySelector('#versions + .panel details'); d.open = true; \
             return d.querySelector('.diff').getClientRects().length > 0 && d.querySelector('.diff').textContent; })()",
        )
        .unwrap();
    let diff = diff.as_str().unwrap_or_default();
    assert!(diff.contains("+  k: 6"), "{diff}");

    // The leaderboard's table and numbers are there; its headings are text
    // (sorting needs the script).
    browser
        .goto(&format!("{base}leaderboards/circle_packing.html"))
        .unwrap();
    assert_leaderboard_is(&mut browser, lb_json);
    assert_eq!(
        texts(
            &mut browser,
            "#leaderboard thead th",
            "th => th.textContent"
        ),
        [
            "Card",
            "Version",
            "Model",
            "Best mean",
            "95 % interval",
            "Iterations",
            "Seeds",
            "Cost (USD)"
        ]
    );
    assert!(texts(&mut browser, "#leaderboard button", "b => b.textContent").is_empty());
    assert!(browser.take_problems().is_empty());
}
