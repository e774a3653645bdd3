//! Isolation is never lowered on an agent's say-so. The command line runs a
//! card that lowers the sandbox's isolation only with the person's consent
//! when the card is from elsewhere (`--consent HASH --allow ...`, see
//! [`crate::engine::consent`]), and the user's own card by their own
//! hand. Through MCP neither holds: the agent can write a card file as
//! easily as YAML text, and no tool argument grants consent. So `start_run`
//! refuses every card whose run would lower anything, naming each lowered
//! setting, and tells the agent that the person must start it themselves
//! (on the command line, where it asks for the consent it needs, or in the
//! studio).

use crate::engine::launch::{LaunchError, RunPlan};

/// Why `start_run` refuses `plan`, or `None` when its isolation is the
/// sandbox's safe defaults. `card_arg` and `task_arg` are what the agent
/// passed (for the command the person can run).
pub(super) fn refusal(plan: &RunPlan, card_arg: &str, task_arg: &str) -> Option<String> {
    let clearance = plan.clearance();
    if clearance.lowered.is_empty() {
        return None;
    }
    let lowered: Vec<String> = clearance
        .lowered
        .iter()
        .map(|l| format!("  - {}: {}", l.setting, l.what))
        .collect();
    let card = if super::catalog::is_yaml_text(card_arg) {
        "CARD.yaml".to_owned()
    } else {
        card_arg.to_owned()
    };
    let consent = match plan.check_consent() {
        Err(LaunchError::ConsentNeeded(needed)) => format!(
            " This card needs the person's consent there: after reading what it lowers, they add {}.",
            needed.flags()
        ),
        _ => String::new(),
    };
    Some(format!(
        "start_run refused: the card {} lowers the sandbox's isolation:\n{}\n\
         An agent cannot start such a run through galapagos mcp, and no argument of this server grants \
         consent. The person must start it themselves: `galapagos run {card} --task {task_arg}` on the \
         command line, or in the studio.{consent} Or use a card that keeps the sandbox's defaults.",
        clearance.card_name,
        lowered.join("\n"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::card::{Provenance, ValidCard};
    use crate::engine::registry::Registry;

    /// A task folder with a program and an evaluator.
    fn task(dir: &std::path::Path) -> crate::engine::task::Task {
        std::fs::write(
            dir.join("initial_program.py"),
            "# EVOLVE-BLOCK-START\nX = 1.0\n# EVOLVE-BLOCK-END\n",
        )
        .expect("write");
        std::fs::write(
            dir.join("evaluator.py"),
            "def evaluate(path):\n    return {'combined_score': 1.0}\n",
        )
        .expect("write");
        crate::engine::task::Task::load(dir).expect("a task")
    }

    /// The built-in best_of_n with `evaluator` instead of its own.
    fn card_with(evaluator: &str) -> ValidCard {
        let yaml = crate::engine::builtin::card("best_of_n")
            .expect("built-in")
            .yaml;
        let at = yaml.find("evaluator:\n").expect("an evaluator");
        let end = yaml[at..].find("memory:").expect("memory after it") + at;
        let yaml = format!("{}evaluator: {evaluator}\n{}", &yaml[..at], &yaml[end..]);
        ValidCard::from_yaml(&yaml, "test", &Registry::builtin()).expect("valid")
    }

    fn plan(card: ValidCard, dir: &std::path::Path) -> RunPlan {
        RunPlan::new(card, task(dir), None, &Registry::builtin()).expect("a plan")
    }

    #[test]
    fn a_card_from_elsewhere_that_needs_consent_is_refused_naming_what_it_lowers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let card = card_with("{kind: subprocess, timeout_secs: 60.0, sandbox: none}")
            .with_provenance(Some(Provenance::Bundle {
                bundle: "/tmp/someone-elses.tar.gz".to_owned(),
                imported: "2026-01-01".to_owned(),
            }));
        let plan = plan(card, dir.path());
        // the command line refuses it without a consent
        assert!(matches!(
            plan.check_consent(),
            Err(LaunchError::ConsentNeeded(_))
        ));
        let refused = refusal(&plan, "their_card.yaml", "my_task").expect("refused");
        assert!(refused.contains("evaluator.sandbox=none"), "{refused}");
        assert!(refused.contains("must start it themselves"), "{refused}");
        assert!(
            refused.contains("galapagos run their_card.yaml --task my_task"),
            "{refused}"
        );
        assert!(
            refused.contains("--consent "),
            "the flags the person adds: {refused}"
        );
    }

    #[test]
    fn the_users_own_card_that_lowers_isolation_is_refused_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(
            card_with("{kind: subprocess, timeout_secs: 60.0, network: true}"),
            dir.path(),
        );
        let refused = refusal(&plan, "name: x\nmore: yaml\n", "t").expect("refused");
        assert!(refused.contains("evaluator.network"), "{refused}");
        assert!(
            refused.contains("no argument of this server grants"),
            "{refused}"
        );
        assert!(
            refused.contains("galapagos run CARD.yaml --task t"),
            "{refused}"
        );
    }

    #[test]
    fn a_card_at_the_safe_defaults_goes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(
            card_with("{kind: subprocess, timeout_secs: 60.0}"),
            dir.path(),
        );
        assert_eq!(refusal(&plan, "best_of_n", "t"), None);
    }
}
