//! Results are validated by one rule, whichever evaluator reported them:
//! every score is a finite number, and a `combined_score` that is a string,
//! a list, a dict, None or a bool makes the candidate invalid with an error
//! that names it. Checked through the Python (`subprocess`) evaluator and
//! the `command` evaluator, each with the same cases.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

use std::path::Path;

use galapagos::engine::component::{BuildContext, Component};
use galapagos::engine::evaluator::{
    Candidate, CommandEvaluator, CommandParams, Evaluation, Evaluator, SubprocessEvaluator,
    SubprocessParams,
};
use galapagos::engine::model::default_model;
use galapagos::engine::task::Task;

/// The values a case names (the candidate's file holds the case's name).
const VALUES: &str = r#"VALUES = {
    "number": 0.5,
    "int": 2,
    "string": "0.9",
    "list": [1.0, 2.0],
    "dict": {"a": 1},
    "none": None,
    "true": True,
    "nan": float("nan"),
    "inf": float("inf"),
    "huge": 10 ** 400,
}


def metrics(case):
    """combined_score is the named value, or, for "other-NAME", 0.5 with
    the named value as the metric `other`."""
    if case.startswith("other-"):
        return {"combined_score": 0.5, "other": VALUES[case[len("other-"):]]}
    return {"combined_score": VALUES[case]}
"#;

/// (case, the error it gets; None: valid).
const CASES: [(&str, Option<&str>); 15] = [
    ("number", None),
    ("int", None),
    (
        "string",
        Some("combined_score is a string (\"0.9\"), not a number"),
    ),
    (
        "list",
        Some("combined_score is a list ([1.0, 2.0]), not a number"),
    ),
    (
        "dict",
        Some("combined_score is a dict ({\"a\": 1}), not a number"),
    ),
    ("none", Some("combined_score is None, not a number")),
    (
        "true",
        Some("combined_score is a bool (True), not a number"),
    ),
    ("nan", Some("non-finite score combined_score (NaN)")),
    ("inf", Some("non-finite score combined_score (inf)")),
    ("huge", Some("non-finite score combined_score (inf)")),
    ("other-nan", Some("non-finite score other (NaN)")),
    ("other-inf", Some("non-finite score other (inf)")),
    // Other metrics that are not numbers are kept as artifacts (or, None,
    // dropped); bools are scores 0/1.
    ("other-string", None),
    ("other-none", None),
    ("other-true", None),
];

fn check(evaluation: &Evaluation, case: &str, error: Option<&str>, through: &str) {
    match error {
        None => {
            assert!(evaluation.valid, "{through}: {case}: {evaluation:?}");
            assert!(
                evaluation.scores.values().all(|v| v.is_finite()),
                "{through}: {case}: {evaluation:?}"
            );
        }
        Some(error) => {
            assert!(!evaluation.valid, "{through}: {case}: {evaluation:?}");
            // A list's or dict's text is as its evaluator wrote it (JSON
            // with or without spaces).
            let compact = |s: &str| s.replace(' ', "");
            assert_eq!(
                evaluation.error.as_deref().map(compact),
                Some(compact(error)),
                "{through}: {case}: {evaluation:?}"
            );
            assert!(
                !evaluation.scores.contains_key("combined_score") || case.starts_with("other-"),
                "{through}: {case}: no fitness from it: {evaluation:?}"
            );
        }
    }
    if case == "other-string" {
        assert_eq!(evaluation.artifacts["other"], "0.9", "{through}");
    }
    if case == "other-true" {
        assert_eq!(evaluation.scores["other"], 1.0, "{through}");
    }
}

fn candidate(id: u64, case: &str) -> Candidate {
    Candidate {
        id,
        content: format!("{case}\n").into(),
    }
}

fn task(dir: &Path, files: &[(&str, String)]) -> Task {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    Task::load(dir).unwrap()
}

#[tokio::test]
async fn every_case_through_the_python_evaluator() {
    let dir = tempfile::tempdir().unwrap();
    let evaluator = format!(
        "{VALUES}\n\ndef evaluate(program_path):\n    return metrics(open(program_path).read().strip())\n"
    );
    let task = task(
        dir.path(),
        &[
            ("evaluator.py", evaluator),
            ("initial_program.py", "number\n".to_owned()),
        ],
    );
    let ev = SubprocessEvaluator::new(
        &task,
        SubprocessParams {
            timeout_secs: 20.0,
            ..SubprocessParams::default()
        },
        2,
    );
    for (id, (case, error)) in (1..).zip(CASES) {
        let evaluation = ev.evaluate(&candidate(id, case)).await;
        check(&evaluation, case, error, "the Python evaluator");
    }
}

#[tokio::test]
async fn every_case_through_the_command_evaluator_on_stdout_and_in_metrics_json() {
    let dir = tempfile::tempdir().unwrap();
    // Python's json writes NaN and Infinity bare, as such evaluators do.
    let script = format!(
        "{VALUES}\n\nimport json, os, sys\n\
         case = open(sys.argv[1]).read().strip()\n\
         if sys.argv[3] == 'file':\n\
         \x20   with open(os.path.join(sys.argv[2], 'metrics.json'), 'w') as f:\n\
         \x20       json.dump(metrics(case), f)\n\
         else:\n\
         \x20   print('scoring', case)\n\
         \x20   print(json.dumps(metrics(case)))\n"
    );
    let task = task(
        dir.path(),
        &[
            ("score.py", script),
            ("initial_program.py", "number\n".to_owned()),
        ],
    );
    for channel in ["stdout", "file"] {
        let params = CommandParams {
            argv: [
                "{python}",
                "score.py",
                "{program}",
                "{results_dir}",
                channel,
            ]
            .map(str::to_owned)
            .to_vec(),
            timeout_secs: 20.0,
            ..CommandParams::default()
        };
        let ctx = BuildContext {
            task: &task,
            model: default_model(),
            parallel: 1,
            run_dir: None,
            key_vars: &[],
            meter: Default::default(),
        };
        let ev = CommandEvaluator::build(params, &ctx).unwrap();
        for (id, (case, error)) in (1..).zip(CASES) {
            let evaluation = ev.evaluate(&candidate(id, case)).await;
            if case == "huge" {
                // JSON with an integer beyond a float's range does not
                // parse here: no metrics, so invalid all the same.
                assert!(!evaluation.valid, "{channel}: {evaluation:?}");
                continue;
            }
            check(
                &evaluation,
                case,
                error,
                &format!("the command evaluator ({channel})"),
            );
        }
    }
}
