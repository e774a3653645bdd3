#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The hub as a user drives it from an empty HOME: init, publish (versions
//! kept and listed, git commits), build, serve, and pulling by name over
//! loopback HTTP and from the folder, with the refusals: a card with a key
//! in it, a name collision, a malformed bundle, a hub that is down or
//! answers garbage (a clear error naming the address, nothing cached).

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::hub::{fails, galapagos, ok, serve};

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A one-shot server on loopback answering every request with `body`.
fn garbage_server(body: &'static str) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        listener.set_nonblocking(false).unwrap();
        // at most a few requests, then stop
        for stream in listener.incoming().take(2).flatten() {
            let mut s = stream;
            s.set_read_timeout(Some(Duration::from_secs(10))).ok();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, handle)
}

#[test]
fn publish_build_serve_and_pull_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let hub = tmp.path().join("hub");
    let out = ok(galapagos(&home).args(["hub", "init"]).arg(&hub));
    assert!(out.contains("hub folder"), "{out}");
    assert!(hub.join("hub.json").is_file());
    let git = hub.join(".git").exists();

    // Publish two shipped cards, one under a team namespace.
    ok(galapagos(&home)
        .args(["hub", "publish", "topk", "--hub"])
        .arg(&hub));
    let out = ok(galapagos(&home)
        .args([
            "hub",
            "publish",
            "best_of_n",
            "--namespace",
            "team",
            "--hub",
        ])
        .arg(&hub));
    assert!(out.contains("published team/best_of_n version 1"), "{out}");
    assert!(hub.join("team/best_of_n/1/card.yaml").is_file());
    assert!(hub.join("team/best_of_n/1/README.md").is_file());

    // A name collision: refused without --version, naming the versions.
    let err = fails(
        galapagos(&home)
            .args(["hub", "publish", "topk", "--hub"])
            .arg(&hub),
    );
    assert!(
        err.contains("default/topk") && err.contains("versions 1") && err.contains("--version"),
        "{err}"
    );
    // An existing version: refused.
    let err = fails(
        galapagos(&home)
            .args(["hub", "publish", "topk", "--version", "1", "--hub"])
            .arg(&hub),
    );
    assert!(err.contains("already published"), "{err}");
    // A new version: kept beside the first, listed in order.
    let topk2 = tmp.path().join("topk.yaml");
    let yaml = galapagos::engine::builtin::card("topk")
        .unwrap()
        .yaml
        .replace("  k: 4", "  k: 5");
    std::fs::write(&topk2, &yaml).unwrap();
    ok(galapagos(&home)
        .args(["hub", "publish"])
        .arg(&topk2)
        .args(["--version", "2", "--hub"])
        .arg(&hub));
    let versions: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(hub.join("default/topk/versions.json")).unwrap(),
    )
    .unwrap();
    let listed: Vec<&str> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["1", "2"]);
    assert!(
        std::fs::read_to_string(hub.join("default/topk/1/card.yaml"))
            .unwrap()
            .contains("k: 4")
    );
    assert!(
        std::fs::read_to_string(hub.join("default/topk/2/card.yaml"))
            .unwrap()
            .contains("k: 5")
    );
    if git {
        let log = Command::new("git")
            .arg("-C")
            .arg(&hub)
            .args(["log", "--format=%s"])
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&log.stdout).into_owned();
        assert!(log.contains("Publish default/topk version 2"), "{log}");
        assert!(log.contains("Publish team/best_of_n version 1"), "{log}");
        let status = Command::new("git")
            .arg("-C")
            .arg(&hub)
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert!(
            status.stdout.is_empty(),
            "uncommitted: {}",
            String::from_utf8_lossy(&status.stdout)
        );
    }

    // A card with a key in it: refused, nothing written.
    let keyed = tmp.path().join("keyed.yaml");
    let leaked = galapagos::engine::builtin::card("topk")
        .unwrap()
        .yaml
        .replace("name: topk", "name: keyed")
        .replace(
            "summary: Always",
            "summary: my key is sk-proj-abcdefghijklmnopqrstuvwx12345. Always",
        );
    std::fs::write(&keyed, leaked).unwrap();
    let err = fails(
        galapagos(&home)
            .args(["hub", "publish"])
            .arg(&keyed)
            .arg("--hub")
            .arg(&hub),
    );
    assert!(
        err.contains("never shared with a secret") && err.contains("card.yaml"),
        "{err}"
    );
    assert!(!hub.join("default/keyed").exists());

    // A malformed bundle: refused with the file and line.
    let bad = tmp.path().join("bad_bundle");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("card.yaml"),
        "name: bad\nnamespace: x\npopulation: {kind: nope}\n",
    )
    .unwrap();
    let err = fails(
        galapagos(&home)
            .args(["hub", "publish"])
            .arg(&bad)
            .arg("--hub")
            .arg(&hub),
    );
    assert!(err.contains("card.yaml:"), "{err}");
    let not_gz = tmp.path().join("broken.tar.gz");
    std::fs::write(&not_gz, [0x1f, 0x8b, 0, 1, 2, 3]).unwrap();
    let err = fails(
        galapagos(&home)
            .args(["hub", "publish"])
            .arg(&not_gz)
            .arg("--hub")
            .arg(&hub),
    );
    assert!(err.contains("broken.tar.gz"), "{err}");
    assert!(!hub.join("x").exists());

    // Build, serve, and pull by name over loopback HTTP.
    let site = tmp.path().join("site");
    let out = ok(galapagos(&home)
        .args(["hub", "build"])
        .arg(&hub)
        .arg("--out")
        .arg(&site));
    assert!(out.contains("2 cards"), "{out}");
    assert!(
        site.join("index.json").is_file() && site.join("cards/default/topk/2/card.yaml").is_file()
    );
    let served = serve(&home, &hub);
    let url = served.1.clone();
    let out = ok(galapagos(&home).args(["validate", "default/topk", "--hub", &url]));
    assert!(
        out.contains("default/topk@2 from") && out.contains(&url),
        "{out}"
    );
    let out = ok(galapagos(&home).args(["validate", "default/topk@1", "--hub", &url]));
    assert!(out.contains("default/topk@1"), "{out}");
    let cache = home.join(".cache");
    let cached: Vec<PathBuf> = files_under(&cache);
    let card1 = cached
        .iter()
        .find(|p| p.ends_with("default/topk/1/card.yaml"))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(card1).unwrap(),
        std::fs::read_to_string(hub.join("default/topk/1/card.yaml")).unwrap()
    );
    let source: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(card1.with_file_name("source.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(source["hub"], url.as_str());
    assert_eq!(source["version"], "1");
    assert_eq!(
        source["source"],
        format!("{url}cards/default/topk/1/card.yaml")
    );

    // Import from the hub writes a card file; run from the hub runs it.
    let cards = tmp.path().join("cards");
    ok(galapagos(&home)
        .args(["import", "team/best_of_n", "--hub", &url, "--out"])
        .arg(&cards));
    assert!(cards.join("best_of_n.yaml").is_file());
    let runs = tmp.path().join("runs");
    let out = ok(galapagos(&home)
        .args([
            "run",
            "default/topk@2",
            "--hub",
            &url,
            "--task",
            "circle_packing",
            "--iterations",
            "2",
            "-q",
            "--out",
        ])
        .arg(&runs));
    assert!(
        out.contains("default/topk@2 from") && out.contains("status:"),
        "{out}"
    );

    // Hubs from the settings file, the folder hub too.
    let settings = home.join(".config/galapagos/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        format!(
            "{{\"hubs\": [{}]}}\n",
            serde_json::to_string(&hub.display().to_string()).unwrap()
        ),
    )
    .unwrap();
    let out = ok(galapagos(&home).args(["validate", "team/best_of_n"]));
    assert!(
        out.contains("team/best_of_n@1 from") && out.contains(&hub.display().to_string()),
        "{out}"
    );
    std::fs::remove_file(&settings).unwrap();

    // Names the hub does not have, and versions it does not have.
    let err = fails(galapagos(&home).args(["validate", "default/nothing", "--hub", &url]));
    assert!(err.contains("has no default/nothing"), "{err}");
    let err = fails(galapagos(&home).args(["validate", "default/topk@9", "--hub", &url]));
    assert!(
        err.contains("no version `9`") && err.contains("1, 2"),
        "{err}"
    );
    let err = fails(galapagos(&home).args(["validate", "default/topk"]));
    assert!(err.contains("no hub to pull from"), "{err}");
    drop(served);

    // A hub that is down, and one that answers garbage: a clear error, nothing cached.
    let before = files_under(&cache);
    let down = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        drop(l);
        format!("http://{a}/")
    };
    let err = fails(galapagos(&home).args(["validate", "default/other", "--hub", &down]));
    assert!(
        err.contains(&format!("{down}index.json")) && err.contains("cannot reach the hub"),
        "{err}"
    );
    let (garbage, handle) = garbage_server("<html>this is not a hub</html>");
    let err = fails(galapagos(&home).args(["validate", "default/other", "--hub", &garbage]));
    assert!(
        err.contains(&format!("{garbage}index.json")) && err.contains("not a hub site"),
        "{err}"
    );
    drop(handle);
    assert_eq!(
        files_under(&cache),
        before,
        "a failed pull cached something"
    );
}

/// A hub is given in three forms wherever one is given: a hub folder, a
/// built hub site's folder (each as a path or a `file://` address), or a
/// site's `http://` address; pulling by name and listing (the studio's
/// library) take each, and a folder that is neither says what a hub is.
#[test]
fn a_hub_is_a_folder_a_built_site_or_a_file_address() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let hub = tmp.path().join("hub");
    ok(galapagos(&home).args(["hub", "init"]).arg(&hub));
    ok(galapagos(&home)
        .args(["hub", "publish", "topk", "--hub"])
        .arg(&hub));
    let site = tmp.path().join("site");
    ok(galapagos(&home)
        .args(["hub", "build"])
        .arg(&hub)
        .arg("--out")
        .arg(&site));
    let file_url = |p: &Path| format!("file://{}", p.display());
    for given in [
        hub.display().to_string(),
        site.display().to_string(),
        file_url(&hub),
        file_url(&site),
    ] {
        let out = ok(galapagos(&home).args(["validate", "default/topk", "--hub", &given]));
        assert!(out.contains("default/topk@1"), "{given}: {out}");
        let registry = galapagos::engine::registry::Registry::builtin();
        let listed = galapagos::engine::hub::pull::list_cards(&given, &registry).unwrap();
        assert_eq!(
            listed.iter().map(|c| c.id()).collect::<Vec<_>>(),
            ["default/topk"],
            "{given}"
        );
    }
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = fails(galapagos(&home).args([
        "validate",
        "default/topk",
        "--hub",
        &plain.display().to_string(),
    ]));
    assert!(
        err.contains("not a hub") && err.contains("hub.json") && err.contains("index.json"),
        "{err}"
    );
}

/// The `data-value` of every cell of the rows of the table `id` in `html`,
/// one list per row.
fn table_values(html: &str, id: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let table = &html[start..];
    let body = &table[table.find("<tbody>").unwrap()..table.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("data-value=\"")
                .skip(1)
                .map(|v| v[..v.find('"').unwrap()].to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn a_suite_leaderboard_published_with_its_cards_has_its_page() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // two benchmark tasks, one where higher is better and one where lower is
    let suite = tmp.path().join("pair");
    for task in ["circle_packing", "min_max_distance_16_2d"] {
        let to = suite.join(task);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(root.join("assets/tasks").join(task)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
    let lb = tmp.path().join("lb");
    ok(galapagos(&home)
        .args(["leaderboard", "best_of_n", "topk", "--suite"])
        .arg(&suite)
        .args(["--seeds", "2", "--iterations", "2", "-q", "--out"])
        .arg(&lb));
    let sl: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lb.join("suite.json")).unwrap()).unwrap();
    let hub = tmp.path().join("hub");
    ok(galapagos(&home).args(["hub", "init"]).arg(&hub));
    for card in ["best_of_n", "topk"] {
        ok(galapagos(&home)
            .args(["hub", "publish", card, "--results"])
            .arg(&lb)
            .arg("--hub")
            .arg(&hub));
        let readme =
            std::fs::read_to_string(hub.join("default").join(card).join("1/README.md")).unwrap();
        assert!(
            readme.contains("## Results") && readme.contains("On the suite `pair` (2 tasks)"),
            "{readme}"
        );
        let line: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(hub.join("default").join(card).join("1/results.json"))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(line["task"], "pair");
        assert_eq!(line["suite"]["tasks"].as_array().unwrap().len(), 2);
    }
    // a card the suite did not run is refused, nothing published
    let err = fails(
        galapagos(&home)
            .args(["hub", "publish", "shinka", "--results"])
            .arg(&lb)
            .arg("--hub")
            .arg(&hub),
    );
    assert!(err.contains("`shinka` is not on this leaderboard"), "{err}");
    assert!(!hub.join("default/shinka").exists());

    let site = tmp.path().join("site");
    ok(galapagos(&home)
        .args(["hub", "build"])
        .arg(&hub)
        .arg("--out")
        .arg(&site));
    let index = std::fs::read_to_string(site.join("leaderboards/index.html")).unwrap();
    assert!(
        index.contains(r#"<a href="suites/pair.html">pair</a>"#) && index.contains("2 tasks"),
        "{index}"
    );
    let page = std::fs::read_to_string(site.join("leaderboards/suites/pair.html")).unwrap();
    // the cards over the suite: best score first, each with suite.json's score
    let cards = sl["cards"].as_array().unwrap();
    let mut by_score: Vec<&serde_json::Value> = cards.iter().collect();
    by_score.sort_by(|a, b| {
        b["score"]["mean"]
            .as_f64()
            .unwrap()
            .total_cmp(&a["score"]["mean"].as_f64().unwrap())
    });
    let rows = table_values(&page, "suite");
    assert_eq!(rows.len(), 2, "{page}");
    for (row, card) in rows.iter().zip(&by_score) {
        assert_eq!(
            row[0],
            format!("default/{}", card["card"].as_str().unwrap())
        );
        let score = &card["score"];
        assert_eq!(
            row[1].parse::<f64>().unwrap(),
            score["mean"].as_f64().unwrap()
        );
        assert_eq!(
            row[2].parse::<f64>().unwrap(),
            score["ci_low"].as_f64().unwrap()
        );
        assert_eq!(row[3], card["tasks_reached"].to_string());
    }
    // by task: each cell is the card's mean best value on that task
    let rows = table_values(&page, "suite-tasks");
    let tasks = sl["tasks"].as_array().unwrap();
    assert_eq!(rows.len(), tasks.len());
    for (row, task) in rows.iter().zip(tasks) {
        for (cell, card) in row.iter().zip(&by_score) {
            let line = task["cards"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["card"] == card["card"])
                .unwrap();
            assert_eq!(
                cell.parse::<f64>().unwrap(),
                line["value"]["best"]["mean"].as_f64().unwrap(),
                "{}",
                task["task"]
            );
        }
    }
    assert!(page.contains("min_max_distance_16_2d") && page.contains(">min<"));
    let card_page = std::fs::read_to_string(site.join("cards/default/topk/index.html")).unwrap();
    assert!(
        card_page.contains(r#"href="../../../leaderboards/suites/pair.html">suite pair</a>"#),
        "{card_page}"
    );
}
