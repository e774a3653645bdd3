//! Any system but Linux: candidates and agents are refused ([`runs_here`]),
//! the Unix sockets cannot be bound or reached, and the process, pipe and
//! socket types cannot be made ([`Never`] inside each), so the code that
//! uses them type-checks and cannot run. Files keep what the platform can
//! say: the read-only attribute for permissions, no owner ids.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::unavailable;

/// A value that cannot exist: the fallback's process, pipe and socket
/// types hold one.
#[derive(Debug)]
pub enum Never {}

/// A file descriptor received over a Unix socket (there are none here).
#[derive(Debug)]
pub struct OwnedFd(Never);

/// A pipe's read end read as it comes (none here).
#[derive(Debug)]
pub struct Pipe(Never);

impl Pipe {
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self.0 {}
    }

    pub(crate) fn try_read(&self, _buf: &mut [u8]) -> io::Result<usize> {
        match self.0 {}
    }
}

/// A listening Unix socket: binding one fails here.
#[derive(Debug)]
pub struct UnixListener(Never);

impl UnixListener {
    pub(crate) fn bind(_path: impl AsRef<Path>) -> io::Result<Self> {
        Err(unavailable("a Unix socket"))
    }

    pub(crate) fn from_std(listener: StdUnixListener) -> io::Result<Self> {
        match listener.0 {}
    }

    pub(crate) async fn accept(&self) -> io::Result<(UnixStream, ())> {
        match self.0 {}
    }
}

/// A connected Unix socket: connecting fails here.
#[derive(Debug)]
pub struct UnixStream(Never);

impl UnixStream {
    pub(crate) async fn connect(_path: impl AsRef<Path>) -> io::Result<Self> {
        Err(unavailable("a Unix socket"))
    }

    pub(crate) fn from_std(stream: StdUnixStream) -> io::Result<Self> {
        match stream.0 {}
    }

    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self.0 {}
    }

    pub(crate) fn into_split(
        self,
    ) -> (
        tokio::io::ReadHalf<UnixStream>,
        tokio::io::WriteHalf<UnixStream>,
    ) {
        match self.0 {}
    }
}

impl tokio::io::AsyncRead for UnixStream {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.0 {}
    }
}

impl tokio::io::AsyncWrite for UnixStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.0 {}
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.0 {}
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.0 {}
    }
}

/// A blocking listening Unix socket: binding one fails here.
#[derive(Debug)]
pub struct StdUnixListener(Never);

impl StdUnixListener {
    pub(crate) fn bind(_path: impl AsRef<Path>) -> io::Result<Self> {
        Err(unavailable("a Unix socket"))
    }

    pub(crate) fn set_nonblocking(&self, _on: bool) -> io::Result<()> {
        match self.0 {}
    }
}

/// A blocking connected Unix socket: connecting fails here.
#[derive(Debug)]
pub struct StdUnixStream(Never);

impl StdUnixStream {
    pub(crate) fn connect(_path: impl AsRef<Path>) -> io::Result<Self> {
        Err(unavailable("a Unix socket"))
    }

    pub(crate) fn set_nonblocking(&self, _on: bool) -> io::Result<()> {
        match self.0 {}
    }

    pub(crate) fn set_read_timeout(&self, _limit: Option<Duration>) -> io::Result<()> {
        match self.0 {}
    }

    pub(crate) fn set_write_timeout(&self, _limit: Option<Duration>) -> io::Result<()> {
        match self.0 {}
    }

    pub(crate) fn try_clone(&self) -> io::Result<Self> {
        match self.0 {}
    }
}

impl io::Read for StdUnixStream {
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        match self.0 {}
    }
}

impl io::Write for StdUnixStream {
    fn write(&mut self, _buf: &[u8]) -> io::Result<usize> {
        match self.0 {}
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.0 {}
    }
}

/// A signal to stop on (there is no SIGTERM here).
#[derive(Debug)]
pub struct Terminate(Never);

impl Terminate {
    pub(crate) async fn recv(&mut self) -> Option<()> {
        match self.0 {}
    }
}

/// A process watched for its exit (none is here).
#[derive(Debug)]
pub struct ExitWatch(Never);

impl ExitWatch {
    pub(crate) fn open(_pid: u32) -> Option<Self> {
        None
    }

    pub(crate) fn exited(&self) -> bool {
        match self.0 {}
    }

    pub(crate) fn any_exited(watches: &[&Self], _limit: Duration) -> bool {
        watches.iter().any(|w| w.exited())
    }
}

// ---- what runs here

/// Candidates, evaluators and agents do not run on this machine.
pub(crate) fn runs_here() -> Result<(), String> {
    Err(super::refusal())
}

// ---- processes

/// A process ends by its exit code here, not by a signal.
pub(crate) fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// No process group is started here ([`own_group`] makes none), so none is
/// killed.
pub(crate) fn kill_group(_leader: u32) {}

/// On Windows, a new console process group (`CREATE_NEW_PROCESS_GROUP`);
/// elsewhere the child stays in ours.
pub(crate) fn own_group(cmd: &mut tokio::process::Command) {
    #[cfg(windows)]
    {
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        cmd.creation_flags(CREATE_NEW_PROCESS_GROUP);
    }
    #[cfg(not(windows))]
    let _ = cmd;
}

/// There are no Unix user ids here.
pub(crate) fn user_ids() -> Result<(u32, u32), String> {
    Err(super::refusal())
}

/// There is no root here (an administrator's processes run no candidates:
/// [`runs_here`]).
pub(crate) fn running_as_root() -> bool {
    false
}

/// Nothing to do here: there is no `/proc` to read the model key from.
pub(crate) fn not_dumpable() {}

pub(crate) fn die_with_parent() -> io::Result<()> {
    Err(unavailable("the coding agent's sandbox bridge"))
}

/// A detached run here keeps the session it was started in.
pub(crate) fn leave_session() -> io::Result<()> {
    Err(unavailable("a session of its own (setsid)"))
}

/// There is no SIGTERM here (Ctrl+C still stops a run).
pub(crate) fn on_terminate() -> Option<Terminate> {
    None
}

pub(crate) fn wait_exited_unreaped(_pid: u32) -> Option<()> {
    None
}

// ---- pipes

pub(crate) fn output_pipes(_child: &mut tokio::process::Child) -> Option<(Pipe, Pipe)> {
    None
}

pub(crate) fn reader_pipe(_reader: std::io::PipeReader) -> io::Result<Pipe> {
    Err(unavailable("reading a pipe as it comes"))
}

pub(crate) fn fd_pipe(fd: OwnedFd) -> io::Result<Pipe> {
    match fd.0 {}
}

pub(crate) fn stdin_pipe() -> Option<Pipe> {
    None
}

pub(crate) fn read_now(pipe: &Pipe, _buf: &mut [u8]) -> io::Result<usize> {
    match pipe.0 {}
}

// ---- sockets

pub(crate) fn recv_with_fds(
    stream: &UnixStream,
    _byte: &mut [u8; 1],
    _fds: &mut Vec<OwnedFd>,
) -> io::Result<usize> {
    match stream.0 {}
}

pub(crate) fn peer_pid(stream: &UnixStream) -> Option<u32> {
    match stream.0 {}
}

pub(crate) fn peer_is_me(stream: &UnixStream) -> bool {
    match stream.0 {}
}

/// The path itself: there is no `/proc/self/fd` here (a socket is never
/// bound here anyway).
pub(crate) fn path_in_opened(_folder: &std::fs::File, name: &str) -> PathBuf {
    PathBuf::from(name)
}

// ---- files

/// Windows has the read-only attribute only: a mode without write bits sets
/// it, any other clears it.
pub(crate) fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_readonly(mode & 0o222 == 0);
    std::fs::set_permissions(path, permissions)
}

/// The permission bits the read-only attribute stands for.
pub(crate) fn mode_of(meta: &std::fs::Metadata) -> u32 {
    if meta.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

pub(crate) fn owner_of(_meta: &std::fs::Metadata) -> (u32, u32) {
    (u32::MAX, u32::MAX)
}

/// A file in this user's own folders is theirs (there are no owner ids to
/// compare here).
pub(crate) fn owned_by_me(_meta: &std::fs::Metadata) -> bool {
    true
}

pub(crate) fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let (target, link) = (target.as_ref(), link.as_ref());
    #[cfg(windows)]
    {
        if target.is_dir() {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        }
    }
    #[cfg(not(windows))]
    {
        let _ = (target, link);
        Err(unavailable("a symbolic link"))
    }
}

pub(crate) fn lchown(_path: &Path, _uid: u32, _gid: u32) -> io::Result<()> {
    Err(unavailable("handing a file to another user"))
}

/// A file under the user's profile is theirs only by the folder's access
/// list; nothing to add here.
pub(crate) fn owner_only(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    options
}

/// As [`owner_only`], for a folder.
pub(crate) fn owner_only_dir(builder: &mut std::fs::DirBuilder) -> &mut std::fs::DirBuilder {
    builder
}

/// An open here does not block on a named pipe nor take a terminal.
pub(crate) fn without_blocking(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    options
}

/// As [`without_blocking`], for cap-std.
pub(crate) fn cap_without_blocking(
    options: &mut cap_std::fs::OpenOptions,
) -> &mut cap_std::fs::OpenOptions {
    options
}

pub(crate) fn open_no_follow(_path: &Path) -> io::Result<Option<std::fs::File>> {
    Err(unavailable("opening a candidate's result file"))
}

pub(crate) fn special_kind(_ft: &std::fs::FileType) -> Option<&'static str> {
    None
}

pub(crate) fn cap_special_kind(_ft: &cap_std::fs::FileType) -> Option<&'static str> {
    None
}

pub(crate) fn is_socket(_ft: &std::fs::FileType) -> bool {
    false
}
