//! Admission: whether a metered request may go now, and with what output
//! limit, so that requests in flight at once cannot spend past a cap.
//!
//! The relay **reserves**: each request in flight holds tokens (and USD)
//! against its proposal's caps and the run's budget until its reply's
//! usage is counted, and a request is admitted only if what it may spend
//! fits in what the caps leave less what the others hold. What it may
//! spend is its prompt, counted conservatively (every byte of the request
//! body as a token, since a token of text is at least a byte, plus
//! [`PROMPT_OVERHEAD`] for what the provider adds: tool instructions,
//! message framing), and its output limit (`max_tokens`,
//! `max_completion_tokens`, `max_output_tokens`, times Chat Completions'
//! `n`), which the relay lowers to what is left when it asks for more.
//! A request that does not fit waits while others are in flight (their
//! holds come back as they end) and is refused once even an idle proposal
//! could not fit it.
//!
//! Two kinds of request cannot be bounded that way, and go **one at a
//! time** within their proposal, holding all that is left: one that names
//! no output limit (its limit is the model's own, which the relay does not
//! know: setting one above it would be refused, so the relay sets one
//! only when what is left is at most [`SAFE_LIMIT`], which every model
//! takes), and one whose prompt is not all in its body (images, files or
//! documents, a previous response or conversation the provider fetches,
//! server-side tools). Such a request may spend past what it holds by at
//! most its own reply.
//!
//! So whatever an agent sends, a proposal overshoots its cap by at most
//! one reply (its output limit, or for an unbounded request its whole
//! reply), and the run's budget by at most one reply per proposal in
//! flight.

use serde_json::Value;

use crate::engine::meter::{Cap, Hold, Room};
use crate::engine::model::pricing::Price;
use crate::engine::model::wire::Protocol;

/// Tokens counted for a request on top of its body's bytes.
pub const PROMPT_OVERHEAD: u64 = 512;
/// An output limit every model accepts: the relay writes one into a
/// request that named none only when what is left is at most this.
pub const SAFE_LIMIT: u64 = 4096;
/// Most choices a Chat Completions request may ask for.
const MAX_CHOICES: u64 = 128;

/// What a request asks of the caps.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    /// Its prompt in tokens, at most (None: not bounded by its body).
    pub prompt: Option<u64>,
    /// Its output limit per choice, as it came (None: none named).
    pub limit: Option<u64>,
    /// Choices (Chat Completions' `n`).
    pub choices: u64,
    /// The model's price (None: unpriced; refused under a cost cap).
    pub price: Option<Price>,
}

/// What admission says.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Forward it, holding `hold`; `limit`: the output limit per choice to
    /// write into the request (None: leave it as it is); `alone`: no other
    /// request of the proposal may be in flight with it.
    Go {
        hold: Hold,
        limit: Option<u64>,
        alone: bool,
    },
    /// It would fit once requests in flight end.
    Wait,
    /// It cannot fit, the cap that says so and why.
    Refuse(Cap, String),
}

/// The caps' room for one request: the proposal's and the run's, each as
/// it is now (less what requests in flight hold) and as it would be with
/// none in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rooms {
    pub proposal_now: Room,
    pub proposal_idle: Room,
    pub run_now: Room,
    pub run_idle: Room,
}

/// Cost of one prompt token at `price`, USD (the higher of the plain and
/// the cache-write price: a prompt may be written to the cache).
fn prompt_rate(price: &Price) -> f64 {
    price
        .prompt_per_million
        .max(price.cache_write_per_million.unwrap_or(0.0))
        / 1e6
}

/// Output tokens `room` leaves after a prompt of `prompt` tokens (None: no
/// cap); below 0 when not even the prompt fits.
fn output_room(room: &Room, prompt: u64, price: Option<&Price>) -> Option<i64> {
    let by_tokens = room
        .tokens
        .map(|t| t.saturating_sub(i64::try_from(prompt).unwrap_or(i64::MAX)));
    let by_cost = room.cost_usd.and_then(|usd| {
        let price = price?;
        let left = usd - prompt as f64 * prompt_rate(price);
        let rate = price.completion_per_million / 1e6;
        if left < 0.0 {
            Some(-1)
        } else if rate <= 0.0 {
            None
        } else {
            // Whole tokens, rounded down; far below 2^63.
            Some((left / rate).floor().min(i64::MAX as f64) as i64)
        }
    });
    match (by_tokens, by_cost) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What `tokens` out and `prompt` in cost at `price`.
fn hold_of(prompt: u64, output: u64, price: Option<&Price>) -> Hold {
    Hold {
        tokens: prompt.saturating_add(output),
        cost_usd: price.map_or(0.0, |p| {
            prompt as f64 * prompt_rate(p) + output as f64 * p.completion_per_million / 1e6
        }),
    }
}

/// Whether `ask` may go now (see the module's doc). `others`: requests of
/// the proposal in flight; `alone_held`: one of them holds it alone.
pub fn decide(ask: &Ask, rooms: &Rooms, others: usize, alone_held: bool) -> Verdict {
    if alone_held {
        return Verdict::Wait;
    }
    let price = ask.price.as_ref();
    let capped = |r: &Room| r.tokens.is_some() || r.cost_usd.is_some();
    if !capped(&rooms.proposal_idle) && !capped(&rooms.run_idle) {
        let out = ask.limit.unwrap_or(0).saturating_mul(ask.choices);
        return Verdict::Go {
            hold: hold_of(ask.prompt.unwrap_or(0), out, price),
            limit: None,
            alone: false,
        };
    }
    // A prompt not bounded by its body: it takes all that is left, alone.
    let Some(prompt) = ask.prompt else {
        if others > 0 {
            return Verdict::Wait;
        }
        return alone(ask, rooms, PROMPT_OVERHEAD, price);
    };
    let fits = |room: &Room| output_room(room, prompt, price).is_none_or(|o| o >= 1);
    if !fits(&rooms.proposal_idle) {
        return refusal(rooms.proposal_idle, Cap::ProposalTokens, prompt, price);
    }
    if !fits(&rooms.run_idle) {
        return refusal(rooms.run_idle, Cap::RunTokens, prompt, price);
    }
    let room_now = [&rooms.proposal_now, &rooms.run_now]
        .into_iter()
        .filter_map(|r| output_room(r, prompt, price))
        .min();
    let Some(room_now) = room_now else {
        // Neither cap binds the output: only its prompt is held.
        let out = ask.limit.unwrap_or(0).saturating_mul(ask.choices);
        return Verdict::Go {
            hold: hold_of(prompt, out, price),
            limit: None,
            alone: false,
        };
    };
    let per = u64::try_from(room_now).unwrap_or(0) / ask.choices.max(1);
    if per == 0 {
        return Verdict::Wait;
    }
    match ask.limit {
        Some(limit) if limit <= per => Verdict::Go {
            hold: hold_of(prompt, limit * ask.choices, price),
            limit: None,
            alone: false,
        },
        Some(_) => Verdict::Go {
            hold: hold_of(prompt, per * ask.choices, price),
            limit: Some(per),
            alone: false,
        },
        None if per <= SAFE_LIMIT => Verdict::Go {
            hold: hold_of(prompt, per * ask.choices, price),
            limit: Some(per),
            alone: false,
        },
        None if others > 0 => Verdict::Wait,
        None => alone(ask, rooms, prompt, price),
    }
}

/// A request that goes alone, holding all that is left.
fn alone(ask: &Ask, rooms: &Rooms, prompt: u64, price: Option<&Price>) -> Verdict {
    let room = [&rooms.proposal_now, &rooms.run_now]
        .into_iter()
        .filter_map(|r| output_room(r, prompt, price))
        .min();
    match room {
        Some(r) if r < 1 => {
            let (cap, idle) =
                if output_room(&rooms.proposal_idle, prompt, price).is_some_and(|o| o < 1) {
                    (Cap::ProposalTokens, rooms.proposal_idle)
                } else {
                    (Cap::RunTokens, rooms.run_idle)
                };
            // Held by others (of other proposals: the run's) or spent.
            if output_room(&idle, prompt, price).is_some_and(|o| o >= 1) {
                Verdict::Wait
            } else {
                refusal(idle, cap, prompt, price)
            }
        }
        room => {
            let out = room.map_or(0, |r| u64::try_from(r).unwrap_or(0));
            Verdict::Go {
                hold: hold_of(prompt, out, price),
                limit: None,
                alone: ask.limit.is_none() || ask.prompt.is_none(),
            }
        }
    }
}

/// The refusal of a prompt that `room` (a proposal's when `cap` is one of
/// its, else the run's) cannot hold.
fn refusal(room: Room, cap: Cap, prompt: u64, price: Option<&Price>) -> Verdict {
    let run = cap.is_run();
    let by_cost = room.cost_usd.is_some_and(|usd| {
        price.is_some_and(|p| usd - prompt as f64 * prompt_rate(p) < p.completion_per_million / 1e6)
    });
    let whose = if run {
        "the run's budget"
    } else {
        "this proposal's cap"
    };
    let (cap, left) = match (by_cost, run) {
        (true, false) => (
            Cap::ProposalCost,
            format!("${:.6}", room.cost_usd.unwrap_or(0.0).max(0.0)),
        ),
        (true, true) => (
            Cap::RunCost,
            format!("${:.6}", room.cost_usd.unwrap_or(0.0).max(0.0)),
        ),
        (false, _) => (cap, format!("{} tokens", room.tokens.unwrap_or(0).max(0))),
    };
    Verdict::Refuse(
        cap,
        format!(
            "{whose} is reached for this request: {left} left, less than its prompt may use \
             (up to {prompt} tokens: every byte of a request counts as a token until its reply \
             says how many it used) and one token of reply"
        ),
    )
}

/// The body's output limit per choice (the lower of the keys it names)
/// and its choices; an error for one that is not a count.
pub fn limits(protocol: Protocol, body: &Value) -> Result<(Option<u64>, u64), String> {
    let keys: &[&str] = match protocol {
        Protocol::ChatCompletions => &["max_completion_tokens", "max_tokens"],
        Protocol::Responses => &["max_output_tokens"],
        Protocol::AnthropicMessages => &["max_tokens"],
    };
    let mut limit: Option<u64> = None;
    for key in keys {
        match body.get(*key) {
            None | Some(Value::Null) => {}
            Some(v) => {
                let n = v
                    .as_u64()
                    .ok_or_else(|| format!("`{key}` must be a whole number of tokens, not {v}"))?;
                limit = Some(limit.map_or(n, |l| l.min(n)));
            }
        }
    }
    let choices = match (protocol, body.get("n")) {
        (Protocol::ChatCompletions, Some(v)) if !v.is_null() => v
            .as_u64()
            .filter(|n| (1..=MAX_CHOICES).contains(n))
            .ok_or_else(|| {
                format!("`n` must be a whole number from 1 to {MAX_CHOICES}, not {v}")
            })?,
        _ => 1,
    };
    Ok((limit, choices))
}

/// Writes `limit` as the body's output limit: into every key it named, or
/// the protocol's own (`reasoning`: a Chat Completions model that takes
/// only `max_completion_tokens`).
pub fn set_limit(protocol: Protocol, body: &mut Value, limit: u64, reasoning: bool) {
    let Value::Object(map) = body else { return };
    let keys: &[&str] = match protocol {
        Protocol::ChatCompletions => &["max_completion_tokens", "max_tokens"],
        Protocol::Responses => &["max_output_tokens"],
        Protocol::AnthropicMessages => &["max_tokens"],
    };
    let mut set = false;
    for key in keys {
        if map.get(*key).is_some_and(|v| !v.is_null()) {
            map.insert((*key).to_owned(), Value::from(limit));
            set = true;
        }
    }
    if !set {
        let key = match protocol {
            Protocol::ChatCompletions if reasoning => "max_completion_tokens",
            Protocol::ChatCompletions | Protocol::AnthropicMessages => "max_tokens",
            Protocol::Responses => "max_output_tokens",
        };
        map.insert(key.to_owned(), Value::from(limit));
    }
}

/// Content types whose tokens are not bounded by their bytes in the body
/// (the provider fetches or renders them).
const UNBOUNDED_PARTS: &[&str] = &[
    "image_url",
    "input_image",
    "image",
    "document",
    "input_file",
    "file",
    "input_audio",
    "container_upload",
    "search_result",
    "mcp_tool_use",
];

/// Top-level fields that make the provider add to the prompt.
const UNBOUNDED_FIELDS: &[&str] = &[
    "previous_response_id",
    "conversation",
    "prompt",
    "web_search_options",
    "mcp_servers",
    "container",
    "audio",
];

/// The prompt's tokens at most: every byte of the body and
/// [`PROMPT_OVERHEAD`]; None when the body does not bound it (see
/// [`UNBOUNDED_PARTS`], [`UNBOUNDED_FIELDS`], and tools other than the
/// agent's own functions).
pub fn prompt_bound(body: &Value, bytes: usize) -> Option<u64> {
    if let Value::Object(map) = body {
        if UNBOUNDED_FIELDS
            .iter()
            .any(|f| map.get(*f).is_some_and(|v| !v.is_null()))
        {
            return None;
        }
        let own_tool = |t: &Value| match t.get("type").and_then(Value::as_str) {
            // Chat Completions and Responses function tools, custom tools;
            // an Anthropic tool without a type is the agent's own.
            None => t.get("name").is_some() || t.get("function").is_some(),
            Some(kind) => kind == "function" || kind == "custom",
        };
        if map
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.iter().all(own_tool))
        {
            return None;
        }
    }
    if has_unbounded_part(body, 0) {
        return None;
    }
    Some((bytes as u64).saturating_add(PROMPT_OVERHEAD))
}

fn has_unbounded_part(v: &Value, depth: usize) -> bool {
    // Deeper than any protocol nests its content: treat as unbounded.
    if depth > 64 {
        return true;
    }
    match v {
        Value::Object(map) => {
            map.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| UNBOUNDED_PARTS.contains(&t))
                || map.values().any(|v| has_unbounded_part(v, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| has_unbounded_part(v, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tokens(n: i64) -> Room {
        Room {
            tokens: Some(n),
            cost_usd: None,
        }
    }

    fn rooms(proposal: Room, run: Room) -> Rooms {
        Rooms {
            proposal_now: proposal,
            proposal_idle: proposal,
            run_now: run,
            run_idle: run,
        }
    }

    fn ask(prompt: u64, limit: Option<u64>) -> Ask {
        Ask {
            prompt: Some(prompt),
            limit,
            choices: 1,
            price: None,
        }
    }

    #[test]
    fn a_limit_is_lowered_to_what_is_left_and_held() {
        let r = rooms(tokens(1000), Room::default());
        assert_eq!(
            decide(&ask(600, Some(100)), &r, 0, false),
            Verdict::Go {
                hold: Hold {
                    tokens: 700,
                    cost_usd: 0.0
                },
                limit: None,
                alone: false
            }
        );
        assert!(matches!(
            decide(&ask(600, Some(5000)), &r, 0, false),
            Verdict::Go { limit: Some(400), hold, .. } if hold.tokens == 1000
        ));
        // Nothing named and little left: the relay names it.
        assert!(matches!(
            decide(&ask(600, None), &r, 3, false),
            Verdict::Go {
                limit: Some(400),
                alone: false,
                ..
            }
        ));
    }

    #[test]
    fn what_others_hold_makes_it_wait_and_what_is_spent_refuses_it() {
        let mut r = rooms(tokens(1000), Room::default());
        r.proposal_now = tokens(100);
        assert_eq!(decide(&ask(600, Some(10)), &r, 1, false), Verdict::Wait);
        let r = rooms(tokens(300), Room::default());
        assert!(matches!(
            decide(&ask(600, Some(10)), &r, 0, false),
            Verdict::Refuse(Cap::ProposalTokens, why) if why.contains("300 tokens left")
        ));
        let r = rooms(Room::default(), tokens(300));
        assert!(matches!(
            decide(&ask(600, Some(10)), &r, 0, false),
            Verdict::Refuse(Cap::RunTokens, _)
        ));
        assert_eq!(
            decide(
                &ask(1, Some(1)),
                &rooms(tokens(1000), tokens(1000)),
                0,
                true
            ),
            Verdict::Wait
        );
    }

    #[test]
    fn no_limit_with_much_left_goes_alone_holding_the_rest() {
        let r = rooms(tokens(100_000), Room::default());
        assert_eq!(decide(&ask(600, None), &r, 2, false), Verdict::Wait);
        assert_eq!(
            decide(&ask(600, None), &r, 0, false),
            Verdict::Go {
                hold: Hold {
                    tokens: 100_000,
                    cost_usd: 0.0
                },
                limit: None,
                alone: true
            }
        );
        let unbounded = Ask {
            prompt: None,
            ..ask(0, Some(10))
        };
        assert_eq!(decide(&unbounded, &r, 1, false), Verdict::Wait);
        assert!(matches!(
            decide(&unbounded, &r, 0, false),
            Verdict::Go { alone: true, .. }
        ));
    }

    #[test]
    fn a_cost_cap_bounds_the_output_by_its_price_and_choices_multiply() {
        let price = Price::new(3.0, 15.0);
        let r = rooms(
            Room {
                tokens: None,
                cost_usd: Some(0.01),
            },
            Room::default(),
        );
        let a = Ask {
            prompt: Some(1000),
            limit: Some(100_000),
            choices: 2,
            price: Some(price),
        };
        // $0.01 less $0.003 of prompt leaves 466 output tokens: 233 each.
        match decide(&a, &r, 0, false) {
            Verdict::Go { limit, hold, .. } => {
                assert_eq!(limit, Some(233));
                assert!(hold.cost_usd <= 0.01 + 1e-12, "{hold:?}");
            }
            v => panic!("{v:?}"),
        }
        let (limit, n) = limits(
            Protocol::ChatCompletions,
            &json!({"n": 3, "max_tokens": 9, "max_completion_tokens": 7}),
        )
        .unwrap();
        assert_eq!((limit, n), (Some(7), 3));
        assert!(limits(Protocol::ChatCompletions, &json!({"n": 0})).is_err());
        assert!(limits(Protocol::ChatCompletions, &json!({"max_tokens": "9"})).is_err());
        assert!(limits(Protocol::Responses, &json!({"max_output_tokens": -1})).is_err());
    }

    #[test]
    fn limits_are_written_under_each_protocols_key() {
        let mut v = json!({"max_tokens": 9000, "max_completion_tokens": 9000});
        set_limit(Protocol::ChatCompletions, &mut v, 50, false);
        assert_eq!(v, json!({"max_tokens": 50, "max_completion_tokens": 50}));
        let mut v = json!({});
        set_limit(Protocol::ChatCompletions, &mut v, 50, true);
        assert_eq!(v, json!({"max_completion_tokens": 50}));
        let mut v = json!({});
        set_limit(Protocol::Responses, &mut v, 50, false);
        assert_eq!(v, json!({"max_output_tokens": 50}));
    }

    #[test]
    fn prompts_the_body_does_not_bound_are_told_apart() {
        let text = json!({"messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "bash"}}, {"name": "edit", "input_schema": {}}]});
        assert_eq!(prompt_bound(&text, 100), Some(100 + PROMPT_OVERHEAD));
        for body in [
            json!({"previous_response_id": "resp_1", "input": "go on"}),
            json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            json!({"tools": [{"type": "web_search"}]}),
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x"}}]}]}),
            json!({"messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "url", "url": "https://x.pdf"}}]}]}),
        ] {
            assert_eq!(prompt_bound(&body, 100), None, "{body}");
        }
    }
}
