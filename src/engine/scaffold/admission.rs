//! Admission: a finished iteration's genomes enter the population and the
//! policy, the model hears what became of its children, memory learns, and
//! the iteration is recorded with a checkpoint; the `GenomeAdmitted` events
//! wait until the record is on disk.
//!
//! On the loop's task, never concurrently: the population keeps the genome
//! without its transcript, the policy `observe`s it, memory's `after_iteration` runs once per
//! iteration, and the iteration's genomes go to the recorder together with a checkpoint. The
//! memory is shared with in-flight proposers behind an async read-write lock (`SharedMemory`);
//! the loop reads it once per dispatched iteration for the prompt.

use std::sync::Arc;

use crate::engine::events::{EventSink, LogLevel, RunEvent, RunStatus};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::population::Structure;

use super::{LoopState, Scaffold, shares};

impl Scaffold {
    /// Admit a genome: the population keeps, and the policy observes, the
    /// copy selection may see ([`Genome::for_selection`]: no transcript,
    /// which the archive and the events carry, so memory stays small over
    /// long runs; an unconfirmed genome as invalid).
    pub(super) fn admit(&mut self, mut genome: Genome, id: GenomeId) -> Arc<Genome> {
        genome.id = id;
        let genome = Arc::new(genome);
        self.tell_model(&genome);
        let seen = Arc::new(genome.for_selection());
        self.population.add(Arc::clone(&seen));
        self.policy.observe(&seen);
        genome
    }

    /// Build the `GenomeAdmitted` events for what was admitted (it is handed
    /// to the recorder) and hold them until the recorder has written it: the
    /// batch waits for `record_iteration` call number `st.recorded`.
    pub(super) fn stage(&self, admitted: &mut Vec<Arc<Genome>>, st: &mut LoopState) {
        if admitted.is_empty() {
            return;
        }
        let best = self.population.best();
        let (best_id, best_score) = (
            best.as_ref().map(|b| b.id),
            best.as_ref().and_then(|b| b.fitness()),
        );
        let iterations_done = st.summary.iterations;
        for genome in admitted.drain(..) {
            // A false elite is said once, in the log and the record.
            let warning = genome
                .confirmation
                .as_ref()
                .filter(|c| c.unconfirmed)
                .map(|c| {
                    format!(
                        "genome #{} would have been the new best: {}",
                        genome.id,
                        c.summary()
                    )
                });
            st.held.push_back((
                st.recorded,
                RunEvent::GenomeAdmitted {
                    genome,
                    best_id,
                    best_score,
                    iterations_done,
                    policy: self.policy.status(),
                    active: self.active_ids(),
                },
            ));
            if let Some(message) = warning {
                if let Some(r) = st.recorder.as_mut() {
                    r.log(LogLevel::Warn, &message);
                }
                let level = LogLevel::Warn;
                st.held
                    .push_back((st.recorded, RunEvent::Log { level, message }));
            }
        }
    }

    /// Send the held events whose genomes are on disk (all of them when the
    /// recorder writes before `record_iteration` returns, or when `all`): a
    /// genome a user saw admitted survives a `kill -9`.
    pub(super) async fn release(
        held: &mut std::collections::VecDeque<(u64, RunEvent)>,
        durable: Option<&tokio::sync::watch::Receiver<u64>>,
        events: &EventSink,
        all: bool,
    ) {
        let written = match (durable, all) {
            (Some(rx), false) => *rx.borrow(),
            _ => u64::MAX,
        };
        while held.front().is_some_and(|(seq, _)| *seq <= written) {
            if let Some((_, event)) = held.pop_front() {
                events.send(event).await;
            }
        }
    }

    /// Tell the model what became of a child it made (before the child is
    /// in the population, whose parent it is compared with), and count it.
    pub(super) fn tell_model(&mut self, child: &Genome) {
        let parent = child.parent_id.and_then(|id| self.population.get(id));
        if let Some(o) = shares::outcome(child, parent.as_deref()) {
            self.model.observe(&o);
            self.shares.record(&o);
        }
    }

    pub(super) fn active_ids(&self) -> Vec<GenomeId> {
        match self.population.structure() {
            Structure::Beam(view) => view.members,
            _ => Vec::new(),
        }
    }

    /// Admit one iteration's genomes, count them, let the memory learn from
    /// them (`learn`; not for the initial program) and record them (with a
    /// checkpoint that includes the updated memory) in one durable step.
    /// Returns the admitted genomes and whether the memory changed.
    pub(super) async fn admit_iteration(
        &mut self,
        genomes: Vec<Genome>,
        st: &mut LoopState,
        learn: bool,
    ) -> (Vec<Arc<Genome>>, bool) {
        let mut out = Vec::with_capacity(genomes.len());
        for genome in genomes {
            st.last_iteration = st.last_iteration.max(genome.iteration);
            let g = self.admit(genome, st.next_id);
            st.next_id += 1;
            st.summary.genomes += 1;
            if g.valid {
                st.summary.valid += 1;
            } else {
                st.summary.invalid += 1;
            }
            if g.rejected.is_some() {
                st.summary.rejected += 1;
            }
            if let Some(u) = &g.usage {
                st.summary.usage.add(u);
                // An agent's usage was counted as the relay passed it on.
                self.meter.admitted(u, g.agent.is_some());
            }
            out.push(g);
        }
        // Memory writes what later prompts read: it never sees private
        // metrics (the population's copies have none either).
        let memory_changed = learn && {
            let public: Vec<Arc<Genome>> = out
                .iter()
                .map(|g| {
                    if g.private.is_empty() {
                        Arc::clone(g)
                    } else {
                        Arc::new(Genome {
                            private: std::collections::BTreeMap::new(),
                            ..(**g).clone()
                        })
                    }
                })
                .collect();
            self.memory
                .write()
                .await
                .after_iteration(&public, &*self.population)
                .await
        };
        if st.recorder.is_some() {
            let checkpoint = self.checkpoint(st).await;
            let Some(r) = st.recorder.as_mut() else {
                return (out, memory_changed);
            };
            st.recorded += 1;
            if let Err(e) = r.record_iteration(&out, &checkpoint) {
                st.record_error = Some(e.to_string());
                st.stop
                    .get_or_insert(RunStatus::Failed(format!("cannot record the run: {e}")));
            }
        }
        (out, memory_changed)
    }
}
