#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! Repository tasks: a program that is a folder of files, evaluated in a
//! writable copy of its own, recorded once per file, and taken home with
//! `apply` and `export-run --git` (which work for single-file runs too).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use galapagos::engine::archive::{Archive, read_genomes};
use galapagos::engine::component::{BuildContext, Component};
use galapagos::engine::evaluator::{
    Candidate, CommandEvaluator, CommandParams, Evaluator, SubprocessEvaluator, SubprocessParams,
};
use galapagos::engine::genome::Tree;
use galapagos::engine::model::default_model;
use galapagos::engine::task::Task;
use galapagos::engine::tree::Blob;

fn galapagos(home: &Path, cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.current_dir(cwd)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("OPENAI_API_KEY");
    c
}

fn ok(out: &std::process::Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (p, t) in files {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, t).unwrap();
    }
}

fn folder(files: &[(&str, &str)], binary: &[(&str, &[u8])]) -> Tree {
    let mut map: BTreeMap<String, Blob> = files
        .iter()
        .map(|(p, t)| ((*p).to_owned(), Blob::text(*t)))
        .collect();
    for (p, b) in binary {
        map.insert((*p).to_owned(), Blob::from_bytes(b.to_vec()));
    }
    Tree::folder(map)
}

/// An evaluator that writes into the candidate's folder and tries to write
/// beside itself, and reports what it found.
const FOLDER_EVALUATOR: &str = r#"
import os

def evaluate(program_path):
    assert os.path.isdir(program_path), program_path
    leftover = os.path.exists(os.path.join(program_path, "scratch.txt"))
    with open(os.path.join(program_path, "scratch.txt"), "w") as f:
        f.write("written by the evaluation")
    escaped = 1.0
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "escape.txt"), "w") as f:
            f.write("x")
    except OSError:
        escaped = 0.0
    with open(os.path.join(program_path, "data", "blob.bin"), "rb") as f:
        blob_ok = f.read() == bytes([0, 1, 2, 255])
    with open(os.path.join(program_path, "pkg", "value.txt")) as f:
        value = float(f.read())
    return {"combined_score": value, "leftover": float(leftover), "escaped": escaped, "blob_ok": float(blob_ok)}
"#;

fn value_tree(v: &str) -> Tree {
    folder(
        &[
            ("pkg/value.txt", v),
            (
                "pkg/mod.py",
                "# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\n",
            ),
        ],
        &[("data/blob.bin", &[0, 1, 2, 255])],
    )
}

#[tokio::test]
async fn the_python_evaluator_gets_a_writable_copy_of_the_folder_and_nothing_leaks() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[("evaluator.py", FOLDER_EVALUATOR)]);
    value_tree("0.5")
        .write_to(&dir.path().join("initial_program"))
        .unwrap();
    let task = Task::load(dir.path()).unwrap();
    assert!(!task.initial_program.is_single());
    let ev = SubprocessEvaluator::new(&task, SubprocessParams::default(), 1);
    for (id, v) in [(1, "0.25"), (2, "0.75")] {
        let content = value_tree(v);
        let before = content.clone();
        let e = ev
            .evaluate(&Candidate {
                id,
                content: content.clone(),
            })
            .await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], v.parse::<f64>().unwrap());
        assert_eq!(
            e.scores["leftover"], 0.0,
            "the previous candidate's file is not there"
        );
        assert_eq!(e.scores["escaped"], 0.0, "the task folder is read-only");
        assert_eq!(e.scores["blob_ok"], 1.0, "binary files arrive unchanged");
        assert_eq!(content, before);
    }
    assert!(!dir.path().join("escape.txt").exists());
    assert!(!dir.path().join("initial_program/scratch.txt").exists());
}

#[tokio::test]
async fn the_command_evaluator_gets_the_folder_as_program_path() {
    let dir = tempfile::tempdir().unwrap();
    let script = "#!/bin/sh\n\
        set -e\n\
        prog=\"$1\"; res=\"$2\"\n\
        test -d \"$prog\"\n\
        left=0; [ -e \"$prog/scratch.txt\" ] && left=1\n\
        echo written > \"$prog/scratch.txt\"\n\
        v=$(cat \"$prog/pkg/value.txt\")\n\
        printf '{\"combined_score\": %s, \"leftover\": %s}' \"$v\" \"$left\" > \"$res/metrics.json\"\n";
    write(dir.path(), &[("score.sh", script)]);
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            dir.path().join("score.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    value_tree("0.5")
        .write_to(&dir.path().join("initial_program"))
        .unwrap();
    let task = Task::load(dir.path()).unwrap();
    let ctx = BuildContext {
        task: &task,
        model: default_model(),
        parallel: 1,
        run_dir: None,
        key_vars: &[],
        meter: Default::default(),
    };
    let params = CommandParams {
        argv: vec![
            "{task_dir}/score.sh".into(),
            "{program}".into(),
            "{results_dir}".into(),
        ],
        ..CommandParams::default()
    };
    let ev = CommandEvaluator::build(params, &ctx).unwrap();
    for (id, v) in [(1, "0.25"), (2, "0.75")] {
        let e = ev
            .evaluate(&Candidate {
                id,
                content: value_tree(v),
            })
            .await;
        assert!(e.valid, "{e:?}");
        assert_eq!(e.scores["combined_score"], v.parse::<f64>().unwrap());
        assert_eq!(e.scores["leftover"], 0.0);
    }
    assert!(!dir.path().join("initial_program/scratch.txt").exists());
}

/// Runs `card` on `task` with the offline model from an empty folder with an
/// empty HOME; returns the run folder.
fn offline_run(home: &Path, cwd: &Path, task: &str, iterations: &str) -> PathBuf {
    let out = galapagos(home, cwd)
        .args([
            "run",
            "best_of_n",
            "--task",
            task,
            "--iterations",
            iterations,
            "--quiet",
        ])
        .output()
        .unwrap();
    ok(&out);
    let runs: Vec<PathBuf> = std::fs::read_dir(cwd.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn a_single_file_run_is_applied_and_exported_as_a_git_history() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = offline_run(home.path(), cwd.path(), "curve_fitting", "6");
    let archive = Archive::open(&run).unwrap();
    let genomes = archive.genomes().unwrap();
    let best = genomes
        .iter()
        .filter(|g| g.selection_fitness().is_some())
        .max_by(|a, b| {
            a.selection_fitness()
                .unwrap()
                .total_cmp(&b.selection_fitness().unwrap())
        })
        .unwrap();

    // into an empty folder: the whole program, under its task's file name
    let target = cwd.path().join("take");
    ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .arg("--to")
        .arg(&target)
        .output()
        .unwrap());
    let written = std::fs::read_to_string(target.join("initial_program.py")).unwrap();
    assert_eq!(best.content, written.as_str());

    // a local change is not overwritten without --force
    let changed = genomes
        .iter()
        .find(|g| g.valid && g.content != genomes[0].content)
        .expect("the offline model changed the program");
    let id = changed.id.to_string();
    std::fs::write(target.join("initial_program.py"), "# my own edit\n").unwrap();
    let out = galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .args(["--genome", &id, "--to"])
        .arg(&target)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("local changes in initial_program.py") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("initial_program.py")).unwrap(),
        "# my own edit\n"
    );
    ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .args(["--genome", &id, "--force", "--to"])
        .arg(&target)
        .output()
        .unwrap());
    assert_eq!(
        changed.content,
        std::fs::read_to_string(target.join("initial_program.py"))
            .unwrap()
            .as_str()
    );

    // the best genome's lineage as a git history
    let repo = cwd.path().join("history");
    ok(&galapagos(home.path(), cwd.path())
        .arg("export-run")
        .arg(&run)
        .arg("--git")
        .arg(&repo)
        .output()
        .unwrap());
    let log = Command::new("git")
        .args(["log", "--reverse", "--format=%s"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout).into_owned();
    let lines: Vec<&str> = subjects.lines().collect();
    assert_eq!(
        lines.len() as u32,
        best.metadata.generation + 1,
        "{subjects}"
    );
    assert!(
        lines[0].starts_with("generation 0: genome #0"),
        "{subjects}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .contains(&format!("genome #{}", best.id)),
        "{subjects}"
    );
    assert!(subjects.contains("combined_score"), "{subjects}");
    assert_eq!(
        best.content,
        std::fs::read_to_string(repo.join("initial_program.py"))
            .unwrap()
            .as_str()
    );
    // a second export into the same folder is refused
    let out = galapagos(home.path(), cwd.path())
        .arg("export-run")
        .arg(&run)
        .arg("--git")
        .arg(&repo)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
}

/// `apply` into a folder that holds an earlier genome compares with that
/// genome, not with the run's initial program: a checkout of an earlier
/// generation of `export-run --git` (its HEAD), or a plain copy of a
/// genome; a change made on top of either is still a local change.
#[test]
fn apply_into_a_checkout_of_an_earlier_generation_takes_the_best() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = offline_run(home.path(), cwd.path(), "curve_fitting", "8");
    let genomes = Archive::open(&run).unwrap().genomes().unwrap();
    let repo = cwd.path().join("history");
    ok(&galapagos(home.path(), cwd.path())
        .arg("export-run")
        .arg(&run)
        .arg("--git")
        .arg(&repo)
        .output()
        .unwrap());
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let commits: Vec<String> = git(&["log", "--reverse", "--format=%H %s"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(
        commits.len() >= 3,
        "a lineage of three generations: {commits:?}"
    );
    // generation 1: neither the initial program nor the best
    let (hash, subject) = commits[1].split_once(' ').unwrap();
    let earlier: u64 = subject
        .split("genome #")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    git(&["checkout", "--quiet", hash]);
    let file = repo.join("initial_program.py");
    let best = genomes.iter().find(|g| {
        commits
            .last()
            .unwrap()
            .contains(&format!("genome #{} ", g.id))
    });
    let best = best.unwrap();
    assert_ne!(
        std::fs::read_to_string(&file).unwrap(),
        best.content.single_text().unwrap()
    );
    assert_ne!(genomes[0].content, best.content);

    // a change on top of the checkout is a local change, named against HEAD
    std::fs::write(&file, "# mine\n").unwrap();
    let out = galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .arg("--to")
        .arg(&repo)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("the checkout's HEAD (genome #{earlier})")),
        "{err}"
    );
    git(&["checkout", "--quiet", "--", "initial_program.py"]);

    // the checkout as it is: the best is written over the earlier genome
    let out = ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .arg("--to")
        .arg(&repo)
        .output()
        .unwrap());
    assert!(out.contains("1 file(s) written"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        best.content.single_text().unwrap()
    );

    // a plain copy of the earlier genome (no git) takes the best too
    let copy = cwd.path().join("copy");
    ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .args(["--genome", &earlier.to_string(), "--to"])
        .arg(&copy)
        .output()
        .unwrap());
    ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .arg("--to")
        .arg(&copy)
        .output()
        .unwrap());
    assert_eq!(
        std::fs::read_to_string(copy.join("initial_program.py")).unwrap(),
        best.content.single_text().unwrap()
    );
}

/// The repository demo as the docs give it, from an empty folder with an
/// empty HOME: `run repository --task fit_package --iterations 15` on the
/// offline model beats the initial program (it did not: every child of
/// the initial program was worse, so `apply` and `export-run --git` had
/// nothing to show), and the best goes home: `apply` into a copy of the
/// initial program writes the package files it changed, `export-run --git`
/// a history of more than the initial commit.
#[test]
fn the_repository_demo_improves_in_15_iterations_and_goes_home() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = galapagos(home.path(), cwd.path())
        .args([
            "run",
            "repository",
            "--task",
            "fit_package",
            "--iterations",
            "15",
            "--quiet",
        ])
        .output()
        .unwrap();
    let stdout = ok(&out);
    let runs: Vec<PathBuf> = std::fs::read_dir(cwd.path().join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let run = &runs[0];
    let genomes = Archive::open(run).unwrap().genomes().unwrap();
    let initial = genomes[0].fitness().unwrap();
    let best = genomes
        .iter()
        .filter_map(|g| g.fitness().map(|f| (f, g)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    assert!(
        best.0 > initial,
        "best {} <= initial {initial}\n{stdout}",
        best.0
    );

    // apply: the package as the initial program has it, then the best
    let pkg = cwd.path().join("pkg");
    ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(run)
        .args(["--genome", "0", "--to"])
        .arg(&pkg)
        .output()
        .unwrap());
    let applied = ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(run)
        .arg("--to")
        .arg(&pkg)
        .output()
        .unwrap());
    assert!(applied.contains("wrote fitpkg/"), "{applied}");
    for (path, blob) in best.1.content.files() {
        assert_eq!(
            std::fs::read(pkg.join(path)).unwrap(),
            blob.bytes(),
            "{path}"
        );
    }

    // export-run --git: the lineage, more than the initial commit
    let repo = cwd.path().join("history");
    let exported = ok(&galapagos(home.path(), cwd.path())
        .arg("export-run")
        .arg(run)
        .arg("--git")
        .arg(&repo)
        .output()
        .unwrap());
    let log = Command::new("git")
        .args(["log", "--format=%s"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let commits = String::from_utf8_lossy(&log.stdout).lines().count();
    assert!(commits >= 2, "{exported}");
}

#[test]
fn a_repository_run_is_recorded_once_per_file_and_read_back_everywhere() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = offline_run(home.path(), cwd.path(), "fit_package", "8");
    let genomes = Archive::open(&run).unwrap().genomes().unwrap();
    assert_eq!(genomes.last().map(|g| g.iteration), Some(8));
    let initial = &genomes[0];
    assert!(initial.valid, "{:?}", initial.error);
    assert!(!initial.content.is_single());
    assert!(initial.content.text_of("fitpkg/model.py").is_some());
    // the offline model's children change the package's files, one or both
    let mut most = 0;
    for child in genomes.iter().filter(|g| g.valid && g.parent_id.is_some()) {
        let parent = &genomes[child.parent_id.unwrap() as usize];
        let changed: Vec<String> = child
            .content
            .changes_from(&parent.content)
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert!(!changed.is_empty(), "#{} changes no file", child.id);
        assert!(
            changed.iter().all(|p| p.starts_with("fitpkg/")),
            "{changed:?}"
        );
        assert!(
            child
                .diff
                .as_deref()
                .is_some_and(|d| d.contains("+++ b/fitpkg/"))
        );
        most = most.max(changed.len());
    }
    assert_eq!(most, 2, "some child edits both modules");
    // genomes.jsonl holds references, read back through the archive
    let lines = read_genomes(&run.join("genomes.jsonl")).unwrap();
    assert_eq!(lines.len(), genomes.len());
    for (a, b) in genomes.iter().zip(&lines) {
        assert_eq!(a.content, b.content);
    }
    let jsonl = std::fs::read_to_string(run.join("genomes.jsonl")).unwrap();
    for line in jsonl.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let content = v["content"]
            .as_object()
            .expect("a folder program is a reference");
        assert_eq!(
            content.keys().collect::<Vec<_>>(),
            vec!["tree"],
            "files are not copied into every line"
        );
    }
    // export-run --jsonl writes the files themselves
    let out = galapagos(home.path(), cwd.path())
        .arg("export-run")
        .arg(&run)
        .arg("--jsonl")
        .output()
        .unwrap();
    let exported = ok(&out);
    assert!(exported.contains("def predict"));
    // resume continues the repository run
    ok(&galapagos(home.path(), cwd.path())
        .arg("resume")
        .arg(&run)
        .args(["--iterations", "10", "--quiet"])
        .output()
        .unwrap());
    let after = Archive::open(&run).unwrap().genomes().unwrap();
    assert_eq!(after.last().map(|g| g.iteration), Some(10));
    assert_eq!(after[0].content, initial.content);
    let best = after
        .iter()
        .filter(|g| g.selection_fitness().is_some())
        .max_by(|a, b| {
            a.selection_fitness()
                .unwrap()
                .total_cmp(&b.selection_fitness().unwrap())
        })
        .unwrap();
    assert!(
        best.id > 0 && best.fitness() > initial.fitness(),
        "the run improved"
    );
    let unittest = |dir: &Path| {
        let test = Command::new("python3")
            .args(["-m", "unittest", "-q"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            test.status.success(),
            "{}",
            String::from_utf8_lossy(&test.stderr)
        );
    };

    // apply writes a folder a user can test
    let target = cwd.path().join("take");
    ok(&galapagos(home.path(), cwd.path())
        .arg("apply")
        .arg(&run)
        .arg("--to")
        .arg(&target)
        .output()
        .unwrap());
    for (path, blob) in best.content.files() {
        assert_eq!(
            std::fs::read(target.join(path)).unwrap(),
            blob.bytes(),
            "{path}"
        );
    }
    unittest(&target);

    // and a git history of the best genome's lineage, whose tip tests too
    let repo = cwd.path().join("history");
    ok(&galapagos(home.path(), cwd.path())
        .arg("export-run")
        .arg(&run)
        .arg("--git")
        .arg(&repo)
        .output()
        .unwrap());
    let log = Command::new("git")
        .args(["log", "--format=%s"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout).into_owned();
    assert_eq!(
        subjects.lines().count() as u32,
        best.metadata.generation + 1,
        "{subjects}"
    );
    assert!(subjects.starts_with(&format!(
        "generation {}: genome #{}",
        best.metadata.generation, best.id
    )));
    for (path, blob) in best.content.files() {
        assert_eq!(
            std::fs::read(repo.join(path)).unwrap(),
            blob.bytes(),
            "{path}"
        );
    }
    unittest(&repo);
}

#[test]
fn a_leaderboard_runs_on_a_repository_task() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cards = Path::new(env!("CARGO_MANIFEST_DIR")).join("cards");
    let task = galapagos::engine::builtin::install_task(
        galapagos::engine::builtin::task("fit_package").unwrap(),
        cwd.path(),
    )
    .unwrap();
    let out = galapagos(home.path(), cwd.path())
        .arg("leaderboard")
        .arg(cards.join("best_of_n.yaml"))
        .arg(cards.join("topk.yaml"))
        .arg("--task")
        .arg(&task)
        .args([
            "--iterations",
            "2",
            "--seeds",
            "1",
            "--quiet",
            "--out",
            "lb",
        ])
        .output()
        .unwrap();
    ok(&out);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cwd.path().join("lb/leaderboard.json")).unwrap(),
    )
    .unwrap();
    let text = json.to_string();
    assert!(
        text.contains("best_of_n") && text.contains("topk"),
        "{text}"
    );
    assert!(cwd.path().join("lb/leaderboard.md").is_file());
}

#[test]
fn a_version_1_archive_still_loads() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = offline_run(home.path(), cwd.path(), "curve_fitting", "2");
    let before = Archive::open(&run).unwrap().genomes().unwrap();
    {
        let conn = rusqlite::Connection::open(run.join("archive.sqlite")).unwrap();
        conn.execute_batch(
            "DROP TABLE blobs; DROP TABLE trees; UPDATE meta SET value = '1' WHERE key = 'schema_version';",
        )
        .unwrap();
    }
    let after = Archive::open(&run).unwrap().genomes().unwrap();
    assert_eq!(before, after);
    ok(&galapagos(home.path(), cwd.path())
        .arg("resume")
        .arg(&run)
        .args(["--iterations", "3", "--quiet"])
        .output()
        .unwrap());
    assert_eq!(Archive::open(&run).unwrap().genomes().unwrap().len(), 4);
}

/// A tree written as hard links into a folder nothing writes (a Slurm
/// candidate's staging folder): every file as the tree holds it, one
/// read-only copy per distinct file in the store, shared by the trees that
/// have it.
#[test]
fn a_linked_tree_shares_one_read_only_copy_per_distinct_file() {
    use std::os::unix::fs::MetadataExt as _;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("blobs");
    let a = value_tree("1.0");
    let b = value_tree("2.0");
    let (da, db) = (dir.path().join("a"), dir.path().join("b"));
    a.link_into(&da, &store).unwrap();
    b.link_into(&db, &store).unwrap();
    for (tree, folder) in [(&a, &da), (&b, &db)] {
        for (path, blob) in tree.files() {
            assert_eq!(
                std::fs::read(folder.join(path)).unwrap(),
                blob.bytes(),
                "{path}"
            );
        }
    }
    let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
    assert_eq!(inode(&da.join("pkg/mod.py")), inode(&db.join("pkg/mod.py")));
    assert_eq!(
        inode(&da.join("data/blob.bin")),
        inode(&db.join("data/blob.bin"))
    );
    assert_ne!(
        inode(&da.join("pkg/value.txt")),
        inode(&db.join("pkg/value.txt"))
    );
    let stored: Vec<std::fs::Metadata> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap())
        .collect();
    assert_eq!(stored.len(), 4, "mod.py, blob.bin and two value.txt");
    assert!(stored.iter().all(|m| m.mode() & 0o222 == 0), "read-only");
}
