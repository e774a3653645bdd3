//! The `galapagos` binary: the studio with no arguments, the CLI otherwise.

use clap::Parser as _;
use galapagos::cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Validate { cards }) => galapagos::cli::validate(&cards),
        _ => {
            eprintln!("error: this build has no model or studio yet");
            2
        }
    };
    std::process::exit(code);
}
