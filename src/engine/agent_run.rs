//! What a coding agent did for one proposal: the record an agent-driven
//! proposer keeps on its genome ([`crate::engine::genome::Genome::agent`]).
//!
//! The agent's model traffic goes through the run's model relay, which keeps
//! every request and response as an [`AgentStep`] (redacted: the run's
//! secrets never appear in a step); the proposer adds what the process did
//! (its command line, exit, wall time and output) and which of the agent's
//! changes it dropped. The studio's Agent tab draws this record, each step
//! read through [`crate::engine::model::relay::steps`].

use serde::{Deserialize, Serialize};

use crate::engine::meter::Cap;
use crate::engine::usage::TokenUsage;

/// The wire protocol of one relayed request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentWire {
    /// OpenAI Chat Completions (`POST …/chat/completions`).
    #[default]
    ChatCompletions,
    /// The OpenAI Responses API (`POST …/responses`).
    Responses,
    /// The Anthropic Messages API (`POST …/messages`).
    AnthropicMessages,
    /// Anything else the agent asked of the relay (a model listing, a token
    /// count): forwarded or refused, and kept for the record.
    Other,
}

impl AgentWire {
    /// The protocol's name as people know it.
    pub fn label(self) -> &'static str {
        match self {
            Self::ChatCompletions => "Chat Completions",
            Self::Responses => "Responses",
            Self::AnthropicMessages => "Anthropic Messages",
            Self::Other => "other",
        }
    }
}

/// One request the agent sent through the relay, and what came back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentStep {
    /// 0 for the first request of the proposal.
    pub index: u32,
    pub wire: AgentWire,
    /// The request's method and path as the agent sent them
    /// (`POST /v1/chat/completions`).
    pub route: String,
    /// Milliseconds from the proposal's start to the request.
    pub started_ms: f64,
    /// Milliseconds until the response's last byte.
    pub duration_ms: f64,
    /// The HTTP status the agent got (the upstream's, or the relay's own
    /// refusal).
    pub status: u16,
    /// Whether the response was streamed (server-sent events).
    #[serde(default)]
    pub streamed: bool,
    /// The request body as forwarded, redacted.
    pub request: String,
    /// The response body as the agent received it (for a stream, the events
    /// as sent), redacted, at most the relay's per-step limit.
    pub response: String,
    /// The response's full length in bytes when `response` keeps only its
    /// first part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<u64>,
    /// Tokens and cost the response reported (none when it reported no
    /// usage or was refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Why the relay refused the request instead of forwarding it (a wrong
    /// token, a token or cost cap reached, a route it does not relay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// When the refusal was a cap's: which (the proposal's or the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Cap>,
    /// What went wrong on the way when the request was forwarded (the
    /// endpoint could not be reached, its reply broke off or was not
    /// JSON): what the agent was told instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How the agent's process ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum AgentExit {
    /// It exited with status 0.
    #[default]
    Finished,
    /// It exited with another status, or was killed by a signal (the
    /// detail says which).
    Failed(String),
    /// It overran the proposal's time limit and its process tree was killed.
    TimedOut,
    /// It could not be started (the detail says why: a missing program, a
    /// sandbox that cannot be set up).
    NotStarted(String),
}

/// What a coding agent did for one proposal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    /// The command line as run (placeholders filled in).
    pub command: Vec<String>,
    pub exit: AgentExit,
    /// Wall time of the agent's process, in milliseconds.
    pub wall_ms: f64,
    /// Its standard output and error, each at most the proposer's output
    /// limit, redacted.
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// Every request it sent through the relay, in order.
    #[serde(default)]
    pub steps: Vec<AgentStep>,
    /// Paths it changed outside the task's editable files: dropped from the
    /// child, each with the rule that refused it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// The parent it said it built on, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_parent: Option<u64>,
    /// Notes it left for the run's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl AgentRun {
    /// Tokens and cost over every step.
    pub fn usage(&self) -> TokenUsage {
        let mut total = TokenUsage::default();
        for usage in self.steps.iter().filter_map(|s| s.usage.as_ref()) {
            total.add(usage);
        }
        total
    }

    /// The number of requests the relay refused.
    pub fn refused(&self) -> usize {
        self.steps.iter().filter(|s| s.refused.is_some()).count()
    }

    /// The first cap that refused one of its requests, if any: what
    /// stopped the agent's spending.
    pub fn cap_hit(&self) -> Option<Cap> {
        self.steps.iter().find_map(|s| s.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_the_steps_that_reported_some_and_refusals_are_counted() {
        let step = |tokens: u64, cost: f64| AgentStep {
            usage: Some(TokenUsage {
                prompt_tokens: tokens,
                completion_tokens: 1,
                cost_usd: Some(cost),
                ..TokenUsage::default()
            }),
            ..AgentStep::default()
        };
        let run = AgentRun {
            steps: vec![
                step(10, 0.5),
                AgentStep {
                    refused: Some("token cap reached".into()),
                    cap: Some(Cap::RunTokens),
                    ..AgentStep::default()
                },
                step(5, 0.25),
            ],
            ..AgentRun::default()
        };
        let usage = run.usage();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (15, 2));
        assert_eq!(usage.cost_usd, Some(0.75));
        assert_eq!(run.refused(), 1);
        assert_eq!(run.cap_hit(), Some(Cap::RunTokens));
        assert_eq!(AgentRun::default().cap_hit(), None);
    }

    #[test]
    fn a_record_round_trips_through_json_with_its_exit() {
        let run = AgentRun {
            command: vec!["mini".into(), "-t".into()],
            exit: AgentExit::Failed("exit status 3".into()),
            ..AgentRun::default()
        };
        let json = serde_json::to_string(&run).unwrap();
        assert!(json.contains(r#""kind":"failed""#), "{json}");
        assert_eq!(serde_json::from_str::<AgentRun>(&json).unwrap(), run);
    }
}
