#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The command evaluator's limits, through `galapagos run`: a command that
//! allocates past `memory_limit_mib`, burns CPU past `cpu_limit_secs`,
//! writes a file past `file_size_limit_mib` or starts processes past
//! `process_limit` leaves a genome whose error names the limit and its
//! value, and the run goes on; the same command under generous limits
//! scores.

use std::path::Path;
use std::process::Command;

use galapagos::engine::archive::read_genomes;
use galapagos::engine::genome::Genome;

/// The nobody user and group, which the process limit test runs as when
/// the tests run as root (the kernel does not enforce it for root).
const NOBODY: u32 = 65534;

/// What `score.py` starts with: `CHILD` is false for the initial program
/// (`x = 1.0`, which must score for the run to start) and true for the
/// model's candidates (the offline model changes the number).
const PREAMBLE: &str = "import sys\nCHILD = open(sys.argv[1]).read().strip() != 'x = 1.0'\n";

/// Run a command-evaluator task of `iterations` whose `evaluate.sh` runs
/// [`PREAMBLE`] and `score_py`, with `limits` added to the evaluator; as
/// `nobody` when `as_nobody` and the tests run as root. The run's genomes.
fn run(score_py: &str, limits: &str, iterations: u32, as_nobody: bool) -> Vec<Genome> {
    let root = tempfile::tempdir().unwrap();
    let (home, task, out) = (
        root.path().join("home"),
        root.path().join("task"),
        root.path().join("runs"),
    );
    for dir in [&home, &task, &out] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(task.join("initial_program.txt"), "x = 1.0\n").unwrap();
    std::fs::write(task.join("score.py"), format!("{PREAMBLE}{score_py}")).unwrap();
    let evaluate = task.join("evaluate.sh");
    std::fs::write(&evaluate, "#!/bin/sh\nexec python3 score.py \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&evaluate, std::fs::Permissions::from_mode(0o755)).unwrap();
    let card = root.path().join("card.yaml");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"))
            .unwrap()
            .replace(
                "  kind: subprocess\n  timeout_secs: 60.0\n",
                &format!(
                    "  kind: command\n  argv: [./evaluate.sh]\n  timeout_secs: 60.0\n{limits}"
                ),
            );
    std::fs::write(&card, text).unwrap();
    let nobody = as_nobody && rustix::process::geteuid().is_root();
    let mut command = if nobody {
        for p in [root.path(), &home, &task, &out, &card, &evaluate] {
            std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            env!("CARGO_BIN_EXE_galapagos"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_galapagos"))
    };
    let o = command
        .arg("run")
        .arg(&card)
        .arg("--task")
        .arg(&task)
        .args(["--iterations", &iterations.to_string(), "--quiet", "--out"])
        .arg(&out)
        .current_dir(&task)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap();
    let genomes = read_genomes(&run.path().join("genomes.jsonl")).unwrap();
    let last = genomes.last().map(|g| g.iteration);
    assert_eq!(last, Some(u64::from(iterations)), "the run went on");
    genomes
}

/// The initial program scored; every later genome is invalid with an
/// error that starts with `prefix`.
fn all_refused(genomes: &[Genome], prefix: &str) {
    assert!(genomes[0].valid, "{:?}", genomes[0].error);
    for g in &genomes[1..] {
        let error = g.error.as_deref().unwrap_or_default();
        assert!(!g.valid, "{}", g.content);
        assert!(
            error.starts_with(prefix),
            "expected {prefix:?}, got {error:?}; stderr: {:?}",
            g.artifacts.get("stderr")
        );
    }
}

/// Every genome is valid with a combined_score of 1.
fn all_scored(genomes: &[Genome]) {
    for g in genomes {
        assert!(g.valid, "{:?} {:?}", g.error, g.artifacts.get("stderr"));
        assert_eq!(g.scores.get("combined_score"), Some(&1.0));
    }
}

const SCORED: &str = "print('{\"combined_score\": 1.0}')\n";

/// `code` indented, run for the model's candidates only.
fn in_children(code: &str) -> String {
    let body: String = code.lines().map(|l| format!("    {l}\n")).collect();
    format!("if CHILD:\n{body}{SCORED}")
}

#[test]
fn a_command_past_the_memory_limit_is_named_on_the_genome() {
    let score = in_children("block = bytearray(384 << 20)");
    let hit = run(&score, "  memory_limit_mib: 256\n", 2, false);
    all_refused(
        &hit,
        "exceeded the 256 MiB memory limit (the evaluator command exited with status 1; stderr: MemoryError",
    );
    all_scored(&run(&score, "  memory_limit_mib: 2048\n", 1, false));
}

#[test]
fn a_command_past_the_cpu_time_limit_is_named_on_the_genome() {
    let score = in_children("import time\nwhile time.process_time() < 2.5:\n    pass");
    let hit = run(&score, "  cpu_limit_secs: 1.0\n", 2, false);
    all_refused(
        &hit,
        "exceeded the 1 s CPU time limit (the evaluator command ended with status 152 (as the sandbox reports a kill by SIGXCPU, signal 24",
    );
    all_scored(&run(&score, "  cpu_limit_secs: 20.0\n", 1, false));
}

#[test]
fn a_command_past_the_file_size_limit_is_named_on_the_genome() {
    let score = in_children(
        "with open(sys.argv[2] + '/big', 'wb') as f:\n    for _ in range(3):\n        \
         f.write(b'x' * (1 << 20))",
    );
    let hit = run(&score, "  file_size_limit_mib: 1\n", 2, false);
    all_refused(
        &hit,
        "exceeded the 1 MiB file size limit (the evaluator command exited with status 1; stderr: \
         OSError: [Errno 27] File too large",
    );
    all_scored(&run(&score, "  file_size_limit_mib: 16\n", 1, false));
    // A shell's own report of a child killed by SIGXFSZ names it too.
    let shell = in_children(
        "import subprocess\n\
         subprocess.run(['sh', '-c', 'head -c 3000000 /dev/zero > \"$0/big\"', sys.argv[2]])\n\
         sys.exit(3)",
    );
    let hit = run(&shell, "  file_size_limit_mib: 1\n", 2, false);
    all_refused(
        &hit,
        "exceeded the 1 MiB file size limit (the evaluator command exited with status 3; stderr: ",
    );
}

#[test]
fn a_command_past_the_process_limit_is_named_on_the_genome() {
    // 40 processes at once; the kernel does not hold root to the limit, so
    // as root the run is made as nobody.
    let score = in_children(
        "import os, time\nkids = []\nfor _ in range(40):\n    pid = os.fork()\n    if pid == 0:\n        \
         time.sleep(1)\n        os._exit(0)\n    kids.append(pid)\nfor pid in kids:\n    \
         os.waitpid(pid, 0)",
    );
    let hit = run(&score, "  process_limit: 16\n", 2, true);
    all_refused(
        &hit,
        "exceeded the 16-process limit (the evaluator command exited with status 1; stderr: \
         BlockingIOError: [Errno 11] Resource temporarily unavailable",
    );
    all_scored(&run(&score, "  process_limit: 256\n", 1, true));
}

#[test]
fn a_command_that_exits_with_a_signal_like_status_is_not_blamed_on_a_limit() {
    // 137 and 152 are how the sandbox reports SIGKILL and SIGXCPU; a
    // command that exits so by itself, without the CPU time or memory
    // evidence, is not said to have hit a limit.
    for code in [137, 152] {
        let score = in_children(&format!("sys.exit({code})"));
        let genomes = run(
            &score,
            "  cpu_limit_secs: 1.0\n  memory_limit_mib: 256\n",
            2,
            false,
        );
        assert!(genomes[0].valid, "{:?}", genomes[0].error);
        for g in &genomes[1..] {
            let error = g.error.as_deref().unwrap_or_default();
            assert!(!g.valid, "{}", g.content);
            assert!(
                error.starts_with(&format!("the evaluator command ended with status {code}")),
                "{error}"
            );
        }
    }
}
