//! Linux: every facility of [`super`], with rustix and the standard
//! library's Unix extensions.

use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use std::os::fd::OwnedFd;
pub use std::os::unix::net::{UnixListener as StdUnixListener, UnixStream as StdUnixStream};
pub use tokio::net::unix::pipe::Receiver as Pipe;
pub use tokio::net::{UnixListener, UnixStream};
/// The run's SIGTERM, for a front end that stops cleanly on it.
pub use tokio::signal::unix::Signal as Terminate;

// ---- what runs here

/// Candidates, evaluators and agents run on this machine.
pub(crate) fn runs_here() -> Result<(), String> {
    Ok(())
}

// ---- processes

/// The signal that ended a process, from its exit status.
pub(crate) fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    status.signal()
}

/// SIGKILL the process group led by `leader` (gone already: nothing).
pub(crate) fn kill_group(leader: u32) {
    if let Some(pid) = i32::try_from(leader)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Start `cmd`'s child in a process group of its own, which it leads.
pub(crate) fn own_group(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
}

/// This process's real user and group ids.
pub(crate) fn user_ids() -> Result<(u32, u32), String> {
    Ok((
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    ))
}

/// Whether this process runs as root (the effective user).
pub(crate) fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Keep this process out of core dumps and other users' `/proc` reads (its
/// environment holds the model's key). Best effort.
pub(crate) fn not_dumpable() {
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
}

/// Ask the kernel for SIGKILL when this process's parent dies.
pub(crate) fn die_with_parent() -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(io::Error::from)
}

/// Leave the terminal's session (`setsid`).
pub(crate) fn leave_session() -> io::Result<()> {
    rustix::process::setsid()
        .map(|_| ())
        .map_err(io::Error::from)
}

/// The run's SIGTERM as a stream (None when it cannot be had).
pub(crate) fn on_terminate() -> Option<Terminate> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()
}

/// Block until the child `pid` has exited, without reaping it (its
/// `/proc` entry stays readable until it is waited for); None when it
/// cannot be waited for.
pub(crate) fn wait_exited_unreaped(pid: u32) -> Option<()> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let raw = Pid::from_raw(i32::try_from(pid).ok()?)?;
    loop {
        match waitid(
            WaitId::Pid(raw),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            other => return other.ok().map(|_| ()),
        }
    }
}

/// A process watched for its exit (a pidfd, readable once it has exited).
pub(crate) struct ExitWatch(OwnedFd);

impl ExitWatch {
    /// Watch `pid` (None when it is gone already, reaped).
    pub(crate) fn open(pid: u32) -> Option<Self> {
        use rustix::process::{Pid, PidfdFlags, pidfd_open};
        let id = i32::try_from(pid).ok().and_then(Pid::from_raw)?;
        pidfd_open(id, PidfdFlags::NONBLOCK).ok().map(ExitWatch)
    }

    /// Has it exited?
    pub(crate) fn exited(&self) -> bool {
        Self::any_exited(std::slice::from_ref(&self), Duration::ZERO)
    }

    /// Block up to `limit` until one of `watches` has exited; whether one
    /// has.
    pub(crate) fn any_exited(watches: &[&Self], limit: Duration) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut fds: Vec<PollFd<'_>> = watches
            .iter()
            .map(|w| PollFd::new(&w.0, PollFlags::IN))
            .collect();
        let wait = Timespec::try_from(limit).unwrap_or_default();
        matches!(poll(&mut fds, Some(&wait)), Ok(n) if n > 0)
    }
}

// ---- pipes

/// The read ends of a child's stdout and stderr pipes, for reading as
/// they come (None when it has none, or they cannot be read so).
pub(crate) fn output_pipes(child: &mut tokio::process::Child) -> Option<(Pipe, Pipe)> {
    let out = child.stdout.take()?.into_owned_fd().ok()?;
    let err = child.stderr.take()?.into_owned_fd().ok()?;
    Some((
        Pipe::from_owned_fd(out).ok()?,
        Pipe::from_owned_fd(err).ok()?,
    ))
}

/// A pipe's read end for reading as it comes.
pub(crate) fn reader_pipe(reader: std::io::PipeReader) -> io::Result<Pipe> {
    Pipe::from_owned_fd(reader.into())
}

/// A pipe's read end received as a file descriptor.
pub(crate) fn fd_pipe(fd: OwnedFd) -> io::Result<Pipe> {
    Pipe::from_owned_fd(fd)
}

/// This process's stdin when it is a pipe.
pub(crate) fn stdin_pipe() -> Option<Pipe> {
    use std::os::fd::AsFd as _;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    Pipe::from_owned_fd(fd).ok()
}

/// Read what is in `pipe` now, directly (not through tokio's cached
/// readiness).
pub(crate) fn read_now(pipe: &Pipe, buf: &mut [u8]) -> io::Result<usize> {
    rustix::io::read(pipe, buf).map_err(io::Error::from)
}

// ---- sockets

/// Receive one byte on `stream` with the file descriptors sent with it
/// (`SCM_RIGHTS`, at most two, close-on-exec), appended to `fds`.
pub(crate) fn recv_with_fds(
    stream: &UnixStream,
    byte: &mut [u8; 1],
    fds: &mut Vec<OwnedFd>,
) -> io::Result<usize> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = stream.try_io(tokio::io::Interest::READABLE, || {
        rustix::net::recvmsg(
            stream,
            &mut [std::io::IoSliceMut::new(byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map(|m| m.bytes)
        .map_err(io::Error::from)
    });
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    got
}

/// The pid of the process at the other end of `stream`.
pub(crate) fn peer_pid(stream: &UnixStream) -> Option<u32> {
    stream
        .peer_cred()
        .ok()
        .and_then(|c| c.pid())
        .and_then(|p| u32::try_from(p).ok())
}

/// Is the process at the other end of `stream` this user's?
pub(crate) fn peer_is_me(stream: &UnixStream) -> bool {
    stream
        .peer_cred()
        .is_ok_and(|c| c.uid() == rustix::process::geteuid().as_raw())
}

/// A path to `name` in the opened folder `folder` (through
/// `/proc/self/fd`): short whatever the folder's own path.
pub(crate) fn path_in_opened(folder: &std::fs::File, name: &str) -> PathBuf {
    let fd = std::os::fd::AsRawFd::as_raw_fd(folder);
    PathBuf::from(format!("/proc/self/fd/{fd}/{name}"))
}

// ---- files

/// Set `path`'s permission bits to `mode`.
pub(crate) fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A file's permission bits.
pub(crate) fn mode_of(meta: &std::fs::Metadata) -> u32 {
    meta.mode()
}

/// A file's owner and group.
pub(crate) fn owner_of(meta: &std::fs::Metadata) -> (u32, u32) {
    (meta.uid(), meta.gid())
}

/// Is the file this process's user's (the effective user)?
pub(crate) fn owned_by_me(meta: &std::fs::Metadata) -> bool {
    meta.uid() == rustix::process::geteuid().as_raw()
}

/// A symbolic link at `link` to `target`.
pub(crate) fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Give `path` (a link itself, not what it points to) to `uid`:`gid`.
pub(crate) fn lchown(path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
}

/// A file created by these options is its owner's only (0600).
pub(crate) fn owner_only(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    options.mode(0o600)
}

/// A folder created by this builder is its owner's only (0700).
pub(crate) fn owner_only_dir(builder: &mut std::fs::DirBuilder) -> &mut std::fs::DirBuilder {
    builder.mode(0o700)
}

/// The flags of every open for reading a file from elsewhere: a FIFO does
/// not block the open, a terminal does not become ours.
fn read_flags() -> i32 {
    (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32
}

/// [`read_flags`] on a standard open.
pub(crate) fn without_blocking(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    options.custom_flags(read_flags())
}

/// [`read_flags`] on a cap-std open.
pub(crate) fn cap_without_blocking(
    options: &mut cap_std::fs::OpenOptions,
) -> &mut cap_std::fs::OpenOptions {
    use cap_std::fs::OpenOptionsExt as _;
    options.custom_flags(read_flags())
}

/// Open `path` for reading without following a link there and without
/// blocking (a FIFO); `Ok(None)` when it is a link.
pub(crate) fn open_no_follow(path: &Path) -> io::Result<Option<std::fs::File>> {
    use rustix::fs::{Mode, OFlags};
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(std::fs::File::from(fd))),
        Err(rustix::io::Errno::LOOP) => Ok(None),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// What a file that is neither a file, a folder nor a link is, when the
/// platform says: a FIFO or a socket (None: a device, or not known).
pub(crate) fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// [`special_kind`] of a cap-std file type.
pub(crate) fn cap_special_kind(ft: &cap_std::fs::FileType) -> Option<&'static str> {
    use cap_std::fs::FileTypeExt as _;
    if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Is it a Unix socket?
pub(crate) fn is_socket(ft: &std::fs::FileType) -> bool {
    ft.is_socket()
}
