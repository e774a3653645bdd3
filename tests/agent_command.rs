#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The coding-agent proposer through the command line, on the built-in
//! repository task `fit_package`: a kill -9 of the run during a proposal,
//! then `galapagos resume`; a hostile agent, against a scripted model
//! endpoint on loopback behind the run's relay.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Processes whose command line holds `mark`.
fn processes_with(mark: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
        })
        .count()
}

/// Wait (up to `secs`) until `done` holds.
fn wait_for(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "waited {secs} s for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A card whose agent is `script` under /bin/sh, with `env` passed by name
/// (and `extra` lines of the proposer's).
fn card(dir: &Path, script: &str, env: &[&str]) -> PathBuf {
    card_with(dir, script, env, "")
}

fn card_with(dir: &Path, script: &str, env: &[&str], extra: &str) -> PathBuf {
    let yaml = format!(
        "name: agent_script\nnamespace: user\nsummary: a script as the agent\n\
         population:\n  kind: in_memory\n\
         selection_policy:\n  kind: identity\n\
         prompt_builder:\n  kind: default\n\
         proposer:\n  kind: agent_command\n  command: [/bin/sh, -c, {script:?}, agent]\n  timeout_secs: 300\n  env: {env:?}\n{extra}\
         evaluator:\n  kind: subprocess\n  timeout_secs: 60\n\
         memory:\n  kind: none\n\
         general:\n  max_iterations: 2\n  parallel: 1\n"
    );
    let path = dir.join("agent_script.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", home)
        .stdin(Stdio::null());
    c
}

fn genomes(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_run_killed_during_an_agent_proposal_leaves_no_process_and_resume_redoes_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // Told to hang, the agent leaves a survivor in a session of its own and
    // never ends; told to edit, it changes a weight.
    // The sleeps' lengths are this test process's own marks: another run
    // of this test on the machine (another checkout's) has other ones.
    let (survivor, sleeper) = (
        format!("955.{}1", std::process::id()),
        format!("955.{}2", std::process::id()),
    );
    let script = format!(
        "if [ \"$AGENT_MODE\" = hang ]; then setsid sleep {survivor} & sleep {sleeper}; fi; \
         sed -i 's/0.40, 0.70/0.40, 0.71/' fitpkg/model.py"
    );
    let card = card(dir.path(), &script, &["AGENT_MODE"]);
    let out = dir.path().join("runs");
    let mut run = galapagos(&home)
        .arg("run")
        .arg(&card)
        .args(["--task", "fit_package", "--quiet", "--out"])
        .arg(&out)
        .env("AGENT_MODE", "hang")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its workspace, then its processes (this run's: the workspace is
    // named in their working dir).
    let workspace_made = || {
        std::fs::read_dir(&out).is_ok_and(|mut runs| {
            runs.any(|r| {
                r.is_ok_and(|r| {
                    std::fs::read_dir(r.path().join("agent-workspaces"))
                        .is_ok_and(|mut w| w.next().is_some())
                })
            })
        })
    };
    wait_for(120, "the agent to start", || {
        workspace_made() && processes_with(&survivor) > 0 && processes_with(&sleeper) > 0
    });
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let workspaces = run_dir.join("agent-workspaces");
    assert_eq!(
        std::fs::read_dir(&workspaces).unwrap().count(),
        1,
        "the proposal's workspace"
    );
    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();
    // The agent's processes die with the run: none is left.
    wait_for(30, "the agent's processes to die with the run", || {
        processes_with(&survivor) == 0 && processes_with(&sleeper) == 0
    });

    let resumed = galapagos(&home)
        .arg("resume")
        .arg(&run_dir)
        .arg("--quiet")
        .env("AGENT_MODE", "edit")
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(
        std::fs::read_dir(&workspaces).unwrap().count(),
        0,
        "no workspace is left"
    );
    // The proposal the kill interrupted was made again, and its child scored.
    let all = genomes(&run_dir);
    let first = all
        .iter()
        .find(|g| g["iteration"] == 1)
        .unwrap_or_else(|| panic!("iteration 1 was redone: {all:?}"));
    assert_eq!(first["valid"], true, "{first}");
    assert_eq!(first["agent"]["exit"]["kind"], "finished", "{first}");
    assert!(first["diff"].as_str().unwrap().contains("0.71"), "{first}");
    assert_eq!(all.iter().filter(|g| g["iteration"] == 1).count(), 1);
}

/// The run's key, in the run's environment only.
const SECRET: &str = "sk-agent-test-DO-NOT-LEAK-5a3c9e1f";

#[test]
fn a_hostile_agent_is_contained_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // A port of the machine's loopback the agent must not reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // (What it prints on success is spelled apart in the script, which its
    // own /proc dump shows.)
    // It dumps its environment and every environment /proc shows it, tries
    // the loopback port and an outside address, writes outside its
    // workspace, leaves a survivor, then makes an edit.
    let script = format!(
        r#"
echo "== env"; env
echo "== proc"; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f"; echo; done 2>/dev/null
echo "== proc ids"; ls /proc | grep -E '^[0-9]+$' | tr '\n' ' '; echo
if timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null; then echo "REACHED-""LOOPBACK"; fi
if timeout 5 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' 2>/dev/null; then echo "REACHED-""OUTSIDE"; fi
for f in {outside}/escaped /etc/galapagos-escaped /tmp/escaped /var/tmp/escaped; do
  if (echo x > "$f") 2>/dev/null; then echo "WRO""TE $f"; fi
done
setsid sleep 933.5 > /dev/null 2>&1 &
for i in $(seq 1000); do
  curl -s -o /dev/null -w '%{{http_code}}\n' -H "Authorization: Bearer $OPENAI_API_KEY" \
    -H 'Content-Type: application/json' -d '{{"model":"agent-test-model","messages":[{{"role":"user","content":"hi"}}]}}' \
    "$OPENAI_BASE_URL/chat/completions"
done | sort | uniq -c | sed 's/^ */CODES /'
sed -i 's/0.40, 0.70/0.40, 0.72/' fitpkg/model.py
echo done
"#,
        outside = outside.display()
    );
    // The relay's cap: two replies of 60 tokens reach it. A request holds
    // its prompt as every byte of its body (73) and 512 more until its
    // usage is known: after two replies (120 tokens) the 680-token cap
    // leaves 560, too few for a third. The model is unpriced: no cost cap.
    let upstream = common::scripted_upstream::ScriptedUpstream::start(vec![
        common::scripted_upstream::Turn::text("hello", 50, 10),
    ]);
    let card = card_with(
        dir.path(),
        &format!("exec bash -c {}", shell_quote(&script)),
        &[],
        "  max_tokens: 680\n  max_cost_usd: null\n",
    );
    let out = dir.path().join("runs");
    let o = galapagos(&home)
        .arg("run")
        .arg(&card)
        .args([
            "--task",
            "fit_package",
            "--quiet",
            "--iterations",
            "2",
            "--out",
        ])
        .arg(&out)
        .args([
            "--api-base",
            &upstream.base_url(),
            "--model",
            "agent-test-model",
            "--api-key-env",
            "GALAPAGOS_AGENT_TEST_KEY",
        ])
        .env("GALAPAGOS_AGENT_TEST_KEY", SECRET)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let all = genomes(&run_dir);
    let children: Vec<&serde_json::Value> = all.iter().filter(|g| g["iteration"] != 0).collect();
    assert_eq!(children.len(), 2, "the run went on: {all:?}");
    for g in &children {
        let agent = &g["agent"];
        let said = agent["stdout"].as_str().unwrap();
        assert!(said.contains("== env") && said.contains("PATH="), "{said}");
        assert!(said.trim_end().ends_with("done"), "{said}");
        // Its own processes only: the pid namespace shows a handful.
        let ids = said
            .lines()
            .skip_while(|l| *l != "== proc ids")
            .nth(1)
            .unwrap();
        assert!(ids.split_whitespace().count() < 12, "{ids}");
        for bad in [
            "REACHED-LOOPBACK",
            "REACHED-OUTSIDE",
            "WROTE ",
            "[redacted",
            SECRET,
        ] {
            assert!(!said.contains(bad), "{bad} in the agent's output: {said}");
        }
        assert_eq!(g["valid"], true, "{g}");
        assert!(g["diff"].as_str().unwrap().contains("0.72"), "{g}");
        // 1,000 requests: two answered, then refused at its token cap.
        let steps = agent["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 1000, "{said}");
        let refused = steps.iter().filter(|s| s["refused"].is_string()).count();
        assert_eq!(refused, 998, "{said}");
        assert!(said.contains("CODES 2 200"), "{said}");
        assert_eq!(g["usage"]["prompt_tokens"], 100, "{g}");
        assert_eq!(g["usage"]["completion_tokens"], 20, "{g}");
    }
    assert_eq!(
        upstream.model_requests(),
        4,
        "two per proposal, the rest refused"
    );
    assert!(
        listener.accept().is_err(),
        "the agent connected to the machine's loopback"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!Path::new("/etc/galapagos-escaped").exists());
    wait_for(30, "the survivors to die", || processes_with("933.5") == 0);
    // The key is in nothing the run wrote or printed.
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(!contains(&run_dir, SECRET), "the key is in the run folder");
}

/// `text` as one single-quoted shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Whether any file under `dir` holds `needle`.
fn contains(dir: &Path, needle: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            let p = e.path();
            if p.is_dir() {
                contains(&p, needle)
            } else {
                std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            }
        })
}

/// The bridge's lifeline: when the pipe on its stdin closes (its run is
/// gone, however it ended), the bridge stops the agent and exits, without
/// waiting for a parent-death signal.
#[test]
fn the_bridge_stops_the_agent_when_its_lifeline_closes() {
    let mark = format!("956.{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("prompt.md");
    std::fs::write(&prompt, "the prompt\n").unwrap();
    let seen = dir.path().join("seen");
    let script = format!("cat > {}; sleep {mark}", seen.display());
    let mut bridge = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("agent-bridge")
        .arg("--stdin")
        .arg(&prompt)
        .args(["--", "/bin/sh", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The agent reads the prompt's file as its stdin, then sleeps.
    wait_for(60, "the agent to read its stdin and sleep", || {
        std::fs::read_to_string(&seen).is_ok_and(|t| t == "the prompt\n")
            && processes_with(&format!("sleep {mark}")) > 0
    });
    drop(bridge.stdin.take()); // the run's end of the lifeline
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = bridge.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the bridge outlived its lifeline"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(137));
    wait_for(30, "the agent to be stopped", || processes_with(&mark) == 0);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut bridge.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("the run is gone"), "{err}");
}

/// The size of the files under `dir` (links not followed), in bytes.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => bytes_under(&e.path()),
                Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                _ => 0,
            })
            .sum()
    })
}

/// An agent that writes 200 MiB into its workspace and 200 MiB into
/// `.galapagos/out/` under a 64 MiB `write_quota_mib`: both writes fail with
/// "no space", nothing of it reaches the machine's disk (the run folder,
/// where the workspaces live, stays small while the agent waits after its
/// writes), and the genome's error names the quota and the key that raises
/// it.
#[test]
fn an_agent_cannot_write_past_its_write_quota() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mark = format!("957.{}", std::process::id());
    let script = format!(
        "dd if=/dev/zero of=big bs=1M count=200 status=none || echo WORKSPACE-FULL; \
         dd if=/dev/zero of=.galapagos/out/big bs=1M count=200 status=none || echo OUT-FULL; \
         sleep {mark}; exit 1"
    );
    let card = card_with(dir.path(), &script, &[], "  write_quota_mib: 64\n");
    let out = dir.path().join("runs");
    let mut run = galapagos(&home)
        .arg("run")
        .arg(&card)
        .args([
            "--task",
            "fit_package",
            "--quiet",
            "--iterations",
            "1",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the agent has written all it could, what the run folder (and
    // the agent's workspace in it) holds on the machine's disk.
    let sleeper = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&format!("sleep\0{mark}")))
            })
            .and_then(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
    };
    wait_for(300, "the agent to finish writing", || sleeper().is_some());
    let on_disk = bytes_under(&out);
    // The agent's own sleep, by its pid: the agent then exits (and is run
    // again, as a failed proposal is, until the run gives up).
    let deadline = Instant::now() + Duration::from_secs(600);
    while run.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run did not end");
        if let Some(pid) = sleeper() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        on_disk < 16 << 20,
        "the agent's writes reached the machine's disk: {} MiB in the run folder",
        on_disk >> 20
    );
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let all = genomes(&run_dir);
    let child = all
        .iter()
        .find(|g| g["iteration"] == 1)
        .unwrap_or_else(|| panic!("no child: {all:?}"));
    let said = child["agent"]["stdout"].as_str().unwrap();
    assert!(
        said.contains("WORKSPACE-FULL") && said.contains("OUT-FULL"),
        "the writes past the quota succeeded: {child}"
    );
    let stderr_kept = child["agent"]["stderr"].as_str().unwrap();
    assert!(
        stderr_kept.contains("No space left on device"),
        "{stderr_kept}"
    );
    let error = child["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("exceeded the 64 MiB writable-space quota")
            && error.contains("write_quota_mib"),
        "the genome's error does not name the quota and its key: {child}"
    );
}
