//! Inspecting a search in the studio (egui_kittest, no GPU): the genealogy
//! tree selects what it is clicked on, two genomes are diffed side by side,
//! recorded runs are compared.
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

use std::sync::Arc;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::events::RunEvent;
use galapagos::engine::genome::{FITNESS_KEY, Genome, GenomeId};
use galapagos::engine::selection::PolicyStatus;
use galapagos::studio::run::{RunHistory, RunView, SearchView};

/// A history of `n` genomes: genome `i` is a child of `i / 3` (a tree three
/// wide), every seventh one invalid, scores growing with depth.
fn history(n: u64) -> RunHistory {
    let mut h = RunHistory::new();
    for i in 0..n {
        let parent = (i > 0).then_some(i / 3);
        let valid = i % 7 != 6;
        let mut g = Genome {
            id: i,
            parent_id: parent,
            iteration: i,
            valid,
            content: format!("x = {i}\ny = 2\nz = {}\n", i % 4),
            ..Genome::default()
        };
        if valid {
            g.scores.insert(FITNESS_KEY.to_owned(), i as f64 / 10.0);
        }
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: Some(i),
            best_score: Some(i as f64 / 10.0),
            iterations_done: i,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

fn harness<'a>(view: RunView) -> Harness<'a, RunView> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            view,
        )
}

fn click_at(h: &mut Harness<'_, RunView>, pos: egui::Pos2) {
    h.hover_at(pos);
    h.step();
    for pressed in [true, false] {
        h.event(egui::Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::NONE,
        });
        h.step();
    }
    h.run_steps(2);
}

#[test]
fn clicking_a_node_of_the_tree_shows_its_genome_in_the_inspector() {
    let mut view = RunView::default();
    view.load_history(history(40));
    view.set_search_view(SearchView::Tree);
    let mut h = harness(view);
    h.run_steps(3);
    h.get_by_label("genealogy tree");
    assert!(
        h.state().tree().drawn_nodes() >= 40,
        "every node is on screen"
    );
    let target: GenomeId = 17;
    let pos = h.state().tree_node_pos(target).unwrap();
    click_at(&mut h, pos);
    assert_eq!(h.state().selected(), Some(target));
    // The inspector shows it, with its parent in the lineage.
    h.get_by_label(&format!("Genome #{target}"));
    h.get_by_label("#5 (0.5000)");
    // A double click on its parent collapses the parent's subtree: the
    // genome is no longer laid out; selecting it again reveals it.
    let parent = h.state().tree_node_pos(5).unwrap();
    h.hover_at(parent);
    h.run_steps(30); // half a second: the next two clicks are a double click

    for _ in 0..2 {
        for pressed in [true, false] {
            h.event(egui::Event::PointerButton {
                pos: parent,
                button: egui::PointerButton::Primary,
                pressed,
                modifiers: egui::Modifiers::NONE,
            });
            h.step();
        }
    }
    h.run_steps(3);
    assert!(h.state().tree().is_collapsed(5));
    assert!(h.state().tree_node_pos(target).is_none());
    h.state_mut().select(Some(target));
    h.run_steps(3);
    assert!(!h.state().tree().is_collapsed(5));
    assert!(h.state().tree_node_pos(target).is_some());
}

#[test]
fn two_genomes_picked_in_the_table_are_diffed_unified_and_side_by_side() {
    let mut view = RunView::default();
    view.load_history(history(12));
    let mut h = harness(view);
    h.run_steps(3);
    // Select #3, then Ctrl+click #8: the Diff tab compares them.
    h.query_all_by_label("#3").next().unwrap().click();
    h.run_steps(2);
    h.get_by_label("#8")
        .click_modifiers(egui::Modifiers::COMMAND);
    h.run_steps(3);
    assert_eq!(h.state().selected(), Some(3));
    assert_eq!(h.state().picked(), Some(8));
    h.get_by_label("from #8 to #3");
    // Unified: removed and added lines with the line numbers of both sides
    // (x and z differ; y = 2 is context).
    h.get_by_label("- x = 8");
    h.get_by_label("+ x = 3");
    h.get_by_label("- z = 0");
    h.get_by_label("+ z = 3");
    h.get_by_label("  y = 2");
    assert!(
        h.query_all_by_label("3").count() >= 2,
        "line 3 on both sides"
    );
    // Side by side: the old line faces the new one.
    h.get_by_label("side by side").click();
    h.run_steps(2);
    h.get_by_label("x = 8");
    h.get_by_label("x = 3");
    h.get_by_label("z = 0");
    // Back to the parent: the picked genome stays available.
    h.get_by_label("parent #1").click();
    h.run_steps(2);
    h.get_by_label("from #1 to #3");
    h.get_by_label("picked #8");
}
