//! `galapagos fork RUN --genome N [--card C]`: a new run whose initial
//! program is a genome of a recorded run (the engine's [`RunPlan::fork`], as
//! the studio's "Fork run from here").

use std::path::{Path, PathBuf};

use super::{ConsentArgs, HubArgs, ModelArgs, Output, RunFlags, launch, load_card};
use crate::engine::launch::{RunPlan, recorded_card};
use crate::engine::registry::Registry;

/// `galapagos fork`.
#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    /// The run folder to fork from (holds archive.sqlite).
    pub run_dir: PathBuf,
    /// The genome whose program becomes the new run's initial program.
    #[arg(long, value_name = "N")]
    pub genome: u64,
    /// The card to run (a file or a built-in card's name); default: the card the run ran with.
    #[arg(long, value_name = "C")]
    pub card: Option<PathBuf>,
    /// Override general.max_iterations (the new run's budget).
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Override the card's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override general.parallel (iterations in flight).
    #[arg(long)]
    pub parallel: Option<u32>,
    /// Folder for the new run's folder; default: the folder that holds RUN, so the fork sits
    /// beside the run it came from.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress bar; only the summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print one line per admitted genome.
    #[arg(long, short)]
    pub verbose: bool,
    /// Run in the background, in a session of its own (output to output.log in the new run
    /// folder): print the folder and return.
    #[arg(long)]
    pub detach: bool,
    /// (Internal) the detached run itself, recording into this folder.
    #[arg(long = "detached-into", hide = true, value_name = "DIR")]
    pub detached_into: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub hubs: HubArgs,
    #[command(flatten)]
    pub consent: ConsentArgs,
}

/// Run `galapagos fork`: returns the process exit code.
pub fn fork(args: &ForkArgs) -> i32 {
    if args.detached_into.is_some() {
        super::detach::leave_session();
    }
    if matches!(
        crate::engine::service::Target::of_path(&args.run_dir),
        Ok(crate::engine::service::Target::Ssh(_))
    ) {
        eprintln!(
            "error: {}: a fork runs where its run's task folder is: run `galapagos fork PATH --genome N --detach` \
             on the server (and follow it with `galapagos attach ssh://…`)",
            args.run_dir.display()
        );
        return 2;
    }
    let registry = Registry::builtin();
    let (card, label) = match &args.card {
        Some(path) => match load_card(path, &registry, &args.hubs) {
            Ok(c) => (c, path.display().to_string()),
            Err(code) => return code,
        },
        None => match recorded_card(&args.run_dir, &registry) {
            Ok(c) => (c, format!("{} (the run's card)", args.run_dir.display())),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        },
    };
    let flags = RunFlags {
        iterations: args.iterations,
        seed: args.seed,
        parallel: args.parallel,
    };
    let card = match flags.apply(card, &label) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let plan = match RunPlan::fork(&args.run_dir, args.genome, Some(card), &registry) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| runs_root_of(&args.run_dir));
    if args.detach && args.detached_into.is_none() {
        // The consent is checked before the folder is made; the detached
        // child is given the same flags and checks it again.
        return match args.consent.apply(plan) {
            Ok(plan) => super::detach::start(plan, &args.model, Some(&out)),
            Err(code) => code,
        };
    }
    let plan = match &args.detached_into {
        Some(dir) => match plan.in_folder(dir.clone()) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        },
        None => plan,
    };
    println!(
        "fork:        genome #{} of {}",
        args.genome,
        args.run_dir.display()
    );
    launch(
        plan,
        &args.consent,
        &args.model,
        Output {
            quiet: args.quiet,
            verbose: args.verbose,
        },
        args.detached_into.is_none().then_some(out.as_path()),
    )
}

/// The folder that holds a run folder (`.` for a bare name).
fn runs_root_of(run_dir: &Path) -> PathBuf {
    match run_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
