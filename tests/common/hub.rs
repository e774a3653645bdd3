//! The command line as a user drives it from an empty HOME (its config,
//! cache and data dirs inside it, no model key), and a hub folder served
//! over loopback HTTP: the helpers the hub tests and the consent tests
//! publish and pull with.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// `galapagos` with `home` as its HOME and per-user dirs, no model key, no
/// stdin.
pub fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null());
    c
}

/// Run it to its end.
pub fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

/// Its stdout then its stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run it; it must succeed: its output.
pub fn ok(c: &mut Command) -> String {
    let o = run(c);
    assert!(o.status.success(), "{c:?}: {}", text(&o));
    text(&o)
}

/// Run it; it must fail: its output.
pub fn fails(c: &mut Command) -> String {
    let o = run(c);
    assert!(!o.status.success(), "{c:?} should fail: {}", text(&o));
    text(&o)
}

/// `galapagos hub serve` running (killed when dropped) and its address.
pub struct Served(pub Child, pub String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serve the hub folder `hub` on a free loopback port.
pub fn serve(home: &Path, hub: &Path) -> Served {
    let mut child = galapagos(home)
        .args(["hub", "serve"])
        .arg(hub)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("no address");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap()
        .to_owned();
    Served(child, url)
}
