//! The `galapagos` binary: the studio with no arguments, the CLI otherwise.

use clap::Parser as _;
use galapagos::cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Run(args)) => galapagos::cli::run(&args),
        Some(Command::Validate { cards, hubs }) => galapagos::cli::validate(&cards, &hubs),
        Some(Command::Inject(args)) => galapagos::cli::steer::inject(&args),
        Some(Command::Steer(args)) => galapagos::cli::steer::steer(&args),
        Some(Command::Resume {
            run_dir,
            iterations,
            detach,
            detached_into,
            quiet,
            verbose,
            model,
            consent,
        }) => {
            let detach = match (detach, detached_into) {
                (_, Some(_)) => Some(false),
                (true, None) => Some(true),
                (false, None) => None,
            };
            galapagos::cli::resume(
                &run_dir, iterations, detach, quiet, verbose, &model, &consent,
            )
        }
        Some(Command::Fork(args)) => galapagos::cli::fork::fork(&args),
        Some(Command::Export { card, out, results }) => {
            galapagos::cli::export(&card, &out, results.as_deref())
        }
        Some(Command::Import {
            bundle,
            out,
            force,
            hubs,
        }) => galapagos::cli::import(&bundle, &out, force, &hubs),
        Some(Command::ExportRun {
            run_dir,
            git: Some(dir),
            ..
        }) => galapagos::cli::export_run_git(&run_dir, &dir),
        Some(Command::ExportRun {
            run_dir,
            out,
            remote,
            ..
        }) => galapagos::cli::takeout::export_run_at(&run_dir, out.as_deref(), &remote),
        Some(Command::Apply {
            run_dir,
            genome,
            to,
            force,
            remote,
        }) => galapagos::cli::takeout::apply_at(&run_dir, genome, &to, force, &remote),
        Some(Command::Runs { folder, remote }) => {
            galapagos::cli::remote::runs(folder.as_deref(), &remote)
        }
        Some(Command::Attach {
            target,
            quiet,
            verbose,
            read_only,
            remote,
        }) => galapagos::cli::remote::attach(&target, quiet, verbose, read_only, &remote),
        Some(Command::Serve {
            path, read_only, ..
        }) => galapagos::cli::remote::serve(&path, read_only),
        Some(Command::Leaderboard(args)) => galapagos::cli::leaderboard::leaderboard(&args),
        Some(Command::Hub { command }) => galapagos::cli::hub::hub(&command),
        Some(Command::Models { command }) => galapagos::cli::models::models(&command),
        Some(Command::Mcp) => galapagos::cli::mcp::serve(),
        Some(Command::Studio { card, task }) => studio(card, task),
        Some(Command::AgentBridge {
            socket,
            stdin,
            hold,
            command,
        }) => galapagos::engine::proposer::agent_command::bridge::run(
            socket.as_deref(),
            stdin.as_deref(),
            hold,
            &command,
        ),
        None => studio(None, None),
    };
    std::process::exit(code);
}

#[cfg(feature = "studio")]
fn studio(card: Option<std::path::PathBuf>, task: Option<std::path::PathBuf>) -> i32 {
    match galapagos::studio::run_studio(galapagos::studio::StudioLaunch { card, task }) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: cannot open the studio: {e:#}");
            1
        }
    }
}

/// Built without the `studio` feature: say so, and how to get it.
#[cfg(not(feature = "studio"))]
fn studio(_card: Option<std::path::PathBuf>, _task: Option<std::path::PathBuf>) -> i32 {
    eprintln!(
        "error: this build of galapagos has no studio (it was built without the `studio` feature).\n\
         The command line works: `galapagos --help`. For the studio, build with default features: \
         `cargo build --release`."
    );
    2
}
