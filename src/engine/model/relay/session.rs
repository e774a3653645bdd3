//! One proposal's use of the relay: a random token the agent holds instead
//! of a key, its caps, what it has spent and every step it took.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use ring::rand::SecureRandom as _;

use super::Shared;
use crate::engine::agent_run::AgentStep;
use crate::engine::meter::{Cap, Refusal, RunMeter};
use crate::engine::usage::TokenUsage;

/// What one proposal may spend through the relay; `None` is no cap.
#[derive(Clone, Debug, Default)]
pub struct SessionCaps {
    /// Tokens (prompt and completion) over every request.
    pub max_tokens: Option<u64>,
    /// USD over every request (counted where the run's price table knows
    /// the model).
    pub max_cost_usd: Option<f64>,
    /// The run's meter: the session's usage counts toward the run's budget
    /// as it comes, and a request is refused once that budget is spent.
    pub run: Option<Arc<RunMeter>>,
}

/// What the relay keeps for one token.
pub(super) struct SessionState {
    pub caps: SessionCaps,
    pub started: Instant,
    pub usage: TokenUsage,
    pub steps: Vec<AgentStep>,
    /// Indices handed out (a step's index is fixed when its request comes).
    pub next_index: u32,
}

impl SessionState {
    /// Why a further request is refused, when a cap is reached: the
    /// proposal's own caps first, then the run's budget.
    pub fn cap_reached(&self) -> Option<Refusal> {
        if let Some(max) = self.caps.max_tokens
            && self.usage.total_tokens() >= max
        {
            return Some(Refusal {
                cap: Cap::ProposalTokens,
                why: format!(
                    "this proposal's token cap is reached ({} of {max} tokens used, the proposer's \
                     max_tokens)",
                    self.usage.total_tokens()
                ),
            });
        }
        if let Some(max) = self.caps.max_cost_usd
            && self.usage.cost_usd.unwrap_or(0.0) >= max
        {
            return Some(Refusal {
                cap: Cap::ProposalCost,
                why: format!(
                    "this proposal's cost cap is reached (${:.6} of ${max:.6} spent, the proposer's \
                     max_cost_usd)",
                    self.usage.cost_usd.unwrap_or(0.0)
                ),
            });
        }
        self.caps.run.as_ref().and_then(|run| run.reached())
    }

    /// The next step's index and its start, in milliseconds since the
    /// session began.
    pub fn begin_step(&mut self) -> (u32, f64) {
        let index = self.next_index;
        self.next_index += 1;
        (index, self.started.elapsed().as_secs_f64() * 1000.0)
    }

    /// Keeps a finished step and counts its usage.
    pub fn record(&mut self, step: AgentStep) {
        if let Some(u) = &step.usage {
            self.usage.add(u);
            if let Some(run) = &self.caps.run {
                run.relayed(u);
            }
        }
        let at = self.steps.partition_point(|s| s.index < step.index);
        self.steps.insert(at, step);
    }
}

/// A fresh random token: 32 bytes from the system's secure generator, in
/// hex, after `sk-relay-` (some tools want a key that looks like OpenAI's).
pub(super) fn new_token() -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut bytes = [0u8; 32];
    // The system generator fails only without getrandom and /dev/urandom;
    // a digest of the time, the process and a counter is then still
    // unguessable enough for a relay on loopback, and never repeats.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = format!("{nanos}:{}:{n}", std::process::id());
        bytes
            .copy_from_slice(ring::digest::digest(&ring::digest::SHA256, seed.as_bytes()).as_ref());
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sk-relay-{hex}")
}

/// One proposal's session: hand [`RelaySession::env`] to the agent, read
/// [`RelaySession::usage`] while it runs, and [`RelaySession::finish`] when
/// it is done. Dropping a session without finishing it also ends it.
pub struct RelaySession {
    pub(super) token: String,
    pub(super) state: Arc<Mutex<SessionState>>,
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for RelaySession {
    /// The token is a credential for the relay: never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelaySession")
            .field("steps", &lock(&self.state).steps.len())
            .finish_non_exhaustive()
    }
}

pub(super) fn lock(state: &Mutex<SessionState>) -> MutexGuard<'_, SessionState> {
    // A panic while holding the lock cannot leave the state half-written in
    // a way that matters more than losing the record: keep going.
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RelaySession {
    /// The token the agent sends in place of a key.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The environment that points the usual SDKs at the relay reached at
    /// `base_url` (`http://127.0.0.1:PORT`, no path) with the token as
    /// their key: OpenAI's (`OPENAI_BASE_URL`, and `OPENAI_API_BASE` that
    /// older tools and LiteLLM read, both ending in `/v1`) and Anthropic's
    /// (`ANTHROPIC_BASE_URL`, to which the SDK adds `/v1`; the token as
    /// `ANTHROPIC_API_KEY` and as `ANTHROPIC_AUTH_TOKEN`, which Claude Code
    /// sends as a bearer token).
    pub fn env(&self, base_url: &str) -> Vec<(String, String)> {
        let base = base_url.trim_end_matches('/');
        let v1 = format!("{base}/v1");
        let token = self.token.clone();
        vec![
            ("OPENAI_BASE_URL".into(), v1.clone()),
            ("OPENAI_API_BASE".into(), v1),
            ("OPENAI_API_KEY".into(), token.clone()),
            ("ANTHROPIC_BASE_URL".into(), base.to_owned()),
            ("ANTHROPIC_API_KEY".into(), token.clone()),
            ("ANTHROPIC_AUTH_TOKEN".into(), token),
        ]
    }

    /// Tokens and cost so far.
    pub fn usage(&self) -> TokenUsage {
        lock(&self.state).usage
    }

    /// Ends the session: its token is refused from now on. Returns every
    /// step, in the order the requests came, and the usage over them (a
    /// request still in flight is not among them).
    pub fn finish(self) -> (Vec<AgentStep>, TokenUsage) {
        self.shared.end_session(&self.token);
        let mut state = lock(&self.state);
        (std::mem::take(&mut state.steps), state.usage)
    }
}

impl Drop for RelaySession {
    fn drop(&mut self) {
        self.shared.end_session(&self.token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_long() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), "sk-relay-".len() + 64);
    }

    #[test]
    fn caps_refuse_at_the_limit_not_before() {
        let mut s = SessionState {
            caps: SessionCaps {
                max_tokens: Some(100),
                max_cost_usd: Some(0.5),
                run: None,
            },
            started: Instant::now(),
            usage: TokenUsage::default(),
            steps: Vec::new(),
            next_index: 0,
        };
        assert_eq!(s.cap_reached(), None);
        s.usage.prompt_tokens = 99;
        assert_eq!(s.cap_reached(), None);
        s.usage.completion_tokens = 1;
        assert!(
            s.cap_reached()
                .is_some_and(|r| r.cap == Cap::ProposalTokens && r.why.contains("token cap"))
        );
        s.usage = TokenUsage {
            cost_usd: Some(0.5),
            ..TokenUsage::default()
        };
        assert!(
            s.cap_reached()
                .is_some_and(|r| r.cap == Cap::ProposalCost && r.why.contains("cost cap"))
        );
    }
}
