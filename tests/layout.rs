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
