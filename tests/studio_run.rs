//! The studio's run view end to end (egui_kittest, no GPU): a real run with
//! the offline model through `RunView`, the inspector on the best genome, and
//! Stop while an evaluator sleeps.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{PROGRAM, card, with_slow_evaluator};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::card::Card;
use galapagos::engine::events::RunStatus;
use galapagos::engine::genome::FITNESS_KEY;
use galapagos::engine::model::default_model;
use galapagos::engine::params::ParamValue;
use galapagos::engine::registry::Registry;
use galapagos::studio::run::RunView;
use galapagos::studio::run::inspector::delta_text;

const EVALUATOR: &str = r#"import importlib.util

TARGET = [2.5, -1.25, 0.75, 0.0]


def evaluate(path):
    spec = importlib.util.spec_from_file_location("cand", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    v = m.run()
    mse = sum((a - b) ** 2 for a, b in zip(v, TARGET)) / 4
    print("values", v)
    return {"combined_score": 1.0 / (1.0 + mse), "mse": mse}
"#;

/// A small task folder: four constants to tune against a hidden target.
#[expect(clippy::unwrap_used, reason = "test helper: a panic is a failed test")]
fn temp_task(dir: &std::path::Path) -> std::path::PathBuf {
    let t = dir.join("quad");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("initial_program.py"), PROGRAM).unwrap();
    std::fs::write(t.join("evaluator.py"), EVALUATOR).unwrap();
    std::fs::write(
        t.join("README.md"),
        "Tune four constants to match a hidden target.\n",
    )
    .unwrap();
    t
}

fn harness<'a>() -> Harness<'a, RunView> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::Panel::bottom("status").show(ui, |ui| {
                    ui.horizontal(|ui| view.status_bar_ui(ui));
                });
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            RunView::default(),
        )
}

fn start(
    h: &mut Harness<'_, RunView>,
    card: Card,
    task: &std::path::Path,
    registry: Arc<Registry>,
) {
    let ctx = h.ctx.clone();
    h.state_mut().start(
        common::plan_in(card, task, None, &registry),
        default_model(),
        &ctx,
    );
}

/// Step frames until `done` or the deadline; returns the frame count.
fn step_until(
    h: &mut Harness<'_, RunView>,
    limit: Duration,
    mut done: impl FnMut(&RunView) -> bool,
) -> usize {
    let deadline = Instant::now() + limit;
    let mut frames = 0;
    while !done(h.state()) {
        assert!(Instant::now() < deadline, "timed out after {frames} frames");
        h.step();
        frames += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    frames
}

#[test]
fn a_finished_run_shows_the_best_genome_diff_scores_with_deltas_and_prompt() {
    let registry = Arc::new(Registry::builtin());
    let mut c = card("best_of_n.yaml", &registry);
    c.general.max_iterations = 8;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut h = harness();
    start(&mut h, c, &task, registry);
    assert!(h.state().is_running());
    step_until(&mut h, Duration::from_secs(120), |v| !v.is_running());
    h.run_steps(2);

    let history = h.state().history();
    let summary = history.summary.clone().unwrap();
    assert_eq!(summary.status, RunStatus::Completed, "{:?}", history.logs);
    assert_eq!(history.genomes.len() as u64, summary.genomes);
    assert!(history.info.as_ref().unwrap().offline);
    let best_id = history.best_id.unwrap();
    assert_ne!(
        best_id, 0,
        "the offline model should improve on the initial program"
    );
    let best = Arc::clone(history.body(best_id).unwrap());
    let parent = Arc::clone(history.body(best.parent_id.unwrap()).unwrap());

    // The finished run stays browsable: select the best genome in the table.
    h.get_by_label(&format!("#{best_id} (best)")).click();
    h.run_steps(2);
    assert_eq!(h.state().selected(), Some(best_id));

    // Scores with the delta against the parent.
    h.get_by_label("Δ vs parent");
    h.get_by_label(&format!("parent #{}", parent.id));
    let delta = best.scores[FITNESS_KEY] - parent.scores[FITNESS_KEY];
    assert!(delta > 0.0);
    h.get_by_label(&delta_text(delta));
    let mse_delta = best.scores["mse"] - parent.scores["mse"];
    h.get_by_label(&delta_text(mse_delta));

    // The diff against the parent.
    h.get_by_label("Diff").click();
    h.run_steps(2);
    let diff = best.diff.clone().unwrap();
    let added = diff
        .lines()
        .find(|l| l.starts_with('+') && !l.starts_with("+++"))
        .unwrap();
    h.get_by_label_contains(added);
    h.get_by_label(&format!("against parent #{}", parent.id));

    // The exact prompt, both sections.
    h.get_by_label("Prompt").click();
    h.run_steps(2);
    let prompt = best.prompt.clone().unwrap();
    h.get_by_label(&prompt.system);
    h.get_by_label(&prompt.user);

    // The raw response and the lineage back to the root.
    h.get_by_label("Response").click();
    h.run_steps(2);
    h.get_by_label(best.response.as_deref().unwrap());
    h.get_by_label_contains("#0 (");

    // Clicking an ancestor selects it everywhere.
    h.get_by_label_contains(&format!("#{} (", parent.id))
        .click();
    h.run_steps(2);
    assert_eq!(h.state().selected(), Some(parent.id));
}

#[test]
fn stop_ends_the_run_within_one_iteration_and_frames_keep_coming_while_the_evaluator_sleeps() {
    let registry = galapagos::engine::testing::registry();
    let mut c = with_slow_evaluator(card("best_of_n.yaml", &registry), 5000);
    c.general.max_iterations = 50;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut h = harness();
    start(&mut h, c, &task, registry);
    // Wait until iteration 1 is in flight (its evaluator is sleeping).
    step_until(&mut h, Duration::from_secs(30), |v| {
        v.history().iterations_started >= 1
    });
    assert_eq!(h.state().history().genomes.len(), 1);

    // The UI keeps producing frames while the evaluator sleeps.
    let t = Instant::now();
    let mut frames = 0;
    let mut slowest = Duration::ZERO;
    while t.elapsed() < Duration::from_millis(600) {
        let f = Instant::now();
        h.step();
        slowest = slowest.max(f.elapsed());
        frames += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(frames >= 20, "only {frames} frames in 0.6 s");
    assert!(
        slowest < Duration::from_millis(250),
        "a frame took {slowest:?}"
    );
    assert!(h.state().is_running());

    // Stop, through the toolbar button.
    let pressed = Instant::now();
    h.get_by_label("Stop").click();
    let frames = step_until(&mut h, Duration::from_secs(10), |v| !v.is_running());
    let took = pressed.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "stop took {took:?} ({frames} frames)"
    );
    let history = h.state().history();
    assert_eq!(history.summary.as_ref().unwrap().status, RunStatus::Stopped);
    assert_eq!(
        history.genomes.len(),
        1,
        "the in-flight iteration was abandoned"
    );
    assert!(!h.state().is_running());
    h.run_steps(2);
    assert!(h.get_all_by_label("stopped").count() >= 1);
}

#[test]
fn a_run_without_the_sandbox_carries_a_badge_and_a_sandboxed_one_does_not() {
    let registry = Arc::new(Registry::builtin());
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    for sandbox in ["bwrap", "none"] {
        let mut c = card("best_of_n.yaml", &registry);
        c.general.max_iterations = 2;
        c.evaluator
            .params
            .set("sandbox", ParamValue::Str(sandbox.into()));
        let mut h = harness();
        start(&mut h, c, &task, Arc::clone(&registry));
        step_until(&mut h, Duration::from_secs(120), |v| !v.is_running());
        h.run_steps(2);
        let history = h.state().history();
        let status = &history.summary.as_ref().unwrap().status;
        assert_eq!(*status, RunStatus::Completed, "{:?}", history.logs);
        let badges = h.query_all_by_label(" unsandboxed ").count();
        if sandbox == "none" {
            assert_eq!(badges, 1, "sandbox: none shows its badge");
            let warning = history.info.as_ref().unwrap().unsandboxed.clone();
            assert!(warning.unwrap().contains("without a sandbox"));
        } else {
            assert_eq!(badges, 0, "a sandboxed run has no badge");
        }
    }
}

/// Renders screenshots of a live run and of the inspector on a failed genome
/// (wgpu on a CPU adapter). `SCREENSHOT_DIR=dir cargo test --test studio_run
/// -- --ignored screenshots`.
#[test]
#[ignore = "writes PNG files; run by hand"]
fn screenshots() {
    let out = std::env::var("SCREENSHOT_DIR").unwrap_or_else(|_| "target/screenshots".to_owned());
    std::fs::create_dir_all(&out).unwrap();
    let registry = Arc::new(Registry::builtin());
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let build = || {
        Harness::builder()
            .with_size(egui::vec2(1400.0, 860.0))
            .wgpu()
            .build_ui_state(
                |ui, view: &mut RunView| {
                    view.logic(ui.ctx());
                    egui::Panel::bottom("status").show(ui, |ui| {
                        ui.horizontal(|ui| view.status_bar_ui(ui));
                    });
                    egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
                },
                RunView::default(),
            )
    };

    // A live run with the offline model, caught mid-way.
    let mut c = card("best_of_n.yaml", &registry);
    c.general.max_iterations = 400;
    let mut h = build();
    start(&mut h, c, &task, Arc::clone(&registry));
    step_until(&mut h, Duration::from_secs(120), |v| {
        v.history().genomes.len() >= 60
    });
    let best = h.state().history().best_id.unwrap();
    h.state_mut().select(Some(best));
    h.state_mut()
        .set_inspector_tab(galapagos::studio::run::InspectorTab::Diff);
    h.run_steps(3);
    h.render()
        .unwrap()
        .save(format!("{out}/run_live.png"))
        .unwrap();
    h.state_mut().stop();
    step_until(&mut h, Duration::from_secs(30), |v| !v.is_running());

    // A failed genome: the model's edit divides by zero at import time.
    let crash =
        "Make A bigger.\n<<<<<<< SEARCH\nA = 1.0\n=======\nA = 1.0 / 0.0\n>>>>>>> REPLACE\n";
    let good = "Raise A.\n<<<<<<< SEARCH\nA = 1.0\n=======\nA = 2.0\n>>>>>>> REPLACE\n";
    let model = Arc::new(common::ScriptedModel::new(vec![
        Ok(good.to_owned()),
        Ok(crash.to_owned()),
        Ok("I am not sure what to change here.".to_owned()),
        Ok(good.to_owned()),
    ]));
    let mut c = card("best_of_n.yaml", &registry);
    c.general.max_iterations = 4;
    c.general.inner_retry_times = 0;
    let mut h = build();
    let ctx = h.ctx.clone();
    h.state_mut()
        .start(common::plan_in(c, &task, None, &registry), model, &ctx);
    step_until(&mut h, Duration::from_secs(60), |v| !v.is_running());
    let history = h.state().history();
    let failed = history
        .genomes
        .iter()
        .filter_map(|g| history.body(g.id))
        .find(|g| !g.valid && g.diff.is_some())
        .map(|g| g.id)
        .unwrap();
    h.state_mut().select(Some(failed));
    h.state_mut()
        .set_inspector_tab(galapagos::studio::run::InspectorTab::Output);
    h.run_steps(3);
    h.render()
        .unwrap()
        .save(format!("{out}/inspector_failed.png"))
        .unwrap();
    let history = h.state().history();
    let garbled = history
        .genomes
        .iter()
        .filter_map(|g| history.body(g.id))
        .find(|g| !g.valid && g.diff.is_none())
        .map(|g| g.id)
        .unwrap();
    h.state_mut().select(Some(garbled));
    h.state_mut()
        .set_inspector_tab(galapagos::studio::run::InspectorTab::Response);
    h.run_steps(3);
    h.render()
        .unwrap()
        .save(format!("{out}/inspector_parse_error.png"))
        .unwrap();
}
