#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! `galapagos leaderboard` as a user runs it, with the offline model: three
//! cards on circle_packing, 5 seeds × 30 iterations, killed with SIGKILL in
//! the middle and run again.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const CARDS: [&str; 3] = ["best_of_n", "topk", "best_of_n_attempts"];

fn leaderboard(out: &Path, home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.arg("leaderboard");
    for card in CARDS {
        c.arg(root().join("cards").join(format!("{card}.yaml")));
    }
    c.arg("--task")
        .arg(root().join("assets/tasks/circle_packing"))
        .args([
            "--seeds",
            "5",
            "--iterations",
            "30",
            "--parallel",
            "2",
            "--target",
            "0.8",
        ])
        .arg("--out")
        .arg(out)
        // No user settings: the offline model.
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENAI_API_KEY");
    c
}

/// The best fitness of a run, read from its genomes.jsonl on its own.
fn best_in_jsonl(dir: &Path) -> f64 {
    galapagos::engine::archive::read_genomes(&dir.join("genomes.jsonl"))
        .unwrap()
        .iter()
        .filter_map(galapagos::engine::genome::Genome::fitness)
        .fold(f64::NEG_INFINITY, f64::max)
}

fn run_dir(out: &Path, card: &str, seed: u64) -> PathBuf {
    out.join("runs").join(format!("{card}-seed{seed}"))
}

#[test]
fn a_leaderboard_of_three_cards_survives_a_kill_and_agrees_with_the_archives() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lb");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let t0 = Instant::now();

    // First invocation: killed with SIGKILL once four runs have finished.
    let mut child = leaderboard(&out, &home)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut finished_before = Vec::new();
    for line in stderr.lines() {
        let line = line.unwrap();
        assert!(!line.contains("failed"), "{line}");
        if line.contains(": completed in") {
            finished_before.push(line.split(':').next().unwrap().to_owned());
            if finished_before.len() == 4 {
                break;
            }
        }
    }
    assert_eq!(finished_before.len(), 4, "the first invocation ended early");
    // Let the next runs get under way, then kill the process outright.
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    let first_secs = t0.elapsed().as_secs_f64();
    assert!(
        !out.join("leaderboard.json").exists(),
        "the killed batch wrote no leaderboard"
    );
    // What the finished runs hold, to see that nothing reruns them.
    let snapshot = |name: &str| -> Vec<u8> {
        let (card, seed) = name.rsplit_once(" seed ").unwrap();
        std::fs::read(run_dir(&out, card, seed.parse().unwrap()).join("genomes.jsonl")).unwrap()
    };
    let before: Vec<Vec<u8>> = finished_before.iter().map(|n| snapshot(n)).collect();

    // Second invocation: finishes the batch.
    let t1 = Instant::now();
    let done = leaderboard(&out, &home).output().unwrap();
    let second_secs = t1.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    for name in &finished_before {
        assert!(
            stderr.contains(&format!("{name}: finished before, skipped")),
            "{name} was not skipped:\n{stderr}"
        );
    }
    let after: Vec<Vec<u8>> = finished_before.iter().map(|n| snapshot(n)).collect();
    assert!(
        before == after,
        "a finished run's record changed on the rerun"
    );
    // Runs that finished during the kill's delay are skipped too; the rest
    // ran now, and the batch was really cut in the middle.
    let skipped = stderr.matches(": finished before, skipped").count();
    let rerun = stderr.matches(": completed in").count();
    assert!((4..15).contains(&skipped), "{skipped} skipped:\n{stderr}");
    assert_eq!(
        skipped + rerun,
        15,
        "every run is skipped or run once:\n{stderr}"
    );

    // The files, and their numbers against the runs' own records.
    let md = std::fs::read_to_string(out.join("leaderboard.md")).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap())
            .unwrap();
    assert_eq!(json["iterations"], 30);
    assert_eq!(json["baseline"], "best_of_n");
    let cards = json["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 3);
    for card in cards {
        let name = card["card"].as_str().unwrap();
        assert!(
            md.contains(&format!("| {name} |")),
            "{name} missing from the table:\n{md}"
        );
        let runs = card["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 5);
        let mut bests = Vec::new();
        for run in runs {
            let seed = run["seed"].as_u64().unwrap();
            let dir = run_dir(&out, name, seed);
            let summary: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                    .unwrap();
            let best = run["best"].as_f64().unwrap();
            assert_eq!(best, best_in_jsonl(&dir), "{name} seed {seed}");
            assert_eq!(
                summary["best_score"].as_f64().unwrap(),
                best,
                "{name} seed {seed}"
            );
            assert_eq!(run["iterations_done"], 30, "{name} seed {seed}");
            assert_eq!(summary["iterations"], 30, "{name} seed {seed}");
            let curve = run["best_so_far"].as_array().unwrap();
            assert_eq!(curve.len(), 31);
            assert_eq!(curve[30].as_f64().unwrap(), best);
            bests.push(best);
        }
        let mean = bests.iter().sum::<f64>() / 5.0;
        let est = &card["best"];
        assert!(
            (est["mean"].as_f64().unwrap() - mean).abs() < 1e-12,
            "{name}"
        );
        let (lo, hi) = (
            est["ci_low"].as_f64().unwrap(),
            est["ci_high"].as_f64().unwrap(),
        );
        assert!(
            lo <= mean && mean <= hi,
            "{name}: CI [{lo}, {hi}] misses its mean {mean}"
        );
        assert!(
            md.contains(&format!("{mean:.4}")),
            "{name}: mean {mean:.4} not in the table"
        );
        if name == "best_of_n" {
            assert!(card["vs_baseline"].is_null());
        } else {
            let verdict = card["vs_baseline"]["verdict"].as_str().unwrap();
            assert!(
                ["better", "worse", "no difference at this budget"].contains(&verdict),
                "{verdict}"
            );
            assert!(md.contains(verdict));
        }
    }
    // The plot: a PNG and an SVG naming every card.
    let png = std::fs::read(out.join("leaderboard.png")).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a drawn PNG"
    );
    let svg = std::fs::read_to_string(out.join("leaderboard.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"));
    for name in CARDS {
        assert!(
            svg.lines().any(|l| l.trim() == name),
            "{name} missing from the plot's legend"
        );
    }
    // The hub bundle's README gets the leaderboard as its "Results" section.
    let hub = tmp.path().join("hub");
    let export = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args(["export"])
        .arg(root().join("cards/topk.yaml"))
        .arg("--out")
        .arg(&hub)
        .arg("--results")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let readme = std::fs::read_dir(&hub)
        .unwrap()
        .filter_map(Result::ok)
        .map(|ns| ns.path().join("topk/README.md"))
        .find(|p| p.is_file())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap();
    let results = &readme[readme.find("## Results").expect("a Results section")..];
    let topk_mean = cards.iter().find(|c| c["card"] == "topk").unwrap()["best"]["mean"]
        .as_f64()
        .unwrap();
    for needed in [
        "circle_packing".to_owned(),
        "30 iterations per run".to_owned(),
        "seeds 0, 1, 2, 3, 4".to_owned(),
        "model offline".to_owned(),
        format!("{topk_mean:.4}"),
        "| best_of_n_attempts |".to_owned(),
    ] {
        assert!(
            results.contains(&needed),
            "`{needed}` missing from:\n{results}"
        );
    }
    // A card that is not on the leaderboard is refused, nothing written.
    let refused = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args(["export"])
        .arg(root().join("cards/beam_search.yaml"))
        .arg("--out")
        .arg(tmp.path().join("hub2"))
        .arg("--results")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not on this leaderboard"));
    assert!(!tmp.path().join("hub2").exists());
    let startup = json["max_startup_secs"].as_f64().unwrap();
    eprintln!(
        "leaderboard test: first invocation {first_secs:.1} s (killed), second {second_secs:.1} s, \
         longest run start-up {startup:.2} s"
    );
}

#[test]
fn a_card_stopped_by_its_token_cap_is_marked_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // topk, renamed, with a one-token cap: its runs stop after one iteration.
    let capped = tmp.path().join("topk_capped.yaml");
    let yaml = std::fs::read_to_string(root().join("cards/topk.yaml"))
        .unwrap()
        .replacen("name: topk\n", "name: topk_capped\n", 1)
        .replacen("general:\n", "general:\n  max_tokens: 1\n", 1);
    assert!(yaml.contains("max_tokens: 1"));
    std::fs::write(&capped, yaml).unwrap();
    let out = tmp.path().join("lb");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_galapagos"))
            .arg("leaderboard")
            .arg(root().join("cards/best_of_n.yaml"))
            .arg(&capped)
            .arg("--task")
            .arg(root().join("assets/tasks/circle_packing"))
            .args(["--seeds", "2", "--iterations", "4", "--out"])
            .arg(&out)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    };
    let first = run();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert_eq!(stderr.matches("topk_capped seed").count(), 2, "{stderr}");
    assert_eq!(stderr.matches(": budget reached (").count(), 2, "{stderr}");
    let check = || {
        let md = std::fs::read_to_string(out.join("leaderboard.md")).unwrap();
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap())
                .unwrap();
        assert!(md.contains("| topk_capped (capped) |"), "{md}");
        assert!(md.contains("| best_of_n |"), "{md}");
        assert!(md.contains("(capped): a run of this card stopped at its token or cost cap"));
        let cards = json["cards"].as_array().unwrap();
        let card = |name: &str| cards.iter().find(|c| c["card"] == name).unwrap();
        assert_eq!(card("topk_capped")["capped"], true);
        assert_eq!(card("best_of_n")["capped"], false);
        for r in card("topk_capped")["runs"].as_array().unwrap() {
            assert_eq!(r["capped"], true);
            assert!(r["iterations_done"].as_u64().unwrap() < 4, "{r}");
            assert!(r["status"].as_str().unwrap().contains("tokens used, cap 1"));
        }
        for r in card("best_of_n")["runs"].as_array().unwrap() {
            assert_eq!(r["capped"], false);
            assert_eq!(r["iterations_done"], 4);
        }
    };
    check();
    // Run again on the folder: the capped runs count as finished (skipped,
    // not run on) and stay marked.
    let again = run();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches(": finished before, skipped").count(),
        4,
        "{stderr}"
    );
    check();
}

/// `galapagos leaderboard` takes built-in card and task names, as `run`
/// does, from an empty folder with an empty HOME.
/// `galapagos leaderboard best_of_n topk --task circle_packing --seeds 1`
/// with `iterations` and `more` arguments, from `work` with an empty `home`
/// (the offline model).
fn built_in_batch(
    home: &Path,
    work: &Path,
    iterations: &str,
    more: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "leaderboard",
            "best_of_n",
            "topk",
            "--task",
            "circle_packing",
            "--seeds",
            "1",
            "--iterations",
            iterations,
            "--quiet",
        ])
        .args(more)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("OPENAI_BASE_URL")
        .current_dir(work)
        .output()
        .unwrap()
}

#[test]
fn built_in_card_and_task_names_work_from_an_empty_folder() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let o = built_in_batch(home.path(), work.path(), "2", &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join("leaderboard/leaderboard.json")).unwrap(),
    )
    .unwrap();
    let cards: Vec<&str> = json["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["card"].as_str().unwrap())
        .collect();
    assert_eq!(cards, ["best_of_n", "topk"]);
    assert_eq!(json["task"], "circle_packing");
    assert!(
        home.path()
            .join(".local/share/galapagos/tasks/circle_packing/evaluator.py")
            .is_file()
    );
}

/// A leaderboard records the model's identity (`offline`), never the advice
/// the command line or the studio gives with it ("use --api-base …", "add
/// an endpoint in Model settings"): leaderboard.json and leaderboard.md are
/// published as they are (a hub page's Model column reads them).
#[test]
fn the_leaderboard_records_the_model_not_advice() {
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("leaderboard")
        .arg(root().join("cards/best_of_n.yaml"))
        .arg("--task")
        .arg(root().join("assets/tasks/circle_packing"))
        .args(["--seeds", "1", "--iterations", "1", "--quiet", "--out"])
        .arg(out.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("leaderboard.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["model"], "offline");
    let md = std::fs::read_to_string(out.path().join("leaderboard.md")).unwrap();
    assert!(md.contains("the model offline"), "{md}");
    for advice in [
        "--api-base",
        "--model",
        "Model settings",
        "no model configured",
    ] {
        assert!(!md.contains(advice), "{advice}: {md}");
    }
}

/// A batch into a folder that holds another batch's runs (a bigger budget)
/// is refused before anything starts, naming a run it cannot continue, and
/// the folder's leaderboard is left as it was; before, every run failed on
/// its own and the earlier batch's leaderboard.md was written over with an
/// empty one. A batch with a bigger budget still continues those runs.
#[test]
fn a_batch_folder_with_another_batchs_runs_is_refused_and_kept() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let batch =
        |iterations: &str| built_in_batch(home.path(), work.path(), iterations, &["--out", "lb"]);
    let first = batch("4");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let md = work.path().join("lb/leaderboard.md");
    let before = std::fs::read(&md).unwrap();
    let smaller = batch("2");
    let stderr = String::from_utf8_lossy(&smaller.stderr);
    assert!(!smaller.status.success(), "{stderr}");
    assert!(
        stderr.contains("holds another batch's runs")
            && stderr
                .contains("best_of_n-seed0 holds a run with a budget of 4 iterations, more than 2")
            && stderr.contains("pick another batch folder"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&md).unwrap(),
        before,
        "leaderboard.md was written over"
    );
    // a bigger budget continues the same runs
    let bigger = batch("6");
    assert!(
        bigger.status.success(),
        "{}",
        String::from_utf8_lossy(&bigger.stderr)
    );
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join("lb/leaderboard.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["iterations"], 6, "{json}");
}
