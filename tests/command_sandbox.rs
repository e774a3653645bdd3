#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The command evaluator's sandbox, through `galapagos run`: the command
//! cannot read the user's home, write outside its results, reach the
//! machine's network or leave a process behind. The same probes without the
//! sandbox (`sandbox: none`) show each of them possible, so the probes work.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use galapagos::engine::archive::read_genomes;

/// The pids of processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// Run one iteration of a command-evaluator task whose `evaluate.sh` probes
/// the sandbox; its scores (1: the probe got through).
fn probe(sandbox: &str, marker: &str) -> BTreeMap<String, f64> {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    let key = home.path().join(".ssh/id_ed25519");
    std::fs::write(&key, "PRIVATE KEY\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tempfile::tempdir().unwrap();
    let script = format!(
        r#"#!/bin/sh
# $1: the program, $2: the results dir
ssh=0; cat '{key}' >/dev/null 2>&1 && ssh=1
task=0; (echo '# changed' >> '{task}/evaluate.sh') 2>/dev/null && task=1
outside=0; (echo x > '{task}/new_file') 2>/dev/null && outside=1
net=$(python3 -c 'import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3); print(1)
except OSError:
    print(0)')
python3 -c 'import os, sys, time
if os.fork(): os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
open(sys.argv[2], "w").close()
time.sleep(120)' {marker} "$2/started" </dev/null >/dev/null 2>&1 &
i=0; while [ ! -e "$2/started" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
started=0; [ -e "$2/started" ] && started=1
echo "{{\"combined_score\": 1, \"ssh\": $ssh, \"task\": $task, \"outside\": $outside, \"net\": $net, \"started\": $started}}" > "$2/metrics.json"
"#,
        key = key.display(),
        task = task.path().display(),
    );
    std::fs::write(task.path().join("initial_program.txt"), "x\n").unwrap();
    let evaluate = task.path().join("evaluate.sh");
    std::fs::write(&evaluate, &script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&evaluate, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runs = tempfile::tempdir().unwrap();
    let card = runs.path().join("card.yaml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"),
    )
    .unwrap()
    .replace(
        "  kind: subprocess\n  timeout_secs: 60.0\n",
        &format!(
            "  kind: command\n  argv: [./evaluate.sh]\n  timeout_secs: 60.0\n  sandbox: {sandbox}\n"
        ),
    );
    std::fs::write(&card, &text).unwrap();
    // Without the sandbox the command runs as the user, as root here: the
    // user's own card needs the consent then (`engine::consent`).
    let hash = galapagos::engine::card::Card::from_yaml(
        &text,
        "card.yaml",
        &galapagos::engine::registry::Registry::builtin(),
    )
    .unwrap()
    .hash();
    let consent: &[&str] = if sandbox == "none" {
        &["--consent", &hash, "--allow", "evaluator.sandbox=none"]
    } else {
        &[]
    };
    let out = runs.path().join("runs");
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("run")
        .arg(&card)
        .arg("--task")
        .arg(task.path())
        .args(["--iterations", "1", "--quiet", "--out"])
        .arg(&out)
        .args(consent)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap();
    let genomes = read_genomes(&run.path().join("genomes.jsonl")).unwrap();
    let mut scores: BTreeMap<String, f64> = genomes[0].scores.clone().into_iter().collect();
    let intact = std::fs::read_to_string(&evaluate).unwrap() == script;
    scores.insert("task_intact".to_owned(), f64::from(u8::from(intact)));
    scores
}

#[test]
fn a_sandboxed_command_cannot_read_home_write_outside_reach_the_network_or_linger() {
    if which("bwrap").is_none() {
        panic!("bubblewrap (`bwrap`) is not installed: the sandbox cannot be tested");
    }
    let free = "galapagos-sandbox-test-marker-none";
    let open = probe("none", free);
    for key in ["ssh", "task", "outside", "net"] {
        assert_eq!(
            open.get(key),
            Some(&1.0),
            "without the sandbox, {key}: {open:?}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(free).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = processes_with(free);
    assert!(
        !left.is_empty(),
        "without the sandbox, a process stays: {open:?}"
    );
    for pid in left {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }

    let marker = "galapagos-sandbox-test-marker-bwrap";
    let jailed = probe("bwrap", marker);
    assert_eq!(jailed.get("combined_score"), Some(&1.0), "{jailed:?}");
    for key in ["ssh", "task", "outside", "net"] {
        assert_eq!(
            jailed.get(key),
            Some(&0.0),
            "in the sandbox, {key}: {jailed:?}"
        );
    }
    assert_eq!(
        jailed.get("task_intact"),
        Some(&1.0),
        "evaluate.sh unchanged"
    );
    assert_eq!(
        jailed.get("started"),
        Some(&1.0),
        "the double-forked process ran: {jailed:?}"
    );
    // Give a leftover time to show up: none does.
    std::thread::sleep(Duration::from_millis(500));
    let left = processes_with(marker);
    for pid in &left {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
