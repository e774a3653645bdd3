#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Limits that keep a run from spending or storing without bound: a program
//! already over `max_code_length` is refused before any model call, and a
//! huge raw reply is stored only up to `general.max_response_bytes`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{ScriptedModel, card, collect, plan_in, registry, spawn_with, temp_task};
use galapagos::engine::archive::Archive;
use galapagos::engine::model::{ModelError, ModelReply};

fn galapagos(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_galapagos"));
    c.current_dir(env!("CARGO_MANIFEST_DIR")).env("HOME", home);
    c
}

#[test]
fn an_initial_program_over_max_code_length_is_refused_before_any_model_call() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    // 70 000 characters, over the default max_code_length (60 000).
    let big = std::fs::read_to_string(task.join("initial_program.py")).unwrap()
        + &format!("# {}\n", "x".repeat(70_000));
    std::fs::write(task.join("initial_program.py"), &big).unwrap();
    let out = dir.path().join("runs");
    let run = |extra: &[&str]| {
        galapagos(home.path())
            .args(["run", "cards/best_of_n.yaml", "--task"])
            .arg(&task)
            .args(["--iterations", "2", "--quiet", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let length = big.chars().count();
    assert!(
        stderr.contains(&format!(
            "the initial program has {length} characters, more than the proposer's max_code_length (60000)"
        )) && stderr.contains("initial_program.py")
            && stderr.contains("the card's proposer.max_code_length"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written for a refused run");
    // Set by the task's config, the message says so.
    std::fs::write(task.join("config.yaml"), "max_code_length: 1000\n").unwrap();
    let o = run(&[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("max_code_length (1000)")
            && stderr.contains("max_code_length in the task's config"),
        "{stderr}"
    );
    // Raised above the program, the run goes.
    std::fs::write(task.join("config.yaml"), "max_code_length: 200000\n").unwrap();
    let o = run(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_huge_raw_reply_is_stored_up_to_the_cap_with_its_full_length() {
    let registry = registry();
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut c = card("best_of_n.yaml", &registry);
    c.general.max_iterations = 3;
    c.general.inner_retry_times = 0;
    let huge = "garbage that is no edit ".repeat(200_000); // 4.8 MB
    let failed_call = "x".repeat(1_000_000);
    let model = ScriptedModel::replies(vec![
        Ok(ModelReply {
            text: huge.clone(),
            model: "scripted".into(),
            usage: None,
        }),
        Err(ModelError::Failed {
            message: "HTTP 200: not JSON".into(),
            raw: Some(failed_call.clone()),
        }),
        Ok(ModelReply {
            text: "short and no edit".into(),
            model: "scripted".into(),
            usage: None,
        }),
    ]);
    let run_dir = dir.path().join("run");
    let plan = plan_in(c, &task, Some(run_dir.clone()), &registry);
    let (_, summary) = collect(spawn_with(plan, model), |_, _| {});
    assert_eq!(summary.iterations, 3, "{summary:?}");
    let genomes = Archive::open(&run_dir).unwrap().genomes().unwrap();
    let cap = 256 * 1024;
    let g1 = &genomes[1];
    let kept = g1.response.as_deref().unwrap();
    assert_eq!(g1.response_bytes, Some(huge.len() as u64));
    assert!(kept.starts_with(&huge[..cap]));
    assert!(kept.len() < cap + 200, "{}", kept.len());
    assert!(kept.ends_with(&format!(
        "[reply cut: the first {cap} of {} bytes are kept (general.max_response_bytes)]",
        huge.len()
    )));
    // The raw body of a failed call is bounded the same way.
    assert_eq!(genomes[2].response_bytes, Some(1_000_000));
    assert!(genomes[2].response.as_deref().unwrap().len() < cap + 200);
    // A reply under the cap is kept whole, with no length recorded.
    assert_eq!(genomes[3].response.as_deref(), Some("short and no edit"));
    assert_eq!(genomes[3].response_bytes, None);
    // The run folder stays small: both files hold the cut replies.
    let size: u64 = ["archive.sqlite", "genomes.jsonl"]
        .iter()
        .map(|f| std::fs::metadata(run_dir.join(f)).unwrap().len())
        .sum();
    assert!(size < 2 * 1024 * 1024, "run folder {size} bytes");
}

#[test]
fn max_response_bytes_is_checked_in_the_card() {
    let registry = registry();
    let mut c = card("best_of_n.yaml", &registry);
    c.general.max_response_bytes = 10;
    let problems = c.validate(&registry);
    assert!(
        problems
            .iter()
            .any(|p| p.field == "general.max_response_bytes"
                && p.message == "must be between 1024 and 33554432"),
        "{problems:?}"
    );
    // The default is not written into a card.
    let c = card("best_of_n.yaml", &registry);
    assert!(!c.to_yaml().contains("max_response_bytes"));
}
