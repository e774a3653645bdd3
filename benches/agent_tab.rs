//! The inspector's Agent tab benchmark (not a timed test): CPU time of one
//! frame of the run view (layout plus tessellation, no GPU) with a genome a
//! coding agent proposed selected and its Agent tab open, its transcript
//! 10,000 relayed steps (Chat Completions exchanges in which the model runs
//! a shell command, growing conversations, every 97th an Anthropic one,
//! every 1000th refused at a cap). Per screen size: the first frame (the
//! transcript opened, the chosen step read), steady frames with the pointer
//! moving over the tab, and frames that each scroll the step list by a
//! mouse-wheel page (new rows read as they come into view).
//!
//! `cargo bench --bench agent_tab` (FRAMES=N to change the sample size).

use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::agent_run::{AgentExit, AgentRun, AgentStep, AgentWire};
use galapagos::engine::events::RunEvent;
use galapagos::engine::genome::{FITNESS_KEY, Genome, TokenUsage};
use galapagos::engine::meter::Cap;
use galapagos::engine::selection::PolicyStatus;
use galapagos::studio::run::{InspectorTab, RunHistory, RunView};
use serde_json::json;

const STEPS: u32 = 10_000;

/// Step `i`: its request holds the conversation so far (up to 40 messages),
/// its reply one tool call.
fn step(i: u32) -> AgentStep {
    let usage = TokenUsage {
        prompt_tokens: 1_200 + u64::from(i % 50) * 40,
        completion_tokens: 40,
        cached_tokens: 1_024,
        cost_usd: Some(0.0021),
        ..TokenUsage::default()
    };
    let started_ms = f64::from(i) * 900.0;
    if i % 1000 == 999 {
        return AgentStep {
            index: i,
            route: "POST /v1/chat/completions".into(),
            started_ms,
            status: 429,
            request: json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "go on"}]}).to_string(),
            response: json!({"error": {"message": "the run's cost budget is spent", "type": "insufficient_quota", "code": "insufficient_quota"}}).to_string(),
            refused: Some("the run's cost budget is spent ($5.000000 of $5.000000, general.max_cost_usd)".into()),
            cap: Some(Cap::RunCost),
            ..AgentStep::default()
        };
    }
    if i % 97 == 5 {
        return AgentStep {
            index: i,
            wire: AgentWire::AnthropicMessages,
            route: "POST /v1/messages".into(),
            started_ms,
            duration_ms: 640.0,
            status: 200,
            request: json!({"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You are a careful engineer.",
                "messages": [{"role": "user", "content": "Tune the constants in fitpkg/model.py."}]})
            .to_string(),
            response: json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "Reading the evaluator first."},
                    {"type": "tool_use", "id": format!("toolu_{i}"), "name": "bash", "input": {"command": "cat evaluator.py"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 176, "cache_read_input_tokens": 1024, "output_tokens": 40}})
            .to_string(),
            usage: Some(usage),
            ..AgentStep::default()
        };
    }
    let mut messages = vec![
        json!({"role": "system", "content": "You are a helpful assistant that can interact with a computer."}),
        json!({"role": "user", "content": "Please solve this issue: raise combined_score of fitpkg."}),
    ];
    for k in 0..(i % 20) {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{k}"), "type": "function",
            "function": {"name": "bash", "arguments": json!({"command": format!("sed -n {k},+20p fitpkg/model.py")}).to_string()}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{k}"),
            "content": json!({"returncode": 0, "output": "WEIGHTS = [0.40, 0.70]  # one weight per feature\n".repeat(8)}).to_string()}));
    }
    AgentStep {
        index: i,
        wire: AgentWire::ChatCompletions,
        route: "POST /v1/chat/completions".into(),
        started_ms,
        duration_ms: 820.0,
        status: 200,
        streamed: i.is_multiple_of(2),
        request: json!({"model": "gpt-4.1-mini", "messages": messages, "tools": [{"type": "function", "function": {"name": "bash"}}]}).to_string(),
        response: json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "THOUGHT: try the next weight.",
                "tool_calls": [{"id": format!("call_{i}"), "type": "function",
                    "function": {"name": "bash", "arguments": json!({"command": format!("sed -i 's/0.70/0.{i:04}/' fitpkg/model.py && git diff")}).to_string()}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 1024}}})
        .to_string(),
        usage: Some(usage),
        ..AgentStep::default()
    }
}

fn view() -> RunView {
    let run = AgentRun {
        command: vec![
            "mini".into(),
            "--yolo".into(),
            "--task".into(),
            "x".repeat(4000),
        ],
        exit: AgentExit::Finished,
        wall_ms: f64::from(STEPS) * 900.0,
        stdout: "mini-swe-agent: submitted\n".repeat(200),
        stderr: String::new(),
        steps: (0..STEPS).map(step).collect(),
        dropped: Vec::new(),
        chosen_parent: Some(0),
        notes: Some("A periodic weight near 1.8 scores best.".into()),
    };
    let mut h = RunHistory::new();
    let program = "# EVOLVE-BLOCK-START\nWEIGHTS = [0.40, 0.70]\n# EVOLVE-BLOCK-END\n";
    let mut parent = Genome {
        id: 0,
        valid: true,
        content: program.into(),
        ..Genome::default()
    };
    parent.scores.insert(FITNESS_KEY.to_owned(), 0.2);
    let mut child = Genome {
        id: 1,
        parent_id: Some(0),
        iteration: 1,
        valid: true,
        content: program.replace("0.70", "1.80").into(),
        agent: Some(Box::new(run)),
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
    let mut v = RunView::default();
    v.load_history(h);
    v.select(Some(1));
    v.set_inspector_tab(InspectorTab::Agent);
    v
}

fn frame(
    ctx: &egui::Context,
    view: &mut RunView,
    t: f64,
    screen: egui::Vec2,
    events: Vec<egui::Event>,
) -> Duration {
    let input = egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, screen)),
        time: Some(t),
        events,
        ..Default::default()
    };
    let start = Instant::now();
    let mut out = ctx.run_ui(input, |ui| {
        egui::CentralPanel::default().show(ui, |ui| view.ui(ui));
    });
    let shapes = std::mem::take(&mut out.shapes);
    let prims = ctx.tessellate(shapes, out.pixels_per_point);
    let took = start.elapsed();
    std::hint::black_box(prims);
    // (The textures are not uploaded anywhere: mark them handled.)
    out.textures_delta.clear();
    took
}

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len().max(1) as f64;
    let p50 = v.get(v.len() / 2).map_or(0.0, |d| ms(*d));
    let p95 = v.get(v.len() * 95 / 100).map_or(0.0, |d| ms(*d));
    (mean, p50, p95)
}

fn main() {
    let frames: usize = std::env::var("FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    println!(
        "Agent tab, {STEPS} steps, one frame = layout + tessellation (no GPU), {frames} frames per case"
    );
    println!(
        "| screen | first frame ms | steady mean ms | steady p50 | steady p95 | scrolling mean ms | scrolling p50 | scrolling p95 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for screen in [egui::vec2(1920.0, 1080.0), egui::vec2(1024.0, 640.0)] {
        let ctx = egui::Context::default();
        let mut v = view();
        let mut t = 0.0;
        let next = |t: &mut f64| {
            *t += 1.0 / 60.0;
            *t
        };
        // The pointer over the inspector's lower part, where the list is.
        let over = egui::pos2(screen.x * 0.75, screen.y * 0.8);
        let first = frame(&ctx, &mut v, next(&mut t), screen, vec![]);
        for _ in 0..5 {
            frame(&ctx, &mut v, next(&mut t), screen, vec![]);
        }
        let steady: Vec<Duration> = (0..frames)
            .map(|k| {
                let p = egui::pos2(over.x - 100.0 + (k % 50) as f32 * 4.0, over.y);
                frame(
                    &ctx,
                    &mut v,
                    next(&mut t),
                    screen,
                    vec![egui::Event::PointerMoved(p)],
                )
            })
            .collect();
        let scrolling: Vec<Duration> = (0..frames)
            .map(|_| {
                frame(
                    &ctx,
                    &mut v,
                    next(&mut t),
                    screen,
                    vec![
                        egui::Event::PointerMoved(over),
                        egui::Event::MouseWheel {
                            unit: egui::MouseWheelUnit::Page,
                            delta: egui::vec2(0.0, -1.0),
                            phase: egui::TouchPhase::Move,
                            modifiers: egui::Modifiers::NONE,
                            source: egui::MouseWheelSource::Wheel,
                        },
                    ],
                )
            })
            .collect();
        let (sm, s50, s95) = stats(steady);
        let (cm, c50, c95) = stats(scrolling);
        println!(
            "| {}x{} | {:.2} | {sm:.2} | {s50:.2} | {s95:.2} | {cm:.2} | {c50:.2} | {c95:.2} |",
            screen.x,
            screen.y,
            first.as_secs_f64() * 1e3
        );
    }
}
