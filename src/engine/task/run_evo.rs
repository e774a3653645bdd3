//! The task author's system message in a ShinkaEvolve task folder.
//!
//! ShinkaEvolve has no config key for it in the task folder's files that
//! every example uses: its runner script, `run_evo.py`, passes the message
//! to `EvolutionConfig` as `task_sys_msg`, usually from a module-level
//! string (`task_sys_msg = """..."""` then `EvolutionConfig(task_sys_msg=
//! task_sys_msg, ...)`, or `config["evo_config"]["task_sys_msg"] =
//! search_task_sys_msg`). ShinkaEvolve never reads the folder's README.
//!
//! This reads that message without running the script: only when
//! `task_sys_msg` is given a string literal, or a name bound at the top
//! level to one. A message the script builds at run time (a concatenation,
//! a call, an f-string) is not guessed at: the caller says so and falls
//! back to the README.

/// What `run_evo.py` says about `task_sys_msg`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEvoMessage {
    /// The script never sets `task_sys_msg`.
    Absent,
    /// It sets it to this text (a literal, or a name bound to one).
    Text(String),
    /// It sets it to something computed when the script runs.
    Computed,
}

/// Find the message `run_evo.py` (`source`) passes as `task_sys_msg`.
pub fn task_sys_msg(source: &str) -> RunEvoMessage {
    let mut found = RunEvoMessage::Absent;
    let mut search = 0;
    while let Some(at) = source[search..].find("task_sys_msg") {
        let start = search + at;
        search = start + "task_sys_msg".len();
        // A whole word: not `search_task_sys_msg` (the variable) itself.
        let before = source[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut rest = &source[search..];
        // `["task_sys_msg"] = ...` (a dict item) or `task_sys_msg=...`.
        if let Some(r) = rest.strip_prefix("\"]").or_else(|| rest.strip_prefix("']")) {
            rest = r;
        }
        let rest = rest.trim_start_matches([' ', '\t']);
        let Some(value) = rest.strip_prefix('=') else {
            continue;
        };
        if value.starts_with('=') {
            continue; // a comparison
        }
        let value = value.trim_start_matches([' ', '\t']);
        let text = match string_literal(value) {
            Some((text, after)) if ends_expression(after) => Some(text),
            Some(_) => None,
            None => {
                let name: String = value
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() || !ends_expression(&value[name.len()..]) {
                    None
                } else {
                    top_level_string(source, &name)
                }
            }
        };
        found = text.map_or(RunEvoMessage::Computed, RunEvoMessage::Text);
    }
    found
}

/// Whether what follows a value ends it: a comma, a closing bracket, the end
/// of the line or a comment.
fn ends_expression(after: &str) -> bool {
    let after = after.trim_start_matches([' ', '\t']);
    after.is_empty() || after.starts_with([',', ')', '\n', '\r', '#'])
}

/// The string bound to `name` by a top-level `name = "..."` (the last such
/// binding), when it is a literal.
fn top_level_string(source: &str, name: &str) -> Option<String> {
    let mut text = None;
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let rest = rest.trim_start_matches([' ', '\t']);
        let Some(value) = rest.strip_prefix('=') else {
            continue;
        };
        if value.starts_with('=') {
            continue;
        }
        let value_at = here + (line.len() - value.len());
        let value = source[value_at..].trim_start_matches([' ', '\t']);
        text = match string_literal(value) {
            Some((s, after)) if ends_expression(after) => Some(s),
            _ => None,
        };
    }
    text
}

/// A Python string literal at the start of `s` (optional `r`/`u` prefix;
/// not `f` or `b`), with its escapes read: the text and what follows it.
fn string_literal(s: &str) -> Option<(String, &str)> {
    let mut raw = false;
    let mut body = s;
    for _ in 0..2 {
        match body.chars().next() {
            Some('r' | 'R') => {
                raw = true;
                body = &body[1..];
            }
            Some('u' | 'U') => body = &body[1..],
            _ => break,
        }
    }
    let quote = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| body.starts_with(q))?;
    let inner = &body[quote.len()..];
    let mut out = String::new();
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        if inner[i..].starts_with(quote) {
            return Some((out, &inner[i + quote.len()..]));
        }
        if c == '\n' && quote.len() == 1 {
            return None; // an unterminated one-line string
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let (_, next) = chars.next()?;
        if raw {
            out.push('\\');
            out.push(next);
            continue;
        }
        match next {
            '\n' => {}
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' | '\'' | '"' => out.push(next),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        match task_sys_msg(s) {
            RunEvoMessage::Text(t) => t,
            other => panic!("{other:?} for {s}"),
        }
    }

    #[test]
    fn a_name_bound_at_the_top_level_and_passed_as_a_keyword() {
        let src = "task_sys_msg = \"\"\"\nYou optimise Go.\n\nBe fast.\n\"\"\"\n\nevo = EvolutionConfig(\n    task_sys_msg=task_sys_msg,\n    patch_types=[\"diff\"],\n)\n";
        assert_eq!(text(src), "\nYou optimise Go.\n\nBe fast.\n");
    }

    #[test]
    fn a_name_set_as_a_dict_item() {
        let src = "search_task_sys_msg = \"\"\"You pack circles.\"\"\"\n\ndef main():\n    config[\"evo_config\"][\"task_sys_msg\"] = search_task_sys_msg\n";
        assert_eq!(text(src), "You pack circles.");
    }

    #[test]
    fn an_inline_literal_with_escapes() {
        assert_eq!(
            text("EvolutionConfig(task_sys_msg='It\\'s a\\ntest', x=1)"),
            "It's a\ntest"
        );
        assert_eq!(
            text("EvolutionConfig(task_sys_msg=r'keep \\n', x=1)"),
            "keep \\n"
        );
    }

    #[test]
    fn a_message_built_at_run_time_is_not_guessed() {
        let src = "TASK_SYS_MSG = \"\"\"Base.\"\"\"\nconfig[\"evo_config\"][\"task_sys_msg\"] = TASK_SYS_MSG + spec(d)\n";
        assert_eq!(task_sys_msg(src), RunEvoMessage::Computed);
        assert_eq!(
            task_sys_msg("EvolutionConfig(task_sys_msg=f\"{x} y\")"),
            RunEvoMessage::Computed
        );
        assert_eq!(
            task_sys_msg("EvolutionConfig(task_sys_msg=load())"),
            RunEvoMessage::Computed
        );
        // A name never bound to a literal at the top level.
        assert_eq!(
            task_sys_msg("def f():\n    m = 'x'\n    EvolutionConfig(task_sys_msg=m)\n"),
            RunEvoMessage::Computed
        );
        assert_eq!(
            task_sys_msg("unterminated = task_sys_msg='abc\n"),
            RunEvoMessage::Computed
        );
    }

    #[test]
    fn a_script_without_it() {
        assert_eq!(
            task_sys_msg("evo = EvolutionConfig(num_generations=3)\n"),
            RunEvoMessage::Absent
        );
        // Mentioned, never set.
        assert_eq!(
            task_sys_msg("# task_sys_msg is set below\nif task_sys_msg == 'x':\n    pass\n"),
            RunEvoMessage::Absent
        );
    }
}
