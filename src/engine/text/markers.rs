//! EVOLVE-BLOCK markers: which lines of a program may be edited.

/// Opens an editable region (after any comment prefix).
pub const EVOLVE_START: &str = "EVOLVE-BLOCK-START";
/// Closes an editable region (after any comment prefix).
pub const EVOLVE_END: &str = "EVOLVE-BLOCK-END";

/// An EVOLVE-BLOCK marker line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// `EVOLVE-BLOCK-START`.
    Start,
    /// `EVOLVE-BLOCK-END`.
    End,
}

/// Comment openers a marker may follow when it trails code on its line
/// (`    y = 2  # EVOLVE-BLOCK-END`).
const COMMENT_OPENERS: &[&str] = &["#", "//", "--", ";", "%", "!", "/*", "<!--", "(*"];

/// Comment closers that may follow a trailing marker (`int x; /* EVOLVE-BLOCK-END */`).
const COMMENT_CLOSERS: &[&str] = &["*/", "-->", "*)"];

/// Whether `line` is an EVOLVE-BLOCK marker: a line that starts with the
/// marker after any comment prefix (`#`, `//`, `--`, `;`, `%`, `/*`, `<!--`...),
/// or a line of code that ends with a comment holding only the marker
/// (`    y = 2  # EVOLVE-BLOCK-END`, as a model's insertion before the END
/// line leaves it). A marker line is never editable; code before a trailing
/// marker stays with it.
pub fn marker_kind(line: &str) -> Option<Marker> {
    let t = line
        .trim()
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim_start();
    if t.starts_with(EVOLVE_START) {
        Some(Marker::Start)
    } else if t.starts_with(EVOLVE_END) {
        Some(Marker::End)
    } else {
        trailing_marker(line).map(|(_, marker)| marker)
    }
}

/// The code before a marker that trails it on the same line, and the marker
/// (`("    y = 2", End)` for `    y = 2  # EVOLVE-BLOCK-END`). `None` for a
/// line that is not such a line (a marker line of its own included).
pub fn trailing_marker(line: &str) -> Option<(&str, Marker)> {
    let mut t = line.trim_end();
    while let Some(rest) = COMMENT_CLOSERS
        .iter()
        .find_map(|c| t.strip_suffix(c))
        .map(str::trim_end)
    {
        t = rest;
    }
    let (before, marker) = if let Some(before) = t.strip_suffix(EVOLVE_START) {
        (before, Marker::Start)
    } else if let Some(before) = t.strip_suffix(EVOLVE_END) {
        (before, Marker::End)
    } else {
        return None;
    };
    let before = before.trim_end();
    let code = COMMENT_OPENERS
        .iter()
        .filter_map(|o| before.strip_suffix(o))
        .map(str::trim_end)
        // The shortest code: `<!--` wins over `--`, `(*` over `*`.
        .min_by_key(|code| code.len())?;
    if code.trim().is_empty() {
        return None;
    }
    Some((code, marker))
}

/// An editable region: the marker line indices. The editable lines are
/// `start + 1 .. end`; `end == lines.len()` for a START without an END.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Line index of the START marker.
    pub start: usize,
    /// Line index of the END marker (or the line count when unclosed).
    pub end: usize,
}

impl Region {
    /// Line indices that may be edited.
    pub fn interior(&self) -> std::ops::Range<usize> {
        self.start + 1..self.end
    }

    pub(crate) fn contains_span(&self, from: usize, len: usize) -> bool {
        from > self.start && from + len <= self.end
    }
}

/// The EVOLVE-BLOCK regions of a program given as lines. A START opens a
/// region (a second START while one is open is ignored), the next END closes
/// it; an END with no open region is ignored; an unclosed region runs to the
/// end of the file.
pub fn evolve_regions<S: AsRef<str>>(lines: &[S]) -> Vec<Region> {
    let mut regions = Vec::new();
    let mut open = None;
    for (i, line) in lines.iter().enumerate() {
        match marker_kind(line.as_ref()) {
            Some(Marker::Start) if open.is_none() => open = Some(i),
            Some(Marker::End) => {
                if let Some(start) = open.take() {
                    regions.push(Region { start, end: i });
                }
            }
            _ => {}
        }
    }
    if let Some(start) = open {
        regions.push(Region {
            start,
            end: lines.len(),
        });
    }
    regions
}

pub(crate) fn marker_sequence<S: AsRef<str>>(lines: &[S]) -> Vec<Marker> {
    lines
        .iter()
        .filter_map(|l| marker_kind(l.as_ref()))
        .collect()
}

pub(crate) fn balanced(markers: &[Marker]) -> bool {
    markers.len().is_multiple_of(2)
        && markers.iter().enumerate().all(|(i, m)| {
            *m == if i % 2 == 0 {
                Marker::Start
            } else {
                Marker::End
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_and_unclosed_start() {
        let lines = [
            "a",
            "# EVOLVE-BLOCK-START",
            "b",
            "# EVOLVE-BLOCK-END",
            "c",
            "// EVOLVE-BLOCK-START",
            "d",
        ];
        let regions = evolve_regions(&lines);
        assert_eq!(
            regions,
            vec![Region { start: 1, end: 3 }, Region { start: 5, end: 7 }]
        );
        assert_eq!(regions[0].interior(), 2..3);
    }

    #[test]
    fn an_end_marker_trailing_code_closes_the_region() {
        // ShinkaEvolve's own case: an insertion before the END line left the
        // marker at the end of a line of code.
        let lines = [
            "# EVOLVE-BLOCK-START",
            "def f():",
            "    x = 1",
            "    y = 2# EVOLVE-BLOCK-END",
            "def run():",
            "    return f()",
        ];
        assert_eq!(marker_kind(lines[3]), Some(Marker::End));
        assert_eq!(evolve_regions(&lines), vec![Region { start: 0, end: 3 }]);
        assert_eq!(
            marker_kind("int x = 1;// EVOLVE-BLOCK-END"),
            Some(Marker::End)
        );
        assert_eq!(
            marker_kind("integer :: x  ! EVOLVE-BLOCK-END"),
            Some(Marker::End)
        );
        // The marker's name inside code or a string is no marker.
        assert_eq!(marker_kind("if \"# EVOLVE-BLOCK-END\" in line:"), None);
        assert_eq!(marker_kind("x = EVOLVE-BLOCK-END"), None);
        assert_eq!(marker_kind("print('see EVOLVE-BLOCK-END docs')"), None);
    }

    #[test]
    fn trailing_marker_splits_code_from_marker() {
        assert_eq!(
            trailing_marker("int x = 1;// EVOLVE-BLOCK-END"),
            Some(("int x = 1;", Marker::End))
        );
        assert_eq!(
            trailing_marker("integer :: x  ! EVOLVE-BLOCK-END"),
            Some(("integer :: x", Marker::End))
        );
        assert_eq!(
            trailing_marker("int x; /* EVOLVE-BLOCK-END */"),
            Some(("int x;", Marker::End))
        );
        assert_eq!(
            trailing_marker("<p>hi</p> <!-- EVOLVE-BLOCK-END -->"),
            Some(("<p>hi</p>", Marker::End))
        );
        assert_eq!(
            trailing_marker("def f():  # EVOLVE-BLOCK-START"),
            Some(("def f():", Marker::Start))
        );
        // A marker line of its own is not a trailing one.
        assert_eq!(trailing_marker("# EVOLVE-BLOCK-END"), None);
        assert_eq!(trailing_marker("x = 1"), None);
    }
}
