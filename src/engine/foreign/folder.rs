//! [`Folder`]: reading files of a folder from elsewhere.

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{Dir, OpenOptions};

use super::{Limit, Refused, Why};
use crate::engine::platform;

/// Which symbolic links a [`Folder`] follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Those that resolve inside the folder (a task folder's program may
    /// link one of its files to another); one that leads out is refused.
    Inside,
    /// None: every file and every folder on the way is read as itself, and a
    /// link is refused (hub folders, run folders, agent workspaces, bundles).
    Never,
}

/// What an entry of a folder is (a link is not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Link,
    /// A FIFO, a socket or a device, named.
    Other(&'static str),
}

/// One entry of a folder.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: OsString,
    pub kind: EntryKind,
}

/// A folder from elsewhere, opened: every read stays inside it (see the
/// module doc of [`super`]).
#[derive(Debug)]
pub struct Folder {
    dir: Dir,
    root: PathBuf,
    links: Links,
}

/// The error cap-std gives for a path that would leave its folder.
fn escape() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "a path led outside of the filesystem",
    )
}

/// The folder `name` of `dir`, reached without following a link: a link
/// there is the error ELOOP (a [`Why::Link`]), whatever the kernel said.
pub(super) fn open_dir_no_link(dir: &Dir, name: impl AsRef<Path>) -> std::io::Result<Dir> {
    let name = name.as_ref();
    dir.open_dir_nofollow(name).map_err(|e| {
        if dir
            .symlink_metadata(name)
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            std::io::Error::from_raw_os_error(rustix::io::Errno::LOOP.raw_os_error())
        } else {
            e
        }
    })
}

fn kind_of(ft: &std::fs::FileType) -> EntryKind {
    if ft.is_symlink() {
        EntryKind::Link
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other(platform::special_kind(ft).unwrap_or("a device"))
    }
}

fn cap_kind_of(ft: &cap_std::fs::FileType) -> EntryKind {
    if ft.is_symlink() {
        EntryKind::Link
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other(platform::cap_special_kind(ft).unwrap_or("a device"))
    }
}

impl EntryKind {
    fn noun(self) -> &'static str {
        match self {
            Self::File => "a regular file",
            Self::Dir => "a folder",
            Self::Link => "a symbolic link",
            Self::Other(what) => what,
        }
    }
}

/// Read an open file: a regular file (checked on the open file), at most
/// `limit` bytes (checked before reading, and while reading).
pub(super) fn read_file(
    file: std::fs::File,
    shown: &Path,
    limit: Limit,
) -> Result<Vec<u8>, Refused> {
    let meta = file
        .metadata()
        .map_err(|e| Refused::new(shown, Why::Io(e)))?;
    let kind = kind_of(&meta.file_type());
    if kind != EntryKind::File {
        return Err(Refused::new(shown, Why::NotRegular(kind.noun())));
    }
    let too_large = |size: u64| {
        Refused::new(
            shown,
            Why::TooLarge {
                size,
                cap: limit.bytes,
                what: limit.what,
            },
        )
    };
    if meta.len() > limit.bytes {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refused::new(shown, Why::Io(e)))?;
    if bytes.len() as u64 > limit.bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

fn text(bytes: Vec<u8>, shown: &Path) -> Result<String, Refused> {
    String::from_utf8(bytes).map_err(|_| Refused::new(shown, Why::NotText))
}

/// Read a file a person named (on the command line, in a dialog): no folder
/// to stay in, but the other rules hold: a regular file, opened without
/// blocking, at most `limit` bytes.
pub fn read_named_file(path: &Path, limit: Limit) -> Result<Vec<u8>, Refused> {
    let file = platform::without_blocking(std::fs::OpenOptions::new().read(true))
        .open(path)
        .map_err(|e| Refused::new(path, Why::Io(e)))?;
    read_file(file, path, limit)
}

/// [`read_named_file`] as UTF-8 text.
pub fn read_named_text(path: &Path, limit: Limit) -> Result<String, Refused> {
    text(read_named_file(path, limit)?, path)
}

impl Folder {
    /// Open the folder `root` (a path a person or a record gave; its own
    /// links are followed, as a shell would).
    pub fn open(root: &Path, links: Links) -> Result<Self, Refused> {
        let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority())
            .map_err(|e| Refused::new(root, Why::Io(e)))?;
        Ok(Self {
            dir,
            root: root.to_path_buf(),
            links,
        })
    }

    /// The folder, as it was opened.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The whole path of `rel`, for messages.
    pub fn path_of(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    fn refused(&self, rel: &Path, e: std::io::Error) -> Refused {
        Refused::io(&self.root, self.path_of(rel), e)
    }

    /// Run `f` on the folder holding `rel` and `rel`'s last name, reaching
    /// that folder without following a link (for [`Links::Never`]).
    fn in_parent<T>(
        &self,
        rel: &Path,
        f: impl FnOnce(&Dir, &Path) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let mut names = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => names.push(n),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(escape());
                }
            }
        }
        let Some(last) = names.pop() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an empty path",
            ));
        };
        let mut at: Option<Dir> = None;
        for n in names {
            let next = match &at {
                None => open_dir_no_link(&self.dir, n)?,
                Some(d) => open_dir_no_link(d, n)?,
            };
            at = Some(next);
        }
        f(at.as_ref().unwrap_or(&self.dir), Path::new(last))
    }

    fn open_read(&self, rel: &Path) -> std::io::Result<std::fs::File> {
        let mut o = OpenOptions::new();
        platform::cap_without_blocking(o.read(true));
        match self.links {
            Links::Inside => self.dir.open_with(rel, &o).map(cap_std::fs::File::into_std),
            Links::Never => {
                o.follow(FollowSymlinks::No);
                self.in_parent(rel, |d, n| d.open_with(n, &o))
                    .map(cap_std::fs::File::into_std)
            }
        }
    }

    /// The bytes of the regular file `rel`, at most `limit`.
    pub fn read(&self, rel: impl AsRef<Path>, limit: Limit) -> Result<Vec<u8>, Refused> {
        let rel = rel.as_ref();
        let file = self.open_read(rel).map_err(|e| self.refused(rel, e))?;
        read_file(file, &self.path_of(rel), limit)
    }

    /// [`Folder::read`] as UTF-8 text.
    pub fn read_text(&self, rel: impl AsRef<Path>, limit: Limit) -> Result<String, Refused> {
        let rel = rel.as_ref();
        text(self.read(rel, limit)?, &self.path_of(rel))
    }

    /// [`Folder::read_text`], `None` when there is no such file.
    pub fn read_text_if_any(
        &self,
        rel: impl AsRef<Path>,
        limit: Limit,
    ) -> Result<Option<String>, Refused> {
        match self.read_text(rel, limit) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What `rel` is, a link not followed; `None` when it is not there.
    pub fn kind(&self, rel: impl AsRef<Path>) -> Result<Option<EntryKind>, Refused> {
        let rel = rel.as_ref();
        let meta = match self.links {
            Links::Inside => self.dir.symlink_metadata(rel),
            Links::Never => self.in_parent(rel, |d, n| d.symlink_metadata(n)),
        };
        match meta {
            Ok(m) => Ok(Some(cap_kind_of(&m.file_type()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.refused(rel, e)),
        }
    }

    /// What `rel` is once a link is followed (inside the folder only; a link
    /// that leads out is refused); `None` when it is not there.
    pub fn target_kind(&self, rel: impl AsRef<Path>) -> Result<Option<EntryKind>, Refused> {
        let rel = rel.as_ref();
        if self.links == Links::Never {
            return self.kind(rel);
        }
        match self.dir.metadata(rel) {
            Ok(m) => Ok(Some(cap_kind_of(&m.file_type()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.refused(rel, e)),
        }
    }

    /// True when `rel` is a regular file (through a link inside the folder,
    /// for [`Links::Inside`]).
    pub fn is_file(&self, rel: impl AsRef<Path>) -> bool {
        matches!(self.target_kind(rel), Ok(Some(EntryKind::File)))
    }

    /// True when `rel` is a folder (as [`Folder::is_file`]).
    pub fn is_dir(&self, rel: impl AsRef<Path>) -> bool {
        matches!(self.target_kind(rel), Ok(Some(EntryKind::Dir)))
    }

    /// Where the link `rel` points (for messages).
    pub fn read_link(&self, rel: impl AsRef<Path>) -> Option<PathBuf> {
        self.dir.read_link_contents(rel.as_ref()).ok()
    }

    /// The entries of the folder `rel` (`""`: the folder itself), sorted by
    /// name, each with its kind (links not followed).
    pub fn entries(&self, rel: impl AsRef<Path>) -> Result<Vec<Entry>, Refused> {
        let rel = rel.as_ref();
        let dir = if rel.as_os_str().is_empty() {
            self.dir.try_clone()
        } else {
            match self.links {
                Links::Inside => self.dir.open_dir(rel),
                Links::Never => self.in_parent(rel, |d, n| open_dir_no_link(d, n)),
            }
        }
        .map_err(|e| self.refused(rel, e))?;
        let mut out = Vec::new();
        for entry in dir.entries().map_err(|e| self.refused(rel, e))? {
            let entry = entry.map_err(|e| self.refused(rel, e))?;
            let kind = entry
                .file_type()
                .map_err(|e| self.refused(&rel.join(entry.file_name()), e))?;
            out.push(Entry {
                name: entry.file_name(),
                kind: cap_kind_of(&kind),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

// Links and a FIFO made with Linux's calls.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn reads_stay_inside_and_take_regular_files_of_their_cap() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "host file").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.txt"), "hello").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/b.txt"), "b").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.join("out")).unwrap();
        std::os::unix::fs::symlink("a.txt", d.join("in")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.join("outdir")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let small = Limit {
            bytes: 3,
            what: "a test file",
        };
        let f = Folder::open(d, Links::Inside).unwrap();
        assert_eq!(f.read_text("a.txt", Limit::CARD).unwrap(), "hello");
        assert_eq!(f.read_text("in", Limit::CARD).unwrap(), "hello");
        assert_eq!(f.read_text("sub/../a.txt", Limit::CARD).unwrap(), "hello");
        for escape in [
            "out",
            "outdir/secret",
            "../x",
            "/etc/hostname",
            "sub/../../x",
        ] {
            let e = f.read(escape, Limit::CARD).unwrap_err();
            assert!(matches!(e.why, Why::Outside(_)), "{escape}: {e}");
        }
        let e = f.read("fifo", Limit::CARD).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = f.read("sub", Limit::CARD).unwrap_err();
        assert!(
            e.to_string().contains("a folder, not a regular file"),
            "{e}"
        );
        let e = f.read("a.txt", small).unwrap_err().to_string();
        assert!(
            e.contains("a.txt") && e.contains("5 bytes") && e.contains("a test file"),
            "{e}"
        );
        assert!(f.read("nope", Limit::CARD).unwrap_err().is_not_found());

        let never = Folder::open(d, Links::Never).unwrap();
        let e = never.read("in", Limit::CARD).unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        let e = never.read("outdir/secret", Limit::CARD).unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        assert_eq!(never.read_text("sub/b.txt", Limit::CARD).unwrap(), "b");
        let names: Vec<_> = never
            .entries("")
            .unwrap()
            .into_iter()
            .map(|e| (e.name.into_string().unwrap(), e.kind))
            .collect();
        assert!(names.contains(&("fifo".into(), EntryKind::Other("a FIFO (named pipe)"))));
        assert!(names.contains(&("in".into(), EntryKind::Link)));
        assert!(names.contains(&("sub".into(), EntryKind::Dir)));
    }
}
