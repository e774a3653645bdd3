//! The bodies of a run's genomes (program, diff, artifacts, prompt, reply)
//! in the run view: the history holds every genome's head
//! ([`crate::engine::head::GenomeHead`]) and only the bodies it may need
//! soon: those the events of a live run brought (all of them when nothing
//! could give them back, else the newest [`RECENT_BODIES`]) and the last
//! [`LOOKED_AT_BODIES`] read back or fetched. The view asks for the bodies
//! it shows (the selected genome, its parent, the picked one, the one in
//! the editor): of the run service for a followed run, from the run's
//! archive on a thread of their own otherwise; the UI thread never waits
//! for one.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use super::RunView;
use crate::engine::genome::{Genome, GenomeId};

/// How many of the newest genomes a live run's events brought keep their
/// bodies in memory when the run's archive can give them back.
pub const RECENT_BODIES: usize = 256;

/// How many bodies of genomes looked at (read back or fetched) are kept.
pub const LOOKED_AT_BODIES: usize = 32;

/// Where the bodies of a history's genomes (program, diff, artifacts,
/// prompt, reply) come from when one is looked at: the history holds every
/// genome's head ([`super::RunHistory::genomes`]) and only some bodies
/// ([`super::RunHistory::body`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BodySource {
    /// Nothing could give them back: every body the events brought is kept
    /// (a run that records nothing, a history made in a test).
    #[default]
    Kept,
    /// The run's archive in this folder: the newest [`RECENT_BODIES`] the
    /// events brought are kept, the others are read back from it.
    Archive(PathBuf),
    /// The run service: the events carry heads, the bodies are asked for.
    Remote,
}

/// The bodies a history holds: those the events brought (all of them, or
/// the newest [`RECENT_BODIES`]), and the last [`LOOKED_AT_BODIES`] read
/// back or fetched for a genome looked at.
#[derive(Debug, Default)]
pub(super) struct Bodies {
    recent: HashMap<GenomeId, Arc<Genome>>,
    order: VecDeque<GenomeId>,
    /// Newest last.
    looked: VecDeque<Arc<Genome>>,
}

impl Bodies {
    pub(super) fn get(&self, id: GenomeId) -> Option<&Arc<Genome>> {
        self.looked
            .iter()
            .find(|g| g.id == id)
            .or_else(|| self.recent.get(&id))
    }

    pub(super) fn add_recent(&mut self, genome: Arc<Genome>, cap: usize) {
        let id = genome.id;
        if self.recent.insert(id, genome).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.recent.remove(&old);
            }
        }
    }

    /// Keep a body the events brought beside the newest ones while it is
    /// looked at.
    pub(super) fn hold(&mut self, id: GenomeId) {
        if let Some(g) = self.recent.get(&id).cloned()
            && !self.looked.iter().any(|l| l.id == id)
        {
            self.add_looked(g);
        }
    }

    pub(super) fn add_looked(&mut self, genome: Arc<Genome>) {
        self.looked.retain(|g| g.id != genome.id);
        self.looked.push_back(genome);
        while self.looked.len() > LOOKED_AT_BODIES {
            self.looked.pop_front();
        }
    }
}

/// Bodies read back from a run's archive off the UI thread: each read on a
/// thread of its own sends its genome here.
pub(super) struct BodiesRead {
    tx: std::sync::mpsc::Sender<(GenomeId, Result<Genome, String>)>,
    rx: std::sync::mpsc::Receiver<(GenomeId, Result<Genome, String>)>,
}

impl Default for BodiesRead {
    fn default() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        Self { tx, rx }
    }
}

impl RunView {
    /// The genomes whose bodies the view shows: the selected one, its
    /// parent, the picked one, the one in the editor.
    fn bodies_wanted(&self) -> Vec<GenomeId> {
        let parent = self
            .selected
            .and_then(|id| self.history.get(id))
            .and_then(|g| g.parent_id);
        [
            self.selected,
            parent,
            self.picked,
            self.editor.as_ref().map(|e| e.parent),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Take in the bodies read back or fetched, and ask for those the view
    /// shows and the history does not hold: of the run service for a
    /// followed run, read from the run's archive on a thread otherwise.
    /// Never blocks.
    pub(super) fn want_bodies(&mut self, ctx: &egui::Context) {
        let mut read = Vec::new();
        if let Some(r) = &self.bodies_read {
            read.extend(r.rx.try_iter());
        }
        for (id, body) in read {
            self.body_arrived(id, body);
        }
        for id in self.bodies_wanted() {
            if self.history.get(id).is_none() {
                continue;
            }
            self.history.hold_body(id);
            if self.history.body(id).is_some() || !self.bodies_asked.insert(id) {
                continue;
            }
            match self.history.body_source().clone() {
                BodySource::Remote => {
                    if let Some(link) = &self.remote {
                        link.fetch(id);
                    }
                }
                BodySource::Archive(dir) => {
                    let tx = self
                        .bodies_read
                        .get_or_insert_with(Default::default)
                        .tx
                        .clone();
                    let ctx = ctx.clone();
                    let spawned = std::thread::Builder::new()
                        .name("galapagos-body".to_owned())
                        .spawn(move || {
                            let body = crate::engine::archive::Archive::open(&dir)
                                .and_then(|a| a.genome(id))
                                .map_err(|e| e.to_string())
                                .and_then(|g| {
                                    g.ok_or_else(|| {
                                        format!("{} has no genome #{id}", dir.display())
                                    })
                                });
                            tx.send((id, body)).ok();
                            ctx.request_repaint();
                        });
                    if let Err(e) = spawned {
                        self.body_arrived(id, Err(format!("cannot read it: {e}")));
                    }
                }
                // every body the events brought is held: there is no other
                BodySource::Kept => {}
            }
        }
    }

    /// A genome's bodies arrived (read back or fetched), or why not.
    pub(super) fn body_arrived(&mut self, id: GenomeId, body: Result<Genome, String>) {
        match body {
            Ok(genome) => {
                self.bodies_asked.remove(&id);
                self.history.insert_body(genome);
            }
            // left asked: not asked again until another genome is selected
            Err(why) => {
                self.bodies_failed.insert(id);
                self.last_error = Some(format!("genome #{id}: {why}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::engine::archive::{Checkpoint, RunRecorder, SqliteRecorder};
    use crate::engine::events::{RunEvent, RunInfo, RunStatus, RunSummary};
    use crate::engine::genome::{FITNESS_KEY, Prompt, TokenUsage};
    use crate::engine::selection::PolicyStatus;
    use crate::studio::run::{RunHistory, read_archive};

    fn genome(id: GenomeId) -> Genome {
        let mut g = Genome {
            id,
            parent_id: id.checked_sub(1),
            iteration: id,
            valid: true,
            content: format!("x = {id}\n{}", "# pad\n".repeat((id % 9) as usize)).into(),
            prompt: Some(Prompt {
                system: "s".into(),
                user: format!("make #{id}"),
            }),
            ..Genome::default()
        };
        g.scores.insert(FITNESS_KEY.into(), id as f64);
        g.metadata.island = (id > 0).then_some((id % 2) as u32);
        g
    }

    fn admitted(id: GenomeId) -> RunEvent {
        RunEvent::GenomeAdmitted {
            genome: Arc::new(genome(id)),
            best_id: Some(id),
            best_score: Some(id as f64),
            iterations_done: id,
            policy: PolicyStatus::default(),
            active: vec![],
        }
    }

    fn info(run_dir: Option<&Path>) -> RunInfo {
        RunInfo {
            card_name: "c".into(),
            task_name: "t".into(),
            max_iterations: 1000,
            model: "m".into(),
            offline: true,
            seed: 0,
            parallel: 1,
            run_dir: run_dir.map(Path::to_path_buf),
            unsandboxed: None,
            forked_from: None,
            clearance: None,
        }
    }

    /// A recorded live run keeps the bodies of its newest genomes and of
    /// those looked at; the others are the archive's to give back.
    #[test]
    fn a_recorded_runs_history_keeps_the_newest_bodies_and_those_looked_at() {
        let mut h = RunHistory::new();
        h.apply(RunEvent::Started(info(Some(Path::new("/runs/r")))));
        assert_eq!(
            h.body_source(),
            &BodySource::Archive(PathBuf::from("/runs/r"))
        );
        let n = RECENT_BODIES as u64 + 10;
        for id in 0..n {
            h.apply(admitted(id));
        }
        assert_eq!(h.genomes.len() as u64, n);
        assert!(h.get(0).is_some(), "every head is held");
        assert!(h.body(9).is_none(), "an old body is left to the archive");
        assert_eq!(
            h.body(10).map(|g| g.content.clone()),
            Some(genome(10).content)
        );
        // looked at, it stays while newer genomes come
        h.hold_body(10);
        for id in n..n + 50 {
            h.apply(admitted(id));
        }
        assert!(h.body(11).is_none());
        assert!(h.body(10).is_some());
        // read back: kept; a genome of another run: refused
        assert!(h.insert_body(genome(3)));
        assert_eq!(
            h.body(3).and_then(|g| g.prompt.clone()).map(|p| p.user),
            Some("make #3".to_owned())
        );
        assert!(!h.insert_body(genome(10_000)));
        for id in 0..LOOKED_AT_BODIES as u64 + 1 {
            h.insert_body(genome(id));
        }
        assert!(h.body(0).is_none(), "at most {LOOKED_AT_BODIES} looked at");
    }

    /// With no archive to read them back from, every body is kept; a
    /// followed run's events carry heads, never taken for bodies.
    #[test]
    fn bodies_are_kept_where_nothing_could_give_them_back_and_never_made_of_heads() {
        let mut kept = RunHistory::new();
        kept.apply(RunEvent::Started(info(None)));
        let mut remote = RunHistory::new();
        remote.set_body_source(BodySource::Remote);
        remote.apply(RunEvent::Started(info(Some(Path::new("/elsewhere")))));
        assert_eq!(remote.body_source(), &BodySource::Remote);
        for id in 0..RECENT_BODIES as u64 * 2 {
            kept.apply(admitted(id));
            remote.apply(admitted(id));
        }
        assert!((0..RECENT_BODIES as u64 * 2).all(|id| kept.body(id).is_some()));
        assert!((0..RECENT_BODIES as u64 * 2).all(|id| remote.body(id).is_none()));
    }

    fn record(dir: &Path, n: u64) {
        let mut rec = SqliteRecorder::create(dir).unwrap();
        let card = crate::engine::card::Card::new_default("bodies");
        rec.begin(&info(Some(dir)), &card, Path::new("task"))
            .unwrap();
        let batch: Vec<Arc<Genome>> = (0..n).map(|i| Arc::new(genome(i))).collect();
        let ck = Checkpoint {
            iterations_done: n - 1,
            last_iteration: n - 1,
            next_id: n,
            rng: crate::engine::rng::seeded(0),
            policy: serde_json::Value::Null,
            memory: serde_json::Value::Null,
            usage: TokenUsage::default(),
            valid: n,
            invalid: 0,
            rejected: 0,
            wall_secs: 0.0,
            steering: Default::default(),
        };
        rec.record_iteration(&batch, &ck).unwrap();
        rec.finish(&RunSummary {
            iterations: n - 1,
            genomes: n,
            ..RunSummary::empty(RunStatus::Completed)
        })
        .unwrap();
    }

    /// A recorded run opened in the view holds its heads; the selected
    /// genome's program and prompt (and its parent's) are read back from
    /// the archive off the UI thread, and searched there by the table.
    #[test]
    fn a_recorded_runs_bodies_are_read_back_when_a_genome_is_selected() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        record(&dir, 40);
        let run = read_archive(&dir).unwrap();
        assert_eq!(run.history.genomes.len(), 40);
        assert_eq!(run.history.best_id, Some(39));
        assert!(
            (0..40).all(|id| run.history.body(id).is_none()),
            "heads only"
        );
        let mut view = RunView::default();
        view.show_archived(run);
        view.select(Some(17));
        let ctx = egui::Context::default();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(view.has_body(17) && view.has_body(16)) {
            assert!(Instant::now() < deadline, "genome #17 was never read back");
            view.logic(&ctx);
            std::thread::sleep(Duration::from_millis(5));
        }
        let g = view.history().body(17).unwrap();
        assert_eq!(g.content, genome(17).content);
        assert_eq!(g.prompt.as_ref().map(|p| p.user.as_str()), Some("make #17"));
        assert!(!view.has_body(30), "only what is looked at");

        // the table finds a program of the archive it does not hold
        let mut table = crate::studio::run::ArchiveTable::default();
        table.search = "x = 30".into();
        let deadline = Instant::now() + Duration::from_secs(60);
        while table.refresh(view.history()) {
            assert!(Instant::now() < deadline, "the search never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
        let found: Vec<GenomeId> = table.ordered_ids(view.history()).collect();
        assert_eq!(found, vec![30]);
    }

    /// An island population of a recorded run is replayed with the
    /// genomes' programs, read from the archive (its MAP-Elites grid's
    /// complexity is the program's length): the history holds heads only.
    #[test]
    fn a_recorded_island_run_is_replayed_with_its_programs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        record(&dir, 60);
        let run = read_archive(&dir).unwrap();
        let spec: crate::engine::card::SlotSpec = serde_yaml::from_str(
            "kind: islands\nnum_islands: 2\nfeature_dimensions: [complexity]\nfeature_bins: 4\nmigration_interval: 5\n",
        )
        .unwrap();
        let registry = crate::engine::registry::Registry::builtin();
        let mut mirror = super::super::structure::StructureMirror::for_population(&spec, &registry);
        let deadline = Instant::now() + Duration::from_secs(60);
        while mirror.sync(&run.history, Duration::from_millis(3)) {
            assert!(Instant::now() < deadline, "the replay never ended");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(mirror.fed(), 60);
        let islands = mirror.islands().unwrap();
        assert_eq!(islands.islands.len(), 2);
        assert!(islands.islands.iter().all(|i| i.cells > 1), "{islands:?}");
    }
}
