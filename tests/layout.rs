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
