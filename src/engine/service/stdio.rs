//! `galapagos serve --stdio PATH`: the service on standard input and
//! output, what a client's `ssh` runs on the server. A live run in PATH is
//! reached through its socket (the lines passed on as they are, the first
//! one made a watcher's with `--read-only`); anything else (a finished
//! run's folder, a folder of runs) is served from the folder by this
//! process. Both take the secrets of this process's environment out of
//! what they send.

use std::path::Path;
use std::sync::Arc;

use std::io::{Read as _, Write as _};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};

use super::protocol::{self, LineError, MAX_MESSAGE_LINE, MAX_REQUEST_LINE, Request, RequestBody};
use super::session::{Source, serve_connection};
use crate::engine::archive::ARCHIVE_FILE;
use crate::engine::redact::Redactor;

/// Serve `path` on stdin and stdout until the client closes them; the
/// process's exit code.
pub fn serve_stdio(path: &Path, read_only: bool) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let redactor = Arc::new(Redactor::new(crate::engine::hub::secret_env_values()));
    let (stdin, stdout, written) = stdio(runtime.handle());
    let code = runtime.block_on(async move {
        if path.join(ARCHIVE_FILE).is_file()
            && let Ok(socket) = super::local::connect(path).await
        {
            return relay(socket, stdin, stdout, read_only, &redactor).await;
        }
        serve_connection(
            Source::Folder(path.to_path_buf()),
            stdin,
            stdout,
            redactor,
            read_only,
        )
        .await;
        0
    });
    // what was sent is written out before the process ends
    if let Some(w) = written {
        w.join().ok();
    }
    code
}

/// This process's standard input and output as async streams: a thread
/// each copies between the blocking descriptor (a pipe, a socket or a file,
/// whatever ssh made it) and an in-memory pipe.
fn stdio(
    runtime: &tokio::runtime::Handle,
) -> (
    DuplexStream,
    DuplexStream,
    Option<std::thread::JoinHandle<()>>,
) {
    let (stdin, mut to_stdin) = tokio::io::duplex(1 << 16);
    let (stdout, mut from_stdout) = tokio::io::duplex(1 << 16);
    let rt = runtime.clone();
    std::thread::Builder::new()
        .name("galapagos-stdin".to_owned())
        .spawn(move || {
            let mut input = std::io::stdin().lock();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = match input.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if rt.block_on(to_stdin.write_all(&buf[..n])).is_err() {
                    break;
                }
            }
            rt.block_on(to_stdin.shutdown()).ok();
        })
        .ok();
    let rt = runtime.clone();
    let written = std::thread::Builder::new()
        .name("galapagos-stdout".to_owned())
        .spawn(move || {
            let mut output = std::io::stdout().lock();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = match rt.block_on(from_stdout.read(&mut buf)) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if output
                    .write_all(&buf[..n])
                    .and_then(|()| output.flush())
                    .is_err()
                {
                    break;
                }
            }
        })
        .ok();
    (stdin, stdout, written)
}

/// Pass lines between stdin/stdout and a live run's socket.
async fn relay(
    socket: crate::engine::platform::UnixStream,
    stdin: DuplexStream,
    mut stdout: DuplexStream,
    read_only: bool,
    redactor: &Redactor,
) -> i32 {
    let (from_run, mut to_run) = socket.into_split();
    let mut stdin = BufReader::new(stdin);
    let upstream = async {
        let mut buf = Vec::new();
        let mut first = true;
        loop {
            match protocol::read_line(&mut stdin, &mut buf, MAX_REQUEST_LINE).await {
                Ok(()) => {}
                Err(LineError::Closed | LineError::Io(_) | LineError::TooLong(_)) => break,
            }
            if first && read_only {
                // the handshake, made a watcher's
                if let Ok(mut hello) = serde_json::from_slice::<Request>(&buf)
                    && let RequestBody::Hello { read_only, .. } = &mut hello.request
                {
                    *read_only = true;
                    buf = serde_json::to_vec(&hello).unwrap_or_default();
                }
            }
            first = false;
            buf.push(b'\n');
            if to_run.write_all(&buf).await.is_err() {
                break;
            }
        }
        to_run.shutdown().await.ok();
    };
    let downstream = async {
        let mut reader = BufReader::with_capacity(1 << 16, from_run);
        let mut buf = Vec::new();
        while protocol::read_line(&mut reader, &mut buf, MAX_MESSAGE_LINE)
            .await
            .is_ok()
        {
            let text = String::from_utf8_lossy(&buf);
            let text = redactor.text(&text);
            if stdout.write_all(text.as_bytes()).await.is_err()
                || stdout.write_all(b"\n").await.is_err()
                || stdout.flush().await.is_err()
            {
                break;
            }
        }
    };
    // the run's end (its socket closing) ends the relay, and so does the
    // client's
    tokio::select! {
        () = upstream => {}
        () = downstream => {}
    }
    0
}
