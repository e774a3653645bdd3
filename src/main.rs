//! The `galapagos` binary: the studio with no arguments, the CLI otherwise.

use clap::Parser as _;
use galapagos::cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Run(args)) => {
            galapagos::cli::run(&args, galapagos::engine::model::default_model())
        }
        Some(Command::Validate { cards }) => galapagos::cli::validate(&cards),
        Some(Command::Studio { .. }) | None => {
            eprintln!(
                "error: the studio is not part of this build yet; use `galapagos run` or `galapagos validate`"
            );
            2
        }
    };
    std::process::exit(code);
}
