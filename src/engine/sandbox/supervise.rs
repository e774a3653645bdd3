//! Seeing one sandboxed process tree to its end: the command evaluator's
//! candidates and the coding-agent proposer's agents are each a bubblewrap
//! started in a process group of its own, whose output is read as it comes
//! (head and tail kept, [`Capture`]) while the run waits for it to exit or
//! for its time limit.
//!
//! The rules both follow:
//! - At the time limit the whole group is killed (grandchildren included).
//! - Once the sandbox has exited, the group is killed too, which closes the
//!   pipes a leftover still held; a process that left the group gets
//!   [`OUTPUT_GRACE`] more to close them, no longer.
//! - The group is killed when the supervision is dropped unfinished (a
//!   stopped run drops the evaluation or proposal): [`GroupGuard`].
//! - The CPU time the tree used is read from the kernel's counts for the
//!   exited sandbox (its waited-for children), never from anything the
//!   candidate can write.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::capture::Capture;
use super::process::kill_groups;
use crate::engine::platform::{self, Pipe};

/// How long the output of a sandbox that has exited is still read (a
/// process that left its group may hold the pipes open).
pub(crate) const OUTPUT_GRACE: Duration = Duration::from_secs(1);

/// The kernel's clock ticks per second for `/proc/<pid>/stat` times.
const USER_HZ: f64 = 100.0;

/// The process group of a running sandbox, killed when dropped.
pub(crate) struct GroupGuard(Option<u32>);

impl GroupGuard {
    /// Guards the group whose leader is `pid` (a child started with
    /// `process_group(0)`).
    pub(crate) fn new(pid: Option<u32>) -> GroupGuard {
        GroupGuard(pid)
    }

    fn kill(&self) {
        if let Some(pid) = self.0 {
            kill_groups(&[i64::from(pid)]);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            kill_groups(&[i64::from(pid)]);
        }
    }
}

/// What the supervisor reads besides the exit: the child's stdout and
/// stderr, and optionally a pipe the sandbox sends results on.
pub(crate) struct Streams<'a> {
    pub out: Pipe,
    pub err: Pipe,
    /// Output kept per stream (bytes, head and tail).
    pub kept: usize,
    /// A results pipe and the most bytes kept from it.
    pub sent: Option<(&'a Pipe, usize)>,
}

/// How a supervised sandbox ended.
pub(crate) struct Ended {
    /// Its wait status (None when it was still running as the output grace
    /// ran out, which cannot happen before it exited).
    pub status: Option<std::io::Result<ExitStatus>>,
    /// CPU seconds the tree used, as the kernel counted them.
    pub cpu_secs: Option<f64>,
    /// It ran over its time limit and was killed.
    pub timed_out: bool,
    /// When it exited.
    pub exited_at: Option<Instant>,
    pub stdout: Capture,
    pub stderr: Capture,
    /// What came on the results pipe.
    pub sent: Vec<u8>,
}

/// Waits for `child` (the sandbox, leader of the group `guard` holds) to
/// exit, reading its streams, killing its group at `timeout`; returns once
/// it has exited and its streams are closed (or the grace ran out).
pub(crate) async fn supervise(
    child: &mut tokio::process::Child,
    mut guard: GroupGuard,
    streams: Streams<'_>,
    timeout: Duration,
) -> Ended {
    let Streams {
        out,
        err,
        kept,
        sent,
    } = streams;
    let (mut cap_out, mut cap_err) = (Capture::new(kept), Capture::new(kept));
    let (mut out_open, mut err_open) = (true, true);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut status = None;
    let mut cpu_secs = None;
    let mut timed_out = false;
    let mut exited_at = None;
    let mut grace: Option<tokio::time::Instant> = None;
    let mut sent_bytes: Vec<u8> = Vec::new();
    let mut sent_open = sent.is_some();
    while status.is_none() || out_open || err_open || sent_open {
        tokio::select! {
            r = async { sent?.0.readable().await.ok() }, if sent_open => {
                if r.is_none() || !read_sent(sent, &mut sent_bytes) {
                    sent_open = false;
                }
            }
            (s, cpu) = wait_measured(child), if status.is_none() => {
                exited_at = Some(Instant::now());
                status = Some(s);
                cpu_secs = cpu;
                guard.kill();
                grace = Some(tokio::time::Instant::now() + OUTPUT_GRACE);
            }
            () = tokio::time::sleep_until(grace.unwrap_or(deadline)), if grace.is_some() => break,
            r = out.readable(), if out_open => {
                if r.is_err() || !cap_out.pump(&out) { out_open = false; }
            }
            r = err.readable(), if err_open => {
                if r.is_err() || !cap_err.pump(&err) { err_open = false; }
            }
            () = tokio::time::sleep_until(deadline), if !timed_out && status.is_none() => {
                timed_out = true;
                guard.kill();
                let _ = child.start_kill();
            }
        }
    }
    // Exited and reaped: the group is gone or dies with the grace's kill.
    guard.0 = None;
    cap_out.drain(&out);
    cap_err.drain(&err);
    while sent_open && read_sent(sent, &mut sent_bytes) {}
    Ended {
        status,
        cpu_secs,
        timed_out,
        exited_at,
        stdout: cap_out,
        stderr: cap_err,
        sent: sent_bytes,
    }
}

/// Read what is waiting on the results pipe into `into` (up to its cap);
/// false at its end.
fn read_sent(sent: Option<(&Pipe, usize)>, into: &mut Vec<u8>) -> bool {
    let Some((pipe, cap)) = sent else {
        return false;
    };
    let mut buf = [0u8; 65536];
    loop {
        match pipe.try_read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                if into.len() < cap {
                    into.extend_from_slice(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

/// Wait for the sandbox `child` (bubblewrap) to exit and reap it, with the
/// CPU time (user + system, seconds) its container used as the kernel
/// counts it: read from `/proc/<pid>/stat` (its waited-for children's
/// times) after it exited and before it is reaped, so nothing the
/// candidate can write is read. None when it cannot be read.
async fn wait_measured(
    child: &mut tokio::process::Child,
) -> (std::io::Result<ExitStatus>, Option<f64>) {
    let cpu = match child.id() {
        Some(pid) => exited_children_cpu(pid).await,
        None => None,
    };
    (child.wait().await, cpu)
}

/// Once the process `pid` (a child of this one, not yet reaped) has
/// exited: the CPU time of the children it waited for.
async fn exited_children_cpu(pid: u32) -> Option<f64> {
    // Waits for the exit without reaping: the process stays a zombie, its
    // /proc entry readable, until `child.wait()` reaps it.
    tokio::task::spawn_blocking(move || platform::wait_exited_unreaped(pid))
        .await
        .ok()??;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold anything):
    // state is field 3; cutime and cstime are fields 16 and 17.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    let (cutime, cstime) = (ticks(13)?, ticks(14)?);
    #[expect(clippy::cast_precision_loss, reason = "CPU ticks far below 2^52")]
    Some((cutime + cstime) as f64 / USER_HZ)
}
