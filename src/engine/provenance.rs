//! Where a card came from: shipped with galapagos, written by the person who
//! runs it, or from elsewhere (pulled from a hub, imported from a bundle,
//! read back from a run folder this account cannot vouch for). A card from
//! elsewhere runs with lowered isolation only with the person's consent
//! ([`crate::engine::consent`]).
//!
//! A card's provenance is its `provenance` section ([`crate::engine::card::Card::provenance`]):
//! none for the user's own card, a record for one from elsewhere. How each
//! way in sets it:
//! - a **built-in** card is [`Provenance::BuiltIn`] (never written to a
//!   file: a built-in card saved by the user is theirs);
//! - a card **pulled** from a hub is [`Provenance::Hub`], whatever its YAML
//!   says; so is a card file read from the per-user hub cache (its
//!   `source.json` names the hub: `crate::engine::hub::pull::load_card_file`
//!   is how a front end reads a card file the user names);
//! - a **bundle** imported (`galapagos import`, the studio's Import) is
//!   [`Provenance::Bundle`], whatever its YAML says;
//! - a card read back from a **run folder** is what that run's record says
//!   when the record is signed by this account's key, else
//!   [`Provenance::RunFolder`] (see [`crate::engine::consent`]);
//! - a **card file** has the provenance its file records: importing a card
//!   from a hub or a bundle writes the record into the file, and saving a
//!   card (the studio's Save and Save As, `galapagos import`) keeps it. So a
//!   pulled card never becomes the user's own by being saved, copied or
//!   edited; it becomes theirs only when they delete its `provenance`
//!   section from the file by hand, a deliberate act in their own editor. A
//!   card file with no `provenance` section is the user's own: galapagos
//!   cannot tell how a file came to be on the disk (mailed, cloned from a
//!   repository), and treats the files a person names as theirs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a card came from, when it is not the user's own (see the module
/// docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case", deny_unknown_fields)]
pub enum Provenance {
    /// Shipped with galapagos (`best_of_n`).
    BuiltIn { name: String },
    /// Pulled from a hub: the hub as configured (a folder or an address),
    /// `NAMESPACE/NAME@VERSION`, the file or URL it was read from, when.
    Hub {
        hub: String,
        card: String,
        source: String,
        pulled: String,
    },
    /// Imported from a hub bundle (a folder, `card.yaml` or `.tar.gz`).
    Bundle { bundle: String, imported: String },
    /// Read back from a run folder whose record this account did not sign
    /// (made elsewhere, or changed since).
    RunFolder { run: PathBuf },
}

impl Provenance {
    /// True for a card from elsewhere: its lowered settings need consent.
    pub fn is_from_elsewhere(&self) -> bool {
        !matches!(self, Self::BuiltIn { .. })
    }

    /// A card with this provenance is written to its file without it: the
    /// user's own (`None`) and a built-in card's.
    pub fn is_local(provenance: &Option<Self>) -> bool {
        provenance
            .as_ref()
            .is_none_or(|p| matches!(p, Self::BuiltIn { .. }))
    }
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BuiltIn { name } => write!(f, "the built-in card {name}"),
            Self::Hub { hub, card, .. } if card.is_empty() => {
                write!(f, "pulled from the hub {hub}")
            }
            Self::Hub { hub, card, .. } => write!(f, "{card}, pulled from the hub {hub}"),
            Self::Bundle { bundle, .. } => write!(f, "imported from the bundle {bundle}"),
            Self::RunFolder { run } => write!(
                f,
                "read from the run folder {}, whose record this account did not sign",
                run.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_built_in_card_is_not_from_elsewhere() {
        assert!(
            !Provenance::BuiltIn {
                name: "topk".into()
            }
            .is_from_elsewhere()
        );
        let bundle = Provenance::Bundle {
            bundle: "b.tar.gz".into(),
            imported: String::new(),
        };
        assert!(bundle.is_from_elsewhere());
        assert!(
            Provenance::RunFolder {
                run: PathBuf::from("/r")
            }
            .is_from_elsewhere()
        );
        assert!(Provenance::is_local(&None));
        assert!(!Provenance::is_local(&Some(bundle)));
    }
}
