//! The agent sandbox's pid 1, and the bridge between a sandboxed agent and
//! the run's model relay: the hidden command `galapagos agent-bridge`.
//!
//! It is the container's pid 1 (bubblewrap's `--as-pid-1`), and the first
//! thing it does is ask the kernel for SIGKILL when its parent, bubblewrap,
//! dies (a parent-death signal set after its own exec, so nothing clears
//! it); bubblewrap has one for the run (`--die-with-parent`). When the run
//! dies, even by kill -9, bubblewrap dies, then this process, and with the
//! pid namespace's init the kernel kills every process in it. When the
//! agent exits, it exits with the agent's status, with the same effect.
//!
//! With `--socket`, it also bridges the agent to the model relay: the
//! sandbox has a network namespace of its own, with only its own loopback,
//! so the agent reaches no host and no port of the machine; the relay's
//! Unix socket is bound in, and the bridge listens on the namespace's
//! `127.0.0.1:PORT` (where the agent's SDK is pointed) and copies every
//! connection to the socket and back.

use std::path::{Path, PathBuf};

use crate::engine::platform::{self, Pipe};

/// The port the bridge listens on inside the sandbox (the namespace is
/// fresh, so any port is free).
pub const PORT: u16 = 4141;

/// The base URL the agent's SDKs are pointed at.
pub fn base_url() -> String {
    format!("http://127.0.0.1:{PORT}")
}

/// Its arguments before the agent's command line (`socket`: the relay's;
/// `stdin`: the file the agent reads as its stdin; `hold`: start the agent
/// only once the run says so, see [`run`]).
pub fn args(socket: Option<&Path>, stdin: Option<&Path>, hold: bool) -> Vec<String> {
    let mut args = vec!["agent-bridge".to_owned()];
    if hold {
        args.push("--hold".to_owned());
    }
    if let Some(socket) = socket {
        args.extend(["--socket".to_owned(), socket.to_string_lossy().into_owned()]);
    }
    if let Some(stdin) = stdin {
        args.extend(["--stdin".to_owned(), stdin.to_string_lossy().into_owned()]);
    }
    args.push("--".into());
    args
}

/// The `galapagos` binary that has the bridge: this one when it is, else
/// one beside it or one directory up (a test binary in `target/*/deps`).
pub fn executable() -> Result<PathBuf, String> {
    let me = std::env::current_exe()
        .map_err(|e| format!("cannot find galapagos's own executable for the relay bridge: {e}"))?;
    let named = |p: &Path| p.file_name().is_some_and(|n| n == "galapagos");
    if named(&me) {
        return Ok(me);
    }
    let dir = me.parent().unwrap_or(Path::new("/"));
    [dir.join("galapagos"), dir.join("../galapagos")]
        .into_iter()
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
        .ok_or_else(|| {
            format!(
                "the relay bridge runs the `galapagos` binary, and {} is not it nor beside it",
                me.display()
            )
        })
}

/// Run as the sandbox's pid 1: die with the parent, start `agent` (its
/// stdin the file `stdin`, else empty), bridge `127.0.0.1:PORT` to `socket`
/// when there is one, until the agent exits; its exit status (128 + N for a
/// signal).
///
/// When the bridge's own stdin is a pipe, it is the run's lifeline: the run
/// holds its other end, so it closes when the run ends in any way (a kill
/// -9 included), and then the bridge kills the agent and exits, which ends
/// every process of the sandbox. This holds even where a parent-death signal
/// would not reach it.
///
/// With `hold`, it starts the agent only once one byte has come on the
/// lifeline: the run fills the agent's workspace from outside in between
/// (the sandbox's file systems are made by then), and nothing of the
/// agent's runs before that.
pub fn run(socket: Option<&Path>, stdin: Option<&Path>, hold: bool, agent: &[String]) -> i32 {
    if let Err(e) = platform::die_with_parent() {
        eprintln!("galapagos agent-bridge: cannot set the parent-death signal: {e}");
        return 2;
    }
    if hold {
        let mut go = [0u8; 1];
        if !matches!(std::io::Read::read(&mut std::io::stdin(), &mut go), Ok(1)) {
            eprintln!("galapagos agent-bridge: the run is gone before the agent started");
            return 137;
        }
    }
    let Some((program, args)) = agent.split_first() else {
        eprintln!("galapagos agent-bridge: no agent command after --");
        return 2;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("galapagos agent-bridge: {e}");
            return 2;
        }
    };
    runtime.block_on(async {
        let listener = match socket {
            None => None,
            Some(_) => match tokio::net::TcpListener::bind(("127.0.0.1", PORT)).await {
                Ok(l) => Some(l),
                Err(e) => {
                    eprintln!("galapagos agent-bridge: cannot listen on 127.0.0.1:{PORT}: {e}");
                    return 2;
                }
            },
        };
        let agent_stdin = match stdin {
            None => std::process::Stdio::null(),
            Some(path) => match std::fs::File::open(path) {
                Ok(f) => std::process::Stdio::from(f),
                Err(e) => {
                    eprintln!("galapagos agent-bridge: cannot open {}: {e}", path.display());
                    return 2;
                }
            },
        };
        let lifeline = platform::stdin_pipe();
        let mut command = tokio::process::Command::new(program);
        command.args(args).stdin(agent_stdin).kill_on_drop(true);
        platform::own_group(&mut command);
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("galapagos agent-bridge: cannot start `{program}`: {e}");
                return 127;
            }
        };
        let socket = socket.map(Path::to_path_buf);
        loop {
            tokio::select! {
                status = child.wait() => {
                    return match status {
                        Ok(s) => s.code().unwrap_or_else(|| 128 + platform::exit_signal(&s).unwrap_or(0)),
                        Err(_) => 1,
                    };
                }
                r = async { lifeline.as_ref()?.readable().await.ok() }, if lifeline.is_some() => {
                    if r.is_none() || !lifeline_alive(lifeline.as_ref()) {
                        // The agent's process group (in the sandbox, the
                        // bridge's exit ends the rest).
                        if let Some(pid) = child.id() {
                            platform::kill_group(pid);
                        }
                        let _ = child.start_kill();
                        eprintln!("galapagos agent-bridge: the run is gone; the agent is stopped");
                        return 137;
                    }
                }
                accepted = async { listener.as_ref()?.accept().await.ok() }, if listener.is_some() => {
                    if let (Some((mut tcp, _)), Some(socket)) = (accepted, socket.clone()) {
                        drop(tokio::spawn(async move {
                            if let Ok(mut unix) = platform::UnixStream::connect(&socket).await {
                                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                            }
                        }));
                    }
                }
            }
        }
    })
}

/// Drain what is waiting on the lifeline; false once it is closed.
fn lifeline_alive(pipe: Option<&Pipe>) -> bool {
    let Some(pipe) = pipe else { return false };
    let mut buf = [0u8; 256];
    loop {
        match pipe.try_read(&mut buf) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}
