//! Loop overhead benchmark (not a timed test): runs 10,000 iterations with the
//! built-in offline model and an in-process trivial evaluator (a bench-only
//! test double, so no Python cost is measured), and reports iterations/s and
//! the per-iteration engine overhead (wall time minus time spent in the model
//! + patching and in the evaluator) around 100, 1,000 and 10,000 genomes.
//!
//! `cargo bench --bench loop_overhead` (ITERATIONS=N to change the length).

use std::sync::Arc;
use std::time::Instant;

use galapagos::engine::card::Card;
use galapagos::engine::component::{BuildContext, Component, ComponentInfo, NoParams};
use galapagos::engine::evaluator::{Candidate, Evaluation, Evaluator};
use galapagos::engine::events::RunEvent;
use galapagos::engine::launch::RunPlan;
use galapagos::engine::params::ParamError;
use galapagos::engine::registry::{Entry, Registry};
use galapagos::engine::run_thread::start;

/// Scores `NAME = <number>` lines against hidden targets: microseconds of work.
/// Records the instant each evaluation starts: with one iteration in flight,
/// consecutive starts are exactly one iteration apart.
struct TrivialEvaluator;

impl Component for TrivialEvaluator {
    type Slot = dyn Evaluator;
    type Params = NoParams;
    const INFO: ComponentInfo = ComponentInfo {
        kind: "bench_trivial",
        type_name: "TrivialEvaluator",
        summary: "bench only",
        params: &[],
    };
    fn build(_: NoParams, _: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(Self)
    }
}

static STARTS: std::sync::Mutex<Vec<Instant>> = std::sync::Mutex::new(Vec::new());

#[async_trait::async_trait]
impl Evaluator for TrivialEvaluator {
    async fn evaluate(&self, candidate: &Candidate) -> Evaluation {
        if let Ok(mut s) = STARTS.lock() {
            s.push(Instant::now());
        }
        Evaluation {
            valid: true,
            scores: galapagos::engine::testing::trivial_scores(&candidate.content.text()),
            ..Evaluation::default()
        }
    }
}

const PROGRAM: &str = "# EVOLVE-BLOCK-START\nA = 1.0\nB = 0.0\nC = 0.0\nSHIFT = 0.0\n# EVOLVE-BLOCK-END\n\ndef run():\n    return [A, B, C, SHIFT]\n";

fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.register(Entry::of::<TrivialEvaluator>())
        .expect("bench_trivial is not a built-in kind");
    r
}

fn main() {
    let iterations: u64 = std::env::var("ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = std::env::temp_dir().join(format!("galapagos-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    std::fs::write(dir.join("initial_program.py"), PROGRAM).ok();
    std::fs::write(
        dir.join("evaluator.py"),
        "def evaluate(p):\n    return {'combined_score': 0.0}\n",
    )
    .ok();
    std::fs::write(dir.join("README.md"), "Fit four constants.").ok();
    let registry = Arc::new(registry());
    println!(
        "loop overhead, {iterations} iterations, offline model + in-process trivial evaluator, parallel 1"
    );
    println!(
        "{:<12} {:>8} {:>10} {:>12} {:>14} {:>14}",
        "card", "genomes", "iter/s", "wall ms/it", "model+eval ms", "overhead ms/it"
    );
    for card_file in ["cards/best_of_n.yaml", "cards/beam_search.yaml"] {
        let mut card = match Card::load(std::path::Path::new(card_file), &registry) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        card.evaluator = galapagos::engine::card::SlotSpec::new("bench_trivial");
        card.general.max_iterations = iterations;
        card.general.inner_retry_times = 0;
        let card = match card.check(&registry) {
            Ok(c) => c,
            Err(problems) => {
                eprintln!("{problems:?}");
                std::process::exit(2);
            }
        };
        let plan = match galapagos::engine::task::Task::load(&dir)
            .map_err(galapagos::engine::launch::LaunchError::from)
            .and_then(|task| RunPlan::new(card, task, None, &registry))
        {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        let Ok(mut handle) = start(plan, galapagos::engine::model::default_model(), None) else {
            eprintln!("cannot start");
            std::process::exit(1);
        };
        if let Ok(mut s) = STARTS.lock() {
            s.clear();
        }
        // model + prompt + eval ms per genome, in admission order (genome 0 = initial program)
        let mut work: Vec<f64> = Vec::with_capacity(iterations as usize + 1);
        let started = Instant::now();
        while let Some(ev) = handle.events.blocking_recv() {
            match ev {
                RunEvent::GenomeAdmitted { genome, .. } => {
                    work.push(
                        genome.timings.propose_ms
                            + genome.timings.evaluate_ms
                            + genome.timings.prompt_ms,
                    );
                }
                RunEvent::Finished(s) => {
                    if let galapagos::engine::events::RunStatus::Failed(m) = &s.status {
                        eprintln!("run failed: {m}");
                    }
                    break;
                }
                _ => {}
            }
        }
        let total = started.elapsed().as_secs_f64();
        handle.join();
        let starts = STARTS.lock().map(|s| s.clone()).unwrap_or_default();
        let name = std::path::Path::new(card_file)
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        // evaluation k starts iteration k (k = 0 is the initial program)
        for at in [100usize, 1_000, 10_000] {
            // (a reply that did not parse has no evaluation: the last window may end a few short)
            let hi = at
                .min(starts.len().saturating_sub(1))
                .min(work.len().saturating_sub(1));
            let lo = at.saturating_sub(50).max(1);
            if hi + 20 < at || hi <= lo {
                continue;
            }
            let n = (hi - lo) as f64;
            let wall_ms = (starts[hi] - starts[lo]).as_secs_f64() * 1000.0 / n;
            let work_ms: f64 = work[lo..hi].iter().sum::<f64>() / n;
            println!(
                "{name:<12} {at:>8} {:>10.0} {wall_ms:>12.4} {work_ms:>14.4} {:>14.4}",
                1000.0 / wall_ms,
                (wall_ms - work_ms).max(0.0)
            );
        }
        println!(
            "{name:<12} total {:.2} s for {} genomes ({:.0} iter/s overall)",
            total,
            work.len(),
            work.len() as f64 / total
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
