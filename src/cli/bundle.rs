//! `galapagos export` and `galapagos import`: a card as a hub bundle, and
//! a bundle (or a hub's card) back as a card file that keeps where it came
//! from.

use std::path::Path;

use super::{HubArgs, hub, load_card};
use crate::engine::registry::Registry;

/// `galapagos export`.
pub fn export(card_path: &Path, out: &Path, results: Option<&Path>) -> i32 {
    let registry = Registry::builtin();
    let card = match load_card(card_path, &registry, &HubArgs::default()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let card = card.into_card();
    let results =
        match results.map(|r| crate::engine::leaderboard::report::results_section(r, &card.name)) {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                eprintln!("error: --results: {e}");
                return 2;
            }
        };
    match crate::engine::hub::export_bundle_with_results(
        &card,
        &registry,
        out,
        &crate::engine::hub::secret_env_values(),
        results.as_deref(),
    ) {
        Ok(dir) => {
            println!(
                "exported {}/{} to {}",
                card.namespace,
                card.name,
                dir.display()
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// `galapagos import`.
pub fn import(bundle: &Path, out: &Path, force: bool, hubs: &HubArgs) -> i32 {
    let registry = Registry::builtin();
    let hub_ref = (!bundle.exists())
        .then(|| {
            bundle
                .to_str()
                .and_then(crate::engine::hub::pull::HubRef::parse)
        })
        .flatten();
    // The file keeps where the card came from (`crate::engine::provenance`).
    let card = match hub_ref {
        Some(r) => match hub::pull_card(&r, &registry, hubs) {
            Ok(p) => p.card.into_card(),
            Err(code) => return code,
        },
        None => match crate::engine::hub::import_bundle(bundle, &registry) {
            Ok(c) => c.with_provenance(crate::engine::hub::bundle_provenance(bundle)),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        },
    };
    if out.exists() && !out.is_dir() {
        eprintln!(
            "error: --out {}: not a folder; --out names the folder to write {}.yaml into",
            out.display(),
            card.name
        );
        return 2;
    }
    let target = out.join(format!("{}.yaml", card.name));
    if target.exists() && !force {
        eprintln!(
            "error: {} exists; pass --force to overwrite",
            target.display()
        );
        return 1;
    }
    if let Err(e) = std::fs::create_dir_all(out).and_then(|()| card.save(&target)) {
        eprintln!("error: {}: {e}", target.display());
        return 1;
    }
    println!(
        "imported {}/{} as {}",
        card.namespace,
        card.name,
        target.display()
    );
    0
}
