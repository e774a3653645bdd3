//! Remote runs through a real sshd on loopback (`common::sshd`): a run
//! started with `--detach` leads a session of its own and is listed by
//! `galapagos runs ssh://…`; `attach` over ssh follows it to its end with the
//! genome count the server recorded; a client whose connection drops
//! resumes where it was, and one killed mid-run then attached again sees
//! every genome once; a live run on the server is paused, given notes
//! (which reach later prompts) and a pin, resumed and stopped with `steer`;
//! and the model key in the server's environment reaches nothing the
//! client has. The runs use the offline model (the key test: a loopback
//! model server) on a task whose evaluator takes a little while.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::hostile::{ModelServer, SECRET, files_containing};
use common::sshd::Sshd;
use galapagos::engine::archive::Archive;

/// The quadratic task, its evaluator waiting `sleep` seconds per program.
fn slow_task(root: &Path, sleep: f64) -> PathBuf {
    let task = common::temp_task(root);
    let evaluator = std::fs::read_to_string(task.join("evaluator.py")).unwrap();
    std::fs::write(
        task.join("evaluator.py"),
        evaluator.replace(
            "def evaluate(path):\n",
            &format!("import time\n\n\ndef evaluate(path):\n    time.sleep({sleep})\n"),
        ),
    )
    .unwrap();
    task
}

fn card() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cards/best_of_n.yaml")
        .display()
        .to_string()
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Start `galapagos run … --detach` on the server's side (this machine);
/// the run folder it printed.
fn detach(
    root: &Path,
    task: &Path,
    iterations: u64,
    extra: &[&str],
    env: &[(&str, &str)],
) -> PathBuf {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.arg("run")
        .arg(card())
        .arg("--task")
        .arg(task)
        .args(["--iterations", &iterations.to_string(), "--parallel", "1"])
        .arg("--out")
        .arg(root.join("runs"))
        .args(extra)
        .arg("--detach")
        .current_dir(root)
        .env("HOME", root)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("OPENAI_API_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    let started = Instant::now();
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "--detach returns at once"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let dir = PathBuf::from(stdout.lines().next().unwrap().trim());
    assert!(dir.is_absolute() && dir.is_dir(), "{}", text(&o));
    dir
}

/// The pid the run wrote into its lock file (waiting for it).
fn run_pid(dir: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = std::fs::read_to_string(dir.join("run.lock"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "the detached run never locked its folder"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn genomes(dir: &Path) -> u64 {
    Archive::open(dir)
        .and_then(|a| a.genome_count())
        .unwrap_or(0)
}

fn wait_for_genomes(dir: &Path, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while genomes(dir) < n {
        let log = std::fs::read_to_string(dir.join("output.log")).unwrap_or_default();
        assert!(Instant::now() < deadline, "fewer than {n} genomes: {log}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Run `c` to its end within `limit` (killed and failed after it).
fn finish(mut c: Command, limit: Duration) -> Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()).ok());
    match rx.recv_timeout(limit) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            // the command this test started, by its pid
            Command::new("kill")
                .args(["-9", &id.to_string()])
                .status()
                .ok();
            panic!("the command did not end within {} s", limit.as_secs());
        }
    }
}

/// The ids of `admitted genome N …` lines.
fn genome_lines(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("admitted genome "))
        .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

fn summary_genomes(stdout: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("genomes:"))
        .unwrap_or_else(|| panic!("no summary in {stdout}"));
    line["genomes:".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The session a process belongs to (`/proc/PID/stat`, field 6).
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// Stop the detached run in `dir` (by its pid, which this test started)
/// if it still runs, so no test leaves one behind.
struct Reap(PathBuf);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(self.0.join("run.lock"))
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            && galapagos::engine::archive::RunLock::is_held(&self.0)
        {
            Command::new("kill").arg(pid.to_string()).status().ok();
        }
    }
}

#[test]
fn a_detached_run_is_listed_and_attached_to_its_end_over_ssh() {
    let Some(sshd) = Sshd::start() else { return };
    let root = tempfile::tempdir().unwrap();
    let task = slow_task(root.path(), 0.02);
    let dir = detach(root.path(), &task, 25, &[], &[]);
    let _reap = Reap(dir.clone());
    // its own session: the terminal closing or an SSH logout does not end it
    let pid = run_pid(&dir);
    assert_eq!(
        session_of(pid),
        Some(pid),
        "the run leads a session of its own"
    );
    assert_ne!(session_of(pid), session_of(std::process::id()));
    let runs = root.path().join("runs");
    let o = finish(
        {
            let mut c = sshd.galapagos();
            c.args(["runs", &sshd.target(&runs)]);
            c
        },
        Duration::from_secs(120),
    );
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}\n{}", text(&o), sshd.log());
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let row = listing
        .lines()
        .find(|l| l.ends_with(&name))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(
        row.starts_with("running") || row.starts_with("completed"),
        "{listing}"
    );
    let o = finish(
        {
            let mut c = sshd.galapagos();
            c.args(["attach", &sshd.target(&dir), "--verbose"]);
            c
        },
        Duration::from_secs(300),
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let n = genomes(&dir);
    assert!(n >= 26, "{n}");
    assert_eq!(summary_genomes(&stdout), n, "{stdout}");
    assert_eq!(
        genome_lines(&stdout),
        (0..n).collect::<Vec<_>>(),
        "{stdout}"
    );
    assert!(stdout.contains("status:      completed"), "{stdout}");
    // listed again: finished, with its progress
    let o = finish(
        {
            let mut c = sshd.galapagos();
            c.args(["runs", &sshd.target(&runs)]);
            c
        },
        Duration::from_secs(120),
    );
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    let row = listing.lines().find(|l| l.ends_with(&name)).unwrap();
    assert!(row.starts_with("completed"), "{listing}");
    assert!(row.contains("25/25"), "{listing}");
}

/// A child's output lines, as they come.
fn lines_of(child: &mut Child) -> (mpsc::Receiver<String>, mpsc::Receiver<String>) {
    let pipe = |r: Box<dyn std::io::Read + Send>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        rx
    };
    (
        pipe(Box::new(child.stdout.take().unwrap())),
        pipe(Box::new(child.stderr.take().unwrap())),
    )
}

/// Lines from `rx` into `into` until `done` (bounded).
fn read_until(
    rx: &mpsc::Receiver<String>,
    into: &mut Vec<String>,
    done: impl Fn(&[String]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while !done(into) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => into.push(line),
            Err(e) => panic!("waiting: {e}; so far:\n{}", into.join("\n")),
        }
    }
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    out
}

#[test]
fn a_dropped_connection_resumes_and_a_killed_client_attaches_again_with_no_gap_and_no_duplicate() {
    let Some(sshd) = Sshd::start() else { return };
    let root = tempfile::tempdir().unwrap();
    // long enough (400 × 60 ms) that the run outlasts a reconnection on a
    // loaded machine: a run that ended first closed the client's output
    // before the genomes after the reconnection were read
    let task = slow_task(root.path(), 0.06);
    let dir = detach(root.path(), &task, 400, &[], &[]);
    let _reap = Reap(dir.clone());
    wait_for_genomes(&dir, 3);
    let mut first = sshd
        .galapagos()
        .args(["attach", &sshd.target(&dir), "--verbose"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, err) = lines_of(&mut first);
    let mut seen = Vec::new();
    let count = |lines: &[String]| genome_lines(&lines.join("\n")).len();
    read_until(&out, &mut seen, |l| count(l) >= 6);
    // the connection drops: its ssh is killed (a process this test started,
    // through attach, by its pid)
    let ssh = children_of(first.id());
    assert!(!ssh.is_empty(), "attach runs ssh");
    for pid in &ssh {
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .ok();
    }
    let mut said = Vec::new();
    read_until(&err, &mut said, |l| {
        l.iter().any(|s| s.starts_with("reconnected"))
    });
    assert!(
        said.iter()
            .any(|s| s.contains("resumed where the stream left off")),
        "{said:?}"
    );
    let before = count(&seen);
    read_until(&out, &mut seen, |l| count(l) >= before + 5);
    // then the client is killed mid-run
    first.kill().unwrap();
    first.wait().unwrap();
    while let Ok(line) = err.recv_timeout(Duration::from_millis(200)) {
        said.push(line);
    }
    let ids = genome_lines(&seen.join("\n"));
    assert_eq!(
        ids,
        (0..ids.len() as u64).collect::<Vec<_>>(),
        "the first client, across its reconnection: {said:?}"
    );
    assert!(
        !said.iter().any(|s| s.contains("received twice")),
        "{said:?}"
    );
    assert!(
        genomes(&dir) < 401,
        "the run was still going when the client died"
    );
    // attached again: the whole run, each genome once
    let o = finish(
        {
            let mut c = sshd.galapagos();
            c.args(["attach", &sshd.target(&dir), "--verbose"]);
            c
        },
        Duration::from_secs(600),
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let n = genomes(&dir);
    assert_eq!(
        genome_lines(&stdout),
        (0..n).collect::<Vec<_>>(),
        "{}",
        text(&o)
    );
    assert_eq!(summary_genomes(&stdout), n);
}

fn steer(sshd: &Sshd, dir: &Path, args: &[&str]) -> String {
    let mut c = sshd.galapagos();
    c.args(["steer", &sshd.target(dir)]).args(args);
    let o = finish(c, Duration::from_secs(300));
    assert!(o.status.success(), "steer {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_live_run_on_the_server_is_paused_noted_pinned_resumed_and_stopped_over_ssh() {
    let Some(sshd) = Sshd::start() else { return };
    let root = tempfile::tempdir().unwrap();
    let task = slow_task(root.path(), 0.03);
    let dir = detach(root.path(), &task, 100_000, &[], &[]);
    let _reap = Reap(dir.clone());
    wait_for_genomes(&dir, 3);
    let said = steer(&sshd, &dir, &["--pause"]);
    assert!(said.contains("state: paused"), "{said}");
    // the pause holds: at most the iteration in flight is admitted, then
    // nothing for a while
    let paused_at = genomes(&dir);
    std::thread::sleep(Duration::from_secs(2));
    let settled = genomes(&dir);
    assert!(settled <= paused_at + 1, "{paused_at} -> {settled}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(genomes(&dir), settled, "nothing is admitted while paused");
    const NOTE: &str = "NOTE-7781: prefer constants near 2.5";
    let said = steer(&sshd, &dir, &["--notes", NOTE, "--pin", "0", "--resume"]);
    assert!(said.contains("state: running"), "{said}");
    assert!(said.contains("pinned: #0"), "{said}");
    assert!(said.contains(NOTE), "{said}");
    wait_for_genomes(&dir, settled + 4);
    let said = steer(&sshd, &dir, &["--stop"]);
    assert!(said.contains("pinned: #0"), "{said}");
    assert!(said.contains("state: stopped"), "{said}");
    // the notes reached the prompts after they were given, not before
    let export = root.path().join("export.jsonl");
    let mut c = sshd.galapagos();
    c.args(["export-run", "--jsonl", &sshd.target(&dir), "--out"])
        .arg(&export);
    let o = finish(c, Duration::from_secs(300));
    assert!(o.status.success(), "{}", text(&o));
    let genomes: Vec<serde_json::Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(genomes.len() as u64 > settled + 3);
    let prompt = |g: &serde_json::Value| g["prompt"]["user"].as_str().unwrap_or("").to_owned();
    for g in &genomes {
        let id = g["id"].as_u64().unwrap();
        if id > 0 && id < paused_at {
            assert!(
                !prompt(g).contains(NOTE),
                "genome {id} came before the notes"
            );
        }
        if id > settled + 1 && g["metadata"]["patch_type"] != "initial" {
            assert!(prompt(g).contains(NOTE), "genome {id}: {}", prompt(g));
        }
    }
    // the run ended as stopped; attach says so
    let mut c = sshd.galapagos();
    c.args(["attach", &sshd.target(&dir), "--quiet"]);
    let o = finish(c, Duration::from_secs(300));
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("status:      stopped"));
}

#[test]
fn the_model_key_lives_on_the_server_and_reaches_nothing_the_client_has() {
    let Some(sshd) = Sshd::start() else { return };
    let root = tempfile::tempdir().unwrap();
    let task = slow_task(root.path(), 0.03);
    // the model echoes the key into the program it proposes, which prints
    // it when it runs
    let program = format!(
        "# EVOLVE-BLOCK-START\nA = 2.5\nB = -1.25\nC = 0.75\nSHIFT = 0.0\n# EVOLVE-BLOCK-END\n\
         # {SECRET}\ndef run():\n    print('echo {SECRET}')\n    return [A, B, C, SHIFT]\n"
    );
    let server = ModelServer::start(&format!("```python\n{program}\n```"));
    let api_base = format!("http://127.0.0.1:{}/v1", server.port);
    let dir = detach(
        root.path(),
        &task,
        100_000,
        &["--api-base", &api_base, "--model", "echo-coder"],
        &[("OPENAI_API_KEY", SECRET)],
    );
    let _reap = Reap(dir.clone());
    wait_for_genomes(&dir, 4);
    let client_dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    let mut run = |args: Vec<String>| {
        let mut c = sshd.galapagos();
        c.args(&args)
            .current_dir(client_dir.path())
            .env("HOME", client_dir.path())
            .env_remove("OPENAI_API_KEY");
        let o = finish(c, Duration::from_secs(300));
        let t = text(&o);
        assert!(o.status.success() || args[0] == "attach", "{args:?}: {t}");
        outputs.push(t);
    };
    let target = sshd.target(&dir);
    run(vec!["steer".into(), target.clone(), "--pause".into()]);
    run(vec!["runs".into(), sshd.target(&root.path().join("runs"))]);
    let export = client_dir.path().join("export.jsonl");
    run(vec![
        "export-run".into(),
        "--jsonl".into(),
        target.clone(),
        "--out".into(),
        export.display().to_string(),
    ]);
    run(vec![
        "apply".into(),
        target.clone(),
        "--genome".into(),
        "2".into(),
        "--to".into(),
        client_dir.path().join("applied").display().to_string(),
    ]);
    run(vec!["steer".into(), target.clone(), "--stop".into()]);
    run(vec!["attach".into(), target, "--verbose".into()]);
    // the record on the server has it redacted (the run's redactor) ...
    let exported = std::fs::read_to_string(&export).unwrap();
    assert!(
        exported.contains("[redacted: $OPENAI_API_KEY]"),
        "the model did echo the key into the record: {exported}"
    );
    // ... and nothing the client printed, wrote or kept holds it
    for t in &outputs {
        assert!(!t.contains(SECRET), "the key reached the client: {t}");
    }
    let leaked = files_containing(client_dir.path(), SECRET.as_bytes());
    assert!(leaked.is_empty(), "the key reached {leaked:?}");
    let leaked = files_containing(&dir, SECRET.as_bytes());
    assert!(
        leaked.is_empty(),
        "the key reached the run folder: {leaked:?}"
    );
    assert!(!server.bodies().is_empty());
}
