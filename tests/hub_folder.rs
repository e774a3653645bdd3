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
