//! Scaffold cards: a method declared as YAML — metadata, one `{kind, ...params}`
//! block per slot, `general` settings, the seed and optional model settings.
//!
//! Loading is strict: unknown keys, missing slots, unknown kinds, unknown
//! parameters, wrong types and values out of range are all errors, each
//! naming `file:line:col`, the field path and the reason, and a card's errors
//! all come in one pass: a card with nine mistakes reports nine. An unknown
//! kind or key says the nearest known one ("did you mean `best_of_n`?"), and
//! a missing slot shows a minimal one. serde_yaml is used only here and in
//! `task.rs` (to read an OpenEvolve `config.yaml`).
//!
//! Where `line:col` points, by what is wrong:
//! - a wrong value (a wrong type, out of range, an unknown kind, an
//!   unknown word): the value;
//! - an unknown or misspelt key (a card key, a parameter): the key;
//! - a missing key: the key of the mapping it is missing from (`1:1`, the
//!   start of the card, for a top-level key such as a slot).
//!
//! # Checked once
//!
//! A card's shape is read first: serde stops at its first wrong type or unknown key, so the card is
//! read again as a YAML value and decoded again and again (`card/errors.rs`), each offending key
//! taken out (the default stands in) or, for a missing required key, a placeholder put in, until
//! it decodes; that card is checked as below, what a shape error is about is said once, and every
//! error of every stage is reported together, sorted by position, serde's type words said as what
//! the field must be. A card is checked once, into a `ValidCard`: every slot's kind is looked up
//! and its parameters are checked against the table (unknown keys, types, ranges), decoded into the
//! component's `Params` and passed through `Component::check` (rules across parameters). A run
//! builds each component from those typed values; nothing is checked again. The studio validates
//! live while a card is edited (`Card::validate`, the same check) to show errors at their fields.

pub mod diagram;
mod errors;
mod novelty;
mod spans;
mod stop;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::component::{BuildContext, RegistryError, Slot, SlotTrait};
use crate::engine::genome::{Direction, Objective};
pub use crate::engine::model::{LlmSettings, ModelSpec};
use crate::engine::params::ParamMap;
pub use crate::engine::provenance::Provenance;
use crate::engine::registry::{Configured, Registry};

pub use novelty::NoveltySettings;
pub use spans::Spans;
pub use stop::{Progress, StopRules};

/// One slot of a card: the implementation's `kind` and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotSpec {
    pub kind: String,
    #[serde(flatten)]
    pub params: ParamMap,
}

impl SlotSpec {
    pub fn new(kind: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            params: ParamMap::default(),
        }
    }
}

/// Loop-level settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct General {
    /// Number of iterations (each selects once and yields one or more
    /// evaluated or rejected candidates).
    pub max_iterations: u64,
    /// Proposal resamples per iteration on a parse/eval failure, parent held fixed.
    pub inner_retry_times: u32,
    /// Iterations in flight at once (1 = exact sequential semantics: each
    /// iteration selects after the previous one was admitted).
    pub parallel: u32,
    /// Stop cleanly once the run has cost this much (USD), when prices are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Stop cleanly once the run has used this many model tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Bytes of a raw model reply stored on its genome; a longer reply keeps
    /// its first part and records its full length (`Genome::response_bytes`).
    #[serde(skip_serializing_if = "is_default_response_cap")]
    pub max_response_bytes: u64,
    /// Early stopping: a target score, patience, a cost or wall-time cap.
    #[serde(skip_serializing_if = "StopRules::is_empty")]
    pub stop: StopRules,
    /// The novelty gate: reject near-duplicate children before evaluation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub novelty: Option<NoveltySettings>,
    /// Several objectives with their directions (`{combined_score: max,
    /// evaluations: min}`): a multi-objective search.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub objectives: BTreeMap<String, Direction>,
    /// The reference point's value per objective, for hypervolume (an
    /// objective left out: the initial program's value).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reference_point: BTreeMap<String, f64>,
}

impl General {
    /// The objectives with their directions and reference values, in
    /// metric order (empty: one fitness).
    pub fn objectives(&self) -> Vec<Objective> {
        self.objectives
            .iter()
            .map(|(metric, direction)| Objective {
                metric: metric.clone(),
                direction: *direction,
                reference: self.reference_point.get(metric).copied(),
            })
            .collect()
    }
}

/// Stored bytes of a raw model reply unless a card says otherwise (256 KiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 256 * 1024;
/// The range a card may set `general.max_response_bytes` in: from 1 KiB to
/// the largest reply the model client accepts (32 MiB).
pub const RESPONSE_BYTES_RANGE: (u64, u64) = (1024, 32 * 1024 * 1024);

fn is_default_response_cap(v: &u64) -> bool {
    *v == DEFAULT_MAX_RESPONSE_BYTES
}

impl Default for General {
    fn default() -> Self {
        Self {
            max_iterations: 100,
            inner_retry_times: 1,
            parallel: 1,
            max_cost_usd: None,
            max_tokens: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            stop: StopRules::default(),
            novelty: None,
            objectives: BTreeMap::new(),
            reference_point: BTreeMap::new(),
        }
    }
}

fn default_namespace() -> String {
    "user".to_owned()
}

fn default_license() -> String {
    "Apache-2.0".to_owned()
}

/// A scaffold card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Card {
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Display title (defaults to the name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// One-line summary.
    #[serde(default)]
    pub summary: String,
    /// Longer description / algorithm notes (markdown).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default = "default_license")]
    pub license: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Hub README "Overview" section.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub overview: String,
    /// Hub README "When to use" section.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub when_to_use: String,
    /// Hub README "Source" section.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    pub population: SlotSpec,
    pub selection_policy: SlotSpec,
    pub prompt_builder: SlotSpec,
    pub proposer: SlotSpec,
    pub evaluator: SlotSpec,
    pub memory: SlotSpec,
    #[serde(default)]
    pub general: General,
    #[serde(default)]
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSettings>,
    /// Where the card came from when it is not the user's own (a hub, a
    /// bundle, a run folder): kept when the card is saved, so a card from
    /// elsewhere stays so (see [`crate::engine::provenance`]). Never part
    /// of the card's hash ([`Card::hash`]).
    #[serde(default, skip_serializing_if = "Provenance::is_local")]
    pub provenance: Option<Provenance>,
}

impl Card {
    /// The slot spec of `slot`.
    pub fn slot(&self, slot: Slot) -> &SlotSpec {
        match slot {
            Slot::Population => &self.population,
            Slot::SelectionPolicy => &self.selection_policy,
            Slot::PromptBuilder => &self.prompt_builder,
            Slot::Proposer => &self.proposer,
            Slot::Evaluator => &self.evaluator,
            Slot::Memory => &self.memory,
        }
    }

    pub fn slot_mut(&mut self, slot: Slot) -> &mut SlotSpec {
        match slot {
            Slot::Population => &mut self.population,
            Slot::SelectionPolicy => &mut self.selection_policy,
            Slot::PromptBuilder => &mut self.prompt_builder,
            Slot::Proposer => &mut self.proposer,
            Slot::Evaluator => &mut self.evaluator,
            Slot::Memory => &mut self.memory,
        }
    }

    /// Title for display.
    pub fn display_title(&self) -> &str {
        if self.title.is_empty() {
            &self.name
        } else {
            &self.title
        }
    }

    /// A minimal valid card (the studio's "New").
    pub fn new_default(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            namespace: default_namespace(),
            title: String::new(),
            summary: String::new(),
            description: String::new(),
            license: default_license(),
            tags: Vec::new(),
            overview: String::new(),
            when_to_use: String::new(),
            source: String::new(),
            population: SlotSpec::new("in_memory"),
            selection_policy: SlotSpec::new("best_of_n"),
            prompt_builder: SlotSpec::new("default"),
            proposer: SlotSpec::new("diff"),
            evaluator: SlotSpec::new("subprocess"),
            memory: SlotSpec::new("none"),
            general: General::default(),
            seed: 0,
            llm: None,
            provenance: None,
        }
    }

    /// This card with `provenance` (where it came from).
    #[must_use]
    pub fn with_provenance(mut self, provenance: Provenance) -> Self {
        self.provenance = Some(provenance);
        self
    }

    /// The card's content hash, what a consent is given for
    /// ([`crate::engine::consent`]): the SHA-256 of its YAML, in hex (32
    /// digits), without its provenance and without the three settings every
    /// front end sets per run: `general.max_iterations`, `general.parallel`
    /// and `seed` (`--iterations`, `--parallel`, `--seed`, a resume's
    /// budget, a leaderboard's seeds). Any other change, a comment-free
    /// reformatting aside, gives another hash.
    pub fn hash(&self) -> String {
        let mut bare = self.clone();
        bare.provenance = None;
        bare.general.max_iterations = General::default().max_iterations;
        bare.general.parallel = General::default().parallel;
        bare.seed = 0;
        let digest = ring::digest::digest(&ring::digest::SHA256, bare.to_yaml().as_bytes());
        digest.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Parse a card from YAML text and check it; `origin` names the file in
    /// errors.
    pub fn from_yaml(text: &str, origin: &str, registry: &Registry) -> Result<Self, CardErrors> {
        ValidCard::from_yaml(text, origin, registry).map(ValidCard::into_card)
    }

    /// Load a card file and check it (its provenance as the file records
    /// it; a front end reads a file the user names with
    /// `crate::engine::hub::pull::load_card_file`, which knows the hub
    /// cache).
    pub fn load(path: &Path, registry: &Registry) -> Result<Self, CardErrors> {
        ValidCard::load(path, registry).map(ValidCard::into_card)
    }

    /// Serialise to YAML.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).unwrap_or_else(|e| format!("# could not serialise card: {e}\n"))
    }

    /// Write to a file (atomically: temp file + rename).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("yaml.tmp");
        std::fs::write(&tmp, self.to_yaml())?;
        std::fs::rename(&tmp, path)
    }

    /// Every semantic problem (unknown kinds, bad params, bad general
    /// settings), each with its field path. Used live by the studio's editor;
    /// [`Card::check`] is the same check, keeping what it decoded.
    pub fn validate(&self, registry: &Registry) -> Vec<Problem> {
        let mut out = self.settings_problems();
        out.extend(self.check_slots(registry).1);
        out
    }

    /// Check the card once: every slot's kind is looked up and its parameters
    /// are checked and decoded into the component's typed parameters, which a
    /// run builds the component from (nothing is checked again).
    pub fn check(self, registry: &Registry) -> Result<ValidCard, Vec<Problem>> {
        let mut problems = self.settings_problems();
        let (slots, slot_problems) = self.check_slots(registry);
        problems.extend(slot_problems);
        if problems.is_empty() {
            Ok(ValidCard { card: self, slots })
        } else {
            Err(problems)
        }
    }

    /// Each slot checked through the registry: what decoded, and the problems.
    fn check_slots(&self, registry: &Registry) -> (BTreeMap<Slot, Configured>, Vec<Problem>) {
        let mut slots = BTreeMap::new();
        let mut out = Vec::new();
        for slot in Slot::ALL {
            let spec = self.slot(slot);
            match registry.entry(slot, &spec.kind) {
                Err(e) => out.push(Problem::new(
                    &format!("{}.kind", slot.key()),
                    &e.to_string(),
                )),
                Ok(entry) => match entry.check(&spec.params) {
                    Ok(configured) => {
                        slots.insert(slot, configured);
                    }
                    Err(errors) => {
                        for e in errors {
                            let field = if e.key.is_empty() {
                                slot.key().to_owned()
                            } else {
                                format!("{}.{}", slot.key(), e.key)
                            };
                            // a parameter the block does not take: its key
                            // is what is wrong
                            let top = e.key.split(['.', '[']).next().unwrap_or_default();
                            let known = entry.info.params.iter().any(|p| p.key == top);
                            out.push(if e.key.is_empty() || known {
                                Problem::new(&field, &e.reason)
                            } else {
                                Problem::at_key(&field, &e.reason)
                            });
                        }
                    }
                },
            }
        }
        // blocks that do not go together (beam selection without a beam);
        // a block of an unknown kind is its own error, not a conflict
        for conflict in registry
            .conflicts(|slot| self.slot(slot).kind.as_str())
            .into_iter()
            .filter(|c| c.other_type_name.is_some())
        {
            slots.remove(&conflict.slot);
            out.push(Problem::new(
                &format!("{}.kind", conflict.slot.key()),
                &conflict.to_string(),
            ));
        }
        (slots, out)
    }

    /// Problems of everything but the slots: name, namespace, `general`,
    /// `llm`.
    fn settings_problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if self.name.trim().is_empty() {
            out.push(Problem::new("name", "must not be empty"));
        } else if !self
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            out.push(Problem::new(
                "name",
                "use letters, digits, `_` or `-` only (it names files and hub folders)",
            ));
        }
        if !self
            .namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || self.namespace.is_empty()
        {
            out.push(Problem::new(
                "namespace",
                "use letters, digits, `_` or `-` only",
            ));
        }
        let g = &self.general;
        if g.max_iterations == 0 {
            out.push(Problem::new("general.max_iterations", "must be at least 1"));
        }
        if g.max_iterations > 10_000_000 {
            out.push(Problem::new(
                "general.max_iterations",
                "must be at most 10000000",
            ));
        }
        if g.inner_retry_times > 100 {
            out.push(Problem::new(
                "general.inner_retry_times",
                "must be at most 100",
            ));
        }
        if g.parallel == 0 || g.parallel > 256 {
            out.push(Problem::new(
                "general.parallel",
                "must be between 1 and 256",
            ));
        }
        if let Some(c) = g.max_cost_usd
            && !(c.is_finite() && c > 0.0)
        {
            out.push(Problem::new(
                "general.max_cost_usd",
                "must be a positive number",
            ));
        }
        if g.max_tokens == Some(0) {
            out.push(Problem::new("general.max_tokens", "must be at least 1"));
        }
        let (lo, hi) = RESPONSE_BYTES_RANGE;
        if !(lo..=hi).contains(&g.max_response_bytes) {
            out.push(Problem::new(
                "general.max_response_bytes",
                &format!("must be between {lo} and {hi}"),
            ));
        }
        out.extend(g.stop.problems());
        if g.objectives.len() == 1 {
            out.push(Problem::new(
                "general.objectives",
                "name two or more objectives (one is the fitness: leave it out)",
            ));
        }
        for (metric, value) in &g.reference_point {
            if !g.objectives.contains_key(metric) {
                out.push(Problem::at_key(
                    &format!("general.reference_point.{metric}"),
                    "not one of general.objectives",
                ));
            } else if !value.is_finite() {
                out.push(Problem::new(
                    &format!("general.reference_point.{metric}"),
                    "must be a finite number",
                ));
            }
        }
        if let Some(novelty) = &g.novelty {
            out.extend(novelty.problems());
        }
        if let Some(llm) = &self.llm {
            for (i, m) in llm.models.iter().enumerate() {
                if m.name.trim().is_empty() {
                    out.push(Problem::new(
                        &format!("llm.models[{i}].name"),
                        "must not be empty",
                    ));
                }
                if !(m.weight.is_finite() && m.weight > 0.0) {
                    out.push(Problem::new(
                        &format!("llm.models[{i}].weight"),
                        "must be a positive number",
                    ));
                }
                if let Some(t) = m.temperature
                    && !(0.0..=2.0).contains(&t)
                {
                    out.push(Problem::new(
                        &format!("llm.models[{i}].temperature"),
                        "must be between 0 and 2",
                    ));
                }
            }
            if let Some(t) = llm.temperature
                && !(0.0..=2.0).contains(&t)
            {
                out.push(Problem::new("llm.temperature", "must be between 0 and 2"));
            }
            if let Some(bandit) = &llm.bandit {
                for (field, message) in bandit.problems() {
                    out.push(Problem::new(&format!("llm.bandit.{field}"), message));
                }
            }
        }
        out
    }
}

/// A card that passed every check, with each slot's parameters decoded into
/// its component's typed parameters: what a run is built from.
#[derive(Clone, Debug)]
pub struct ValidCard {
    card: Card,
    slots: BTreeMap<Slot, Configured>,
}

impl ValidCard {
    /// Parse and check YAML text; `origin` names the file in errors. Every
    /// error comes in this one pass, in the order of the file.
    pub fn from_yaml(text: &str, origin: &str, registry: &Registry) -> Result<Self, CardErrors> {
        let spans = Spans::of(text);
        let located = |field: String, message: String, anchor: Anchor| {
            let (line, col) = anchor.position(&spans, &field);
            CardError {
                origin: origin.to_owned(),
                line,
                col,
                field,
                message,
            }
        };
        let de = serde_yaml::Deserializer::from_str(text);
        let first = match serde_path_to_error::deserialize::<_, Card>(de) {
            Ok(card) => {
                return card.check(registry).map_err(|problems| {
                    let mut errors: Vec<CardError> = problems
                        .into_iter()
                        .map(|p| located(p.field, p.message, p.anchor))
                        .collect();
                    // in the order of the file (stable: one line's errors keep theirs)
                    errors.sort_by_key(|e| (e.line, e.col));
                    CardErrors(errors)
                });
            }
            Err(e) => e,
        };
        // serde's first error, where it found it
        let path = first.path().to_string();
        let inner = first.into_inner();
        let location = inner.location().map(|l| (l.line(), l.column()));
        let first = errors::shape_error(path, inner.to_string());
        // Not a card as it stands: read as a YAML value, every error of its
        // shape is found and the card it then decodes into is checked.
        let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(text) else {
            // not YAML: the first error alone
            let anchor = first.anchor();
            let mut error = located(first.field, first.message, anchor);
            if let Some((line, col)) = location {
                (error.line, error.col) = (line, col);
            }
            return Err(CardErrors(vec![error]));
        };
        let (mut shape, card) = errors::shape_errors(value);
        // Read from the text, serde says more of some values than the YAML
        // value keeps (an integer too large for any type): its words win.
        match shape.iter_mut().find(|e| e.field == first.field) {
            Some(e) if e.kind == first.kind => e.message = first.message,
            Some(_) => {}
            None => shape.push(first),
        }
        let mut all: Vec<CardError> = Vec::new();
        let in_error: Vec<String> = shape.iter().map(|e| e.field.clone()).collect();
        for e in shape {
            let anchor = e.anchor();
            all.push(located(e.field, e.message, anchor));
        }
        if let Some(card) = card
            && let Err(problems) = card.check(registry)
        {
            // what a shape error is about is said once
            all.extend(
                problems
                    .into_iter()
                    .filter(|p| !in_error.iter().any(|e| within(&p.field, e)))
                    .map(|p| located(p.field, p.message, p.anchor)),
            );
        }
        all.sort_by_key(|e| (e.line, e.col));
        Err(CardErrors(all))
    }

    /// Load and check a card file.
    pub fn load(path: &Path, registry: &Registry) -> Result<Self, CardErrors> {
        let origin = path.display().to_string();
        // a card file may come from anywhere: regular, read without
        // blocking, capped
        let text =
            crate::engine::foreign::read_named_text(path, crate::engine::foreign::Limit::CARD)
                .map_err(|e| {
                    CardErrors(vec![CardError {
                        origin: origin.clone(),
                        line: 0,
                        col: 0,
                        field: String::new(),
                        message: format!("cannot read: {}", e.why),
                    }])
                })?;
        Self::from_yaml(&text, &origin, registry)
    }

    /// This card with another provenance (nothing else is checked again).
    #[must_use]
    pub fn with_provenance(mut self, provenance: Option<Provenance>) -> Self {
        self.card.provenance = provenance;
        self
    }

    /// The card.
    pub fn card(&self) -> &Card {
        &self.card
    }

    /// The card, giving up what was decoded.
    pub fn into_card(self) -> Card {
        self.card
    }

    /// What each block that runs processes lets them reach, in slot order
    /// (see [`crate::engine::sandbox::lowered`]).
    pub fn reaches(&self) -> Vec<(Slot, crate::engine::component::Reach)> {
        Slot::ALL
            .into_iter()
            .filter_map(|slot| Some((slot, self.slots.get(&slot)?.reach()?)))
            .collect()
    }

    /// The checked block of `slot`.
    pub fn configured(&self, slot: Slot) -> Option<&crate::engine::registry::Configured> {
        self.slots.get(&slot)
    }

    /// Build the component of `S`'s slot (`dyn Population`, ...) from its
    /// decoded parameters.
    pub fn build<S: ?Sized + SlotTrait>(
        &self,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<S>, RegistryError> {
        let configured = self
            .slots
            .get(&S::SLOT)
            .ok_or_else(|| RegistryError::UnknownKind {
                slot: S::SLOT,
                kind: self.card.slot(S::SLOT).kind.clone(),
                available: Vec::new(),
            })?;
        configured.build(ctx)
    }

    /// Change the loop settings and the seed (a command line's
    /// `--iterations`, `--seed`, `--parallel`); only they are checked again.
    pub fn with_settings(
        mut self,
        change: impl FnOnce(&mut General, &mut u64),
    ) -> Result<Self, Vec<Problem>> {
        change(&mut self.card.general, &mut self.card.seed);
        let problems = self.card.settings_problems();
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// A problem found by [`Card::validate`]: a field path, the reason, and
/// what of the field is wrong (where its position points).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub message: String,
    pub anchor: Anchor,
}

impl Problem {
    /// A problem with the field's value.
    pub fn new(field: &str, message: &str) -> Self {
        Self {
            field: field.to_owned(),
            message: message.to_owned(),
            anchor: Anchor::Value,
        }
    }

    /// A problem with the key itself (one the card does not take).
    pub fn at_key(field: &str, message: &str) -> Self {
        Self {
            anchor: Anchor::Key,
            ..Self::new(field, message)
        }
    }
}

/// What of a field an error is about, and so where its `line:col` points
/// (the rule is in the module's documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Anchor {
    /// The value is wrong: the value's position.
    #[default]
    Value,
    /// The key is wrong (unknown, misspelt): the key's position.
    Key,
    /// The key is missing: the key of the mapping it belongs in (the start
    /// of the card for a top-level key).
    Parent,
}

impl Anchor {
    /// The position of `field` in a card whose keys and values are at
    /// `spans` (`(1, 1)` when the card does not have it).
    pub fn position(self, spans: &Spans, field: &str) -> (usize, usize) {
        let pos = match self {
            Anchor::Value => spans.value(field),
            Anchor::Key => spans.find(field),
            Anchor::Parent => field
                .rfind(['.', '['])
                .and_then(|cut| spans.find(&field[..cut])),
        };
        pos.unwrap_or((1, 1))
    }
}

/// Whether `field` is `error` or inside it (`memory.kind` inside `memory`).
fn within(field: &str, error: &str) -> bool {
    field == error
        || field
            .strip_prefix(error)
            .is_some_and(|rest| rest.starts_with(['.', '[']))
}

/// One card error with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardError {
    /// The file (or other origin) the card came from.
    pub origin: String,
    /// 1-based line (0 when not about a position, e.g. unreadable file).
    pub line: usize,
    pub col: usize,
    /// Dotted field path (`selection_policy.best_of_n`), empty for the whole card.
    pub field: String,
    pub message: String,
}

impl fmt::Display for CardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}:{}: ", self.origin, self.line, self.col)?;
        } else {
            write!(f, "{}: ", self.origin)?;
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

/// Every error of a card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardErrors(pub Vec<CardError>);

impl fmt::Display for CardErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CardErrors {}
