//! Mapping a task's `config.yaml` onto the card a run is built from, and
//! saying what was done with every key.
//!
//! Precedence, from strongest to weakest:
//! 1. the command line (`--iterations`, `--seed`, `--parallel`, the model
//!    flags), already applied to the card;
//! 2. **task settings** of the config: what describes the task itself — its
//!    system message, the evaluator's time limit and cascade, the largest
//!    program it accepts, the fitness metric, the language, its objectives
//!    and reference point (`objectives.rs`). The task's author knows these,
//!    and a card is written for any task, so they replace the card's
//!    values;
//! 3. the card, for **search-method settings** (number of inspirations,
//!    diff or full rewrite, sampling temperature, population structure,
//!    seed, budget, parallelism): the card is the method the user chose;
//! 4. method settings of the config the card leaves out;
//! 5. the components' defaults.
//!
//! Every key of the config is accounted for once in the run's log: mapped
//! (and onto what), kept from the card (and how to override it), not
//! applicable to the card's components, or listed in the single notice of
//! keys with no meaning here.

use std::fmt::Write as _;

use crate::engine::card::{Card, LlmSettings, ValidCard};
use crate::engine::component::{Feature, Slot};
use crate::engine::evaluator;
use crate::engine::params::ParamValue;
use crate::engine::registry::Registry;
use crate::engine::task::config::{TaskConfig, compact, param_value, show};
use crate::engine::task::{Task, TaskKind};

mod keys;
mod objectives;

pub use keys::{KEYS, LlmKey, METRIC_SECTIONS, Target, target_of};
pub use objectives::TaskObjectives;

/// The keys of `config` with no meaning here (and not model keys), in
/// file order.
fn ignored(config: &TaskConfig) -> Vec<&str> {
    config
        .entries()
        .map(|(k, _)| k)
        .filter(|k| target_of(k).is_none())
        .collect()
}

/// The model and endpoint keys `config` sets (never used).
fn model_keys(config: &TaskConfig) -> Vec<&str> {
    config
        .entries()
        .map(|(k, _)| k)
        .filter(|k| target_of(k) == Some(Target::Model))
        .collect()
}

/// A config value the run cannot take.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct SettingsError {
    /// The config file.
    pub file: String,
    /// The config key.
    pub key: String,
    pub message: String,
}

/// What the run made of a task's settings: one line per mapped key and the
/// notice of ignored keys. Shown in the run's log and the studio.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSettings {
    /// The config file's name (empty without one).
    pub file: String,
    /// One line per key (or pair of keys) with a meaning here.
    pub mapped: Vec<String>,
    /// The one notice of keys that mean nothing here (and model keys).
    pub ignored: Option<String>,
    /// Other changes the task made to the card (the evaluator that runs a
    /// ShinkaEvolve task's `evaluate.py`).
    pub changes: Vec<String>,
}

impl TaskSettings {
    /// Every line for the log, the mapping first.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.mapped.is_empty() {
            out.push(format!(
                "settings from {}: the task's own settings replace the card's; search-method settings \
                 apply where the card leaves them out; the command line wins over both",
                if self.file.is_empty() {
                    "the task folder"
                } else {
                    &self.file
                }
            ));
            out.extend(self.mapped.iter().map(|l| format!("  {l}")));
        }
        out.extend(self.changes.iter().cloned());
        out.extend(self.ignored.iter().cloned());
        out
    }
}

/// The card's value of `key` in `slot`'s block, when the card writes it.
fn card_value(card: &Card, slot: Slot, key: &str) -> Option<ParamValue> {
    card.slot(slot).params.get(key).cloned()
}

/// Does the card's component in `slot` take `key`?
fn takes(card: &Card, registry: &Registry, slot: Slot, key: &str) -> bool {
    registry
        .entry(slot, &card.slot(slot).kind)
        .is_ok_and(|e| e.default_of(key).is_some())
}

struct Mapper<'a> {
    card: Card,
    registry: &'a Registry,
    out: TaskSettings,
    /// Which config key set which card field (for errors).
    origins: Vec<(String, String)>,
}

impl Mapper<'_> {
    fn line(&mut self, key: &str, value: &str, outcome: &str) {
        self.out.mapped.push(format!("{key}: {value} → {outcome}"));
    }

    /// Set `slot.param` from `key`: `task` settings replace the card's,
    /// method settings fill what the card leaves out.
    fn param(
        &mut self,
        key: &str,
        shown: &str,
        value: ParamValue,
        slot: Slot,
        param: &str,
        task: bool,
    ) {
        let field = format!("{}.{param}", slot.key());
        let kind = self.card.slot(slot).kind.clone();
        if !takes(&self.card, self.registry, slot, param) {
            self.line(
                key,
                shown,
                &format!(
                    "not applicable: the card's {} `{kind}` has no {param}",
                    slot.key()
                ),
            );
            return;
        }
        match card_value(&self.card, slot, param) {
            Some(current) if !task => {
                self.line(
                    key,
                    shown,
                    &format!(
                        "not applied: the card sets {field} = {} (the card decides the method)",
                        current.display()
                    ),
                );
            }
            current => {
                let note = match current {
                    Some(c) if c != value => format!(" (replaces the card's {})", c.display()),
                    _ => String::new(),
                };
                self.card.slot_mut(slot).params.set(param, value);
                self.origins.push((field.clone(), key.to_owned()));
                self.line(key, shown, &format!("{field}{note}"));
            }
        }
    }
}

/// Map `task`'s config onto `card` (see the module docs for the order), and
/// fit the card to the task's layout: a ShinkaEvolve task's `evaluate.py`
/// runs as a command. The result is checked again; a value out of range is
/// an error naming the config key.
pub fn apply(
    card: ValidCard,
    task: &Task,
    registry: &Registry,
) -> Result<(ValidCard, TaskSettings), SettingsError> {
    let config = &task.config;
    let file = config
        .file()
        .and_then(|p| p.file_name())
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut m = Mapper {
        card: card.into_card(),
        registry,
        out: TaskSettings {
            file: file.clone(),
            ..TaskSettings::default()
        },
        origins: Vec::new(),
    };
    let mut inspirations_done = false;
    for (key, value) in config.entries() {
        let Some(target) = target_of(key) else {
            continue;
        };
        if matches!(target, Target::Objective | Target::ReferencePoint) {
            continue; // read as a whole below
        }
        let shown = show(value);
        if value.is_null() {
            if target != Target::Model {
                m.line(key, &shown, "not set (null)");
            }
            continue;
        }
        let Some(pv) = param_value(value) else {
            if target != Target::Model {
                m.line(
                    key,
                    &shown,
                    "not applicable: a value of this shape is not supported here",
                );
            }
            continue;
        };
        match target {
            Target::Model | Target::Objective | Target::ReferencePoint => {}
            Target::SystemMessage => {
                m.param(key, &shown, pv, Slot::PromptBuilder, "system_message", true);
            }
            Target::Param { slot, key: param, task } => m.param(key, &shown, pv, slot, param, task),
            Target::Inspirations => {
                if inspirations_done {
                    continue;
                }
                inspirations_done = true;
                let top = config.get("prompt.num_top_programs").and_then(serde_yaml::Value::as_i64);
                let diverse = config
                    .get("prompt.num_diverse_programs")
                    .and_then(serde_yaml::Value::as_i64);
                let total = top.unwrap_or(3) + diverse.unwrap_or(2);
                let label = format!(
                    "prompt.num_top_programs + num_diverse_programs ({} + {}{})",
                    top.map_or_else(|| "3".to_owned(), |t| t.to_string()),
                    diverse.map_or_else(|| "2".to_owned(), |d| d.to_string()),
                    if top.is_none() || diverse.is_none() {
                        ", OpenEvolve's default for the one not set"
                    } else {
                        ""
                    }
                );
                let shown = total.to_string();
                m.param(
                    &label,
                    &shown,
                    ParamValue::Int(total),
                    Slot::SelectionPolicy,
                    "num_inspirations",
                    false,
                );
            }
            Target::DiffBased => {
                let Some(diff) = value.as_bool() else {
                    return Err(SettingsError {
                        file,
                        key: key.to_owned(),
                        message: format!("expected true or false, got {shown}"),
                    });
                };
                if diff {
                    let full = card_value(&m.card, Slot::Proposer, "full_rewrite")
                        == Some(ParamValue::Bool(true));
                    m.line(
                        key,
                        &shown,
                        if full {
                            "not applied: the card's proposer asks for whole programs (full_rewrite: true)"
                        } else {
                            "SEARCH/REPLACE edits, as the card's proposer makes"
                        },
                    );
                } else {
                    m.param(key, &shown, ParamValue::Bool(true), Slot::Proposer, "full_rewrite", false);
                }
            }
            Target::Seed => {
                let seed = m.card.seed;
                m.line(
                    key,
                    &shown,
                    &format!("not applied: the card's seed {seed} is used (--seed {} applies it)", value.as_u64().map_or(shown.clone(), |v| v.to_string())),
                );
            }
            Target::Iterations => {
                let n = m.card.general.max_iterations;
                m.line(
                    key,
                    &shown,
                    &format!("not applied: the budget is the card's general.max_iterations = {n} (--iterations N sets it)"),
                );
            }
            Target::Parallel => {
                let p = m.card.general.parallel;
                m.line(
                    key,
                    &shown,
                    &format!("not applied: the card's general.parallel = {p} is used (--parallel N sets it)"),
                );
            }
            Target::Llm(which) => llm(&mut m, key, &shown, value, which)?,
            Target::Fitness => m.line(
                key,
                &shown,
                "the fitness: selection ranks programs by this metric, and a program that does not report it is invalid",
            ),
            Target::Language => m.line(key, &shown, "the program's language, as the prompt names it"),
            Target::FileSuffix => m.line(key, &shown, "the suffix of each candidate's file"),
            Target::ProgramFiles => m.line(key, &shown, "which of the program folder's files may change, are shown or left out"),
            Target::BestKnown => m.line(
                key,
                &shown,
                "the best value published for the task's `value` metric (for reference; the run does not use it)",
            ),
            Target::Hidden => m.line(
                key,
                &shown,
                "hidden from candidates (galapagos_eval runs them where these cannot be read) and from the model",
            ),
        }
    }
    let objectives = TaskObjectives::read(config, &file)?;
    for (key, shown, outcome) in objectives.apply(&mut m.card.general) {
        m.line(&key, &shown, &outcome);
    }
    if !objectives.directions.is_empty() {
        m.origins
            .push(("general.objectives".to_owned(), "objectives".to_owned()));
    }
    for metric in objectives.reference.keys() {
        m.origins.push((
            format!("general.reference_point.{metric}"),
            format!("reference_point.{metric}"),
        ));
    }
    let ignored = ignored(config);
    let models = model_keys(config);
    let mut notice = String::new();
    if !ignored.is_empty() {
        let _ = write!(
            notice,
            "{file}: {} key{} with no meaning here, ignored: {}",
            ignored.len(),
            if ignored.len() == 1 { "" } else { "s" },
            compact(&ignored)
        );
    }
    if !models.is_empty() {
        if !notice.is_empty() {
            notice.push_str(". ");
        } else {
            let _ = write!(notice, "{file}: ");
        }
        let _ = write!(
            notice,
            "model keys not used ({}): the model comes from --api-base/--model, the settings file or the \
             card's llm block (the built-in offline model when none is set)",
            compact(&models)
        );
    }
    m.out.ignored = (!notice.is_empty()).then_some(notice);
    fit_system_message(&mut m, task);
    fit_evaluator(&mut m, task);
    let origins = m.origins;
    let out = m.out;
    let checked = m.card.check(registry).map_err(|problems| {
        let first = problems.into_iter().next();
        let (field, message) = first.map_or_else(
            || (String::new(), "invalid".to_owned()),
            |p| (p.field, p.message),
        );
        let key = origins
            .iter()
            .find(|(f, _)| *f == field)
            .map_or_else(|| field.clone(), |(_, k)| k.clone());
        SettingsError {
            file: if file.is_empty() {
                task.dir.display().to_string()
            } else {
                file.clone()
            },
            key,
            message: format!("{message} (as {field})"),
        }
    })?;
    Ok((checked, out))
}

/// `llm.temperature` / `top_p` / `max_tokens`: fill the card's `llm` block
/// where it leaves them out.
fn llm(
    m: &mut Mapper<'_>,
    key: &str,
    shown: &str,
    value: &serde_yaml::Value,
    which: LlmKey,
) -> Result<(), SettingsError> {
    let bad = |what: &str| SettingsError {
        file: m.out.file.clone(),
        key: key.to_owned(),
        message: format!("expected {what}, got {shown}"),
    };
    let llm = m.card.llm.get_or_insert_with(LlmSettings::default);
    let (field, set) = match which {
        LlmKey::Temperature => {
            let v = value.as_f64().ok_or_else(|| bad("a number"))?;
            if !(0.0..=2.0).contains(&v) {
                return Err(SettingsError {
                    message: format!("must be between 0 and 2, got {shown}"),
                    ..bad("")
                });
            }
            (
                "llm.temperature",
                llm.temperature.is_none().then(|| llm.temperature = Some(v)),
            )
        }
        LlmKey::TopP => {
            let v = value.as_f64().ok_or_else(|| bad("a number"))?;
            (
                "llm.top_p",
                llm.top_p.is_none().then(|| llm.top_p = Some(v)),
            )
        }
        LlmKey::MaxTokens => {
            let v = value
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| bad("a whole number of tokens"))?;
            (
                "llm.max_tokens",
                llm.max_tokens.is_none().then(|| llm.max_tokens = Some(v)),
            )
        }
    };
    if set.is_some() {
        m.line(
            key,
            shown,
            &format!("the card's {field} (sent with every model request)"),
        );
    } else {
        m.line(
            key,
            shown,
            &format!("not applied: the card sets {field} (the card decides the method)"),
        );
    }
    Ok(())
}

/// A system message the task has outside its config (a ShinkaEvolve
/// folder's `run_evo.py` `task_sys_msg`) is the prompt's, as the config's
/// would be.
fn fit_system_message(m: &mut Mapper<'_>, task: &Task) {
    if task.config.system_message().is_some() {
        return;
    }
    let Some(message) = &task.system_message else {
        return;
    };
    let source = task
        .system_message_source
        .clone()
        .unwrap_or_else(|| "system message".to_owned());
    let shown = show(&serde_yaml::Value::String(message.clone()));
    m.param(
        &source,
        &shown,
        ParamValue::Str(message.clone()),
        Slot::PromptBuilder,
        "system_message",
        true,
    );
}

/// A ShinkaEvolve task's evaluator is its `evaluate.py`, run as a command:
/// a card's evaluator that runs the task's own evaluator file on this
/// machine (an OpenEvolve `evaluator.py`: `Feature::TaskEvaluatorFile`, not
/// `Feature::Cluster`) becomes the evaluator that runs a command line
/// (`Feature::CommandLine`) with ShinkaEvolve's, keeping its time limit,
/// interpreter, sandbox and limits ([`crate::engine::sandbox::isolation`]) and
/// confirmation.
fn fit_evaluator(m: &mut Mapper<'_>, task: &Task) {
    let from = m.card.evaluator.kind.clone();
    let local_file = |f| m.registry.provides(Slot::Evaluator, &from, f);
    if task.kind != TaskKind::ShinkaEvolve
        || !local_file(Feature::TaskEvaluatorFile)
        || local_file(Feature::Cluster)
    {
        return;
    }
    let Some((to, _)) = m.registry.provider(Slot::Evaluator, Feature::CommandLine) else {
        return;
    };
    let old = std::mem::take(&mut m.card.evaluator.params);
    let mut params = crate::engine::params::ParamMap::default();
    let shared = crate::engine::sandbox::isolation::SPECS
        .iter()
        .chain(evaluator::confirm::SPECS);
    for key in ["timeout_secs", "python"]
        .into_iter()
        .chain(shared.map(|spec| spec.key))
    {
        if let Some(v) = old.get(key) {
            params.set(key, v.clone());
        }
    }
    let dropped: Vec<&str> = old
        .0
        .keys()
        .filter(|k| params.get(k).is_none())
        .map(String::as_str)
        .collect();
    let argv = evaluator::SHINKA_ARGV
        .iter()
        .map(|s| ParamValue::Str((*s).to_owned()));
    params.set("argv", ParamValue::List(argv.collect()));
    m.card.evaluator.kind = to.to_owned();
    m.card.evaluator.params = params;
    m.out.changes.push(format!(
        "evaluator: the card's `{from}` evaluator runs this task's evaluate.py as ShinkaEvolve does \
         (kind `{to}`: python evaluate.py --program_path P --results_dir D; metrics.json's public metrics \
         and text_feedback reach the model, its private metrics do not; correct.json decides validity)"
    ));
    if !dropped.is_empty() {
        m.out.changes.push(format!(
            "evaluator: not carried over, the `{to}` evaluator has no such setting: {}",
            dropped.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::params::ParamValue;

    fn card() -> ValidCard {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("cards/best_of_n.yaml"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        ValidCard::from_yaml(&text, "best_of_n.yaml", &Registry::builtin())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn task_with(config: &str) -> (tempfile::TempDir, Task) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (name, text) in [
            (
                "initial_program.py",
                "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n",
            ),
            ("evaluator.py", "def evaluate(p):\n    return {}\n"),
            ("config.yaml", config),
        ] {
            std::fs::write(dir.path().join(name), text).unwrap_or_else(|e| panic!("{e}"));
        }
        let task = Task::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        (dir, task)
    }

    use std::path::Path;

    #[test]
    fn task_settings_win_method_settings_fill_gaps_and_every_key_is_accounted_for() {
        let (_dir, task) = task_with(
            "max_iterations: 7\nrandom_seed: 42\nllm:\n  temperature: 0.3\n  api_base: https://x\nprompt:\n  system_message: Be brief.\n  num_top_programs: 2\n  num_diverse_programs: 1\nevaluator:\n  timeout: 5\n  cascade_evaluation: false\ndiff_based_evolution: false\ncheckpoint_interval: 5\nlog_level: INFO\n",
        );
        let (checked, report) =
            apply(card(), &task, &Registry::builtin()).unwrap_or_else(|e| panic!("{e}"));
        let c = checked.card();
        let ev = &c.evaluator.params;
        assert_eq!(ev.get("timeout_secs"), Some(&ParamValue::Int(5)));
        assert_eq!(ev.get("cascade"), Some(&ParamValue::Bool(false)));
        assert_eq!(
            c.prompt_builder.params.get("system_message"),
            Some(&ParamValue::Str("Be brief.".into()))
        );
        // The card sets num_inspirations: kept. It leaves full_rewrite and
        // the temperature out: the config fills them.
        assert_eq!(
            c.selection_policy.params.get("num_inspirations"),
            Some(&ParamValue::Int(4))
        );
        assert_eq!(
            c.proposer.params.get("full_rewrite"),
            Some(&ParamValue::Bool(true))
        );
        assert_eq!(c.llm.as_ref().and_then(|l| l.temperature), Some(0.3));
        // Seed and budget stay the card's.
        assert_eq!((c.seed, c.general.max_iterations), (0, 100));
        let lines = report.lines().join("\n");
        for want in [
            "evaluator.timeout: 5 → evaluator.timeout_secs (replaces the card's 60)",
            "not applied: the card sets selection_policy.num_inspirations = 4",
            "random_seed: 42 → not applied: the card's seed 0 is used (--seed 42 applies it)",
            "max_iterations: 7 → not applied",
            "diff_based_evolution: false → proposer.full_rewrite",
            "2 keys with no meaning here, ignored: checkpoint_interval, log_level",
            "model keys not used (llm.api_base)",
        ] {
            assert!(lines.contains(want), "missing `{want}` in:\n{lines}");
        }
        assert_eq!(
            report.ignored.iter().count(),
            1,
            "one notice for the ignored keys"
        );
    }

    #[test]
    fn a_value_the_card_cannot_take_names_the_config_key() {
        let (_dir, task) = task_with("evaluator:\n  timeout: 0\n");
        let e = apply(card(), &task, &Registry::builtin())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("config.yaml: evaluator.timeout: "), "{e}");
        assert!(e.contains("(as evaluator.timeout_secs)"), "{e}");
        let (_dir, task) = task_with("llm:\n  temperature: 7\n");
        let e = apply(card(), &task, &Registry::builtin())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("llm.temperature: must be between 0 and 2"),
            "{e}"
        );
    }
}
