//! The shipped mathematical tasks (AlphaEvolve's problems and the records
//! set on them since) through the crate's evaluation path: each task's
//! evaluator runs in the subprocess evaluator, sandboxed, as a run runs it.
//!
//! - Every initial program is valid, weak (combined_score well under 1) and
//!   cheap (a warm evaluation under a second), and its combined_score is its
//!   value normalised by the config's `best_known` in the right direction.
//! - Invalid constructions are refused with the reason: a circle grown by
//!   1e-6, a point outside the domain (also the first float past a side of
//!   the triangle, which only an exact check sees), a negative step, a
//!   rectangle over perimeter 4, coinciding points, a set without 0.
//! - Published constructions score their published value, and the table
//!   "problem | construction's source | published value | our value |
//!   valid?" in docs/benchmarks.md is what they score (regenerated with
//!   `GALAPAGOS_REGENERATE_BENCHMARKS=1`, compared otherwise; a row that
//!   differs is named with its file). The constructions are third-party data,
//!   not kept in this repository: they are read from
//!   `shared/benchmarks/constructions` beside the checkout (CI runs with a
//!   copy of shared/ beside its clone), or from the folder
//!   `GALAPAGOS_BENCHMARK_DATA` names: one JSON file per construction,
//!   `TASK/ID.json` (see [`Published`]), and a NOTICE.md giving each file's
//!   source (repository, path, commit), licence and attribution. Without
//!   them that test says so loudly and checks nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use galapagos::engine::evaluator::{
    Candidate, Evaluation, Evaluator, SubprocessEvaluator, SubprocessParams,
};
use galapagos::engine::task::Task;

/// The shipped mathematical tasks.
const TASKS: [&str; 10] = [
    "circle_packing",
    "circle_packing_32",
    "circles_rectangle_21",
    "heilbronn_triangle_11",
    "heilbronn_convex_13",
    "min_max_distance_16_2d",
    "min_max_distance_14_3d",
    "autocorrelation_first",
    "erdos_min_overlap",
    "sums_differences",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn task(name: &str) -> Task {
    Task::load(&root().join("assets/tasks").join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn evaluator(task: &Task) -> SubprocessEvaluator {
    SubprocessEvaluator::new(
        task,
        SubprocessParams {
            timeout_secs: 60.0,
            ..SubprocessParams::default()
        },
        1,
    )
}

async fn score(ev: &SubprocessEvaluator, content: &str) -> Evaluation {
    ev.evaluate(&Candidate {
        id: 1,
        content: content.to_owned().into(),
    })
    .await
}

/// The initial program with `construct()` replaced by one that changes
/// what the original returns (`change` is the body, `rows` the original's
/// result).
fn changed(task: &Task, change: &str) -> String {
    let body: String = change.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "{}\n\n_original_construct = construct\n\n\ndef construct():\n    rows = _original_construct()\n{body}    return rows\n",
        task.initial_program.text()
    )
}

#[tokio::test]
async fn initial_programs_are_valid_weak_and_cheap() {
    for name in TASKS {
        let task = task(name);
        assert!(task.warnings().is_empty(), "{name}: {:?}", task.warnings());
        let text = task.initial_program.text();
        assert!(
            text.contains("# EVOLVE-BLOCK-START") && text.contains("def construct("),
            "{name}"
        );
        let best = task
            .config
            .best_known()
            .unwrap_or_else(|| panic!("{name}: config.yaml has no best_known"));
        assert!(!best.source.is_empty(), "{name}");
        let ev = evaluator(&task);
        let first = score(&ev, &text).await;
        assert!(first.valid, "{name}: {first:?}");
        let mut warm = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let again = score(&ev, &text).await;
            warm.push(started.elapsed());
            assert_eq!(again.scores, first.scores, "{name}: deterministic");
        }
        warm.sort();
        let value = first.scores["value"];
        let combined = first.scores["combined_score"];
        let expected = if best.higher_is_better {
            value / best.value
        } else {
            best.value / value
        };
        assert!(
            (combined - expected).abs() <= 1e-12 * expected,
            "{name}: combined_score {combined} is not value {value} normalised by best_known {}",
            best.value
        );
        assert!(
            combined > 0.0 && combined < 0.9,
            "{name}: the initial program should be valid but weak ({combined})"
        );
        assert!(
            warm[1] < Duration::from_secs(1),
            "{name}: median warm evaluation {:?}",
            warm[1]
        );
        println!(
            "{name}: initial value {value:.6} combined_score {combined:.4}; warm evaluation median {:?}",
            warm[1]
        );
    }
}

/// Point 0 moved to (0.3, y) with y the first float past the triangle's
/// side y = sqrt(3) x (found exactly, with fractions).
const FIRST_FLOAT_PAST_THE_SIDE: &str = "import math\nfrom fractions import Fraction\nx = 0.3\n\
    y = math.sqrt(3) * x\nwhile Fraction(y) ** 2 > 3 * Fraction(x) ** 2:\n    y = math.nextafter(y, 0)\n\
    while Fraction(y) ** 2 <= 3 * Fraction(x) ** 2:\n    y = math.nextafter(y, 1)\nrows[0] = [x, y]";

/// (what, the change to the initial program's construct(), a phrase of the
/// refusal)
type Refusal = (&'static str, &'static str, &'static str);

fn refusals(name: &str) -> Vec<Refusal> {
    match name {
        "circle_packing" | "circle_packing_32" => vec![
            ("a circle grown by 1e-6", "rows[0][2] += 1e-6", "overlap by"),
            (
                "a circle outside the square",
                "rows[5][0] = -0.5",
                "crosses the unit square's left side",
            ),
            (
                "a negative radius",
                "rows[3][2] = -0.01",
                "has a negative radius",
            ),
            ("NaN", "rows[2][1] = float('nan')", "is nan"),
            ("a circle missing", "rows.pop()", "expected"),
        ],
        "circles_rectangle_21" => vec![
            (
                "a rectangle over perimeter 4",
                "for row in rows:\n    row[0] *= 1.1",
                "is over 4",
            ),
            (
                "a circle grown into its neighbour",
                "rows[10][2] += 0.05",
                "overlap by",
            ),
            ("a negative radius", "rows[1][2] = -1.0", "negative radius"),
        ],
        "heilbronn_triangle_11" => vec![
            (
                "a point outside the triangle",
                "rows[0] = [0.5, 0.9]",
                "outside the triangle",
            ),
            (
                "the first float past the side y = sqrt(3) x",
                FIRST_FLOAT_PAST_THE_SIDE,
                "beyond the side y = sqrt(3) x",
            ),
            (
                "a point below the base",
                "rows[1][1] = -5e-324",
                "below the side y = 0",
            ),
        ],
        "heilbronn_convex_13" => vec![
            (
                "collinear points",
                "rows = [[i, 2 * i] for i in range(13)]",
                "collinear",
            ),
            ("a point missing", "rows.pop()", "expected 13 points"),
        ],
        "min_max_distance_16_2d" | "min_max_distance_14_3d" => vec![
            (
                "two points that coincide",
                "rows[1] = list(rows[0])",
                "coincide",
            ),
            (
                "a coordinate that is not a number",
                "rows[2][0] = 'x'",
                "is not a number",
            ),
        ],
        "autocorrelation_first" => vec![
            ("a negative step", "rows[3] = -1e-9", "negative"),
            ("no mass", "rows = [0.0] * len(rows)", "no mass"),
            ("too many steps", "rows = [1.0] * 20001", "at most 20000"),
        ],
        "erdos_min_overlap" => vec![
            ("a negative step", "rows[3] = -1e-9", "negative"),
            (
                "a step above 1 once scaled to integral 1",
                "rows = [2.0] + [0.0] * 9",
                "above 1",
            ),
        ],
        "sums_differences" => vec![
            (
                "a set without 0",
                "rows = [x + 1 for x in rows]",
                "must contain 0",
            ),
            ("a negative element", "rows.append(-3)", "negative"),
            ("a float", "rows.append(2.5)", "not an integer"),
            (
                "an element too large to evaluate",
                "rows.append(3_000_000)",
                "largest element",
            ),
        ],
        other => panic!("no refusals listed for {other}"),
    }
}

#[tokio::test]
async fn invalid_constructions_are_refused_with_the_reason() {
    for name in TASKS {
        let task = task(name);
        let ev = evaluator(&task);
        for (what, change, reason) in refusals(name) {
            let e = score(&ev, &changed(&task, change)).await;
            let error = e.error.clone().unwrap_or_default();
            assert!(!e.valid, "{name}: {what} was accepted: {e:?}");
            assert!(
                error.contains(reason),
                "{name}: {what}: the error does not say {reason:?}: {error}"
            );
            println!("{name} refuses {what}: {error}");
        }
    }
}

/// The exact check accepts the last float inside the triangle's slanted
/// side as it refuses the first one past it (the float test above): no
/// tolerance either way.
#[tokio::test]
async fn the_last_float_inside_the_triangle_is_accepted() {
    let task = task("heilbronn_triangle_11");
    let ev = evaluator(&task);
    let change = FIRST_FLOAT_PAST_THE_SIDE
        .replace("rows[0] = [x, y]", "rows[0] = [x, math.nextafter(y, 0)]");
    let e = score(&ev, &changed(&task, &change)).await;
    assert!(e.valid, "{e:?}");
}

/// The circle tasks also take OpenEvolve's and ShinkaEvolve's program shape:
/// `run_packing()` returning (centers, radii, sum), the sum recomputed.
#[tokio::test]
async fn circle_tasks_take_run_packing_with_a_reported_sum() {
    let task = task("circle_packing");
    let ev = evaluator(&task);
    let program = concat!(
        "def run_packing():\n",
        "    centers = [[0.125 + 0.25 * (i % 4), 0.125 + 0.25 * (i // 4)] for i in range(16)]\n",
        "    centers += [[0.25 + 0.25 * (i % 3), 0.25 + 0.25 * (i // 3)] for i in range(9)] + [[0.0, 0.0]]\n",
        "    radii = [0.125] * 16 + [0.05] * 9 + [0.0]\n",
        "    return centers, radii, 99.0\n",
    );
    let e = score(&ev, program).await;
    assert!(e.valid, "{e:?}");
    let expected = 2.0 + 9.0 * 0.05;
    assert!((e.scores["value"] - expected).abs() < 1e-12, "{e:?}");
    // grown by 1e-6: refused, with the pair named
    let e = score(
        &ev,
        &program.replace(
            "[0.125] * 16",
            "[0.125] * 5 + [0.125 + 1e-6] + [0.125] * 10",
        ),
    )
    .await;
    assert!(!e.valid);
    assert!(
        e.error
            .as_deref()
            .unwrap_or("")
            .contains("circles 1 and 5 overlap"),
        "{e:?}"
    );
}

/// One published construction (a JSON file of the data folder).
#[derive(serde::Deserialize)]
struct Published {
    task: String,
    /// Its name within the task (the file's stem).
    id: String,
    /// Where it was published.
    source: String,
    /// The value as the source prints it (`None` when it prints none).
    published: Option<String>,
    /// Whether the exact check accepts it.
    valid: bool,
    /// A phrase of the refusal, for one the check refuses.
    refusal: Option<String>,
    /// What construct() returns.
    construction: serde_json::Value,
}

fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("GALAPAGOS_BENCHMARK_DATA").map_or_else(
        || root().join("../shared/benchmarks/constructions"),
        PathBuf::from,
    );
    dir.is_dir().then_some(dir)
}

/// The published value agrees with ours to the digits it prints: within
/// one unit of its last printed place.
fn agrees(published: &str, ours: f64) -> bool {
    let Ok(p) = published.parse::<f64>() else {
        return false;
    };
    let decimals = published.split_once('.').map_or(0, |(_, d)| d.len());
    let unit = 10f64.powi(-i32::try_from(decimals).unwrap_or(0));
    (p - ours).abs() <= unit
}

/// A valid published construction, perturbed (a circle grown by 1e-6, a
/// point moved onto another, a negative step or element), is refused.
async fn perturbed_is_refused(ev: &SubprocessEvaluator, name: &str, p: &Published) {
    let (change, phrases): (&str, &[&str]) = match name {
        "circle_packing" | "circle_packing_32" | "circles_rectangle_21" => (
            "rows[0][2] += 1e-6",
            &["overlap by", "crosses the unit square", "is over 4"],
        ),
        "heilbronn_triangle_11" => ("rows[0] = [-1e-9, 0.0]", &["outside the triangle"]),
        "heilbronn_convex_13" => ("rows[1] = list(rows[0])", &[]),
        "min_max_distance_16_2d" | "min_max_distance_14_3d" => {
            ("rows[1] = list(rows[0])", &["coincide"])
        }
        "autocorrelation_first" | "erdos_min_overlap" => ("rows[0] = -1e-9", &["negative"]),
        "sums_differences" => ("rows.append(-1)", &["negative"]),
        other => panic!("no perturbation for {other}"),
    };
    let program = format!(
        "DATA = {}\n\n\ndef construct():\n    rows = [list(r) if isinstance(r, list) else r for r in DATA]\n    {change}\n    return rows\n",
        serde_json::to_string(&p.construction).expect("the construction is JSON")
    );
    let e = score(ev, &program).await;
    if phrases.is_empty() {
        // point 1 moved onto point 0: a valid construction of value 0
        assert!(
            e.valid && e.scores["value"] == 0.0,
            "{name}/{}: {change}: {e:?}",
            p.id
        );
    } else {
        let error = e.error.clone().unwrap_or_default();
        assert!(
            !e.valid && phrases.iter().any(|ph| error.contains(ph)),
            "{name}/{}: {change}: {e:?}",
            p.id
        );
    }
    println!("{name}/{} with {change}: {:?}", p.id, e.error);
}

const BEGIN: &str = "<!-- table: tests/benchmark_tasks.rs -->";
const END: &str = "<!-- end of table -->";

#[tokio::test]
async fn published_constructions_score_their_published_values() {
    let Some(dir) = data_dir() else {
        eprintln!(
            "SKIPPED (loudly): no published constructions: neither GALAPAGOS_BENCHMARK_DATA nor \
             ../shared/benchmarks/constructions names a folder; the table in docs/benchmarks.md is not checked \
             (docs/benchmarks.md says where the constructions come from)"
        );
        return;
    };
    let mut by_task: BTreeMap<String, Vec<Published>> = BTreeMap::new();
    for sub in std::fs::read_dir(&dir).unwrap().flatten() {
        if !sub.path().is_dir() {
            continue;
        }
        for file in std::fs::read_dir(sub.path()).unwrap().flatten() {
            let text = std::fs::read_to_string(file.path()).unwrap();
            let p: Published = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", file.path().display()));
            by_task.entry(p.task.clone()).or_default().push(p);
        }
    }
    assert!(!by_task.is_empty(), "{}: no constructions", dir.display());
    let mut table = String::from(
        "| problem | construction's source | published value | our value | valid? |\n|---|---|---|---|---|\n",
    );
    // Each row with the file it comes from, to name it when the doc's table differs.
    let mut rows: Vec<(String, String)> = Vec::new();
    for name in TASKS {
        let Some(list) = by_task.get_mut(name) else {
            let row = format!("| {name} | (none obtained) | | | |");
            table.push_str(&row);
            table.push('\n');
            rows.push((format!("{name}/ (no file)"), row));
            continue;
        };
        list.sort_by(|a, b| a.id.cmp(&b.id));
        let task = task(name);
        let ev = evaluator(&task);
        for p in list.iter() {
            let program = format!(
                "DATA = {}\n\n\ndef construct():\n    return DATA\n",
                serde_json::to_string(&p.construction).unwrap()
            );
            let started = Instant::now();
            let e = score(&ev, &program).await;
            let took = started.elapsed();
            let published = p.published.as_deref().unwrap_or("—");
            let (ours, valid) = if e.valid {
                let value = e.scores["value"];
                (format!("{value:.10}"), "yes".to_owned())
            } else {
                let error = e.error.clone().unwrap_or_default();
                let error = error
                    .strip_prefix("evaluator reported an error: ")
                    .unwrap_or(&error)
                    .to_owned();
                let short: String = error.chars().take(90).collect();
                let short = if short.len() < error.len() {
                    format!("{short}…")
                } else {
                    short
                };
                ("—".to_owned(), format!("no: {}", short.replace('|', "/")))
            };
            assert_eq!(
                e.valid,
                p.valid,
                "{name}/{}: expected {}: {e:?}",
                p.id,
                if p.valid { "valid" } else { "refused" }
            );
            if e.valid {
                if let Some(printed) = &p.published {
                    assert!(
                        agrees(printed, e.scores["value"]),
                        "{name}/{}: published {printed}, ours {}",
                        p.id,
                        e.scores["value"]
                    );
                }
            } else if let Some(phrase) = &p.refusal {
                assert!(
                    e.error.as_deref().unwrap_or("").contains(phrase.as_str()),
                    "{name}/{}: {e:?}",
                    p.id
                );
            }
            println!("{name}/{}: {ours} ({valid}) in {took:?}", p.id);
            if e.valid {
                perturbed_is_refused(&ev, name, p).await;
            }
            let row = format!(
                "| {name} | {} | {published} | {ours} | {valid} |",
                p.source.replace('|', "/")
            );
            table.push_str(&row);
            table.push('\n');
            rows.push((format!("{name}/{}.json", p.id), row));
        }
    }
    let doc_path = root().join("docs/benchmarks.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    let block = format!("{BEGIN}\n{table}{END}");
    let current = doc
        .find(BEGIN)
        .and_then(|a| doc[a..].find(END).map(|b| &doc[a..a + b + END.len()]));
    if std::env::var_os("GALAPAGOS_REGENERATE_BENCHMARKS").is_some() {
        let updated = match current {
            Some(old) => doc.replace(old, &block),
            None => format!("{doc}\n{block}\n"),
        };
        std::fs::create_dir_all(doc_path.parent().unwrap()).unwrap();
        std::fs::write(&doc_path, updated).unwrap();
        println!("{} regenerated", doc_path.display());
    } else if current != Some(block.as_str()) {
        let doc_rows: Vec<&str> = current.map_or_else(Vec::new, |t| t.lines().collect());
        let mut differing = String::new();
        for (file, row) in &rows {
            if !doc_rows.contains(&row.as_str()) {
                differing.push_str(&format!("\n  {file} scores:   {row}"));
            }
        }
        let ours: Vec<&str> = block.lines().collect();
        for row in doc_rows.iter().filter(|r| !ours.contains(r)) {
            differing.push_str(&format!("\n  the doc has instead: {row}"));
        }
        if current.is_none() {
            differing.push_str(&format!(
                "\n  the doc has no table between {BEGIN} and {END}"
            ));
        } else if differing.is_empty() {
            differing.push_str("\n  the same rows, in another order or under another header");
        }
        panic!(
            "docs/benchmarks.md's table differs from what the published constructions in {} score \
             (regenerate it with GALAPAGOS_REGENERATE_BENCHMARKS=1 once the constructions are right):{differing}",
            dir.display()
        );
    }
}
