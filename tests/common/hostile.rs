//! Hostile candidates through real runs: a loopback model server that
//! answers every prompt with the same program (an attack), a task whose
//! initial program is harmless, a fake HOME with an SSH key, and the model
//! key set in the run's environment. A test runs the CLI on it and looks at
//! what the genomes recorded, what reached the run folder and what the
//! model server was sent.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The model key the run gets in its environment (`OPENAI_API_KEY`).
pub const SECRET: &str = "sk-galapagos-test-DO-NOT-LEAK-7f3a9c1e5b2d";
/// What the fake HOME's `.ssh/id_ed25519` holds.
pub const SSH_KEY: &str = "PRIVATE-SSH-KEY-MATERIAL-4b1e";

/// An OpenAI-compatible server on 127.0.0.1 that answers every chat request
/// with `reply` and keeps every request body it received.
pub struct ModelServer {
    pub port: u16,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl ModelServer {
    pub fn start(reply: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        let json = serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20}
        })
        .to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&body).into_owned());
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{json}",
                    json.len()
                );
                stream.write_all(response.as_bytes()).ok();
            }
        });
        Self { port, bodies }
    }

    /// Every request body received so far.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

/// The harmless initial program: its `run()` is the score.
pub const INITIAL: &str = "# EVOLVE-BLOCK-START\ndef run():\n    return 0.5\n# EVOLVE-BLOCK-END\n";

/// Imports the candidate and scores its `run()`.
pub const EVALUATOR: &str = r#"import importlib.util


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"combined_score": float(module.run())}
"#;

/// A task, a fake HOME and the runs' folders in one temp dir.
pub struct Hostile {
    pub root: tempfile::TempDir,
    pub task: PathBuf,
    pub home: PathBuf,
    runs: std::sync::atomic::AtomicUsize,
}

/// What a hostile run left.
pub struct Outcome {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    /// `genomes.jsonl`, one value per genome.
    pub genomes: Vec<serde_json::Value>,
    /// The run's folder (None when the run did not start).
    pub run_dir: Option<PathBuf>,
    /// Request bodies the model server received.
    pub requests: Vec<String>,
}

impl Outcome {
    /// The genomes the model proposed (not the initial program).
    pub fn children(&self) -> Vec<&serde_json::Value> {
        self.genomes
            .iter()
            .filter(|g| g["iteration"] != 0)
            .collect()
    }

    /// Every genome's stdout, stderr, traceback and error, one string.
    pub fn evidence(g: &serde_json::Value) -> String {
        let a = &g["artifacts"];
        format!(
            "error: {}\nstdout: {}\nstderr: {}\ntraceback: {}",
            g["error"].as_str().unwrap_or(""),
            a["stdout"].as_str().unwrap_or(""),
            a["stderr"].as_str().unwrap_or(""),
            a["traceback"].as_str().unwrap_or(""),
        )
    }

    /// The key is nowhere in the run folder, the output, or a request.
    pub fn assert_no_secret(&self) {
        let run_dir = self.run_dir.as_deref().expect("a run folder");
        let leaked = files_containing(run_dir, SECRET.as_bytes());
        assert!(leaked.is_empty(), "the key reached {leaked:?}");
        assert!(!self.stdout.contains(SECRET) && !self.stderr.contains(SECRET));
        for body in &self.requests {
            assert!(!body.contains(SECRET), "the key reached the model: {body}");
        }
        assert!(!self.requests.is_empty(), "the model was asked");
    }
}

/// Files under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle)) {
            found.push(path);
        }
    }
    found
}

impl Hostile {
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let task = root.path().join("task");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("initial_program.py"), INITIAL).unwrap();
        std::fs::write(task.join("evaluator.py"), EVALUATOR).unwrap();
        std::fs::write(
            task.join("README.md"),
            "Return a large number from run().\n",
        )
        .unwrap();
        let home = root.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), SSH_KEY).unwrap();
        Self {
            root,
            task,
            home,
            runs: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// [`Hostile::new`] with a shipped task (`assets/tasks/<name>`) copied
    /// in place of the harmless one.
    pub fn with_task(name: &str) -> Self {
        let hostile = Self::new();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/tasks")
            .join(name);
        std::fs::remove_dir_all(&hostile.task).unwrap();
        std::fs::create_dir_all(&hostile.task).unwrap();
        for entry in std::fs::read_dir(&shipped).unwrap().flatten() {
            if entry.path().is_file() {
                std::fs::copy(entry.path(), hostile.task.join(entry.file_name())).unwrap();
            }
        }
        hostile
    }

    /// Run `iterations` iterations of best_of_n with the evaluator
    /// parameters `evaluator` (YAML flow-map entries after `kind`), the
    /// model answering every prompt with `program` as a full rewrite.
    pub fn run(&self, program: &str, evaluator: &str, iterations: u32) -> Outcome {
        self.run_with_env(program, evaluator, iterations, &[])
    }

    /// [`Hostile::run`] with more variables in the run's environment.
    pub fn run_with_env(
        &self,
        program: &str,
        evaluator: &str,
        iterations: u32,
        env: &[(&str, &str)],
    ) -> Outcome {
        let block = format!(
            "kind: subprocess, timeout_secs: 20.0{}{evaluator}",
            if evaluator.is_empty() { "" } else { ", " }
        );
        self.run_evaluator(program, &block, iterations, env)
    }

    /// [`Hostile::run_with_env`] with the whole evaluator block given
    /// (YAML flow-map entries, `kind` included).
    pub fn run_evaluator(
        &self,
        program: &str,
        evaluator: &str,
        iterations: u32,
        env: &[(&str, &str)],
    ) -> Outcome {
        self.run_evaluator_at(program, evaluator, iterations, env, None, None)
    }

    /// [`Hostile::run_evaluator`] with `parallel` iterations in flight.
    pub fn run_evaluator_parallel(
        &self,
        program: &str,
        evaluator: &str,
        iterations: u32,
        parallel: u32,
    ) -> Outcome {
        self.run_evaluator_at(program, evaluator, iterations, &[], Some(parallel), None)
    }

    /// [`Hostile::run_evaluator_parallel`] with the run guarded by `memory`
    /// (killed should the host's available memory fall below its floor).
    pub fn run_guarded(
        &self,
        program: &str,
        evaluator: &str,
        iterations: u32,
        parallel: u32,
        memory: &super::host_memory::HostMemory,
    ) -> Outcome {
        self.run_evaluator_at(
            program,
            evaluator,
            iterations,
            &[],
            Some(parallel),
            Some(memory),
        )
    }

    fn run_evaluator_at(
        &self,
        program: &str,
        evaluator: &str,
        iterations: u32,
        env: &[(&str, &str)],
        parallel: Option<u32>,
        memory: Option<&super::host_memory::HostMemory>,
    ) -> Outcome {
        let n = self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let out = self.root.path().join(format!("runs{n}"));
        let server = ModelServer::start(&format!("```python\n{program}\n```"));
        let card = self.root.path().join(format!("card{n}.yaml"));
        let base = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"),
        )
        .unwrap();
        let start = base.find("evaluator:").unwrap();
        let end = base.find("memory:").unwrap();
        let text = format!(
            "{}evaluator: {{{evaluator}}}\n{}",
            &base[..start],
            &base[end..]
        );
        std::fs::write(&card, text).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
            .arg("run")
            .arg(&card)
            .arg("--task")
            .arg(&self.task)
            .args(["--iterations", &iterations.to_string(), "--quiet"])
            .args(
                parallel
                    .map(|p| ["--parallel".to_owned(), p.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .args([
                "--api-base",
                &format!("http://127.0.0.1:{}/v1", server.port),
                "--model",
                "hostile-coder",
            ])
            .arg("--out")
            .arg(&out)
            .args(super::consent_flags(&card, &self.task))
            .envs(env.iter().copied())
            .env("OPENAI_API_KEY", SECRET)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .current_dir(self.root.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(memory) = memory {
            memory.guard(o.id());
        }
        let o = o.wait_with_output().unwrap();
        if let Some(memory) = memory {
            memory.unguard();
        }
        let run_dir = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut entries| entries.find_map(|e| e.ok().map(|e| e.path())))
            .filter(|p| p.is_dir());
        let genomes = run_dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join("genomes.jsonl")).ok())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        Outcome {
            success: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            genomes,
            run_dir,
            requests: server.bodies(),
        }
    }
}

/// Live processes whose command line contains `token`.
pub fn processes_with(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(token) {
            found.push(pid);
        }
    }
    found
}

/// Checks that the genome `child` of a candidate that tried to write past
/// its writable-space quota failed naming the 512 MiB quota, and that its
/// stderr's "wrote N" total (MiB, across its folder, HOME, TMPDIR and
/// /dev/shm) is within it; returns N.
pub fn stopped_at_the_quota(child: &serde_json::Value) -> u64 {
    let evidence = Outcome::evidence(child);
    assert!(child["valid"] == false, "{evidence}");
    assert!(
        child["error"]
            .as_str()
            .unwrap_or("")
            .starts_with("exceeded the 512 MiB writable-space quota"),
        "{evidence}"
    );
    let said = child["artifacts"]["stderr"].as_str().unwrap_or("");
    let wrote: u64 = said
        .split("wrote ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total on stderr: {evidence}"));
    assert!(wrote <= 512, "wrote {wrote} MiB: {evidence}");
    wrote
}
