//! The second line of defence for secrets, through real runs: with the
//! sandbox switched off (`evaluator.sandbox: none`), a candidate CAN find the
//! model key (in the run's own environment, through /proc) and print it; a
//! model can echo credentials it saw in the endpoint URL. Whatever a
//! candidate or a model does with them, their values appear nowhere in the
//! run folder, in the command's output or in any request the model server
//! received: the run's redactor replaces them at the archive writer, the
//! event sink and the request.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::path::Path;
use std::process::Command;

use common::hostile::{Hostile, ModelServer, Outcome, SECRET, files_containing};

/// Finds the key in the environment of the processes it descends from (the
/// run's, through /proc), else in any it can read, and prints it to stdout
/// and stderr, and puts it in an error. (Its ancestors first: on a shared
/// machine another run's agent may hold a key of the same name.)
const LEAK_THE_KEY: &str = r#"import glob, os, sys

def ancestors():
    pid = os.getpid()
    while pid > 1:
        yield f"/proc/{pid}/environ"
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return

def key_in(paths):
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        for item in data.split(b"\0"):
            if item.startswith(b"OPENAI_API_KEY="):
                return item.decode().split("=", 1)[1]
    return None

def run():
    found = key_in(ancestors()) or key_in(glob.glob("/proc/[0-9]*/environ"))
    print(f"stolen key: {found}")
    print(f"stolen key on stderr: {found}", file=sys.stderr)
    if found is None:
        return 0.1
    return 0.75
"#;

/// The marker the redactor puts where the key was.
const MARKER: &str = "[redacted: $OPENAI_API_KEY]";

#[test]
fn a_key_a_candidate_prints_is_redacted_from_the_run_folder_the_output_and_the_prompts() {
    let hostile = Hostile::new();
    // best_of_n keeps a parent for 5 children, then moves to the best: a
    // child, whose output is then shown to the model.
    let outcome = hostile.run(LEAK_THE_KEY, "sandbox: none", 7);
    assert!(outcome.success, "{}\n{}", outcome.stdout, outcome.stderr);
    let children = outcome.children();
    assert!(children.len() >= 7, "{}", outcome.stderr);
    // Once the parent is the attack itself, the same reply is a no-op.
    let ran: Vec<_> = children.iter().filter(|c| c["valid"] == true).collect();
    assert!(ran.len() >= 5, "{}", outcome.stderr);
    for child in ran {
        let evidence = Outcome::evidence(child);
        // The attack worked (no sandbox): the key was found and printed...
        assert_eq!(child["scores"]["combined_score"], 0.75, "{evidence}");
        // ... and what was recorded has the marker in its place.
        assert!(
            evidence.contains(&format!("stolen key: {MARKER}"))
                && evidence.contains(&format!("stolen key on stderr: {MARKER}")),
            "{evidence}"
        );
    }
    // The stolen key was shown to the model as evaluator feedback: redacted.
    assert!(
        outcome
            .requests
            .iter()
            .any(|b| b.contains("stolen key: [redacted: $OPENAI_API_KEY]")),
        "the feedback reached a prompt"
    );
    outcome.assert_no_secret();
}

const PASSWORD: &str = "url-password-4c8e1a";
const QUERY_KEY: &str = "query-key-9d2b7f";

#[test]
fn credentials_in_the_api_base_and_a_key_a_model_echoes_are_redacted_everywhere() {
    let hostile = Hostile::new();
    // The model "echoes" every credential it could have seen into the
    // program it proposes, which also prints them when it runs.
    let program = format!(
        "# {SECRET} {PASSWORD} {QUERY_KEY}\n\
         def run():\n\
         \x20   print('echo {SECRET} {PASSWORD} {QUERY_KEY}')\n\
         \x20   return 0.6\n"
    );
    let server = ModelServer::start(&format!("```python\n{program}\n```"));
    let root = hostile.root.path();
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap();
    let start = base.find("evaluator:").unwrap();
    let end = base.find("memory:").unwrap();
    let card = root.join("card.yaml");
    std::fs::write(
        &card,
        format!(
            "{}evaluator: {{kind: subprocess, timeout_secs: 20.0, sandbox: none}}\n{}",
            &base[..start],
            &base[end..]
        ),
    )
    .unwrap();
    let out = root.join("runs");
    let api_base = format!(
        "http://galapagos:{PASSWORD}@127.0.0.1:{}/v1?api-key={QUERY_KEY}",
        server.port
    );
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("run")
        .arg(&card)
        .arg("--task")
        .arg(&hostile.task)
        .args(["--iterations", "3"])
        .args(["--api-base", &api_base, "--model", "echo-coder"])
        .arg("--out")
        .arg(&out)
        .args(common::consent_flags(&card, &hostile.task))
        .env("OPENAI_API_KEY", SECRET)
        .env("HOME", &hostile.home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .current_dir(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    // The endpoint is named, without its credentials.
    assert!(
        stdout.contains("echo-coder @ http://[redacted]@127.0.0.1")
            && stdout.contains("api-key=[redacted]"),
        "{stdout}"
    );
    let jsonl = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("genomes.jsonl"))
        .find(|p| p.exists())
        .unwrap();
    let genomes = std::fs::read_to_string(&jsonl).unwrap();
    assert!(
        genomes.contains("[redacted: the api_base password]")
            && genomes.contains("[redacted: the api_base `api-key` parameter]")
            && genomes.contains(MARKER),
        "the echoed credentials were recorded, redacted: {genomes}"
    );
    let requests = server.bodies();
    assert!(requests.len() >= 3);
    for secret in [SECRET, PASSWORD, QUERY_KEY] {
        let leaked = files_containing(&out, secret.as_bytes());
        assert!(leaked.is_empty(), "{secret} reached {leaked:?}");
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} was printed"
        );
        for body in &requests {
            assert!(!body.contains(secret), "{secret} reached the model: {body}");
        }
    }
    // The parent's program and output went back to the model, redacted.
    assert!(
        requests
            .iter()
            .any(|b| b.contains("[redacted: the api_base password]"))
    );
}

/// A run gathers its key variables once, with its secrets: the model's and
/// every endpoint's in the user settings, handed to the evaluator when the
/// run builds it. An `env` entry naming another endpoint's key variable is
/// refused, and so is one holding that variable's value, though the run's
/// model is the offline one.
#[test]
fn an_endpoint_key_variable_from_the_settings_never_reaches_the_evaluator() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".config/galapagos");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        r#"{"endpoints":[{"name":"other","api_base":"http://127.0.0.1:9/v1","api_key_env":"GALAPAGOS_OTHER_KEY"}]}"#,
    )
    .unwrap();
    let task = common::temp_task(home.path());
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap();
    let start = base.find("evaluator:").unwrap();
    let end = base.find("memory:").unwrap();
    let value = "another-endpoint-key-value";
    for (listed, refused) in [
        (
            "GALAPAGOS_OTHER_KEY",
            "`GALAPAGOS_OTHER_KEY` holds a model API key",
        ),
        (
            "INNOCENT_LOOKING",
            "`INNOCENT_LOOKING` holds the same value as the model API key variable `GALAPAGOS_OTHER_KEY`",
        ),
    ] {
        let card = home.path().join("card.yaml");
        std::fs::write(
            &card,
            format!(
                "{}evaluator: {{kind: subprocess, timeout_secs: 20.0, env: [{listed}]}}\n{}",
                &base[..start],
                &base[end..]
            ),
        )
        .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
            .arg("run")
            .arg(&card)
            .arg("--task")
            .arg(&task)
            .args(["--iterations", "1", "--out"])
            .arg(home.path().join("runs"))
            .env("GALAPAGOS_OTHER_KEY", value)
            .env("INNOCENT_LOOKING", value)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{stdout}\n{stderr}");
        assert!(
            stderr.contains(refused) || stdout.contains(refused),
            "{stdout}\n{stderr}"
        );
        assert!(
            !stdout.contains(value) && !stderr.contains(value),
            "the value was printed"
        );
    }
}
