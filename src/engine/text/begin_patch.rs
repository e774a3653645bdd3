//! The `*** Begin Patch` format OpenAI's coding models are trained on (the
//! `apply_patch` tool of the Codex CLI):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path        every following line starts with `+`
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path     optional, right after Update File
//! @@ def f():               a hunk; the text after `@@` is a line it comes after
//!  context / -removed / +added lines
//! *** End of File           optional: the hunk ends the file
//! *** End Patch
//! ```
//!
//! Parsed leniently, as the reference parser is: markers may carry
//! surrounding whitespace, the first hunk of an update may omit its `@@`, an
//! empty line inside a hunk is an empty context line, and a patch left
//! unclosed at a fence or the end of the reply ends there. Parsing only;
//! [`super::hunks`] applies the hunks.

use super::hunks::{Hunk, HunkLine};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// One file operation of a patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Create a file with these contents.
    Add { path: String, content: String },
    /// Remove a file.
    Delete { path: String },
    /// Change a file in place, and rename it when `move_to` is set.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// A patch that cannot be parsed; the message is shown to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`*** Begin Patch` line {line}: {reason}")]
pub struct ParseError {
    /// 1-based line within the patch (the Begin Patch line is 1).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Whether `line` opens a patch.
pub fn starts_at(line: &str) -> bool {
    line.trim() == BEGIN
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// Whether `line` ends the patch or starts the next operation.
fn is_op_boundary(line: &str) -> bool {
    let t = line.trim();
    t == END
        || t.starts_with(ADD)
        || t.starts_with(DELETE)
        || t.starts_with(UPDATE)
        || is_fence(line)
}

/// Parse the patch whose `*** Begin Patch` line is `lines[i]`. Returns its
/// operations and the index of the first line after it.
pub fn parse(lines: &[&str], i: usize) -> Result<(Vec<FileOp>, usize), ParseError> {
    let mut ops = Vec::new();
    let mut at = i + 1;
    let err = |at: usize, reason: String| ParseError {
        line: at - i + 1,
        reason,
    };
    while at < lines.len() {
        let line = lines[at];
        let t = line.trim();
        if t == END {
            return Ok((ops, at + 1));
        }
        if is_fence(line) {
            return Ok((ops, at));
        }
        if t.is_empty() {
            at += 1;
            continue;
        }
        if let Some(path) = t.strip_prefix(ADD) {
            at += 1;
            let mut content = String::new();
            while at < lines.len() {
                if let Some(l) = lines[at].strip_prefix('+') {
                    content.push_str(l);
                    content.push('\n');
                } else if lines[at].trim().is_empty()
                    && lines.get(at + 1).is_some_and(|n| n.starts_with('+'))
                {
                    // A blank line whose `+` the model left out.
                    content.push('\n');
                } else {
                    break;
                }
                at += 1;
            }
            ops.push(FileOp::Add {
                path: path.trim().to_owned(),
                content,
            });
        } else if let Some(path) = t.strip_prefix(DELETE) {
            ops.push(FileOp::Delete {
                path: path.trim().to_owned(),
            });
            at += 1;
        } else if let Some(path) = t.strip_prefix(UPDATE) {
            let path = path.trim().to_owned();
            at += 1;
            let move_to = lines
                .get(at)
                .and_then(|l| l.trim().strip_prefix(MOVE))
                .map(|p| p.trim().to_owned());
            if move_to.is_some() {
                at += 1;
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            while at < lines.len() && !is_op_boundary(lines[at]) {
                let line = lines[at];
                let t = line.trim();
                if t == END_OF_FILE {
                    match hunks.last_mut() {
                        Some(h) => h.at_eof = true,
                        None => {
                            return Err(err(at, "`*** End of File` before any hunk line".into()));
                        }
                    }
                    at += 1;
                    continue;
                }
                if let Some(anchor) = line.strip_prefix("@@") {
                    let anchor = anchor.trim();
                    hunks.push(Hunk {
                        anchor: (!anchor.is_empty()).then(|| anchor.to_owned()),
                        ..Hunk::default()
                    });
                    at += 1;
                    continue;
                }
                let parsed = if let Some(l) = line.strip_prefix(' ') {
                    HunkLine::Context(l.to_owned())
                } else if let Some(l) = line.strip_prefix('-') {
                    HunkLine::Remove(l.to_owned())
                } else if let Some(l) = line.strip_prefix('+') {
                    HunkLine::Add(l.to_owned())
                } else if t.is_empty() {
                    HunkLine::Context(String::new())
                } else if t.starts_with("***") {
                    return Err(err(
                        at,
                        format!(
                            "`{t}` is not a patch line; the operations are `*** Add File: path`, \
                             `*** Delete File: path`, `*** Update File: path` (optionally followed \
                             by `*** Move to: path`), and the patch ends with `*** End Patch`"
                        ),
                    ));
                } else {
                    return Err(err(
                        at,
                        format!(
                            "in the update of `{path}`, `{}` does not start with ` ` (context), \
                             `-` (removed) or `+` (added)",
                            t.chars().take(80).collect::<String>()
                        ),
                    ));
                };
                if hunks.is_empty() {
                    hunks.push(Hunk::default());
                }
                if let Some(h) = hunks.last_mut() {
                    h.lines.push(parsed);
                }
                at += 1;
            }
            // Blank lines at the end of a hunk separate it from the next
            // operation; they are no context.
            for h in &mut hunks {
                while matches!(h.lines.last(), Some(HunkLine::Context(l)) if l.trim().is_empty()) {
                    h.lines.pop();
                }
            }
            hunks.retain(|h| !h.lines.is_empty());
            if hunks.is_empty() && move_to.is_none() {
                return Err(err(
                    at,
                    format!("the update of `{path}` has no hunk (`@@` and `-` / `+` lines)"),
                ));
            }
            ops.push(FileOp::Update {
                path,
                move_to,
                hunks,
            });
        } else {
            return Err(err(
                at,
                format!(
                    "`{}` is not an operation; expected `*** Add File: path`, `*** Delete File: \
                     path`, `*** Update File: path` or `*** End Patch`",
                    t.chars().take(80).collect::<String>()
                ),
            ));
        }
    }
    Ok((ops, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(text: &str) -> Vec<FileOp> {
        let lines: Vec<&str> = text.lines().collect();
        let i = lines.iter().position(|l| starts_at(l)).unwrap();
        parse(&lines, i).unwrap().0
    }

    #[test]
    fn the_reference_example() {
        let text = "*** Begin Patch\n*** Add File: hello.txt\n+Hello world\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello, world!\")\n*** Delete File: obsolete.txt\n*** End Patch\n";
        let ops = ops(text);
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            FileOp::Add {
                path: "hello.txt".into(),
                content: "Hello world\n".into()
            }
        );
        let FileOp::Update {
            path,
            move_to,
            hunks,
        } = &ops[1]
        else {
            panic!("{ops:?}")
        };
        assert_eq!(path, "src/app.py");
        assert_eq!(move_to.as_deref(), Some("src/main.py"));
        assert_eq!(hunks[0].anchor.as_deref(), Some("def greet():"));
        assert_eq!(hunks[0].lines.len(), 2);
        assert_eq!(
            ops[2],
            FileOp::Delete {
                path: "obsolete.txt".into()
            }
        );
    }

    #[test]
    fn lenient_forms() {
        // Padded markers, a first hunk without `@@`, an empty context line,
        // two hunks, End of File, and an unclosed patch ending at a fence.
        let text = "```\n  *** Begin Patch  \n*** Update File: a.py\n import x\n\n-y = 1\n+y = 2\n@@\n-z\n+Z\n*** End of File\n```\n";
        let ops = ops(text);
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!("{ops:?}")
        };
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].lines[1], HunkLine::Context(String::new()));
        assert!(hunks[1].at_eof);
        assert!(!hunks[0].at_eof);
    }

    #[test]
    fn errors_name_the_line() {
        let lines: Vec<&str> =
            "*** Begin Patch\n*** Update File: a.py\n@@\nnot a diff line\n*** End Patch"
                .lines()
                .collect();
        let e = parse(&lines, 0).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.to_string().contains("does not start with"), "{e}");
        let lines: Vec<&str> = "*** Begin Patch\n*** Rename File: a.py\n*** End Patch"
            .lines()
            .collect();
        let e = parse(&lines, 0).unwrap_err();
        assert!(e.to_string().contains("is not an operation"), "{e}");
        let lines: Vec<&str> = "*** Begin Patch\n*** Update File: a.py\n*** End Patch"
            .lines()
            .collect();
        let e = parse(&lines, 0).unwrap_err();
        assert!(e.to_string().contains("has no hunk"), "{e}");
    }
}
