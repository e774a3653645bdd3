#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The studio and the hub, through the UI: the library lists a hub's cards
//! with their summaries, the search box narrows them, a click pulls one
//! (cached, saying where it came from) and opens it; the Details tab
//! publishes the card to a hub folder as a new version, says where it is
//! published, and shows the refusals in plain words (a taken name, a key in
//! the card) without writing anything.

use std::path::Path;
use std::sync::Arc;

use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::card::Card;
use galapagos::engine::hub::folder::{HubFolder, PublishOptions};
use galapagos::engine::registry::Registry;
use galapagos::studio::App;
use galapagos::studio::state::State;

/// Step the UI until `done` holds (a background job finished), for at most
/// two minutes: the jobs run on threads of a loaded machine.
fn wait_until(h: &mut Harness<'static, App>, what: &str, done: impl Fn(&App) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(120) {
        h.step();
        if done(h.state()) {
            settle(h);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!(
        "timed out waiting for {what}; last message: {:?}",
        h.state().message()
    );
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// Let the UI take in the last input: a few frames (`run` would wait for
/// a spinner of a background job to stop).
fn settle(h: &mut Harness<'static, App>) {
    h.run_steps(4);
}

/// Click a field by its label and type `text` after what it holds.
fn type_into(h: &mut Harness<'static, App>, label: &str, text: &str) {
    click(h, label);
    h.get_by_label(label).type_text(text);
    settle(h);
}

fn click(h: &mut Harness<'static, App>, label: &str) {
    h.get_by_label(label).scroll_to_me();
    settle(h);
    h.get_by_label(label).click();
    settle(h);
}

/// The hub's files outside its git folder.
fn hub_files(hub: &Path) -> Vec<String> {
    files_under(hub)
        .into_iter()
        .filter(|f| !f.starts_with(".git"))
        .collect()
}

#[test]
fn the_library_lists_and_opens_hub_cards_and_details_publishes_to_a_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin());
    let hub_dir = tmp.path().join("hub");
    let hub_text = hub_dir.display().to_string();
    let cache = tmp.path().join("cache");
    let hub = HubFolder::init(&hub_dir).unwrap();
    for name in ["topk", "pareto"] {
        let b = galapagos::engine::builtin::card(name).unwrap();
        let card = Card::from_yaml(b.yaml, name, &registry).unwrap();
        hub.publish(&card, &registry, &PublishOptions::default())
            .unwrap();
    }

    let mut app = App::new(State::default(), registry.clone());
    app.launch(galapagos::studio::StudioLaunch {
        card: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/cards/best_of_n.yaml").into()),
        task: None,
    });
    app.set_hubs(vec![hub_text.clone()]);
    app.set_hub_cache(cache.clone());
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .with_max_steps(16)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    wait_until(&mut h, "the hub listing", |a| {
        a.hub_shelf().cards.len() == 2
    });
    assert!(h.state().hub_shelf().problems.is_empty());
    settle(&mut h);
    // each card with its title, name and summary
    h.get_by_label("Top-K (default/topk)");
    h.get_by_label("Pareto front (NSGA-II) (default/pareto)");
    // (once among the built-in cards, once among the hub's)
    assert_eq!(
        h.query_all_by_label(
            "Always refine the single best program, showing the next k best programs as inspirations."
        )
        .count(),
        2
    );

    // the search box narrows the list (a word of the summary)
    type_into(&mut h, "Search hub cards", "crowding");
    assert!(h.query_by_label("Top-K (default/topk)").is_none());
    assert_eq!(
        h.state()
            .hub_shelf()
            .matching()
            .iter()
            .map(|c| c.id())
            .collect::<Vec<_>>(),
        ["default/pareto"]
    );
    // opening one pulls it into the cache and says where it came from
    click(&mut h, "Pareto front (NSGA-II) (default/pareto)");
    wait_until(&mut h, "the pulled card", |a| a.doc.card.name == "pareto");
    assert!(h.state().doc.path.is_none(), "a pulled card opens unsaved");
    let message = h.state().message().unwrap().to_owned();
    assert!(
        message.starts_with("Opened default/pareto@1 from ") && message.contains(&hub_text),
        "{message}"
    );
    let cached: Vec<String> = files_under(&cache);
    assert!(
        cached
            .iter()
            .any(|f| f.ends_with("default/pareto/1/card.yaml"))
            && cached
                .iter()
                .any(|f| f.ends_with("default/pareto/1/source.json")),
        "{cached:?}"
    );

    // the Details tab: where it came from, and where it is published
    click(&mut h, "Details");
    assert_eq!(
        h.get_by_label("Hub folder").value().as_deref(),
        Some(hub_text.as_str()),
        "the configured hub folder is picked"
    );
    assert!(
        h.query_by_label_contains("Pulled from a hub: default/pareto@1 from ")
            .is_some()
    );
    h.get_by_label(&format!(
        "Published as default/pareto in {hub_text}: versions 1"
    ));

    // publish it under another namespace: version 1 of team/pareto
    type_into(&mut h, "Namespace", "team");
    h.get_by_label("team/pareto is not published in the hub folder above or the configured hubs");
    click(&mut h, "Publish");
    wait_until(&mut h, "the publication", |a| {
        a.message()
            .is_some_and(|m| m.starts_with("Published") || m.starts_with("Not published"))
    });
    assert_eq!(
        h.state().message(),
        Some(format!("Published team/pareto version 1 to {hub_text}").as_str())
    );
    let published = std::fs::read_to_string(hub_dir.join("team/pareto/1/card.yaml")).unwrap();
    assert!(published.contains("namespace: team"), "{published}");
    settle(&mut h);
    h.get_by_label(&format!(
        "Published as team/pareto in {hub_text}: versions 1"
    ));

    // the same name again without a new version: refused in plain words,
    // nothing written
    let before = hub_files(&hub_dir);
    click(&mut h, "Publish");
    wait_until(&mut h, "the refusal", |a| {
        a.message().is_some_and(|m| m.starts_with("Not published"))
    });
    h.get_by_label(
        "team/pareto is already published (versions 1). Fill in a new Version to publish \
         another version, or change the Namespace or the card's name",
    );
    assert_eq!(hub_files(&hub_dir), before);

    // with a new version it goes in beside the first
    type_into(&mut h, "Version", "2");
    click(&mut h, "Publish");
    wait_until(&mut h, "the second version", |a| {
        a.message()
            .is_some_and(|m| m.starts_with("Published team/pareto version 2"))
    });
    assert!(hub_dir.join("team/pareto/2/card.yaml").is_file());
    assert!(hub_dir.join("team/pareto/1/card.yaml").is_file());
    settle(&mut h);
    h.get_by_label(&format!(
        "Published as team/pareto in {hub_text}: versions 1, 2"
    ));

    // a key in the card is refused, named in plain words, nothing written
    let key = "sk-proj-Zx81kQ7mN2pL5vR9tY3wB6cD";
    type_into(&mut h, "summary", &format!(" Use the key {key}."));
    assert!(h.state().doc.card.summary.contains(key));
    click(&mut h, "Version");
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label("Version").type_text("3");
    settle(&mut h);
    let before = hub_files(&hub_dir);
    click(&mut h, "Publish");
    wait_until(&mut h, "the secret refusal", |a| {
        a.message().is_some_and(|m| m.starts_with("Not published"))
    });
    let refusal = h
        .get_by(|n| {
            n.role() == egui::accesskit::Role::Label
                && n.value()
                    .is_some_and(|l| l.starts_with("The card holds an API key"))
        })
        .accesskit_node()
        .value()
        .unwrap();
    assert!(
        refusal.contains("Keys belong in the environment, never in a card")
            && !refusal.contains(key),
        "{refusal}"
    );
    assert_eq!(hub_files(&hub_dir), before);
    assert!(!hub_dir.join("team/pareto/3").exists());
}

#[test]
fn a_hub_name_given_at_launch_is_pulled_and_a_missing_one_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin());
    let hub_dir = tmp.path().join("hub");
    let cache = tmp.path().join("cache");
    let hub = HubFolder::init(&hub_dir).unwrap();
    let b = galapagos::engine::builtin::card("topk").unwrap();
    let card = Card::from_yaml(b.yaml, "topk", &registry).unwrap();
    let opts = PublishOptions {
        namespace: Some("team".into()),
        ..PublishOptions::default()
    };
    hub.publish(&card, &registry, &opts).unwrap();

    let launch = |reference: &str| {
        let mut app = App::new(State::default(), registry.clone());
        app.set_hubs(vec![hub_dir.display().to_string()]);
        app.set_hub_cache(cache.clone());
        app.launch(galapagos::studio::StudioLaunch {
            card: Some(reference.into()),
            task: None,
        });
        let mut h = Harness::builder()
            .with_size(egui::vec2(1280.0, 800.0))
            .with_max_steps(16)
            .build_ui_state(|ui, app: &mut App| app.show(ui), app);
        h.run();
        h
    };
    let mut h = launch("team/topk@1");
    wait_until(&mut h, "the pulled card", |a| {
        a.doc.card.namespace == "team" && a.doc.card.name == "topk"
    });
    assert!(
        h.state()
            .message()
            .is_some_and(|m| m.starts_with("Opened team/topk@1 from ")),
        "{:?}",
        h.state().message()
    );

    let mut h = launch("team/nothing");
    wait_until(&mut h, "the error", |a| {
        a.message().is_some_and(|m| m.starts_with("cannot open"))
    });
    let message = h.state().message().unwrap();
    assert!(message.contains("has no team/nothing"), "{message}");
    assert!(!files_under(&cache).iter().any(|f| f.contains("nothing")));
}

/// `galapagos hub serve` on a free loopback port; killed on drop.
struct Served {
    child: std::process::Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(home: &Path, hub: &Path) -> Served {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .args(["hub", "serve"])
        .arg(hub)
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
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
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("hub serve printed no address");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Served { child, url }
}

/// A hub site's address lists its cards from its index.json and opens one
/// over HTTP; a hub that is down is named under Hubs, and the others still
/// list.
#[test]
fn the_library_lists_a_hub_site_and_names_a_hub_that_is_down() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin());
    let hub_dir = tmp.path().join("hub");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cache = tmp.path().join("cache");
    let hub = HubFolder::init(&hub_dir).unwrap();
    for name in ["topk", "shinka"] {
        let b = galapagos::engine::builtin::card(name).unwrap();
        let card = Card::from_yaml(b.yaml, name, &registry).unwrap();
        hub.publish(&card, &registry, &PublishOptions::default())
            .unwrap();
    }
    let served = serve(&home, &hub_dir);
    // a loopback port nothing listens on
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };

    let mut app = App::new(State::default(), registry.clone());
    app.launch(galapagos::studio::StudioLaunch {
        card: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/cards/best_of_n.yaml").into()),
        task: None,
    });
    app.set_hubs(vec![down.clone(), served.url.clone()]);
    app.set_hub_cache(cache.clone());
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .with_max_steps(16)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    settle(&mut h);
    wait_until(&mut h, "the hub listing", |a| {
        !a.hub_shelf().loading && a.hub_shelf().requested && !a.hub_shelf().cards.is_empty()
    });
    let shelf = h.state().hub_shelf();
    assert_eq!(
        shelf.cards.iter().map(|c| c.id()).collect::<Vec<_>>(),
        ["default/shinka", "default/topk"]
    );
    assert!(shelf.cards.iter().all(|c| c.hub == served.url));
    assert_eq!(shelf.problems.len(), 1, "{:?}", shelf.problems);
    assert!(
        shelf.problems[0].contains(&down) && shelf.problems[0].contains("cannot reach the hub"),
        "{:?}",
        shelf.problems
    );
    // the problem is on screen
    let problem = shelf.problems[0].clone();
    h.get_by_label(&problem);

    click(&mut h, "Top-K (default/topk)");
    wait_until(&mut h, "the pulled card", |a| a.doc.card.name == "topk");
    let message = h.state().message().unwrap().to_owned();
    assert!(
        message.starts_with(&format!("Opened default/topk@1 from {}", served.url)),
        "{message}"
    );
    assert!(
        files_under(&cache)
            .iter()
            .any(|f| f.ends_with("default/topk/1/source.json")),
        "{:?}",
        files_under(&cache)
    );
}

/// A hub listed twice (here one folder under two spellings; a folder and the
/// site built from it alike) shows each card once, under the hub a pull
/// reads it from, named above its cards.
#[test]
fn a_card_two_hubs_list_is_shown_once_under_its_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin());
    let hub_dir = tmp.path().join("hub");
    let hub_text = hub_dir.display().to_string();
    let hub = HubFolder::init(&hub_dir).unwrap();
    for name in ["topk", "pareto"] {
        let b = galapagos::engine::builtin::card(name).unwrap();
        let card = Card::from_yaml(b.yaml, name, &registry).unwrap();
        hub.publish(&card, &registry, &PublishOptions::default())
            .unwrap();
    }
    let mut app = App::new(State::default(), registry.clone());
    app.launch(galapagos::studio::StudioLaunch {
        card: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/cards/best_of_n.yaml").into()),
        task: None,
    });
    app.set_hubs(vec![hub_text.clone(), format!("{hub_text}/")]);
    app.set_hub_cache(tmp.path().join("cache"));
    let mut h = Harness::builder()
        .with_size(egui::vec2(1024.0, 640.0))
        .with_max_steps(16)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run();
    wait_until(&mut h, "the hub listing", |a| {
        !a.hub_shelf().loading && !a.hub_shelf().cards.is_empty()
    });
    assert_eq!(
        h.query_all_by_label("Top-K (default/topk)").count(),
        1,
        "a hub card is listed twice"
    );
    assert_eq!(h.state().hub_shelf().cards.len(), 2);
    assert!(
        h.state()
            .hub_shelf()
            .cards
            .iter()
            .all(|c| c.hub == hub_text)
    );
    h.get_by_label(&format!("from {hub_text}"));
    assert_eq!(
        h.state().hub_shelf().also_in.get("default/topk"),
        Some(&vec![format!("{hub_text}/")])
    );
}
