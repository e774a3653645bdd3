//! Where a live run answers on this machine: the Unix socket
//! `service/run.sock` in its run folder, the `service` folder owner-only
//! (0700) and the socket too (0600). Nothing listens on a network address.
//!
//! A socket's path must fit in 108 bytes; a deeper run folder is reached
//! through the `/proc/self/fd/N/` link of the opened `service` folder, so
//! any run folder can be served and reached.
//!
//! Linux only ([`crate::engine::platform`]): elsewhere the run
//! serves no socket and `attach`, `steer` and `runs` say so.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::protocol::{Message, Reply, Request, RequestBody, RunRow, VERSION};
use crate::engine::platform::{self, StdUnixListener, StdUnixStream, UnixListener, UnixStream};

/// The folder of a run folder that holds its socket.
pub const SERVICE_DIR: &str = "service";
/// The socket's file name.
pub const SOCKET: &str = "run.sock";

/// The longest socket path bound or connected to as it is (the kernel's
/// limit is 108 bytes with the final NUL).
const MAX_SOCKET_PATH: usize = 100;

/// The socket of run folder `dir`.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SERVICE_DIR).join(SOCKET)
}

/// `f` given a path to `dir`'s socket short enough to bind or connect to:
/// the socket's own path, or one through the opened `service` folder.
fn with_short_path<T>(
    dir: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let path = socket_path(dir);
    if path.as_os_str().len() <= MAX_SOCKET_PATH {
        return f(&path);
    }
    let folder = std::fs::File::open(dir.join(SERVICE_DIR))?;
    let short = platform::path_in_opened(&folder, SOCKET);
    let out = f(&short);
    drop(folder);
    out
}

/// Make `dir`'s `service` folder (0700, ours) with no socket in it: a
/// socket left by a run that was killed is removed. Refused when the
/// folder is not a folder of this user's.
pub(crate) fn prepare(dir: &Path) -> std::io::Result<PathBuf> {
    let service = dir.join(SERVICE_DIR);
    match platform::owner_only_dir(&mut std::fs::DirBuilder::new()).create(&service) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&service)?;
    if !meta.is_dir() || !platform::owned_by_me(&meta) {
        return Err(std::io::Error::other(format!(
            "{}: not a folder of this user's",
            service.display()
        )));
    }
    platform::set_mode(&service, 0o700)?;
    match std::fs::remove_file(service.join(SOCKET)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(service.join(SOCKET))
}

/// Listen on `dir`'s socket (the folder made by [`prepare`]), owner-only.
pub(crate) fn bind(dir: &Path) -> std::io::Result<UnixListener> {
    let path = prepare(dir)?;
    let listener = with_short_path(dir, |p| {
        let std_listener = StdUnixListener::bind(p)?;
        std_listener.set_nonblocking(true)?;
        Ok(std_listener)
    })?;
    platform::set_mode(&path, 0o600)?;
    UnixListener::from_std(listener)
}

/// Remove `dir`'s socket and its folder (the run ended).
pub(crate) fn remove(dir: &Path) {
    std::fs::remove_file(socket_path(dir)).ok();
    std::fs::remove_dir(dir.join(SERVICE_DIR)).ok();
}

/// Connect to the live run in `dir` (an error when none answers).
pub fn connect_std(dir: &Path) -> std::io::Result<StdUnixStream> {
    if !socket_path(dir).exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{}: no live run answers here", dir.display()),
        ));
    }
    with_short_path(dir, |p| StdUnixStream::connect(p))
}

/// Connect to the live run in `dir`, for async use.
pub async fn connect(dir: &Path) -> std::io::Result<UnixStream> {
    let stream = connect_std(dir)?;
    stream.set_nonblocking(true)?;
    UnixStream::from_std(stream)
}

/// Ask the live run in `dir` where it stands (`None` when no live run
/// answers within two seconds).
pub fn status(dir: &Path) -> Option<RunRow> {
    let stream = connect_std(dir).ok()?;
    let timeout = Some(Duration::from_secs(2));
    stream.set_read_timeout(timeout).ok()?;
    stream.set_write_timeout(timeout).ok()?;
    let mut writer = stream.try_clone().ok()?;
    let mut reader = BufReader::new(stream);
    let send = |w: &mut StdUnixStream, id: u64, request: RequestBody| {
        let mut text = serde_json::to_string(&Request { id, request }).ok()?;
        text.push('\n');
        w.write_all(text.as_bytes()).ok()
    };
    send(
        &mut writer,
        0,
        RequestBody::Hello {
            version: VERSION,
            read_only: true,
            client: "galapagos runs".to_owned(),
        },
    )?;
    send(&mut writer, 1, RequestBody::Status)?;
    let mut line = String::new();
    for _ in 0..4 {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        match serde_json::from_str::<Message>(line.trim_end()).ok()? {
            Message::Reply { id: 1, reply } => {
                return match *reply {
                    Reply::Status(row) => Some(row),
                    _ => None,
                };
            }
            Message::Error { .. } => return None,
            _ => {}
        }
    }
    None
}
