//! An agent's transcript as a person reads it: each relayed step parsed
//! from its protocol's request and reply into the messages it sent (tool
//! results among them), the reply's text and tool calls, tokens, cost and
//! what went wrong. The studio's Agent tab draws this; parsing is lazy and
//! cached ([`Transcript`]), so a transcript of 10,000 steps costs only the
//! rows in view.

use serde_json::Value;

use crate::engine::agent_run::{AgentRun, AgentStep, AgentWire};
use crate::engine::model::wire::{ApiError, sse};
use crate::engine::usage::TokenUsage;

/// Characters of a row's one-line summary.
const LINE_CHARS: usize = 160;

/// A tool call the model asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCallView {
    pub id: String,
    pub name: String,
    /// The arguments as sent (JSON text).
    pub arguments: String,
}

impl ToolCallView {
    /// `name(arguments)` on one line, cut to `chars`; arguments that are
    /// one string field (`{"command": "ls"}`, as shell tools take them)
    /// are that string (`bash(ls)`).
    pub fn line(&self, chars: usize) -> String {
        let single = serde_json::from_str::<serde_json::Value>(&self.arguments)
            .ok()
            .and_then(|v| match v {
                serde_json::Value::Object(map) if map.len() == 1 => map
                    .values()
                    .next()
                    .and_then(|v| v.as_str().map(str::to_owned)),
                _ => None,
            });
        let arguments = single.as_deref().unwrap_or(&self.arguments);
        one_line(&format!("{}({arguments})", self.name), chars)
    }
}

/// One message of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageView {
    /// `system`, `user`, `assistant`, `tool`.
    pub role: String,
    pub text: String,
    /// Calls an assistant message made.
    pub tool_calls: Vec<ToolCallView>,
    /// For a tool result: the id of the call it answers.
    pub result_of: Option<String>,
}

/// One step, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepView {
    /// The model the request named.
    pub model: Option<String>,
    /// Every message of the request, in order.
    pub messages: Vec<MessageView>,
    /// Of `messages`, how many the previous request already sent (the
    /// conversation so far): the new ones start here.
    pub new_from: usize,
    /// Tools the request offered.
    pub tools: Vec<String>,
    /// The reply's text.
    pub reply: String,
    /// The tool calls of the reply.
    pub tool_calls: Vec<ToolCallView>,
    /// The error the agent got (the relay's refusal, the endpoint's error).
    pub error: Option<String>,
    /// A request or reply that is not its protocol's JSON.
    pub unreadable: Option<String>,
}

/// One row of the step list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSummary {
    pub index: u32,
    pub wire: AgentWire,
    pub status: u16,
    pub streamed: bool,
    pub duration_ms: f64,
    pub usage: Option<TokenUsage>,
    /// Refused by the relay, or something went wrong on the way.
    pub trouble: bool,
    /// The reply's gist: the tool calls, the text's first line, or why it
    /// failed.
    pub line: String,
}

/// `text` on one line, at most `chars` characters.
fn one_line(text: &str, chars: usize) -> String {
    let flat: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(chars + 1)
        .collect();
    if flat.chars().count() > chars {
        let mut cut: String = flat.chars().take(chars).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// The text of a content value: a string, or parts with `text` (and, for
/// a tool result, nested content).
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                _ => p
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| p.get("content").map(content_text)),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Arguments as text: a JSON string as is, anything else serialised.
fn arguments(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn message(role: &str, text: String) -> MessageView {
    MessageView {
        role: role.to_owned(),
        text,
        ..MessageView::default()
    }
}

/// The messages and offered tools of a request body.
fn request_messages(wire: AgentWire, v: &Value) -> (Vec<MessageView>, Vec<String>) {
    let mut out = Vec::new();
    let tool_name = |t: &Value| {
        t.get("function")
            .and_then(|f| f.get("name"))
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    let tools: Vec<String> = v
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| t.iter().map(tool_name).collect())
        .unwrap_or_default();
    match wire {
        AgentWire::ChatCompletions | AgentWire::Other => {
            for m in v
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut view = message(str_at(m, "role"), content_text(&m["content"]));
                view.tool_calls = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| ToolCallView {
                        id: str_at(c, "id").to_owned(),
                        name: str_at(&c["function"], "name").to_owned(),
                        arguments: arguments(c["function"].get("arguments")),
                    })
                    .collect();
                view.result_of = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                out.push(view);
            }
        }
        AgentWire::Responses => {
            let instructions = str_at(v, "instructions");
            if !instructions.is_empty() {
                out.push(message("system", instructions.to_owned()));
            }
            match v.get("input") {
                Some(Value::String(s)) => out.push(message("user", s.clone())),
                Some(Value::Array(items)) => {
                    for item in items {
                        match str_at(item, "type") {
                            "function_call" => out.push(MessageView {
                                role: "assistant".into(),
                                tool_calls: vec![ToolCallView {
                                    id: str_at(item, "call_id").to_owned(),
                                    name: str_at(item, "name").to_owned(),
                                    arguments: arguments(item.get("arguments")),
                                }],
                                ..MessageView::default()
                            }),
                            "function_call_output" => out.push(MessageView {
                                role: "tool".into(),
                                text: content_text(&item["output"]),
                                result_of: Some(str_at(item, "call_id").to_owned()),
                                ..MessageView::default()
                            }),
                            _ => out.push(message(
                                str_at(item, "role"),
                                content_text(&item["content"]),
                            )),
                        }
                    }
                }
                _ => {}
            }
        }
        AgentWire::AnthropicMessages => {
            let system = content_text(&v["system"]);
            if !system.is_empty() {
                out.push(message("system", system));
            }
            for m in v
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let role = str_at(m, "role");
                let Some(blocks) = m["content"].as_array() else {
                    out.push(message(role, content_text(&m["content"])));
                    continue;
                };
                let mut view = message(role, String::new());
                let mut texts = Vec::new();
                for b in blocks {
                    match str_at(b, "type") {
                        "tool_use" => view.tool_calls.push(ToolCallView {
                            id: str_at(b, "id").to_owned(),
                            name: str_at(b, "name").to_owned(),
                            arguments: arguments(b.get("input")),
                        }),
                        "tool_result" => out.push(MessageView {
                            role: "tool".into(),
                            text: content_text(&b["content"]),
                            result_of: Some(str_at(b, "tool_use_id").to_owned()),
                            ..MessageView::default()
                        }),
                        _ => {
                            let t = content_text(&Value::Array(vec![b.clone()]));
                            if !t.is_empty() {
                                texts.push(t);
                            }
                        }
                    }
                }
                view.text = texts.join("\n");
                if !view.text.is_empty() || !view.tool_calls.is_empty() {
                    out.push(view);
                }
            }
        }
    }
    (out, tools)
}

/// The text and tool calls of a whole reply.
fn reply_whole(wire: AgentWire, v: &Value) -> (String, Vec<ToolCallView>) {
    match wire {
        AgentWire::ChatCompletions | AgentWire::Other => {
            let m = &v["choices"][0]["message"];
            let (messages, _) = request_messages(
                AgentWire::ChatCompletions,
                &serde_json::json!({"messages": [m]}),
            );
            messages
                .into_iter()
                .next()
                .map(|m| (m.text, m.tool_calls))
                .unwrap_or_default()
        }
        AgentWire::Responses => {
            let mut text = String::new();
            let mut calls = Vec::new();
            for item in v["output"].as_array().into_iter().flatten() {
                match str_at(item, "type") {
                    "message" => text.push_str(&content_text(&item["content"])),
                    "function_call" => calls.push(ToolCallView {
                        id: str_at(item, "call_id").to_owned(),
                        name: str_at(item, "name").to_owned(),
                        arguments: arguments(item.get("arguments")),
                    }),
                    _ => {}
                }
            }
            (text, calls)
        }
        AgentWire::AnthropicMessages => {
            let mut text = String::new();
            let mut calls = Vec::new();
            for b in v["content"].as_array().into_iter().flatten() {
                match str_at(b, "type") {
                    "text" => text.push_str(str_at(b, "text")),
                    "tool_use" => calls.push(ToolCallView {
                        id: str_at(b, "id").to_owned(),
                        name: str_at(b, "name").to_owned(),
                        arguments: arguments(b.get("input")),
                    }),
                    _ => {}
                }
            }
            (text, calls)
        }
    }
}

/// The text and tool calls of a streamed reply, and the error event it
/// ended with.
fn reply_stream(wire: AgentWire, body: &str) -> (String, Vec<ToolCallView>, Option<String>) {
    let mut text = String::new();
    let mut calls: Vec<ToolCallView> = Vec::new();
    let mut error = None;
    let call_at = |calls: &mut Vec<ToolCallView>, i: usize| -> usize {
        while calls.len() <= i {
            calls.push(ToolCallView::default());
        }
        i
    };
    for e in sse::events(body) {
        let Ok(v) = serde_json::from_str::<Value>(e.data.trim()) else {
            continue;
        };
        if let Some(err) = ApiError::from_value(&v).filter(|_| v.get("error").is_some()) {
            error = Some(err.describe());
            continue;
        }
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&e.event);
        match wire {
            AgentWire::ChatCompletions | AgentWire::Other => {
                let delta = &v["choices"][0]["delta"];
                text.push_str(str_at(delta, "content"));
                for c in delta["tool_calls"].as_array().into_iter().flatten() {
                    let i = c["index"].as_u64().unwrap_or(0) as usize;
                    let at = call_at(&mut calls, i);
                    let call = &mut calls[at];
                    if let Some(id) = c.get("id").and_then(Value::as_str) {
                        id.clone_into(&mut call.id);
                    }
                    call.name.push_str(str_at(&c["function"], "name"));
                    call.arguments.push_str(str_at(&c["function"], "arguments"));
                }
            }
            AgentWire::Responses => match kind {
                "response.completed" | "response.incomplete" | "response.failed" => {
                    let (t, c) = reply_whole(wire, &v["response"]);
                    return (t, c, error);
                }
                "response.output_text.delta" => text.push_str(str_at(&v, "delta")),
                "error" => error = Some(str_at(&v, "message").to_owned()),
                _ => {}
            },
            AgentWire::AnthropicMessages => match kind {
                "content_block_start" if v["content_block"]["type"] == "tool_use" => {
                    calls.push(ToolCallView {
                        id: str_at(&v["content_block"], "id").to_owned(),
                        name: str_at(&v["content_block"], "name").to_owned(),
                        arguments: String::new(),
                    });
                }
                "content_block_delta" => match str_at(&v["delta"], "type") {
                    "text_delta" => text.push_str(str_at(&v["delta"], "text")),
                    "input_json_delta" => {
                        if let Some(last) = calls.last_mut() {
                            last.arguments.push_str(str_at(&v["delta"], "partial_json"));
                        }
                    }
                    _ => {}
                },
                _ => {}
            },
        }
    }
    (text, calls, error)
}

/// Reads one step; `previous` is the step before it (its request's
/// messages are the conversation so far).
pub fn view(step: &AgentStep, previous: Option<&AgentStep>) -> StepView {
    let mut out = StepView::default();
    match serde_json::from_str::<Value>(step.request.trim()) {
        Ok(v) => {
            out.model = v.get("model").and_then(Value::as_str).map(str::to_owned);
            (out.messages, out.tools) = request_messages(step.wire, &v);
        }
        Err(_) if step.request.trim().is_empty() => {}
        Err(e) => out.unreadable = Some(format!("the request is not JSON ({e})")),
    }
    if let Some(prev) = previous
        && let Ok(v) = serde_json::from_str::<Value>(prev.request.trim())
    {
        let (before, _) = request_messages(prev.wire, &v);
        if before.len() <= out.messages.len() && out.messages[..before.len()] == before[..] {
            out.new_from = before.len();
        }
    }
    if let Some(why) = &step.refused {
        out.error = Some(why.clone());
        return out;
    }
    if step.streamed && !step.response.trim_start().starts_with('{') {
        let (text, calls, error) = reply_stream(step.wire, &step.response);
        (out.reply, out.tool_calls, out.error) = (text, calls, error);
    } else {
        match serde_json::from_str::<Value>(step.response.trim()) {
            Ok(v) => match ApiError::from_value(&v) {
                Some(e) if !(200..300).contains(&step.status) || v.get("error").is_some() => {
                    out.error = Some(e.describe());
                }
                _ => (out.reply, out.tool_calls) = reply_whole(step.wire, &v),
            },
            Err(_) if step.response_bytes.is_some() => {
                out.unreadable = Some(format!(
                    "the reply is {} bytes; the step keeps its start only",
                    step.response_bytes.unwrap_or_default()
                ));
            }
            Err(_) if !step.response.trim().is_empty() => {
                out.unreadable = Some("the reply is not JSON".into());
            }
            Err(_) => {}
        }
    }
    if let Some(note) = &step.note {
        out.error = Some(note.clone());
    }
    out
}

/// The row of one step.
pub fn summary(step: &AgentStep) -> StepSummary {
    let trouble = step.refused.is_some() || step.note.is_some() || step.status >= 400;
    let line = if let Some(why) = step.refused.as_ref().or(step.note.as_ref()) {
        one_line(why, LINE_CHARS)
    } else {
        let v = view(step, None);
        if let Some(e) = &v.error {
            one_line(e, LINE_CHARS)
        } else if !v.tool_calls.is_empty() {
            let calls: Vec<String> = v.tool_calls.iter().map(|c| c.line(LINE_CHARS)).collect();
            one_line(&calls.join(" · "), LINE_CHARS)
        } else if !v.reply.trim().is_empty() {
            one_line(&v.reply, LINE_CHARS)
        } else if let Some(u) = &v.unreadable {
            u.clone()
        } else {
            String::new()
        }
    };
    StepSummary {
        index: step.index,
        wire: step.wire,
        status: step.status,
        streamed: step.streamed,
        duration_ms: step.duration_ms,
        usage: step.usage,
        trouble,
        line,
    }
}

/// The read steps of one agent run, each read when first asked for.
#[derive(Debug, Default)]
pub struct Transcript {
    summaries: Vec<Option<StepSummary>>,
    detail: Option<(usize, StepView)>,
}

impl Transcript {
    /// A transcript of `run`, nothing read yet.
    pub fn new(run: &AgentRun) -> Self {
        Self {
            summaries: vec![None; run.steps.len()],
            detail: None,
        }
    }

    /// How many steps have been read (for tests: only the rows in view).
    pub fn read(&self) -> usize {
        self.summaries.iter().filter(|s| s.is_some()).count()
    }

    /// The row of step `i` of `run`.
    pub fn summary(&mut self, run: &AgentRun, i: usize) -> Option<&StepSummary> {
        let step = run.steps.get(i)?;
        if self.summaries.len() != run.steps.len() {
            self.summaries = vec![None; run.steps.len()];
        }
        Some(self.summaries[i].get_or_insert_with(|| summary(step)))
    }

    /// Step `i` of `run`, read in full (the last one asked for is kept).
    pub fn detail(&mut self, run: &AgentRun, i: usize) -> Option<&StepView> {
        let step = run.steps.get(i)?;
        if self.detail.as_ref().is_none_or(|(at, _)| *at != i) {
            let previous = i.checked_sub(1).and_then(|p| run.steps.get(p));
            self.detail = Some((i, view(step, previous)));
        }
        self.detail.as_ref().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(wire: AgentWire, request: Value, response: &str, streamed: bool) -> AgentStep {
        AgentStep {
            wire,
            status: 200,
            streamed,
            request: request.to_string(),
            response: response.to_owned(),
            ..AgentStep::default()
        }
    }

    #[test]
    fn chat_messages_tool_results_and_a_streamed_tool_call() {
        let first = step(
            AgentWire::ChatCompletions,
            json!({"model": "m", "messages": [{"role": "system", "content": "sys"},
                {"role": "user", "content": "fix it"}], "tools": [{"type": "function", "function": {"name": "bash"}}]}),
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            false,
        );
        let v = view(&first, None);
        assert_eq!(v.model.as_deref(), Some("m"));
        assert_eq!(v.tools, ["bash"]);
        assert_eq!(v.messages.len(), 2);
        assert_eq!(v.tool_calls[0].name, "bash");
        assert_eq!(v.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        let second = step(
            AgentWire::ChatCompletions,
            json!({"model": "m", "messages": [{"role": "system", "content": "sys"},
                {"role": "user", "content": "fix it"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "main.py"}]}),
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Do\"}}]}\n\n\
             data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c2\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"comm\"}}]}}]}\n\n\
             data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"and\\\":1}\"}}]}}]}\n\n\
             data: [DONE]\n\n",
            true,
        );
        let v = view(&second, Some(&first));
        assert_eq!(v.new_from, 2);
        assert_eq!(v.messages[3].result_of.as_deref(), Some("c1"));
        assert_eq!(v.messages[3].text, "main.py");
        assert_eq!(v.reply, "Do");
        assert_eq!(v.tool_calls[0].arguments, r#"{"command":1}"#);
        let s = summary(&second);
        // A number is not a command: the arguments as they came.
        assert!(s.line.starts_with(r#"bash({"command":1})"#), "{}", s.line);
        let call = |arguments: &str| ToolCallView {
            id: "c3".into(),
            name: "bash".into(),
            arguments: arguments.into(),
        };
        assert_eq!(
            call(r#"{"command":"ls -la\ncat x"}"#).line(60),
            "bash(ls -la cat x)"
        );
        assert_eq!(
            call(r#"{"a":"1","b":"2"}"#).line(60),
            r#"bash({"a":"1","b":"2"})"#
        );
        assert_eq!(call("not json").line(60), "bash(not json)");
    }

    #[test]
    fn responses_and_anthropic_requests_and_replies() {
        let r = step(
            AgentWire::Responses,
            json!({"model": "m", "instructions": "sys", "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "function_call", "call_id": "k", "name": "bash", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "k", "output": "ok"}]}),
            r#"{"output":[{"type":"message","content":[{"type":"output_text","text":"done"}]}]}"#,
            false,
        );
        let v = view(&r, None);
        assert_eq!(
            v.messages
                .iter()
                .map(|m| m.role.as_str())
                .collect::<Vec<_>>(),
            ["system", "user", "assistant", "tool"]
        );
        assert_eq!(v.reply, "done");
        let a = step(
            AgentWire::AnthropicMessages,
            json!({"model": "c", "system": [{"type": "text", "text": "sys"}], "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "text", "text": "looking"},
                    {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "main.py"}]}]}]}),
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n\
             event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"edit\",\"input\":{}}}\n\n\
             event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":1}\"}}\n\n\
             event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"broke off\"}}\n\n",
            true,
        );
        let v = view(&a, None);
        assert_eq!(v.messages[2].tool_calls[0].name, "bash");
        assert_eq!(v.messages[3].result_of.as_deref(), Some("t1"));
        assert_eq!(v.messages[3].text, "main.py");
        assert_eq!(v.tool_calls[0].arguments, r#"{"a":1}"#);
        assert!(v.error.as_deref().is_some_and(|e| e.contains("broke off")));
    }

    #[test]
    fn refusals_errors_and_garbage_are_said() {
        let refused = AgentStep {
            refused: Some("this proposal's token cap is reached".into()),
            status: 429,
            ..AgentStep::default()
        };
        let s = summary(&refused);
        assert!(s.trouble && s.line.contains("token cap"));
        let garbage = AgentStep {
            request: "{\"model\": ".into(),
            response: "<html>".into(),
            status: 200,
            ..AgentStep::default()
        };
        let v = view(&garbage, None);
        assert!(v.unreadable.is_some());
        let error = step(
            AgentWire::AnthropicMessages,
            json!({}),
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            false,
        );
        assert_eq!(
            view(&error, None).error.as_deref(),
            Some("Overloaded (overloaded_error)")
        );
    }

    #[test]
    fn a_transcript_reads_only_what_is_asked_for() {
        let run = AgentRun {
            steps: (0..10_000)
                .map(|i| AgentStep {
                    index: i,
                    response: format!(r#"{{"choices":[{{"message":{{"content":"reply {i}"}}}}]}}"#),
                    ..AgentStep::default()
                })
                .collect(),
            ..AgentRun::default()
        };
        let mut t = Transcript::new(&run);
        for i in 500..530 {
            assert_eq!(
                t.summary(&run, i).map(|s| s.line.clone()),
                Some(format!("reply {i}"))
            );
        }
        assert_eq!(t.read(), 30);
        assert_eq!(
            t.detail(&run, 9_999).map(|v| v.reply.as_str()),
            Some("reply 9999")
        );
        assert!(t.summary(&run, 10_000).is_none());
    }
}
