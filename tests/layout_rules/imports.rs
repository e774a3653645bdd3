//! The import graph of a source tree, read without a compiler: which module of a folder names which of its
//! siblings. Shared by the layout rules (`tests/layout.rs`) and their planted-violation tests.
//!
//! A file's paths through `crate::`, `super::` and `self::` (in `use` trees, braces and renames included, and in
//! code) are resolved to the module they start from; a path that leaves a folder's module for one of its children
//! is an edge between the two children of the deepest folder they share. A name a folder's `mod.rs` re-exports
//! (`pub use child::Name`) counts as that child. Comments, string and character literals and a file's test module
//! (`#[cfg(test)] mod tests`, or a `tests.rs`) are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One module: its path below the crate root (`["engine", "model", "check"]`).
pub type ModPath = Vec<String>;

/// Every `.rs` file under `dir`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file is: `a/mod.rs` and `lib.rs` are their folder's module, `a/b.rs` is `a::b`.
pub fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    if last != "mod.rs" && last != "lib.rs" && last != "main.rs" {
        parts.push(last.trim_end_matches(".rs").to_owned());
    }
    parts
}

/// The code of a file without comments, literals and its test module.
pub fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r'
            && matches!(b.get(i + 1), Some(b'#') | Some(b'"'))
            && !ident_byte(prev(b, i))
        {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            'scan: while j < b.len() {
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    j += 1 + hashes;
                    break 'scan;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' {
            // a character literal ('x', '\n', '\u{1F600}'); otherwise a lifetime or a label
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if let Some(len) = text[i + 1..].chars().next().map(char::len_utf8)
                && b.get(i + 1 + len) == Some(&b'\'')
            {
                i += 2 + len;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn prev(b: &[u8], i: usize) -> u8 {
    if i == 0 { b' ' } else { b[i - 1] }
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

fn tokens(code: &str) -> Vec<Tok> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && ident_byte(b[i]) {
                i += 1;
            }
            out.push(Tok::Ident(code[start..i].to_owned()));
            continue;
        }
        match c {
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push(Tok::Colons);
                i += 2;
                continue;
            }
            b'{' => out.push(Tok::Open),
            b'}' => out.push(Tok::Close),
            b',' => out.push(Tok::Comma),
            b'*' => out.push(Tok::Star),
            c if c.is_ascii_whitespace() => {}
            _ => out.push(Tok::Other),
        }
        i += 1;
    }
    out
}

/// One use tree (or a plain path) from `at`: every leaf as (path, the name it is bound to).
fn parse_tree(
    toks: &[Tok],
    at: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, String)>,
) {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(*at) {
            Some(Tok::Ident(name)) => {
                *at += 1;
                if name == "self"
                    && !path.is_empty()
                    && prefix.len() == path.len()
                    && !prefix.is_empty()
                {
                    // `{self, ...}` names the prefix itself
                    let bound = path.last().cloned().unwrap_or_default();
                    out.push((path.clone(), bound));
                    return;
                }
                path.push(name.clone());
                if toks.get(*at) == Some(&Tok::Colons) {
                    *at += 1;
                    continue;
                }
                let mut bound = name.clone();
                if toks.get(*at) == Some(&Tok::Ident("as".to_owned())) {
                    if let Some(Tok::Ident(alias)) = toks.get(*at + 1) {
                        bound = alias.clone();
                    }
                    *at += 2;
                }
                out.push((path, bound));
                return;
            }
            Some(Tok::Open) => {
                *at += 1;
                while *at < toks.len() {
                    match toks.get(*at) {
                        Some(Tok::Close) => {
                            *at += 1;
                            return;
                        }
                        Some(Tok::Comma) => *at += 1,
                        _ => {
                            let before = *at;
                            parse_tree(toks, at, &path, out);
                            if *at == before {
                                *at += 1;
                            }
                        }
                    }
                }
                return;
            }
            Some(Tok::Star) => {
                *at += 1;
                out.push((path, "*".to_owned()));
                return;
            }
            _ => {
                if !path.is_empty() {
                    let bound = path.last().cloned().unwrap_or_default();
                    out.push((path, bound));
                }
                return;
            }
        }
    }
}

/// What one file names: every path through `crate::`, `super::`, `self::`, resolved from `module`, and the
/// names its `pub use`s bind (for a folder's re-exports).
pub struct FileRefs {
    pub paths: Vec<ModPath>,
    pub reexports: Vec<(String, ModPath)>,
}

pub fn refs_of(module: &[String], code: &str) -> FileRefs {
    let toks = tokens(code);
    let resolve = |path: &[String]| -> Option<ModPath> {
        let mut base: Vec<String>;
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => {
                base = Vec::new();
                rest = &path[1..];
            }
            Some("self") => {
                base = module.to_vec();
                rest = &path[1..];
            }
            Some("super") => {
                base = module.to_vec();
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            _ => {
                // a path from this module's own children (`use child::Name` in a mod.rs)
                base = module.to_vec();
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    };
    let mut paths = Vec::new();
    let mut reexports = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let starts = matches!(&toks[i], Tok::Ident(n) if n == "crate" || n == "super" || n == "self")
            && toks.get(i + 1) == Some(&Tok::Colons)
            && (i == 0 || toks[i - 1] != Tok::Colons);
        let is_use = toks[i] == Tok::Ident("use".to_owned());
        if is_use {
            let public = i > 0
                && (toks[i - 1] == Tok::Ident("pub".to_owned())
                    || (i >= 4
                        && toks[i - 4] == Tok::Ident("pub".to_owned())
                        && toks[i - 1] == Tok::Other));
            let mut at = i + 1;
            let mut leaves = Vec::new();
            parse_tree(&toks, &mut at, &[], &mut leaves);
            for (leaf, bound) in leaves {
                // `use std::...` and other crates resolve below this module, to no module of the tree
                if let Some(abs) = resolve(&leaf) {
                    paths.push(abs.clone());
                    if public && bound != "*" {
                        reexports.push((bound, abs));
                    }
                }
            }
            i = at.max(i + 1);
            continue;
        }
        if starts {
            let mut at = i;
            let mut leaves = Vec::new();
            // a path in code: identifiers joined by `::`, no braces
            let mut path = Vec::new();
            while let Some(Tok::Ident(name)) = toks.get(at) {
                path.push(name.clone());
                at += 1;
                if toks.get(at) == Some(&Tok::Colons)
                    && matches!(toks.get(at + 1), Some(Tok::Ident(_)))
                {
                    at += 1;
                } else {
                    break;
                }
            }
            leaves.push(path);
            for leaf in leaves {
                if let Some(abs) = resolve(&leaf) {
                    paths.push(abs);
                }
            }
            i = at.max(i + 1);
            continue;
        }
        i += 1;
    }
    FileRefs { paths, reexports }
}

/// The import graph of a source tree: for each folder (as a module path), its children and the edges between them.
pub struct Graph {
    pub folders: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>>,
    /// For each edge, one place that makes it: (folder, from, to) -> "file: path".
    pub witness: BTreeMap<(ModPath, String, String), String>,
    /// Every path read: the module that names it, the module it resolves to, and "file: path".
    pub refs: Vec<(ModPath, ModPath, String)>,
}

pub fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    // the modules that exist: every file's module and each of its ancestors
    let mut modules: BTreeSet<ModPath> = BTreeSet::new();
    for f in &files {
        let m = module_of(src, f);
        for k in 0..=m.len() {
            modules.insert(m[..k].to_vec());
        }
    }
    let mut reads = Vec::new();
    // a folder's re-exports: (folder, name) -> the path it stands for
    let mut reexports: BTreeMap<(ModPath, String), ModPath> = BTreeMap::new();
    for f in &files {
        if f.file_name()
            .is_some_and(|n| n == "tests.rs" || n == "main.rs")
        {
            continue;
        }
        let module = module_of(src, f);
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let refs = refs_of(&module, &code_of(&text));
        let is_folder_root = f
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        if is_folder_root {
            for (name, target) in refs.reexports {
                reexports.insert((module.clone(), name), target);
            }
        }
        reads.push((f.clone(), module, refs.paths));
    }
    // A path's module: the longest existing module prefix, a re-exported name followed to where it points.
    let resolve = |path: &ModPath| -> ModPath {
        let mut p = path.clone();
        for _ in 0..8 {
            let mut k = p.len();
            while k > 0 && !modules.contains(&p[..k]) {
                k -= 1;
            }
            if k < p.len()
                && let Some(target) = reexports.get(&(p[..k].to_vec(), p[k].clone()))
                && target.len() > k
                && target[..k] == p[..k]
            {
                let mut next = target.clone();
                next.extend(p[k + 1..].iter().cloned());
                if next == p {
                    break;
                }
                p = next;
                continue;
            }
            return p[..k].to_vec();
        }
        p
    };
    let mut g = Graph {
        folders: BTreeMap::new(),
        witness: BTreeMap::new(),
        refs: Vec::new(),
    };
    for m in &modules {
        if let Some((name, parent)) = m.split_last() {
            g.folders
                .entry(parent.to_vec())
                .or_default()
                .entry(name.clone())
                .or_default();
        }
    }
    for (file, module, paths) in reads {
        for path in paths {
            let target = resolve(&path);
            g.refs.push((
                module.clone(),
                target.clone(),
                format!("{}: {}", file.display(), path.join("::")),
            ));
            let k = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            let (Some(from), Some(to)) = (module.get(k), target.get(k)) else {
                continue;
            };
            let folder = module[..k].to_vec();
            g.folders
                .entry(folder.clone())
                .or_default()
                .entry(from.clone())
                .or_default()
                .insert(to.clone());
            g.witness
                .entry((folder, from.clone(), to.clone()))
                .or_insert_with(|| format!("{}: {}", file.display(), path.join("::")));
        }
    }
    g
}

/// Every folder whose children import each other in a cycle: "engine::model: a -> b -> a (a: file: path, ...)".
pub fn cycles(g: &Graph) -> Vec<String> {
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
    let mut found = Vec::new();
    for (folder, edges) in &g.folders {
        let mut done = BTreeSet::new();
        for node in edges.keys() {
            if let Some(cycle) = visit(node, edges, &mut Vec::new(), &mut done) {
                let name = if folder.is_empty() {
                    "crate".to_owned()
                } else {
                    folder.join("::")
                };
                let why: Vec<String> = cycle
                    .windows(2)
                    .filter_map(|w| {
                        g.witness
                            .get(&(folder.clone(), w[0].clone(), w[1].clone()))
                            .cloned()
                    })
                    .collect();
                found.push(format!(
                    "{name}: {} (through {})",
                    cycle.join(" -> "),
                    why.join("; ")
                ));
                break;
            }
        }
    }
    found
}
