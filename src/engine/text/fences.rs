//! Fenced code blocks (```` ```python ````) in a model reply.

use super::normalize_newlines;

/// A fenced code block of a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedBlock {
    /// The first word of the info string, lower-cased (`python`), or empty.
    pub tag: String,
    /// The lines between the fences, joined with LF (no trailing newline).
    pub content: String,
}

/// Every closed ```` ``` ```` fenced block of `text`, in order. A fence of
/// N backticks is closed by a line of at least N backticks.
pub fn fenced_blocks(text: &str) -> Vec<FencedBlock> {
    scan_fences(&normalize_newlines(text), |_, _| {})
}

/// The fence scanner behind [`fenced_blocks`]: also calls `outside(line,
/// blocks_so_far)` for every line that is not inside a fence (so a caller can
/// see headings between blocks). `text` must already use LF line endings.
pub fn scan_fences(text: &str, mut outside: impl FnMut(&str, usize)) -> Vec<FencedBlock> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, Vec<&str>)> = None;
    for line in text.split('\n') {
        let t = line.trim();
        let ticks = t.chars().take_while(|c| *c == '`').count();
        match open.as_mut() {
            None => {
                if ticks >= 3 && !t[ticks..].contains('`') {
                    let tag = t[ticks..]
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    open = Some((ticks, tag, Vec::new()));
                } else {
                    outside(t, out.len());
                }
            }
            Some((n, _, body)) => {
                if ticks >= *n && ticks == t.len() {
                    if let Some((_, tag, body)) = open.take() {
                        out.push(FencedBlock {
                            tag,
                            content: body.join("\n"),
                        });
                    }
                } else {
                    body.push(line);
                }
            }
        }
    }
    out
}

/// Whether a fence tag names `language` (`py` for `python`, ...).
pub fn tag_matches(tag: &str, language: &str) -> bool {
    const ALIASES: &[(&str, &str)] = &[
        ("python", "py"),
        ("python", "python3"),
        ("javascript", "js"),
        ("typescript", "ts"),
        ("rust", "rs"),
        ("cpp", "c++"),
        ("cpp", "cc"),
        ("julia", "jl"),
        ("go", "golang"),
        ("text", "txt"),
    ];
    let (tag, language) = (tag.to_ascii_lowercase(), language.to_ascii_lowercase());
    if tag.is_empty() || language.is_empty() {
        return false;
    }
    tag == language
        || ALIASES
            .iter()
            .any(|(a, b)| (tag == *a && language == *b) || (tag == *b && language == *a))
}

/// The code of a full-rewrite reply: the first fenced block tagged with the
/// language, else the first non-empty fenced block of any tag.
pub fn pick_rewrite(reply: &str, language: &str) -> Option<String> {
    let blocks: Vec<FencedBlock> = fenced_blocks(reply)
        .into_iter()
        .filter(|b| !b.content.trim().is_empty())
        .collect();
    blocks
        .iter()
        .find(|b| tag_matches(&b.tag, language))
        .or_else(|| blocks.first())
        .map(|b| b.content.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_blocks_parse_tags_and_nested_fences() {
        let text = "x\n```Python extra\na\n```\n`````\nb\n```\nstill b\n`````\n```unclosed\nc";
        let blocks = fenced_blocks(text);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].tag, "python");
        assert_eq!(blocks[0].content, "a");
        assert_eq!(blocks[1].tag, "");
        assert_eq!(blocks[1].content, "b\n```\nstill b");
        assert!(tag_matches("py", "python"));
        assert!(!tag_matches("", "python"));
    }
}
