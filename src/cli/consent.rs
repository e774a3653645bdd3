//! `--consent HASH --allow SETTING,...`: the command line's consent to a
//! card's lowered isolation (see `crate::engine::consent`), shared by every
//! command that starts a run (`run`, `resume`, `fork`, `leaderboard`,
//! `inject`, `steer`).

use crate::engine::consent::Consent;
use crate::engine::launch::RunPlan;

/// A consent to a card's lowered isolation (see `crate::engine::consent`):
/// the card's hash and each setting allowed, as the refusal prints them.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConsentArgs {
    /// Consent to the lowered isolation of the card with this hash (printed when a card asks for
    /// it); it counts for that card only, and only for the settings --allow names. Repeatable.
    #[arg(long = "consent", value_name = "HASH")]
    pub consent: Vec<String>,
    /// The lowered settings allowed (comma-separated or repeated), each as the refusal names it:
    /// evaluator.sandbox=none, evaluator.network, evaluator.read_paths=PATH, proposer.env=NAME...
    #[arg(long = "allow", value_name = "SETTING,...", value_delimiter = ',')]
    pub allow: Vec<String>,
}

impl ConsentArgs {
    /// One consent per `--consent`, each allowing every `--allow`d setting.
    pub fn consents(&self) -> Vec<Consent> {
        let allowed: Vec<String> = self
            .allow
            .iter()
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty())
            .collect();
        self.consent
            .iter()
            .map(|hash| {
                Consent::new(
                    hash.trim(),
                    allowed.clone(),
                    "the command line (--consent, --allow)",
                )
            })
            .collect()
    }

    /// `plan` with the consent given for its card, or the exit code after
    /// saying what the card asks for and how to allow it.
    pub(crate) fn apply(&self, plan: RunPlan) -> Result<RunPlan, i32> {
        let consents = self.consents();
        let plan = plan.with_consent_from(&consents);
        match plan.check_consent() {
            Ok(()) => Ok(plan),
            Err(_) => {
                // A consent for another card: the refusal says so.
                let plan = match (plan.clearance().consent.is_none(), consents.first()) {
                    (true, Some(other)) => plan.with_consent(other.clone()),
                    _ => plan,
                };
                if let Err(e) = plan.check_consent() {
                    eprintln!("error: {e}");
                }
                Err(2)
            }
        }
    }
}
