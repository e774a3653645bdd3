//! What the agent reads besides its workspace: the prompt and the
//! read-only `.galapagos/` folder.
//!
//! ```text
//! .galapagos/
//!   prompt.md          the rendered prompt (also on stdin or as an argument)
//!   leaderboard.md     the pool, best first: id, fitness, scores, a one-line summary
//!   leaderboard.json   the same, for programs
//!   pool/<id>/tree/    each program's files
//!   pool/<id>/feedback.md   its evaluator's feedback (error, artifacts)
//!   notes.md           the run's notes (its memory)
//!   out/               writable: `parent` (the id it built on), `notes.md`
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::engine::genome::{Genome, GenomeId, Prompt};

/// The instructions that close every agent's prompt.
fn instructions(parent: GenomeId) -> String {
    format!(
        "\n\n# Working in this workspace\n\
         The current directory is a git repository holding program #{parent}, committed: change \
         its files in place (`git diff` shows your change). Only the task's editable files count; \
         changes to other files are dropped. When you are done, exit: the files as you leave them \
         are the new program, which the task's evaluator scores.\n\n\
         `.galapagos/` (read-only) holds `leaderboard.md` (the pool, best first, with scores), \
         `pool/<id>/tree/` (each program's files), `pool/<id>/feedback.md` (its evaluator's \
         feedback) and `notes.md` (the run's notes).\n\
         To build on another program of the pool, copy its files over the workspace's (`cp -r \
         .galapagos/pool/<id>/tree/. .`) and write its id to `.galapagos/out/parent`. To leave a \
         note for later proposals, write it to `.galapagos/out/notes.md`.\n"
    )
}

/// The prompt as the agent gets it: the system part, the user part and
/// how to work in the workspace.
pub(super) fn prompt_text(prompt: &Prompt, parent: GenomeId) -> String {
    let mut text = String::new();
    if !prompt.system.trim().is_empty() {
        text.push_str(prompt.system.trim_end());
        text.push_str("\n\n");
    }
    text.push_str(prompt.user.trim_end());
    text.push_str(&instructions(parent));
    text
}

/// One line about a genome: how it was made and what it changed.
fn summary(g: &Genome) -> String {
    if g.parent_id.is_none() {
        return "the initial program".to_owned();
    }
    let mut line = format!(
        "{} from #{}",
        if g.metadata.patch_type.is_empty() {
            "edit"
        } else {
            &g.metadata.patch_type
        },
        g.parent_id.unwrap_or_default()
    );
    if let Some(diff) = &g.diff {
        let files: Vec<&str> = diff
            .lines()
            .filter_map(|l| l.strip_prefix("+++ b/"))
            .take(4)
            .collect();
        let (add, del) = diff.lines().fold((0, 0), |(a, d), l| {
            if l.starts_with('+') && !l.starts_with("+++") {
                (a + 1, d)
            } else if l.starts_with('-') && !l.starts_with("---") {
                (a, d + 1)
            } else {
                (a, d)
            }
        });
        if !files.is_empty() {
            let _ = write!(line, ": {} (+{add} -{del})", files.join(", "));
        }
    }
    line
}

fn fitness(g: &Genome) -> String {
    g.fitness()
        .map_or_else(|| "invalid".to_owned(), |f| format!("{f:.6}"))
}

/// Write the prompt and `.galapagos/`'s contents into `info`.
pub(super) fn write(
    info: &Path,
    prompt: &str,
    pool: &[Arc<Genome>],
    notes: &[String],
) -> Result<(), String> {
    let io =
        |what: &str, e: std::io::Error| format!("cannot write {what} in {}: {e}", info.display());
    std::fs::write(info.join("prompt.md"), prompt).map_err(|e| io("prompt.md", e))?;
    let mut board = String::from(
        "# Leaderboard\n\nThe pool, best first. Each program's files are in `pool/<id>/tree/`, its \
         evaluator's feedback in `pool/<id>/feedback.md`.\n\n| id | fitness | scores | summary |\n\
         |---|---|---|---|\n",
    );
    let mut json = Vec::new();
    for g in pool {
        let scores: Vec<String> = g
            .scores
            .iter()
            .map(|(k, v)| format!("{k}={v:.6}"))
            .collect();
        let line = summary(g);
        let _ = writeln!(
            board,
            "| {} | {} | {} | {} |",
            g.id,
            fitness(g),
            scores.join(", "),
            line.replace('|', "/")
        );
        json.push(serde_json::json!({
            "id": g.id,
            "parent": g.parent_id,
            "valid": g.valid,
            "fitness": g.fitness(),
            "scores": g.scores,
            "summary": line,
        }));
        let dir = info.join("pool").join(g.id.to_string());
        g.content
            .write_to(&dir.join("tree"))
            .map_err(|e| io(&format!("pool/{}/tree", g.id), e))?;
        let mut feedback = format!("# Program #{}\n\nfitness: {}\n", g.id, fitness(g));
        for (k, v) in &g.scores {
            let _ = writeln!(feedback, "- {k}: {v}");
        }
        if let Some(e) = &g.error {
            let _ = write!(feedback, "\n## Error\n{e}\n");
        }
        for (name, text) in &g.artifacts {
            let _ = write!(feedback, "\n## {name}\n{}\n", text.trim_end());
        }
        std::fs::write(dir.join("feedback.md"), feedback)
            .map_err(|e| io(&format!("pool/{}/feedback.md", g.id), e))?;
    }
    std::fs::write(info.join("leaderboard.md"), board).map_err(|e| io("leaderboard.md", e))?;
    let json = serde_json::to_string_pretty(&json).unwrap_or_default();
    std::fs::write(info.join("leaderboard.json"), json).map_err(|e| io("leaderboard.json", e))?;
    let mut text = String::from("# Notes\n\nWhat the run's memory holds.\n");
    for n in notes {
        let _ = write!(text, "\n{}\n", n.trim());
    }
    std::fs::write(info.join("notes.md"), text).map_err(|e| io("notes.md", e))
}
