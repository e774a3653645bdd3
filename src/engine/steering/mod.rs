//! Steering: what the person running a search changes by hand while it runs
//! or while it is stopped. Notes for the model (added to every following
//! prompt through the memory slot) and pinned inspirations (genomes every
//! following selection shows), each with the iteration it took effect at,
//! and the history of every change. The loop keeps a [`Steering`] in each
//! checkpoint, so a resumed run goes on with it.
//!
//! A program written by a person is a child like any other, marked by its
//! proposer label ([`crate::engine::genome::PERSON_PATCH`]; see
//! [`crate::engine::genome::Genome::is_by_person`]).
//!
//! The run's settings changed while it is paused (the policy's ratios, the
//! prompt's settings, the model, the budget) are compared and described in
//! [`settings`].

pub mod changes;

use serde::{Deserialize, Serialize};

use crate::engine::genome::GenomeId;

/// The heading the notes carry in a prompt.
pub const NOTES_HEADING: &str = "Notes from the person running this search";

/// A genome every selection shows as an inspiration, from `since` on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub genome: GenomeId,
    /// The first iteration whose selection shows it.
    pub since: u64,
}

/// One change a person made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Change {
    /// New notes (empty: the notes were cleared).
    Notes {
        text: String,
    },
    Pin {
        genome: GenomeId,
    },
    Unpin {
        genome: GenomeId,
    },
}

/// A change and the first iteration it applied to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    pub iteration: u64,
    #[serde(flatten)]
    pub change: Change,
}

impl Changed {
    /// One line for the run's log ("from iteration 12: pinned #7").
    pub fn describe(&self) -> String {
        let what = match &self.change {
            Change::Notes { text } if text.trim().is_empty() => {
                "notes for the model cleared".to_owned()
            }
            Change::Notes { text } => {
                format!(
                    "notes for the model ({} characters): {}",
                    text.chars().count(),
                    one_line(text, 120)
                )
            }
            Change::Pin { genome } => format!("genome #{genome} pinned as an inspiration"),
            Change::Unpin { genome } => format!("genome #{genome} no longer pinned"),
        };
        format!("from iteration {}: {what}", self.iteration)
    }
}

/// `text` on one line, cut to `max` characters with an ellipsis.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The steering in force and how it came to be.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steering {
    /// Added to every prompt from iteration `notes_since` on (empty: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    #[serde(default)]
    pub notes_since: u64,
    /// Genomes every selection shows, in the order they were pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<Pin>,
    /// Every change, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Changed>,
}

impl Steering {
    /// Nothing was ever changed.
    pub fn is_empty(&self) -> bool {
        self.history.is_empty()
    }

    /// Apply `change` from iteration `iteration` on. Returns the record of
    /// it, or `None` when it changes nothing (the same notes again, a pin of
    /// a pinned genome, an unpin of one that is not).
    pub fn apply(&mut self, change: Change, iteration: u64) -> Option<Changed> {
        match &change {
            Change::Notes { text } => {
                let text = text.trim_end().to_owned();
                if text == self.notes {
                    return None;
                }
                self.notes.clone_from(&text);
                self.notes_since = iteration;
                let changed = Changed {
                    iteration,
                    change: Change::Notes { text },
                };
                self.history.push(changed.clone());
                return Some(changed);
            }
            Change::Pin { genome } => {
                if self.is_pinned(*genome) {
                    return None;
                }
                self.pins.push(Pin {
                    genome: *genome,
                    since: iteration,
                });
            }
            Change::Unpin { genome } => {
                if !self.is_pinned(*genome) {
                    return None;
                }
                self.pins.retain(|p| p.genome != *genome);
            }
        }
        let changed = Changed { iteration, change };
        self.history.push(changed.clone());
        Some(changed)
    }

    pub fn is_pinned(&self, genome: GenomeId) -> bool {
        self.pins.iter().any(|p| p.genome == genome)
    }

    /// The notes as the memory hands them to the prompt (`None` without).
    pub fn note(&self) -> Option<String> {
        let text = self.notes.trim();
        (!text.is_empty()).then(|| format!("{NOTES_HEADING}:\n{text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_kept_with_their_iteration_and_no_ops_are_not_recorded() {
        let mut s = Steering::default();
        assert!(s.is_empty());
        assert!(s.note().is_none());
        let c = s
            .apply(
                Change::Notes {
                    text: "try a hexagonal layout\n".into(),
                },
                4,
            )
            .unwrap();
        assert_eq!(c.iteration, 4);
        assert_eq!(s.notes, "try a hexagonal layout");
        assert_eq!(s.notes_since, 4);
        assert_eq!(
            s.note().unwrap(),
            format!("{NOTES_HEADING}:\ntry a hexagonal layout")
        );
        // the same text again changes nothing
        assert!(
            s.apply(
                Change::Notes {
                    text: "try a hexagonal layout".into()
                },
                5
            )
            .is_none()
        );
        assert!(s.apply(Change::Pin { genome: 3 }, 6).is_some());
        assert!(s.apply(Change::Pin { genome: 3 }, 7).is_none());
        assert_eq!(
            s.pins,
            vec![Pin {
                genome: 3,
                since: 6
            }]
        );
        assert!(s.apply(Change::Unpin { genome: 9 }, 7).is_none());
        let c = s.apply(Change::Unpin { genome: 3 }, 8).unwrap();
        assert_eq!(c.describe(), "from iteration 8: genome #3 no longer pinned");
        assert!(s.pins.is_empty());
        assert_eq!(s.history.len(), 3);
        let cleared = s.apply(Change::Notes { text: " ".into() }, 9).unwrap();
        assert_eq!(
            cleared.describe(),
            "from iteration 9: notes for the model cleared"
        );
        assert!(s.note().is_none());
        // the record round-trips
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Steering>(&json).unwrap(), s);
    }
}
