//! A task's objectives: `objectives: {score: max, runtime_ms: min}` and
//! `reference_point: {score: 0, runtime_ms: 5000}` in its `config.yaml`.
//!
//! Which metrics a task reports, and which way each is better, describe the
//! task, so they are task settings: objectives the task names replace the
//! card's `general.objectives` as a whole (the card's reference values for
//! metrics that are no longer objectives go with them), and each reference
//! value the task names replaces the card's for that metric. A card written
//! for any task can then run a multi-objective search on a task that says
//! what its objectives are. The command line has no objective flags.
//!
//! # Through the run
//!
//! A task's config may name them (`objectives`, `reference_point`); `task_settings/objectives.rs`
//! (`TaskObjectives`) puts them onto the card as task settings (they replace the card's), so the
//! card as run carries them. `Scaffold::build` copies them onto the `Task` (and so into
//! `BuildContext` and the `TaskBrief`): the `pareto` policy queries `Query::ParetoFront` and ranks
//! by NSGA-II non-dominated sorting and crowding distance, holding its tournament among the first
//! `survivors` of that order (NSGA-II's population: the keep-all population is the archive, not the
//! generation); the default prompt renders the trade-offs. A leaderboard measures every run's
//! hypervolume over the task's objectives, else those of the first card that names some (the same
//! `TaskObjectives::apply`; `leaderboard/hypervolume.rs`, exact slicing).

use std::collections::BTreeMap;

use super::SettingsError;
use crate::engine::card::General;
use crate::engine::genome::Direction;
use crate::engine::task::config::{TaskConfig, show};

const OBJECTIVES: &str = "objectives";
const REFERENCE: &str = "reference_point";

/// What a task's config says about objectives (empty maps: nothing).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskObjectives {
    /// `objectives.<metric>`, in metric order.
    pub directions: BTreeMap<String, Direction>,
    /// `reference_point.<metric>`.
    pub reference: BTreeMap<String, f64>,
}

impl TaskObjectives {
    /// Read the `objectives` and `reference_point` sections of `config`
    /// (`file` names it in errors). A value of the wrong shape is an error
    /// naming its key.
    pub fn read(config: &TaskConfig, file: &str) -> Result<Self, SettingsError> {
        let error = |key: &str, message: String| SettingsError {
            file: file.to_owned(),
            key: key.to_owned(),
            message,
        };
        let mut out = Self::default();
        for (key, value) in config.entries() {
            if value.is_null() {
                continue;
            }
            if key == OBJECTIVES || key == REFERENCE {
                return Err(error(
                    key,
                    format!(
                        "expected a mapping of metric names to {}, got {}",
                        if key == OBJECTIVES {
                            "max or min (e.g. {score: max, runtime_ms: min})"
                        } else {
                            "numbers (e.g. {score: 0, runtime_ms: 5000})"
                        },
                        show(value)
                    ),
                ));
            }
            if let Some(metric) = key.strip_prefix("objectives.") {
                let direction = match value.as_str().map(str::trim) {
                    Some("max" | "maximize") => Direction::Max,
                    Some("min" | "minimize") => Direction::Min,
                    _ => {
                        return Err(error(
                            key,
                            format!("expected max or min, got {}", show(value)),
                        ));
                    }
                };
                out.directions.insert(metric.to_owned(), direction);
            } else if let Some(metric) = key.strip_prefix("reference_point.") {
                let v = value
                    .as_f64()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| error(key, format!("expected a number, got {}", show(value))))?;
                out.reference.insert(metric.to_owned(), v);
            }
        }
        Ok(out)
    }

    /// True when the config names neither objectives nor reference values.
    pub fn is_empty(&self) -> bool {
        self.directions.is_empty() && self.reference.is_empty()
    }

    /// Put these onto `general` (a card's); returns one line per change for
    /// the run's log, `(config key, value shown, outcome)`.
    pub fn apply(&self, general: &mut General) -> Vec<(String, String, String)> {
        let mut lines = Vec::new();
        if !self.directions.is_empty() {
            let shown = listed(self.directions.iter().map(|(m, d)| (m, label(*d))));
            let outcome = if general.objectives.is_empty() {
                "general.objectives (a multi-objective search: the prompt shows the trade-offs, a \
                 leaderboard measures hypervolume)"
                    .to_owned()
            } else if general.objectives == self.directions {
                "general.objectives (as the card has them)".to_owned()
            } else {
                format!(
                    "general.objectives (replaces the card's {})",
                    listed(general.objectives.iter().map(|(m, d)| (m, label(*d))))
                )
            };
            general.objectives = self.directions.clone();
            lines.push((OBJECTIVES.to_owned(), shown, outcome));
            let dropped: Vec<String> = general
                .reference_point
                .keys()
                .filter(|m| !self.directions.contains_key(*m))
                .cloned()
                .collect();
            for metric in dropped {
                if let Some(v) = general.reference_point.remove(&metric) {
                    lines.push((
                        format!("{OBJECTIVES}.{metric}"),
                        "not named".to_owned(),
                        format!(
                            "the card's general.reference_point.{metric} = {v} dropped (not an \
                             objective of this task)"
                        ),
                    ));
                }
            }
        }
        for (metric, v) in &self.reference {
            let field = format!("general.reference_point.{metric}");
            let outcome = match general.reference_point.insert(metric.clone(), *v) {
                Some(old) if old != *v => format!("{field} (replaces the card's {old})"),
                _ => field,
            };
            lines.push((format!("{REFERENCE}.{metric}"), v.to_string(), outcome));
        }
        lines
    }
}

fn label(d: Direction) -> &'static str {
    match d {
        Direction::Max => "max",
        Direction::Min => "min",
    }
}

/// `{a: max, b: min}`.
fn listed<'a>(items: impl Iterator<Item = (&'a String, &'static str)>) -> String {
    let inner: Vec<String> = items.map(|(m, d)| format!("{m}: {d}")).collect();
    format!("{{{}}}", inner.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(text: &str) -> TaskConfig {
        TaskConfig::parse(text, Path::new("config.yaml")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_task_objectives_replace_the_cards_and_its_reference_values_win_per_metric() {
        let task = TaskObjectives::read(
            &config(
                "objectives: {score: max, runtime_ms: min}\nreference_point: {runtime_ms: 5000}\n",
            ),
            "config.yaml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut general = General::default();
        general
            .objectives
            .insert("combined_score".into(), Direction::Max);
        general
            .objectives
            .insert("evaluations".into(), Direction::Min);
        general.reference_point.insert("evaluations".into(), 1001.0);
        let lines = task.apply(&mut general);
        assert_eq!(
            general.objectives.into_iter().collect::<Vec<_>>(),
            [
                ("runtime_ms".to_owned(), Direction::Min),
                ("score".to_owned(), Direction::Max)
            ]
        );
        assert_eq!(
            general.reference_point.into_iter().collect::<Vec<_>>(),
            [("runtime_ms".to_owned(), 5000.0)]
        );
        let text: Vec<String> = lines
            .iter()
            .map(|(k, v, o)| format!("{k}: {v} → {o}"))
            .collect();
        assert_eq!(
            text,
            [
                "objectives: {runtime_ms: min, score: max} → general.objectives (replaces the card's \
                 {combined_score: max, evaluations: min})",
                "objectives.evaluations: not named → the card's general.reference_point.evaluations = \
                 1001 dropped (not an objective of this task)",
                "reference_point.runtime_ms: 5000 → general.reference_point.runtime_ms",
            ]
        );
    }

    #[test]
    fn values_of_the_wrong_shape_name_their_key() {
        for (text, key, message) in [
            (
                "objectives: {score: best}\n",
                "objectives.score",
                "expected max or min, got \"best\"",
            ),
            (
                "objectives: [score, time]\n",
                "objectives",
                "expected a mapping of metric names",
            ),
            (
                "reference_point: {score: high}\n",
                "reference_point.score",
                "expected a number",
            ),
        ] {
            let e = TaskObjectives::read(&config(text), "config.yaml").unwrap_err();
            assert_eq!(e.key, key, "{text}");
            assert!(e.message.contains(message), "{text}: {}", e.message);
        }
        assert!(
            TaskObjectives::read(&config("max_iterations: 3\n"), "config.yaml")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
    }
}
