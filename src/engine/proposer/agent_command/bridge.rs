//! The bridge between a sandboxed agent and the run's model relay.
//!
//! The agent's sandbox has a network namespace of its own, with only its
//! own loopback: it reaches no host and no port of the machine. The relay
//! listens on a Unix socket too, whose folder is bound into the sandbox;
//! the bridge is the sandbox's first process under its pid 1 (the hidden
//! command `galapagos agent-bridge`): it listens on the namespace's
//! `127.0.0.1:PORT`, starts the agent as its child (the agent's SDK points
//! at that port), copies every connection to the socket and back, and
//! exits with the agent's status once the agent has exited.

use std::path::{Path, PathBuf};

/// The port the bridge listens on inside the sandbox (the namespace is
/// fresh, so any port is free).
pub const PORT: u16 = 4141;

/// The base URL the agent's SDKs are pointed at.
pub fn base_url() -> String {
    format!("http://127.0.0.1:{PORT}")
}

/// The bridge's arguments before the agent's command line.
pub fn args(socket: &Path) -> Vec<String> {
    vec![
        "agent-bridge".into(),
        "--socket".into(),
        socket.to_string_lossy().into_owned(),
        "--".into(),
    ]
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

/// Run the bridge: listen on `127.0.0.1:PORT`, start `agent`, forward to
/// `socket` until the agent exits; its exit status (128 + N for a signal).
pub fn run(socket: &Path, agent: &[String]) -> i32 {
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
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", PORT)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("galapagos agent-bridge: cannot listen on 127.0.0.1:{PORT}: {e}");
                return 2;
            }
        };
        let mut child = match tokio::process::Command::new(program).args(args).spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("galapagos agent-bridge: cannot start `{program}`: {e}");
                return 127;
            }
        };
        let socket = socket.to_path_buf();
        loop {
            tokio::select! {
                status = child.wait() => {
                    use std::os::unix::process::ExitStatusExt as _;
                    return match status {
                        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
                        Err(_) => 1,
                    };
                }
                accepted = listener.accept() => {
                    if let Ok((mut tcp, _)) = accepted {
                        let socket = socket.clone();
                        drop(tokio::spawn(async move {
                            if let Ok(mut unix) = tokio::net::UnixStream::connect(&socket).await {
                                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                            }
                        }));
                    }
                }
            }
        }
    })
}
