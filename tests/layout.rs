//! Rules of the source tree that the compiler does not check.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

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

/// The engine's top-level modules (`card`, `registry`, `component`, the slot
/// folders...) import each other without a cycle, so each can be read and
/// tested from the bottom up. Counted: `crate::engine::X` outside comments
/// and test modules.
#[test]
fn the_engine_modules_form_no_cycle() {
    use std::collections::{BTreeMap, BTreeSet};
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &files {
        let rel = path.strip_prefix(&engine).expect("under src/engine");
        let first = rel.components().next().expect("a component");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        // A module's tests in a file of their own (`#[cfg(test)] mod tests;`)
        // are not part of the module's imports.
        if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("readable");
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::engine::") {
                let rest = &line[i + "crate::engine::".len()..];
                let to: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !to.is_empty() && to != module {
                    edges.entry(module.clone()).or_default().insert(to);
                }
            }
        }
    }
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    assert!(edges.len() > 10, "found only {} modules", edges.len());
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(cycle) = visit(node, &edges, &mut Vec::new(), &mut done) {
            panic!("engine modules import in a cycle: {}", cycle.join(" -> "));
        }
    }
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
