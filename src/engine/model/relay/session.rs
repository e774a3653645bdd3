//! One proposal's use of the relay: a random token the agent holds instead
//! of a key, its caps, what it has spent and every step it took.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use ring::rand::SecureRandom as _;

use super::Shared;
use super::limits::{self, SessionLimits};
use crate::engine::agent_run::AgentStep;
use crate::engine::meter::{Cap, Hold, Refusal, Room, RunMeter};
use crate::engine::usage::TokenUsage;

/// What one proposal may spend through the relay; `None` is no cap.
#[derive(Clone, Debug, Default)]
pub struct SessionCaps {
    /// Tokens (prompt and completion) over every request.
    pub max_tokens: Option<u64>,
    /// USD over every request (counted where the run's price table knows
    /// the model; a model it does not price is refused under this cap).
    pub max_cost_usd: Option<f64>,
    /// The run's meter: the session's usage counts toward the run's budget
    /// as it comes, and a request is refused once that budget is spent.
    pub run: Option<Arc<RunMeter>>,
    /// What the proposal may hold of the relay.
    pub limits: SessionLimits,
}

impl SessionCaps {
    /// Whether a cost cap applies (the proposal's or the run's).
    pub fn cost_capped(&self) -> bool {
        self.max_cost_usd.is_some()
            || self
                .run
                .as_ref()
                .is_some_and(|r| r.budget().max_cost_usd.is_some())
    }
}

/// Steps past the limit, folded into one.
#[derive(Debug, Default)]
pub(super) struct LeftOut {
    pub steps: u64,
    pub first_index: u32,
    pub refused: u64,
    pub usage: Option<TokenUsage>,
}

/// What the relay keeps for one token.
pub(super) struct SessionState {
    pub caps: SessionCaps,
    pub started: Instant,
    pub usage: TokenUsage,
    pub steps: Vec<AgentStep>,
    /// Indices handed out (a step's index is fixed when its request comes).
    pub next_index: u32,
    /// Bytes of text the kept steps hold.
    pub kept_bytes: usize,
    /// Steps not kept one by one.
    pub left_out: LeftOut,
    /// What the requests in flight hold against the proposal's caps.
    pub held: Hold,
    /// Requests in flight holding some of the caps.
    pub admitted: usize,
    /// One of them holds them alone (see `admit.rs`).
    pub alone: bool,
    /// Requests open: from their head to their step.
    pub open: usize,
    /// Bytes the open requests hold in memory.
    pub bytes_in_flight: usize,
    /// The proposal ended: nothing more is admitted.
    pub closed: bool,
}

impl SessionState {
    pub fn new(caps: SessionCaps) -> Self {
        Self {
            caps,
            started: Instant::now(),
            usage: TokenUsage::default(),
            steps: Vec::new(),
            next_index: 0,
            kept_bytes: 0,
            left_out: LeftOut::default(),
            held: Hold::default(),
            admitted: 0,
            alone: false,
            open: 0,
            bytes_in_flight: 0,
            closed: false,
        }
    }

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

    /// What the proposal's caps leave with none of its requests in flight.
    pub fn room(&self) -> Room {
        Room::under(self.caps.max_tokens, self.caps.max_cost_usd, &self.usage)
    }

    /// The next step's index and its start, in milliseconds since the
    /// session began.
    pub fn begin_step(&mut self) -> (u32, f64) {
        let index = self.next_index;
        self.next_index += 1;
        (index, self.started.elapsed().as_secs_f64() * 1000.0)
    }

    /// What an admitted request whose usage cannot be read is counted as:
    /// the rest of the proposal's caps (at least what it held; with no cap
    /// of the proposal's, what it held).
    pub fn rest_of_the_cap(&self, hold: &Hold, prompt: u64, priced: bool) -> TokenUsage {
        let mut tokens = hold.tokens;
        if let Some(max) = self.caps.max_tokens {
            tokens = tokens.max(max.saturating_sub(self.usage.total_tokens()));
        }
        let mut cost = hold.cost_usd;
        if let Some(max) = self.caps.max_cost_usd {
            cost = cost.max(max - self.usage.cost_usd.unwrap_or(0.0));
        }
        let prompt = prompt.min(tokens);
        TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: tokens - prompt,
            cost_usd: (priced || cost > 0.0).then_some(cost),
            ..TokenUsage::default()
        }
    }

    /// Keeps a finished step and counts its usage; `hold`: what it held,
    /// when it was admitted (`alone`: it held the caps alone); `open`: it
    /// was counted among the open requests.
    pub fn record(&mut self, mut step: AgentStep, hold: Option<(Hold, bool)>, open: bool) {
        if let Some(u) = &step.usage {
            self.usage.add(u);
        }
        if let Some((h, alone)) = hold {
            self.held.remove(&h);
            self.admitted = self.admitted.saturating_sub(1);
            if alone {
                self.alone = false;
            }
            if let Some(run) = &self.caps.run {
                run.settle(&h, step.usage.as_ref());
            }
        } else if let (Some(u), Some(run)) = (&step.usage, &self.caps.run) {
            run.relayed(u);
        }
        if open {
            self.open = self.open.saturating_sub(1);
        }
        let limits = self.caps.limits;
        // The last place is kept for the steps left out.
        if self.steps.len() + 1 >= limits.max_steps.max(1) {
            let left = &mut self.left_out;
            if left.steps == 0 || step.index < left.first_index {
                left.first_index = step.index;
            }
            left.steps += 1;
            left.refused += u64::from(step.refused.is_some());
            if let Some(u) = &step.usage {
                left.usage.get_or_insert_with(TokenUsage::default).add(u);
            }
            return;
        }
        let text = step.request.len() + step.response.len();
        if self.kept_bytes + text > limits.max_kept_bytes {
            step.response_bytes = Some(step.response.len() as u64).filter(|n| *n > 0);
            step.request.clear();
            step.response.clear();
            step.note = Some(match step.note.take() {
                Some(n) => format!("{n}; {}", text_not_kept(&limits)),
                None => text_not_kept(&limits),
            });
        } else {
            self.kept_bytes += text;
        }
        let at = self.steps.partition_point(|s| s.index < step.index);
        self.steps.insert(at, step);
    }

    /// Every step kept, with those left out as one at the end.
    pub fn take_steps(&mut self) -> Vec<AgentStep> {
        let mut steps = std::mem::take(&mut self.steps);
        let left = std::mem::take(&mut self.left_out);
        if left.steps > 0 {
            let limits = self.caps.limits;
            steps.push(AgentStep {
                index: left.first_index,
                route: format!("({} more requests)", left.steps),
                usage: left.usage,
                note: Some(format!(
                    "{} requests from #{} on were not kept one by one ({} of them refused): a \
                     proposal's record keeps at most {} steps; their usage is this step's",
                    left.steps, left.first_index, left.refused, limits.max_steps
                )),
                ..AgentStep::default()
            });
        }
        steps
    }
}

fn text_not_kept(limits: &SessionLimits) -> String {
    format!(
        "its text is not kept: a proposal's record keeps at most {} MiB of requests and replies",
        limits.max_kept_bytes >> 20
    )
}

/// A proposal's session as the relay's handlers share it.
pub(super) struct Session {
    pub state: Mutex<SessionState>,
    /// Told whenever a request ends (its holds and bytes come back).
    pub changed: tokio::sync::Notify,
    /// Set when the proposal ends: requests in flight are cut.
    pub cancel: tokio::sync::watch::Sender<bool>,
}

impl Session {
    pub fn new(caps: SessionCaps) -> Self {
        Self {
            state: Mutex::new(SessionState::new(caps)),
            changed: tokio::sync::Notify::new(),
            cancel: tokio::sync::watch::Sender::new(false),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, SessionState> {
        lock(&self.state)
    }

    /// Ends the session: nothing more is admitted and what is in flight is
    /// cut.
    pub fn close(&self) {
        self.lock().closed = true;
        self.cancel.send_replace(true);
        self.changed.notify_waiters();
    }

    /// Resolves once the proposal ends.
    pub async fn cancelled(&self) {
        let mut rx = self.cancel.subscribe();
        // An error: the sender is gone, which is the session gone.
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Sets `n` bytes aside for a request, if the proposal may hold them.
    pub fn take_bytes(&self, n: usize) -> bool {
        let mut st = self.lock();
        if st.bytes_in_flight + n > st.caps.limits.max_bytes_in_flight {
            return false;
        }
        st.bytes_in_flight += n;
        true
    }

    pub fn give_bytes(&self, n: usize) {
        let mut st = self.lock();
        st.bytes_in_flight = st.bytes_in_flight.saturating_sub(n);
    }
}

/// Bytes a request holds in memory, given back when dropped.
pub(super) struct Bytes {
    session: Arc<Session>,
    n: usize,
}

impl Bytes {
    pub fn new(session: &Arc<Session>) -> Self {
        Self {
            session: Arc::clone(session),
            n: 0,
        }
    }

    /// `n` more, if the proposal may hold them.
    pub fn take(&mut self, n: usize) -> bool {
        let ok = self.session.take_bytes(n);
        if ok {
            self.n += n;
        }
        ok
    }

    pub fn held(&self) -> usize {
        self.n
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        self.session.give_bytes(self.n);
        self.session.changed.notify_waiters();
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
    pub(super) session: Arc<Session>,
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for RelaySession {
    /// The token is a credential for the relay: never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelaySession")
            .field("steps", &self.session.lock().steps.len())
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
        self.session.lock().usage
    }

    /// Ends the session: its token is refused from now on, and its requests
    /// in flight are cut and recorded (a reply cut off counts as the rest
    /// of the proposal's cap, its usage unread). Returns every step, in the
    /// order the requests came, and the usage over them. Waits at most
    /// [`limits::FINISH_WAIT`] for the cut requests to be recorded.
    pub async fn finish(self) -> (Vec<AgentStep>, TokenUsage) {
        self.shared.end_session(&self.token);
        self.session.close();
        let deadline = tokio::time::Instant::now() + limits::FINISH_WAIT;
        loop {
            let changed = self.session.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.session.lock().open == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                break;
            }
        }
        let mut state = self.session.lock();
        let steps = state.take_steps();
        (steps, state.usage)
    }
}

impl Drop for RelaySession {
    fn drop(&mut self) {
        self.shared.end_session(&self.token);
        self.session.close();
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
        let mut s = SessionState::new(SessionCaps {
            max_tokens: Some(100),
            max_cost_usd: Some(0.5),
            ..SessionCaps::default()
        });
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
