//! The run service: a run that is running answers on a Unix socket in its
//! folder, and a finished run's folder answers the same questions when
//! `galapagos serve --stdio PATH` reads it; a client on a laptop reaches
//! either through the user's own `ssh`, which runs that command on the
//! server. Nothing listens on a network address.
//!
//! # Pieces
//!
//! - [`protocol`]: the messages (serde types), one JSON object per line, and
//!   the bounded line reader.
//! - [`host`]: a live run's service, on a thread of its own beside the run
//!   ([`host::serve`] wraps a [`crate::engine::run_thread::RunHandle`]);
//!   [`live`]: what it keeps of the run (the ring, the state, commands).
//! - [`local`]: the socket, `RUN/service/run.sock` (the folder 0700, the
//!   socket 0600; peers of another user refused).
//! - `session`: one connection, live or from a folder; `record`: what is
//!   read from a run folder.
//! - [`stdio`]: `galapagos serve --stdio PATH`.
//! - [`target`]: `ssh://[user@]host[:port]/path` and the ssh command line.
//! - [`client`]: [`client::Client`] (one connection) and [`client::Follow`]
//!   (a subscription that reconnects and resumes).
//!
//! # The conversation
//!
//! The client's first line is `Hello { version, read_only }`; the server
//! answers `Welcome` (what it serves, whether the run is live, whether the
//! connection is a watcher's) or an error naming both versions. Then each
//! request `{"id": N, "request": …}` is answered by a `Reply` or an
//! `Error` with the same id, in any order: `Status`, `Card`, `Summary`,
//! `Genome` (one genome's bodies: program, files, prompt, reply, diff,
//! artifacts), `Program` (a genome's files and the initial program's, for
//! `apply`), `Export` (every genome as JSON lines, in chunks), `Runs` (the
//! runs under a folder), `Command` and `Subscribe`.
//!
//! # Events without a gap or a duplicate
//!
//! A live run numbers its events (`seq`, per run process: its `instance`)
//! and keeps the newest in a bounded ring ([`live::RING_EVENTS`],
//! [`live::RING_BYTES`]) with the state they built. `Subscribe { after }`
//! with a cursor (`instance`, the next `seq`, the genomes held) the ring
//! still holds replays from there; anything else gets a snapshot: `Reset`,
//! `Snapshot` (the run's facts and state), `History` chunks (every genome's
//! head, read from the record in one SQLite statement, so from one
//! snapshot of it), then `Synced` with the cursor to go on from. The
//! snapshot's point in the stream is taken before the record is read: an
//! event numbered below it is on disk (the loop sends a genome's event
//! once its genome is), and a genome read from disk whose event comes
//! later is left out of the stream by its id. So a client that reconnects
//! holds every genome once. A client that falls behind the ring is sent a
//! snapshot again; the run never waits for a client. A run that ends says
//! `Ended`; its folder then answers with its record.
//!
//! # Commands and watchers
//!
//! `Command` (pause, resume, stop, notes, pin, unpin, inject a person's
//! program, new settings while paused) becomes the
//! [`crate::engine::events::RunCommand`] the studio sends, so the loop
//! checks, logs and records it as it does the studio's; new settings are
//! checked with this build's components and fitted to the run's task as
//! the studio fits them. A connection that said `read_only` (or was
//! served with `--read-only`) is a watcher's: its commands are refused.
//!
//! # Secrets
//!
//! The events a run reports and its record are redacted by the run's
//! redactor already; the service also passes everything it sends through
//! a redactor of its own process's secrets (the run's model keys, and
//! `serve --stdio`'s environment), and never sends the run's output log.
//! Genome bodies travel only when asked for, one genome at a time.

pub mod client;
pub mod host;
pub mod live;
pub mod local;
pub mod protocol;
mod record;
mod session;
pub mod stdio;
pub mod target;

pub use client::{Client, ClientError, ConnectOptions, Follow, Update};
pub use host::{ServeContext, serve};
pub use target::{SshOptions, Target};
