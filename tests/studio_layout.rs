//! The studio's layout as a person meets it at 1024×640 and 1920×1080
//! (egui_kittest, no GPU): panes that keep their sizes and follow their
//! dividers, buttons inside the panel they belong to, code kept on its
//! lines, and the islands grids' axes and colour scale. Checked from the
//! widgets' rects, driven by clicks and pointer drags.
#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::events::{RunEvent, RunInfo, RunStatus};
use galapagos::engine::genome::{FITNESS_KEY, Genome};
use galapagos::engine::registry::Registry;
use galapagos::engine::selection::PolicyStatus;
use galapagos::studio::run::{RunHistory, read_archive};
use galapagos::studio::state::{State, Tab};
use galapagos::studio::{App, StudioLaunch};

const SMALL: egui::Vec2 = egui::vec2(1024.0, 640.0);
const LARGE: egui::Vec2 = egui::vec2(1920.0, 1080.0);

fn window(size: egui::Vec2) -> egui::Rect {
    egui::Rect::from_min_size(egui::Pos2::ZERO, size)
}

fn inside(r: egui::Rect, outer: egui::Rect) -> bool {
    outer.expand(1.0).contains_rect(r)
}

/// The studio on `state`, with the shipped `card` on `circle_packing`.
fn studio_with(state: State, card: &str, size: egui::Vec2) -> Harness<'static, App> {
    studio_remembering(state, None, card, size)
}

/// [`studio_with`], egui's memory as a previous session left it (eframe
/// keeps it with the studio's state: the panels' sizes in points).
fn studio_remembering(
    state: State,
    memory: Option<egui::Memory>,
    card: &str,
    size: egui::Vec2,
) -> Harness<'static, App> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut app = App::new(state, Arc::new(Registry::builtin()))
        .with_settings_path(None)
        .with_model(galapagos::engine::model::default_model());
    app.launch(StudioLaunch {
        card: Some(root.join("cards").join(card)),
        task: Some(root.join("assets/tasks/circle_packing")),
    });
    let mut h = Harness::builder()
        .with_size(size)
        .with_max_steps(16)
        .with_step_dt(1.0 / 60.0)
        .with_context_setup(move |ctx| {
            if let Some(memory) = memory {
                ctx.memory_mut(|m| *m = memory);
            }
        })
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        );
    settle(&mut h);
    h
}

/// Run frames until the studio asks for no more, waiting (a generous bound)
/// while its background work (the task check, the library) is not done:
/// under load that takes more frames than `Harness::run` allows.
fn settle(h: &mut Harness<'static, App>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while h.try_run().is_err() {
        assert!(Instant::now() < deadline, "the studio never settled");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn studio(runs: &Path, card: &str, size: egui::Vec2) -> Harness<'static, App> {
    let state = State {
        runs_folder: runs.to_path_buf(),
        ..State::default()
    };
    studio_with(state, card, size)
}

/// Step until `done`, failing after `secs`.
fn step_until(
    h: &mut Harness<'static, App>,
    secs: u64,
    done: impl Fn(&Harness<'static, App>) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done(h) {
        assert!(Instant::now() < deadline, "timed out");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(2);
}

fn genome(i: u64) -> Genome {
    let mut g = Genome {
        id: i,
        parent_id: (i > 0).then_some(i / 3),
        iteration: i,
        valid: true,
        content: format!("x = {i}\ny = 2\nz = {}\n", i % 4).into(),
        ..Genome::default()
    };
    g.scores.insert(FITNESS_KEY.to_owned(), i as f64 / 10.0);
    g
}

/// A run of `genomes` as the worker reports it.
fn history(genomes: impl IntoIterator<Item = Genome>) -> RunHistory {
    let mut h = RunHistory::new();
    h.apply(RunEvent::Started(RunInfo {
        card_name: "best_of_n".into(),
        task_name: "circle_packing".into(),
        max_iterations: 100,
        model: "offline".into(),
        offline: true,
        seed: 0,
        parallel: 1,
        run_dir: None,
        unsandboxed: None,
        forked_from: None,
        clearance: None,
    }));
    for (i, g) in genomes.into_iter().enumerate() {
        let score = g.fitness();
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: Some(i as u64),
            best_score: score,
            iterations_done: i as u64,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

/// The Run tab's two dividers: (the search views' bottom edge, the
/// inspector's left edge).
fn dividers(h: &Harness<'static, App>) -> (f32, f32) {
    let mut plot = None;
    let mut inspector = None;
    for node in h.query_all_by_label("Resize panel") {
        let r = node.rect();
        if r.width() > r.height() {
            plot = Some(r.center().y);
        } else {
            inspector = Some(r.center().x);
        }
    }
    (
        plot.expect("the search views' divider"),
        inspector.expect("the inspector's divider"),
    )
}

/// Drag with the pointer from `from` to `to`, a few frames on the way.
fn drag(h: &mut Harness<'static, App>, from: egui::Pos2, to: egui::Pos2) {
    h.hover_at(from);
    h.run_steps(2);
    h.drag_at(from);
    h.run_steps(1);
    for k in 1..=5 {
        h.hover_at(from + (to - from) * (k as f32 / 5.0));
        h.run_steps(1);
    }
    h.drop_at(to);
    h.run_steps(3);
}

/// A beam_search run recorded into `dir`.
fn record_beam(task: &Path, dir: &Path) {
    let registry = common::registry();
    let mut card = common::with_evaluator(common::card("beam_search.yaml", &registry), "trivial");
    card.general.max_iterations = 30;
    let handle = common::spawn(common::plan_in(
        card,
        task,
        Some(dir.to_path_buf()),
        &registry,
    ));
    let (_, summary) = common::collect(handle, |_, _| {});
    assert_eq!(summary.status, RunStatus::Completed);
}

/// Selecting genomes in a beam run's Beam view leaves the beam and the
/// inspector where they were: neither pane jumps or shrinks to what it
/// shows, however many frames go by.
#[test]
fn the_beam_and_inspector_panes_keep_their_sizes_when_a_genome_is_selected() {
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let run = tmp.path().join("runs").join("beam");
    record_beam(&task, &run);
    let mut h = studio(&tmp.path().join("runs"), "beam_search.yaml", SMALL);
    let archived = read_archive(&run).unwrap();
    h.state_mut().run_view.show_archived(archived);
    h.state_mut().state.tab = Tab::Run;
    settle(&mut h);
    h.get_by_label("Beam").click();
    step_until(&mut h, 60, |h| {
        h.query_by_label("beam membership over time").is_some()
    });
    h.run_steps(10);
    let before = dividers(&h);
    let grid = h.get_by_label("beam membership over time").rect();
    assert!(grid.height() > 60.0, "the beam grid squeezed: {grid:?}");
    // a click on a row's id (its first cell of the rows in view)
    for id in ["#2", "#1", "#0"] {
        h.query_all_by_label(id).next().unwrap().click();
        h.run_steps(10);
        let now = dividers(&h);
        assert!(
            (now.0 - before.0).abs() <= 1.0 && (now.1 - before.1).abs() <= 1.0,
            "after selecting {id} the dividers moved from {before:?} to {now:?}"
        );
        let g = h.get_by_label("beam membership over time").rect();
        assert!(
            (g.height() - grid.height()).abs() <= 1.0,
            "the beam grid went from {grid:?} to {g:?}"
        );
    }
}

/// At 1920×1080 the genome inspector takes its share of the width (not the
/// width of its text), its divider follows a drag both ways and stays where
/// it was let go, and the studio opens the next time with that share.
#[test]
fn the_genome_inspector_takes_its_share_and_follows_its_divider() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), "best_of_n.yaml", LARGE);
    h.state_mut()
        .run_view
        .load_history(history((0..20).map(genome)));
    h.state_mut().state.tab = Tab::Run;
    h.run_steps(4);
    let (_, x) = dividers(&h);
    let width = LARGE.x - x;
    assert!(
        (700.0..=1000.0).contains(&width),
        "the inspector is {width} px wide at 1920"
    );
    // genome #4's score cell
    h.get_by_label("0.40000").click();
    h.run_steps(4);
    assert_eq!(h.state().run_view.selected(), Some(4));
    assert!((dividers(&h).1 - x).abs() <= 1.0, "a selection moved it");
    // dragged wider, then narrower: each stays where it was let go
    for to in [x - 300.0, x + 200.0] {
        let from = egui::pos2(dividers(&h).1, 900.0);
        drag(&mut h, from, egui::pos2(to, 900.0));
        h.run_steps(6);
        let now = dividers(&h).1;
        assert!((now - to).abs() <= 4.0, "dragged to {to}, it is at {now}");
    }
    let share = h.state().state.layout.run.inspector_share;
    let expected = (LARGE.x - (x + 200.0)) / LARGE.x;
    assert!(
        (share - expected).abs() < 0.02,
        "share {share}, expected about {expected}"
    );
    // the next studio opens with that share
    let persisted = serde_json::to_string(&h.state().state).unwrap();
    let state: State = serde_json::from_str(&persisted).unwrap();
    let mut next = studio_with(state, "best_of_n.yaml", LARGE);
    next.state_mut()
        .run_view
        .load_history(history((0..20).map(genome)));
    next.state_mut().state.tab = Tab::Run;
    next.run_steps(4);
    let reopened = dividers(&next).1;
    assert!(
        (reopened - (x + 200.0)).abs() <= 24.0,
        "reopened at {reopened}, left at {}",
        x + 200.0
    );
}

/// Squeezed to its least height, the fitness plot's y label is cut to the
/// plot's height instead of running over the controls above it.
#[test]
fn the_plot_y_label_fits_a_squeezed_plot() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), "best_of_n.yaml", SMALL);
    h.state_mut()
        .run_view
        .load_history(history((0..20).map(genome)));
    h.state_mut().state.tab = Tab::Run;
    h.run_steps(4);
    let (y, _) = dividers(&h);
    drag(&mut h, egui::pos2(300.0, y), egui::pos2(300.0, 0.0));
    h.run_steps(4);
    let (squeezed, _) = dividers(&h);
    assert!(squeezed < y - 60.0, "not squeezed: {squeezed} from {y}");
    let plot = h.get_by_label("Fitness plot");
    let rect = plot.rect();
    let value = plot.value().unwrap_or_default();
    let label = value.split("; y: ").nth(1).unwrap().to_owned();
    let ctx = h.ctx.clone();
    let font = egui::TextStyle::Body.resolve(&ctx.global_style());
    let width = ctx.fonts_mut(|f| {
        f.layout_no_wrap(label.clone(), font, egui::Color32::WHITE)
            .size()
            .x
    });
    assert!(
        width <= rect.height(),
        "the y label {label:?} ({width} px) is longer than the plot is high ({rect:?})"
    );
    // let out again, the whole label comes back
    drag(
        &mut h,
        egui::pos2(300.0, squeezed),
        egui::pos2(300.0, 520.0),
    );
    h.run_steps(4);
    let value = h.get_by_label("Fitness plot").value().unwrap_or_default();
    assert!(value.ends_with("y: fitness (combined_score)"), "{value}");
}

/// The inspector's Program and Diff tabs keep a long line of code on one
/// line (the tab scrolls sideways) at 1024×640, where wrapping it would
/// make it read as two lines of code.
#[test]
fn program_and_diff_lines_do_not_wrap() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), "best_of_n.yaml", SMALL);
    let long = format!("weights = [{}]", vec!["0.125"; 60].join(", "));
    let genomes = (0..6).map(|i| {
        let mut g = genome(i);
        if i == 4 {
            g.content = format!("x = 4\n{long}\nz = 0\n").into();
        }
        g
    });
    h.state_mut().run_view.load_history(history(genomes));
    h.state_mut().run_view.select(Some(4));
    h.state_mut().state.tab = Tab::Run;
    h.run_steps(4);
    let (_, divider) = dividers(&h);
    let inspector_width = SMALL.x - divider;
    for (tab, shown) in [
        ("Program", "weights = [0.125"),
        ("Diff", "+weights = [0.125"),
    ] {
        h.get_by_label(tab).click();
        h.run_steps(4);
        let text = h.get_by_label_contains(shown);
        let r = text.rect();
        let value = text.value().unwrap_or_default();
        let lines = value.lines().count().max(1);
        assert!(
            r.width() > inspector_width,
            "{tab}: the long line was wrapped into {r:?} ({inspector_width} px inspector)"
        );
        assert!(
            r.height() / lines as f32 <= 20.0,
            "{tab}: {lines} lines in {r:?}: some wrapped"
        );
    }
}

/// The Blocks tab's panels, from their dividers: (the library's right
/// edge, the block inspector's left edge).
fn block_panels(h: &Harness<'static, App>) -> (f32, f32) {
    // the side panels' dividers run up and down (the canvas's across)
    let xs: Vec<f32> = h
        .query_all_by_label("Resize panel")
        .map(|n| n.rect())
        .filter(|r| r.height() > r.width())
        .map(|r| r.center().x)
        .collect();
    assert_eq!(xs.len(), 2, "{xs:?}");
    (xs[0].min(xs[1]), xs[0].max(xs[1]))
}

/// At 1024×640 the block inspector's Reset buttons (beam_search's policy,
/// whose strategy is a long dropdown) and the Objectives' Remove buttons
/// (the pareto card) are whole inside their panel and the window; at
/// 1920×1080 the inspector is wide enough for beam_search's longest
/// parameter name.
#[test]
fn reset_and_remove_buttons_fit_their_panels_and_names_are_whole_at_1920() {
    let runs = tempfile::tempdir().unwrap();
    let win = window(SMALL);
    let h = studio(runs.path(), "beam_search.yaml", SMALL);
    assert_eq!(
        h.state().selected,
        galapagos::engine::component::Slot::SelectionPolicy
    );
    let explicit = h.state().doc.card.selection_policy.params.0.len();
    let (_, inspector) = block_panels(&h);
    let resets: Vec<egui::Rect> = h.query_all_by_label("Reset").map(|n| n.rect()).collect();
    assert_eq!(resets.len(), explicit, "one Reset per parameter set");
    for r in resets {
        assert!(
            inside(r, win) && r.left() >= inspector,
            "a Reset button {r:?} is cut (inspector from x={inspector})"
        );
    }
    let mut h = studio(runs.path(), "pareto.yaml", SMALL);
    let objectives: Vec<String> = h
        .state()
        .doc
        .card
        .general
        .objectives
        .keys()
        .cloned()
        .collect();
    assert!(objectives.len() >= 2, "{objectives:?}");
    for metric in &objectives {
        let label = format!("Remove {metric}");
        h.get_by_label(&label).scroll_to_me();
        h.run_steps(3);
        let (library, inspector) = block_panels(&h);
        let r = h.get_by_label(&label).rect();
        assert!(
            inside(r, win) && r.left() >= library && r.right() <= inspector,
            "{label} {r:?} is cut (the card's area is x={library}..{inspector})"
        );
    }
    // and whole, with the parameters' names, at 1920×1080
    let mut h = studio(runs.path(), "beam_search.yaml", LARGE);
    h.run_steps(2);
    let (_, inspector) = block_panels(&h);
    for r in h.query_all_by_label("Reset").map(|n| n.rect()) {
        assert!(inside(r, window(LARGE)) && r.left() >= inspector, "{r:?}");
    }
    let key = "beam_selection_strategy";
    let r = h
        .get(
            egui_kittest::kittest::by()
                .label(key)
                .include_labels()
                .role(egui::accesskit::Role::Label),
        )
        .rect();
    // 23 monospace characters of about 7 px
    assert!(r.width() > 7.0 * 23.0 - 4.0, "{key} cut at 1920: {r:?}");
}

/// The Islands view names each grid's axes and shows what the colour
/// means (the score scale, from the run's lowest to its highest score),
/// inside the window at 1024×640; the Beam view shows the same scale.
#[test]
fn island_grids_name_their_axes_and_show_the_score_scale() {
    let tmp = tempfile::tempdir().unwrap();
    let task = common::temp_task(tmp.path());
    let run = tmp.path().join("runs").join("islands");
    let registry = common::registry();
    let mut card = common::with_evaluator(common::card("openevolve.yaml", &registry), "trivial");
    card.general.max_iterations = 30;
    let handle = common::spawn(common::plan_in(card, &task, Some(run.clone()), &registry));
    let (_, summary) = common::collect(handle, |_, _| {});
    assert_eq!(summary.status, RunStatus::Completed);
    let mut h = studio(&tmp.path().join("runs"), "openevolve.yaml", SMALL);
    let archived = read_archive(&run).unwrap();
    let (lo, hi) = archived
        .history
        .genomes
        .iter()
        .filter(|g| g.valid)
        .filter_map(|g| g.fitness())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
            (a.min(f), b.max(f))
        });
    h.state_mut().run_view.show_archived(archived);
    h.state_mut().state.tab = Tab::Run;
    settle(&mut h);
    h.get_by_label("Islands").click();
    step_until(&mut h, 60, |h| h.query_by_label("island 0 grid").is_some());
    let win = window(SMALL);
    let grids = h.query_all_by_label_contains(" grid").count();
    assert!(grids >= 2, "{grids} island grids");
    let axes: Vec<egui::Rect> = h
        .query_all_by_label("x: complexity · y: diversity")
        .map(|n| n.rect())
        .collect();
    assert_eq!(axes.len(), grids, "one axes line per grid");
    let grid = h.get_by_label("island 0 grid").rect();
    assert!(
        axes[0].top() >= grid.bottom() - 1.0,
        "the axes' names {:?} are not under the grid {grid:?}",
        axes[0]
    );
    for r in &axes {
        assert!(inside(*r, win), "axes' names {r:?} cut");
    }
    let scale = h.get_by_label("score colour scale").rect();
    assert!(inside(scale, win), "{scale:?}");
    h.get_by_label("colour: score (combined_score)");
    let low = h.get_by_label(&format!("{lo:.4}")).rect();
    let high = h.get_by_label(&format!("{hi:.4}")).rect();
    assert!(
        low.right() <= scale.left() + 1.0 && high.left() >= scale.right() - 1.0,
        "the scale's ends {low:?} {high:?} around {scale:?}"
    );
}

/// The studio opens at 1400×880 and is maximised to 1920×1080: the genome
/// inspector and the block inspector take their shares of the wider window
/// (not the points they had), the block inspector with room for
/// beam_search's longest parameter name.
#[test]
fn the_inspectors_keep_their_shares_when_the_window_grows() {
    let runs = tempfile::tempdir().unwrap();
    let opened = egui::vec2(1400.0, 880.0);
    let mut h = studio(runs.path(), "beam_search.yaml", opened);
    let (_, block_inspector) = block_panels(&h);
    let block_share = (opened.x - block_inspector) / opened.x;
    h.state_mut()
        .run_view
        .load_history(history((0..20).map(genome)));
    h.state_mut().state.tab = Tab::Run;
    h.run_steps(4);
    let (_, x) = dividers(&h);
    let share = (opened.x - x) / opened.x;
    h.set_size(LARGE);
    h.run_steps(4);
    let (_, x) = dividers(&h);
    let now = (LARGE.x - x) / LARGE.x;
    assert!(
        (now - share).abs() < 0.02,
        "the genome inspector's share went from {share} to {now}"
    );
    h.get_by_label("Blocks").click();
    h.run_steps(4);
    let (_, block_inspector) = block_panels(&h);
    let now = (LARGE.x - block_inspector) / LARGE.x;
    assert!(
        now >= block_share - 0.01 && now >= 0.2,
        "the block inspector's share went from {block_share} to {now}"
    );
    let key = "beam_selection_strategy";
    let r = h
        .get(
            egui_kittest::kittest::by()
                .label(key)
                .include_labels()
                .role(egui::accesskit::Role::Label),
        )
        .rect();
    assert!(r.width() > 7.0 * 23.0 - 4.0, "{key} cut: {r:?}");
}

/// A session at 1024×640, the next one at 1920×1080 with what the first
/// left (the studio's state and egui's memory, as eframe keeps them): the
/// block inspector takes its share of the wide window, with beam_search's
/// longest parameter name whole, not the points it had at 1024.
#[test]
fn the_block_inspector_takes_its_share_at_1920_after_a_session_at_1024() {
    let runs = tempfile::tempdir().unwrap();
    let h = studio(runs.path(), "beam_search.yaml", SMALL);
    let (_, narrow) = block_panels(&h);
    let state = h.state().state.clone();
    let memory = h.ctx.memory(|m| m.clone());
    drop(h);
    assert!(SMALL.x - narrow < 0.22 * LARGE.x, "{narrow}");
    let mut h = studio_remembering(state, Some(memory), "beam_search.yaml", LARGE);
    h.run_steps(2);
    let (_, inspector) = block_panels(&h);
    let share = (LARGE.x - inspector) / LARGE.x;
    assert!(
        share >= 0.215,
        "the block inspector kept {} px of 1920 ({share:.3})",
        LARGE.x - inspector
    );
    let key = "beam_selection_strategy";
    let r = h
        .get(
            egui_kittest::kittest::by()
                .label(key)
                .include_labels()
                .role(egui::accesskit::Role::Label),
        )
        .rect();
    assert!(r.width() > 7.0 * 23.0 - 4.0, "{key} cut at 1920: {r:?}");
}

/// At 1024×640 an invalid genome with a long error leaves the genome
/// inspector's tabs in view (its header scrolls in at most half the pane),
/// and each tab opens.
#[test]
fn the_genome_inspector_tabs_stay_in_view_for_an_invalid_genome_at_1024() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), "best_of_n.yaml", SMALL);
    let mut genomes: Vec<Genome> = (0..12).map(genome).collect();
    let bad = &mut genomes[7];
    bad.valid = false;
    bad.scores.clear();
    bad.error = Some(format!(
        "evaluation failed: {} \nTraceback (most recent call last):\n  File \"evaluator.py\", line 3\n",
        "ValueError: the packing has overlapping circles at ".repeat(12)
    ));
    h.state_mut().run_view.load_history(history(genomes));
    h.state_mut().run_view.select(Some(7));
    h.state_mut().state.tab = Tab::Run;
    h.run_steps(4);
    h.get_by_label("Genome #7");
    let win = window(SMALL);
    for tab in ["Scores", "Diff", "Program", "Output"] {
        let r = h.get_by_label(tab).rect();
        assert!(
            r.height() >= 10.0 && inside(r, win),
            "the {tab} tab is out of view: {r:?}"
        );
    }
    h.get_by_label("Output").click();
    h.run_steps(3);
    h.get_by_label_contains("Traceback (most recent call last)");
}

/// A window squeezed below the panes' least sizes for a while (a tiling
/// window manager's transient, a status line that wrapped) leaves their
/// shares as they were: back at full size the plot and the inspector take
/// what they took before, not the shares the squeeze forced.
#[test]
fn a_squeeze_does_not_ratchet_the_panes_shares() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), "best_of_n.yaml", LARGE);
    h.state_mut()
        .run_view
        .load_history(history((0..20).map(genome)));
    h.state_mut().state.tab = Tab::Run;
    h.run_steps(4);
    let before = h.state().run_view.panes;
    h.set_size(egui::vec2(700.0, 330.0));
    h.run_steps(6);
    h.set_size(LARGE);
    h.run_steps(6);
    let after = h.state().run_view.panes;
    assert!(
        (after.plot_share - before.plot_share).abs() < 0.01
            && (after.inspector_share - before.inspector_share).abs() < 0.01,
        "shares went from {before:?} to {after:?}"
    );
}

/// The Blocks tab's divider between the block canvas and the general
/// settings (the one resize handle that runs across the tab).
fn canvas_divider(h: &Harness<'static, App>) -> f32 {
    h.query_all_by_label("Resize panel")
        .map(|n| n.rect())
        .find(|r| r.width() > r.height())
        .expect("the canvas's divider")
        .center()
        .y
}

/// The general settings' rows (in the order they are drawn) whose labels
/// are wholly above the status bar.
fn general_rows_in_view(h: &Harness<'static, App>) -> usize {
    let bottom = h.get_by_label_contains("Card is valid").rect().top();
    [
        "max_iterations",
        "seed",
        "inner_retry_times",
        "parallel",
        "max_response_bytes",
        "max_cost_usd",
        "max_tokens",
        "temperature",
        "task folder",
        "runs folder",
    ]
    .into_iter()
    .filter(|l| h.get_by_label(l).rect().bottom() <= bottom)
    .count()
}

/// At 1024×640 the general settings below the block canvas get the room
/// the person gives them: the divider follows a drag up, more rows come
/// into view, the canvas keeps its blocks, and the studio opens the next
/// time with that share.
#[test]
fn the_general_settings_get_the_room_their_divider_gives() {
    let runs = tempfile::tempdir().unwrap();
    let mut h = studio(runs.path(), "best_of_n.yaml", SMALL);
    h.run_steps(4);
    let y = canvas_divider(&h);
    let rows = general_rows_in_view(&h);
    let to = y - 170.0;
    drag(&mut h, egui::pos2(480.0, y), egui::pos2(480.0, to));
    h.run_steps(6);
    let now = canvas_divider(&h);
    assert!((now - to).abs() <= 4.0, "dragged to {to}, it is at {now}");
    let more = general_rows_in_view(&h);
    assert!(more >= rows + 4, "{rows} rows in view before, {more} after");
    // the canvas still shows every block
    let canvas = h.get_by_label("Block canvas").rect();
    assert!(canvas.bottom() <= now + 2.0, "canvas {canvas:?}");
    for label in ["Population block", "Evaluator block"] {
        assert!(h.query_by_label(label).is_some(), "{label} gone");
    }
    // the next studio opens with that share
    let share = h.state().state.layout.canvas_share;
    assert!(share.is_some_and(|s| s < 0.5), "share {share:?}");
    let persisted = serde_json::to_string(&h.state().state).unwrap();
    let state: State = serde_json::from_str(&persisted).unwrap();
    let mut next = studio_with(state, "best_of_n.yaml", SMALL);
    next.run_steps(4);
    let reopened = canvas_divider(&next);
    assert!(
        (reopened - now).abs() <= 8.0,
        "reopened at {reopened}, left at {now}"
    );
}
