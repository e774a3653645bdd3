//! The caps on files read from elsewhere, one per kind of file.

/// The most bytes a kind of file may have, and what to call it in a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// What the file is, for the message (`a task's config file`).
    pub what: &'static str,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

impl Limit {
    /// A task's `config.yaml`.
    pub const TASK_CONFIG: Self = Self {
        bytes: MIB,
        what: "a task's config file",
    };
    /// A task's description (`README.md`, `task.md`, ...), put in every
    /// prompt.
    pub const DESCRIPTION: Self = Self {
        bytes: 256 * KIB,
        what: "a task's description",
    };
    /// A task's `run_evo.py`, read for its system message.
    pub const SCRIPT: Self = Self {
        bytes: MIB,
        what: "a task's script read for its system message",
    };
    /// One file of a program (a single-file task's program, a file of a
    /// repository task's program folder, a program to inject).
    pub const PROGRAM_FILE: Self = Self {
        bytes: 4 * MIB,
        what: "one file of a program",
    };
    /// A `.gitignore` of a program folder.
    pub const GITIGNORE: Self = Self {
        bytes: 256 * KIB,
        what: "a .gitignore file",
    };
    /// A file a coding agent leaves in its workspace.
    pub const WORKSPACE_FILE: Self = Self {
        bytes: 16 * MIB,
        what: "one file of an agent's workspace",
    };
    /// A card (`card.yaml`) from a hub, a bundle or a run folder.
    pub const CARD: Self = Self {
        bytes: MIB,
        what: "a card",
    };
    /// A hub card's README.
    pub const README: Self = Self {
        bytes: MIB,
        what: "a card's README",
    };
    /// A small JSON file of a hub or a run folder (`hub.json`,
    /// `versions.json`, `results.json`, `summary.json`).
    pub const SMALL_JSON: Self = Self {
        bytes: 4 * MIB,
        what: "a hub's or run folder's JSON file",
    };
    /// A hub site's `index.json`.
    pub const HUB_INDEX: Self = Self {
        bytes: 16 * MIB,
        what: "a hub site's index",
    };
    /// A leaderboard's `leaderboard.json`.
    pub const LEADERBOARD: Self = Self {
        bytes: 64 * MIB,
        what: "a leaderboard",
    };
    /// A run folder's `genomes.jsonl` (every prompt and reply of the run).
    pub const GENOMES_JSONL: Self = Self {
        bytes: 2048 * MIB,
        what: "a run's genomes.jsonl",
    };
    /// A file of a folder a program is written into, read to compare.
    pub const TARGET_FILE: Self = Self {
        bytes: 64 * MIB,
        what: "a file of the folder written into",
    };
    /// A file of a built hub site, served by the preview server.
    pub const SITE_FILE: Self = Self {
        bytes: 64 * MIB,
        what: "a file of a hub site",
    };
    /// A candidate's `result.json` (or `started.json`) read back from a
    /// cluster's staging dir.
    pub const STAGED_RESULT: Self = Self {
        bytes: 64 * MIB,
        what: "a candidate's result file on the cluster",
    };
    /// A candidate's captured stdout or stderr read back from a cluster's
    /// staging dir (the runner keeps its head and tail).
    pub const STAGED_OUTPUT: Self = Self {
        bytes: 64 * MIB,
        what: "a candidate's captured output on the cluster",
    };
    /// Notes a person names (`galapagos steer --notes-file`).
    pub const NOTES: Self = Self {
        bytes: MIB,
        what: "a notes file",
    };
}

/// `1048576` as `1 MiB`, other sizes in bytes.
pub(super) fn show_bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n}-byte")
    }
}
