//! `DiffProposer`: one model call whose reply is applied to the parent as
//! SEARCH/REPLACE blocks (strict, EVOLVE-BLOCK enforced), with a
//! full-rewrite fallback and no-op detection.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::apply_reply;
use super::{Proposal, ProposalError, ProposalRequest, Proposer};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::Genome;
use crate::engine::model::{LanguageModel, ModelError, ModelRequest};
use crate::engine::params::{ParamError, ParamSpec, ParamType};
use crate::engine::prompt::EditMode;
use crate::engine::rng::SearchRng;
use crate::engine::task::program_folder::EditRules;
use crate::engine::text::patch::{PatchKind, PatchOptions};

/// Parameters of [`DiffProposer`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiffParams {
    /// A child longer than this many characters is rejected.
    pub max_code_length: usize,
    /// Take a fenced code block as the whole program when the reply has no
    /// SEARCH/REPLACE blocks.
    pub allow_full_rewrite: bool,
    /// Ask for the whole program instead of SEARCH/REPLACE edits (a reply
    /// with edits is still applied as edits).
    pub full_rewrite: bool,
}

impl Default for DiffParams {
    fn default() -> Self {
        Self {
            max_code_length: 60_000,
            allow_full_rewrite: true,
            full_rewrite: false,
        }
    }
}

/// The SEARCH/REPLACE diff proposer (card kind `diff`).
pub struct DiffProposer {
    model: Arc<dyn LanguageModel>,
    params: DiffParams,
    /// The task's language tag, preferred when picking a full rewrite.
    language: String,
    /// Which files of a folder program may change.
    rules: EditRules,
}

impl std::fmt::Debug for DiffProposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiffProposer")
            .field("model", &self.model.describe())
            .field("params", &self.params)
            .field("language", &self.language)
            .finish()
    }
}

impl Component for DiffProposer {
    type Slot = dyn Proposer;
    type Params = DiffParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "diff",
        type_name: "DiffProposer",
        summary: "One model call → SEARCH/REPLACE diff (full-rewrite fallback), no-op detection",
        params: &[
            super::MAX_CODE_LENGTH,
            ParamSpec {
                key: "allow_full_rewrite",
                doc: "Accept a whole program in a code block when the reply has no SEARCH/REPLACE blocks",
                ty: ParamType::Bool,
            },
            ParamSpec {
                key: "full_rewrite",
                doc: "Ask the model for the whole program instead of SEARCH/REPLACE edits",
                ty: ParamType::Bool,
            },
        ],
    };

    fn build(params: DiffParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        Ok(
            Self::new(Arc::clone(&ctx.model), params, &ctx.task.language)
                .with_rules(ctx.task.edit_rules()),
        )
    }
}

impl DiffProposer {
    /// A proposer over `model` for programs in `language` (fence tag).
    pub fn new(model: Arc<dyn LanguageModel>, params: DiffParams, language: &str) -> Self {
        Self {
            model,
            params,
            language: language.to_owned(),
            rules: EditRules::default(),
        }
    }

    /// The same proposer for a folder program whose files change as
    /// `rules` allow (without them, none may).
    pub fn with_rules(mut self, rules: EditRules) -> Self {
        self.rules = rules;
        self
    }

    /// The decoded parameters.
    pub fn params(&self) -> &DiffParams {
        &self.params
    }
}

#[async_trait::async_trait]
impl Proposer for DiffProposer {
    fn edit_mode(&self, _inspirations: &[Arc<Genome>], _rng: &mut SearchRng) -> EditMode {
        if self.params.full_rewrite {
            EditMode::FullRewrite
        } else {
            EditMode::Diff
        }
    }

    async fn propose(&self, request: ProposalRequest) -> Proposal {
        let model_request = ModelRequest {
            system: request.prompt.system.clone(),
            user: request.prompt.user.clone(),
            seed: request.seed,
        };
        let reply = match self.model.complete(&model_request).await {
            Ok(reply) => reply,
            Err(ModelError::Failed { message, raw }) => {
                return Proposal {
                    content: Err(ProposalError::Model(message)),
                    response: raw,
                    model: None,
                    usage: None,
                    patch_type: PatchKind::Diff.as_str().to_owned(),
                    parent_id: None,
                    agent: None,
                };
            }
            Err(ModelError::Fatal { message }) => {
                return Proposal {
                    content: Err(ProposalError::Fatal(message)),
                    response: None,
                    model: None,
                    usage: None,
                    patch_type: PatchKind::Diff.as_str().to_owned(),
                    parent_id: None,
                    agent: None,
                };
            }
        };
        let options = PatchOptions {
            language: &self.language,
            allow_full_rewrite: self.params.allow_full_rewrite || self.params.full_rewrite,
        };
        let (content, patch_type) = match apply_reply(
            &request.parent.content,
            &reply.text,
            &options,
            self.params.max_code_length,
            &self.rules,
        ) {
            Ok(edited) => (Ok(edited.content), edited.kind),
            Err(e) => (Err(e), PatchKind::Diff),
        };
        Proposal {
            content,
            response: Some(reply.text),
            model: Some(reply.model),
            usage: reply.usage,
            patch_type: patch_type.as_str().to_owned(),
            parent_id: None,
            agent: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::genome::Prompt;
    use crate::engine::params::ParamMap;
    use crate::engine::params::ParamValue;
    use crate::engine::registry::Entry;
    use crate::engine::task::Task;
    use crate::engine::testing::ScriptedModel;

    const PARENT: &str =
        "import sys\n# EVOLVE-BLOCK-START\na = 1.0\nb = 2\n# EVOLVE-BLOCK-END\nprint(a + b)\n";

    fn request(seed: u64) -> ProposalRequest {
        ProposalRequest {
            prompt: Prompt {
                system: "sys".into(),
                user: "improve".into(),
            },
            parent: Arc::new(Genome {
                content: PARENT.into(),
                valid: true,
                ..Genome::default()
            }),
            parents: Vec::new(),
            inspirations: vec![],
            seed,
            pool: Vec::new(),
            mode: crate::engine::prompt::EditMode::Diff,
            env: crate::engine::testing::proposer_env(),
        }
    }

    fn proposer(model: Arc<ScriptedModel>, params: DiffParams) -> DiffProposer {
        DiffProposer::new(model, params, "python")
    }

    fn block(search: &str, replace: &str) -> String {
        format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n")
    }

    #[test]
    fn build_reads_card_values_and_task_language() {
        let task = Task {
            dir: std::env::temp_dir(),
            name: "t".into(),
            initial_program: PARENT.into(),
            program_file: "initial_program.py".into(),
            suffix: ".py".into(),
            language: "python".into(),
            description: "d".into(),
            evaluator_path: std::env::temp_dir().join("evaluator.py"),
            ..Task::default()
        };
        let ctx = BuildContext {
            task: &task,
            model: ScriptedModel::replies(vec![]),
            parallel: 1,
            run_dir: None,
            key_vars: &[],
            meter: Default::default(),
        };
        let mut params = ParamMap::default();
        params.set("max_code_length", ParamValue::Int(500));
        params.set("allow_full_rewrite", ParamValue::Bool(false));
        let p = DiffProposer::build(params.decode().unwrap(), &ctx).unwrap();
        assert_eq!(
            p.params(),
            &DiffParams {
                max_code_length: 500,
                allow_full_rewrite: false,
                ..DiffParams::default()
            }
        );
        assert_eq!(p.language, "python");
        let mut bad = ParamMap::default();
        bad.set("max_code_lenght", ParamValue::Int(500));
        assert!(Entry::of::<DiffProposer>().check(&bad).is_err());
    }

    #[tokio::test]
    async fn two_blocks_apply_and_reply_is_kept() {
        let reply = format!(
            "Tune both constants.\n{}{}",
            block("a = 1.0", "a = 1.5"),
            block("b = 2", "b = 3")
        );
        let model = ScriptedModel::replies(vec![ScriptedModel::text(&reply)]);
        let p = proposer(Arc::clone(&model), DiffParams::default());
        let out = p.propose(request(42)).await;
        assert_eq!(
            out.content.unwrap(),
            "import sys\n# EVOLVE-BLOCK-START\na = 1.5\nb = 3\n# EVOLVE-BLOCK-END\nprint(a + b)\n"
        );
        assert_eq!(out.response.as_deref(), Some(reply.as_str()));
        assert_eq!(out.model.as_deref(), Some("scripted"));
        assert_eq!(out.usage.map(|u| u.total_tokens()), Some(15));
        assert_eq!(out.patch_type, "diff");
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen[0].seed, 42);
        assert_eq!(seen[0].system, "sys");
        assert_eq!(seen[0].user, "improve");
    }

    #[tokio::test]
    async fn unmatched_search_is_a_parse_error_with_the_reply() {
        let reply = block("c = 3", "c = 4");
        let p = proposer(
            ScriptedModel::replies(vec![ScriptedModel::text(&reply)]),
            DiffParams::default(),
        );
        let out = p.propose(request(1)).await;
        match out.content {
            Err(ProposalError::Parse(msg)) => {
                assert!(msg.contains("block 1") && msg.contains("`c = 3`"), "{msg}")
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
        assert_eq!(out.response.as_deref(), Some(reply.as_str()));
        assert_eq!(out.model.as_deref(), Some("scripted"));
    }

    #[tokio::test]
    async fn model_failure_keeps_raw_body() {
        let p = proposer(
            ScriptedModel::replies(vec![Err(ModelError::Failed {
                message: "HTTP 500".into(),
                raw: Some("{\"error\":\"boom\"}".into()),
            })]),
            DiffParams::default(),
        );
        let out = p.propose(request(1)).await;
        assert_eq!(out.content, Err(ProposalError::Model("HTTP 500".into())));
        assert_eq!(out.response.as_deref(), Some("{\"error\":\"boom\"}"));
    }

    #[tokio::test]
    async fn fatal_passes_through() {
        let p = proposer(
            ScriptedModel::replies(vec![Err(ModelError::Fatal {
                message: "invalid API key".into(),
            })]),
            DiffParams::default(),
        );
        let out = p.propose(request(1)).await;
        assert_eq!(
            out.content,
            Err(ProposalError::Fatal("invalid API key".into()))
        );
    }

    #[tokio::test]
    async fn noop_is_reported_as_noop() {
        let p = proposer(
            ScriptedModel::replies(vec![ScriptedModel::text(&block("b = 2", "b = 2"))]),
            DiffParams::default(),
        );
        let out = p.propose(request(1)).await;
        assert!(
            matches!(out.content, Err(ProposalError::NoOp(ref m)) if m.contains("unchanged")),
            "{:?}",
            out.content
        );
    }

    #[tokio::test]
    async fn full_rewrite_asks_for_the_whole_program_and_takes_it() {
        let rewritten = PARENT.replace("a = 1.0", "a = 3.0");
        let p = proposer(
            ScriptedModel::replies(vec![ScriptedModel::text(&format!(
                "Here it is:\n```python\n{rewritten}```\n"
            ))]),
            DiffParams {
                full_rewrite: true,
                allow_full_rewrite: false,
                ..DiffParams::default()
            },
        );
        let mut rng = crate::engine::rng::seeded(0);
        assert_eq!(p.edit_mode(&[], &mut rng), EditMode::FullRewrite);
        let plain = proposer(ScriptedModel::replies(vec![]), DiffParams::default());
        assert_eq!(plain.edit_mode(&[], &mut rng), EditMode::Diff);
        let out = p.propose(request(1)).await;
        assert_eq!(
            out.content.ok().as_ref().map(|t| t.text()).as_deref(),
            Some(rewritten.as_str())
        );
        assert_eq!(out.patch_type, "full");
    }

    #[tokio::test]
    async fn growth_past_max_code_length_is_rejected() {
        let big = format!("b = {}", "9".repeat(200));
        let p = proposer(
            ScriptedModel::replies(vec![ScriptedModel::text(&block("b = 2", &big))]),
            DiffParams {
                max_code_length: 100,
                allow_full_rewrite: true,
                ..DiffParams::default()
            },
        );
        let out = p.propose(request(1)).await;
        match out.content {
            Err(ProposalError::Parse(msg)) => assert!(msg.contains("max_code_length"), "{msg}"),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn full_rewrite_fallback_and_its_switch() {
        let reply = "New block:\n```python\na = 7.0\nb = 2\n```\n";
        let p = proposer(
            ScriptedModel::replies(vec![ScriptedModel::text(reply)]),
            DiffParams::default(),
        );
        let out = p.propose(request(1)).await;
        assert_eq!(
            out.content.unwrap(),
            "import sys\n# EVOLVE-BLOCK-START\na = 7.0\nb = 2\n# EVOLVE-BLOCK-END\nprint(a + b)\n"
        );
        assert_eq!(out.patch_type, "full");
        let p = proposer(
            ScriptedModel::replies(vec![ScriptedModel::text(reply)]),
            DiffParams {
                allow_full_rewrite: false,
                ..DiffParams::default()
            },
        );
        let out = p.propose(request(1)).await;
        assert!(
            matches!(out.content, Err(ProposalError::Parse(ref m)) if m.contains("no SEARCH/REPLACE blocks")),
            "{:?}",
            out.content
        );
    }
}
