//! Where a run is: a folder on this machine, or `ssh://[user@]host[:port]/path`
//! on a server reached through the user's own `ssh` (their config, keys,
//! agent and jump hosts), which runs `galapagos serve --stdio PATH` there.
//!
//! - `GALAPAGOS_SSH`: the ssh command (default `ssh`; words split on
//!   whitespace, so `ssh -F /path/config` works).
//! - `GALAPAGOS_SSH_CONFIG` or `--ssh-config FILE`: an ssh config file
//!   (`ssh -F FILE`).
//! - `GALAPAGOS_REMOTE` or `--remote-galapagos CMD`: the galapagos to run on
//!   the server (default `galapagos`, found on the server's `PATH`); a shell
//!   command as the server's shell reads it.

use std::path::{Path, PathBuf};

/// A run folder or a folder of runs, here or on a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Local(PathBuf),
    Ssh(SshTarget),
}

/// `ssh://[user@]host[:port]/path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The path on the server: absolute (`/srv/runs/x`), or under the
    /// remote home with `~` (`ssh://host/~/runs` is `~/runs`).
    pub path: String,
}

/// The prefix of a remote target.
pub const SSH_SCHEME: &str = "ssh://";

impl Target {
    /// A command-line argument: `ssh://…` is a server's, anything else a
    /// local path.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.strip_prefix(SSH_SCHEME) {
            Some(rest) => SshTarget::parse(rest)
                .map(Self::Ssh)
                .map_err(|why| format!("{text}: {why} (expected ssh://[user@]host[:port]/path)")),
            None => Ok(Self::Local(PathBuf::from(text))),
        }
    }

    /// [`Target::parse`] of a path argument (a local path that is not
    /// UTF-8 is local).
    pub fn of_path(path: &Path) -> Result<Self, String> {
        match path.to_str() {
            Some(text) => Self::parse(text),
            None => Ok(Self::Local(path.to_path_buf())),
        }
    }

    /// True for a server's target.
    pub fn is_remote(&self) -> bool {
        matches!(self, Self::Ssh(_))
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Ssh(t) => write!(f, "{t}"),
        }
    }
}

impl std::fmt::Display for SshTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SSH_SCHEME}")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        if self.path.starts_with('/') {
            write!(f, "{}", self.path)
        } else {
            write!(f, "/{}", self.path)
        }
    }
}

fn plain(what: &str, text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(format!("no {what}"));
    }
    if text.starts_with('-') {
        return Err(format!("a {what} cannot begin with '-'"));
    }
    if text
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || "'\"`$;&|<>\\".contains(c))
    {
        return Err(format!("the {what} {text:?} has characters no {what} has"));
    }
    Ok(())
}

impl SshTarget {
    /// What follows `ssh://`.
    fn parse(rest: &str) -> Result<Self, String> {
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => return Err("no path after the host".to_owned()),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => {
                plain("user", u)?;
                (Some(u.to_owned()), h)
            }
            None => (None, authority),
        };
        let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
            let (host, after) = inner
                .split_once(']')
                .ok_or_else(|| "an unclosed '[' in the host".to_owned())?;
            match after {
                "" => (host, None),
                p => (
                    host,
                    Some(p.strip_prefix(':').ok_or_else(|| "a bad port".to_owned())?),
                ),
            }
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        plain("host", host)?;
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("the port {p:?} is not a port number"))
            })
            .transpose()?;
        let path = if path == "/~" {
            "~".to_owned()
        } else if let Some(home) = path.strip_prefix("/~/") {
            format!("~/{home}")
        } else {
            path.to_owned()
        };
        if path.chars().any(char::is_control) {
            return Err("control characters in the path".to_owned());
        }
        Ok(Self {
            user,
            host: host.to_owned(),
            port,
            path,
        })
    }

    /// The path as an argument of the server's shell: quoted, with a
    /// leading `~` left to the shell.
    pub fn shell_path(&self) -> String {
        if self.path == "~" {
            return "~".to_owned();
        }
        match self.path.strip_prefix("~/") {
            Some(rest) => format!("~/{}", shell_quote(rest)),
            None => shell_quote(&self.path),
        }
    }

    /// This target with another path.
    pub fn with_path(&self, path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            ..self.clone()
        }
    }
}

/// `text` in single quotes for a POSIX shell.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// How the server is reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshOptions {
    /// The ssh command and its first arguments (`GALAPAGOS_SSH`).
    pub ssh: Vec<String>,
    /// `ssh -F FILE`.
    pub config: Option<PathBuf>,
    /// The galapagos command on the server.
    pub remote: String,
}

impl SshOptions {
    /// From the environment (`GALAPAGOS_SSH`, `GALAPAGOS_SSH_CONFIG`,
    /// `GALAPAGOS_REMOTE`), then `config` and `remote` when given.
    pub fn from_env(config: Option<&Path>, remote: Option<&str>) -> Self {
        let ssh: Vec<String> = std::env::var("GALAPAGOS_SSH")
            .ok()
            .map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| vec!["ssh".to_owned()]);
        let config = config.map(Path::to_path_buf).or_else(|| {
            std::env::var_os("GALAPAGOS_SSH_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        let remote = remote
            .map(str::to_owned)
            .or_else(|| {
                std::env::var("GALAPAGOS_REMOTE")
                    .ok()
                    .filter(|v| !v.trim().is_empty())
            })
            .unwrap_or_else(|| "galapagos".to_owned());
        Self {
            ssh,
            config,
            remote,
        }
    }

    /// The command line that starts `galapagos serve --stdio PATH` on the
    /// server through ssh: no terminal, no escape character, keep-alives
    /// so a dead link is noticed, and `--` before the host.
    pub fn argv(&self, target: &SshTarget, read_only: bool) -> Vec<String> {
        let mut argv = self.ssh.clone();
        if let Some(config) = &self.config {
            argv.push("-F".to_owned());
            argv.push(config.display().to_string());
        }
        if let Some(port) = target.port {
            argv.push("-p".to_owned());
            argv.push(port.to_string());
        }
        for option in [
            "-T",
            "-e",
            "none",
            "-o",
            "ServerAliveInterval=10",
            "-o",
            "ServerAliveCountMax=3",
        ] {
            argv.push(option.to_owned());
        }
        if let Some(user) = &target.user {
            argv.push("-l".to_owned());
            argv.push(user.clone());
        }
        argv.push("--".to_owned());
        argv.push(target.host.clone());
        let mut remote = format!("{} serve --stdio {}", self.remote, target.shell_path());
        if read_only {
            remote.push_str(" --read-only");
        }
        argv.push(remote);
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        let t = Target::parse("ssh://ana@lab-3.example:2222/srv/runs/x y").unwrap();
        let Target::Ssh(s) = &t else { panic!() };
        assert_eq!(s.user.as_deref(), Some("ana"));
        assert_eq!((s.host.as_str(), s.port), ("lab-3.example", Some(2222)));
        assert_eq!(s.path, "/srv/runs/x y");
        assert_eq!(s.shell_path(), "'/srv/runs/x y'");
        assert_eq!(t.to_string(), "ssh://ana@lab-3.example:2222/srv/runs/x y");
        let home = Target::parse("ssh://box/~/runs/it's").unwrap();
        let Target::Ssh(h) = home else { panic!() };
        assert_eq!(h.shell_path(), "~/'runs/it'\\''s'");
        let v6 = Target::parse("ssh://[::1]:22/r").unwrap();
        let Target::Ssh(v6) = v6 else { panic!() };
        assert_eq!((v6.host.as_str(), v6.port), ("::1", Some(22)));
        assert_eq!(
            Target::parse("runs/x").unwrap(),
            Target::Local(PathBuf::from("runs/x"))
        );
    }

    #[test]
    fn hostile_targets_are_refused_with_what_is_wrong() {
        for (text, says) in [
            ("ssh://-oProxyCommand=sh/x", "cannot begin with '-'"),
            ("ssh://host", "no path"),
            ("ssh://host:99999/x", "not a port number"),
            ("ssh://a;b/x", "characters"),
            ("ssh:///x", "no host"),
            ("ssh://-l@h/x", "user cannot begin"),
        ] {
            let e = Target::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(e.starts_with(text), "{e}");
        }
    }

    #[test]
    fn the_ssh_command_puts_the_host_after_the_options() {
        let o = SshOptions {
            ssh: vec!["ssh".into()],
            config: Some(PathBuf::from("/c")),
            remote: "/opt/galapagos".into(),
        };
        let Target::Ssh(t) = Target::parse("ssh://u@h:2/r/a").unwrap() else {
            panic!()
        };
        let argv = o.argv(&t, true);
        let dashdash = argv.iter().position(|a| a == "--").unwrap();
        assert_eq!(argv[dashdash + 1], "h");
        assert_eq!(
            argv.last().unwrap(),
            "/opt/galapagos serve --stdio '/r/a' --read-only"
        );
        assert!(argv.windows(2).any(|w| w == ["-F", "/c"]));
        assert!(argv.windows(2).any(|w| w == ["-p", "2"]));
        assert!(argv.windows(2).any(|w| w == ["-l", "u"]));
    }
}
