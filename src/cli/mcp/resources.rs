//! The server's resources: every built-in card's YAML
//! (`galapagos://card/NAME`), the summary of each run in the runs folder
//! (`galapagos://run/PATH`, PATH the run folder's absolute path without
//! its leading `/`; what `run_status` answers) and the skill that tells an
//! agent how to use the tools (`galapagos://skill`, the repository's
//! `SKILL.md`).

use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

/// The skill: how an agent makes a task, picks a card, sets a budget,
/// starts, watches, steers and takes the best program home.
pub(super) const SKILL: &str = include_str!("../../../SKILL.md");

const CARD: &str = "galapagos://card/";
const RUN: &str = "galapagos://run/";
const SKILL_URI: &str = "galapagos://skill";

/// The resources listed: the skill, the built-in cards, the runs in the
/// runs folder.
pub(super) async fn list() -> Vec<Resource> {
    let mut out = vec![
        Resource::new(SKILL_URI, "skill")
            .with_title("How to drive Galapagos from an agent (SKILL.md)")
            .with_mime_type("text/markdown"),
    ];
    for card in crate::engine::builtin::CARDS {
        out.push(
            Resource::new(format!("{CARD}{}", card.name), card.name)
                .with_description(format!("The built-in card {} (YAML)", card.name))
                .with_mime_type("application/yaml"),
        );
    }
    if let Ok(listed) = super::runs::list(None).await
        && let Some(rows) = listed["runs"].as_array()
    {
        for row in rows {
            let Some(dir) = row["dir"].as_str() else {
                continue;
            };
            let path = std::path::absolute(dir).unwrap_or_else(|_| dir.into());
            let path = path.display().to_string();
            out.push(
                Resource::new(
                    format!("{RUN}{}", path.trim_start_matches('/')),
                    format!("run {}", row["card"].as_str().unwrap_or("")),
                )
                .with_description(format!(
                    "Run {path}: {} on {}, {}",
                    row["card"].as_str().unwrap_or("?"),
                    row["task"].as_str().unwrap_or("?"),
                    row["state"].as_str().unwrap_or("?")
                ))
                .with_mime_type("application/json"),
            );
        }
    }
    out
}

/// The templates: any run folder's summary, any built-in card.
pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{RUN}{{path}}"), "run summary")
            .with_description("A run's status and summary (PATH: the run folder's absolute path without its leading /)")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{CARD}{{name}}"), "card")
            .with_description("A built-in card's YAML")
            .with_mime_type("application/yaml"),
    ]
}

/// What `uri` holds, or what is wrong with it.
pub(super) async fn read(uri: &str) -> Result<ResourceContents, String> {
    if uri == SKILL_URI {
        return Ok(ResourceContents::text(SKILL, uri));
    }
    if let Some(name) = uri.strip_prefix(CARD) {
        let card = crate::engine::builtin::card(name)
            .ok_or_else(|| format!("{uri}: no built-in card {name} (list_cards lists them)"))?;
        return Ok(ResourceContents::text(card.yaml, uri));
    }
    if let Some(path) = uri.strip_prefix(RUN) {
        let path = format!("/{}", path.trim_start_matches('/'));
        let status = super::runs::status(&path).await?;
        let text = serde_json::to_string_pretty(&status).unwrap_or_default();
        return Ok(ResourceContents::text(text, uri));
    }
    Err(format!(
        "{uri}: not a resource of galapagos mcp ({SKILL_URI}, {CARD}NAME, {RUN}PATH)"
    ))
}
