//! The documents' links hold: every relative link and image in README.md,
//! ARCHITECTURE.md and docs/*.md names a file that exists, every `#anchor`
//! names a heading of the file it points into (as GitHub makes anchors of
//! headings), every docs/ page is listed in docs/README.md, and every
//! `docs/NAME.md` that the code, the tests or CI name exists.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links are checked, relative to the repository.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// GitHub's anchor for a heading's text: lower case, punctuation other than
/// `-` and `_` dropped, spaces as `-`.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A document's heading anchors (a repeated heading gets `-1`, `-2`, ...) and
/// its link and image targets with the line each is on.
struct Parsed {
    anchors: BTreeSet<String>,
    targets: Vec<(usize, String)>,
}

fn parse(text: &str) -> Parsed {
    let mut anchors = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut targets = Vec::new();
    let mut heading: Option<String> = None;
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    for (event, range) in Parser::new_ext(text, Options::all()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(base.clone()).or_insert(0);
                let anchor = if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                };
                *n += 1;
                anchors.insert(anchor);
            }
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => {
                targets.push((line_of(range.start), dest_url.to_string()));
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                // <img src="..."> and <a href="..."> written as HTML.
                for attr in ["src=\"", "href=\""] {
                    let mut rest = &h[..];
                    while let Some(i) = rest.find(attr) {
                        rest = &rest[i + attr.len()..];
                        if let Some(end) = rest.find('"') {
                            targets.push((line_of(range.start), rest[..end].to_string()));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Parsed { anchors, targets }
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| target.starts_with(p))
}

#[test]
fn every_local_link_and_image_resolves() {
    let docs = documents();
    assert!(docs.len() > 5, "found only {docs:?}");
    let mut parsed: BTreeMap<PathBuf, Parsed> = BTreeMap::new();
    for doc in &docs {
        let text = std::fs::read_to_string(root().join(doc)).expect("readable");
        parsed.insert(doc.clone(), parse(&text));
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let dir = doc.parent().unwrap_or(Path::new(""));
        for (line, target) in parsed[doc].targets.clone() {
            if is_external(&target) {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                doc.clone()
            } else {
                normalise(&dir.join(path))
            };
            if !root().join(&file).exists() {
                broken.push(format!(
                    "{}:{line}: {target}: no such file {}",
                    doc.display(),
                    file.display()
                ));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_none_or(|e| e != "md") {
                broken.push(format!(
                    "{}:{line}: {target}: an anchor into a file that is not Markdown",
                    doc.display()
                ));
                continue;
            }
            if !parsed.contains_key(&file) {
                let text = std::fs::read_to_string(root().join(&file)).expect("readable");
                parsed.insert(file.clone(), parse(&text));
            }
            let anchors = &parsed[&file].anchors;
            if !anchors.contains(anchor) {
                broken.push(format!(
                    "{}:{line}: {target}: {} has no heading #{anchor}",
                    doc.display(),
                    file.display()
                ));
            }
        }
    }
    assert!(checked > 50, "checked only {checked} local links");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `a/b/../c` as `a/c`, so that a link out of docs/ names a repository path.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn every_docs_page_is_in_the_index() {
    let index = std::fs::read_to_string(root().join("docs/README.md")).expect("docs/README.md");
    let linked: BTreeSet<String> = parse(&index)
        .targets
        .into_iter()
        .map(|(_, t)| t.split('#').next().unwrap_or_default().to_string())
        .collect();
    let missing: Vec<String> = documents()
        .iter()
        .filter(|d| d.starts_with("docs") && !d.ends_with("README.md"))
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| !linked.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "docs pages not listed in docs/README.md: {missing:?}"
    );
}

#[test]
fn docs_pages_named_by_code_tests_and_ci_exist() {
    let mut named = Vec::new();
    let mut stack = vec![root().join("src"), root().join("tests"), root().join(".ci")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.ends_with("tests/doc_links.rs") {
                continue; // its own examples
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // A module's own tests may hold made-up paths as test data.
            let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            let mut rest = text;
            while let Some(i) = rest.find("docs/") {
                rest = &rest[i + "docs/".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                    .collect();
                if let Some(name) = name.strip_suffix(".md").map(|n| format!("{n}.md")) {
                    named.push((path.clone(), name));
                }
            }
        }
    }
    let missing: Vec<String> = named
        .iter()
        .filter(|(_, name)| !root().join("docs").join(name).is_file())
        .map(|(p, name)| format!("{} names docs/{name}", p.display()))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
