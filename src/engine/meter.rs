//! The run's meter: what the run has spent (tokens and USD) against the
//! caps its card names (`general.max_tokens`, `general.max_cost_usd`,
//! `general.stop.max_cost_usd`), shared by the loop and the model relay.
//!
//! The loop counts an iteration's usage when it admits its genomes; a coding
//! agent spends through the relay while its proposal is still running. So
//! that an agent cannot spend past the run's budget, the relay counts each
//! relayed reply's usage here as it comes ([`RunMeter::relayed`]) and asks
//! before forwarding a request whether the run's budget is reached
//! ([`RunMeter::reached`]); the loop tells the meter what it admits
//! ([`RunMeter::admitted`]), leaving out what the relay already counted.
//! The spend is therefore the run's recorded usage plus what agents have
//! spent in proposals not yet admitted (and what a proposal spent after its
//! agent was done, which no genome carries but the endpoint billed).

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::engine::usage::TokenUsage;

/// Which cap refused a relayed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    /// The proposer's `max_tokens`: tokens of one proposal.
    ProposalTokens,
    /// The proposer's `max_cost_usd`: USD of one proposal.
    ProposalCost,
    /// `general.max_tokens`: tokens of the whole run.
    RunTokens,
    /// `general.max_cost_usd` or `general.stop.max_cost_usd`: USD of the
    /// whole run.
    RunCost,
}

impl Cap {
    /// Whether the cap is the run's (not one proposal's).
    pub fn is_run(self) -> bool {
        matches!(self, Self::RunTokens | Self::RunCost)
    }

    /// A short label: "proposal token cap", "run cost budget".
    pub fn label(self) -> &'static str {
        match self {
            Self::ProposalTokens => "proposal token cap",
            Self::ProposalCost => "proposal cost cap",
            Self::RunTokens => "run token budget",
            Self::RunCost => "run cost budget",
        }
    }
}

/// A cap reached, and the sentence that says so.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub cap: Cap,
    pub why: String,
}

/// The run's caps, as its card names them (`None`: no cap).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunBudget {
    /// `general.max_tokens`.
    pub max_tokens: Option<u64>,
    /// The lower of `general.max_cost_usd` and `general.stop.max_cost_usd`,
    /// with the name of the field it came from.
    pub max_cost_usd: Option<(f64, &'static str)>,
}

impl RunBudget {
    /// The budget from the card's three fields.
    pub fn new(
        max_tokens: Option<u64>,
        max_cost_usd: Option<f64>,
        stop_max_cost_usd: Option<f64>,
    ) -> Self {
        let cost = match (max_cost_usd, stop_max_cost_usd) {
            (Some(a), Some(b)) if b < a => Some((b, "general.stop.max_cost_usd")),
            (Some(a), _) => Some((a, "general.max_cost_usd")),
            (None, Some(b)) => Some((b, "general.stop.max_cost_usd")),
            (None, None) => None,
        };
        Self {
            max_tokens,
            max_cost_usd: cost,
        }
    }

    /// Whether the run has any cap.
    pub fn is_capped(&self) -> bool {
        self.max_tokens.is_some() || self.max_cost_usd.is_some()
    }
}

/// Tokens and USD set aside for a relayed request in flight (what it may
/// spend at most, as far as its request tells), until its usage is known.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Hold {
    pub tokens: u64,
    pub cost_usd: f64,
}

impl Hold {
    pub fn add(&mut self, other: &Hold) {
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost_usd += other.cost_usd;
    }

    pub fn remove(&mut self, other: &Hold) {
        self.tokens = self.tokens.saturating_sub(other.tokens);
        self.cost_usd = (self.cost_usd - other.cost_usd).max(0.0);
    }
}

/// What caps leave (tokens, USD); `None` where there is no cap, below zero
/// where it was overshot.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Room {
    pub tokens: Option<i64>,
    pub cost_usd: Option<f64>,
}

impl Room {
    /// The room under `max_tokens` and `max_cost_usd` after `spent`.
    pub fn under(max_tokens: Option<u64>, max_cost_usd: Option<f64>, spent: &TokenUsage) -> Self {
        let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        Self {
            tokens: max_tokens.map(|m| signed(m).saturating_sub(signed(spent.total_tokens()))),
            cost_usd: max_cost_usd.map(|m| m - spent.cost_usd.unwrap_or(0.0)),
        }
    }

    /// What is left once `held` is set aside too.
    pub fn less(self, held: &Hold) -> Self {
        Self {
            tokens: self
                .tokens
                .map(|t| t.saturating_sub(i64::try_from(held.tokens).unwrap_or(i64::MAX))),
            cost_usd: self.cost_usd.map(|c| c - held.cost_usd),
        }
    }
}

#[derive(Debug, Default)]
struct Spent {
    /// Usage the relay did not count: recorded before this invocation (a
    /// resumed run's checkpoint) and admitted from proposals that did not
    /// go through the relay.
    counted: TokenUsage,
    /// Every relayed reply's usage, as it came.
    relayed: TokenUsage,
    /// What relayed requests in flight hold.
    held: Hold,
}

/// The run's spend against its [`RunBudget`]; one per run, shared (in an
/// `Arc`) by the loop and the relay's sessions.
#[derive(Debug, Default)]
pub struct RunMeter {
    /// Changed when the run's budget changes while it is paused.
    budget: Mutex<RunBudget>,
    spent: Mutex<Spent>,
}

impl RunMeter {
    pub fn new(budget: RunBudget) -> Self {
        Self {
            budget: Mutex::new(budget),
            spent: Mutex::new(Spent::default()),
        }
    }

    pub fn budget(&self) -> RunBudget {
        self.budget_mut().clone()
    }

    /// The run's caps changed (its settings changed while it was paused):
    /// what it spent so far is measured against these from now on.
    pub fn set_budget(&self, budget: RunBudget) {
        *self.budget_mut() = budget;
    }

    fn budget_mut(&self) -> std::sync::MutexGuard<'_, RunBudget> {
        // Plain values: a panic elsewhere cannot leave them half-written.
        self.budget
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn spent_mut(&self) -> std::sync::MutexGuard<'_, Spent> {
        // Sums of numbers: a panic elsewhere cannot leave them half-written.
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A resumed run starts from what its record says it spent.
    pub fn start_from(&self, recorded: &TokenUsage) {
        let mut s = self.spent_mut();
        s.counted = *recorded;
        s.relayed = TokenUsage::default();
    }

    /// The loop admitted a genome that used `usage`; `via_relay` when the
    /// relay counted it already (a coding agent's proposal).
    pub fn admitted(&self, usage: &TokenUsage, via_relay: bool) {
        if !via_relay {
            self.spent_mut().counted.add(usage);
        }
    }

    /// The relay passed on a reply that used `usage`.
    pub fn relayed(&self, usage: &TokenUsage) {
        self.spent_mut().relayed.add(usage);
    }

    /// Admits a relayed request: `decide` gets what the run's budget leaves
    /// now (less what requests in flight hold) and with none in flight, and
    /// says what the request holds, if it goes; checked and held at once,
    /// so that requests admitted together cannot overshoot.
    pub fn admit<T>(&self, decide: impl FnOnce(Room, Room) -> (Option<Hold>, T)) -> T {
        let budget = self.budget();
        let mut s = self.spent_mut();
        let mut total = s.counted;
        total.add(&s.relayed);
        let cost = budget.max_cost_usd.map(|(c, _)| c);
        let idle = Room::under(budget.max_tokens, cost, &total);
        let (hold, out) = decide(idle.less(&s.held), idle);
        if let Some(h) = hold {
            s.held.add(&h);
        }
        out
    }

    /// A request admitted with [`RunMeter::admit`] ended: its hold comes
    /// back, and what it used counts (`used`: none when it was refused
    /// after all).
    pub fn settle(&self, hold: &Hold, used: Option<&TokenUsage>) {
        let mut s = self.spent_mut();
        s.held.remove(hold);
        if let Some(u) = used {
            s.relayed.add(u);
        }
    }

    /// What relayed requests in flight hold.
    pub fn held(&self) -> Hold {
        self.spent_mut().held
    }

    /// Everything the run has spent so far.
    pub fn spent(&self) -> TokenUsage {
        let s = self.spent_mut();
        let mut total = s.counted;
        total.add(&s.relayed);
        total
    }

    /// The run's cap that is reached, if any: a further relayed request is
    /// then refused.
    pub fn reached(&self) -> Option<Refusal> {
        let spent = self.spent();
        let budget = self.budget();
        if let Some(max) = budget.max_tokens
            && spent.total_tokens() >= max
        {
            return Some(Refusal {
                cap: Cap::RunTokens,
                why: format!(
                    "the run's token budget is spent ({} of {max} tokens used, general.max_tokens)",
                    spent.total_tokens()
                ),
            });
        }
        if let Some((max, field)) = budget.max_cost_usd
            && spent.cost_usd.unwrap_or(0.0) >= max
        {
            return Some(Refusal {
                cap: Cap::RunCost,
                why: format!(
                    "the run's cost budget is spent (${:.6} of ${max:.6}, {field})",
                    spent.cost_usd.unwrap_or(0.0)
                ),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(tokens: u64, cost: f64) -> TokenUsage {
        TokenUsage {
            prompt_tokens: tokens,
            cost_usd: Some(cost),
            ..TokenUsage::default()
        }
    }

    #[test]
    fn the_lower_cost_cap_is_the_runs_and_named() {
        let b = RunBudget::new(None, Some(2.0), Some(1.0));
        assert_eq!(b.max_cost_usd, Some((1.0, "general.stop.max_cost_usd")));
        let b = RunBudget::new(None, Some(0.5), Some(1.0));
        assert_eq!(b.max_cost_usd, Some((0.5, "general.max_cost_usd")));
        assert!(!RunBudget::new(None, None, None).is_capped());
        assert!(RunBudget::new(Some(3), None, None).is_capped());
    }

    #[test]
    fn relayed_usage_counts_once_and_reaches_the_cap_at_it_not_before() {
        let m = RunMeter::new(RunBudget::new(Some(100), Some(1.0), None));
        m.start_from(&used(20, 0.2));
        assert_eq!(m.reached(), None);
        // An agent's replies count as they come; its genome, admitted
        // later, is not counted again.
        m.relayed(&used(40, 0.3));
        m.admitted(&used(40, 0.3), true);
        assert_eq!(m.spent().prompt_tokens, 60);
        // Another proposer's genome counts when admitted.
        m.admitted(&used(39, 0.1), false);
        assert_eq!(m.spent().prompt_tokens, 99);
        assert_eq!(m.reached(), None);
        m.relayed(&used(1, 0.0));
        let r = m.reached().unwrap();
        assert_eq!(r.cap, Cap::RunTokens);
        assert!(r.why.contains("100 of 100 tokens") && r.why.contains("general.max_tokens"));

        let m = RunMeter::new(RunBudget::new(None, None, Some(0.5)));
        m.relayed(&used(1, 0.25));
        assert_eq!(m.reached(), None);
        m.relayed(&used(1, 0.25));
        let r = m.reached().unwrap();
        assert_eq!(r.cap, Cap::RunCost);
        assert!(r.why.contains("general.stop.max_cost_usd"), "{}", r.why);
        assert!(Cap::RunCost.is_run() && !Cap::ProposalCost.is_run());
    }

    #[test]
    fn a_budget_changed_in_flight_measures_what_was_spent_against_the_new_caps() {
        let m = RunMeter::new(RunBudget::new(Some(50), None, None));
        m.relayed(&used(60, 0.0));
        assert_eq!(m.reached().map(|r| r.cap), Some(Cap::RunTokens));
        m.set_budget(RunBudget::new(Some(100), None, Some(0.1)));
        assert_eq!(m.reached(), None, "raised: room again");
        assert_eq!(m.budget().max_tokens, Some(100));
        m.relayed(&used(1, 0.1));
        assert_eq!(m.reached().map(|r| r.cap), Some(Cap::RunCost));
    }
}
