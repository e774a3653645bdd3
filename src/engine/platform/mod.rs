//! The one place the crate is tied to a platform. Running code it does not
//! trust on this machine (candidates, a task's evaluator, a coding agent)
//! needs Linux: bubblewrap's namespaces, process groups, `/proc`, pidfds,
//! Unix sockets that pass file descriptors. The rest of the crate
//! (composing and checking cards, the hub, reading and comparing runs,
//! leaderboards whose evaluations run on a cluster, the studio) is not tied
//! to one, so it builds for every desktop platform, and CI type-checks and
//! lints it for Windows (`x86_64-pc-windows-gnu`).
//!
//! Every call the engine makes into Linux goes through this module:
//! `linux.rs` on Linux, the refusing fallback (`elsewhere.rs`) on any
//! other system. Nowhere else in `src/` is there a `cfg` on the target, but
//! in three unit-test modules that make Linux wait statuses, links and a FIFO.
//!
//! - **Refused elsewhere**: local evaluation and coding agents
//!   (`runs_here`, asked when a run is planned and by each block's build,
//!   and by the sandbox's `find_bwrap`), so a run stops before its folder is
//!   made with [`refusal`], which names what to do instead (a remote server,
//!   a cluster); the relay's and the run service's Unix sockets fail to bind
//!   or connect with a message naming the platform.
//!   The fallback's process, pipe and socket types cannot be made
//!   (uninhabited), so the code that uses them type-checks everywhere and
//!   cannot run where it would not work.
//! - **The same everywhere, with the platform's means**: file permissions
//!   ([`set_mode`]: Windows has only the read-only attribute), opening a
//!   file without blocking on a FIFO, a process group of its own for a child
//!   ([`own_group`]), the signal a process ended by (none on Windows).
//!
//! The studio's and the command line's refusals come from here, so they say
//! the same thing.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(not(target_os = "linux"))]
mod elsewhere;
#[cfg(not(target_os = "linux"))]
pub use elsewhere::*;

/// Why candidates and agents do not run on this machine when it is not
/// Linux, and what to do instead.
pub fn refusal() -> String {
    format!(
        "running candidates or a coding agent on this machine needs Linux (bubblewrap's sandbox, \
         process groups, /proc), and this is {}: start the run on a Linux server (`ssh HOST \
         galapagos run CARD --detach`) and follow it from here (`galapagos attach \
         ssh://HOST/RUN_FOLDER`, or the studio's Connect to a run), or run it on a cluster's Linux \
         head node with the `slurm` evaluator. `sandbox: none` does not help here: the unsandboxed \
         runners use the same Linux process plumbing. Composing and checking cards, the hub, and \
         reading and comparing runs work on this machine",
        std::env::consts::OS
    )
}

/// The error of a Linux-only facility asked for elsewhere: `what` names it.
#[cfg(not(target_os = "linux"))]
pub(crate) fn unavailable(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} needs Linux, and this is {}", std::env::consts::OS),
    )
}
