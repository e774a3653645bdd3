#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Task folders as their authors wrote them, run through the command line:
//! an OpenEvolve config's system message and time limit, missing markers,
//! and bad folders.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use galapagos::engine::archive::read_genomes;
use galapagos::engine::genome::Genome;

fn galapagos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_galapagos"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Write `files` into a new folder `name` under `dir`.
fn folder(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let t = dir.join(name);
    std::fs::create_dir_all(&t).unwrap();
    for (file, text) in files {
        std::fs::write(t.join(file), text).unwrap();
    }
    t
}

/// `galapagos run cards/best_of_n.yaml --task TASK --iterations N --out OUT`.
fn run(task: &Path, iterations: u32, out: &Path) -> Output {
    galapagos()
        .args(["run", "cards/best_of_n.yaml", "--task"])
        .arg(task)
        .args(["--iterations", &iterations.to_string(), "--out"])
        .arg(out)
        .current_dir(root())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The genomes of the only run folder in `out`.
fn genomes(out: &Path) -> Vec<Genome> {
    let dirs: Vec<_> = std::fs::read_dir(out).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1, "one run folder");
    read_genomes(&dirs[0].path().join("genomes.jsonl")).unwrap()
}

/// An evaluator that scores `X` and takes 5 s for any program whose `X` is
/// not the initial 1.0 (every child the offline model makes).
const SLOW_CHILDREN: &str = r#"import importlib.util, time

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if mod.X != 1.0:
        time.sleep(5)
    return {"combined_score": -abs(mod.X - 3.0)}
"#;

const MARKED: &str = "# EVOLVE-BLOCK-START\nX = 1.0\n# EVOLVE-BLOCK-END\n";

/// OpenEvolve's examples ship a README (for people) and a config.yaml whose
/// `prompt.system_message` is the model's brief: the system role holds that
/// message, the README stays out of the prompt, and the config's evaluator
/// timeout (1 s) replaces the card's (60 s).
#[test]
fn a_config_system_message_is_the_system_prompt_and_its_timeout_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let task = folder(
        dir.path(),
        "oe_task",
        &[
            ("initial_program.py", MARKED),
            ("evaluator.py", SLOW_CHILDREN),
            (
                "README.md",
                "# How to run\nREADME-ONLY: python openevolve-run.py initial_program.py evaluator.py\n",
            ),
            (
                "config.yaml",
                "max_iterations: 50\nprompt:\n  system_message: \"CONFIG-MESSAGE: you tune X towards 3.\"\nevaluator:\n  timeout: 1\n",
            ),
        ],
    );
    let out = dir.path().join("runs");
    let started = Instant::now();
    let o = run(&task, 1, &out);
    let wall = started.elapsed().as_secs_f64();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("system prompt: config.yaml's prompt.system_message")
            && err.contains("README.md not shown to the model"),
        "the output says where the system prompt comes from:\n{err}"
    );
    assert!(
        err.contains("evaluator.timeout: 1 → evaluator.timeout_secs (replaces the card's 60)"),
        "the mapping is in the log:\n{err}"
    );
    let genomes = genomes(&out);
    assert!(genomes[0].valid, "{:?}", genomes[0].error);
    let children = &genomes[1..];
    assert!(!children.is_empty());
    for child in children {
        let prompt = child.prompt.as_ref().unwrap();
        assert_eq!(prompt.system, "CONFIG-MESSAGE: you tune X towards 3.");
        assert!(!prompt.user.contains("README-ONLY"), "{}", prompt.user);
        assert!(
            prompt.user.contains("finish within 1 seconds"),
            "the prompt states the config's limit"
        );
        // Every child sleeps 5 s: the config's 1 s limit stops it.
        assert!(!child.valid);
        let error = child.error.as_deref().unwrap_or_default();
        assert!(error.contains("timeout"), "{error}");
        assert!(
            child.timings.evaluate_ms < 3_000.0,
            "stopped at the config's limit, not the card's: {} ms",
            child.timings.evaluate_ms
        );
    }
    assert!(wall < 20.0, "{wall} s");
}

/// A program with no EVOLVE-BLOCK markers: the output warns, and the
/// prompt says that any line may change instead of asking for edits between
/// markers that do not exist.
#[test]
fn a_program_without_markers_gets_a_warning_in_the_output_and_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let task = folder(
        dir.path(),
        "bare",
        &[
            ("initial_program.py", "X = 1.0\n"),
            (
                "evaluator.py",
                "import importlib.util\n\ndef evaluate(p):\n    s = importlib.util.spec_from_file_location('c', p)\n    m = importlib.util.module_from_spec(s)\n    s.loader.exec_module(m)\n    return {'combined_score': -abs(m.X - 3)}\n",
            ),
        ],
    );
    let out = dir.path().join("runs");
    let o = run(&task, 1, &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "warning: initial_program.py has no EVOLVE-BLOCK-START / EVOLVE-BLOCK-END markers: the whole \
             file may be edited"
        ),
        "{err}"
    );
    let genomes = genomes(&out);
    let user = &genomes[1].prompt.as_ref().unwrap().user;
    assert!(
        user.contains("The program has no EVOLVE-BLOCK markers: any line may change."),
        "{user}"
    );
    assert!(!user.contains("Only change code between"), "{user}");

    // Unbalanced markers are warned about too, with the line.
    let task = folder(
        dir.path(),
        "unbalanced",
        &[
            ("initial_program.py", "# EVOLVE-BLOCK-START\nX = 1.0\n"),
            (
                "evaluator.py",
                "def evaluate(p):\n    return {'combined_score': 1.0}\n",
            ),
        ],
    );
    let o = run(&task, 1, &dir.path().join("runs2"));
    let err = stderr(&o);
    assert!(
        err.contains(
            "warning: initial_program.py: unbalanced EVOLVE-BLOCK markers (1 START, 0 END"
        ),
        "{err}"
    );
}

/// A bad task folder is one message and exit 2, and nothing is written:
/// not the runs folder, not a run folder.
#[test]
fn a_bad_task_folder_exits_2_with_one_message_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = folder(dir.path(), "empty", &[("evaluator.py", "")]);
    let folder_program = folder(dir.path(), "folder_program", &[("evaluator.py", "")]);
    std::fs::create_dir_all(folder_program.join("initial_program")).unwrap();
    // a program folder with nothing marked and no evolve globs: nothing may change
    std::fs::write(folder_program.join("initial_program/main.py"), "x = 1\n").unwrap();
    let bad_config = folder(
        dir.path(),
        "bad_config",
        &[
            ("initial_program.py", MARKED),
            ("evaluator.py", ""),
            ("config.yaml", "evaluator:\n  timeout: [\n"),
        ],
    );
    let missing = dir.path().join("nope");
    for (task, names, says) in [
        (&missing, "nope", "does not exist or is not a folder"),
        (&empty, "empty", "no initial program"),
        (&folder_program, "initial_program", "no editable file"),
        (&bad_config, "config.yaml:", "not valid YAML"),
    ] {
        let out = dir.path().join("runs");
        let o = run(task, 3, &out);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one message: {err}");
        assert!(lines[0].starts_with("error: "), "{err}");
        assert!(lines[0].contains(names), "names the file or folder: {err}");
        assert!(lines[0].contains(says), "{err}");
        assert!(o.stdout.is_empty(), "no summary of a run that never was");
        assert!(!out.exists(), "no runs folder, no run folder");
    }
}

/// Processes whose command line mentions `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(marker) {
            found.push(format!("{}: {line}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// A task whose `evaluator.py` starts a helper process and then hangs on
/// import; the helper's command line carries `marker`.
fn hanging_task(dir: &Path, marker: &str) -> PathBuf {
    folder(
        dir,
        "hangs",
        &[
            ("initial_program.py", MARKED),
            (
                "evaluator.py",
                &format!(
                    "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'])\ntime.sleep(600)\n\ndef evaluate(p):\n    return {{'combined_score': 1.0}}\n"
                ),
            ),
        ],
    )
}

/// best_of_n with the evaluator's limits set.
fn card_with_limits(dir: &Path, timeout: f64, import: f64) -> PathBuf {
    let text = std::fs::read_to_string(root().join("cards/best_of_n.yaml")).unwrap();
    let text = text.replace(
        "  timeout_secs: 60.0\n",
        &format!("  timeout_secs: {timeout:?}\n  import_timeout_secs: {import:?}\n"),
    );
    let path = dir.join("card.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// An `evaluator.py` whose import hangs fails once, at the limit the error
/// states (import_timeout_secs + timeout_secs = 2 s), as the evaluator's
/// failure (not the program's), and leaves no process behind: not the
/// worker, not what its import started.
#[test]
fn an_import_that_hangs_fails_once_at_its_limit_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("hang-marker-{}", std::process::id());
    let task = hanging_task(dir.path(), &marker);
    let card = card_with_limits(dir.path(), 1.0, 1.0);
    let started = Instant::now();
    let o = galapagos()
        .args(["run"])
        .arg(&card)
        .arg("--task")
        .arg(&task)
        .args(["--iterations", "3", "--quiet", "--out"])
        .arg(dir.path().join("runs"))
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let said = format!("{err}{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(
        said.matches("did not finish importing").count(),
        1,
        "said once: {said}"
    );
    assert!(
        err.contains(
            "error: the task's evaluator cannot run: evaluation worker did not finish importing"
        ) && err.contains("evaluator.py within 2 s"),
        "{err}"
    );
    assert!(wall < 4.0, "the stated limit is 2 s; took {wall:.2} s");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = processes_with(&marker);
    assert!(left.is_empty(), "left behind: {left:?}");
    let workers = processes_with(&task.display().to_string());
    assert!(workers.is_empty(), "left behind: {workers:?}");
}

/// SIGTERM or Ctrl-C while `evaluator.py` is still importing: the run stops
/// at once and kills the worker and what its import started.
#[test]
fn a_signal_during_a_hanging_import_leaves_no_process() {
    for signal in ["TERM", "INT"] {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("hang-marker-{signal}-{}", std::process::id());
        let task = hanging_task(dir.path(), &marker);
        let card = card_with_limits(dir.path(), 1.0, 300.0);
        let mut child = galapagos()
            .args(["run"])
            .arg(&card)
            .arg("--task")
            .arg(&task)
            .args(["--iterations", "3", "--quiet", "--out"])
            .arg(dir.path().join("runs"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let waiting = Instant::now();
        while processes_with(&marker).is_empty() {
            assert!(
                waiting.elapsed().as_secs() < 20,
                "the import never started its helper"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let sent = Instant::now();
        let killed = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert!(
            sent.elapsed().as_secs_f64() < 2.0,
            "{signal}: stopped in {:?}",
            sent.elapsed()
        );
        assert_eq!(status.code(), Some(130), "{signal}");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let left = processes_with(&marker);
        assert!(left.is_empty(), "{signal}: left behind: {left:?}");
        let workers = processes_with(&task.display().to_string());
        assert!(workers.is_empty(), "{signal}: left behind: {workers:?}");
    }
}

/// The shipped Rust task: each candidate is compiled with rustc and run; a
/// better hash scores higher, a program that does not compile is invalid
/// with the compiler's message.
#[tokio::test]
async fn the_shipped_rust_task_compiles_and_runs_its_candidates() {
    use galapagos::engine::evaluator::{
        Candidate, Evaluator, SubprocessEvaluator, SubprocessParams,
    };
    let task = galapagos::engine::task::Task::load(&root().join("assets/tasks/hash_rust")).unwrap();
    assert_eq!(task.language, "rust");
    assert!(task.warnings().is_empty());
    // Unsandboxed: rustup keeps its toolchains in the home dir, which the
    // sandbox hides (a card shows one with `read_paths`; Debian's rustc is
    // visible as it is).
    let ev = SubprocessEvaluator::new(
        &task,
        SubprocessParams {
            isolation: galapagos::engine::evaluator::Isolation {
                sandbox: galapagos::engine::evaluator::Sandbox::None,
                ..galapagos::engine::evaluator::Isolation::default()
            },
            ..SubprocessParams::default()
        },
        1,
    );
    let score = |content: String| {
        let ev = &ev;
        async move {
            ev.evaluate(&Candidate {
                id: 1,
                content: content.into(),
            })
            .await
        }
    };
    let initial = score(task.initial_program.text().into_owned()).await;
    assert!(initial.valid, "{initial:?}");
    assert!(initial.scores["compile_s"] > 0.0);
    let better = score(
        task.initial_program
            .text()
            .replace(
                "MULTIPLIER: u64 = 31",
                "MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15",
            )
            .replace("SHIFT: u32 = 4", "SHIFT: u32 = 40"),
    )
    .await;
    assert!(better.valid, "{better:?}");
    assert!(
        better.scores["combined_score"] > initial.scores["combined_score"] + 0.3,
        "{} vs {}",
        better.scores["combined_score"],
        initial.scores["combined_score"]
    );
    let broken = score(task.initial_program.text().replace("% 1024", "% 1024 +")).await;
    assert!(!broken.valid);
    assert!(
        broken
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("does not compile"),
        "{broken:?}"
    );
    assert!(broken.artifacts["compiler_output"].contains("error"));
}

/// Without `combined_score` the summary says what the fitness is; a task can
/// name its fitness metric in its config, and a program that does not
/// report it is invalid.
#[test]
fn the_summary_says_what_fitness_is_and_a_task_can_name_its_metric() {
    let dir = tempfile::tempdir().unwrap();
    let evaluator = "import importlib.util\n\ndef evaluate(p):\n    s = importlib.util.spec_from_file_location('c', p)\n    m = importlib.util.module_from_spec(s)\n    s.loader.exec_module(m)\n    out = {'output_length': 26.0}\n    if m.X == 1.0:\n        out['closeness'] = -abs(m.X - 3)\n    return out\n";
    let task = folder(
        dir.path(),
        "no_combined",
        &[("initial_program.py", MARKED), ("evaluator.py", evaluator)],
    );
    let o = run(&task, 2, &dir.path().join("runs"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout.contains("initial:     fitness 12.000000 (mean of 2 metrics, no combined_score)")
            && stdout.contains("fitness 26.000000 (mean of 1 metric, no combined_score)"),
        "{stdout}"
    );

    std::fs::write(task.join("config.yaml"), "fitness_metric: closeness\n").unwrap();
    let out = dir.path().join("runs_named");
    let o = run(&task, 3, &out);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout.contains("initial:     closeness -2.000000"),
        "{stdout}"
    );
    let genomes = genomes(&out);
    assert_eq!(genomes[0].fitness(), Some(-2.0));
    let user = &genomes[1].prompt.as_ref().unwrap().user;
    assert!(user.contains("raise closeness"), "{user}");

    // Children (X changed) report no `closeness`: invalid, saying why.
    for child in &genomes[1..] {
        if child.content != genomes[0].content && child.error.is_none() {
            panic!("{child:?}");
        }
        if child.scores.contains_key("output_length") {
            assert!(!child.valid);
            assert_eq!(
                child.error.as_deref(),
                Some(
                    "the evaluator reported no `closeness`, the task's fitness metric (fitness_metric in its config)"
                )
            );
        }
    }
}

/// An `evaluator.py` that does not import is the evaluator's failure, named
/// with its file, not "the initial program did not score".
#[test]
fn an_evaluator_that_does_not_import_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let task = folder(
        dir.path(),
        "broken_import",
        &[
            ("initial_program.py", MARKED),
            (
                "evaluator.py",
                "import no_such_module_here\n\ndef evaluate(p):\n    return {}\n",
            ),
        ],
    );
    let o = run(&task, 2, &dir.path().join("runs"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: the task's evaluator cannot run: cannot import the task evaluator")
            && err.contains("broken_import/evaluator.py: ModuleNotFoundError: No module named 'no_such_module_here'"),
        "{err}"
    );
    assert!(!err.contains("did not score"), "{err}");
}
