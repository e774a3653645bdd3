//! The table of `config.yaml` keys that mean something to a run, and what
//! each maps to ([`Target`]).

use crate::engine::component::Slot;

/// What a config key means for a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The task's system message (the prompt builder's `system_message`).
    SystemMessage,
    /// A parameter of the component in `slot`, if its kind takes `key`.
    /// `task` keys describe the task and win over the card; the others are
    /// the search method's and apply only where the card leaves them out.
    Param {
        slot: Slot,
        key: &'static str,
        task: bool,
    },
    /// `prompt.num_top_programs` / `num_diverse_programs`: together the
    /// selection policy's `num_inspirations` (a method setting).
    Inspirations,
    /// `diff_based_evolution`: false asks for whole programs (the diff
    /// proposer's `full_rewrite`; a method setting).
    DiffBased,
    /// The card's `seed` (the card always sets it).
    Seed,
    /// The card's `general.max_iterations` (the card always sets it).
    Iterations,
    /// The card's `general.parallel` (the card always sets it).
    Parallel,
    /// `llm.temperature` / `top_p` / `max_tokens`: the card's `llm` block,
    /// where the card leaves them out.
    Llm(LlmKey),
    /// The metric that is the fitness (a Galapagos key).
    Fitness,
    /// The fence language of the program (read by the task).
    Language,
    /// The suffix of candidates' files (read by the task).
    FileSuffix,
    /// A repository task's `evolve`, `context` and `exclude` globs (read by
    /// the task).
    ProgramFiles,
    /// Files the evaluator reads and candidates must not (read by the
    /// task: `task::hidden`).
    Hidden,
    /// `objectives.<metric>: max | min`: the task's objectives (a task
    /// setting: they replace the card's `general.objectives`).
    Objective,
    /// `reference_point.<metric>: value`: the reference point hypervolume is
    /// measured against (a task setting, per metric).
    ReferencePoint,
    /// `best_known.value`, `.direction`, `.source`: the best value
    /// published for the task's `value` metric (read by the task and by
    /// leaderboards; a run does not use it).
    BestKnown,
    /// Models and endpoints: never taken from a task (keys and endpoints
    /// come from the environment, the settings file or the command line).
    Model,
}

/// One of the card's `llm` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmKey {
    Temperature,
    TopP,
    MaxTokens,
}

/// A parameter that describes the task (it replaces the card's value).
const fn task_param(slot: Slot, key: &'static str) -> Target {
    Target::Param {
        slot,
        key,
        task: true,
    }
}

/// A parameter of the search method (it fills what the card leaves out).
const fn method_param(slot: Slot, key: &'static str) -> Target {
    Target::Param {
        slot,
        key,
        task: false,
    }
}

/// Every config key with a meaning here, and what it maps to. Keys not in
/// this table (and not under a [`Target::Model`] prefix) are listed as
/// ignored.
pub const KEYS: &[(&str, Target)] = &[
    ("prompt.system_message", Target::SystemMessage),
    (
        "evaluator.timeout",
        task_param(Slot::Evaluator, "timeout_secs"),
    ),
    (
        "evaluator.cascade_evaluation",
        task_param(Slot::Evaluator, "cascade"),
    ),
    (
        "evaluator.cascade_thresholds",
        task_param(Slot::Evaluator, "cascade_thresholds"),
    ),
    (
        "max_code_length",
        task_param(Slot::Proposer, "max_code_length"),
    ),
    ("fitness_metric", Target::Fitness),
    ("language", Target::Language),
    ("file_suffix", Target::FileSuffix),
    ("evolve", Target::ProgramFiles),
    ("context", Target::ProgramFiles),
    ("exclude", Target::ProgramFiles),
    (crate::engine::task::hidden::KEY, Target::Hidden),
    ("best_known.value", Target::BestKnown),
    ("best_known.direction", Target::BestKnown),
    ("best_known.source", Target::BestKnown),
    ("diff_based_evolution", Target::DiffBased),
    ("prompt.num_top_programs", Target::Inspirations),
    ("prompt.num_diverse_programs", Target::Inspirations),
    (
        "prompt.include_artifacts",
        method_param(Slot::PromptBuilder, "include_artifacts"),
    ),
    (
        "prompt.max_artifact_bytes",
        method_param(Slot::PromptBuilder, "max_artifact_chars"),
    ),
    (
        "prompt.suggest_simplification_after_chars",
        method_param(Slot::PromptBuilder, "suggest_simplification_after_chars"),
    ),
    (
        "prompt.use_template_stochasticity",
        method_param(Slot::PromptBuilder, "template_variation"),
    ),
    ("random_seed", Target::Seed),
    ("database.random_seed", Target::Seed),
    ("max_iterations", Target::Iterations),
    ("evaluator.parallel_evaluations", Target::Parallel),
    ("llm.temperature", Target::Llm(LlmKey::Temperature)),
    ("llm.top_p", Target::Llm(LlmKey::TopP)),
    ("llm.max_tokens", Target::Llm(LlmKey::MaxTokens)),
    (
        "database.population_size",
        method_param(Slot::Population, "capacity"),
    ),
    (
        "database.num_islands",
        method_param(Slot::Population, "num_islands"),
    ),
    (
        "database.archive_size",
        method_param(Slot::Population, "archive_size"),
    ),
    (
        "database.migration_interval",
        method_param(Slot::Population, "migration_interval"),
    ),
    (
        "database.migration_rate",
        method_param(Slot::Population, "migration_rate"),
    ),
    (
        "database.feature_dimensions",
        method_param(Slot::Population, "feature_dimensions"),
    ),
    (
        "database.feature_bins",
        method_param(Slot::Population, "feature_bins"),
    ),
    (
        "database.diversity_reference_size",
        method_param(Slot::Population, "diversity_reference_size"),
    ),
    (
        "database.elite_selection_ratio",
        method_param(Slot::SelectionPolicy, "elite_selection_ratio"),
    ),
    (
        "database.exploration_ratio",
        method_param(Slot::SelectionPolicy, "exploration_ratio"),
    ),
    (
        "database.exploitation_ratio",
        method_param(Slot::SelectionPolicy, "exploitation_ratio"),
    ),
];

/// Prefixes of model and endpoint keys (never taken from a task).
const MODEL_PREFIXES: &[&str] = &[
    "llm.models",
    "llm.evaluator_models",
    "llm.primary_model",
    "llm.secondary_model",
    "llm.api_base",
    "llm.api_key",
    "llm.name",
    "llm.provider",
    "llm.timeout",
    "llm.retries",
    "llm.retry_delay",
    "llm.reasoning_effort",
    "llm.system_message",
];

/// Sections whose keys are the task's metrics (`objectives.score`,
/// `reference_point.score`), the section alone when it is not a mapping.
pub const METRIC_SECTIONS: &[(&str, Target)] = &[
    ("objectives", Target::Objective),
    ("reference_point", Target::ReferencePoint),
];

/// The meaning of `key`.
pub fn target_of(key: &str) -> Option<Target> {
    KEYS.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, t)| *t)
        .or_else(|| {
            METRIC_SECTIONS
                .iter()
                .find(|(section, _)| {
                    key == *section
                        || key
                            .strip_prefix(section)
                            .is_some_and(|rest| rest.starts_with('.'))
                })
                .map(|(_, t)| *t)
        })
        .or_else(|| {
            MODEL_PREFIXES
                .iter()
                .any(|p| key.starts_with(p))
                .then_some(Target::Model)
        })
}
