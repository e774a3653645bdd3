#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! What comes from elsewhere, made hostile: an agent that writes git metadata
//! into its child, a crafted run folder, a hub site and a hub folder whose
//! versions are paths, a hub that redirects to another host, task folders
//! whose files link out of them, a FIFO as a program, oversize files. Each
//! test shows a hole that was open and checks that the refusal names the
//! file and why, and that nothing was written or read outside the folder.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::archive::Archive;
use galapagos::engine::card::Card;
use galapagos::engine::hub::folder::{HubFolder, PublishOptions};
use galapagos::engine::hub::pull::{HubRef, pull_into};
use galapagos::engine::hub::site::build_site;
use galapagos::engine::registry::Registry;
use galapagos::engine::task::Task;

const SECRET: &str = "HOST-FILE-SECRET-5d1c";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.current_dir(root()).env("HOME", home).stdin(Stdio::null());
    c
}

/// Every path under `dir` (folders too), relative, `/`-separated.
fn all_paths(dir: &Path) -> Vec<String> {
    fn go(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            out.push(path.clone());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                go(&e.path(), &path, out);
            }
        }
    }
    let mut out = Vec::new();
    go(dir, "", &mut out);
    out.sort();
    out
}

/// A name git would take for `.git` somewhere.
fn gitlike(path: &str) -> bool {
    path.split('/').any(|c| {
        let c = c.to_ascii_lowercase();
        c.trim_end_matches(['.', ' ']) == ".git" || c == "git~1"
    })
}

// ---------------------------------------------------------------------------
// A coding agent's child
// ---------------------------------------------------------------------------

/// fit_package with `evolve: ["fitpkg/**"]`, in `dir`.
fn fit_package_evolving_everything(dir: &Path) -> PathBuf {
    let task = dir.join("fit_package");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(root().join("assets/tasks/fit_package"))
        .arg(&task)
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::write(
        task.join("config.yaml"),
        "evolve: [\"fitpkg/**\"]\ncontext: [\"README.md\"]\nevaluator:\n  timeout: 60\n",
    )
    .unwrap();
    task
}

#[test]
fn an_agent_that_writes_git_metadata_into_its_child_has_it_dropped_and_apply_writes_none() {
    if !Path::new("/usr/bin/bwrap").exists() && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED: the agent sandbox needs bubblewrap (apt-get install bubblewrap)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let task = fit_package_evolving_everything(dir.path());
    let marker = dir.path().join("FSMONITOR-RAN");
    // A repository git reads (HEAD, objects, refs) whose config runs a
    // command on `git status`; and the names other file systems take for
    // `.git`.
    let script = format!(
        "for g in .git .GIT git~1 '.git.'; do \
           mkdir -p \"fitpkg/$g/objects/info\" \"fitpkg/$g/refs/heads\"; \
           printf 'ref: refs/heads/main\\n' > \"fitpkg/$g/HEAD\"; \
           printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {marker}\"\\n' > \"fitpkg/$g/config\"; \
           : > \"fitpkg/$g/objects/info/packs\"; : > \"fitpkg/$g/refs/heads/keep\"; \
         done; \
         sed -i 's/0.40, 0.70/0.40, 0.71/' fitpkg/model.py",
        marker = marker.display()
    );
    let yaml = format!(
        "name: agent_git\nnamespace: user\nsummary: an agent that writes git metadata\n\
         population:\n  kind: in_memory\n\
         selection_policy:\n  kind: identity\n\
         prompt_builder:\n  kind: default\n\
         proposer:\n  kind: agent_command\n  command: [/bin/sh, -c, {script:?}, agent]\n  timeout_secs: 300\n\
         evaluator:\n  kind: subprocess\n  timeout_secs: 60\n\
         memory:\n  kind: none\n\
         general:\n  max_iterations: 1\n  parallel: 1\n"
    );
    let card = dir.path().join("agent_git.yaml");
    std::fs::write(&card, yaml).unwrap();
    let out = dir.path().join("runs");
    let o = galapagos(&home)
        .arg("run")
        .arg(&card)
        .arg("--task")
        .arg(&task)
        .args(["--quiet", "--iterations", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let run = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let genomes = Archive::open(&run).unwrap().genomes().unwrap();
    let child = genomes.iter().find(|g| g.id == 1).expect("a child");
    let paths: Vec<&str> = child.content.files().map(|(p, _)| p).collect();
    assert!(
        !paths.iter().any(|p| gitlike(p)),
        "the child kept git metadata: {paths:?}"
    );
    assert!(
        child
            .content
            .text_of("fitpkg/model.py")
            .unwrap()
            .contains("0.71"),
        "the agent's real edit was kept"
    );

    let applied = dir.path().join("applied");
    let o = galapagos(&home)
        .arg("apply")
        .arg(&run)
        .args(["--genome", "1", "--to"])
        .arg(&applied)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written = all_paths(&applied);
    assert!(
        !written.iter().any(|p| gitlike(p)),
        "apply wrote git metadata: {written:?}"
    );
    let _ = Command::new("git")
        .arg("status")
        .current_dir(applied.join("fitpkg"))
        .env("GIT_CEILING_DIRECTORIES", dir.path())
        .output();
    assert!(
        !marker.exists(),
        "git status in the applied folder ran the agent's command"
    );
}

// ---------------------------------------------------------------------------
// A crafted run folder
// ---------------------------------------------------------------------------

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn inflate(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A recorded run of fit_package with one genome, #0, whose program tree
/// also has `extra` paths (each with the contents of one of its files), as
/// a crafted archive.sqlite would hold them (the tree's id matches its
/// manifest).
fn crafted_run(dir: &Path, extra: &[String]) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = dir.join("runs");
    let o = galapagos(&home)
        .args([
            "run",
            "cards/best_of_n.yaml",
            "--task",
            "assets/tasks/fit_package",
        ])
        .args(["--iterations", "1", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let db = rusqlite::Connection::open(run.join("archive.sqlite")).unwrap();
    let json: String = db
        .query_row("SELECT json FROM genomes WHERE id = 0", [], |r| r.get(0))
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let old = value["content"]["tree"].as_str().unwrap().to_owned();
    let manifest: Vec<u8> = db
        .query_row("SELECT manifest FROM trees WHERE id = ?1", [&old], |r| {
            r.get(0)
        })
        .unwrap();
    let manifest = String::from_utf8(inflate(&manifest)).unwrap();
    let mut files: BTreeMap<String, String> = manifest
        .lines()
        .map(|l| {
            let (p, b) = l.split_once('\0').unwrap();
            (p.to_owned(), b.to_owned())
        })
        .collect();
    let blob = files.values().next().unwrap().clone();
    for p in extra {
        files.insert(p.clone(), blob.clone());
    }
    let mut crafted = String::new();
    for (p, b) in &files {
        crafted.push_str(&format!("{p}\0{b}\n"));
    }
    let id = sha256_hex(crafted.as_bytes());
    db.execute(
        "INSERT INTO trees(id, manifest) VALUES (?1, ?2)",
        rusqlite::params![id, deflate(crafted.as_bytes())],
    )
    .unwrap();
    db.execute(
        "UPDATE genomes SET json = ?1 WHERE id = 0",
        [json.replace(&old, &id)],
    )
    .unwrap();
    db.execute("DELETE FROM genomes WHERE id <> 0", []).unwrap();
    run
}

#[test]
fn a_crafted_run_folder_cannot_make_apply_or_export_write_outside_their_folder() {
    let dir = tempfile::tempdir().unwrap();
    let abs = dir.path().join("absolute-escape.txt");
    let extra = vec![
        "../escape-parent.txt".to_owned(),
        "fitpkg/../../escape-deep.txt".to_owned(),
        abs.display().to_string(),
        "fitpkg/.git/config".to_owned(),
        "fitpkg/sub/.GIT/config".to_owned(),
    ];
    let run = crafted_run(dir.path(), &extra);
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();

    let applied = target.join("applied");
    let applied_result = galapagos::engine::takeout::apply(&run, Some(0), &applied, false);
    let exported = target.join("exported");
    let exported_result = galapagos::engine::takeout::export_git(&run, &exported);

    let outside: Vec<String> = all_paths(dir.path())
        .into_iter()
        .filter(|p| p.contains("escape"))
        .collect();
    assert!(
        outside.is_empty(),
        "written outside the target: {outside:?}"
    );
    for folder in [&applied, &exported] {
        let git: Vec<String> = all_paths(folder)
            .into_iter()
            .filter(|p| gitlike(p) && !p.starts_with(".git"))
            .collect();
        assert!(git.is_empty(), "{}: {git:?}", folder.display());
    }
    let e = applied_result.unwrap_err().to_string();
    assert!(e.contains("escape") || e.contains(".git"), "{e}");
    let e = exported_result.unwrap_err().to_string();
    assert!(e.contains("escape") || e.contains(".git"), "{e}");
}

// ---------------------------------------------------------------------------
// Hubs
// ---------------------------------------------------------------------------

/// What a tiny loopback server answers for a path.
#[derive(Clone)]
enum Answer {
    Body(Vec<u8>),
    Redirect(String),
}

/// An HTTP/1.1 server on 127.0.0.1 answering from the routes `routes`
/// makes of its port (404 for the rest), until the test process ends.
/// Returns its port.
fn serve_with(routes: impl FnOnce(u16) -> BTreeMap<String, Answer>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let routes = Arc::new(routes(port));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let routes = routes.clone();
            std::thread::spawn(move || answer(stream, &routes));
        }
    });
    port
}

fn serve(routes: BTreeMap<String, Answer>) -> u16 {
    serve_with(|_| routes)
}

fn answer(stream: std::net::TcpStream, routes: &BTreeMap<String, Answer>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).ok();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut s = stream;
    let _ = match routes.get(&path) {
        Some(Answer::Body(b)) => write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            b.len()
        )
        .and_then(|()| s.write_all(b)),
        Some(Answer::Redirect(to)) => write!(
            s,
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        None => write!(
            s,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    };
}

/// A hub folder with best_of_n published (version 1), and its built site.
fn hub_with_a_card(dir: &Path) -> (PathBuf, PathBuf) {
    let registry = Registry::builtin();
    let hub_dir = dir.join("hub");
    let hub = HubFolder::init(&hub_dir).unwrap();
    let card = Card::load(&root().join("cards/best_of_n.yaml"), &registry).unwrap();
    hub.publish(&card, &registry, &PublishOptions::default())
        .unwrap();
    let site = dir.join("site");
    build_site(&hub, &registry, &site).unwrap();
    (hub_dir, site)
}

/// The site's files as routes (`/cards/...`).
fn site_routes(site: &Path) -> BTreeMap<String, Answer> {
    all_paths(site)
        .into_iter()
        .filter(|p| site.join(p).is_file())
        .map(|p| {
            let body = std::fs::read(site.join(&p)).unwrap();
            (format!("/{p}"), Answer::Body(body))
        })
        .collect()
}

#[test]
fn a_hub_site_whose_version_is_a_path_makes_a_pull_write_nothing_outside_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (_, site) = hub_with_a_card(dir.path());
    let registry = Registry::builtin();
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("index.json")).unwrap()).unwrap();
    let absolute = dir.path().join("absolute-escape");
    for version in [
        "../../../../escape-parent".to_owned(),
        absolute.display().to_string(),
        "nested/escape-slash".to_owned(),
    ] {
        let mut crafted = index.clone();
        crafted["cards"][0]["latest"] = version.clone().into();
        crafted["cards"][0]["versions"][0]["version"] = version.clone().into();
        let mut routes = site_routes(&site);
        routes.insert(
            "/index.json".into(),
            Answer::Body(serde_json::to_vec(&crafted).unwrap()),
        );
        let port = serve(routes);
        let cache = dir.path().join("a/b/cache");
        let r = HubRef::parse("default/best_of_n").unwrap();
        let pulled = pull_into(&r, &[format!("http://127.0.0.1:{port}")], &registry, &cache);
        let escaped: Vec<String> = all_paths(dir.path())
            .into_iter()
            .filter(|p| p.contains("escape") && !p.starts_with("a/b/cache"))
            .collect();
        assert!(
            escaped.is_empty(),
            "{version}: written outside the cache: {escaped:?}"
        );
        let slashed: Vec<String> = all_paths(&cache)
            .into_iter()
            .filter(|p| p.contains("escape"))
            .collect();
        assert!(
            slashed.is_empty(),
            "{version}: a version became folders: {slashed:?}"
        );
        let e = pulled.unwrap_err();
        assert!(e.contains(&version) && e.contains("version"), "{e}");
    }
}

#[test]
fn a_hub_folder_whose_versions_are_paths_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = hub_with_a_card(dir.path());
    let registry = Registry::builtin();
    // The card outside the hub, where `../../../outside` leads.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(
        hub.join("default/best_of_n/1/card.yaml"),
        outside.join("card.yaml"),
    )
    .unwrap();
    let versions = hub.join("default/best_of_n/versions.json");
    let mut list: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&versions).unwrap()).unwrap();
    list["versions"][0]["version"] = "../../../outside".into();
    std::fs::write(&versions, serde_json::to_vec(&list).unwrap()).unwrap();
    let cache = dir.path().join("cache");
    let r = HubRef::parse("default/best_of_n").unwrap();
    let e = pull_into(&r, &[hub.display().to_string()], &registry, &cache).unwrap_err();
    assert!(
        e.contains("../../../outside") && e.contains("version"),
        "{e}"
    );
    assert!(all_paths(&cache).iter().all(|p| !p.contains("outside")));
}

#[test]
fn a_hub_redirect_to_another_host_or_port_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, site) = hub_with_a_card(dir.path());
    let registry = Registry::builtin();
    let real = serve(site_routes(&site));
    let r = HubRef::parse("default/best_of_n").unwrap();
    // The same site on its own address pulls.
    let cache = dir.path().join("cache");
    pull_into(&r, &[format!("http://127.0.0.1:{real}")], &registry, &cache).unwrap();

    // Another port (this server has the cards, not the index).
    let mut routes = site_routes(&site);
    routes.insert(
        "/index.json".to_owned(),
        Answer::Redirect(format!("http://127.0.0.1:{real}/index.json")),
    );
    let other_port = serve(routes);
    // Another host name for the same server: its own site, moved to
    // `localhost`.
    let index = std::fs::read(site.join("index.json")).unwrap();
    let host_port = serve_with(|port| {
        let mut routes = site_routes(&site);
        routes.insert(
            "/index.json".to_owned(),
            Answer::Redirect(format!("http://localhost:{port}/moved.json")),
        );
        routes.insert("/moved.json".to_owned(), Answer::Body(index));
        routes
    });
    for (hub, other) in [
        (
            format!("http://127.0.0.1:{other_port}"),
            format!("127.0.0.1:{real}"),
        ),
        (
            format!("http://127.0.0.1:{host_port}"),
            format!("localhost:{host_port}"),
        ),
    ] {
        let cache = dir.path().join("cache2");
        let e = pull_into(&r, std::slice::from_ref(&hub), &registry, &cache).unwrap_err();
        assert!(e.contains("redirect") && e.contains(&other), "{hub}: {e}");
        assert!(
            all_paths(&cache).is_empty(),
            "{hub}: cached {:?}",
            all_paths(&cache)
        );
    }
}

#[test]
fn hub_build_does_not_publish_a_readme_that_links_out_of_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = hub_with_a_card(dir.path());
    let host_file = dir.path().join("host-file");
    std::fs::write(&host_file, SECRET).unwrap();
    let readme = hub.join("default/best_of_n/1/README.md");
    std::fs::remove_file(&readme).unwrap();
    std::os::unix::fs::symlink(&host_file, &readme).unwrap();
    let registry = Registry::builtin();
    let out = dir.path().join("site2");
    let built = build_site(&HubFolder::open(&hub).unwrap(), &registry, &out);
    let leaked = if out.exists() {
        common::hostile::files_containing(&out, SECRET.as_bytes())
    } else {
        Vec::new()
    };
    assert!(
        leaked.is_empty(),
        "the host file is on the site: {leaked:?}"
    );
    let e = built.unwrap_err().to_string();
    assert!(
        e.contains("README.md") && e.contains("symbolic link"),
        "{e}"
    );
}

#[test]
fn an_oversize_card_in_a_hub_folder_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = hub_with_a_card(dir.path());
    let card = hub.join("default/best_of_n/1/card.yaml");
    // 200 MB, sparse: nothing of it is on the disk.
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&card)
        .unwrap();
    f.set_len(200_000_000).unwrap();
    drop(f);
    let registry = Registry::builtin();
    let r = HubRef::parse("default/best_of_n").unwrap();
    let cache = dir.path().join("cache");
    let started = Instant::now();
    let e = pull_into(&r, &[hub.display().to_string()], &registry, &cache).unwrap_err();
    assert!(
        e.contains("card.yaml") && e.contains("200000000 bytes") && e.contains("cap"),
        "{e}"
    );
    let e = build_site(
        &HubFolder::open(&hub).unwrap(),
        &registry,
        &dir.path().join("s"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("card.yaml") && e.contains("cap"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

// ---------------------------------------------------------------------------
// Task folders
// ---------------------------------------------------------------------------

/// A single-file task folder with a host file beside it (outside it).
fn task_folder(dir: &Path) -> (PathBuf, PathBuf) {
    let task = dir.join("task");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(task.join("initial_program.py"), common::PROGRAM).unwrap();
    std::fs::write(
        task.join("evaluator.py"),
        "def evaluate(p):\n    return {}\n",
    )
    .unwrap();
    let host = dir.join("host");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("secret.txt"), SECRET).unwrap();
    (task, host)
}

#[test]
fn a_task_readme_that_links_out_of_the_folder_is_refused() {
    for how in [
        "absolute",
        "relative",
        "through a linked folder",
        "to a parent folder's file",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (task, host) = task_folder(dir.path());
        let readme = task.join("README.md");
        match how {
            "absolute" => std::os::unix::fs::symlink(host.join("secret.txt"), &readme).unwrap(),
            "relative" => std::os::unix::fs::symlink("../host/secret.txt", &readme).unwrap(),
            "through a linked folder" => {
                std::os::unix::fs::symlink(&host, task.join("docs")).unwrap();
                std::os::unix::fs::symlink("docs/secret.txt", &readme).unwrap();
            }
            _ => {
                std::fs::create_dir_all(task.join("sub")).unwrap();
                std::os::unix::fs::symlink("sub/../../host/secret.txt", &readme).unwrap();
            }
        }
        match Task::load(&task) {
            Ok(t) => panic!(
                "{how}: loaded, the model is shown: {:?}",
                t.description.chars().take(80).collect::<String>()
            ),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("README.md") && e.contains("outside"),
                    "{how}: {e}"
                );
                assert!(!e.contains(SECRET), "{how}: {e}");
            }
        }
    }
}

#[test]
fn a_single_file_program_that_links_out_of_the_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (task, host) = task_folder(dir.path());
    std::fs::remove_file(task.join("initial_program.py")).unwrap();
    std::fs::write(host.join("prog.py"), format!("# {SECRET}\n")).unwrap();
    std::os::unix::fs::symlink(host.join("prog.py"), task.join("initial_program.py")).unwrap();
    let e = Task::load(&task).map(|t| t.initial_program.text().into_owned());
    let e = e.unwrap_err().to_string();
    assert!(
        e.contains("initial_program.py") && e.contains("outside"),
        "{e}"
    );
}

#[test]
fn a_fifo_as_the_initial_program_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let (task, _) = task_folder(dir.path());
    let fifo = task.join("initial_program.py");
    std::fs::remove_file(&fifo).unwrap();
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let t = task.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Task::load(&t).map(|_| ()).map_err(|e| e.to_string()));
    });
    let got = rx.recv_timeout(Duration::from_secs(60));
    if got.is_err() {
        // release the blocked reader, then fail
        let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        panic!("Task::load waited on the FIFO for 60 s");
    }
    let e = got.unwrap().unwrap_err();
    assert!(
        e.contains("initial_program.py") && e.contains("FIFO"),
        "{e}"
    );
}

/// The peak resident memory (MiB) of `cmd` while it runs to its end.
fn peak_mib(mut cmd: Command) -> (u64, String) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let pid = child.id();
    let watcher = std::thread::spawn(move || {
        let mut peak = 0u64;
        loop {
            let Ok(text) = std::fs::read_to_string(&status) else {
                return peak;
            };
            let hwm = text
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<u64>().ok());
            match hwm {
                Some(kib) => peak = peak.max(kib / 1024),
                None => return peak, // a zombie: it has ended
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = pid;
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (watcher.join().unwrap(), said)
}

#[test]
fn an_oversize_gitignore_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("repo_task");
    let program = task.join("initial_program");
    std::fs::create_dir_all(program.join("pkg")).unwrap();
    std::fs::write(
        program.join("pkg/a.py"),
        "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n",
    )
    .unwrap();
    std::fs::write(
        task.join("evaluator.py"),
        "def evaluate(p):\n    return {}\n",
    )
    .unwrap();
    // 32 MiB of patterns.
    let line = format!("{}\n", "a".repeat(1023));
    std::fs::write(program.join(".gitignore"), line.repeat(32 * 1024)).unwrap();
    let e = Task::load(&task).unwrap_err().to_string();
    assert!(
        e.contains(".gitignore") && e.contains("cap for a .gitignore file"),
        "{e}"
    );
    // The whole command line stays small.
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = galapagos(&home);
    cmd.args(["run", "cards/best_of_n.yaml", "--task"])
        .arg(&task)
        .args(["--iterations", "1", "--quiet", "--out"])
        .arg(dir.path().join("runs"));
    let (peak, said) = peak_mib(cmd);
    assert!(said.contains(".gitignore"), "{said}");
    assert!(
        peak < 300,
        "the run took {peak} MiB before refusing: {said}"
    );
}
