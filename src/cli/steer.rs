//! `galapagos inject` and `galapagos steer`: what a person changes in a
//! stopped run. The run is reopened under its folder's lock (refused while
//! another process runs it), the changes go through the loop as they do in
//! a live run ([`RunPlan::steer`]): a person's program is evaluated with the
//! run's evaluator and admitted as a child of its parent, notes and pins are
//! recorded with the iteration they start at, and `galapagos resume`
//! continues with all of it.

use std::path::{Path, PathBuf};

use crate::engine::archive::Archive;
use crate::engine::events::{LogLevel, RunCommand, RunEvent};
use crate::engine::genome::{Genome, GenomeId, Tree};
use crate::engine::launch::RunPlan;
use crate::engine::registry::Registry;
use crate::engine::run_thread::start;
use crate::engine::scaffold::check_person_program;
use crate::engine::steering::Steering;

use super::{ConsentArgs, ModelArgs, resolve_model};

/// `galapagos inject`.
#[derive(Debug, clap::Args)]
pub struct InjectArgs {
    /// The run folder (holds archive.sqlite); the run must not be running.
    pub run_dir: PathBuf,
    /// The genome the program is a child of.
    #[arg(long, value_name = "N")]
    pub parent: GenomeId,
    /// The program: a file for a single-file task, a folder (the whole program, as
    /// `galapagos apply` writes it) for a repository task.
    pub program: PathBuf,
    /// Keep changes outside the EVOLVE-BLOCK markers (refused otherwise: only the lines between
    /// them may change, for a person as for the model); the genome records the override.
    #[arg(long)]
    pub outside_markers: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub consent: ConsentArgs,
}

/// `galapagos steer`.
#[derive(Debug, clap::Args)]
pub struct SteerArgs {
    /// The run folder (holds archive.sqlite), or ssh://[user@]host[:port]/path for a run on a
    /// server. A live run is steered through its service; a stopped one here is reopened. With no
    /// option, prints the notes and pins in force.
    pub run_dir: PathBuf,
    /// Notes added to every following prompt (replacing the notes in force).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["notes_file", "clear_notes"])]
    pub notes: Option<String>,
    /// The notes, read from a file.
    #[arg(long, value_name = "FILE", conflicts_with = "clear_notes")]
    pub notes_file: Option<PathBuf>,
    /// Remove the notes.
    #[arg(long)]
    pub clear_notes: bool,
    /// Pin a valid genome as an inspiration every following selection shows (repeatable).
    #[arg(long, value_name = "N")]
    pub pin: Vec<GenomeId>,
    /// Unpin a genome (repeatable).
    #[arg(long, value_name = "N")]
    pub unpin: Vec<GenomeId>,
    /// A live run: pause it once the iterations in flight are done.
    #[arg(long, conflicts_with_all = ["resume", "stop"])]
    pub pause: bool,
    /// A live run: continue after a pause.
    #[arg(long, conflicts_with = "stop")]
    pub resume: bool,
    /// A live run: stop it (the run so far is kept; `galapagos resume` continues it).
    #[arg(long)]
    pub stop: bool,
    /// A paused live run: go on with this card's settings (those that can change in flight).
    #[arg(long, value_name = "CARD")]
    pub settings: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub consent: ConsentArgs,
    #[command(flatten)]
    pub remote: super::remote::RemoteArgs,
}

/// The parent's record, read from the run folder.
fn parent_of(run_dir: &Path, id: GenomeId) -> Result<Genome, String> {
    let genomes = Archive::open(run_dir)
        .and_then(|a| a.genomes_without_transcripts())
        .map_err(|e| e.to_string())?;
    let count = genomes.len();
    genomes.into_iter().find(|g| g.id == id).ok_or_else(|| {
        format!(
            "{}: no genome #{id} (the run has {count}: #0 to #{})",
            run_dir.display(),
            count.saturating_sub(1)
        )
    })
}

/// The program at `path` as a child of `parent`: a file replaces a single-file
/// program's text; a folder is read as the task reads its program folder.
fn read_program(path: &Path, parent: &Tree, plan: &RunPlan) -> Result<Tree, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match (parent.is_single(), meta.is_dir()) {
        (true, false) => {
            // a file a person names: regular, read without blocking, capped
            let text = crate::engine::foreign::read_named_text(
                path,
                crate::engine::foreign::Limit::PROGRAM_FILE,
            )
            .map_err(|e| format!("{e} (the program must be UTF-8 text)"))?;
            Ok(parent.with_single_text(text))
        }
        (false, true) => crate::engine::task::program_folder::load(path, &plan.task().config)
            .map(|(tree, _)| tree)
            .map_err(|e| format!("{}: {e}", path.display())),
        (true, true) => Err(format!(
            "{}: a folder, but this run's program is one file ({}): give the file",
            path.display(),
            plan.task().program_file
        )),
        (false, false) => Err(format!(
            "{}: a file, but this run's program is a folder: give the whole folder (`galapagos apply RUN --genome N --to DIR` writes one to edit)",
            path.display()
        )),
    }
}

/// What a reopened run reported: the person's genome, the steering in force,
/// the errors it logged.
#[derive(Default)]
struct Reported {
    person: Option<std::sync::Arc<Genome>>,
    steering: Option<Steering>,
    errors: Vec<String>,
}

/// Run `plan` (a reopened run with its changes) to its end.
fn follow(plan: RunPlan, model: &ModelArgs) -> Result<Reported, (i32, String)> {
    let (model, _) = resolve_model(plan.card(), model).map_err(|e| (2, format!("model: {e}")))?;
    let mut handle =
        start(plan, model, None).map_err(|e| (1, format!("cannot start the run: {e}")))?;
    let mut out = Reported::default();
    while let Some(event) = handle.events.blocking_recv() {
        match event {
            RunEvent::GenomeAdmitted { genome, .. } if genome.is_by_person() => {
                out.person = Some(genome)
            }
            RunEvent::Steered(s) => out.steering = Some(s),
            RunEvent::Log {
                level: LogLevel::Error,
                message,
            } => out.errors.push(message),
            RunEvent::Log {
                level: LogLevel::Warn,
                message,
            } => eprintln!("warning: {message}"),
            RunEvent::Finished(_) => break,
            _ => {}
        }
    }
    handle.join();
    Ok(out)
}

/// `galapagos inject RUN --parent N FILE|DIR`: exit 0 when the program was
/// admitted valid, 1 when it was admitted invalid (it is on record, with
/// its error) or the run failed, 2 when it was refused (nothing recorded).
pub fn inject(args: &InjectArgs) -> i32 {
    let registry = Registry::builtin();
    // Check what can be checked before the folder is taken.
    let parent = match parent_of(&args.run_dir, args.parent) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let plan = match RunPlan::steer(&args.run_dir, Vec::new(), &registry) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // The person's program is evaluated with the run's evaluator.
    let plan = match args.consent.apply(plan) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let program = match read_program(&args.program, &parent.content, &plan).and_then(|p| {
        check_person_program(
            &plan.task().edit_rules(),
            &parent.content,
            &p,
            args.outside_markers,
        )
        .map(|_| p)
    }) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let plan = plan.with_changes(vec![RunCommand::Inject {
        parent: args.parent,
        program,
        outside_markers: args.outside_markers,
    }]);
    let reported = match follow(plan, &args.model) {
        Ok(r) => r,
        Err((code, e)) => {
            eprintln!("error: {e}");
            return code;
        }
    };
    for e in &reported.errors {
        eprintln!("error: {e}");
    }
    let Some(g) = reported.person else {
        return 2;
    };
    if let Some(rule) = &g.rule_override {
        println!(
            "genome #{}: {rule}, kept by --outside-markers (recorded on the genome)",
            g.id
        );
    }
    match g.fitness() {
        Some(f) => {
            println!(
                "genome #{} (written by a person, child of #{}): {} {f:.6}",
                g.id,
                args.parent,
                g.fitness_basis()
            );
            println!(
                "recorded in {}; `galapagos resume` continues with it",
                args.run_dir.display()
            );
            0
        }
        None => {
            println!(
                "genome #{} (written by a person, child of #{}): invalid: {}",
                g.id,
                args.parent,
                g.error
                    .as_deref()
                    .unwrap_or("the evaluator did not score it")
            );
            1
        }
    }
}

/// `galapagos steer RUN [--notes TEXT | --notes-file FILE | --clear-notes] [--pin N] [--unpin N]`.
pub fn steer(args: &SteerArgs) -> i32 {
    let notes = match (&args.notes, &args.notes_file, args.clear_notes) {
        (Some(text), _, _) => Some(text.clone()),
        (None, Some(path), _) => match crate::engine::foreign::read_named_text(
            path,
            crate::engine::foreign::Limit::NOTES,
        ) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        },
        (None, None, true) => Some(String::new()),
        (None, None, false) => None,
    };
    let target = match crate::engine::service::Target::of_path(&args.run_dir) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let live = match &target {
        crate::engine::service::Target::Ssh(_) => true,
        crate::engine::service::Target::Local(dir) => {
            crate::engine::service::local::status(dir).is_some()
        }
    };
    if live {
        let changes = super::steer_live::Changes {
            pin: &args.pin,
            unpin: &args.unpin,
            pause: args.pause,
            resume: args.resume,
            stop: args.stop,
            settings: args.settings.as_deref(),
            remote: &args.remote,
        };
        return super::steer_live::steer(&target, &changes, notes);
    }
    if args.pause || args.resume || args.stop || args.settings.is_some() {
        eprintln!(
            "error: {}: the run is not running (--pause, --resume, --stop and --settings steer a live run; \
             `galapagos resume` continues a stopped one)",
            args.run_dir.display()
        );
        return 2;
    }
    let mut changes: Vec<RunCommand> = notes.into_iter().map(RunCommand::SetNotes).collect();
    changes.extend(args.unpin.iter().map(|&id| RunCommand::Unpin(id)));
    changes.extend(args.pin.iter().map(|&id| RunCommand::Pin(id)));
    if changes.is_empty() {
        let read = Archive::open(&args.run_dir).and_then(|a| a.checkpoint());
        return match read {
            Ok(ck) => {
                super::report::print_steering(&ck.map(|c| c.steering).unwrap_or_default());
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        };
    }
    let plan = match RunPlan::steer(&args.run_dir, changes, &Registry::builtin()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // The run's blocks are built, its evaluator started.
    let plan = match args.consent.apply(plan) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let reported = match follow(plan, &args.model) {
        Ok(r) => r,
        Err((code, e)) => {
            eprintln!("error: {e}");
            return code;
        }
    };
    for e in &reported.errors {
        eprintln!("error: {e}");
    }
    if let Some(s) = &reported.steering {
        super::report::print_steering(s);
    }
    if reported.errors.is_empty() { 0 } else { 2 }
}
