//! The inspector's Agent tab (egui_kittest): a genome a coding agent
//! proposed, with a transcript of 10,000 relayed steps, opens on its steps,
//! scrolls to the last one, and shows a step's messages, tool calls, reply,
//! tokens and cost, a refusal with its reason, the agent's output and the
//! diff it produced.
//!
//! (The screenshots of the tab in docs/coding-agents.md are of a real run:
//! `tests/studio_agent_run.rs`.)
#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is a failed test"
)]

use std::sync::Arc;
use std::time::Instant;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::agent_run::{AgentExit, AgentRun, AgentStep, AgentWire};
use galapagos::engine::events::RunEvent;
use galapagos::engine::genome::{FITNESS_KEY, Genome, TokenUsage};
use galapagos::engine::meter::Cap;
use galapagos::engine::selection::PolicyStatus;
use galapagos::studio::run::{InspectorTab, RunHistory, RunView};
use serde_json::json;

const PARENT: &str =
    "# EVOLVE-BLOCK-START\nA = 1.0\nB = 0.0\n# EVOLVE-BLOCK-END\n\ndef run():\n    return [A, B]\n";
const CHILD: &str = "# EVOLVE-BLOCK-START\nA = 2.5\nB = -1.25\n# EVOLVE-BLOCK-END\n\ndef run():\n    return [A, B]\n";

/// Step `i` of a transcript: a Chat Completions exchange in which the
/// model runs a command, every 97th an Anthropic one, every 1000th refused
/// at the cap.
fn step(i: u32) -> AgentStep {
    let usage = TokenUsage {
        prompt_tokens: 1_200 + u64::from(i % 50),
        completion_tokens: 40,
        cached_tokens: 1_024,
        cost_usd: Some(0.0021),
        ..TokenUsage::default()
    };
    if i % 1000 == 999 {
        return AgentStep {
            index: i,
            wire: AgentWire::ChatCompletions,
            route: "POST /v1/chat/completions".into(),
            started_ms: f64::from(i) * 900.0,
            status: 429,
            request: json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "go on"}]}).to_string(),
            response: json!({"error": {"message": "this proposal's token cap is reached", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}).to_string(),
            refused: Some("this proposal's token cap is reached (400,000 of 400,000 tokens used)".into()),
            cap: Some(Cap::ProposalTokens),
            ..AgentStep::default()
        };
    }
    if i % 97 == 5 {
        return AgentStep {
            index: i,
            wire: AgentWire::AnthropicMessages,
            route: "POST /v1/messages".into(),
            started_ms: f64::from(i) * 900.0,
            duration_ms: 640.0,
            status: 200,
            request: json!({"model": "claude-sonnet-4-5", "max_tokens": 4096,
                "system": "You are a careful engineer.",
                "messages": [{"role": "user", "content": "Tune the constants in main.py."}]})
            .to_string(),
            response: json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "Reading the evaluator first."},
                    {"type": "tool_use", "id": format!("toolu_{i}"), "name": "str_replace_based_edit_tool",
                     "input": {"command": "view", "path": "evaluator.py"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 176, "cache_read_input_tokens": 1024, "output_tokens": 40}})
            .to_string(),
            usage: Some(usage),
            ..AgentStep::default()
        };
    }
    let command = format!("sed -i 's/A = 1.0/A = 2.5/' main.py && python evaluate.py  # try {i}");
    AgentStep {
        index: i,
        wire: AgentWire::ChatCompletions,
        route: "POST /v1/chat/completions".into(),
        started_ms: f64::from(i) * 900.0,
        duration_ms: 820.0,
        status: 200,
        streamed: i.is_multiple_of(2),
        request: json!({"model": "gpt-4.1-mini", "messages": [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
            {"role": "user", "content": "Please solve this issue: make run() return the target vector."},
            {"role": "assistant", "content": "THOUGHT: look at the file.\n```bash\ncat main.py\n```"},
            {"role": "user", "content": format!("<returncode>0</returncode>\n<output>\n{PARENT}</output>")}
        ]})
        .to_string(),
        response: json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": format!("call_{i}"), "type": "function",
                    "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": 1024}}})
        .to_string(),
        usage: Some(usage),
        ..AgentStep::default()
    }
}

fn agent_run(steps: u32) -> AgentRun {
    AgentRun {
        command: vec![
            "mini".into(),
            "-m".into(),
            "openai/gpt-4.1-mini".into(),
            "-t".into(),
            "{prompt_file}".into(),
            "--yolo".into(),
        ],
        exit: AgentExit::Finished,
        wall_ms: f64::from(steps) * 900.0,
        stdout: "mini-swe-agent: step 1 … submitted\n".into(),
        stderr: "warning: the cost of gpt-4.1-mini is unknown to litellm\n".into(),
        steps: (0..steps).map(step).collect(),
        dropped: vec!["evaluator.py (not an editable file)".into()],
        chosen_parent: Some(0),
        notes: Some("A near 2.5 scores best; B is negative.".into()),
    }
}

fn history(steps: u32) -> RunHistory {
    let mut h = RunHistory::new();
    let mut parent = Genome {
        id: 0,
        valid: true,
        content: PARENT.into(),
        ..Genome::default()
    };
    parent.scores.insert(FITNESS_KEY.to_owned(), 0.2);
    let mut child = Genome {
        id: 1,
        parent_id: Some(0),
        iteration: 1,
        valid: true,
        content: CHILD.into(),
        agent: Some(Box::new(agent_run(steps))),
        ..Genome::default()
    };
    child.scores.insert(FITNESS_KEY.to_owned(), 0.9);
    for (g, best) in [(parent, 0.2), (child, 0.9)] {
        let id = g.id;
        h.apply(RunEvent::GenomeAdmitted {
            genome: Arc::new(g),
            best_id: Some(id),
            best_score: Some(best),
            iterations_done: id,
            policy: PolicyStatus::default(),
            active: vec![],
        });
    }
    h
}

fn view(steps: u32) -> RunView {
    let mut view = RunView::default();
    view.load_history(history(steps));
    view.select(Some(1));
    view.set_inspector_tab(InspectorTab::Agent);
    view
}

fn harness<'a>(size: egui::Vec2, view: RunView) -> Harness<'a, RunView> {
    Harness::builder()
        .with_size(size)
        .with_step_dt(1.0 / 60.0)
        .build_ui_state(
            |ui, view: &mut RunView| {
                view.logic(ui.ctx());
                egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
            },
            view,
        )
}

fn row(i: u32) -> String {
    format!("#{i:<4} ")
}

#[test]
fn ten_thousand_steps_open_scroll_and_show_each_step() {
    let mut h = harness(egui::vec2(1400.0, 1200.0), view(10_000));
    h.run_steps(3);
    h.get_by_label("Transcript (10000 steps)");
    h.get_by_label_contains("finished");
    h.get_by_label_contains("built on #0");
    // What stopped its spending, in the header.
    h.get_by_label("(10 refused: proposal token cap reached)");
    h.get_by_label_contains("evaluator.py (not an editable file)");
    // Only the rows in view are laid out: the first, not the last.
    assert!(h.query_all_by_label_contains(&row(0)).count() >= 1);
    assert!(h.query_by_label_contains(&row(9_999)).is_none());
    // Step 0 in full: its new messages, the tool call it made, its tokens.
    h.get_by_label_contains("Please solve this issue");
    h.get_by_label_contains("→ bash(");
    h.get_by_label_contains("1.2k prompt (1.0k cached) + 40 completion tokens · $0.0021");
    // A frame stays quick with 10,000 steps.
    let start = Instant::now();
    h.run_steps(10);
    let per_frame = start.elapsed() / 10;
    assert!(
        per_frame.as_millis() < 500,
        "a frame took {per_frame:?} with 10,000 steps"
    );
    // The mouse wheel over the list reaches its last step.
    let over = h.get_by_label_contains(&row(0)).rect().center();
    h.hover_at(over);
    h.run_steps(1);
    for _ in 0..2_000 {
        if h.query_by_label_contains(&row(9_999)).is_some() {
            break;
        }
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Page,
            delta: egui::vec2(0.0, -20.0),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Wheel,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(1);
    }
    h.run_steps(2);
    assert!(
        h.query_by_label_contains(&row(0)).is_none(),
        "scrolled away from the top"
    );
    // The last step is a refusal at the cap, marked with why.
    h.get_by_label_contains(&row(9_999)).click();
    h.run_steps(3);
    h.get_by_label_contains("refused by the relay: this proposal's token cap is reached");
    // An Anthropic step in view: its reply and its tool call.
    let anthropic = (9_900..9_999).find(|i| i % 97 == 5).unwrap();
    h.get_by_label_contains(&row(anthropic)).click();
    h.run_steps(3);
    h.get_by_label_contains("Reading the evaluator first.");
    h.get_by_label_contains("→ str_replace_based_edit_tool(");
    // The agent's output, and the diff it produced.
    h.get_by_label("stdout and stderr").click();
    h.run_steps(3);
    h.get_by_label_contains("the cost of gpt-4.1-mini is unknown");
    h.get_by_label("Diff it produced").click();
    h.run_steps(3);
    assert!(h.query_all_by_label_contains("A = 2.5").count() >= 1);
}

#[test]
fn a_genome_without_an_agent_has_no_agent_tab() {
    let mut v = RunView::default();
    v.load_history(history(3));
    v.select(Some(0));
    let mut h = harness(egui::vec2(1400.0, 900.0), v);
    h.run_steps(3);
    assert!(h.query_by_label("Agent").is_none());
    h.state_mut().select(Some(1));
    h.run_steps(3);
    h.get_by_label("Agent").click();
    h.run_steps(3);
    h.get_by_label("Transcript (3 steps)");
}

#[test]
fn a_short_inspector_scrolls_the_header_list_and_step_as_one() {
    let mut h = harness(egui::vec2(1024.0, 640.0), view(10_000));
    h.run_steps(3);
    h.get_by_label("Transcript (10000 steps)");
    assert!(h.query_all_by_label_contains(&row(0)).count() >= 1);
    // The chosen step is under the list, in the same scroll.
    h.get_by_label_contains("Step #0");
}
