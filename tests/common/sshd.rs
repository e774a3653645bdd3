//! A real OpenSSH server on a loopback port for one test: its own host key,
//! authorized key, config and pid file in a temp folder (Debian's
//! `openssh-server`; `.ci/run` installs it). The client side is a config
//! file (the test's key, no known-hosts file) handed to galapagos through
//! `GALAPAGOS_SSH_CONFIG`, and the galapagos the server runs is this build's
//! (`GALAPAGOS_REMOTE`). Where sshd cannot start the test is skipped with a
//! loud message, and fails under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    dir: tempfile::TempDir,
    pub port: u16,
    pid: Option<u32>,
}

/// Skip (or, under CI=true, fail) with `why`.
pub fn unavailable(why: &str) -> Option<Sshd> {
    let message = format!("SKIPPED: cannot start a real sshd: {why}");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message} (CI=true: this test must run)");
    }
    eprintln!("\n*** {message} ***\n");
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

fn keygen(path: &Path) -> Result<(), String> {
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(path)
        .output()
        .map_err(|e| format!("ssh-keygen: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ssh-keygen: {}",
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

impl Sshd {
    /// Start sshd, or `None` after saying why (see the module docs).
    pub fn start() -> Option<Self> {
        if !Path::new(SSHD).exists() {
            return unavailable(&format!(
                "{SSHD} is not installed (apt-get install openssh-server)"
            ));
        }
        let dir = tempfile::tempdir().ok()?;
        let d = dir.path();
        std::fs::create_dir_all("/run/sshd").ok();
        for key in ["host_key", "client_key"] {
            if let Err(e) = keygen(&d.join(key)) {
                return unavailable(&e);
            }
        }
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).ok()?;
        let mut port = 0;
        let mut started = None;
        for _ in 0..5 {
            port = free_port();
            let config = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {auth}\n\
                 UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPidFile {pid}\nLogLevel VERBOSE\n",
                host = d.join("host_key").display(),
                auth = d.join("authorized_keys").display(),
                pid = d.join("sshd.pid").display(),
            );
            std::fs::write(d.join("sshd_config"), config).ok()?;
            let o = Command::new(SSHD)
                .arg("-f")
                .arg(d.join("sshd_config"))
                .arg("-E")
                .arg(d.join("sshd.log"))
                .output();
            match o {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    let log = std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default();
                    return unavailable(&format!(
                        "sshd exited with {}: {}{log}",
                        o.status,
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
                Err(e) => return unavailable(&format!("{SSHD}: {e}")),
            }
            // sshd daemonizes: wait for its pid file and its port
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut pid = None;
            while Instant::now() < deadline {
                pid = std::fs::read_to_string(d.join("sshd.pid"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok());
                if pid.is_some() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if pid.is_some() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                started = pid;
                break;
            }
        }
        let Some(pid) = started else {
            let log = std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default();
            return unavailable(&format!("sshd did not listen: {log}"));
        };
        let client = format!(
            "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  IdentitiesOnly yes\n  \
             IdentityFile {key}\n  LogLevel ERROR\n  BatchMode yes\n",
            key = d.join("client_key").display()
        );
        std::fs::write(d.join("ssh_config"), client).ok()?;
        Some(Self {
            dir,
            port,
            pid: Some(pid),
        })
    }

    /// The client's ssh config file.
    pub fn client_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// `ssh://USER@127.0.0.1:PORT` + `path` (absolute).
    pub fn target(&self, path: &Path) -> String {
        let user = Command::new("id")
            .arg("-un")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "root".to_owned());
        format!("ssh://{user}@127.0.0.1:{}{}", self.port, path.display())
    }

    /// A galapagos command run on the client's side, reaching the server
    /// through this sshd.
    pub fn galapagos(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
        c.env("GALAPAGOS_SSH_CONFIG", self.client_config())
            .env("GALAPAGOS_REMOTE", env!("CARGO_BIN_EXE_galapagos"))
            .env_remove("GALAPAGOS_SSH");
        c
    }

    /// What sshd logged (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.take() {
            // the daemon this test started, by its pid
            Command::new("kill").arg(pid.to_string()).status().ok();
        }
    }
}
