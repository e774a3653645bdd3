//! [`Target`]: writing [`RelPath`]s into a folder, following no link.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{Dir, OpenOptions};

use super::{Limit, Refused, RelPath, Why};
use crate::engine::platform;

/// A folder written into. Every path is a [`RelPath`]; neither the folders
/// on its way nor the file itself may be a symbolic link (one planted in
/// the folder cannot redirect a write).
#[derive(Debug)]
pub struct Target {
    dir: Dir,
    root: PathBuf,
}

impl Target {
    /// The folder `root`, created with its parents when missing.
    pub fn create(root: &Path) -> Result<Self, Refused> {
        std::fs::create_dir_all(root).map_err(|e| Refused::new(root, Why::Io(e)))?;
        Self::open(root)
    }

    /// The existing folder `root`.
    pub fn open(root: &Path) -> Result<Self, Refused> {
        let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority())
            .map_err(|e| Refused::new(root, Why::Io(e)))?;
        Ok(Self {
            dir,
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The whole path of `path`, for messages.
    pub fn path_of(&self, path: &RelPath) -> PathBuf {
        self.root.join(path.as_str())
    }

    fn refused(&self, path: &RelPath, e: std::io::Error) -> Refused {
        Refused::io(&self.root, self.path_of(path), e)
    }

    /// The folder that holds `path` (made when `create`; `None` when one on
    /// the way is missing and not `create`), reached without following a
    /// link.
    fn parent(&self, path: &RelPath, create: bool) -> std::io::Result<Option<Dir>> {
        let (folders, _) = path.split_last();
        let mut at = self.dir.try_clone()?;
        for name in folders {
            if create {
                match at.create_dir(name) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            at = match super::folder::open_dir_no_link(&at, name) {
                Ok(d) => d,
                Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
        }
        Ok(Some(at))
    }

    fn held_by(&self, path: &RelPath) -> Result<Dir, Refused> {
        match self.parent(path, true) {
            Ok(Some(d)) => Ok(d),
            Ok(None) => Err(self.refused(path, std::io::Error::from(std::io::ErrorKind::NotFound))),
            Err(e) => Err(self.refused(path, e)),
        }
    }

    /// Write `bytes` to `path` (made or replaced; the folders on its way
    /// made).
    pub fn write(&self, path: &RelPath, bytes: &[u8]) -> Result<(), Refused> {
        let dir = self.held_by(path)?;
        let (_, name) = path.split_last();
        write_in(&dir, name, bytes).map_err(|e| match e {
            Wrote::Io(e) => self.refused(path, e),
            Wrote::NotRegular => Refused::new(
                self.path_of(path),
                Why::NotRegular("something other than a file"),
            ),
        })
    }

    /// Write `bytes` to `path` through a temporary file renamed over it, so a
    /// reader sees the old file or the new one.
    pub fn write_atomic(&self, path: &RelPath, bytes: &[u8]) -> Result<(), Refused> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = self.held_by(path)?;
        let (_, name) = path.split_last();
        let tmp = format!(
            ".{name}.tmp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let wrote = write_in(&dir, &tmp, bytes)
            .map_err(|e| match e {
                Wrote::Io(e) => e,
                Wrote::NotRegular => std::io::Error::other("not a regular file"),
            })
            .and_then(|()| dir.rename(&tmp, &dir, name));
        if let Err(e) = wrote {
            let _ = dir.remove_file(&tmp);
            return Err(self.refused(path, e));
        }
        Ok(())
    }

    /// Hard-link `path` to `stored` of the folder `store`, or write `bytes`
    /// when it cannot be linked (another file system, a link limit).
    pub fn link_or_write(
        &self,
        path: &RelPath,
        store: &Dir,
        stored: &str,
        bytes: &[u8],
    ) -> Result<(), Refused> {
        let dir = self.held_by(path)?;
        let (_, name) = path.split_last();
        if store.hard_link(stored, &dir, name).is_ok() {
            return Ok(());
        }
        self.write(path, bytes)
    }

    /// The bytes of `path` as the folder has it, `None` when it has none;
    /// a link or anything but a regular file is refused.
    pub fn read(&self, path: &RelPath, limit: Limit) -> Result<Option<Vec<u8>>, Refused> {
        let dir = match self.parent(path, false) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(None),
            Err(e) => return Err(self.refused(path, e)),
        };
        let (_, name) = path.split_last();
        let mut o = OpenOptions::new();
        platform::cap_without_blocking(o.read(true)).follow(FollowSymlinks::No);
        let file = match dir.open_with(name, &o) {
            Ok(f) => f.into_std(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.refused(path, e)),
        };
        super::folder::read_file(file, &self.path_of(path), limit).map(Some)
    }

    /// Remove the file `path`; true when there was one.
    pub fn remove(&self, path: &RelPath) -> Result<bool, Refused> {
        let dir = match self.parent(path, false) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(false),
            Err(e) => return Err(self.refused(path, e)),
        };
        let (_, name) = path.split_last();
        match dir.remove_file(name) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.refused(path, e)),
        }
    }

    /// True when the folder has no entry.
    pub fn is_empty(&self) -> Result<bool, Refused> {
        let mut entries = self
            .dir
            .entries()
            .map_err(|e| Refused::new(&self.root, Why::Io(e)))?;
        Ok(entries.next().is_none())
    }
}

enum Wrote {
    Io(std::io::Error),
    NotRegular,
}

/// Write `name` in `dir`: opened without following a link and without
/// blocking, checked to be a regular file before a byte is written.
fn write_in(dir: &Dir, name: &str, bytes: &[u8]) -> Result<(), Wrote> {
    use std::io::Write as _;
    let mut o = OpenOptions::new();
    platform::cap_without_blocking(o.write(true).create(true)).follow(FollowSymlinks::No);
    let file = dir.open_with(name, &o).map_err(Wrote::Io)?.into_std();
    let meta = file.metadata().map_err(Wrote::Io)?;
    if !meta.is_file() {
        return Err(Wrote::NotRegular);
    }
    file.set_len(0).map_err(Wrote::Io)?;
    let mut file = file;
    file.write_all(bytes).map_err(Wrote::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_follow_no_link_planted_in_the_target() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        crate::engine::platform::symlink(outside.path(), d.join("pkg")).unwrap();
        crate::engine::platform::symlink(outside.path().join("f"), d.join("f")).unwrap();
        let t = Target::open(d).unwrap();
        let rel = |p: &str| RelPath::new(p).unwrap();
        let e = t.write(&rel("pkg/x.py"), b"x").unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        let e = t.write(&rel("f"), b"x").unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        t.write(&rel("a/b/c.txt"), b"abc").unwrap();
        t.write_atomic(&rel("a/d.txt"), b"d").unwrap();
        assert_eq!(std::fs::read(d.join("a/b/c.txt")).unwrap(), b"abc");
        assert_eq!(
            t.read(&rel("a/d.txt"), Limit::CARD).unwrap().as_deref(),
            Some(&b"d"[..])
        );
        assert_eq!(t.read(&rel("no/such"), Limit::CARD).unwrap(), None);
        assert!(t.remove(&rel("a/d.txt")).unwrap());
        assert!(!t.remove(&rel("a/d.txt")).unwrap());
        // a write over a link replaces nothing outside; an atomic one
        // replaces the link itself
        t.write_atomic(&rel("f"), b"mine").unwrap();
        assert_eq!(std::fs::read(d.join("f")).unwrap(), b"mine");
        assert!(!outside.path().join("f").exists());
    }
}
