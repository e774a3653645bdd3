//! Steering from the studio's run view, clicked by label (egui_kittest, no
//! GPU): Edit a genome's program and Submit it as a child written by a
//! person, write notes for the model and Apply them, Pin a genome as an
//! inspiration and Unpin it, on a live run (paused, then resumed) with the
//! offline model.
//!
//! The screenshots of the editor and the notes box are made by the
//! ignored test at the end:
//! `cargo test --release --test studio_steering -- --ignored`
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{card, temp_task};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT as _, Queryable as _};
use galapagos::engine::model::default_model;
use galapagos::engine::steering::NOTES_HEADING;
use galapagos::studio::run::RunView;

const NOTE: &str = "Keep SHIFT at zero.";
const HAND: &str = "# tried by hand\n";

fn harness<'a>() -> Harness<'a, RunView> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            RunView::default(),
        )
}

/// Step frames until `done`, within a generous bound.
fn step_until(h: &mut Harness<'_, RunView>, what: &str, mut done: impl FnMut(&RunView) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done(h.state()) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
}

/// A live run of topk on the quadratic task, paused once its initial
/// program is in.
fn paused_run(h: &mut Harness<'_, RunView>, task: &Path) {
    let registry = galapagos::engine::testing::registry();
    let mut c = common::with_slow_evaluator(card("topk.yaml", &registry), 30);
    c.general.max_iterations = 40;
    let ctx = h.ctx.clone();
    h.state_mut().start(
        common::plan_in(c, task, None, &registry),
        default_model(),
        &ctx,
    );
    step_until(h, "the initial program", |v| {
        !v.history().genomes.is_empty()
    });
    h.get_by_role_and_label(Role::Button, "Pause").click();
    step_until(h, "the pause", |v| v.history().paused);
    // A pause lets the iteration in flight finish: wait for its genome, so
    // what arrives afterwards is only what a test's steering made.
    step_until(h, "the iteration in flight", |v| {
        let history = v.history();
        history.iterations_done >= history.iterations_started
    });
}

#[test]
fn edit_and_submit_admits_a_child_written_by_a_person_while_paused() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut h = harness();
    paused_run(&mut h, &task);
    let before = h.state().history().genomes.len();
    h.state_mut().select(Some(0));
    h.run_steps(2);

    h.get_by_role_and_label(Role::Button, "Edit").click();
    // the click's frame opens it; a window is sized before it shows
    h.run_steps(4);
    assert_eq!(h.state().editor().map(|e| e.parent), Some(0));
    // Submit is refused until something changed.
    assert!(
        h.get_by_role_and_label(Role::Button, "Submit as child of #0")
            .accesskit_node()
            .is_disabled()
    );
    h.query_by_label_contains("unchanged").unwrap();
    let code = h.get_by_role(Role::MultilineTextInput);
    code.focus();
    h.run_steps(2);
    // inside the EVOLVE-BLOCK (the cursor starts at the end): before its
    // last line, SHIFT = 0.0, six lines up
    for _ in 0..6 {
        h.key_press(egui::Key::ArrowUp);
        h.run_steps(1);
    }
    h.get_by_role(Role::MultilineTextInput).type_text(HAND);
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Submit as child of #0")
        .click();
    step_until(&mut h, "the person's child", |v| {
        v.history().genomes.iter().any(|g| g.is_by_person())
    });

    let history = h.state().history();
    let person = history
        .genomes
        .iter()
        .find(|g| g.is_by_person())
        .and_then(|g| history.body(g.id))
        .cloned()
        .unwrap();
    // admitted while paused, as the only new genome, through the evaluator
    assert!(history.paused);
    assert_eq!(history.genomes.len(), before + 1);
    assert_eq!(person.parent_id, Some(0));
    assert!(person.valid, "{person:?}");
    assert!(
        person.diff.as_deref().unwrap().contains("+# tried by hand"),
        "{:?}",
        person.diff
    );
    // the editor closed and the new genome is shown, named for its author
    assert!(h.state().editor().is_none());
    assert_eq!(h.state().selected(), Some(person.id));
    h.get_by_label("· written by a person");
    // the table refreshes its rows at most a few times a second
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.query_by_label("person").is_none() {
        assert!(Instant::now() < deadline, "no row by a person in the table");
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    h.get_by_label("Prompt").click();
    h.run_steps(2);
    h.get_by_label("No prompt: a person wrote this program.");

    // The person's own program again is refused before it is sent.
    h.get_by_role_and_label(Role::Button, "Edit").click();
    // the click's frame opens it; a window is sized before it shows
    h.run_steps(4);
    h.state_mut()
        .editor_mut()
        .unwrap()
        .set_text(person.content.text().into_owned());
    h.run_steps(2);
    assert!(
        h.get_by_role_and_label(Role::Button, &format!("Submit as child of #{}", person.id))
            .accesskit_node()
            .is_disabled()
    );
    h.get_by_role_and_label(Role::Button, "Cancel").click();
    h.run_steps(2);
    assert!(h.state().editor().is_none());
    h.state_mut().stop();
    step_until(&mut h, "the end", |v| !v.is_running());
}

/// People are held to the task's edit rules as the model is: a line typed
/// below the EVOLVE-BLOCK is refused, naming the rule, until "Allow edits
/// outside the markers" is ticked; then the child goes in and records the
/// override.
#[test]
fn an_edit_outside_the_markers_needs_the_override_and_the_genome_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut h = harness();
    paused_run(&mut h, &task);
    h.state_mut().select(Some(0));
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Edit").click();
    h.run_steps(4);
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run_steps(1);
    // at the end (where the cursor starts): below the END marker
    h.get_by_role(Role::MultilineTextInput).type_text(HAND);
    h.run_steps(2);
    assert!(
        h.get_by_role_and_label(Role::Button, "Submit as child of #0")
            .accesskit_node()
            .is_disabled()
    );
    h.query_by_label_contains(
        "changed outside the EVOLVE-BLOCK markers (initial_program.py line 10: `return [A, B, C, SHIFT]`)",
    )
    .unwrap();
    h.get_by_label("Allow edits outside the markers").click();
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Submit as child of #0")
        .click();

    step_until(&mut h, "the person's child", |v| {
        v.history().genomes.iter().any(|g| g.is_by_person())
    });
    let history = h.state().history();
    let person = history
        .genomes
        .iter()
        .find(|g| g.is_by_person())
        .and_then(|g| history.body(g.id))
        .unwrap();
    assert!(person.diff.as_deref().unwrap().contains("+# tried by hand"));
    let rule = person.rule_override.as_deref().unwrap_or_default();
    assert!(
        rule.contains("outside the EVOLVE-BLOCK markers (initial_program.py line 10"),
        "{rule}"
    );
    h.state_mut().stop();
    step_until(&mut h, "the end", |v| !v.is_running());
}

#[test]
fn notes_and_a_pin_reach_the_following_prompts_and_unpin_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut h = harness();
    paused_run(&mut h, &task);

    // Notes: open the box, write, apply.
    h.get_by_label("Notes").click();
    h.run_steps(2);
    h.get_by_label("none in force");
    assert!(
        h.get_by_role_and_label(Role::Button, "Apply notes")
            .accesskit_node()
            .is_disabled()
    );
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run_steps(1);
    h.get_by_role(Role::MultilineTextInput).type_text(NOTE);
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Apply notes").click();
    step_until(&mut h, "the notes in force", |v| {
        v.history().steering.notes == NOTE
    });
    h.get_by_label_contains("in every prompt from iteration");

    // Pin the initial program from the inspector.
    h.state_mut().select(Some(0));
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Pin as inspiration")
        .click();
    step_until(&mut h, "the pin", |v| {
        v.history().steering.pins.iter().any(|p| p.genome == 0)
    });
    h.get_by_label("pinned");
    h.get_by_role_and_label(Role::Button, "Unpin #0");

    // Resume: the following prompts carry the notes and show #0.
    let before = h.state().history().genomes.len();
    h.get_by_role_and_label(Role::Button, "Resume").click();
    step_until(&mut h, "children after the notes", |v| {
        v.history().genomes.len() >= before + 3
    });
    h.get_by_role_and_label(Role::Button, "Pause").click();
    step_until(&mut h, "the pause", |v| v.history().paused);
    let history = h.state().history();
    let later: Vec<_> = history.genomes[before..]
        .iter()
        .map(|g| history.body(g.id).cloned().unwrap())
        .collect();
    for g in &later {
        let prompt = g.prompt.as_ref().unwrap();
        assert!(
            prompt.user.contains(NOTES_HEADING) && prompt.user.contains(NOTE),
            "{}",
            prompt.user
        );
        if g.parent_id != Some(0) {
            assert_eq!(g.inspiration_ids.first(), Some(&0), "{g:?}");
        }
    }

    // Unpin from the notes box.
    h.get_by_role_and_label(Role::Button, "Unpin #0").click();
    step_until(&mut h, "the unpin", |v| {
        v.history().steering.pins.is_empty()
    });
    h.get_by_label("none (pin a genome from the inspector)");
    h.get_by_role_and_label(Role::Button, "Pin as inspiration");
    h.state_mut().stop();
    step_until(&mut h, "the end", |v| !v.is_running());
}

/// A repository genome: Edit lists every file, the ones the task does not
/// let change read-only; an edit of a module goes in as the only change.
#[test]
fn edit_of_a_folder_program_lists_every_file_and_submits_the_tree() {
    let registry = galapagos::engine::testing::registry();
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/fit_package");
    let mut c = common::with_slow_evaluator(card("best_of_n.yaml", &registry), 30);
    c.general.max_iterations = 40;
    let mut h = harness();
    let ctx = h.ctx.clone();
    h.state_mut().start(
        common::plan_in(c, &task, None, &registry),
        default_model(),
        &ctx,
    );
    step_until(&mut h, "the initial program", |v| {
        !v.history().genomes.is_empty()
    });
    h.get_by_role_and_label(Role::Button, "Pause").click();
    step_until(&mut h, "the pause", |v| v.history().paused);
    h.state_mut().select(Some(0));
    h.run_steps(2);
    h.get_by_role_and_label(Role::Button, "Edit").click();
    h.run_steps(4);
    // the first editable file is shown; the list has every file
    assert_eq!(h.state().editor().unwrap().file(), "fitpkg/__init__.py");
    h.get_by_role_and_label(Role::ComboBox, "File").click();
    h.run_steps(3);
    h.get_by_label("README.md (read-only)");
    h.get_by_label("tests/test_model.py (read-only)");
    h.get_by_label("fitpkg/model.py").click();
    h.run_steps(3);
    assert_eq!(h.state().editor().unwrap().file(), "fitpkg/model.py");
    h.get_by_label("0 changed");
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run_steps(2);
    // inside the EVOLVE-BLOCK (the cursor starts at the end): before its
    // END marker, the last line
    h.key_press(egui::Key::ArrowUp);
    h.run_steps(1);
    h.get_by_role(Role::MultilineTextInput).type_text(HAND);
    h.run_steps(2);
    h.get_by_label("1 changed");
    h.get_by_role_and_label(Role::Button, "Submit as child of #0")
        .click();
    step_until(&mut h, "the person's child", |v| {
        v.history().genomes.iter().any(|g| g.is_by_person())
    });
    let history = h.state().history();
    let person = history
        .genomes
        .iter()
        .find(|g| g.is_by_person())
        .and_then(|g| history.body(g.id))
        .unwrap();
    let changed: Vec<String> = person
        .content
        .changes_from(&history.body(0).unwrap().content)
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(changed, vec!["fitpkg/model.py".to_owned()]);
    h.state_mut().stop();
    step_until(&mut h, "the end", |v| !v.is_running());
}

/// The screenshots in docs/steering.md: the editor on circle_packing's best genome of
/// a paused best_of_n run, and the notes box with a pin after the person's
/// child is in (1024×640 and 1920×1080).
#[test]
#[ignore = "writes the screenshots in docs/steering.md"]
fn screenshots_of_edit_and_inject_and_the_notes_box() {
    use galapagos::studio::App;
    use galapagos::studio::state::{State, Tab};
    let registry = common::registry();
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/circle_packing");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/screenshots");
    for size in [egui::vec2(1024.0, 640.0), egui::vec2(1920.0, 1080.0)] {
        let tmp = tempfile::tempdir().unwrap();
        let state = State {
            runs_folder: tmp.path().join("runs"),
            ..State::default()
        };
        let mut h = Harness::builder()
            .with_size(size)
            .with_step_dt(1.0 / 60.0)
            .wgpu()
            .build_ui_state(
                |ui, app: &mut App| {
                    app.logic(ui.ctx());
                    app.show(ui);
                },
                App::new(state, Arc::clone(&registry)).with_settings_path(None),
            );
        let mut c = card("best_of_n.yaml", &registry);
        c.general.max_iterations = 60;
        let ctx = h.ctx.clone();
        h.state_mut().state.tab = Tab::Run;
        h.state_mut().run_view.start(
            common::plan_in(c, &task, None, &registry),
            galapagos::engine::testing::SlowOffline::model(20),
            &ctx,
        );
        let wait = |h: &mut Harness<'_, App>, done: &dyn Fn(&App) -> bool| {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !done(h.state()) {
                assert!(Instant::now() < deadline, "timed out");
                h.step();
                std::thread::sleep(Duration::from_millis(5));
            }
            h.run_steps(3);
        };
        wait(&mut h, &|a| a.run_view.history().genomes.len() >= 16);
        h.state_mut().run_view.pause();
        wait(&mut h, &|a| a.run_view.history().paused);
        let best = h.state().run_view.history().best_id.unwrap();
        h.state_mut().run_view.select(Some(best));
        h.state_mut().run_view.open_editor(best);
        h.run_steps(2);
        let text = h
            .state()
            .run_view
            .editor()
            .unwrap()
            .program()
            .text()
            .into_owned();
        let edited = text
            .replacen("GROW_PASSES = ", "GROW_PASSES = 4  # by hand, was ", 1)
            .replacen(
                "def construct_centers",
                "# by hand: let every circle grow longer into the free space\ndef construct_centers",
                1,
            );
        assert_ne!(edited, text, "the edit changes the program");
        h.state_mut()
            .run_view
            .editor_mut()
            .unwrap()
            .set_text(edited);
        h.run_steps(4);
        h.remove_cursor();
        h.run_steps(2);
        let path = out.join(format!("steer-edit-{}x{}.png", size.x, size.y));
        h.render().unwrap().save(&path).unwrap();
        eprintln!("wrote {}", path.display());

        h.get_by_role_and_label(Role::Button, &format!("Submit as child of #{best}"))
            .click();
        wait(&mut h, &|a| a.run_view.editor().is_none());
        h.get_by_label("Notes").click();
        h.run_steps(2);
        h.state_mut().run_view.notes_box_mut().set_draft(
            "Keep the circles inside the unit square; the last edits only moved one circle: try moving a ring of them.",
        );
        h.run_steps(2);
        h.get_by_role_and_label(Role::Button, "Apply notes").click();
        wait(&mut h, &|a| !a.run_view.history().steering.notes.is_empty());
        h.state_mut().run_view.pin(0);
        wait(&mut h, &|a| !a.run_view.history().steering.pins.is_empty());
        h.state_mut().run_view.resume();
        wait(&mut h, &|a| a.run_view.history().genomes.len() >= 24);
        h.state_mut().run_view.pause();
        wait(&mut h, &|a| a.run_view.history().paused);
        let person = h
            .state()
            .run_view
            .history()
            .genomes
            .iter()
            .find(|g| g.is_by_person())
            .map(|g| g.id)
            .unwrap();
        // the next genome, so the person's square is not under the selection ring
        // and its row ("person") is in view
        h.state_mut().run_view.select(Some(person + 1));
        h.run_steps(4);
        h.remove_cursor();
        h.run_steps(2);
        let path = out.join(format!("steer-notes-{}x{}.png", size.x, size.y));
        h.render().unwrap().save(&path).unwrap();
        eprintln!("wrote {}", path.display());
        h.state_mut().run_view.stop();
        wait(&mut h, &|a| !a.run_view.is_running());
    }
}
