//! The generated README of a hub bundle, laid out like the hub's card pages:
//! title and summary, the components table, the algorithm told with this
//! card's parts, and every parameter with its default and value.

use std::fmt::Write as _;

use crate::engine::card::Card;
use crate::engine::component::{ComponentInfo, Slot};
use crate::engine::params::ParamValue;
use crate::engine::registry::Registry;

/// One line of text fit for a markdown table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// A block of free text, trimmed, or `None` when empty.
fn block(text: &str) -> Option<&str> {
    let t = text.trim();
    (!t.is_empty()).then_some(t)
}

/// `TypeName` (`kind`) of a slot, or the bare kind when it is not registered.
fn implementation(slot: Slot, card: &Card, registry: &Registry) -> (String, Option<ComponentInfo>) {
    let kind = &card.slot(slot).kind;
    match registry.entry(slot, kind) {
        Ok(entry) => (
            format!("`{}` (`{}`)", entry.info.type_name, entry.info.kind),
            Some(entry.info),
        ),
        Err(_) => (format!("`{kind}` (not registered here)"), None),
    }
}

fn kind_phrase(slot: Slot, card: &Card, registry: &Registry) -> String {
    let kind = &card.slot(slot).kind;
    match registry.entry(slot, kind) {
        Ok(entry) => format!("`{}` (`{}`)", entry.info.kind, entry.info.type_name),
        Err(_) => format!("`{kind}`"),
    }
}

/// The generated Algorithm section: the loop, told with this card's parts.
fn generated_algorithm(card: &Card, registry: &Registry) -> String {
    let g = &card.general;
    let mut s = String::new();
    let _ = write!(
        s,
        "Every iteration runs one pass of the Galapagos loop. The {policy} selection policy looks at the \
         {population} population and picks a parent together with a few inspiration programs. The {prompt} \
         prompt builder renders them, along with whatever the {memory} memory currently holds, into the model's \
         input. The {proposer} proposer asks the model for a change and turns its answer into a child program, \
         which the {evaluator} evaluator then scores with the task's own evaluator. The scored (or rejected) \
         child is admitted to the population, the selection policy observes the outcome so it can adapt, and \
         memory records what was learned.",
        policy = kind_phrase(Slot::SelectionPolicy, card, registry),
        population = kind_phrase(Slot::Population, card, registry),
        prompt = kind_phrase(Slot::PromptBuilder, card, registry),
        memory = kind_phrase(Slot::Memory, card, registry),
        proposer = kind_phrase(Slot::Proposer, card, registry),
        evaluator = kind_phrase(Slot::Evaluator, card, registry),
    );
    let _ = write!(
        s,
        "\n\nThe run lasts {} iterations. When a proposal cannot be parsed or evaluated it is drawn again up to {} \
         more time(s) with the parent held fixed, and up to {} iteration(s) are in flight at once.",
        g.max_iterations, g.inner_retry_times, g.parallel
    );
    s.push_str(
        "\n\n```text\n\
         for iteration in 1..=max_iterations:\n    \
         parent, inspirations = selection_policy.select(population)\n    \
         prompt = prompt_builder.build(parent, inspirations, memory.read())\n    \
         repeat up to 1 + inner_retry_times times:\n        \
         child = proposer.propose(prompt, parent)\n        \
         result = evaluator.evaluate(child)\n        \
         stop retrying once the child parsed and was scored\n    \
         population.add(child, result)\n    \
         selection_policy.observe(child, result)\n    \
         memory.write(child, result)\n\
         ```",
    );
    s
}

/// Render the hub README of `card`: title, summary, Overview, Algorithm,
/// Components (slot → implementation → role), Configuration (every key with
/// its default and the card's value), When to use and Source.
pub fn render_readme(card: &Card, registry: &Registry) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} (`{}`)\n", cell(card.display_title()), card.name);
    let summary = block(&card.summary).map_or_else(
        || {
            format!(
                "A Galapagos scaffold published as `{}/{}`.",
                card.namespace, card.name
            )
        },
        cell,
    );
    let _ = writeln!(out, "> {summary}\n");

    // Overview: the card's own overview, else its description.
    let overview = block(&card.overview);
    let description = block(&card.description);
    out.push_str("## Overview\n\n");
    match overview.or(description) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(
                out,
                "`{}` is a scaffold for LLM-driven program search built from the six standard Galapagos \
                 components; the table below says which implementation fills each slot.",
                card.name
            );
        }
    }
    out.push_str("\n\n");

    // Algorithm: the description when the Overview did not already use it.
    out.push_str("## Algorithm\n\n");
    match (overview, description) {
        (Some(_), Some(text)) => out.push_str(text),
        _ => out.push_str(&generated_algorithm(card, registry)),
    }
    out.push_str("\n\n");

    out.push_str("## Components\n\n");
    out.push_str(
        "The scaffold fills the six slots of the Galapagos loop (select, prompt, propose, evaluate, admit, \
         remember) as follows.\n\n",
    );
    out.push_str("| Slot | Implementation | Role |\n|---|---|---|\n");
    for slot in Slot::ALL {
        let (imp, info) = implementation(slot, card, registry);
        let role = match info {
            Some(info) if !info.summary.trim().is_empty() => {
                format!("{}. {}", slot.role(), info.summary.trim())
            }
            _ => slot.role().to_owned(),
        };
        let _ = writeln!(out, "| {} | {} | {} |", slot.title(), imp, cell(&role));
    }
    out.push('\n');

    out.push_str("## Configuration\n\n");
    out.push_str("Each key with its default in brackets, what it does, and this card's value:\n\n");
    for line in configuration_lines(card, registry) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');

    out.push_str("## When to use\n\n");
    match block(&card.when_to_use) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(
                out,
                "Use `{}` when its combination of selection policy ({}) and proposer ({}) suits your task: \
                 start from a small budget on the offline model to check that the task evaluator scores \
                 candidates as expected, then raise `general.max_iterations` and switch to a real model.",
                card.name,
                kind_phrase(Slot::SelectionPolicy, card, registry),
                kind_phrase(Slot::Proposer, card, registry),
            );
        }
    }
    out.push_str("\n\n");

    out.push_str("## Source\n\n");
    match block(&card.source) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(
                out,
                "Composed in Galapagos Studio and published as `{}/{}`.",
                card.namespace, card.name
            );
        }
    }
    let _ = writeln!(out, " License: {}.", cell(&card.license));
    out
}

/// A value as the Configuration section shows it (`""` for empty text).
fn show(value: &ParamValue) -> String {
    match value {
        ParamValue::Str(s) if s.is_empty() => "\"\"".to_owned(),
        v => cell(&v.display()),
    }
}

/// `- \`key\` (default) — doc; value: X` for every configurable key.
fn configuration_lines(card: &Card, registry: &Registry) -> Vec<String> {
    let mut lines = Vec::new();
    for slot in Slot::ALL {
        let spec = card.slot(slot);
        match registry.entry(slot, &spec.kind) {
            Ok(entry) => {
                let info = entry.info;
                for p in info.params {
                    lines.push(format!(
                        "- `{}.{}` ({}) — {}; value: {}",
                        slot.key(),
                        p.key,
                        entry.default_of(p.key).map_or_else(String::new, show),
                        cell(p.doc).trim_end_matches('.'),
                        show(&entry.value_or_default(&spec.params, p.key))
                    ));
                }
                for (key, value) in &spec.params.0 {
                    if !info.params.iter().any(|p| p.key == key) {
                        lines.push(format!(
                            "- `{}.{key}` — not a parameter of `{}`; value: {}",
                            slot.key(),
                            info.kind,
                            show(value)
                        ));
                    }
                }
            }
            Err(_) => {
                for (key, value) in &spec.params.0 {
                    lines.push(format!(
                        "- `{}.{key}` — parameter of the unregistered `{}`; value: {}",
                        slot.key(),
                        spec.kind,
                        show(value)
                    ));
                }
            }
        }
    }
    let g = &card.general;
    let d = crate::engine::card::General::default();
    let opt_f = |v: Option<f64>| v.map_or_else(|| "null".to_owned(), |f| format!("{f}"));
    let opt_u = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |u| u.to_string());
    lines.push(format!(
        "- `general.max_iterations` ({}) — number of loop iterations, the run's budget; value: {}",
        d.max_iterations, g.max_iterations
    ));
    lines.push(format!(
        "- `general.inner_retry_times` ({}) — extra proposals per iteration after a parse or evaluation \
         failure, parent held fixed; value: {}",
        d.inner_retry_times, g.inner_retry_times
    ));
    lines.push(format!(
        "- `general.parallel` ({}) — iterations in flight at once (1 keeps the strictly sequential \
         semantics); value: {}",
        d.parallel, g.parallel
    ));
    lines.push(format!(
        "- `general.max_cost_usd` ({}) — stop cleanly once the run has cost this much, when prices are \
         known; value: {}",
        opt_f(d.max_cost_usd),
        opt_f(g.max_cost_usd)
    ));
    lines.push(format!(
        "- `general.max_tokens` ({}) — stop cleanly once the run has used this many model tokens; \
         value: {}",
        opt_u(d.max_tokens),
        opt_u(g.max_tokens)
    ));
    lines.push(format!(
        "- `general.max_response_bytes` ({}) — bytes of a raw model reply stored on its genome; a longer \
         reply keeps its start and records its full length; value: {}",
        d.max_response_bytes, g.max_response_bytes
    ));
    lines.push(format!(
        "- `seed` (0) — seeds the run's random generator, so selection and sampling are reproducible; \
         value: {}",
        card.seed
    ));
    if let Some(llm) = &card.llm {
        let models: Vec<String> = llm
            .models
            .iter()
            .map(|m| format!("{} (weight {})", m.name, m.weight))
            .collect();
        lines.push(format!(
            "- `llm.models` (none) — model names and ensemble weights (endpoints and keys live in each \
             user's settings, never in the card); value: {}",
            if models.is_empty() {
                "none".to_owned()
            } else {
                models.join(", ")
            }
        ));
        let opt = |v: Option<f64>| v.map_or_else(|| "null".to_owned(), |f| format!("{f}"));
        lines.push(format!(
            "- `llm.temperature` (null) — sampling temperature for every model; value: {}",
            opt(llm.temperature)
        ));
        lines.push(format!(
            "- `llm.top_p` (null) — nucleus sampling cut-off for every model; value: {}",
            opt(llm.top_p)
        ));
        lines.push(format!(
            "- `llm.max_tokens` (null) — reply length limit for every model; value: {}",
            llm.max_tokens
                .map_or_else(|| "null".to_owned(), |t| t.to_string())
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_values_are_shown_quoted() {
        assert_eq!(show(&ParamValue::Str(String::new())), "\"\"");
        assert_eq!(show(&ParamValue::Int(3)), "3");
    }

    #[test]
    fn table_cells_stay_on_one_line() {
        assert_eq!(cell("a |b\n  c"), "a \\|b c");
    }
}
