//! Hub bundles: export of the shipped cards (files, README sections, archive
//! contents), import from folder / card file / archive, unsafe archives,
//! broken cards and secrets.
#![allow(clippy::unwrap_used, reason = "a panic in a test is a failed test")]

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use galapagos::engine::card::{Card, LlmSettings, ModelSpec};
use galapagos::engine::component::Slot;
use galapagos::engine::hub::{
    HubError, MAX_ARCHIVE_BYTES, export_bundle, export_bundle_checked, import_bundle, render_readme,
};
use galapagos::engine::params::ParamValue;
use galapagos::engine::registry::Registry;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shipped_cards() -> Vec<PathBuf> {
    let mut cards: Vec<PathBuf> = fs::read_dir(root().join("cards"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    cards.sort();
    assert!(!cards.is_empty(), "no shipped cards found");
    cards
}

fn load(path: &Path) -> Card {
    Card::load(path, &Registry::builtin()).unwrap_or_else(|e| panic!("{e}"))
}

fn best_of_n() -> Card {
    load(&root().join("cards/best_of_n.yaml"))
}

/// (path, bytes) of every entry in a .tar.gz.
fn archive_entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut tar = tar::Archive::new(GzDecoder::new(fs::File::open(path).unwrap()));
    tar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let name = name.trim_end_matches('/').to_owned();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (name, bytes)
        })
        .collect()
}

/// What the Configuration section says its lines hold.
const CONFIGURATION_KEY_LINE: &str =
    "Each key with its default in brackets, what it does, and this card's value:";

/// Every key the Configuration section must list for `card`.
fn config_keys(card: &Card, registry: &Registry) -> Vec<String> {
    let mut keys = Vec::new();
    for slot in Slot::ALL {
        let info = registry.entry(slot, &card.slot(slot).kind).unwrap().info;
        for p in info.params {
            keys.push(format!("{}.{}", slot.key(), p.key));
        }
    }
    for k in [
        "general.max_iterations",
        "general.inner_retry_times",
        "general.parallel",
        "general.max_cost_usd",
        "general.max_tokens",
        "general.max_response_bytes",
        "seed",
    ] {
        keys.push(k.to_owned());
    }
    keys
}

const SECTIONS: [&str; 6] = [
    "## Overview",
    "## Algorithm",
    "## Components",
    "## Configuration",
    "## When to use",
    "## Source",
];

#[test]
fn export_of_every_shipped_card_writes_folder_readme_and_archive() {
    let registry = Registry::builtin();
    let out = tempfile::tempdir().unwrap();
    for path in shipped_cards() {
        let card = load(&path);
        let bundle = export_bundle(&card, &registry, out.path()).unwrap();
        assert_eq!(bundle, out.path().join(&card.namespace).join(&card.name));
        let card_yaml = fs::read_to_string(bundle.join("card.yaml")).unwrap();
        let readme = fs::read_to_string(bundle.join("README.md")).unwrap();

        // README layout: title line, summary quote, every section in order.
        let first = readme.lines().next().unwrap();
        assert_eq!(
            first,
            format!("# {} (`{}`)", card.display_title(), card.name)
        );
        assert!(readme.contains(&format!("\n> {}\n", card.summary.trim())));
        let mut at = 0;
        for section in SECTIONS {
            let i = readme[at..]
                .find(&format!("\n{section}\n"))
                .unwrap_or_else(|| panic!("{}: missing or misplaced {section}", card.name));
            at += i + 1;
        }
        // Components table: the six slots with this card's implementations.
        assert!(readme.contains("| Slot | Implementation | Role |"));
        for slot in Slot::ALL {
            let info = registry.entry(slot, &card.slot(slot).kind).unwrap().info;
            let row = format!(
                "| {} | `{}` (`{}`) | {}",
                slot.title(),
                info.type_name,
                info.kind,
                slot.role()
            );
            assert!(readme.contains(&row), "{}: no row `{row}`", card.name);
        }
        // Configuration: every key, with default and value, and the list
        // says which is which
        assert!(
            readme.contains(CONFIGURATION_KEY_LINE),
            "{}: the Configuration list does not say what the brackets hold",
            card.name
        );
        for key in config_keys(&card, &registry) {
            assert!(
                readme.contains(&format!("- `{key}` (")),
                "{}: README lacks config key {key}",
                card.name
            );
        }
        let max_it = format!(
            "- `general.max_iterations` (100) — number of loop iterations, the run's budget; value: {}",
            card.general.max_iterations
        );
        assert!(readme.contains(&max_it));
        // Overview / When to use / Source come from the card.
        assert!(readme.contains(card.overview.trim()));
        assert!(readme.contains(card.when_to_use.trim()));
        assert!(readme.contains(card.source.trim()));

        // The archive holds exactly NAME/, NAME/card.yaml and NAME/README.md.
        let tgz = out
            .path()
            .join(&card.namespace)
            .join(format!("{}.tar.gz", card.name));
        let entries = archive_entries(&tgz);
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        let card_entry = format!("{}/card.yaml", card.name);
        let readme_entry = format!("{}/README.md", card.name);
        assert_eq!(
            names,
            vec![
                card.name.as_str(),
                card_entry.as_str(),
                readme_entry.as_str()
            ]
        );
        for (name, bytes) in &entries {
            if *name == card_entry {
                assert_eq!(bytes, card_yaml.as_bytes());
            } else if *name == readme_entry {
                assert_eq!(bytes, readme.as_bytes());
            }
        }
    }
}

#[test]
fn import_from_folder_card_file_and_archive_gives_the_same_card() {
    let registry = Registry::builtin();
    let out = tempfile::tempdir().unwrap();
    for path in shipped_cards() {
        let card = load(&path);
        let bundle = export_bundle(&card, &registry, out.path()).unwrap();
        let from_folder = import_bundle(&bundle, &registry).unwrap();
        let from_file = import_bundle(&bundle.join("card.yaml"), &registry).unwrap();
        let tgz = bundle.with_file_name(format!("{}.tar.gz", card.name));
        let from_archive = import_bundle(&tgz, &registry).unwrap();
        assert_eq!(from_folder, card);
        assert_eq!(from_file, card);
        assert_eq!(from_archive, card);
    }
}

#[test]
fn a_card_with_llm_settings_and_edited_params_round_trips() {
    let registry = Registry::builtin();
    let out = tempfile::tempdir().unwrap();
    let mut card = best_of_n();
    card.name = "tuned".into();
    card.namespace = "someone".into();
    card.seed = 42;
    card.general.max_iterations = 7;
    card.selection_policy
        .params
        .set("best_of_n", ParamValue::Int(3));
    card.llm = Some(LlmSettings {
        models: vec![ModelSpec {
            name: "gpt-4o-mini".into(),
            weight: 0.5,
            temperature: Some(0.7),
            top_p: None,
            max_tokens: None,
        }],
        temperature: None,
        top_p: None,
        max_tokens: Some(2048),
        ..LlmSettings::default()
    });
    let bundle = export_bundle(&card, &registry, out.path()).unwrap();
    assert!(bundle.ends_with("someone/tuned"));
    let readme = fs::read_to_string(bundle.join("README.md")).unwrap();
    assert!(readme.contains("- `selection_policy.best_of_n` (5) — "));
    assert!(readme.contains("; value: 3\n"));
    assert!(readme.contains("- `seed` (0) — "));
    assert!(readme.contains("; value: 42\n"));
    assert!(readme.contains("gpt-4o-mini (weight 0.5)"));
    let tgz = out.path().join("someone/tuned.tar.gz");
    assert_eq!(import_bundle(&tgz, &registry).unwrap(), card);
}

#[test]
fn readme_generates_text_the_card_leaves_empty() {
    let registry = Registry::builtin();
    let mut card = best_of_n();
    card.overview.clear();
    card.description.clear();
    card.when_to_use.clear();
    card.source.clear();
    card.summary.clear();
    let readme = render_readme(&card, &registry);
    for section in SECTIONS {
        assert!(readme.contains(&format!("\n{section}\n\n")), "{section}");
    }
    // The generated algorithm names this card's components and budget.
    let algorithm =
        &readme[readme.find("## Algorithm").unwrap()..readme.find("## Components").unwrap()];
    for slot in Slot::ALL {
        assert!(
            algorithm.contains(&format!("`{}`", card.slot(slot).kind)),
            "algorithm does not name {slot}"
        );
    }
    assert!(algorithm.contains("100 iterations"));
    assert!(readme.contains("> A Galapagos scaffold published as `default/best_of_n`."));

    // With only a description, it becomes the Overview and the Algorithm is generated.
    card.description = "A distinctive description paragraph.".into();
    let readme = render_readme(&card, &registry);
    assert_eq!(
        readme
            .matches("A distinctive description paragraph.")
            .count(),
        1
    );
    let overview =
        &readme[readme.find("## Overview").unwrap()..readme.find("## Algorithm").unwrap()];
    assert!(overview.contains("A distinctive description paragraph."));
}

/// Write a gzip tar whose entries are given raw (names are not sanitised,
/// as an attacker's tool would not).
fn raw_archive(path: &Path, entries: &[(&str, tar::EntryType, &[u8])]) {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for (name, kind, data) in entries {
        let mut h = tar::Header::new_gnu();
        let bytes = name.as_bytes();
        h.as_gnu_mut().unwrap().name[..bytes.len()].copy_from_slice(bytes);
        h.set_entry_type(*kind);
        if *kind == tar::EntryType::Symlink {
            h.set_link_name("/etc").unwrap();
        }
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_cksum();
        builder.append(&h, *data).unwrap();
    }
    let bytes = builder.into_inner().unwrap().finish().unwrap();
    fs::write(path, bytes).unwrap();
}

#[test]
fn malicious_archives_are_rejected_without_writing_outside() {
    let registry = Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let yaml = best_of_n().to_yaml();
    let pid = std::process::id();

    // `..` escape: would land next to the private unpack folder.
    let escape = format!("../galapagos-hub-evil-{pid}");
    let outside = std::env::temp_dir().join(format!("galapagos-hub-evil-{pid}"));
    assert!(!outside.exists());
    let evil = dir.path().join("evil.tar.gz");
    raw_archive(
        &evil,
        &[
            (escape.as_str(), tar::EntryType::Regular, b"owned"),
            (
                "best_of_n/card.yaml",
                tar::EntryType::Regular,
                yaml.as_bytes(),
            ),
        ],
    );
    let err = import_bundle(&evil, &registry).unwrap_err();
    assert!(
        matches!(&err, HubError::UnsafeEntry { entry, reason, .. } if entry.contains("..") && reason.contains("..")),
        "{err}"
    );
    assert!(err.to_string().contains("evil.tar.gz"));
    assert!(!outside.exists(), "the `..` entry was written outside");

    // Absolute path.
    let absolute = format!("/tmp/galapagos-hub-abs-{pid}");
    let abs = dir.path().join("abs.tar.gz");
    raw_archive(
        &abs,
        &[(absolute.as_str(), tar::EntryType::Regular, b"owned")],
    );
    let err = import_bundle(&abs, &registry).unwrap_err();
    assert!(
        matches!(&err, HubError::UnsafeEntry { reason, .. } if reason.contains("absolute")),
        "{err}"
    );
    assert!(!Path::new(&absolute).exists());

    // Links are refused.
    let link = dir.path().join("link.tar.gz");
    raw_archive(&link, &[("best_of_n/etc", tar::EntryType::Symlink, b"")]);
    let err = import_bundle(&link, &registry).unwrap_err();
    assert!(
        matches!(&err, HubError::UnsafeEntry { reason, .. } if reason.contains("no links")),
        "{err}"
    );
}

#[test]
fn oversized_archives_are_refused() {
    let registry = Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let big = vec![b'x'; usize::try_from(MAX_ARCHIVE_BYTES).unwrap() + 1];
    let path = dir.path().join("big.tar.gz");
    raw_archive(&path, &[("b/blob.bin", tar::EntryType::Regular, &big)]);
    let err = import_bundle(&path, &registry).unwrap_err();
    assert!(matches!(err, HubError::TooLarge { .. }), "{err}");
}

#[test]
fn archives_without_exactly_one_card_are_not_bundles() {
    let registry = Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let yaml = best_of_n().to_yaml();
    let none = dir.path().join("none.tar.gz");
    raw_archive(&none, &[("x/notes.txt", tar::EntryType::Regular, b"hi")]);
    let err = import_bundle(&none, &registry).unwrap_err();
    assert!(
        matches!(&err, HubError::NotABundle { reason, .. } if reason.contains("no card.yaml")),
        "{err}"
    );

    let two = dir.path().join("two.tar.gz");
    raw_archive(
        &two,
        &[
            ("a/card.yaml", tar::EntryType::Regular, yaml.as_bytes()),
            ("b/card.yaml", tar::EntryType::Regular, yaml.as_bytes()),
        ],
    );
    let err = import_bundle(&two, &registry).unwrap_err();
    assert!(
        matches!(&err, HubError::NotABundle { reason, .. } if reason.contains("a/card.yaml, b/card.yaml")),
        "{err}"
    );

    let empty = tempfile::tempdir().unwrap();
    let err = import_bundle(empty.path(), &registry).unwrap_err();
    assert!(matches!(err, HubError::NotABundle { .. }), "{err}");
    let err = import_bundle(&dir.path().join("missing"), &registry).unwrap_err();
    assert!(matches!(err, HubError::Io { .. }), "{err}");
}

/// `origin:line:col:` at the start of some line of the message.
fn has_location(message: &str, origin_tail: &str) -> bool {
    message.lines().any(|l| {
        l.find(origin_tail).is_some_and(|i| {
            let rest = &l[i + origin_tail.len()..];
            let mut parts = rest.splitn(4, ':');
            parts.next() == Some("")
                && parts
                    .next()
                    .is_some_and(|n| n.parse::<usize>().is_ok_and(|n| n > 0))
                && parts
                    .next()
                    .is_some_and(|n| n.parse::<usize>().is_ok_and(|n| n > 0))
        })
    })
}

#[test]
fn a_broken_card_in_a_bundle_is_reported_with_line_and_column() {
    let registry = Registry::builtin();
    let out = tempfile::tempdir().unwrap();
    let card = best_of_n();
    let bundle = export_bundle(&card, &registry, out.path()).unwrap();
    let broken = card
        .to_yaml()
        .replace("best_of_n: 5", "best_of_n: -2")
        .replace("kind: none", "kind: nowhere");
    assert_ne!(broken, card.to_yaml());
    fs::write(bundle.join("card.yaml"), &broken).unwrap();

    let err = import_bundle(&bundle, &registry).unwrap_err();
    let HubError::Card(errors) = &err else {
        panic!("expected card errors, got {err}");
    };
    assert_eq!(errors.0.len(), 2, "{err}");
    let message = err.to_string();
    assert!(has_location(&message, "card.yaml"), "{message}");
    assert!(message.contains("selection_policy.best_of_n"), "{message}");
    assert!(message.contains("memory.kind"), "{message}");

    // The same card inside an archive names the archive and the entry.
    let tgz = out.path().join("broken.tar.gz");
    raw_archive(
        &tgz,
        &[(
            "best_of_n/card.yaml",
            tar::EntryType::Regular,
            broken.as_bytes(),
        )],
    );
    let err = import_bundle(&tgz, &registry).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, HubError::Card(_)));
    assert!(
        has_location(&message, "broken.tar.gz!best_of_n/card.yaml"),
        "{message}"
    );

    // A syntax error is located too.
    fs::write(bundle.join("card.yaml"), "name: x\npopulation: [unclosed\n").unwrap();
    let message = import_bundle(&bundle, &registry).unwrap_err().to_string();
    assert!(has_location(&message, "card.yaml"), "{message}");
}

#[test]
fn an_invalid_card_is_not_exported() {
    let registry = Registry::builtin();
    let out = tempfile::tempdir().unwrap();
    let mut card = best_of_n();
    card.selection_policy.kind = "no_such_policy".into();
    let err = export_bundle(&card, &registry, out.path()).unwrap_err();
    assert!(
        matches!(&err, HubError::InvalidCard { problems, .. } if problems.contains("selection_policy.kind")),
        "{err}"
    );
    let mut card = best_of_n();
    card.namespace = "../escape".into();
    assert!(matches!(
        export_bundle(&card, &registry, out.path()),
        Err(HubError::InvalidCard { .. })
    ));
    assert_eq!(fs::read_dir(out.path()).unwrap().count(), 0);
}

fn assert_refused_without_writing(card: &Card, known: &[(String, String)], secret: &str) {
    let out = tempfile::tempdir().unwrap();
    let err = export_bundle_checked(card, &Registry::builtin(), out.path(), known).unwrap_err();
    assert!(matches!(err, HubError::Secret { .. }), "{err}");
    assert!(
        !err.to_string().contains(secret),
        "the error repeats the secret: {err}"
    );
    assert_eq!(
        fs::read_dir(out.path()).unwrap().count(),
        0,
        "something was written"
    );
}

#[test]
fn export_refuses_secrets_in_free_text_and_llm_settings() {
    let key = "sk-proj-Zx81kQ7mN2pL5vR9tY3wB6cD";
    let mut card = best_of_n();
    card.summary = format!("Works great with {key} as the key.");
    assert_refused_without_writing(&card, &[], key);

    let mut card = best_of_n();
    card.when_to_use = "Set api_key: abc123 before running.".into();
    assert_refused_without_writing(&card, &[], "abc123");

    let mut card = best_of_n();
    card.source = "Mirror at https://bob:hunter2hunter2@example.org/x".into();
    assert_refused_without_writing(&card, &[], "hunter2hunter2");

    let mut card = best_of_n();
    card.llm = Some(LlmSettings {
        models: vec![ModelSpec {
            name: "https://llm.internal.example/v1".into(),
            weight: 1.0,
            temperature: None,
            top_p: None,
            max_tokens: None,
        }],
        ..LlmSettings::default()
    });
    assert_refused_without_writing(&card, &[], "llm.internal.example");

    // A key held in settings (passed in) that the card text repeats.
    let held = "Q9vLk2mPz7RtX4wN";
    let mut card = best_of_n();
    card.overview = format!("{} {held}", card.overview);
    assert_refused_without_writing(
        &card,
        &[("settings.api_key_env value".into(), held.into())],
        held,
    );

    // A plain URL in Source is not a secret.
    let mut card = best_of_n();
    card.source = "https://github.com/skydiscover-ai/skydiscover".into();
    let out = tempfile::tempdir().unwrap();
    export_bundle(&card, &Registry::builtin(), out.path()).unwrap();
}

const ENV_SECRET_NAME: &str = "GALAPAGOS_HUB_TEST_API_KEY";
const ENV_SECRET_VALUE: &str = "hubTestValue7Kq2Wm9Zp";

/// Run in a child process (see the test below) with a secret-named
/// environment variable set, because tests may not set variables themselves.
#[test]
#[ignore = "run by export_never_writes_secret_environment_values in a child process"]
fn child_export_with_secret_in_environment() {
    assert_eq!(
        std::env::var(ENV_SECRET_NAME).as_deref(),
        Ok(ENV_SECRET_VALUE),
        "must run with the variable set"
    );
    let mut card = best_of_n();
    card.summary = format!("Tuned using {ENV_SECRET_VALUE}.");
    let out = tempfile::tempdir().unwrap();
    let err = export_bundle(&card, &Registry::builtin(), out.path()).unwrap_err();
    match &err {
        HubError::Secret { what, .. } => assert!(what.contains(ENV_SECRET_NAME), "{err}"),
        other => panic!("expected a secret refusal, got {other}"),
    }
    assert!(!err.to_string().contains(ENV_SECRET_VALUE));
    assert_eq!(fs::read_dir(out.path()).unwrap().count(), 0);
    // Without the value in the text the same card exports fine.
    let bundle = export_bundle(&best_of_n(), &Registry::builtin(), out.path()).unwrap();
    let all = fs::read_to_string(bundle.join("card.yaml")).unwrap()
        + &fs::read_to_string(bundle.join("README.md")).unwrap();
    assert!(!all.contains(ENV_SECRET_VALUE));
}

#[test]
fn export_never_writes_secret_environment_values() {
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(exe)
        .args([
            "child_export_with_secret_in_environment",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(ENV_SECRET_NAME, ENV_SECRET_VALUE)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 passed"), "child did not run: {stdout}");
}
