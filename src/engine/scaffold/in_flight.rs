//! Changing a paused run's settings in flight (see
//! [`crate::engine::steering::changes`] for what may change): the blocks
//! whose parameters changed are rebuilt through the registry from the new
//! checked card, the loop takes the new budget and stop rules, a changed
//! `llm` section swaps in the model the front end built from it, and the
//! change is logged, recorded and announced with the iteration it takes
//! effect at.
//!
//! # How a change is taken
//!
//! `RunCommand::Reconfigure(NewSettings)` carries a new checked card, fitted to the run's task as a
//! new run's would be (`launch::fit_to_task`), and, when its `llm` section changed, the model the
//! front end built from it (front ends resolve models: the settings file, the flags). The loop
//! notes whether the run was paused when it came and takes it before the next dispatch
//! (`scaffold/in_flight.rs`): a run that was not paused refuses it; `steering::changes::compare`
//! against the card it runs names every difference that cannot change in flight (another kind, a
//! block that is not `LIVE`, the seed, loop settings other than the budget and the stop rules) and
//! refuses the whole change; otherwise every changed live block is built through the registry from
//! the new card (`ValidCard::build`, the policy then `restore`d from the old one's `checkpoint`;
//! the proposer also when the model changed) and, only when all are built, swapped in: the prompt
//! builder and proposer in a new `Shared` (iterations in flight keep the old one), the new budget
//! and stop rules in the loop's `General` and the run's `RunMeter` (`set_budget`: what a coding
//! agent spends through the relay is measured against the new caps). A new model is wrapped in the
//! run's redactor (`Scaffold::with_redactor`) and refused when one of its secrets (a key, endpoint
//! credentials) is not one the redactor knows: the run keeps out of its record only the secrets it
//! started with. The change is logged (`settings changed from iteration K: …`), recorded
//! (`RunRecorder::settings_changed`: the archive's `card_yaml`, `max_iterations` and its
//! `settings_changes` list with the iteration; `card.yaml`), so a resume builds the run with it,
//! and announced as `RunEvent::SettingsChanged`; a refusal changes nothing, is a warning in the log
//! and names each fixed setting in `RunEvent::SettingsRefused`.
//!
//! A change that lowers the sandbox's isolation past what the run was allowed (the rule of
//! `crate::engine::consent`: a card from elsewhere, or unsandboxed as root, needs a consent naming
//! each lowered setting) is refused as `isolation`. One taken that changes what is lowered is said in
//! the log, and the run's record (`RunRecorder::clearance_changed`) is signed again for the card the
//! run goes on with, so its resume does not ask again.

use std::path::PathBuf;
use std::sync::Arc;

use super::iteration::Shared;
use super::{LoopState, Scaffold};
use crate::engine::card::{General, ValidCard};
use crate::engine::component::{BuildContext, Slot};
use crate::engine::consent::Clearance;
use crate::engine::events::{EventSink, LogLevel, NewSettings, RunEvent};
use crate::engine::meter::RunBudget;
use crate::engine::model::{LanguageModel, RedactedModel};
use crate::engine::prompt::PromptBuilder;
use crate::engine::proposer::Proposer;
use crate::engine::redact::Redactor;
use crate::engine::sandbox::lowered::lowered;
use crate::engine::selection::SelectionPolicy;
use crate::engine::steering::changes::{Fixed, SettingsChange, compare};

/// What the loop keeps to rebuild blocks from new settings: the checked
/// card the blocks were built from (what new settings are compared with),
/// what they were built with, and the settings sent and not yet taken.
pub(super) struct Rebuild {
    valid: ValidCard,
    run_dir: Option<PathBuf>,
    key_vars: Vec<String>,
    /// New settings, and whether the run was paused when they came (a
    /// Resume may follow at once); taken before the next dispatch.
    pub(super) pending: Option<(Box<NewSettings>, bool)>,
    /// The run's redactor, wrapped around a model taken in flight.
    redactor: Option<Arc<Redactor>>,
}

impl Rebuild {
    pub(super) fn new(
        valid: ValidCard,
        run_dir: Option<&std::path::Path>,
        key_vars: &[String],
    ) -> Self {
        Self {
            valid,
            run_dir: run_dir.map(std::path::Path::to_path_buf),
            key_vars: key_vars.to_vec(),
            pending: None,
            redactor: None,
        }
    }
}

impl Scaffold {
    /// The run's redactor (see [`crate::engine::run_thread::run_plan`]): a
    /// model taken in flight is wrapped in it, as the first one was, and a
    /// model with a secret it does not know is refused.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.live.redactor = Some(redactor);
        self
    }

    /// Take the new settings sent while paused, if any (see
    /// [`crate::engine::events::RunCommand::Reconfigure`]), and say so in
    /// the log, the record and the events; or say what cannot change, and
    /// change nothing.
    pub(super) async fn take_settings(
        &mut self,
        shared: &mut Arc<Shared>,
        general: &mut General,
        st: &mut LoopState,
        events: &EventSink,
    ) {
        let Some((new, paused)) = self.live.pending.take() else {
            return;
        };
        let lowered_before = self
            .clearance
            .as_ref()
            .map(|c| c.lowered.clone())
            .unwrap_or_default();
        match self.rebuild(*new, paused, shared, general, st.last_iteration + 1) {
            Ok(None) => {}
            Ok(Some(change)) => {
                if let Some(r) = st.recorder.as_mut()
                    && let Err(e) = r.settings_changed(&self.card, &change)
                {
                    st.record_error.get_or_insert(e.to_string());
                }
                // The record vouches for the card the run goes on with.
                if let Some(c) = &self.clearance {
                    if let Some(r) = st.recorder.as_mut()
                        && let Err(e) = r.clearance_changed(c)
                    {
                        st.record_error.get_or_insert(e.to_string());
                    }
                    if c.lowered != lowered_before
                        && let Some(notice) = c.notice()
                    {
                        self.say(st, events, LogLevel::Warn, notice).await;
                    }
                }
                self.say(st, events, LogLevel::Info, change.to_string())
                    .await;
                events.send(RunEvent::SettingsChanged(change)).await;
            }
            Err(fixed) => {
                let list: Vec<String> = fixed.iter().map(ToString::to_string).collect();
                let line = format!(
                    "settings not changed: {}; fork the run from a genome to try them",
                    list.join("; ")
                );
                self.say(st, events, LogLevel::Warn, line).await;
                events.send(RunEvent::SettingsRefused(fixed)).await;
            }
        }
    }

    /// Rebuild the blocks whose parameters changed (a policy keeps its state
    /// through `checkpoint` / `restore`; the proposer is rebuilt with a new
    /// model) and take the new budget and stop rules, from iteration `from`
    /// on; all or nothing. `None` when nothing changed.
    fn rebuild(
        &mut self,
        NewSettings { card: new, model }: NewSettings,
        paused: bool,
        shared: &mut Arc<Shared>,
        general: &mut General,
        from: u64,
    ) -> Result<Option<SettingsChange>, Vec<Fixed>> {
        if !paused {
            return Err(vec![Fixed {
                what: "run".to_owned(),
                why: "pause it first: settings change between iterations".to_owned(),
            }]);
        }
        let changes = compare(&self.live.valid, &new)?;
        if changes.is_empty() {
            return Ok(None);
        }
        let clearance = self.clearance_for(&new)?;
        let llm_changed = self.live.valid.card().llm != new.card().llm;
        let model = if llm_changed {
            self.new_model(model)?
        } else {
            Arc::clone(&self.model)
        };
        let ctx = BuildContext {
            task: &self.task,
            model: Arc::clone(&model),
            parallel: general.parallel.max(1) as usize,
            run_dir: self.live.run_dir.as_deref(),
            key_vars: &self.live.key_vars,
            meter: Arc::clone(&self.meter),
        };
        let old = self.live.valid.card();
        let changed = |slot: Slot| old.slot(slot) != new.card().slot(slot);
        let failed = |slot: Slot, why: String| {
            vec![Fixed {
                what: slot.key().to_owned(),
                why,
            }]
        };
        let mut policy = None;
        if changed(Slot::SelectionPolicy) {
            let mut p: Box<dyn SelectionPolicy> = new
                .build(&ctx)
                .map_err(|e| failed(Slot::SelectionPolicy, e.to_string()))?;
            p.restore(&self.policy.checkpoint()).map_err(|e| {
                failed(
                    Slot::SelectionPolicy,
                    format!("its state cannot be carried over: {e}"),
                )
            })?;
            policy = Some(p);
        }
        let mut prompt_builder = Arc::clone(&shared.prompt_builder);
        if changed(Slot::PromptBuilder) {
            let p: Box<dyn PromptBuilder> = new
                .build(&ctx)
                .map_err(|e| failed(Slot::PromptBuilder, e.to_string()))?;
            prompt_builder = Arc::from(p);
        }
        let mut proposer = Arc::clone(&shared.proposer);
        if changed(Slot::Proposer) || llm_changed {
            let p: Box<dyn Proposer> = new
                .build(&ctx)
                .map_err(|e| failed(Slot::Proposer, e.to_string()))?;
            proposer = Arc::from(p);
        }
        // Every block built: the change is taken whole. Iterations in
        // flight keep the blocks they started with.
        if let Some(p) = policy {
            self.policy = p;
        }
        self.prompt_builder = Arc::clone(&prompt_builder);
        self.proposer = Arc::clone(&proposer);
        *shared = Arc::new(Shared {
            brief: shared.brief.clone(),
            max_response_bytes: shared.max_response_bytes,
            fitness_metric: shared.fitness_metric.clone(),
            prompt_builder,
            proposer,
            evaluator: Arc::clone(&shared.evaluator),
            memory: Arc::clone(&shared.memory),
            gate: shared.gate.clone(),
        });
        let next = &new.card().general;
        general.max_iterations = next.max_iterations;
        general.max_cost_usd = next.max_cost_usd;
        general.max_tokens = next.max_tokens;
        general.stop = next.stop.clone();
        // A coding agent's requests are measured against the new caps.
        self.meter.set_budget(RunBudget::new(
            next.max_tokens,
            next.max_cost_usd,
            next.stop.max_cost_usd,
        ));
        self.model = model;
        self.card = new.card().clone();
        self.live.valid = new;
        if let Some(c) = clearance {
            self.clearance = Some(c.signed(&self.card.hash()));
        }
        Ok(Some(SettingsChange {
            iteration: from,
            changes,
            max_iterations: general.max_iterations,
        }))
    }

    /// The run's standing on lowered isolation (signed), kept in its record
    /// and what settings changed in flight are checked against (without
    /// one, nothing is checked in flight).
    #[must_use]
    pub fn with_clearance(mut self, clearance: Clearance) -> Self {
        self.clearance = Some(clearance);
        self
    }

    /// The run's standing on lowered isolation with the settings of `new`:
    /// its provenance and consent, the lowered settings `new` has. Refused
    /// when `new` lowers isolation where the rule asks for a consent the
    /// run was not given for it (see [`crate::engine::consent`]): a change
    /// in flight widens nothing past what was allowed.
    fn clearance_for(&self, new: &ValidCard) -> Result<Option<Clearance>, Vec<Fixed>> {
        let Some(now) = &self.clearance else {
            return Ok(None);
        };
        let next = Clearance {
            lowered: lowered(new.reaches(), &self.task.dir, now.as_root),
            ..now.clone()
        };
        match next.check() {
            Ok(()) => Ok(Some(next)),
            Err(needed) => {
                let missing: Vec<&str> = needed
                    .lowered
                    .iter()
                    .filter(|l| !now.lowered.contains(l))
                    .map(|l| l.setting.as_str())
                    .collect();
                Err(vec![Fixed {
                    what: "isolation".to_owned(),
                    why: format!(
                        "the new settings lower the sandbox's isolation ({}) without the consent \
                         this card needs",
                        missing.join(", ")
                    ),
                }])
            }
        }
    }

    /// The model built from changed `llm` settings, in the run's redactor.
    /// Refused when none was sent, or when it uses a secret the run did not
    /// start with (another key variable or endpoint credentials): the run's
    /// redactor would not keep it out of the record.
    fn new_model(
        &self,
        model: Option<Arc<dyn LanguageModel>>,
    ) -> Result<Arc<dyn LanguageModel>, Vec<Fixed>> {
        let fixed = |why: String| {
            vec![Fixed {
                what: "llm".to_owned(),
                why,
            }]
        };
        let Some(model) = model else {
            return Err(fixed(
                "no model was built from the new llm settings".to_owned(),
            ));
        };
        // A model that learns from a run (adaptive weights) learns from
        // this one alone, as the first one did.
        let model = model.for_run().unwrap_or(model);
        for (place, value) in model.secrets() {
            // A value too short for any redactor to look for is no secret
            // the run keeps out of its record either.
            let secret = !Redactor::new([(place.clone(), value.clone())]).is_empty();
            let covered = !secret || self.live.redactor.as_ref().is_some_and(|r| r.finds(&value));
            if !covered {
                return Err(fixed(format!(
                    "its secret ({place}) is not one the run started with; fork instead"
                )));
            }
        }
        Ok(match &self.live.redactor {
            Some(r) => RedactedModel::wrap(model, Arc::clone(r)),
            None => model,
        })
    }
}
