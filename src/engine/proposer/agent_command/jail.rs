//! The agent's sandbox: the bubblewrap container candidates get
//! ([`bwrap::bwrap_args`]: new user, pid, IPC, UTS, cgroup and network
//! namespaces, the machine's file system read-only, the user's home dirs,
//! `/tmp` and the run folder hidden, a private scratch tmpfs), with the
//! workspace the one writable dir it shares with the run, `.galapagos/`
//! shown read-only in it, and `prlimit`'s limits (as the command evaluator
//! runs candidates).
//!
//! The process tree dies with the proposal: bubblewrap is started in a
//! process group of its own, which is killed at the time limit, once the
//! agent has exited and when the proposal is dropped. Everything inside is
//! in a pid namespace whose pid 1 is `galapagos agent-bridge`
//! ([`super::bridge`]): when it exits, the kernel kills the whole namespace.
//! Two things end it with the run: a pipe on its stdin whose other end only
//! the proposal holds (the lifeline: it closes when the proposal ends or the
//! run dies, a kill -9 included, and the bridge then stops the agent and
//! exits), and a parent-death signal it sets after its exec, with
//! bubblewrap's own for the run (`--die-with-parent`). The signals alone
//! were seen to miss under load: a killed run once left the bridge and its
//! agent running. The agent reads the prompt's file as its stdin when the
//! card says `prompt_via: stdin` (the bridge opens it).
//!
//! The network is a fresh namespace with only `lo`: no host, no port of the
//! machine's loopback is reachable. The run's model relay reaches the agent
//! through its Unix socket, bound in, and the bridge (pid 1, the agent's
//! parent inside the sandbox) that listens on the namespace's own loopback.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::AgentCommandParams;
use super::workspace::{INFO, INSIDE, Left, Workspace};
use crate::engine::agent_run::AgentExit;
use crate::engine::platform;
use crate::engine::sandbox::bwrap::{self, Jail, SHARED_SCRATCH};
use crate::engine::sandbox::environment::{AGENT_SET, Profile};
use crate::engine::sandbox::interpreter::{self, Interpreter};
use crate::engine::sandbox::limits::{Evidence, Limits};
use crate::engine::sandbox::paths;
use crate::engine::sandbox::process::signal_name;
use crate::engine::sandbox::supervise::{Ended, GroupGuard, Streams, supervise};
use crate::engine::sandbox::{prlimit, run_as};

/// The agent's private HOME and TMPDIR, in its sandbox's one writable file
/// system.
fn home_and_tmp() -> (PathBuf, PathBuf) {
    let root = Path::new(SHARED_SCRATCH);
    (root.join("agent-home"), root.join("agent-tmp"))
}

/// How long the agent's sandbox may take to start (bubblewrap making it,
/// then the bridge's exec).
const CONTAINER_START: Duration = Duration::from_secs(120);

/// The programs the sandbox needs, found once, and what it hides besides
/// the user's data.
pub(super) struct Prison {
    bwrap: PathBuf,
    prlimit: PathBuf,
    /// The run folder, hidden from the agent (its workspace is bound back).
    run_dir: Option<PathBuf>,
}

/// One agent to run.
pub(super) struct Job<'a> {
    pub(super) argv: &'a [String],
    pub(super) ws: &'a Workspace,
    /// The prompt's file (`.galapagos/prompt.md`) on the agent's stdin
    /// (else stdin is empty).
    pub(super) prompt_on_stdin: bool,
    pub(super) params: &'a AgentCommandParams,
    /// The relay's variables (its address inside the sandbox, the token).
    pub(super) relay_env: Vec<(String, String)>,
    /// The relay's Unix socket, when the run has a relay.
    pub(super) relay_socket: Option<PathBuf>,
}

/// How the agent's process ended.
pub(super) struct Ran {
    /// What it left in its workspace and `out/` (None: it never started).
    pub(super) left: Option<Left>,
    pub(super) exit: AgentExit,
    pub(super) wall_ms: f64,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// `name` found as a spawn outside the sandbox would (a path, or a name on
/// PATH).
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return (p.is_absolute() && p.is_file()).then_some(p);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// What a program needs to be seen inside the sandbox: its file, its
/// installation's prefix (a venv, `node_modules`' parent) and, for a
/// script, its interpreter's.
fn program_paths(exe: &Path) -> Vec<PathBuf> {
    let mut paths = vec![exe.to_path_buf()];
    let real = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
    for p in [exe, real.as_path()] {
        if let Some(prefix) = p.parent().and_then(Path::parent)
            && prefix.components().count() > 1
        {
            paths.push(prefix.to_path_buf());
        }
    }
    paths.push(real.clone());
    // `#!/path/to/interpreter` (or `#!/usr/bin/env name`).
    let head = std::fs::read(&real)
        .ok()
        .map(|b| b.into_iter().take(256).collect::<Vec<u8>>())
        .unwrap_or_default();
    if let Some(line) = head
        .strip_prefix(b"#!")
        .and_then(|rest| rest.split(|b| *b == b'\n').next())
    {
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        let interpreter = if first.ends_with("/env") {
            words.find(|w| !w.starts_with('-')).and_then(find_program)
        } else {
            Some(PathBuf::from(first))
        };
        if let Some(found) = interpreter
            .as_deref()
            .and_then(|i| interpreter::locate(&i.to_string_lossy()))
        {
            paths.extend(found.prefixes);
            paths.push(found.executable);
        } else if let Some(i) = interpreter {
            paths.push(i);
        }
    }
    paths
}

/// Describe an exit status of the container's pid 1 shell (a command
/// killed by signal N is status 128 + N).
fn exit_of(status: std::process::ExitStatus) -> AgentExit {
    match (status.code(), platform::exit_signal(&status)) {
        (Some(0), _) => AgentExit::Finished,
        (Some(code), _) if code > 128 && code < 160 => AgentExit::Failed(format!(
            "killed by {} (exit status {code})",
            signal_name(code - 128)
        )),
        (Some(code), _) => AgentExit::Failed(format!("exit status {code}")),
        (None, Some(sig)) => AgentExit::Failed(format!("killed by {}", signal_name(sig))),
        (None, None) => AgentExit::Failed(format!("{status}")),
    }
}

impl Prison {
    pub(super) fn new(run_dir: Option<&Path>) -> Result<Self, String> {
        let bwrap = bwrap::find_bwrap()?;
        let prlimit = prlimit::find_prlimit()?;
        Ok(Self {
            bwrap,
            prlimit,
            run_dir: run_dir.map(Path::to_path_buf),
        })
    }

    /// The agent's limits (its CPU time per process, unless the card sets
    /// one: twice its wall-time limit, as a candidate's).
    pub(super) fn limits(params: &AgentCommandParams) -> Limits {
        params.allowance.resolve(params.timeout_secs)
    }

    /// The `bwrap` command that runs `job`, or why it cannot.
    fn command(&self, job: &Job<'_>) -> Result<tokio::process::Command, String> {
        let Some(first) = job.argv.first() else {
            return Err("the agent's command line is empty".into());
        };
        let exe = find_program(first).ok_or_else(|| {
            format!(
                "the agent's program `{first}` is not found{}: install it (the README says how for each \
                 built-in agent card) or name it by its absolute path",
                if first.contains('/') { "" } else { " on PATH" }
            )
        })?;
        let (uid, gid) = platform::user_ids()?;
        let run_as = run_as::run_as(uid, run_as::NOBODY);
        let mut extra = program_paths(&exe);
        extra.extend(
            job.params
                .allowance
                .read_paths
                .iter()
                .map(|p| paths::expand_home(p)),
        );
        let bridge = super::bridge::executable()?;
        extra.push(bridge.clone());
        let socket_dir = job
            .relay_socket
            .as_deref()
            .map(|s| s.parent().unwrap_or(s).to_path_buf());
        let mut private = paths::private_dirs();
        private.extend(self.run_dir.iter().cloned());
        if let Some(ws_root) = job.ws.dir.parent() {
            private.push(ws_root.to_path_buf());
        }
        let interpreter = Interpreter {
            executable: exe.clone(),
            prefixes: Vec::new(),
        };
        let jail = Jail {
            network: false,
            interpreter: &interpreter,
            task_dir: &job.ws.info,
            code_dir: &job.ws.info,
            lanes_dir: socket_dir.as_deref().unwrap_or(&job.ws.info),
            extra,
            writable: Vec::new(),
            private,
            uid,
            gid,
            run_as,
            task_copy: None,
            write_quota_mib: Self::limits(job.params).write_quota_mib,
            // One file system of the quota for all it writes: the
            // workspace, `.galapagos/out/`, HOME, TMPDIR, `/dev/shm`.
            one_scratch: true,
            shown: Vec::new(),
        };
        // The container's pid 1 is the bridge (it dies with bubblewrap and
        // bridges to the relay); under it, the agent's command under its
        // limits, as root as nobody in a user namespace of its own (see the
        // command evaluator's sandbox).
        let mut inner: Vec<OsString> = Vec::new();
        if run_as.is_some() {
            inner.extend(["unshare".into(), "--user".into(), "--".into()]);
        }
        inner.extend(prlimit::prlimit_args(
            &self.prlimit,
            Self::limits(job.params),
        ));
        inner.push(exe.clone().into());
        inner.extend(job.argv[1..].iter().map(Into::into));
        let mut pid1: Vec<OsString> = vec![bridge.into()];
        pid1.extend(
            super::bridge::args(
                job.relay_socket.as_deref(),
                job.prompt_on_stdin.then(|| job.ws.prompt_file()).as_deref(),
                true,
            )
            .into_iter()
            .map(Into::into),
        );
        pid1.extend(run_as::as_user(run_as, &inner));
        // The candidates' sandbox, its `--chdir DIR --` replaced by what the
        // agent's adds.
        let mut args: Vec<OsString> = vec!["--as-pid-1".into()];
        args.extend(bwrap::bwrap_args(&jail, &[]));
        let chdir = args
            .iter()
            .rposition(|a| a == "--chdir")
            .ok_or("the sandbox's command line has no --chdir")?;
        args.truncate(chdir);
        let (home, tmp) = home_and_tmp();
        let (work, out) = (job.ws.work_inside(), job.ws.out_inside());
        // The workspace and `out/`, empty until the run fills them (see
        // `run`), with `.galapagos/` shown read-only in the workspace.
        for dir in [Path::new(INSIDE), &work, &out] {
            args.extend(["--dir".into(), dir.into()]);
        }
        args.extend([
            "--ro-bind".into(),
            job.ws.info.clone().into(),
            work.join(INFO).into(),
        ]);
        for dir in [&home, &tmp] {
            args.extend(["--perms".into(), "01777".into(), "--dir".into(), dir.into()]);
        }
        args.extend(["--chdir".into(), work.into(), "--".into()]);
        args.extend(pid1);
        let mut cmd = tokio::process::Command::new(&self.bwrap);
        cmd.args(args);
        // From scratch: the card's variables, the relay's, a private HOME
        // and TMPDIR, and a PATH that finds the agent's program first.
        let path = format!(
            "{}:/usr/local/bin:/usr/bin:/bin",
            exe.parent()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        cmd.env_clear()
            .envs(Profile::Agent.filter(std::env::vars_os()))
            .env("PATH", path)
            .envs(AGENT_SET)
            .envs(super::card_env(&job.params.env))
            .envs(job.relay_env.iter().cloned())
            .env("HOME", &home)
            .env("TMPDIR", &tmp);
        Ok(cmd)
    }

    /// The sandbox's writable file system, held open from outside and
    /// filled with the parent's tree (its owner the sandbox's user), once
    /// bubblewrap (`pid`) has made it: its child, the container's pid 1,
    /// is the bridge, holding the agent back until it is told to go.
    async fn fill(&self, pid: u32, job: &Job<'_>) -> Result<Left, String> {
        let deadline = Instant::now() + CONTAINER_START;
        let bridge = super::bridge::executable()?;
        let pid1 = loop {
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .map_err(|e| format!("cannot see bubblewrap's process {pid}: {e}"))?;
            let first = children.split_whitespace().next().map(str::to_owned);
            // The bridge's exec is after the container is made.
            if let Some(first) = first
                && std::fs::read_link(format!("/proc/{first}/exe")).is_ok_and(|e| e == bridge)
            {
                break first;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the agent's sandbox did not start within {} s",
                    CONTAINER_START.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let inside = PathBuf::from(format!("/proc/{pid1}/root")).join(
            Path::new(INSIDE)
                .strip_prefix("/")
                .unwrap_or(Path::new(INSIDE)),
        );
        let left = Left::open(&inside).map_err(|e| {
            format!(
                "cannot open the agent's workspace {}: {e}",
                inside.display()
            )
        })?;
        left.fill(&job.ws.work).map_err(|e| {
            let why = format!("cannot copy the parent's tree into the agent's workspace: {e}");
            Self::limits(job.params)
                .hit(&Evidence {
                    said: &[why.as_str()],
                    ..Evidence::default()
                })
                .map_or_else(|| why.clone(), |hit| hit.name(&why))
        })?;
        let (uid, _) = platform::user_ids()?;
        if let Some(user) = run_as::run_as(uid, run_as::NOBODY) {
            // All but `.galapagos/`, shown read-only.
            let work = left.work();
            let given = std::fs::read_dir(&work)
                .and_then(|entries| {
                    for entry in entries {
                        let entry = entry?;
                        if entry.file_name() == INFO {
                            continue;
                        }
                        if entry.file_type()?.is_dir() {
                            run_as::hand_over(&entry.path(), user)?;
                        } else {
                            platform::lchown(&entry.path(), user.uid, user.gid)?;
                        }
                    }
                    platform::lchown(&work, user.uid, user.gid)
                })
                .and_then(|()| run_as::hand_over(&left.out(), user));
            given.map_err(|e| {
                format!("cannot give the agent's workspace to the sandbox's user: {e}")
            })?;
        }
        Ok(left)
    }

    /// Run `job` to its end, its time limit or the proposal's drop.
    pub(super) async fn run(&self, job: &Job<'_>) -> Ran {
        let started = Instant::now();
        let ms = || started.elapsed().as_secs_f64() * 1000.0;
        let not_started = |why: String| Ran {
            left: None,
            exit: AgentExit::NotStarted(why),
            wall_ms: 0.0,
            stdout: String::new(),
            stderr: String::new(),
        };
        let mut cmd = match self.command(job) {
            Ok(c) => c,
            Err(e) => return not_started(e),
        };
        // The bridge's lifeline (see `bridge::run`): its stdin, whose write
        // end only this proposal holds, so it closes when the proposal ends
        // or the run dies.
        let (lifeline, mut lifeline_held) = match std::io::pipe() {
            Ok(ends) => ends,
            Err(e) => return not_started(format!("cannot make the agent's lifeline pipe: {e}")),
        };
        cmd.current_dir(&job.ws.work)
            .stdin(Stdio::from(lifeline))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        platform::own_group(&mut cmd);
        let spawned = cmd.spawn();
        // The lifeline's read end is the sandbox's alone from here.
        drop(cmd);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => return not_started(format!("cannot start bubblewrap: {e}")),
        };
        let guard = GroupGuard::new(child.id());
        // The agent's workspace, filled from outside while the bridge holds
        // the agent back, then the bridge's go.
        let Some(pid) = child.id() else {
            return not_started("bubblewrap exited at once".into());
        };
        let left = match self.fill(pid, job).await {
            Ok(left) => left,
            Err(why) => return not_started(why),
        };
        if let Err(e) = std::io::Write::write_all(&mut lifeline_held, b"g") {
            return not_started(format!("cannot start the agent in its sandbox: {e}"));
        }
        let Some((out, err)) = platform::output_pipes(&mut child) else {
            return not_started("cannot read the agent's output".into());
        };
        let streams = Streams {
            out,
            err,
            kept: job.params.allowance.output_bytes(),
            sent: None,
        };
        let timeout = Duration::from_secs_f64(job.params.timeout_secs);
        let Ended {
            status,
            timed_out,
            exited_at,
            stdout: cap_out,
            stderr: cap_err,
            ..
        } = supervise(&mut child, guard, streams, timeout).await;
        let exit = if timed_out {
            AgentExit::TimedOut
        } else {
            match status {
                Some(Ok(s)) => exit_of(s),
                Some(Err(e)) => AgentExit::Failed(format!("cannot wait for the agent: {e}")),
                None => AgentExit::Failed("the agent did not finish".into()),
            }
        };
        Ran {
            left: Some(left),
            exit,
            wall_ms: exited_at
                .map_or_else(ms, |at| at.duration_since(started).as_secs_f64() * 1000.0),
            stdout: cap_out.text(),
            stderr: cap_err.text(),
        }
    }
}
