//! UI mutations as messages. Widgets never change the card or the app state
//! directly: they push a [`UiCommand`] into the frame's [`Commands`] queue,
//! and the app applies the queue at the end of the frame. Card edits all pass
//! through [`apply_card_edit`], so undo/redo lives in one place.

use std::path::PathBuf;

use crate::engine::card::{Card, General};
use crate::engine::component::Slot;
use crate::engine::model::LlmSettings;
use crate::engine::params::ParamValue;
use crate::engine::registry::Registry;
use crate::studio::state::Tab;
use crate::studio::theme::ThemeChoice;

/// The card's descriptive fields, edited together on the Details tab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardMeta {
    /// File and hub name (`best_of_n`).
    pub name: String,
    /// Hub namespace (`user`).
    pub namespace: String,
    /// Display title.
    pub title: String,
    /// One-line summary.
    pub summary: String,
    /// Algorithm notes (markdown).
    pub description: String,
    /// SPDX license id.
    pub license: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Hub README "Overview".
    pub overview: String,
    /// Hub README "When to use".
    pub when_to_use: String,
    /// Hub README "Source".
    pub source: String,
}

impl CardMeta {
    /// The metadata of a card.
    pub fn of(card: &Card) -> Self {
        Self {
            name: card.name.clone(),
            namespace: card.namespace.clone(),
            title: card.title.clone(),
            summary: card.summary.clone(),
            description: card.description.clone(),
            license: card.license.clone(),
            tags: card.tags.clone(),
            overview: card.overview.clone(),
            when_to_use: card.when_to_use.clone(),
            source: card.source.clone(),
        }
    }

    /// Write these fields into `card`.
    pub fn write_to(self, card: &mut Card) {
        card.name = self.name;
        card.namespace = self.namespace;
        card.title = self.title;
        card.summary = self.summary;
        card.description = self.description;
        card.license = self.license;
        card.tags = self.tags;
        card.overview = self.overview;
        card.when_to_use = self.when_to_use;
        card.source = self.source;
    }
}

/// One deferred UI mutation.
#[derive(Clone, Debug)]
pub enum UiCommand {
    // ---- card edits (undoable) ----
    /// Put implementation `kind` into `slot`. Parameters the new kind does not
    /// know are dropped; a kind that is already there changes nothing.
    SetKind { slot: Slot, kind: String },
    /// Put several implementations in at once, as one undo step (a block
    /// and the blocks it needs beside it: beam selection with a beam).
    SetKinds(Vec<(Slot, String)>),
    /// Set one parameter of a slot explicitly.
    SetParam {
        slot: Slot,
        key: String,
        value: ParamValue,
    },
    /// Remove an explicit parameter so the implementation's default applies.
    ResetParam { slot: Slot, key: String },
    /// Replace the loop-level settings.
    SetGeneral(General),
    /// Set the run seed.
    SetSeed(u64),
    /// Set (or unset) the model's sampling temperature, the card's
    /// `llm.temperature`.
    SetTemperature(Option<f64>),
    /// Replace the card's descriptive fields.
    SetMeta(Box<CardMeta>),
    /// Step back one card edit.
    Undo,
    /// Re-apply an undone card edit.
    Redo,

    // ---- selection and view ----
    /// Select a block (the inspector shows it).
    SelectSlot(Slot),
    /// Switch the central tab.
    ShowTab(Tab),
    /// Switch between dark and light.
    SetTheme(ThemeChoice),
    /// Show or hide the left panel (library and palette).
    ToggleLeftPanel,
    /// Show or hide the inspector.
    ToggleInspector,

    // ---- files ----
    /// Start a new card from the default template (asks first when unsaved).
    NewCard,
    /// Open the card file at this path (asks first when unsaved).
    OpenCard(PathBuf),
    /// Open the built-in card of this name as a new, unsaved card (asks first
    /// when unsaved).
    OpenBuiltin(String),
    /// Open a native file dialog to pick a card (off the UI thread).
    BrowseOpen,
    /// Save to the current file, or ask for one when there is none.
    Save,
    /// Save to this path and make it the current file.
    SaveAs(PathBuf),
    /// Open a native save dialog (off the UI thread).
    BrowseSaveAs,
    /// Pick a task folder with a native dialog (off the UI thread).
    BrowseTask,
    /// Use this task folder.
    SetTaskFolder(PathBuf),
    /// Set the folder runs are recorded in.
    SetRunsFolder(PathBuf),
    /// Re-read the built-in card library.
    RefreshLibrary,
    /// Discard unsaved changes and carry out the action that asked.
    ConfirmDiscard,
    /// Save the card to its own file (a card with none: to the path typed in
    /// the question, else where a save dialog says), then carry out the
    /// action that asked. Never to the file the waiting action opens.
    SaveAndContinue,
    /// Keep the unsaved changes; forget the pending action.
    CancelDiscard,
    /// Close the card-errors panel.
    DismissErrors,
    /// Clear the status message.
    DismissMessage,
    /// Show a page of the Help menu, or close it (`None`).
    ShowHelp(Option<crate::studio::help::HelpPage>),

    // ---- hub ----
    /// Export the card as a hub bundle into this folder (off the UI thread).
    ExportBundle(PathBuf),
    /// Pick the export folder with a native dialog.
    BrowseExport,
    /// Import a hub bundle (folder or `.tar.gz`) as a new unsaved card
    /// (off the UI thread; asks first when the current card is unsaved).
    ImportBundle(PathBuf),
    /// Pick a bundle to import with a native dialog.
    BrowseImport,
    /// Attach this leaderboard (a batch folder or its `leaderboard.json`)
    /// to hub exports as the README's "Results" section (empty: none).
    SetExportResults(PathBuf),
    /// Pick the leaderboard to attach with a native dialog.
    BrowseExportResults,
    /// Publish the card to a hub folder as a new version (off the UI thread).
    PublishToHub {
        /// The hub folder.
        hub: PathBuf,
        /// Publish under this namespace instead of the card's own.
        namespace: Option<String>,
        /// The version (required when the name has versions).
        version: Option<String>,
    },
    /// List the configured hubs' cards again (off the UI thread).
    RefreshHubCards,
    /// Pull `NAMESPACE/NAME[@VERSION]` from a hub and open it as a new card.
    OpenHubCard {
        /// The hub (folder or site address); `None`: the first configured
        /// hub that has it.
        hub: Option<String>,
        /// `NAMESPACE/NAME[@VERSION]`.
        reference: String,
    },

    // ---- leaderboard ----
    /// Start the Leaderboard tab's batch (its form, in the persisted state).
    StartLeaderboard,
    /// Stop the running batch (its runs keep their records).
    StopLeaderboard,
    /// Show the leaderboard of this batch folder (read off the UI thread).
    OpenLeaderboard(PathBuf),
    /// Pick a batch folder with a native dialog and show its leaderboard.
    BrowseLeaderboard,

    // ---- run ----
    /// Validate the card and start a run on the task folder.
    StartRun,
    /// Pause the live run, or resume it when paused.
    PauseOrResume,
    /// Stop the live run.
    StopRun,
    /// Allow what the consent dialog lists (the held run starts with it).
    AllowLowered,
    /// Decline the consent dialog (the held run does not start).
    CancelLowered,

    // ---- recorded runs ----
    /// Re-list the runs in the Runs panel's folder.
    RefreshRuns,
    /// Open a recorded run read-only in the run view (read off the UI thread).
    OpenRun(PathBuf),
    /// Read a recorded run's best-so-far curve for the comparison plot.
    LoadCurve(PathBuf),
    /// Start a new run from genome `genome` of the run recorded in `dir`
    /// (its program as the initial program) with the current card.
    ForkRun {
        /// The run folder forked from.
        dir: PathBuf,
        /// The genome whose program the fork starts from.
        genome: u64,
    },
    /// Stop the live run and fork it from `genome` with the current card
    /// (settings that cannot change in flight).
    ForkInstead {
        /// The live run's folder.
        dir: PathBuf,
        /// The genome the fork starts from.
        genome: u64,
    },
    /// Show the Connect to a run dialog.
    ShowConnect,
    /// Follow the run at this address (`ssh://[user@]host[:port]/path`, or a
    /// run folder here) in the run view.
    ConnectRun(String),
    /// List the runs under this address (`ssh://host/folder`) in the Runs
    /// panel (in the background).
    ListRemoteRuns(String),
    /// Continue a recorded run live up to `iterations` (the new budget).
    ResumeRun {
        /// The run folder (appended to).
        dir: PathBuf,
        /// The iteration budget to reach.
        iterations: u64,
    },

    // ---- model settings ----
    /// Show the model settings dialog (with the saved settings).
    OpenModelSettings,
    /// Close the model settings dialog without saving.
    CloseModelSettings,
    /// Validate and write the model settings file; runs use them from now on.
    SaveModelSettings(Box<crate::engine::model::ModelSettings>),
}

/// Which part of the studio applies a command: the app hands each group to
/// the file that owns it (`studio/app/*.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandGroup {
    /// Undoable card edits ([`apply_card_edit`]).
    CardEdit,
    /// Undo, redo, the selected block, the tab, theme and panels, dismissing
    /// messages.
    View,
    /// Card files, the task and runs folders, the library, the unsaved-changes
    /// question.
    File,
    /// Hub bundles: export, import, the attached results.
    Hub,
    /// Leaderboard batches.
    Leaderboard,
    /// The live run and recorded runs.
    Run,
    /// The model settings dialog.
    Model,
}

impl UiCommand {
    /// The group that applies this command (one arm per command, so a new
    /// command must be given a group).
    pub fn group(&self) -> CommandGroup {
        match self {
            Self::SetKind { .. }
            | Self::SetKinds(_)
            | Self::SetParam { .. }
            | Self::ResetParam { .. }
            | Self::SetGeneral(_)
            | Self::SetSeed(_)
            | Self::SetTemperature(_)
            | Self::SetMeta(_) => CommandGroup::CardEdit,
            Self::Undo
            | Self::Redo
            | Self::SelectSlot(_)
            | Self::ShowTab(_)
            | Self::SetTheme(_)
            | Self::ToggleLeftPanel
            | Self::ToggleInspector
            | Self::DismissErrors
            | Self::DismissMessage
            | Self::ShowHelp(_) => CommandGroup::View,
            Self::NewCard
            | Self::OpenCard(_)
            | Self::OpenBuiltin(_)
            | Self::BrowseOpen
            | Self::Save
            | Self::SaveAs(_)
            | Self::BrowseSaveAs
            | Self::BrowseTask
            | Self::SetTaskFolder(_)
            | Self::SetRunsFolder(_)
            | Self::RefreshLibrary
            | Self::ConfirmDiscard
            | Self::SaveAndContinue
            | Self::CancelDiscard => CommandGroup::File,
            Self::ExportBundle(_)
            | Self::BrowseExport
            | Self::ImportBundle(_)
            | Self::BrowseImport
            | Self::SetExportResults(_)
            | Self::BrowseExportResults
            | Self::PublishToHub { .. }
            | Self::RefreshHubCards
            | Self::OpenHubCard { .. } => CommandGroup::Hub,
            Self::StartLeaderboard
            | Self::StopLeaderboard
            | Self::OpenLeaderboard(_)
            | Self::BrowseLeaderboard => CommandGroup::Leaderboard,
            Self::StartRun
            | Self::AllowLowered
            | Self::CancelLowered
            | Self::PauseOrResume
            | Self::StopRun
            | Self::RefreshRuns
            | Self::OpenRun(_)
            | Self::LoadCurve(_)
            | Self::ForkRun { .. }
            | Self::ForkInstead { .. }
            | Self::ShowConnect
            | Self::ConnectRun(_)
            | Self::ListRemoteRuns(_)
            | Self::ResumeRun { .. } => CommandGroup::Run,
            Self::OpenModelSettings | Self::CloseModelSettings | Self::SaveModelSettings(_) => {
                CommandGroup::Model
            }
        }
    }

    /// True for commands that change the card (and so are undoable).
    pub fn is_card_edit(&self) -> bool {
        self.group() == CommandGroup::CardEdit
    }
}

/// The queue of one frame.
#[derive(Debug, Default)]
pub struct Commands(Vec<UiCommand>);

impl Commands {
    /// Queue a command.
    pub fn push(&mut self, command: UiCommand) {
        self.0.push(command);
    }

    /// Take every queued command, in order.
    pub fn take(&mut self) -> Vec<UiCommand> {
        std::mem::take(&mut self.0)
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Put `kind` into `slot`, keeping only the parameters the new kind declares
/// with a valid value; false when it was already there.
fn set_kind(card: &mut Card, slot: Slot, kind: &str, registry: &Registry) -> bool {
    let spec = card.slot_mut(slot);
    if spec.kind == kind {
        return false;
    }
    kind.clone_into(&mut spec.kind);
    match registry.entry(slot, kind) {
        Ok(entry) => spec.params.0.retain(|k, v| {
            entry
                .info
                .params
                .iter()
                .any(|p| p.key == k && crate::engine::params::check_value(p.ty, v).is_ok())
        }),
        Err(_) => spec.params.0.clear(),
    }
    true
}

/// Apply a card-editing command to a copy of `card`. Returns the edited card
/// and the undo-merge key, or `None` for commands that do not edit the card.
pub fn apply_card_edit(
    card: &Card,
    command: &UiCommand,
    registry: &Registry,
) -> Option<(String, Card)> {
    let mut next = card.clone();
    let key = match command {
        UiCommand::SetKind { slot, kind } => {
            if !set_kind(&mut next, *slot, kind, registry) {
                return None;
            }
            format!("{}.kind", slot.key())
        }
        UiCommand::SetKinds(kinds) => {
            let mut changed = false;
            for (slot, kind) in kinds {
                changed |= set_kind(&mut next, *slot, kind, registry);
            }
            if !changed {
                return None;
            }
            "kinds".to_owned()
        }
        UiCommand::SetParam { slot, key, value } => {
            next.slot_mut(*slot).params.set(key, value.clone());
            format!("{}.{key}", slot.key())
        }
        UiCommand::ResetParam { slot, key } => {
            next.slot_mut(*slot).params.0.remove(key);
            format!("{}.{key}#reset", slot.key())
        }
        UiCommand::SetGeneral(general) => {
            next.general = general.clone();
            "general".to_owned()
        }
        UiCommand::SetSeed(seed) => {
            next.seed = *seed;
            "seed".to_owned()
        }
        UiCommand::SetTemperature(t) => {
            let mut llm = next.llm.take().unwrap_or_default();
            llm.temperature = *t;
            // a section that says nothing is left out
            next.llm = (llm != LlmSettings::default()).then_some(llm);
            "llm.temperature".to_owned()
        }
        UiCommand::SetMeta(meta) => {
            (**meta).clone().write_to(&mut next);
            "meta".to_owned()
        }
        _ => return None,
    };
    Some((key, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_kind_drops_unknown_params_and_set_param_sets() {
        let registry = Registry::builtin();
        let mut card = Card::new_default("t");
        card.memory.params.set("bogus", ParamValue::Int(3));
        let (key, edited) = apply_card_edit(
            &card,
            &UiCommand::SetKind {
                slot: Slot::Memory,
                kind: "something_else".into(),
            },
            &registry,
        )
        .unwrap();
        assert_eq!(key, "memory.kind");
        assert_eq!(edited.memory.kind, "something_else");
        assert!(edited.memory.params.0.is_empty());

        let (key, edited) = apply_card_edit(
            &card,
            &UiCommand::SetParam {
                slot: Slot::Proposer,
                key: "n".into(),
                value: ParamValue::Int(4),
            },
            &registry,
        )
        .unwrap();
        assert_eq!(key, "proposer.n");
        assert_eq!(edited.proposer.params.get("n"), Some(&ParamValue::Int(4)));
        let (_, reset) = apply_card_edit(
            &edited,
            &UiCommand::ResetParam {
                slot: Slot::Proposer,
                key: "n".into(),
            },
            &registry,
        )
        .unwrap();
        assert!(reset.proposer.params.get("n").is_none());
        assert!(apply_card_edit(&card, &UiCommand::Undo, &registry).is_none());
        assert!(UiCommand::SetSeed(1).is_card_edit());
        assert!(!UiCommand::Save.is_card_edit());
    }

    #[test]
    fn meta_roundtrip() {
        let mut card = Card::new_default("t");
        let mut meta = CardMeta::of(&card);
        meta.tags = vec!["a".into()];
        meta.overview = "o".into();
        let (_, edited) = apply_card_edit(
            &card,
            &UiCommand::SetMeta(Box::new(meta.clone())),
            &Registry::builtin(),
        )
        .unwrap();
        assert_eq!(CardMeta::of(&edited), meta);
        meta.clone().write_to(&mut card);
        assert_eq!(card, edited);
    }
}
