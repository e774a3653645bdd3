//! Rules of the source tree that the compiler does not check.

use std::path::{Path, PathBuf};

#[path = "layout_rules/imports.rs"]
mod imports;

use imports::rust_files;

/// One module layout: a module with files of its own is a folder whose
/// `mod.rs` declares them (a slot folder, `evaluator/command/`), never a
/// `foo.rs` beside a folder `foo/`.
#[test]
fn a_module_with_files_of_its_own_is_a_folder_with_mod_rs() {
    fn folders(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src is readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.push(path.clone());
                folders(&path, out);
            }
        }
    }
    let mut dirs = Vec::new();
    folders(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut dirs,
    );
    assert!(dirs.len() > 10, "found only {} folders", dirs.len());
    let beside: Vec<String> = dirs
        .iter()
        .filter(|d| d.with_extension("rs").is_file() || !d.join("mod.rs").is_file())
        .map(|d| d.display().to_string())
        .collect();
    assert!(
        beside.is_empty(),
        "folders without a mod.rs, or with a .rs file of their name beside them: {beside:?}"
    );
}

/// A file in `src/` longer than 800 lines says at its top why (in its first
/// 20 lines, with the words "Over 800 lines").
#[test]
fn a_long_source_file_says_why_at_its_top() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 50, "found only {} files", files.len());
    let unexplained: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).expect("readable");
            let lines = text.lines().count();
            let explained = text.lines().take(20).any(|l| l.contains("Over 800 lines"));
            (lines > 800 && !explained).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "over 800 lines without a comment at the top saying why: {unexplained:?}"
    );
}

/// Every folder's modules import each other without a cycle (the engine's top-level modules, the slot folders,
/// `model/`, the studio's files...), so each can be read and tested from the bottom up. Counted: paths through
/// `crate::`, `super::` and `self::` outside comments, literals and test modules (see `layout_rules/imports.rs`).
#[test]
fn every_folder_imports_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports::graph(&src);
    let edges: usize = graph
        .folders
        .values()
        .flat_map(|e| e.values())
        .map(|t| t.len())
        .sum();
    assert!(
        graph.folders.len() > 30 && edges > 100,
        "read only {} folders and {edges} edges",
        graph.folders.len()
    );
    let cycles = imports::cycles(&graph);
    assert!(
        cycles.is_empty(),
        "modules import in a cycle:\n{}",
        cycles.join("\n")
    );
}

/// No slot folder imports another slot's implementations: an implementation depends on its slot's trait, other
/// slots' traits (a selection policy reads a `Population`), the component vocabulary, shared engine types and the
/// isolation kit (`engine::sandbox`), never on the files of another slot's blocks.
#[test]
fn no_slot_imports_another_slots_blocks() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = slot_crossings(&imports::graph(&src));
    assert!(
        found.is_empty(),
        "slot folders importing another slot's blocks:\n{}",
        found.join("\n")
    );
}

const SLOTS: [&str; 6] = [
    "population",
    "selection",
    "prompt",
    "proposer",
    "evaluator",
    "memory",
];

/// Paths from a slot folder into a module below another slot folder's own module.
fn slot_crossings(graph: &imports::Graph) -> Vec<String> {
    let slot_of = |m: &[String]| -> Option<String> {
        (m.first().map(String::as_str) == Some("engine"))
            .then(|| m.get(1).filter(|s| SLOTS.contains(&s.as_str())).cloned())
            .flatten()
    };
    let mut found = Vec::new();
    for (from, to, why) in &graph.refs {
        if let (Some(a), Some(b)) = (slot_of(from), slot_of(to))
            && a != b
            && to.len() > 2
        {
            found.push(format!("{a} -> {} ({why})", to.join("::")));
        }
    }
    found
}

/// A tree to plant violations in: `files` as (path under src, contents).
fn planted(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
        std::fs::write(path, text).expect("written");
    }
    dir
}

#[test]
fn a_planted_cycle_is_found_in_any_folder() {
    // siblings deep in the tree, one through `super::`, the other through `crate::`, in a brace group
    let tree = planted(&[
        ("lib.rs", "pub mod app;\n"),
        ("app/mod.rs", "pub mod tabs;\n"),
        ("app/tabs/mod.rs", "pub mod panel;\npub mod runs;\n"),
        (
            "app/tabs/panel.rs",
            "use super::runs::RunsTab;\npub struct Panel;\n",
        ),
        (
            "app/tabs/runs.rs",
            "use crate::app::tabs::{panel::Panel, self};\npub struct RunsTab;\n",
        ),
    ]);
    let graph = imports::graph(tree.path());
    let cycles = imports::cycles(&graph);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].starts_with("app::tabs: panel -> runs -> panel"),
        "{cycles:?}"
    );
    // the same tree without the back edge has none; a path in a comment or a string is no edge
    let clean = planted(&[
        ("lib.rs", "pub mod app;\n"),
        ("app/mod.rs", "pub mod tabs;\n"),
        ("app/tabs/mod.rs", "pub mod panel;\npub mod runs;\n"),
        (
            "app/tabs/panel.rs",
            "use super::runs::RunsTab;\npub struct Panel;\n",
        ),
        (
            "app/tabs/runs.rs",
            "// use super::panel::Panel;\nconst S: &str = \"crate::app::tabs::panel\";\npub struct RunsTab;\n",
        ),
    ]);
    assert!(imports::cycles(&imports::graph(clean.path())).is_empty());
}

#[test]
fn a_planted_cycle_through_a_reexport_is_found() {
    // `check` names the folder's re-export of `openai::Client`: an edge to `openai`, which names `check` back
    let tree = planted(&[
        ("lib.rs", "pub mod model;\n"),
        (
            "model/mod.rs",
            "mod check;\nmod openai;\npub use openai::{Client as OpenAi};\n",
        ),
        ("model/check.rs", "use super::OpenAi;\npub fn run() {}\n"),
        (
            "model/openai.rs",
            "pub struct Client;\nfn f() { crate::model::check::run() }\n",
        ),
    ]);
    let cycles = imports::cycles(&imports::graph(tree.path()));
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].starts_with("model: check -> openai -> check"),
        "{cycles:?}"
    );
}

#[test]
fn a_planted_slot_crossing_is_found() {
    let tree = planted(&[
        ("lib.rs", "pub mod engine;\n"),
        (
            "engine/mod.rs",
            "pub mod evaluator;\npub mod proposer;\npub mod sandbox;\n",
        ),
        ("engine/sandbox/mod.rs", "pub struct Jail;\n"),
        (
            "engine/evaluator/mod.rs",
            "pub mod worker;\npub trait Evaluator {}\n",
        ),
        ("engine/evaluator/worker.rs", "pub struct Limits;\n"),
        ("engine/proposer/mod.rs", "pub mod agent;\n"),
        (
            "engine/proposer/agent.rs",
            "use crate::engine::{sandbox::Jail, evaluator::Evaluator};\n",
        ),
    ]);
    assert!(slot_crossings(&imports::graph(tree.path())).is_empty());
    std::fs::write(
        tree.path().join("engine/proposer/agent.rs"),
        "use crate::engine::{sandbox::Jail, evaluator::worker::Limits};\n",
    )
    .expect("written");
    let found = slot_crossings(&imports::graph(tree.path()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("proposer -> engine::evaluator::worker"),
        "{found:?}"
    );
}

/// The isolation kit (`engine/sandbox/`) sits below the slots that run code they do not trust (the evaluators, the
/// coding-agent proposer): it imports no slot folder, so each of them reaches it without reaching into another.
#[test]
fn the_sandbox_kit_imports_no_slot() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports::graph(&src);
    let from_kit = graph
        .refs
        .iter()
        .filter(|(from, _, _)| from.starts_with(&["engine".to_owned(), "sandbox".to_owned()]))
        .count();
    assert!(
        from_kit > 10,
        "read only {from_kit} paths from engine::sandbox"
    );
    let found = kit_imports_of_slots(&graph);
    assert!(
        found.is_empty(),
        "the sandbox kit imports a slot:\n{}",
        found.join("\n")
    );
}

/// Paths from a module of `engine::sandbox` into a slot folder.
fn kit_imports_of_slots(graph: &imports::Graph) -> Vec<String> {
    graph
        .refs
        .iter()
        .filter(|(from, to, _)| {
            from.starts_with(&["engine".to_owned(), "sandbox".to_owned()])
                && to.first().map(String::as_str) == Some("engine")
                && to.get(1).is_some_and(|s| SLOTS.contains(&s.as_str()))
        })
        .map(|(_, to, why)| format!("sandbox -> {} ({why})", to.join("::")))
        .collect()
}

#[test]
fn a_planted_slot_import_in_the_sandbox_kit_is_found() {
    let dir = planted(&[
        ("lib.rs", "pub mod engine;\n"),
        ("engine/mod.rs", "pub mod evaluator;\npub mod sandbox;\n"),
        ("engine/evaluator/mod.rs", "pub struct Evaluation;\n"),
        ("engine/sandbox/mod.rs", "pub mod limits;\n"),
        (
            "engine/sandbox/limits.rs",
            "use crate::engine::evaluator::Evaluation;\n",
        ),
    ]);
    let found = kit_imports_of_slots(&imports::graph(dir.path()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("sandbox -> engine::evaluator"),
        "{found:?}"
    );
}

/// Card kinds are named only where their blocks live: the registry's table
/// and the component files of the slot folders. Anywhere else a kind string
/// compared with a block's kind (`kind == "beam"`, a `match` on a kind with
/// `"islands" =>` arms, `registry.entry(slot, "command")`) would need an edit
/// there for every new block; such a place asks the registry what the block
/// provides instead (`Component::PROVIDES`). Counted outside comments and
/// test modules.
#[test]
fn card_kinds_are_compared_only_in_the_registry_and_component_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let slot_folders = [
        "population",
        "selection",
        "prompt",
        "proposer",
        "evaluator",
        "memory",
    ];
    let component_file = |path: &Path| {
        let rel = path.strip_prefix(&root).expect("under src");
        let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
        parts.next().is_some_and(|p| p == "engine")
            && parts
                .next()
                .is_some_and(|p| slot_folders.contains(&p.as_ref()))
    };
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    // every kind, as its component declares it (`kind: "beam",`)
    let mut kinds = std::collections::BTreeSet::new();
    for path in files.iter().filter(|p| component_file(p)) {
        let text = std::fs::read_to_string(path).expect("readable");
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("kind: \"")
                && let Some(kind) = rest.strip_suffix("\",")
            {
                kinds.insert(kind.to_owned());
            }
        }
    }
    assert!(
        kinds.len() > 15,
        "found only {} kinds: {kinds:?}",
        kinds.len()
    );
    let registry = root.join("engine/registry.rs");
    let mut found = Vec::new();
    for path in files
        .iter()
        .filter(|p| !component_file(p) && **p != registry)
    {
        let text = std::fs::read_to_string(path).expect("readable");
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        // the scrutinee of the innermost `match` met so far, for its arms
        let mut matching_kind = false;
        for (n, line) in code.lines().enumerate() {
            let line = line.trim();
            if line.starts_with("//") {
                continue;
            }
            if line.starts_with("match ") || line.contains(" match ") {
                matching_kind = line.contains("kind");
            }
            let names_kind = kinds.iter().any(|k| line.contains(&format!("\"{k}\"")));
            if !names_kind {
                continue;
            }
            let compared = (line.contains("kind")
                && (line.contains("==") || line.contains("!=") || line.contains("matches!")))
                || (matching_kind && line.contains("=>"))
                || line.contains(".entry(");
            if compared {
                found.push(format!(
                    "{}:{}: {line}",
                    path.strip_prefix(&root).expect("under src").display(),
                    n + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "card kinds compared outside the registry and the component files (ask the registry \
         what the block provides instead):\n{}",
        found.join("\n")
    );
}

/// The test files that use the studio are declared with `required-features = ["studio"]` in Cargo.toml, so that
/// `cargo test --no-default-features` builds every test the engine and the command line have.
#[test]
fn every_studio_test_requires_the_studio_feature() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let mut tests = Vec::new();
    for entry in std::fs::read_dir(root.join("tests"))
        .expect("tests/")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            tests.push((name, std::fs::read_to_string(&path).expect("readable")));
        }
    }
    assert!(tests.len() > 40, "found only {} test files", tests.len());
    let missing = undeclared_studio_tests(&manifest, &tests);
    assert!(
        missing.is_empty(),
        "test files using the studio without `required-features = [\"studio\"]` in Cargo.toml: {missing:?}"
    );
}

/// The names of `tests` (name, text) that use the studio or egui and have no `[[test]]` entry requiring the
/// feature in `manifest`.
fn undeclared_studio_tests(manifest: &str, tests: &[(String, String)]) -> Vec<String> {
    let declared: Vec<&str> = manifest
        .split("[[test]]")
        .skip(1)
        .filter(|entry| {
            let entry = entry.split("\n[").next().unwrap_or("");
            entry.contains("required-features") && entry.contains("\"studio\"")
        })
        .filter_map(|entry| {
            let line = entry.lines().find(|l| l.trim_start().starts_with("name"))?;
            line.split('"').nth(1)
        })
        .collect();
    tests
        .iter()
        .filter(|(_, text)| {
            let code = imports::code_of(text);
            code.contains("galapagos::studio") || code.contains("egui")
        })
        .map(|(name, _)| name.clone())
        .filter(|name| !declared.contains(&name.as_str()))
        .collect()
}

#[test]
fn a_planted_undeclared_studio_test_is_found() {
    let manifest = "[package]\nname = \"x\"\n\n[[test]]\nname = \"studio_a\"\nrequired-features = [\"studio\"]\n\n\
                    [[test]]\nname = \"studio_b\"\n\n[[bench]]\nname = \"b\"\nrequired-features = [\"studio\"]\n";
    let tests = [
        (
            "studio_a".to_owned(),
            "use galapagos::studio::Studio;".to_owned(),
        ),
        (
            "studio_b".to_owned(),
            "use egui_kittest::Harness;".to_owned(),
        ),
        (
            "engine".to_owned(),
            "// galapagos::studio in a comment\nuse galapagos::engine;".to_owned(),
        ),
    ];
    assert_eq!(
        undeclared_studio_tests(manifest, &tests),
        vec!["studio_b".to_owned()]
    );
}

/// Every colour the studio paints is defined in its theme (`studio/theme.rs`: the chrome's palette, the colours of
/// data and the slot accents), so one categorical palette and one meaning per colour hold across the views.
#[test]
fn every_studio_colour_is_defined_in_the_theme() {
    let studio = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/studio");
    let found = colours_outside_the_theme(&studio);
    assert!(
        found.is_empty(),
        "colours defined outside studio/theme.rs:\n{}",
        found.join("\n")
    );
}

/// `file:line` of each colour made from numbers outside `theme.rs` under `dir`.
fn colours_outside_the_theme(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut found = Vec::new();
    for path in files.iter().filter(|p| !p.ends_with("theme.rs")) {
        let text = std::fs::read_to_string(path).expect("readable");
        for (n, line) in imports::code_of(&text).lines().enumerate() {
            if [
                "Color32::from_rgb",
                "Color32::from_rgba",
                "Color32::from_gray",
                "Rgba::from_rgb",
            ]
            .iter()
            .any(|c| line.contains(c))
            {
                found.push(format!("{}:{}", path.display(), n + 1));
            }
        }
    }
    found
}

#[test]
fn a_planted_colour_outside_the_theme_is_found() {
    let tree = planted(&[
        (
            "theme.rs",
            "pub const A: Color32 = Color32::from_rgb(1, 2, 3);\n",
        ),
        (
            "run/plot.rs",
            "// Color32::from_rgb(1, 2, 3) in a comment\nconst B: Color32 = Color32::from_rgb(9, 9, 9);\n",
        ),
    ]);
    let found = colours_outside_the_theme(tree.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("run/plot.rs:2"), "{found:?}");
}
