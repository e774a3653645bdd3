//! `galapagos mcp`: the Model Context Protocol over standard input and
//! output, so a coding agent (Claude Code, Codex, any MCP client) can
//! compose, run, watch and steer searches. A front end like the command
//! line and the studio: every tool calls what the command line calls, and a
//! run started here is an ordinary run (a detached `galapagos run`, in the
//! same runs folder; `galapagos runs`, `attach` and the studio see it).
//!
//! # Tools
//!
//! | tool | what the command line does the same with |
//! | --- | --- |
//! | `list_cards`, `list_tasks` | the built-in cards and tasks, and those in a folder |
//! | `validate_card` | `galapagos validate` (every error with line:col) |
//! | `start_run` | `galapagos run --detach` ([`super::detach::launch`]) |
//! | `run_status`, `list_runs`, `compare_runs` | `galapagos runs`, through the run service |
//! | `get_genome` | the run service's `Genome` request |
//! | `steer_run` | `galapagos steer` on a live run ([`super::steer_live`]) |
//! | `apply_genome` | `galapagos apply` (its checks; never `--force`) |
//!
//! Every `run` argument is a run folder here or `ssh://[user@]host[:port]/path`
//! on a server, as the run service's client reaches it. Cards and run
//! summaries are also resources (`galapagos://card/NAME`,
//! `galapagos://run/PATH`).
//!
//! # Rules
//!
//! - Bad input is a tool error (`isError`) that says what to fix; the
//!   server never exits or panics on a call.
//! - A budget below what the card needs to search at all is refused with
//!   the smallest that makes sense ([`budget`]), unless `insist: true`.
//! - Isolation is never lowered on an agent's say-so ([`isolation`]): a
//!   card that lowers the sandbox's isolation is refused, naming what it
//!   lowers; the person starts it themselves. No argument grants consent.
//!
//! The module imports `rmcp` (the protocol's official SDK); the engine
//! does not.

mod budget;
mod catalog;
mod isolation;
mod reply;
mod resources;
mod runs;
mod server;
mod start;
mod tools;

/// `galapagos mcp`: serve the tools on stdin/stdout until the client
/// closes them; the exit code.
pub fn serve() -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(server::serve_stdio()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: galapagos mcp: {e}");
            1
        }
    }
}
