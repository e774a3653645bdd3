//! Slot 4 — Proposer: the variation operator. Turns a built prompt into a new
//! candidate (one model call + edit application for `DiffProposer`).

pub mod agent;
pub mod agent_command;
pub mod crossover;
pub mod diff;
pub mod novelty;

pub use agent::{AgentParams, AgentProposer};
pub use agent_command::{AgentCommandParams, AgentCommandProposer, PromptVia};
pub use crossover::{CrossoverParams, CrossoverProposer};
pub use diff::{DiffParams, DiffProposer};

use std::sync::Arc;

use crate::engine::component::{Fills, Slot, SlotTrait};
use crate::engine::evaluator::{Candidate, Evaluation, Evaluator};
use crate::engine::genome::{Genome, GenomeId, Prompt, TokenUsage, Tree};
use crate::engine::memory::{Knowledge, Memory, MemoryQuery};
use crate::engine::params::{ParamSpec, ParamType};
use crate::engine::prompt::EditMode;
use crate::engine::rng::SearchRng;
use crate::engine::task::program_folder::{EditOp, EditRules};
use crate::engine::text::patch::{PatchKind, PatchOptions};
use crate::engine::text::tree_edits::{
    EditAction, EditRules as TreeRules, Opaque, TreeView, apply_tree_reply,
};

/// The `max_code_length` parameter every proposer that writes programs takes.
pub const MAX_CODE_LENGTH: ParamSpec = ParamSpec {
    key: "max_code_length",
    doc: "Reject a child program longer than this many characters",
    ty: ParamType::Int {
        min: 100,
        max: 100_000_000,
    },
};

/// A child made from a model's reply (see [`apply_reply`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Edited {
    /// The child program.
    pub content: Tree,
    /// How: SEARCH/REPLACE edits or a full rewrite.
    pub kind: PatchKind,
}

/// Turn a model's reply into a child of `parent`, the one place proposers
/// apply edits. A single-file program takes SEARCH/REPLACE blocks or a full
/// rewrite ([`crate::engine::text::patch::apply_reply`]); the child keeps
/// its file's name. A folder program takes edits that name their files
/// ([`crate::engine::text::tree_edits::apply_tree_reply`]: SEARCH/REPLACE blocks
/// under their path, unified diffs, `*** Begin Patch`, named rewrites),
/// checked against the task's `rules`; a refusal names the path and the
/// rule, and reaches the model on the next retry as any parse error does.
/// A child whose longest file has more than `max_code_length` characters
/// is refused.
pub fn apply_reply(
    parent: &Tree,
    reply: &str,
    options: &PatchOptions<'_>,
    max_code_length: usize,
    rules: &EditRules,
) -> Result<Edited, ProposalError> {
    let (content, kind) = match parent.single_text() {
        Some(text) => match crate::engine::text::patch::apply_reply(text, reply, options) {
            Ok(result) => (parent.with_single_text(result.content), result.kind),
            Err(e) if e.is_noop() => return Err(ProposalError::NoOp(e.to_string())),
            Err(e) => return Err(ProposalError::Parse(e.to_string())),
        },
        None => apply_to_folder(parent, reply, options, rules)?,
    };
    let len = content.longest_text_chars();
    if len > max_code_length {
        let what = if content.is_single() {
            "the child"
        } else {
            "the child's longest file"
        };
        return Err(ProposalError::Parse(format!(
            "program grew past max_code_length: {what} has {len} characters, the limit is \
             {max_code_length}; make the program shorter instead of adding code"
        )));
    }
    Ok(Edited { content, kind })
}

/// A folder program's reply, applied file by file.
fn apply_to_folder(
    parent: &Tree,
    reply: &str,
    options: &PatchOptions<'_>,
    rules: &EditRules,
) -> Result<(Tree, PatchKind), ProposalError> {
    let files = parent.texts();
    let opaque = parent
        .files()
        .filter(|(_, blob)| blob.is_binary())
        .map(|(path, _)| (path.to_owned(), Opaque::Binary))
        .collect();
    let view = TreeView {
        files: &files,
        opaque: &opaque,
    };
    let editable = |path: &str, action: EditAction| {
        let op = match action {
            EditAction::Change => EditOp::Modify,
            EditAction::Add => EditOp::Add,
            EditAction::Delete => EditOp::Delete,
        };
        // The rule's text starts with the path, which the refusal names.
        rules.check(path, op).map_err(|rule| {
            rule.strip_prefix(path)
                .and_then(|r| r.strip_prefix(": "))
                .map_or(rule.clone(), str::to_owned)
        })
    };
    let tree_rules = TreeRules {
        editable: &editable,
        max_files: rules.max_files(),
        language: options.language,
        allow_full_rewrite: options.allow_full_rewrite,
    };
    match apply_tree_reply(&view, reply, &tree_rules) {
        Ok(edit) => {
            let mut texts = files;
            edit.apply_to(&mut texts);
            Ok((parent.with_texts(texts), edit.kind()))
        }
        Err(e) if e.is_noop() => Err(ProposalError::NoOp(e.to_string())),
        Err(e) => Err(ProposalError::Parse(e.to_string())),
    }
}

/// The run's memory, shared by the loop (which writes after each iteration)
/// and proposers (which may read and write through [`ProposerEnv`]).
pub type SharedMemory = Arc<tokio::sync::RwLock<Box<dyn Memory>>>;

/// What a proposer may use besides its prompt: the run's evaluator and
/// memory, as tools. An autonomous agent that tries its candidates and takes
/// notes mid-iteration is a proposer that uses this, not a mode of the loop.
#[derive(Clone)]
pub struct ProposerEnv {
    evaluator: Arc<dyn Evaluator>,
    memory: SharedMemory,
    /// Id trial candidates carry (the iteration's).
    candidate_id: u64,
}

impl std::fmt::Debug for ProposerEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProposerEnv")
            .field("candidate_id", &self.candidate_id)
            .finish_non_exhaustive()
    }
}

impl ProposerEnv {
    pub fn new(evaluator: Arc<dyn Evaluator>, memory: SharedMemory, candidate_id: u64) -> Self {
        Self {
            evaluator,
            memory,
            candidate_id,
        }
    }

    /// Score `content` with the task's evaluator, as a trial: the loop still
    /// evaluates whatever the proposal returns (it never takes a score from a
    /// proposer), so a trial costs one evaluation more.
    pub async fn evaluate(&self, content: &Tree) -> Evaluation {
        self.evaluator
            .evaluate(&Candidate {
                id: self.candidate_id,
                content: content.clone(),
            })
            .await
    }

    /// What the run's memory holds now, as `query` asks for it.
    pub async fn read_memory(&self, query: &MemoryQuery) -> Knowledge {
        self.memory.read().await.read(query)
    }

    /// The id trial candidates carry (the iteration's).
    pub fn candidate_id(&self) -> u64 {
        self.candidate_id
    }

    /// Hand knowledge to the run's memory ([`Memory::write`]; what it keeps
    /// is the memory's choice).
    pub async fn write_memory(&self, knowledge: Knowledge) {
        self.memory.write().await.write(knowledge);
    }
}

/// Input to one proposal.
#[derive(Clone, Debug)]
pub struct ProposalRequest {
    pub prompt: Prompt,
    /// The primary parent: the program the prompt shows, and the child's
    /// parent unless the proposal names another of `parents`.
    pub parent: Arc<Genome>,
    /// Every parent the selection policy chose, primary first (the identity
    /// policy hands over the whole pool and lets the proposer pick).
    pub parents: Vec<Arc<Genome>>,
    pub inspirations: Vec<Arc<Genome>>,
    /// Seed drawn from the run's RNG for this proposal.
    pub seed: u64,
    /// The fittest genomes of the population (as many as
    /// [`Proposer::novelty_pool_size`] asked for), for novelty checks.
    pub pool: Vec<Arc<Genome>>,
    /// The edit mode the prompt was built for (what
    /// [`Proposer::edit_mode`] chose for this attempt).
    pub mode: EditMode,
    /// The run's evaluator and memory, as tools.
    pub env: ProposerEnv,
}

/// Why a proposal produced no candidate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    /// The reply had no usable edit (no blocks, unmatched SEARCH, edit outside
    /// the EVOLVE-BLOCK, broken markers...).
    #[error("{0}")]
    Parse(String),
    /// The edit left the program unchanged.
    #[error("{0}")]
    NoOp(String),
    /// The model call failed (after the client's own retries).
    #[error("{0}")]
    Model(String),
    /// The proposer's own process failed or overran its time (a coding
    /// agent that exited with an error or was killed at its limit).
    #[error("{0}")]
    Failed(String),
    /// The run must stop (e.g. authentication failed).
    #[error("{0}")]
    Fatal(String),
}

/// The outcome of one proposal. The raw response is kept even on failure.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub content: Result<Tree, ProposalError>,
    pub response: Option<String>,
    pub model: Option<String>,
    pub usage: Option<TokenUsage>,
    /// `diff`, `full`, `crossover`...
    pub patch_type: String,
    /// The parent the content was made from, when the proposer chose one of
    /// [`ProposalRequest::parents`] other than the primary (`None`: the
    /// primary).
    pub parent_id: Option<GenomeId>,
    /// What a coding agent did, when one made the proposal.
    pub agent: Option<Box<crate::engine::agent_run::AgentRun>>,
}

/// The proposer slot (slot 4 of the loop, see ARCHITECTURE.md). `propose` is
/// the one required verb.
#[async_trait::async_trait]
pub trait Proposer: Send + Sync {
    async fn propose(&self, request: ProposalRequest) -> Proposal;

    /// How many of the population's fittest genomes the proposer wants in
    /// [`ProposalRequest::pool`] (for novelty rejection); 0 = none.
    fn novelty_pool_size(&self) -> usize {
        0
    }

    /// The edit mode for the next attempt, chosen before its prompt is built
    /// (patch-type mixing). `inspirations` are the attempt's context
    /// programs (crossover needs one). The default is always
    /// [`EditMode::Diff`] and draws nothing from `rng`.
    fn edit_mode(&self, _inspirations: &[Arc<Genome>], _rng: &mut SearchRng) -> EditMode {
        EditMode::Diff
    }
}

impl SlotTrait for dyn Proposer {
    const SLOT: Slot = Slot::Proposer;
}

impl<T: Proposer + 'static> Fills<dyn Proposer> for T {
    fn boxed(self) -> Box<dyn Proposer> {
        Box::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testing::TrivialEvaluator;

    #[test]
    fn a_folder_programs_reply_is_checked_against_the_tasks_rules() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/fit_package");
        let task = crate::engine::task::Task::load(&dir).unwrap();
        let rules = task.edit_rules();
        let mut files: std::collections::BTreeMap<String, crate::engine::tree::Blob> = task
            .initial_program
            .files()
            .map(|(p, b)| (p.to_owned(), b.clone()))
            .collect();
        files.insert(
            "fitpkg/table.bin".into(),
            crate::engine::tree::Blob::from_bytes(vec![0, 159, 146, 150]),
        );
        let parent = Tree::folder(files);
        let options = PatchOptions {
            language: "python",
            allow_full_rewrite: true,
        };
        let apply = |reply: &str, max: usize| apply_reply(&parent, reply, &options, max, &rules);
        let reply = "fitpkg/model.py\n<<<<<<< SEARCH\nWEIGHTS = [0.40, 0.70]  # one weight per feature: bias, periodic\n=======\nWEIGHTS = [0.40, 1.70]  # one weight per feature: bias, periodic\n>>>>>>> REPLACE\n";
        let child = apply(reply, 60_000).unwrap();
        assert_eq!(child.kind, PatchKind::Diff);
        assert!(
            child
                .content
                .text_of("fitpkg/model.py")
                .unwrap()
                .contains("1.70")
        );
        // The binary file is carried, unchanged, and shared with the parent.
        assert_eq!(
            child
                .content
                .get("fitpkg/table.bin")
                .map(|b| b.id().clone()),
            parent.get("fitpkg/table.bin").map(|b| b.id().clone())
        );
        let err = apply(reply, 300).unwrap_err().to_string();
        assert!(err.contains("the child's longest file has"), "{err}");
        let err = apply(
            "*** Begin Patch\n*** Delete File: fitpkg/table.bin\n*** End Patch",
            60_000,
        )
        .unwrap_err();
        assert!(
            matches!(&err, ProposalError::Parse(m) if m.contains("`fitpkg/table.bin` is a binary file")),
            "{err}"
        );
        let err = apply(
            "*** Begin Patch\n*** Add File: ../escape.py\n+x = 1\n*** End Patch",
            60_000,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`../escape.py` leaves the program's folder"),
            "{err}"
        );
        let err = apply(
            "*** Begin Patch\n*** Add File: notes/plan.py\n+x = 1\n*** End Patch",
            60_000,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "refused: adding `notes/plan.py` is not allowed: outside the editable files"
            ),
            "{err}"
        );
        let err = apply(
            "fitpkg/model.py\n<<<<<<< SEARCH\nWEIGHTS = [0.40, 0.70]  # one weight per feature: bias, periodic\n=======\nWEIGHTS = [0.40, 0.70]  # one weight per feature: bias, periodic\n>>>>>>> REPLACE\n",
            60_000,
        )
        .unwrap_err();
        assert!(matches!(err, ProposalError::NoOp(_)), "{err}");
    }

    /// Notes kept as written.
    struct Notes(Vec<String>);

    #[async_trait::async_trait]
    impl Memory for Notes {
        fn read(&self, query: &MemoryQuery) -> Knowledge {
            let mut notes = self.0.clone();
            if let Some(max) = query.max_chars {
                notes.retain(|n| n.len() <= max);
            }
            Knowledge { notes }
        }

        fn write(&mut self, knowledge: Knowledge) {
            self.0.extend(knowledge.notes);
        }
    }

    #[tokio::test]
    async fn the_environment_evaluates_and_reads_and_writes_the_run_memory() {
        let evaluator = TrivialEvaluator::default();
        let memory: Box<dyn Memory> = Box::new(Notes(vec!["a long first note".into()]));
        let memory: SharedMemory = Arc::new(tokio::sync::RwLock::new(memory));
        let env = ProposerEnv::new(Arc::new(evaluator.clone()), Arc::clone(&memory), 3);
        let e = env
            .evaluate(&"A = 2.5\nB = -1.25\nC = 0.75\nD = 0.0\n".into())
            .await;
        assert!(e.valid);
        assert_eq!(e.scores["combined_score"], 1.0);
        assert_eq!(evaluator.calls(), 1);
        env.write_memory(Knowledge {
            notes: vec!["tried X".into()],
        })
        .await;
        assert_eq!(
            env.read_memory(&MemoryQuery::all()).await.notes,
            vec!["a long first note".to_owned(), "tried X".to_owned()]
        );
        let short = MemoryQuery {
            max_chars: Some(8),
            ..MemoryQuery::all()
        };
        assert_eq!(
            env.read_memory(&short).await.notes,
            vec!["tried X".to_owned()]
        );
        // the loop's handle sees what the proposer wrote
        assert_eq!(memory.read().await.read(&MemoryQuery::all()).notes.len(), 2);
    }
}
