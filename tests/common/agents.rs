//! Real coding agents for the proposer's tests: installed from their
//! package registries (PyPI into a venv, npm into a prefix of its own)
//! under `GALAPAGOS_AGENTS_DIR` (where `.ci/run` installs them) or the
//! target dir, and a run of a shipped agent card on the built-in
//! repository task against a scripted upstream, with the checks every
//! agent's test makes: the children are scored, their tokens and cost are
//! the scripted usage priced by the run's table, the key is nowhere.
//!
//! Under CI=true an agent that cannot be installed or run fails the test;
//! elsewhere the test says so and passes without running.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::scripted_upstream::ScriptedUpstream;

/// The key the run holds (the agent must never see it).
pub const SECRET: &str = "sk-real-agents-DO-NOT-LEAK-77f0e2d41b";
/// The usage every scripted reply reports.
pub const PROMPT_TOKENS: u64 = 100;
pub const COMPLETION_TOKENS: u64 = 20;
/// The run's prices of the scripted model, USD per million tokens.
pub const PROMPT_PRICE: f64 = 3.0;
pub const COMPLETION_PRICE: f64 = 15.0;
/// The model name the run is given.
pub const MODEL: &str = "scripted-coder";

fn root() -> PathBuf {
    std::env::var_os("GALAPAGOS_AGENTS_DIR").map_or_else(
        || Path::new(env!("CARGO_TARGET_TMPDIR")).join("agents"),
        PathBuf::from,
    )
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "{cmd:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// None after saying why, or a panic under CI.
fn unavailable(what: &str, why: &str) -> Option<PathBuf> {
    assert!(!in_ci(), "{what}: {why}");
    eprintln!("skipped: {what}: {why}");
    None
}

/// The bin dir of the venv of `package` with its command `exe`, installed
/// from PyPI when missing.
pub fn pypi(package: &str, exe: &str) -> Option<PathBuf> {
    let venv = root().join(package);
    let bin = venv.join("bin");
    if bin.join(exe).is_file() {
        return Some(bin);
    }
    let installed = run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
        .and_then(|_| run(Command::new(bin.join("pip")).args(["install", "--quiet", package])));
    match installed {
        Ok(_) => Some(bin),
        Err(e) => unavailable(&format!("cannot install {package} from PyPI"), &e),
    }
}

/// The bin dir (`node_modules/.bin`) of the npm package `package`,
/// installed into `dir` (under the agents' root) when missing, with its
/// command `exe` shown to run (`exe --version`).
pub fn npm(package: &str, dir: &str, exe: &str) -> Option<PathBuf> {
    let prefix = root().join(dir);
    let bin = prefix.join("node_modules").join(".bin");
    if !bin.join(exe).exists() {
        let installed = run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(package));
        if let Err(e) = installed {
            return unavailable(&format!("cannot install {package} from npm"), &e);
        }
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    match run(Command::new(bin.join(exe))
        .arg("--version")
        .env("PATH", path)
        .stdin(Stdio::null()))
    {
        Ok(version) => {
            eprintln!("{package}: {}", version.trim());
            Some(bin)
        }
        Err(e) => unavailable(&format!("{package} does not run here"), &e),
    }
}

/// The built-in card `name`, changed by `edit`, written into `dir`.
pub fn card(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("cards/{name}.yaml")),
    )
    .unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, edit(yaml)).unwrap();
    path
}

/// Whether any file under `dir` holds `needle`.
pub fn contains(dir: &Path, needle: &str) -> bool {
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

/// The new second weight of the `n`th model request, different for each.
pub fn new_weights(n: usize) -> String {
    format!("WEIGHTS = [0.40, {:.2}]", 0.75 + 0.05 * n as f64)
}

/// Run `card` for `iterations` with the agent's `bin` first on PATH
/// against `upstream` (`provider` names its protocol's preset), prices of
/// the scripted model in the user's settings, and check what every
/// agent's run must show: each child is the agent's finished edit, scored;
/// its tokens and cost are the scripted usage of its requests priced by
/// the table; every request is a step; the relay, not the agent, sent the
/// key; the key is in no output, no file of the run folder (transcripts,
/// genomes, logs) and no archive of the run; no workspace is left.
pub fn run_and_check(
    card: &Path,
    bin: &Path,
    upstream: &ScriptedUpstream,
    provider: Option<&str>,
    iterations: u64,
) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let settings = home.join(".config/galapagos");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        serde_json::json!({"prices": {MODEL: {
            "prompt_per_million": PROMPT_PRICE, "completion_per_million": COMPLETION_PRICE}}})
        .to_string(),
    )
    .unwrap();
    let out = dir.path().join("runs");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", &home)
        .env("PATH", &path)
        .env("GALAPAGOS_AGENT_KEY", SECRET)
        .stdin(Stdio::null())
        .arg("run")
        .arg(card)
        .args(["--task", "fit_package", "--quiet", "--iterations"])
        .arg(iterations.to_string())
        .arg("--out")
        .arg(&out);
    if let Some(p) = provider {
        cmd.args(["--provider", p]);
    }
    let o = cmd
        .args(["--api-base", &upstream.base_url()])
        .args(["--model", MODEL])
        .args(["--api-key-env", "GALAPAGOS_AGENT_KEY"])
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
    let genomes: Vec<Value> = std::fs::read_to_string(run_dir.join("genomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let parent_score = genomes[0]["scores"]["combined_score"].as_f64().unwrap();
    let children: Vec<Value> = genomes
        .iter()
        .filter(|g| g["iteration"] != 0)
        .cloned()
        .collect();
    assert_eq!(children.len() as u64, iterations, "{genomes:#?}");
    let mut steps = 0;
    for g in &children {
        let agent = &g["agent"];
        assert_eq!(agent["exit"]["kind"], "finished", "{g:#}");
        assert_eq!(g["valid"], true, "scored: {g:#}");
        let score = g["scores"]["combined_score"].as_f64().unwrap();
        assert!(
            (score - parent_score).abs() > 1e-9,
            "the edit changed the score of the initial program: {g:#}"
        );
        assert!(
            g["diff"].as_str().unwrap().contains("+WEIGHTS = [0.40, 0."),
            "the scripted edit: {g:#}"
        );
        let n = agent["steps"].as_array().unwrap().len() as u64;
        assert!(n >= 1, "{g:#}");
        steps += n;
        assert_eq!(g["usage"]["prompt_tokens"], n * PROMPT_TOKENS, "{g:#}");
        assert_eq!(
            g["usage"]["completion_tokens"],
            n * COMPLETION_TOKENS,
            "{g:#}"
        );
        let cost = n as f64
            * (PROMPT_TOKENS as f64 * PROMPT_PRICE + COMPLETION_TOKENS as f64 * COMPLETION_PRICE)
            / 1e6;
        let billed = g["usage"]["cost_usd"].as_f64().unwrap();
        assert!(
            (billed - cost).abs() < 1e-12,
            "cost {billed} ≠ {cost}: {g:#}"
        );
        let said = format!("{}{}", agent["stdout"], agent["stderr"]);
        assert!(!said.contains("[redacted"), "the agent saw the key: {said}");
    }
    assert_eq!(steps, upstream.model_requests(), "every request is a step");
    // The relay added the real key; the agent sent only its token.
    for r in upstream.received() {
        let auth = r
            .header("authorization")
            .or_else(|| r.header("x-api-key"))
            .unwrap_or("");
        assert!(auth.contains(SECRET), "{r:?}");
    }
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(!contains(&run_dir, SECRET), "the key is in the run folder");
    let export = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .env("HOME", &home)
        .args(["export-run", "--jsonl"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let exported = String::from_utf8_lossy(&export.stdout);
    assert!(export.status.success(), "{exported}");
    assert!(
        exported.contains("\"agent\""),
        "the export has the agent records"
    );
    assert!(!exported.contains(SECRET), "the key is in the run's export");
    assert_eq!(
        std::fs::read_dir(run_dir.join("agent-workspaces"))
            .unwrap()
            .count(),
        0,
        "no workspace is left"
    );
    children
}
