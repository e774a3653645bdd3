//! [`RelPath`]: a path that may be written into a folder.

/// Why a path cannot name a file inside a folder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathRefused {
    #[error("{0:?}: an empty path")]
    Empty(String),
    #[error("{0:?}: an absolute path; paths are relative to the program's folder")]
    Absolute(String),
    #[error("{0:?}: `..` leaves the program's folder")]
    Parent(String),
    #[error("{0:?}: `.` or an empty component; write the path without them")]
    NotNormal(String),
    #[error("{0:?}: a backslash or a control character in a path")]
    BadChar(String),
    #[error(
        "{0:?}: names `.git` (or a name git takes for it, such as `.GIT` or `git~1`); a program holds no git metadata"
    )]
    GitDir(String),
}

/// A relative, `/`-separated path of plain components that stays inside
/// the folder it is joined to and names nothing git reads as its own
/// (see the module doc of [`super`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    /// `path` checked.
    pub fn new(path: &str) -> Result<Self, PathRefused> {
        let own = || path.to_owned();
        if path.is_empty() {
            return Err(PathRefused::Empty(own()));
        }
        if path.starts_with('/') || path.starts_with('~') || path.get(1..2) == Some(":") {
            return Err(PathRefused::Absolute(own()));
        }
        if path.chars().any(|c| c == '\\' || c.is_control()) {
            return Err(PathRefused::BadChar(own()));
        }
        for part in path.split('/') {
            match part {
                ".." => return Err(PathRefused::Parent(own())),
                "" | "." => return Err(PathRefused::NotNormal(own())),
                part if is_git_name(part) => return Err(PathRefused::GitDir(own())),
                _ => {}
            }
        }
        Ok(Self(path.to_owned()))
    }

    /// A path of one or more names, each checked.
    pub fn join<'a>(parts: impl IntoIterator<Item = &'a str>) -> Result<Self, PathRefused> {
        Self::new(&parts.into_iter().collect::<Vec<_>>().join("/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, in order.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The folders on the way and the file's name.
    pub fn split_last(&self) -> (Vec<&str>, &str) {
        let mut parts: Vec<&str> = self.components().collect();
        let last = parts.pop().unwrap_or_default();
        (parts, last)
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<std::path::Path> for RelPath {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

/// Whether git would take the file name `name` for `.git` on some file
/// system: compared without case (`.GIT`), without the code points HFS+
/// ignores (`.g\u{200c}it`), without trailing dots and spaces and an NTFS
/// stream name (`.git.`, `.git `, `.git::$INDEX_ALLOCATION`), and in its
/// 8.3 short form (`git~1`).
pub fn is_git_name(name: &str) -> bool {
    let visible: String = name.chars().filter(|c| !hfs_ignorable(*c)).collect();
    let lower = visible.to_lowercase();
    let base = lower.split(':').next().unwrap_or_default();
    let base = base.trim_end_matches(['.', ' ']);
    base == ".git" || base == "git~1"
}

/// The code points HFS+ drops when it compares names (as git lists them).
fn hfs_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_relative_paths_pass_and_everything_else_is_named() {
        for ok in [
            "a.py",
            "src/x/y.py",
            ".gitignore",
            "pkg/.github/w.yml",
            "git",
            "x.git",
        ] {
            assert_eq!(RelPath::new(ok).map(|p| p.to_string()), Ok(ok.to_owned()));
        }
        let refused = |p: &str| RelPath::new(p).unwrap_err();
        assert!(matches!(refused(""), PathRefused::Empty(_)));
        assert!(matches!(refused("/etc/passwd"), PathRefused::Absolute(_)));
        assert!(matches!(refused("C:x"), PathRefused::Absolute(_)));
        assert!(matches!(refused("a/../../b"), PathRefused::Parent(_)));
        assert!(matches!(refused(".."), PathRefused::Parent(_)));
        assert!(matches!(refused("a//b"), PathRefused::NotNormal(_)));
        assert!(matches!(refused("./a"), PathRefused::NotNormal(_)));
        assert!(matches!(refused("a/"), PathRefused::NotNormal(_)));
        assert!(matches!(refused("a\0b"), PathRefused::BadChar(_)));
        assert!(matches!(refused("a\\b"), PathRefused::BadChar(_)));
        for git in [
            ".git/config",
            "pkg/.git/config",
            "a/b/.GIT/hooks/x",
            "pkg/.Git",
            "git~1/config",
            "GIT~1/config",
            ".git./config",
            ".git /config",
            ".git::$INDEX_ALLOCATION/config",
            ".g\u{200c}it/config",
        ] {
            assert!(
                matches!(refused(git), PathRefused::GitDir(_)),
                "{git:?} passed"
            );
        }
        let e = refused("pkg/.git/config").to_string();
        assert!(e.contains("pkg/.git/config") && e.contains("`.git`"), "{e}");
    }
}
