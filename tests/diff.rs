#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a panic here is a failed test"
)]
//! End to end: the default prompt → the offline model → the DiffProposer.
//! Every proposal must apply cleanly inside the EVOLVE-BLOCK, and a chain of
//! proposals (each child the next parent) must keep the harness identical.

use std::sync::Arc;

use galapagos::engine::genome::{FITNESS_KEY, Genome};
use galapagos::engine::memory::Knowledge;
use galapagos::engine::model::OfflineModel;
use galapagos::engine::prompt::{
    DefaultPromptBuilder, DefaultPromptParams, EditMode, PromptBuilder, PromptContext, TaskBrief,
};
use galapagos::engine::proposer::{DiffParams, DiffProposer, ProposalRequest, Proposer};
use galapagos::engine::rng::seeded;
use galapagos::engine::text::unified_diff;

const PROGRAM: &str = r#""""Circle packing, simplified."""
import math

# EVOLVE-BLOCK-START
def construct(n=26):
    """Place n circles on a 5x5 grid."""
    radius = 0.1
    margin = 0.05
    spacing = 0.2
    centers = []
    for i in range(n):
        centers.append((margin + spacing * (i % 5), margin + spacing * (i // 5)))
    return centers, [radius] * n
# EVOLVE-BLOCK-END


def run_packing():
    centers, radii = construct(26)
    return sum(radii) / 2.635
"#;

fn harness(text: &str) -> String {
    let start = text.find("# EVOLVE-BLOCK-START").unwrap();
    let end = text.find("# EVOLVE-BLOCK-END").unwrap();
    format!("{}{}", &text[..start], &text[end..])
}

fn genome(id: u64, content: &str, score: f64) -> Genome {
    let mut g = Genome {
        id,
        valid: true,
        content: content.to_owned().into(),
        ..Genome::default()
    };
    g.scores.insert(FITNESS_KEY.into(), score);
    g
}

#[tokio::test]
async fn offline_model_drives_the_diff_proposer() {
    let task = TaskBrief {
        name: "circle_packing".into(),
        description: "Pack 26 circles in the unit square.".into(),
        language: "python".into(),
        timeout_secs: Some(60.0),
        ..TaskBrief::default()
    };
    let builder = DefaultPromptBuilder::new(DefaultPromptParams::default());
    let proposer = DiffProposer::new(
        Arc::new(OfflineModel::new()),
        DiffParams::default(),
        "python",
    );
    let inspiration = Arc::new(genome(
        9,
        &PROGRAM.replace("spacing = 0.2", "spacing = 0.19"),
        0.7,
    ));
    let mut rng = seeded(5);
    let mut parent = Arc::new(genome(0, PROGRAM, 0.5));
    let mut successes = 0;
    for iteration in 0..40u64 {
        let inspirations = vec![Arc::clone(&inspiration)];
        let knowledge = Knowledge::default();
        let ctx = PromptContext {
            task: &task,
            parent: &parent,
            grandparent: None,
            inspirations: &inspirations,
            knowledge: &knowledge,
            failed_attempts: &[],
            mode: EditMode::Diff,
        };
        let prompt = builder.build(&ctx, &mut rng);
        let proposal = proposer
            .propose(ProposalRequest {
                prompt,
                parent: Arc::clone(&parent),
                parents: vec![Arc::clone(&parent)],
                inspirations,
                seed: 1000 + iteration,
                pool: Vec::new(),
                mode: EditMode::Diff,
                env: galapagos::engine::testing::proposer_env(),
            })
            .await;
        assert!(proposal.response.is_some());
        assert_eq!(proposal.model.as_deref(), Some("offline"));
        assert!(proposal.usage.is_some_and(|u| u.prompt_tokens > 0));
        let child = match proposal.content {
            Ok(child) => child.text().into_owned(),
            Err(e) => panic!("iteration {iteration}: {e}\n{:?}", proposal.response),
        };
        assert_eq!(proposal.patch_type, "diff");
        assert_eq!(harness(&child), harness(PROGRAM), "harness changed");
        let diff = unified_diff(&parent.content.text(), &child);
        assert!(diff.starts_with("--- parent\n+++ child\n"));
        successes += 1;
        parent = Arc::new(genome(iteration + 1, &child, 0.5));
    }
    assert_eq!(successes, 40);

    assert_ne!(parent.content, PROGRAM);
}
