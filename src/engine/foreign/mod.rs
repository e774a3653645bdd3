//! What comes from elsewhere: the one set of rules for every file read from,
//! and every path written into, a folder someone else made.
//!
//! Folders from elsewhere are task folders (and a repository task's program
//! folder), hub folders and the sites built from them, run folders and the
//! side files of their archives, bundles, and the workspaces coding agents
//! leave behind. Their authors may be careless or hostile; so may a model.
//!
//! # Reading ([`Folder`])
//!
//! 1. A file is read only through a [`Folder`], a `cap_std` directory handle:
//!    no path, `..` or symbolic link can lead outside it, by construction
//!    (the kernel's `RESOLVE_BENEATH` where there is one). A folder opened
//!    with [`Links::Never`] follows no symbolic link at all (hub folders, run
//!    folders, agent workspaces: their files are plain files).
//! 2. Only a regular file is read. It is opened without blocking
//!    (`O_NONBLOCK`: a FIFO does not wait for a writer) and its type is checked
//!    on the open file (`fstat`), so nothing can be swapped in between.
//! 3. Every read has a cap for its kind of file ([`Limit`]): the size is
//!    checked before reading, and at most cap + 1 bytes are read, so a file
//!    that grows meanwhile is refused too.
//!
//! A file a person names on the command line (a card, a program to inject)
//! is read with rules 2 and 3 ([`read_named_file`]).
//!
//! # Writing ([`Target`], [`RelPath`])
//!
//! 4. Every path written into a folder is a [`RelPath`]: relative, plain
//!    components only (no `..`, no root or prefix, no empty or `.` component,
//!    no NUL or other control character, no backslash), and no component git
//!    would take for `.git` (`.git`, `.GIT`, `git~1`, `.git.`, `.git ` and the
//!    like). A path is checked when it enters a record (a program read from a
//!    folder or a workspace, a model's edit, a run folder read back) and again
//!    when it is written.
//! 5. Writes go through a [`Target`]: no symbolic link is followed, neither in
//!    the folders on the way nor at the file, so a link planted inside the
//!    target cannot redirect a write.
//!
//! # Hubs
//!
//! 6. A name in a hub's index or folder (namespace, card name, version) is a
//!    name, one plain component of a strict character set ([`check_name`],
//!    [`check_version`]), never a path.
//! 7. A request to a hub never follows a redirect to another origin (scheme,
//!    host and port): [`same_origin_redirects`].
//!
//! # Errors
//!
//! A refusal ([`Refused`]) names the file (its whole path), and says why:
//! outside the folder, not a regular file (and what it is), over the cap
//! (size and cap), a path that is not a plain relative one (which rule).

mod folder;
mod http;
mod limits;
mod names;
mod rel_path;
mod target;

use std::path::{Path, PathBuf};

pub use folder::{Entry, EntryKind, Folder, Links, read_named_file, read_named_text};
pub use http::same_origin_redirects;
pub use limits::Limit;
pub use names::{check_name, check_version};
pub use rel_path::{PathRefused, RelPath, is_git_name};
pub use target::Target;

/// A file or path refused: which, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", path.display())]
pub struct Refused {
    /// The whole path, as the folder's user knows it.
    pub path: PathBuf,
    pub why: Why,
}

/// Why a file or path was refused.
#[derive(Debug, thiserror::Error)]
pub enum Why {
    #[error(
        "refused: it leads outside {} (through `..`, an absolute path or a symbolic link); only files inside the folder are read",
        .0.display()
    )]
    Outside(PathBuf),
    #[error("refused: {0}, not a regular file")]
    NotRegular(&'static str),
    #[error(
        "refused: a symbolic link; files in this folder are read and written as plain files only"
    )]
    Link,
    #[error(
        "refused: {size} bytes, over the {} cap for {what}",
        limits::show_bytes(*.cap)
    )]
    TooLarge {
        size: u64,
        cap: u64,
        what: &'static str,
    },
    #[error("refused: not UTF-8 text")]
    NotText,
    #[error("refused: {0}")]
    BadPath(PathRefused),
    #[error("{0}")]
    Io(std::io::Error),
}

impl Refused {
    pub(crate) fn new(path: impl Into<PathBuf>, why: Why) -> Self {
        Self {
            path: path.into(),
            why,
        }
    }

    /// An I/O error at `path`, told apart: a path that left the folder is
    /// [`Why::Outside`] (`root`), a link where none is followed is
    /// [`Why::Link`].
    pub(crate) fn io(root: &Path, path: impl Into<PathBuf>, e: std::io::Error) -> Self {
        let why = if is_escape(&e) {
            Why::Outside(root.to_path_buf())
        } else if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            Why::Link
        } else {
            Why::Io(e)
        };
        Self::new(path, why)
    }

    /// True when the file is not there (nothing was refused).
    pub fn is_not_found(&self) -> bool {
        matches!(&self.why, Why::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A refusal as an I/O error (for callers that speak `std::io`), its message
/// whole.
impl From<Refused> for std::io::Error {
    fn from(r: Refused) -> Self {
        let kind = match &r.why {
            Why::Io(e) => e.kind(),
            Why::BadPath(_) => std::io::ErrorKind::InvalidInput,
            _ => std::io::ErrorKind::PermissionDenied,
        };
        std::io::Error::new(kind, r.to_string())
    }
}

/// cap-std's error for a path that would leave its directory.
fn is_escape(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::PermissionDenied
        && e.to_string().contains("outside of the filesystem")
}
