//! What leaves a run for the user's own folders: `galapagos export-run`
//! (every genome as JSON lines, or the best lineage as a git history) and
//! `galapagos apply` (a genome's program written into a folder).

use std::io::Write as _;
use std::path::Path;

/// `galapagos export-run --jsonl`.
pub fn export_run(run_dir: &Path, out: Option<&Path>) -> i32 {
    let genomes = match crate::engine::archive::Archive::open(run_dir).and_then(|a| a.genomes()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let mut text = String::new();
    for g in &genomes {
        match serde_json::to_string(g) {
            Ok(line) => {
                text.push_str(&line);
                text.push('\n');
            }
            Err(e) => {
                eprintln!("error: genome {}: {e}", g.id);
                return 1;
            }
        }
    }
    let written = match out {
        Some(path) => std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display())),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string()),
    };
    match written {
        Ok(()) => {
            if let Some(path) = out {
                eprintln!("wrote {} genomes to {}", genomes.len(), path.display());
            }
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// `galapagos export-run --git`.
pub fn export_run_git(run_dir: &Path, to: &Path) -> i32 {
    if matches!(
        crate::engine::service::Target::of_path(run_dir),
        Ok(crate::engine::service::Target::Ssh(_))
    ) {
        eprintln!(
            "error: {}: export-run --git reads a run folder on this machine; for a run on a server, \
             run it there, or take the genomes here with --jsonl and a genome's program with apply",
            run_dir.display()
        );
        return 2;
    }
    match crate::engine::takeout::export_git(run_dir, to) {
        Ok(done) => {
            let ids: Vec<String> = done.lineage.iter().map(|id| format!("#{id}")).collect();
            println!(
                "wrote a git repository to {}: {} commits, one per generation ({})",
                to.display(),
                done.lineage.len(),
                ids.join(" -> ")
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// `galapagos export-run --jsonl` of a run here or on a server.
pub fn export_run_at(
    run_dir: &Path,
    out: Option<&Path>,
    remote: &super::remote::RemoteArgs,
) -> i32 {
    match crate::engine::service::Target::of_path(run_dir) {
        Ok(t @ crate::engine::service::Target::Ssh(_)) => {
            super::remote::export_run(&t, out, remote)
        }
        Ok(crate::engine::service::Target::Local(_)) => export_run(run_dir, out),
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// `galapagos apply` of a run here or on a server.
pub fn apply_at(
    run_dir: &Path,
    genome: Option<u64>,
    to: &Path,
    force: bool,
    remote: &super::remote::RemoteArgs,
) -> i32 {
    match crate::engine::service::Target::of_path(run_dir) {
        Ok(t @ crate::engine::service::Target::Ssh(_)) => {
            super::remote::apply_program(&t, genome, to, force, remote)
        }
        Ok(crate::engine::service::Target::Local(_)) => apply(run_dir, genome, to, force),
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// `galapagos apply`.
pub fn apply(run_dir: &Path, genome: Option<u64>, to: &Path, force: bool) -> i32 {
    super::report::report_applied(
        crate::engine::takeout::apply(run_dir, genome, to, force),
        to,
    )
}
