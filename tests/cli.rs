#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The headless CLI as a user runs it: bad cards, and real offline runs of
//! every shipped card on the shipped tasks.

mod common;

use std::path::Path;
use std::process::Command;

fn galapagos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_galapagos"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Write a variant of best_of_n.yaml with `edit` applied and validate it.
fn bad_card(name: &str, edit: impl Fn(String) -> String) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("cards/best_of_n.yaml")).unwrap();
    let path = dir.path().join(format!("{name}.yaml"));
    std::fs::write(&path, edit(text)).unwrap();
    let out = galapagos().arg("validate").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    (
        out.status.code().unwrap_or(-1),
        stderr.replace(&path.display().to_string(), "CARD"),
    )
}

#[test]
fn bad_cards_exit_nonzero_with_one_located_message() {
    type Edit = Box<dyn Fn(String) -> String>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "unknown_field",
            Box::new(|t: String| t.replace("seed: 0", "seed: 0\nsede: 3")),
            "CARD:45:1: sede: unknown key `sede`; did you mean `seed`? (keys here: name,",
        ),
        (
            "unknown_kind",
            Box::new(|t: String| t.replace("kind: best_of_n\n", "kind: best_of_m\n")),
            "CARD:28:9: selection_policy.kind: unknown selection_policy kind `best_of_m`; did you mean `best_of_n`? (available: best_of_n, best_of_n_attempts, beam",
        ),
        (
            "wrong_type",
            Box::new(|t: String| t.replace("best_of_n: 5", "best_of_n: five")),
            "CARD:29:14: selection_policy.best_of_n: expected an integer, got five",
        ),
        (
            "missing_slot",
            Box::new(|t: String| t.replace("memory:\n  kind: none\n", "")),
            "CARD:1:1: memory: missing (every card names all six slots); add it, for example `memory: {kind: none}`",
        ),
        (
            "negative_n",
            Box::new(|t: String| t.replace("best_of_n: 5", "best_of_n: -3")),
            "CARD:29:14: selection_policy.best_of_n: must be at least 1, got -3",
        ),
        (
            "bad_param",
            Box::new(|t: String| {
                t.replace(
                    "num_inspirations: 4",
                    "num_inspirations: 4\n  temperature: 2",
                )
            }),
            "CARD:31:3: selection_policy.temperature: unknown parameter (known: best_of_n, num_inspirations)",
        ),
        (
            "negative_iterations",
            Box::new(|t: String| t.replace("max_iterations: 100", "max_iterations: -1")),
            "CARD:41:19: general.max_iterations: must be a whole number ≥ 0, got -1",
        ),
        (
            "huge_iterations",
            Box::new(|t: String| {
                t.replace(
                    "max_iterations: 100",
                    "max_iterations: 99999999999999999999999",
                )
            }),
            "CARD:41:19: general.max_iterations: 99999999999999999999999 is too large: the limit is 18446744073709551615",
        ),
        (
            "huge_param",
            Box::new(|t: String| t.replace("best_of_n: 5", "best_of_n: 99999999999999999999999")),
            "CARD:29:14: selection_policy.best_of_n: 99999999999999999999999 is too large: the limit is 9223372036854775807",
        ),
        (
            "hugely_negative_param",
            Box::new(|t: String| t.replace("best_of_n: 5", "best_of_n: -99999999999999999999999")),
            "CARD:29:14: selection_policy.best_of_n: -99999999999999999999999 is too small: the limit is -9223372036854775808",
        ),
        (
            // the most natural first edit: a beam policy on a flat population
            "beam_policy_without_a_beam",
            Box::new(|t: String| {
                t.replace(
                    "kind: best_of_n\n  best_of_n: 5\n  num_inspirations: 4\n",
                    "kind: beam\n",
                )
            }),
            "CARD:28:9: selection_policy.kind: BeamPolicy (selection_policy `beam`) needs a beam \
             population, but population is `in_memory` (InMemoryPopulation); switch population to `beam` \
             (BeamPopulation), or pick another selection policy",
        ),
        (
            "not_yaml",
            Box::new(|_| "population: [\n".to_owned()),
            "CARD:1:13: population: must be a mapping (`key: value` lines), got a list",
        ),
    ];
    for (name, edit, expect) in cases {
        let (code, stderr) = bad_card(name, edit);
        assert_eq!(code, 2, "{name}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{name}: one message: {stderr}");
        assert!(
            lines[0].contains(expect),
            "{name}: expected {expect:?} in {stderr:?}"
        );
    }
}

/// A card with four errors of three kinds (a negative count, two unknown
/// keys, a word for a number) reports all four in one pass, each at its
/// `file:line:col` and field (a wrong value at the value, an unknown key at
/// the key), in words a user knows.
#[test]
fn a_card_with_four_errors_reports_all_four_in_plain_words() {
    let (code, stderr) = bad_card("four_errors", |t| {
        t.replace("max_iterations: 100", "max_iterations: -3\n  paralel: 2")
            .replace("best_of_n: 5", "best_of_n: five")
            .replace("seed: 0", "seed: 0\nsede: 1")
    });
    assert_eq!(code, 2, "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect();
    assert_eq!(lines.len(), 4, "every error, one per line: {stderr}");
    let expect = [
        "CARD:29:14: selection_policy.best_of_n: expected an integer, got five",
        "CARD:41:19: general.max_iterations: must be a whole number ≥ 0, got -3",
        "CARD:42:3: general.paralel: unknown key `paralel`; did you mean `parallel`? (keys here:",
        "CARD:46:1: sede: unknown key `sede`; did you mean `seed`? (keys here: name,",
    ];
    for (line, expect) in lines.iter().zip(expect) {
        assert!(
            line.starts_with(expect),
            "expected {expect:?}, got {line:?}"
        );
    }
    assert!(!stderr.contains("expected u64"), "{stderr}");
}

/// A slot whose parameters are nested in a block of their own (`params:`,
/// as some other tools write them) is refused with what a parameter's value
/// may be and where parameters go, at the slot, not with serde's "data did
/// not match any variant of untagged enum ParamValue"; plain values of every
/// shape still read.
#[test]
fn parameters_nested_in_a_block_are_refused_with_where_they_go() {
    let text = "name: nested
population:
  kind: in_memory
  params:
    capacity: 5
selection_policy: {kind: best_of_n, best_of_n: 3, num_inspirations: 18446744073709551615}
prompt_builder: {kind: default, system_message: null}
proposer: {kind: diff, max_code_length: -1}
evaluator: {kind: subprocess, timeout_secs: 1.5e1}
memory: {kind: none}
";
    let (code, stderr) = bad_card("nested", |_| text.to_owned());
    assert_eq!(code, 2, "{stderr}");
    assert!(!stderr.contains("untagged"), "{stderr}");
    assert!(
        stderr.contains("CARD:3:7: population: must be a parameter's value")
            && stderr.contains("not a block of its own such as `params:`), got a mapping"),
        "{stderr}"
    );
    // the other values read as what they are, then are checked against
    // their parameter: a u64 past i64 as a float, null as null, -1 as -1
    for expect in [
        "selection_policy.num_inspirations: expected an integer, got 18446744073709552000",
        "prompt_builder.system_message: expected text, got null",
        "proposer.max_code_length: must be between 100 and 100000000, got -1",
    ] {
        assert!(stderr.contains(expect), "{expect}: {stderr}");
    }
}

/// The line and column (1-based) of the `nth` (0-based) `needle` on line
/// `line` of `text`.
fn col_of(text: &str, line: usize, needle: &str) -> String {
    let l = text.lines().nth(line - 1).unwrap();
    format!("{line}:{}", l.find(needle).unwrap() + 1)
}

/// A card with nine mistakes of every kind reports all nine in one pass
/// (not the five of its shape, then the four of its meaning once those are
/// fixed), in the order of the file; a wrong value points at the value, an
/// unknown or misspelt key at the key, a missing slot at the card's start
/// with a minimal slot to add; an unknown kind or key names the nearest
/// known one.
#[test]
fn a_card_with_nine_mistakes_reports_all_nine_at_once() {
    let text = "name: nine
population: {kind: in_memory}
selection_policy: {kind: best_of_n, best_of_n: 0}
prompt_builder: {kind: defualt}
proposer: {kind: diff, max_code_lenght: 3000}
evaluator: {kind: subprocess, timeout_secs: fast}
general:
  max_iterations: 0
  paralel: 2
  inner_retry_times: many
seed: abc
";
    let (code, stderr) = bad_card("nine", |_| text.to_owned());
    assert_eq!(code, 2, "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect();
    let expect = [
        "CARD:1:1: memory: missing (every card names all six slots); add it, for example \
         `memory: {kind: none}`"
            .to_owned(),
        format!(
            "CARD:{}: selection_policy.best_of_n: must be at least 1, got 0",
            col_of(text, 3, "0}")
        ),
        format!(
            "CARD:{}: prompt_builder.kind: unknown prompt_builder kind `defualt`; did you mean \
             `default`?",
            col_of(text, 4, "defualt")
        ),
        format!(
            "CARD:{}: proposer.max_code_lenght: unknown parameter; did you mean \
             `max_code_length`?",
            col_of(text, 5, "max_code_lenght")
        ),
        format!(
            "CARD:{}: evaluator.timeout_secs: expected a number, got fast",
            col_of(text, 6, "fast")
        ),
        format!(
            "CARD:{}: general.max_iterations: must be at least 1",
            col_of(text, 8, "0")
        ),
        format!(
            "CARD:{}: general.paralel: unknown key `paralel`; did you mean `parallel`?",
            col_of(text, 9, "paralel")
        ),
        format!(
            "CARD:{}: general.inner_retry_times: must be a whole number from 0 to 4294967295, got \
             \"many\"",
            col_of(text, 10, "many")
        ),
        format!(
            "CARD:{}: seed: must be a whole number ≥ 0, got \"abc\"",
            col_of(text, 11, "abc")
        ),
    ];
    assert_eq!(lines.len(), expect.len(), "every error at once: {stderr}");
    for (line, expect) in lines.iter().zip(&expect) {
        assert!(
            line.starts_with(expect.as_str()),
            "expected {expect:?}, got {line:?}\n{stderr}"
        );
    }
}

/// A misspelt built-in card or task name on the command line names the
/// one that was meant.
#[test]
fn a_misspelt_card_or_task_name_says_which_was_meant() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let o = galapagos()
        .args(["validate", "best_of_m"])
        .env("HOME", home.path())
        .current_dir(work.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean `best_of_n`?"), "{stderr}");
    let o = galapagos()
        .args(["run", "best_of_n", "--task", "circle_pack", "--quiet"])
        .env("HOME", home.path())
        .current_dir(work.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("did you mean `circle_packing`?"),
        "{stderr}"
    );
    assert!(
        !work.path().join("runs").exists(),
        "nothing is written for a task that is not there"
    );
}

#[test]
fn shipped_cards_validate() {
    let out = galapagos()
        .arg("validate")
        .args([
            "cards/best_of_n.yaml",
            "cards/best_of_n_attempts.yaml",
            "cards/beam_search.yaml",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run(card: &str, task: &str, out: &Path) -> (f64, f64, String) {
    common::cli_run(card, task, 40, out)
}

#[test]
fn every_card_improves_circle_packing_offline_and_records_the_run() {
    let out = tempfile::tempdir().unwrap();
    for card in [
        "cards/best_of_n.yaml",
        "cards/best_of_n_attempts.yaml",
        "cards/beam_search.yaml",
    ] {
        let (best, initial, stdout) = run(card, "assets/tasks/circle_packing", out.path());
        assert!(best > initial, "{card}: best {best} <= initial {initial}");
        assert!(
            stdout.contains("offline"),
            "the output says the offline model is in use"
        );
    }
    // every run folder holds the card snapshot and one JSON line per genome
    let dirs: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    assert_eq!(dirs.len(), 3);
    for d in dirs {
        let genomes =
            galapagos::engine::archive::read_genomes(&d.path().join("genomes.jsonl")).unwrap();
        assert!(genomes.len() >= 41);
        assert!(
            genomes
                .iter()
                .skip(1)
                .all(|g| g.parent_id.is_some() && g.diff.is_some() || !g.valid)
        );
        assert!(d.path().join("card.yaml").is_file() && d.path().join("summary.json").is_file());
    }
}

/// The resume budget is the total number of iterations and must leave work:
/// `resume --iterations N` with N at or below the iterations done is refused
/// with the fix, and writes nothing; N above them continues to N.
#[test]
fn resume_continues_to_a_total_budget_and_refuses_one_already_spent() {
    let out = tempfile::tempdir().unwrap();
    let (_, _, stdout) = common::cli_run(
        "cards/best_of_n.yaml",
        "assets/tasks/function_minimization",
        4,
        out.path(),
    );
    assert!(stdout.contains("iterations:  4"), "{stdout}");
    let run_dir = std::fs::read_dir(out.path())
        .unwrap()
        .find_map(Result::ok)
        .unwrap()
        .path();
    let genomes = || {
        galapagos::engine::archive::Archive::open(&run_dir)
            .unwrap()
            .genomes()
            .unwrap()
            .len()
    };
    let before = genomes();
    // The first run's PID, left in the lock file it no longer holds.
    let lock_before = std::fs::read(run_dir.join("run.lock")).ok();
    assert!(lock_before.is_some());
    for extra in [vec![], vec!["--iterations", "4"], vec!["--iterations", "2"]] {
        let o = galapagos()
            .arg("resume")
            .arg(&run_dir)
            .args(&extra)
            .arg("--quiet")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("already did 4 of") && stderr.contains("above 4"),
            "{extra:?}: {stderr}"
        );
        assert_eq!(
            genomes(),
            before,
            "{extra:?}: a refused resume wrote nothing"
        );
        assert_eq!(
            std::fs::read(run_dir.join("run.lock")).ok(),
            lock_before,
            "{extra:?}: not even the lock file"
        );
    }
    let o = galapagos()
        .arg("resume")
        .arg(&run_dir)
        .args(["--iterations", "6", "--quiet"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("iterations:  6"), "{stdout}");
    assert!(genomes() > before);
}

#[test]
fn a_missing_task_folder_fails_with_its_name() {
    let out = tempfile::tempdir().unwrap();
    let o = galapagos()
        .args([
            "run",
            "cards/best_of_n.yaml",
            "--task",
            "assets/tasks/nope",
            "--quiet",
            "--out",
        ])
        .arg(out.path())
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("assets/tasks/nope"));
}

#[test]
fn export_then_import_round_trips_a_card_through_the_cli() {
    let out = tempfile::tempdir().unwrap();
    let o = galapagos()
        .args(["export", "cards/best_of_n.yaml", "--out"])
        .arg(out.path().join("hub"))
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tarball = out.path().join("hub/default/best_of_n.tar.gz");
    assert!(tarball.is_file());
    let o = galapagos()
        .arg("import")
        .arg(&tarball)
        .arg("--out")
        .arg(out.path().join("cards"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let registry = galapagos::engine::registry::Registry::builtin();
    let a = galapagos::engine::card::Card::load(&root().join("cards/best_of_n.yaml"), &registry)
        .unwrap();
    let mut b =
        galapagos::engine::card::Card::load(&out.path().join("cards/best_of_n.yaml"), &registry)
            .unwrap();
    // the same card, which keeps where it came from: the bundle
    assert!(
        matches!(&b.provenance, Some(galapagos::engine::provenance::Provenance::Bundle { bundle, .. }) if *bundle == tarball.display().to_string()),
        "{:?}",
        b.provenance
    );
    assert_eq!(a.hash(), b.hash());
    b.provenance = None;
    assert_eq!(a, b);
    // importing again refuses to overwrite
    let o = galapagos()
        .arg("import")
        .arg(&tarball)
        .arg("--out")
        .arg(out.path().join("cards"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
}

/// The evaluation worker's code sits in the user's cache dir, where Python
/// keeps its bytecode from one run to the next; candidates still write no
/// bytecode, and a cache dir that cannot be written only costs the caching.
#[test]
fn the_worker_bytecode_is_cached_between_runs_and_an_unwritable_cache_still_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // A copy of a shipped task, to see what lands in it.
    let task = tmp.path().join("task");
    std::fs::create_dir(&task).unwrap();
    for f in ["evaluator.py", "initial_program.py"] {
        std::fs::copy(
            root().join("assets/tasks/circle_packing").join(f),
            task.join(f),
        )
        .unwrap();
    }
    let run = |cache: &Path, out: &str| {
        let o = galapagos()
            .args([
                "run",
                "cards/best_of_n.yaml",
                "--iterations",
                "3",
                "--quiet",
                "--task",
            ])
            .arg(&task)
            .arg("--out")
            .arg(tmp.path().join(out))
            .env("XDG_CACHE_HOME", cache)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let cache = tmp.path().join("cache");
    run(&cache, "a");
    let code_dirs: Vec<_> = std::fs::read_dir(cache.join("galapagos"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(code_dirs.len(), 1, "{code_dirs:?}");
    let code = &code_dirs[0];
    assert!(code.join("galapagos_worker.py").is_file());
    let pyc: Vec<_> = std::fs::read_dir(code.join("__pycache__"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        pyc.iter()
            .any(|n| n.starts_with("galapagos_worker.") && n.ends_with(".pyc")),
        "{pyc:?}"
    );
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let before = mtime(&code.join("galapagos_worker.py"));
    run(&cache, "b");
    assert_eq!(
        mtime(&code.join("galapagos_worker.py")),
        before,
        "an unchanged worker is not rewritten (its bytecode stays valid)"
    );
    assert!(
        !task.join("__pycache__").exists(),
        "candidates wrote bytecode"
    );
    // A file, not a dir: nothing can be created under it.
    let blocked = tmp.path().join("not-a-dir");
    std::fs::write(&blocked, "x").unwrap();
    run(&blocked, "c");
}

/// `galapagos ARGS` from the crate root with a fresh HOME; (exit code,
/// stdout, stderr).
fn cli(args: &[&str], home: &Path) -> (i32, String, String) {
    let o = galapagos()
        .args(args)
        .env("HOME", home)
        .current_dir(root())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_bad_flag_value_is_the_flags_error_not_the_cards() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("runs");
    let out = out.to_str().unwrap();
    let task = "assets/tasks/function_minimization";
    for (flag, value, expect) in [
        (
            "--iterations",
            "0",
            "error: --iterations: must be at least 1",
        ),
        (
            "--parallel",
            "0",
            "error: --parallel: must be between 1 and 256",
        ),
    ] {
        let (code, _, stderr) = cli(
            &[
                "run",
                "cards/best_of_n.yaml",
                "--task",
                task,
                flag,
                value,
                "--out",
                out,
            ],
            home.path(),
        );
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(stderr.trim(), expect);
    }
    assert!(!Path::new(out).exists(), "nothing written");
}

#[test]
fn import_names_a_file_given_as_out_and_never_follows_a_card_link() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let (code, _, stderr) = cli(
        &[
            "import",
            "cards/best_of_n.yaml",
            "--out",
            file.to_str().unwrap(),
        ],
        home.path(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("not a folder") && !stderr.contains("File exists"),
        "{stderr}"
    );
    // A bundle folder whose card.yaml links elsewhere: refused without
    // reading (or quoting) what the link points at.
    let secret = home.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-FIRST-LINE: do not print\n").unwrap();
    let bundle = home.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    std::os::unix::fs::symlink(&secret, bundle.join("card.yaml")).unwrap();
    let (code, _, stderr) = cli(&["import", bundle.to_str().unwrap()], home.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(!stderr.contains("SECRET"), "{stderr}");
}

#[test]
fn the_summary_names_the_model_once_and_each_progress_line_prints_once() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("runs");
    let (code, stdout, stderr) = cli(
        &[
            "run",
            "cards/best_of_n.yaml",
            "--task",
            "assets/tasks/function_minimization",
            "--iterations",
            "20",
            "--out",
            out.to_str().unwrap(),
        ],
        home.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    let model = stdout.lines().find(|l| l.starts_with("model:")).unwrap();
    assert_eq!(
        model,
        "model:       offline model (built-in, no network): no model configured; use --api-base URL \
         --model NAME or the user settings file for a real model"
    );
    // Output is not a terminal here: plain lines, none of them twice.
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("iteration "))
        .collect();
    let mut unique = progress.clone();
    unique.dedup();
    assert_eq!(progress, unique, "{stderr}");
    assert_eq!(
        progress
            .iter()
            .filter(|l| l.starts_with("iteration 20/20"))
            .count(),
        1,
        "{stderr}"
    );
}

/// Built-in cards and tasks are in the binary: from an empty folder with an
/// empty home, names resolve to them and the run works.
#[test]
fn a_run_from_an_empty_folder_with_an_empty_home_uses_the_built_in_card_and_task() {
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = galapagos()
        .args([
            "run",
            "best_of_n",
            "--task",
            "circle_packing",
            "--iterations",
            "5",
        ])
        .current_dir(cwd.path())
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("task:        built-in circle_packing"),
        "{stdout}"
    );
    // the task was written into the per-user data dir, the run into ./runs
    assert!(
        home.path()
            .join(".local/share/galapagos/tasks/circle_packing/evaluator.py")
            .is_file()
    );
    let runs: Vec<_> = std::fs::read_dir(cwd.path().join("runs"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].path().join("archive.sqlite").is_file());

    // validate takes the names too; an unknown name is neither a file nor a built-in
    let ok = galapagos()
        .args(["validate", "beam_search", "topk.yaml"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let missing = galapagos()
        .args(["validate", "no_such_card"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("no_such_card: no such file, built-in card or hub card")
    );
}
