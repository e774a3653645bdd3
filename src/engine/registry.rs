//! The registry: a table of every implementation, one `Entry::of::<T>()` line
//! per component, filled explicitly in [`Registry::builtin`] and nowhere
//! else. From a component's [`Component`] impl an entry derives its defaults
//! (`Params::default()`), how a card's block is checked into typed parameters
//! and how the component is built from them. An unknown kind is an error that
//! lists the known kinds of that slot.
//!
//! - `registry.rs` is a table: `Registry::builtin()` lists `Entry::of::<T>()` for every
//!   implementation and is the only place components are registered (no registration by side
//!   effect). `Registry::register` adds one more (a test double) and refuses a kind already taken
//!   in that slot.
//! - One test (`engine::registry::tests`) covers the whole table: the table's keys equal the fields
//!   of `Params`, every default is inside its own type and range, a block that omits a key runs
//!   with exactly the default the table shows, kinds are unique per slot, every kind round-trips
//!   through a card, and every kind lives in `engine/<slot folder>/<kind>.rs`.

use std::any::Any;
use std::sync::Arc;

pub use crate::engine::component::Conflict;
use crate::engine::component::{
    BuildContext, Component, ComponentInfo, Feature, Fills, Need, Reach, RegistryError, Slot,
    SlotTrait,
};
use crate::engine::evaluator::{CommandEvaluator, SlurmEvaluator, SubprocessEvaluator};
use crate::engine::memory::{NoneMemory, ScratchpadMemory};
use crate::engine::params::{ParamError, ParamMap, ParamValue};
use crate::engine::population::{BeamPopulation, InMemoryPopulation, IslandsPopulation};
use crate::engine::prompt::DefaultPromptBuilder;
use crate::engine::proposer::{AgentProposer, CrossoverProposer, DiffProposer};
use crate::engine::selection::{
    BeamPolicy, BestOfNAttemptsPolicy, BestOfNPolicy, ExploreExploitPolicy, IdentityPolicy,
    ParetoPolicy, TopKPolicy, UcbIslandsPolicy, WeightedPolicy,
};

/// A component's decoded `Params`, type-erased so one table holds every kind.
type TypedParams = Arc<dyn Any + Send + Sync>;
/// Checked parameters → the component, boxed as its slot trait object
/// (`Box<dyn Population>`), itself boxed as `Any`.
type BuildFn =
    fn(&(dyn Any + Send + Sync), &BuildContext<'_>) -> Result<Box<dyn Any + Send>, ParamError>;
type CheckFn = fn(&ParamMap) -> Result<TypedParams, Vec<ParamError>>;
/// Checked parameters → the component built without a run
/// ([`Component::detached`]), boxed like [`BuildFn`]'s.
type DetachedFn = fn(&(dyn Any + Send + Sync)) -> Option<Box<dyn Any + Send>>;
type EffectiveFn = fn(&ParamMap) -> Result<ParamMap, ParamError>;
/// Checked parameters → what the block's processes reach ([`Component::reach`]).
type ReachFn = fn(&(dyn Any + Send + Sync)) -> Option<Reach>;

/// One registered implementation.
pub struct Entry {
    /// The slot it fills.
    pub slot: Slot,
    pub info: ComponentInfo,
    /// Every parameter's default, from the component's `Params::default()`.
    pub defaults: ParamMap,
    /// What it keeps that blocks of other slots may rely on.
    pub provides: &'static [Feature],
    /// What it needs from the blocks of other slots.
    pub needs: &'static [Need],
    /// Whether its parameters may change in flight ([`Component::LIVE`]).
    pub live: bool,
    check: CheckFn,
    effective: EffectiveFn,
    build: BuildFn,
    detached: DetachedFn,
    reach: ReachFn,
    /// The Rust paths of the component's type and of its parameters' type,
    /// for the naming rule's test.
    #[cfg(test)]
    rust_names: [&'static str; 2],
}

impl Entry {
    /// The entry of component `T`.
    pub fn of<T>() -> Self
    where
        T: Component + Fills<T::Slot>,
    {
        Self {
            slot: <T::Slot as SlotTrait>::SLOT,
            info: T::INFO,
            defaults: defaults_of::<T::Params>(),
            provides: T::PROVIDES,
            needs: T::NEEDS,
            live: T::LIVE,
            check: check_params::<T>,
            effective: effective_params::<T::Params>,
            build: build_component::<T>,
            detached: detached_component::<T>,
            reach: reach_of::<T>,
            #[cfg(test)]
            rust_names: [
                std::any::type_name::<T>(),
                std::any::type_name::<T::Params>(),
            ],
        }
    }

    /// The default of `key` (`None` for a key the component does not take).
    pub fn default_of(&self, key: &str) -> Option<&ParamValue> {
        self.defaults.get(key)
    }

    /// The value of `key` in `params`, or its default.
    pub fn value_or_default(&self, params: &ParamMap, key: &str) -> ParamValue {
        params
            .get(key)
            .or_else(|| self.default_of(key))
            .cloned()
            .unwrap_or(ParamValue::Null)
    }

    /// The parameters the component runs with for this card block: every
    /// key, omitted ones at their default (the block decoded into `Params`
    /// and written back).
    pub fn effective(&self, params: &ParamMap) -> Result<ParamMap, ParamError> {
        (self.effective)(params)
    }

    /// Check a card block's parameters against the table (unknown keys,
    /// types, ranges: every problem), decode them and run the component's own
    /// cross-parameter check. The result builds the component without further
    /// checks.
    pub fn check(&self, params: &ParamMap) -> Result<Configured, Vec<ParamError>> {
        Ok(Configured {
            slot: self.slot,
            kind: self.info.kind,
            params: (self.check)(params)?,
            live: self.live,
            build: self.build,
            detached: self.detached,
            reach: self.reach,
        })
    }
}

fn reach_of<T: Component>(params: &(dyn Any + Send + Sync)) -> Option<Reach> {
    T::reach(params.downcast_ref::<T::Params>()?)
}

/// `Params::default()` as a parameter map.
fn defaults_of<P: serde::Serialize + Default>() -> ParamMap {
    to_param_map(&P::default())
}

/// Typed parameters as a parameter map (empty when they do not serialise to a
/// map of plain values; the registry test catches that).
fn to_param_map<P: serde::Serialize>(params: &P) -> ParamMap {
    let mut map = ParamMap::default();
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(params) {
        for (key, value) in &fields {
            if let Some(v) = ParamValue::from_json(value) {
                map.set(key, v);
            }
        }
    }
    map
}

fn effective_params<P>(params: &ParamMap) -> Result<ParamMap, ParamError>
where
    P: serde::Serialize + serde::de::DeserializeOwned,
{
    let typed: P = params.decode()?;
    Ok(to_param_map(&typed))
}

fn check_params<T: Component>(params: &ParamMap) -> Result<TypedParams, Vec<ParamError>> {
    let errors = params.validate(T::INFO.params);
    if !errors.is_empty() {
        return Err(errors);
    }
    let typed: T::Params = params.decode().map_err(|e| vec![e])?;
    T::check(&typed).map_err(|e| vec![e])?;
    Ok(Arc::new(typed))
}

fn build_component<T>(
    params: &(dyn Any + Send + Sync),
    ctx: &BuildContext<'_>,
) -> Result<Box<dyn Any + Send>, ParamError>
where
    T: Component + Fills<T::Slot>,
{
    let params = params
        .downcast_ref::<T::Params>()
        .ok_or_else(|| ParamError {
            key: String::new(),
            reason: format!(
                "parameters of another component given to `{}`",
                T::INFO.kind
            ),
        })?
        .clone();
    let built: Box<T::Slot> = T::build(params, ctx)?.boxed();
    Ok(Box::new(built))
}

fn detached_component<T>(params: &(dyn Any + Send + Sync)) -> Option<Box<dyn Any + Send>>
where
    T: Component + Fills<T::Slot>,
{
    let params = params.downcast_ref::<T::Params>()?.clone();
    let built: Box<T::Slot> = T::detached(params)?.boxed();
    Some(Box::new(built))
}

/// One slot's implementation with its parameters checked and decoded: what a
/// run builds the component from.
#[derive(Clone)]
pub struct Configured {
    pub slot: Slot,
    pub kind: &'static str,
    /// Whether a paused run may rebuild it from new parameters.
    pub live: bool,
    params: TypedParams,
    build: BuildFn,
    detached: DetachedFn,
    reach: ReachFn,
}

impl std::fmt::Debug for Configured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Configured")
            .field("slot", &self.slot)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Configured {
    /// Build the component as its slot trait object (`S` must be the slot's
    /// trait object, e.g. `dyn Population`).
    pub fn build<S: ?Sized + SlotTrait>(
        &self,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<S>, RegistryError> {
        let slot = self.slot;
        let built = (self.build)(&*self.params, ctx)
            .map_err(|error| RegistryError::Param { slot, error })?;
        built
            .downcast::<Box<S>>()
            .map(|b| *b)
            .map_err(|_| RegistryError::Param {
                slot,
                error: ParamError {
                    key: String::new(),
                    reason: format!("`{}` does not fill the {} slot", self.kind, S::SLOT),
                },
            })
    }
    /// What the block's processes reach ([`Component::reach`]; `None`: it
    /// starts none).
    pub fn reach(&self) -> Option<Reach> {
        (self.reach)(&*self.params)
    }

    /// Build the component without a run around it
    /// ([`Component::detached`]); `None` for a block that needs a run (or
    /// when `S` is not its slot's trait object).
    pub fn detached<S: ?Sized + SlotTrait>(&self) -> Option<Box<S>> {
        (self.detached)(&*self.params)?
            .downcast::<Box<S>>()
            .ok()
            .map(|b| *b)
    }
}

/// Every implementation, as a table.
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// The built-in implementations, registered explicitly here and nowhere else.
    pub fn builtin() -> Self {
        Self {
            entries: vec![
                Entry::of::<InMemoryPopulation>(),
                Entry::of::<BeamPopulation>(),
                Entry::of::<IslandsPopulation>(),
                Entry::of::<BestOfNPolicy>(),
                Entry::of::<BestOfNAttemptsPolicy>(),
                Entry::of::<BeamPolicy>(),
                Entry::of::<TopKPolicy>(),
                Entry::of::<ExploreExploitPolicy>(),
                Entry::of::<UcbIslandsPolicy>(),
                Entry::of::<IdentityPolicy>(),
                Entry::of::<WeightedPolicy>(),
                Entry::of::<ParetoPolicy>(),
                Entry::of::<DefaultPromptBuilder>(),
                Entry::of::<DiffProposer>(),
                Entry::of::<CrossoverProposer>(),
                Entry::of::<AgentProposer>(),
                Entry::of::<crate::engine::proposer::AgentCommandProposer>(),
                Entry::of::<SubprocessEvaluator>(),
                Entry::of::<CommandEvaluator>(),
                Entry::of::<SlurmEvaluator>(),
                Entry::of::<NoneMemory>(),
                Entry::of::<ScratchpadMemory>(),
            ],
        }
    }

    /// A registry with nothing in it (fill it with [`Registry::register`]).
    pub fn empty() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Add an implementation (e.g. a test double); a kind already registered
    /// in the same slot is refused.
    pub fn register(&mut self, entry: Entry) -> Result<(), RegistryError> {
        if self
            .entries
            .iter()
            .any(|e| e.slot == entry.slot && e.info.kind == entry.info.kind)
        {
            return Err(RegistryError::DuplicateKind {
                slot: entry.slot,
                kind: entry.info.kind,
            });
        }
        self.entries.push(entry);
        Ok(())
    }

    /// Every entry, in registration order.
    pub fn all(&self) -> &[Entry] {
        &self.entries
    }

    /// One slot's entries, in registration order.
    pub fn entries(&self, slot: Slot) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.slot == slot)
    }

    /// The entry of `kind` in `slot`, or the unknown-kind error.
    pub fn entry(&self, slot: Slot, kind: &str) -> Result<&Entry, RegistryError> {
        self.entries(slot)
            .find(|e| e.info.kind == kind)
            .ok_or_else(|| RegistryError::UnknownKind {
                slot,
                kind: kind.to_owned(),
                available: self.entries(slot).map(|e| e.info.kind).collect(),
            })
    }

    /// Every pair of blocks that do not go together when each slot holds
    /// `kind_of(slot)`: the one compatibility rule, used by card checking,
    /// `galapagos validate`, and the studio's status, palette and Start run.
    /// Unknown kinds are skipped (they are an error of their own).
    pub fn conflicts<'k>(&self, kind_of: impl Fn(Slot) -> &'k str) -> Vec<Conflict> {
        let mut out = Vec::new();
        for slot in Slot::ALL {
            let Ok(entry) = self.entry(slot, kind_of(slot)) else {
                continue;
            };
            for need in entry.needs {
                let other_kind = kind_of(need.slot);
                let other = self.entry(need.slot, other_kind).ok();
                if other.is_some_and(|o| o.provides.contains(&need.feature)) {
                    continue;
                }
                out.push(Conflict {
                    slot,
                    kind: entry.info.kind,
                    type_name: entry.info.type_name,
                    need: *need,
                    other_kind: other_kind.to_owned(),
                    other_type_name: other.map(|o| o.info.type_name),
                    fix: self.provider(need.slot, need.feature),
                });
            }
        }
        out
    }

    /// Whether the block `kind` of `slot` provides `feature` (false for an
    /// unknown kind): how code outside the components learns what a block
    /// does without comparing its kind.
    pub fn provides(&self, slot: Slot, kind: &str, feature: Feature) -> bool {
        self.entry(slot, kind)
            .is_ok_and(|e| e.provides.contains(&feature))
    }

    /// The first kind of `slot` that provides `feature`, with its type name.
    pub fn provider(&self, slot: Slot, feature: Feature) -> Option<(&'static str, &'static str)> {
        self.entries(slot)
            .find(|e| e.provides.contains(&feature))
            .map(|e| (e.info.kind, e.info.type_name))
    }

    /// The other slots to switch so that putting `kind` into `slot` leaves no
    /// conflict, given the other slots' kinds `kind_of` (the studio's "also
    /// switch Population to BeamPopulation"): a slot whose block `kind` needs
    /// something from gets the first kind that provides it; a slot whose
    /// block needs what `kind` takes away gets the first kind of its slot
    /// that fits. Empty when `kind` fits as it is (or when nothing would).
    pub fn companions<'k>(
        &self,
        slot: Slot,
        kind: &str,
        kind_of: impl Fn(Slot) -> &'k str,
    ) -> Vec<(Slot, &'static str)> {
        let mut kinds: Vec<(Slot, String)> = Slot::ALL
            .iter()
            .map(|s| {
                let k = if *s == slot { kind } else { kind_of(*s) };
                (*s, k.to_owned())
            })
            .collect();
        let mut changes: Vec<(Slot, &'static str)> = Vec::new();
        // each round fixes one slot for good; six rounds and a last check
        for _ in 0..=Slot::ALL.len() {
            let current = |s: Slot| {
                kinds
                    .iter()
                    .find(|(k, _)| *k == s)
                    .map_or("", |(_, v)| v.as_str())
            };
            let Some(conflict) = self.conflicts(current).into_iter().next() else {
                return changes;
            };
            let change = if conflict.slot == slot {
                conflict.fix.map(|(k, _)| (conflict.need.slot, k))
            } else {
                self.entries(conflict.slot)
                    .find(|e| {
                        e.needs.iter().all(|n| {
                            self.entry(n.slot, current(n.slot))
                                .is_ok_and(|o| o.provides.contains(&n.feature))
                        })
                    })
                    .map(|e| (conflict.slot, e.info.kind))
            };
            let Some((to_slot, to_kind)) = change.filter(|(s, _)| *s != slot) else {
                return Vec::new();
            };
            if let Some(entry) = kinds.iter_mut().find(|(s, _)| *s == to_slot) {
                entry.1 = to_kind.to_owned();
            }
            changes.retain(|(s, _)| *s != to_slot);
            changes.push((to_slot, to_kind));
        }
        Vec::new()
    }

    /// Look `kind` up in `S`'s slot, check `params` and build it.
    pub fn build<S: ?Sized + SlotTrait>(
        &self,
        kind: &str,
        params: &ParamMap,
        ctx: &BuildContext<'_>,
    ) -> Result<Box<S>, RegistryError> {
        let slot = S::SLOT;
        let configured =
            self.entry(slot, kind)?
                .check(params)
                .map_err(|errors| RegistryError::Param {
                    slot,
                    error: errors.into_iter().next().unwrap_or_else(|| ParamError {
                        key: String::new(),
                        reason: "invalid parameters".to_owned(),
                    }),
                })?;
        configured.build(ctx)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::engine::card::{Card, SlotSpec};
    use crate::engine::params::{ParamSpec, ParamType, check_value};

    /// A range is well formed: `min <= max`, both finite for floats.
    fn sane_range(spec: &ParamSpec) -> bool {
        match spec.ty {
            ParamType::Int { min, max } | ParamType::OptionalInt { min, max } => min <= max,
            ParamType::Float { min, max }
            | ParamType::OptionalFloat { min, max }
            | ParamType::FloatList { min, max } => min.is_finite() && max.is_finite() && min <= max,
            ParamType::Choice(options) => !options.is_empty(),
            ParamType::Bool | ParamType::Text | ParamType::TextList => true,
        }
    }

    /// The whole table: for every entry, its keys, defaults and ranges agree
    /// with its typed parameters; kinds are unique per slot; every kind
    /// round-trips through a card; and every population builds detached.
    #[test]
    fn every_entry_agrees_with_its_params_and_round_trips_through_a_card() {
        let registry = Registry::builtin();
        let mut kinds = BTreeSet::new();
        for entry in registry.all() {
            let info = entry.info;
            let name = format!("{}.{}", entry.slot, info.kind);
            assert!(
                kinds.insert((entry.slot, info.kind)),
                "{name}: kind registered twice"
            );
            assert!(
                !info.kind.is_empty()
                    && info
                        .kind
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{name}: a kind is snake_case"
            );
            assert!(
                !info.type_name.is_empty() && !info.summary.trim().is_empty(),
                "{name}"
            );

            // keys: the table's keys are exactly the typed struct's fields
            let table: BTreeSet<&str> = info.params.iter().map(|p| p.key).collect();
            assert_eq!(
                table.len(),
                info.params.len(),
                "{name}: a key is listed twice"
            );
            let typed: BTreeSet<&str> = entry.defaults.0.keys().map(String::as_str).collect();
            assert_eq!(
                table, typed,
                "{name}: the table's keys differ from Params' fields"
            );

            for spec in info.params {
                assert!(
                    sane_range(spec),
                    "{name}.{}: bad range {:?}",
                    spec.key,
                    spec.ty
                );
                assert!(!spec.doc.trim().is_empty(), "{name}.{}: no doc", spec.key);
                let default = entry
                    .default_of(spec.key)
                    .cloned()
                    .unwrap_or(ParamValue::Null);
                assert!(
                    check_value(spec.ty, &default).is_ok(),
                    "{name}.{}: the default {} is outside its own type/range",
                    spec.key,
                    default.display()
                );
            }

            // defaults: a block that omits every key runs with exactly the
            // defaults the table shows (`Params::default()`), and writing
            // them out explicitly changes nothing
            assert_eq!(
                entry.effective(&ParamMap::default()),
                Ok(entry.defaults.clone()),
                "{name}: an omitted key does not decode to Params::default()"
            );
            assert_eq!(
                entry.effective(&entry.defaults),
                Ok(entry.defaults.clone()),
                "{name}: the defaults written out do not decode to themselves"
            );

            // a card with this kind (defaults written out) loads, checks and
            // writes back unchanged
            let mut card = Card::new_default("registry_test");
            // with the blocks it needs beside it (a beam policy, a beam)
            let companions = registry.companions(entry.slot, info.kind, default_kind);
            for (slot, kind) in companions {
                *card.slot_mut(slot) = SlotSpec::new(kind);
            }
            *card.slot_mut(entry.slot) = SlotSpec {
                kind: info.kind.to_owned(),
                params: entry.defaults.clone(),
            };
            let yaml = card.to_yaml();
            let back = Card::from_yaml(&yaml, "registry_test.yaml", &registry)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{yaml}"));
            assert_eq!(back, card, "{name}: the card did not round-trip");
            assert_eq!(
                Card::from_yaml(&back.to_yaml(), "again", &registry),
                Ok(card)
            );

            // a population is built from its parameters alone, so the
            // studio can replay it from a card
            if entry.slot == Slot::Population {
                let checked = entry
                    .check(&entry.defaults)
                    .unwrap_or_else(|e| panic!("{name}: {e:?}"));
                assert!(
                    checked
                        .detached::<dyn crate::engine::population::Population>()
                        .is_some(),
                    "{name}: a population must build detached (Component::detached)"
                );
            }
        }
        for slot in Slot::ALL {
            assert!(
                registry.entries(slot).next().is_some(),
                "{slot}: nothing registered"
            );
        }
    }

    /// One file per implementation, named after its card kind:
    /// `src/engine/<slot folder>/<kind>.rs` (or `<kind>/mod.rs`).
    #[test]
    fn every_kind_lives_in_a_file_of_its_name() {
        let engine = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
        for entry in Registry::builtin().all() {
            let folder = match entry.slot {
                Slot::Population => "population",
                Slot::SelectionPolicy => "selection",
                Slot::PromptBuilder => "prompt",
                Slot::Proposer => "proposer",
                Slot::Evaluator => "evaluator",
                Slot::Memory => "memory",
            };
            let dir = engine.join(folder);
            let kind = entry.info.kind;
            assert!(
                dir.join(format!("{kind}.rs")).is_file() || dir.join(kind).join("mod.rs").is_file(),
                "{}: kind `{kind}` has no file {folder}/{kind}.rs",
                entry.slot
            );
        }
    }

    /// Names follow the card kind: a component's type is its kind in
    /// CamelCase followed by its slot's word (`ucb_islands` →
    /// `UcbIslandsPolicy`, `none` → `NoneMemory`), the name the studio's
    /// palette shows beside the kind; its parameters' type starts with the
    /// kind (`UcbIslandsParams`), unless it takes none (`NoParams`).
    #[test]
    fn type_names_follow_the_kind() {
        let last = |path: &'static str| path.rsplit("::").next().unwrap_or(path);
        for entry in Registry::builtin().all() {
            // The slot's word: SelectionPolicy's is Policy.
            let word = entry.slot.title().trim_start_matches("Selection");
            let (kind, name) = (entry.info.kind, entry.info.type_name);
            let joined = kind.replace('_', "");
            assert!(
                name.starts_with(|c: char| c.is_ascii_uppercase())
                    && name.chars().all(|c| c.is_ascii_alphanumeric())
                    && name.to_lowercase() == format!("{joined}{}", word.to_lowercase()),
                "kind `{kind}` is named {name}, not its kind in CamelCase followed by {word}"
            );
            let [rust, params] = entry.rust_names.map(last);
            assert_eq!(rust, name, "kind `{kind}`");
            assert!(
                params == "NoParams"
                    || (params.to_lowercase().starts_with(&joined) && params.ends_with("Params")),
                "kind `{kind}` takes {params}, which does not start with its kind"
            );
        }
    }

    /// The kind of each slot in `Card::new_default`.
    fn default_kind(slot: Slot) -> &'static str {
        match slot {
            Slot::Population => "in_memory",
            Slot::SelectionPolicy => "best_of_n",
            Slot::PromptBuilder => "default",
            Slot::Proposer => "diff",
            Slot::Evaluator => "subprocess",
            Slot::Memory => "none",
        }
    }

    fn kinds(list: &[(Slot, &'static str)]) -> impl Fn(Slot) -> &'static str {
        let list = list.to_vec();
        move |slot| {
            list.iter()
                .find(|(s, _)| *s == slot)
                .map_or_else(|| default_kind(slot), |(_, k)| k)
        }
    }

    /// The one compatibility rule: what a block needs, what the other slot's
    /// block provides, the message naming both and the fix.
    #[test]
    fn beam_selection_needs_a_beam_population_and_says_how_to_fix_it() {
        let registry = Registry::builtin();
        assert!(registry.conflicts(kinds(&[])).is_empty());
        let conflicts = registry.conflicts(kinds(&[(Slot::SelectionPolicy, "beam")]));
        assert_eq!(conflicts.len(), 1);
        assert_eq!(
            conflicts[0].to_string(),
            "BeamPolicy (selection_policy `beam`) needs a beam population, but population \
             is `in_memory` (InMemoryPopulation); switch population to `beam` (BeamPopulation), or \
             pick another selection policy"
        );
        assert!(
            registry
                .conflicts(kinds(&[
                    (Slot::SelectionPolicy, "beam"),
                    (Slot::Population, "beam")
                ]))
                .is_empty()
        );
        let islands = registry.conflicts(kinds(&[(Slot::SelectionPolicy, "ucb_islands")]));
        assert_eq!(islands.len(), 1);
        assert_eq!(islands[0].fix, Some(("islands", "IslandsPopulation")));
        // an unknown kind is its own error, not a conflict
        assert!(
            registry
                .conflicts(kinds(&[(Slot::Population, "nope")]))
                .is_empty()
        );

        // the palette's companions: picking beam selection also switches the
        // population; picking a flat population under beam selection also
        // switches the policy back to one that fits
        let card = kinds(&[]);
        assert_eq!(
            registry.companions(Slot::SelectionPolicy, "beam", &card),
            vec![(Slot::Population, "beam")]
        );
        assert!(
            registry
                .companions(Slot::SelectionPolicy, "topk", &card)
                .is_empty()
        );
        let beam = kinds(&[(Slot::SelectionPolicy, "beam"), (Slot::Population, "beam")]);
        assert_eq!(
            registry.companions(Slot::Population, "in_memory", &beam),
            vec![(Slot::SelectionPolicy, "best_of_n")]
        );
        assert_eq!(
            registry.companions(Slot::Population, "islands", &beam),
            vec![(Slot::SelectionPolicy, "best_of_n")]
        );
        assert!(
            registry
                .companions(Slot::Population, "beam", &beam)
                .is_empty()
        );
    }

    #[test]
    fn a_card_with_blocks_that_do_not_go_together_is_refused_at_the_policy_kind() {
        let registry = Registry::builtin();
        let yaml = Card::new_default("t")
            .to_yaml()
            .replace("kind: best_of_n", "kind: beam");
        let errors = Card::from_yaml(&yaml, "t.yaml", &registry)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            errors.starts_with("t.yaml:")
                && errors.contains(": selection_policy.kind: BeamPolicy")
                && errors.contains("switch population to `beam`"),
            "{errors}"
        );
        let mut card = Card::new_default("t");
        card.selection_policy = SlotSpec::new("beam");
        assert_eq!(card.validate(&registry).len(), 1);
        card.population = SlotSpec::new("beam");
        assert!(card.validate(&registry).is_empty());
        assert!(card.check(&registry).is_ok());
    }

    #[test]
    fn a_repeated_kind_is_refused_and_an_unknown_one_lists_the_known() {
        let mut registry = Registry::builtin();
        assert_eq!(
            registry.register(Entry::of::<BestOfNPolicy>()),
            Err(RegistryError::DuplicateKind {
                slot: Slot::SelectionPolicy,
                kind: "best_of_n",
            })
        );
        let e = registry
            .entry(Slot::Memory, "notes")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("unknown memory kind `notes` (available: none, scratchpad)")
        );
    }
}
