#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Every card of the reference-method palette runs offline to completion from
//! the studio (press Start run, wait, read the run view) and beats the initial
//! program on circle packing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::events::RunStatus;
use galapagos::engine::registry::Registry;
use galapagos::studio::state::State;
use galapagos::studio::{App, StudioLaunch};

#[test]
fn palette_cards_run_from_the_studio_and_improve_circle_packing() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let runs = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin());
    for name in ["topk", "openevolve", "adaevolve", "shinka"] {
        let state = State {
            runs_folder: runs.path().to_path_buf(),
            ..State::default()
        };
        let mut app = App::new(state, Arc::clone(&registry))
            .with_model(galapagos::engine::model::default_model());
        app.launch(StudioLaunch {
            card: Some(root.join("cards").join(format!("{name}.yaml"))),
            task: Some(root.join("assets/tasks/circle_packing")),
        });
        assert!(app.card_errors().is_none(), "{name}");
        let mut h = Harness::builder()
            .with_size(egui::vec2(1400.0, 900.0))
            .build_ui_state(|ui, app: &mut App| app.show(ui), app);
        h.run();
        assert_eq!(h.state().run_blocker(), None, "{name}");
        h.get_by_role_and_label(Role::Button, "Start run").click();
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            h.step();
            let ctx = h.ctx.clone();
            h.state_mut().logic(&ctx);
            if h.state().run_view.history().summary.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "{name}: the run did not finish");
            std::thread::sleep(Duration::from_millis(20));
        }
        let history = h.state().run_view.history();
        let summary = history.summary.clone().unwrap();
        assert_eq!(summary.status, RunStatus::Completed, "{name}");
        assert!(summary.iterations >= 100, "{name}: {}", summary.iterations);
        let (best, initial) = (summary.best_score.unwrap(), summary.initial_score.unwrap());
        assert!(best > initial, "{name}: best {best} <= initial {initial}");
        println!(
            "{name}: initial {initial:.4} -> best {best:.4} in {} iterations",
            summary.iterations
        );
    }
}
