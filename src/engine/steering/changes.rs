//! Changing a paused run's settings: which differences between the card a
//! run is using and a new one can take effect in flight, and what each is.
//!
//! A block's parameters may change in flight when its component says so
//! ([`crate::engine::component::Component::LIVE`], carried on its checked
//! block as [`crate::engine::registry::Configured::live`]): the loop then
//! rebuilds it from the new parameters and carries its state over (a policy
//! through `checkpoint` / `restore`). Changed model settings (`llm`: the
//! model, its temperature) swap in the model the front end built from them
//! and rebuild the proposer with it; the budget (iterations, cost and token
//! caps) and the stop rules change in the loop. A block of another kind, a
//! block that is not live (a population holds the genomes, an evaluator its
//! processes, a memory its notes), the seed and the other loop settings
//! cannot: the change is refused with each of them named, and a fork (a new
//! run from a genome) is the way to try them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::engine::card::{General, ValidCard};
use crate::engine::component::Slot;
use crate::engine::model::LlmSettings;
use crate::engine::params::ParamMap;

/// One setting that changed: `field` (`selection_policy.exploitation_ratio`,
/// `general.max_iterations`, `llm.temperature`) from one value to another,
/// as a card writes them (`(default)` for a parameter left to its default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    pub field: String,
    pub from: String,
    pub to: String,
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} -> {}", self.field, self.from, self.to)
    }
}

/// A setting that cannot change in flight, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fixed {
    /// The block or setting (`population (islands)`, `seed`).
    pub what: String,
    pub why: String,
}

impl std::fmt::Display for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.why)
    }
}

/// How the log line of a change of settings begins.
pub const SETTINGS_CHANGED: &str = "settings changed from iteration";

/// A change of settings that took effect, as the run records it: at which
/// iteration (the first dispatched with the new values) and what changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsChange {
    pub iteration: u64,
    pub changes: Vec<Diff>,
    /// The iteration budget from then on.
    pub max_iterations: u64,
}

impl std::fmt::Display for SettingsChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let changes: Vec<String> = self.changes.iter().map(ToString::to_string).collect();
        write!(
            f,
            "{SETTINGS_CHANGED} {}: {}",
            self.iteration,
            changes.join(", ")
        )
    }
}

/// What changes from `old` (the card the run uses) to `new`: every change
/// when all can take effect in flight, else every setting that cannot. The
/// card's descriptive fields (name, summary, tags...) are not settings and
/// are not compared.
pub fn compare(old: &ValidCard, new: &ValidCard) -> Result<Vec<Diff>, Vec<Fixed>> {
    let (a, b) = (old.card(), new.card());
    let mut changes = Vec::new();
    let mut fixed = Vec::new();
    for slot in Slot::ALL {
        let (x, y) = (a.slot(slot), b.slot(slot));
        if x == y {
            continue;
        }
        if x.kind != y.kind {
            fixed.push(Fixed {
                what: slot.key().to_owned(),
                why: format!(
                    "another implementation ({} -> {}) cannot take over a run",
                    x.kind, y.kind
                ),
            });
        } else if !new.configured(slot).is_some_and(|c| c.live) {
            fixed.push(Fixed {
                what: format!("{} ({})", slot.key(), x.kind),
                why: "its parameters cannot change in flight".to_owned(),
            });
        } else {
            changes.extend(param_changes(slot.key(), &x.params, &y.params));
        }
    }
    if a.seed != b.seed {
        fixed.push(Fixed {
            what: "seed".to_owned(),
            why: "a run draws from one seed".to_owned(),
        });
    }
    if a.llm != b.llm {
        changes.extend(llm_changes(a.llm.as_ref(), b.llm.as_ref()));
    }
    general_changes(&a.general, &b.general, &mut changes, &mut fixed);
    if fixed.is_empty() {
        Ok(changes)
    } else {
        Err(fixed)
    }
}

/// The parameters that differ between two blocks of one kind.
fn param_changes(slot: &str, x: &ParamMap, y: &ParamMap) -> Vec<Diff> {
    let keys: BTreeSet<&String> = x.0.keys().chain(y.0.keys()).collect();
    let shown = |m: &ParamMap, k: &str| {
        m.get(k)
            .map_or_else(|| "(default)".to_owned(), |v| v.display())
    };
    keys.into_iter()
        .filter(|k| x.get(k) != y.get(k))
        .map(|k| Diff {
            field: format!("{slot}.{k}"),
            from: shown(x, k),
            to: shown(y, k),
        })
        .collect()
}

/// The model settings that differ (`llm.temperature 0.7 -> 0.2`), each key of
/// the section as the card writes it.
fn llm_changes(a: Option<&LlmSettings>, b: Option<&LlmSettings>) -> Vec<Diff> {
    // an empty list or an unset value says what a missing key says: not a
    // change (an older card wrote `models: []`)
    let keys = |s: Option<&LlmSettings>| match s.and_then(|s| serde_json::to_value(s).ok()) {
        Some(serde_json::Value::Object(mut map)) => {
            map.retain(|_, v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()));
            map
        }
        _ => serde_json::Map::new(),
    };
    let (x, y) = (keys(a), keys(b));
    let all: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
    let shown =
        |v: Option<&serde_json::Value>| v.map_or_else(|| "(none)".to_owned(), ToString::to_string);
    all.into_iter()
        .filter(|k| x.get(*k) != y.get(*k))
        .map(|k| Diff {
            field: format!("llm.{k}"),
            from: shown(x.get(k)),
            to: shown(y.get(k)),
        })
        .collect()
}

/// The loop settings: the budget (iterations, cost and token caps) and the
/// stop rules change in flight; the rest is fixed when the run starts.
fn general_changes(a: &General, b: &General, changes: &mut Vec<Diff>, fixed: &mut Vec<Fixed>) {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "none".to_owned());
    let mut live = |field: &str, from: String, to: String| {
        if from != to {
            changes.push(Diff {
                field: format!("general.{field}"),
                from,
                to,
            });
        }
    };
    live(
        "max_iterations",
        a.max_iterations.to_string(),
        b.max_iterations.to_string(),
    );
    live(
        "max_cost_usd",
        opt(a.max_cost_usd.map(|c| c.to_string())),
        opt(b.max_cost_usd.map(|c| c.to_string())),
    );
    live(
        "max_tokens",
        opt(a.max_tokens.map(|c| c.to_string())),
        opt(b.max_tokens.map(|c| c.to_string())),
    );
    if a.stop != b.stop {
        let json =
            |s: &crate::engine::card::StopRules| serde_json::to_string(s).unwrap_or_default();
        live("stop", json(&a.stop), json(&b.stop));
    }
    // Everything else as the run has it: what is left must be equal.
    let rest = General {
        max_iterations: a.max_iterations,
        max_cost_usd: a.max_cost_usd,
        max_tokens: a.max_tokens,
        stop: a.stop.clone(),
        ..b.clone()
    };
    if &rest == a {
        return;
    }
    let fields = [
        (
            "inner_retry_times",
            a.inner_retry_times != b.inner_retry_times,
        ),
        ("parallel", a.parallel != b.parallel),
        (
            "max_response_bytes",
            a.max_response_bytes != b.max_response_bytes,
        ),
        ("novelty", a.novelty != b.novelty),
        ("objectives", a.objectives != b.objectives),
        ("reference_point", a.reference_point != b.reference_point),
    ];
    let before = fixed.len();
    for (field, differs) in fields {
        if differs {
            fixed.push(Fixed {
                what: format!("general.{field}"),
                why: "fixed when the run starts".to_owned(),
            });
        }
    }
    // A loop setting not listed above still differs: refused, never lost.
    if fixed.len() == before {
        fixed.push(Fixed {
            what: "general".to_owned(),
            why: "a loop setting other than the budget and the stop rules changed; those are \
                  fixed when the run starts"
                .to_owned(),
        });
    }
}
