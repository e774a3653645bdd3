//! Turning card text (user content) into safe HTML: escaping, Markdown with
//! raw HTML shown as text and only harmless link targets, the card YAML
//! highlighted (its text unchanged), and a diff between two versions.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A link or image target kept as written: relative, `#anchor`, or an
/// `http`, `https` or `mailto` URL. Anything else (`javascript:`, `data:`,
/// `vbscript:`...) is dropped.
fn safe_url(url: &str) -> bool {
    let u = url.trim();
    let scheme_end = u.find(':');
    let slash = u.find(['/', '?', '#']);
    match scheme_end {
        // no scheme, or the colon comes after a path separator
        None => true,
        Some(i) if slash.is_some_and(|s| s < i) => true,
        Some(i) => {
            let scheme = u[..i].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
    }
}

/// Markdown (a card's README) as HTML. Raw HTML in the text is shown as
/// text, not interpreted; unsafe link targets become `#`.
pub fn markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_url(&dest_url) {
                dest_url
            } else {
                CowStr::Borrowed("#")
            },
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: if safe_url(&dest_url) {
                dest_url
            } else {
                CowStr::Borrowed("#")
            },
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

fn span(out: &mut String, class: &str, text: &str) {
    if text.is_empty() {
        return;
    }
    out.push_str("<span class=\"");
    out.push_str(class);
    out.push_str("\">");
    out.push_str(&esc(text));
    out.push_str("</span>");
}

/// Where an unquoted `#` starts a comment in a YAML line (after a space or
/// at the start), if anywhere.
fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if (c == '"' || c == '\'')
                && (prev == ' ' || prev == ':' || prev == '[' || prev == ',' || i == 0) =>
            {
                quote = Some(c);
            }
            None if c == '#' && (prev == ' ' || prev == '\t' || i == 0) => return Some(i),
            None => {}
        }
        prev = c;
    }
    None
}

fn value_class(v: &str) -> &'static str {
    let t = v.trim();
    if t.starts_with('"') || t.starts_with('\'') {
        "s"
    } else if t.parse::<f64>().is_ok() {
        "n"
    } else if matches!(t, "true" | "false" | "null" | "~") {
        "b"
    } else {
        "v"
    }
}

/// The card YAML with keys, strings, numbers and comments in spans; the
/// element's text (what Copy copies) is `yaml` unchanged.
pub fn highlight_yaml(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() * 2);
    // Inside a block scalar (`key: |`), the indentation of its key: lines
    // indented deeper (or blank) are text, whatever they look like.
    let mut block_of: Option<usize> = None;
    for line in yaml.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let depth = body.len() - body.trim_start_matches(' ').len();
        if let Some(parent) = block_of {
            if body.trim().is_empty() || depth > parent {
                span(&mut out, "s", body);
                out.push_str(newline);
                continue;
            }
            block_of = None;
        }
        let (code, comment) = match comment_start(body) {
            Some(i) => body.split_at(i),
            None => (body, ""),
        };
        let indent_len = code.len() - code.trim_start_matches([' ', '-']).len();
        let (indent, rest) = code.split_at(indent_len);
        out.push_str(&esc(indent));
        // `key:` followed by a space or the end of the line
        let key_end = rest
            .find(": ")
            .or_else(|| rest.strip_suffix(':').map(str::len))
            .filter(|&i| {
                let k = &rest[..i];
                !k.is_empty() && !k.starts_with(['"', '\'', '[', '{', '|', '>'])
            });
        match key_end {
            Some(i) => {
                span(&mut out, "k", &rest[..i]);
                out.push(':');
                let value = &rest[i + 1..];
                if value.trim_start().starts_with(['|', '>']) {
                    block_of = Some(depth);
                }
                let lead = value.len() - value.trim_start().len();
                out.push_str(&esc(&value[..lead]));
                span(&mut out, value_class(value), &value[lead..]);
            }
            None if !rest.trim().is_empty() => span(&mut out, value_class(rest), rest),
            None => out.push_str(&esc(rest)),
        }
        span(&mut out, "c", comment);
        out.push_str(newline);
    }
    out
}

/// A unified diff of `old` → `new` as HTML lines (added, removed, hunk
/// headers), or `None` when they are equal.
pub fn diff_html(old: &str, new: &str, old_name: &str, new_name: &str) -> Option<String> {
    if old == new {
        return None;
    }
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string();
    let mut out = String::from("<pre class=\"diff\"><code>");
    for line in text.split_inclusive('\n') {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "dh"
        } else if line.starts_with('+') {
            "da"
        } else if line.starts_with('-') {
            "dd"
        } else if line.starts_with("@@") {
            "dh"
        } else {
            "dc"
        };
        span(&mut out, class, line);
    }
    out.push_str("</code></pre>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of an HTML fragment: tags removed, entities decoded.
    fn text_of(html: &str) -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    #[test]
    fn highlighting_keeps_the_text() {
        let yaml = "name: x # c\nsummary: \"a <b> & 'c'\"\nlist:\n  - kind: a\n    k: 4\n  - 'q: # not'\nblock: |\n  text: here\nend";
        assert_eq!(text_of(&highlight_yaml(yaml)), yaml);
        assert!(highlight_yaml(yaml).contains("<span class=\"k\">name</span>"));
        // a block scalar's lines are text, even when they look like keys
        assert!(highlight_yaml(yaml).contains("<span class=\"s\">  text: here</span>"));
        assert!(!highlight_yaml("x: <script>").contains("<script>"));
    }

    #[test]
    fn markdown_shows_html_as_text_and_drops_script_links() {
        let html = markdown(
            "# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) [y](https://e.org) [z](docs/a.md)\n\n<img src=x onerror=alert(1)>",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("href=\"https://e.org\""), "{html}");
        assert!(html.contains("href=\"docs/a.md\""), "{html}");
    }

    #[test]
    fn diff_marks_lines() {
        let d = diff_html("a\nb\n", "a\nc\n", "1", "2").unwrap_or_default();
        assert!(d.contains("<span class=\"dd\">-b\n</span>"), "{d}");
        assert!(d.contains("<span class=\"da\">+c\n</span>"), "{d}");
        assert!(diff_html("a", "a", "1", "2").is_none());
    }
}
