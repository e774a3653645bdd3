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

/// Whether `line` is an EVOLVE-BLOCK marker (any comment prefix: `#`, `//`,
/// `--`, `;`, `%`, `/*`, `<!--`...).
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
        None
    }
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
}
