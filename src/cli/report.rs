//! What the command line prints of a run: the progress bar (or a line
//! every ten iterations without a terminal) and the summary, for a run of
//! this process and for one followed through the run service (`attach`).

use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use crate::engine::events::{RunStatus, RunSummary};

pub(super) struct Progress {
    pub(super) tty: bool,
    pub(super) quiet: bool,
    pub(super) total: u64,
    pub(super) last_draw: Instant,
    /// The last line printed without a terminal (not printed twice).
    pub(super) last_line: Option<(u64, u64, u64)>,
}

impl Progress {
    pub(super) fn draw(
        &mut self,
        done: u64,
        valid: u64,
        invalid: u64,
        best: Option<f64>,
        force: bool,
    ) {
        if self.quiet {
            return;
        }
        if !force && self.last_draw.elapsed().as_millis() < 100 {
            return;
        }
        self.last_draw = Instant::now();
        let best = best.map_or_else(|| "-".to_owned(), |b| format!("{b:.6}"));
        if self.tty {
            let width = 30usize;
            let filled = if self.total == 0 {
                width
            } else {
                (done.min(self.total) as usize * width) / self.total as usize
            };
            eprint!(
                "\r[{}{}] {done}/{} best {best}  valid {valid}  invalid {invalid} ",
                "#".repeat(filled),
                ".".repeat(width - filled),
                self.total
            );
            std::io::stderr().flush().ok();
        } else if (force || done.is_multiple_of(10))
            && self.last_line != Some((done, valid, invalid))
        {
            self.last_line = Some((done, valid, invalid));
            eprintln!(
                "iteration {done}/{}: best {best}, valid {valid}, invalid {invalid}",
                self.total
            );
        }
    }

    pub(super) fn clear(&self) {
        if self.tty && !self.quiet {
            eprintln!();
        }
    }
}

/// What the best and the initial genome's fitness are (`combined_score`, a
/// metric the task named, or the mean of the metrics).
pub(super) struct FitnessLabels {
    pub(super) best: String,
    pub(super) initial: String,
}

/// "combined_score 0.93", or "fitness 1.49 (mean of 2 metrics, no
/// combined_score)".
fn fitness_text(basis: &str, value: f64) -> String {
    if basis.contains(' ') {
        format!("fitness {value:.6} ({basis})")
    } else {
        format!("{basis} {value:.6}")
    }
}

pub(super) fn print_summary(s: &RunSummary, run_dir: &Path, model: &str, fitness: &FitnessLabels) {
    // A failure's reason is printed once, as the error after the summary.
    let status = match &s.status {
        RunStatus::Failed(_) => "failed".to_owned(),
        other => other.label(),
    };
    println!("status:      {status}");
    println!("iterations:  {}", s.iterations);
    println!(
        "genomes:     {} ({} valid, {} invalid{})",
        s.genomes,
        s.valid,
        s.invalid,
        if s.rejected == 0 {
            String::new()
        } else {
            format!(", of which {} rejected before evaluation", s.rejected)
        }
    );
    match (s.best_id, s.best_score) {
        (Some(id), Some(best)) => println!(
            "best:        genome {id}, {}",
            fitness_text(&fitness.best, best)
        ),
        _ => println!("best:        none"),
    }
    if let Some(init) = s.initial_score {
        println!("initial:     {}", fitness_text(&fitness.initial, init));
    }
    let cost = s
        .usage
        .cost_usd
        .map_or_else(String::new, |c| format!(", ${c:.4}"));
    let of = |n: u64, what: &str| {
        if n == 0 {
            String::new()
        } else {
            format!(" ({n} {what})")
        }
    };
    println!(
        "tokens:      {} prompt{} + {} completion{}{cost}",
        s.usage.prompt_tokens,
        of(s.usage.cached_tokens, "from the prompt cache"),
        s.usage.completion_tokens,
        of(s.usage.reasoning_tokens, "reasoning")
    );
    // The description says it all once: the model, and for the offline
    // model why it is in use and how to name a real one.
    println!("model:       {model}");
    if s.run_wall_secs > s.wall_secs + 0.005 {
        println!(
            "wall time:   {:.2} s ({:.2} s over the run's invocations)",
            s.wall_secs, s.run_wall_secs
        );
    } else {
        println!("wall time:   {:.2} s", s.wall_secs);
    }
    println!("run folder:  {}", run_dir.display());
}

/// What `apply` prints of what it did, and its exit code.
pub(super) fn report_applied(
    done: Result<crate::engine::takeout::Applied, crate::engine::takeout::TakeoutError>,
    to: &Path,
) -> i32 {
    match done {
        Ok(done) => {
            println!(
                "genome #{} into {}: {} file(s) written, {} deleted, {} already as the genome has them",
                done.genome,
                to.display(),
                done.written.len(),
                done.deleted.len(),
                done.unchanged
            );
            for path in &done.written {
                println!("  wrote {path}");
            }
            for path in &done.deleted {
                println!("  deleted {path}");
            }
            0
        }
        Err(e @ crate::engine::takeout::TakeoutError::LocalChanges { .. }) => {
            eprintln!("error: {e}");
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

pub(super) fn print_steering(s: &crate::engine::steering::Steering) {
    if s.notes.trim().is_empty() {
        println!("notes: none");
    } else {
        println!("notes (from iteration {}):", s.notes_since);
        for line in s.notes.lines() {
            println!("  {line}");
        }
    }
    if s.pins.is_empty() {
        println!("pinned: none");
    } else {
        let pins: Vec<String> = s
            .pins
            .iter()
            .map(|p| format!("#{} (from iteration {})", p.genome, p.since))
            .collect();
        println!("pinned: {}", pins.join(", "));
    }
}
