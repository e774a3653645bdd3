//! Path globs, as a task's `config.yaml` writes them (`src/**/*.py`) and as
//! `.gitignore` files do.
//!
//! A glob is matched against a whole relative path with `/` separators:
//! `*` matches within one path component, `?` one character of it, `[abc]`,
//! `[a-z]` and `[!x]` one character of a set, and `**` any number of whole
//! components (`src/**/*.py` matches `src/a.py` and `src/x/y/a.py`).

/// A compiled glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// `**`: any number of components.
    AnyDirs,
    /// One component's pattern.
    Component(Vec<Tok>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Char(char),
    Any,
    Star,
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

/// A glob that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("glob {glob:?}: {reason}")]
pub struct GlobError {
    pub glob: String,
    pub reason: String,
}

impl Glob {
    pub fn new(text: &str) -> Result<Self, GlobError> {
        let err = |reason: &str| GlobError {
            glob: text.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(err("empty"));
        }
        if trimmed.starts_with('/') {
            return Err(err(
                "globs are relative to the program's folder; drop the leading /",
            ));
        }
        let mut parts = Vec::new();
        for comp in trimmed.trim_end_matches('/').split('/') {
            if comp == ".." {
                return Err(err("`..` leaves the program's folder"));
            }
            if comp.is_empty() || comp == "." {
                continue;
            }
            if comp == "**" {
                if parts.last() != Some(&Part::AnyDirs) {
                    parts.push(Part::AnyDirs);
                }
                continue;
            }
            parts.push(Part::Component(tokens(comp).map_err(|r| err(&r))?));
        }
        if parts.is_empty() {
            return Err(err("matches nothing"));
        }
        Ok(Self {
            text: trimmed.to_owned(),
            parts,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the relative path `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        match_parts(&self.parts, &comps)
    }

    /// Whether `path` or one of the folders it is in matches (a glob naming
    /// a folder covers what is in it).
    pub fn covers(&self, path: &str) -> bool {
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        (1..=comps.len()).any(|n| match_parts(&self.parts, &comps[..n]))
    }
}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn tokens(comp: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = comp.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                if out.last() != Some(&Tok::Star) {
                    out.push(Tok::Star);
                }
            }
            '?' => out.push(Tok::Any),
            '\\' if i + 1 < chars.len() => {
                i += 1;
                out.push(Tok::Char(chars[i]));
            }
            '[' => {
                let mut j = i + 1;
                let negated = matches!(chars.get(j), Some('!' | '^'));
                if negated {
                    j += 1;
                }
                let mut items = Vec::new();
                let mut first = true;
                while j < chars.len() && (chars[j] != ']' || first) {
                    first = false;
                    let lo = chars[j];
                    if chars.get(j + 1) == Some(&'-') && chars.get(j + 2).is_some_and(|c| *c != ']')
                    {
                        items.push((lo, chars[j + 2]));
                        j += 3;
                    } else {
                        items.push((lo, lo));
                        j += 1;
                    }
                }
                if j >= chars.len() {
                    return Err("a `[` without its `]`".to_owned());
                }
                out.push(Tok::Set { negated, items });
                i = j;
            }
            c => out.push(Tok::Char(c)),
        }
        i += 1;
    }
    Ok(out)
}

fn match_parts(parts: &[Part], comps: &[&str]) -> bool {
    match parts.split_first() {
        None => comps.is_empty(),
        Some((Part::AnyDirs, rest)) => (0..=comps.len()).any(|k| match_parts(rest, &comps[k..])),
        Some((Part::Component(toks), rest)) => match comps.split_first() {
            Some((first, more)) => {
                match_component(toks, &first.chars().collect::<Vec<_>>()) && match_parts(rest, more)
            }
            None => false,
        },
    }
}

fn match_component(toks: &[Tok], s: &[char]) -> bool {
    match toks.split_first() {
        None => s.is_empty(),
        Some((Tok::Star, rest)) => (0..=s.len()).any(|k| match_component(rest, &s[k..])),
        Some((tok, rest)) => match s.split_first() {
            Some((c, more)) => {
                let one = match tok {
                    Tok::Char(x) => x == c,
                    Tok::Any => true,
                    Tok::Set { negated, items } => {
                        items.iter().any(|(lo, hi)| (lo..=hi).contains(&c)) != *negated
                    }
                    Tok::Star => unreachable!("handled above"),
                };
                one && match_component(rest, more)
            }
            None => false,
        },
    }
}

/// The patterns of one `.gitignore` file, in the folder `base` (relative to
/// the program's folder, `""` for its top).
#[derive(Clone, Debug, Default)]
pub struct Gitignore {
    rules: Vec<IgnoreRule>,
}

#[derive(Clone, Debug)]
struct IgnoreRule {
    glob: Glob,
    negated: bool,
    dir_only: bool,
}

impl Gitignore {
    /// Parse `text`, a `.gitignore` in folder `base`. Lines that are not
    /// valid globs are skipped (git does the same with what it cannot use).
    pub fn parse(text: &str, base: &str) -> Self {
        let mut rules = Vec::new();
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, pat) = match line.strip_prefix('!') {
                Some(p) => (true, p),
                None => (false, line.strip_prefix('\\').unwrap_or(line)),
            };
            let dir_only = pat.ends_with('/');
            let pat = pat.trim_end_matches('/');
            // a pattern with a slash before its end is anchored to `base`;
            // one without matches at any depth below it
            let anchored = pat.contains('/');
            let pat = pat.trim_start_matches('/');
            let full = match (base.is_empty(), anchored) {
                (true, true) => pat.to_owned(),
                (true, false) => format!("**/{pat}"),
                (false, true) => format!("{base}/{pat}"),
                (false, false) => format!("{base}/**/{pat}"),
            };
            if let Ok(glob) = Glob::new(&full) {
                rules.push(IgnoreRule {
                    glob,
                    negated,
                    dir_only,
                });
            }
        }
        Self { rules }
    }

    /// `Some(true)` when the last rule matching `path` ignores it,
    /// `Some(false)` when it re-includes it, `None` when none matches.
    pub fn verdict(&self, path: &str, is_dir: bool) -> Option<bool> {
        self.rules
            .iter()
            .rev()
            .find(|r| (is_dir || !r.dir_only) && r.glob.matches(path))
            .map(|r| !r.negated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_paths() {
        let g = Glob::new("src/**/*.py").unwrap();
        for yes in ["src/a.py", "src/x/a.py", "src/x/y/z.py"] {
            assert!(g.matches(yes), "{yes}");
        }
        for no in ["a.py", "src/a.pyc", "lib/src/a.py", "src/a.py/b"] {
            assert!(!g.matches(no), "{no}");
        }
        assert!(Glob::new("tests/*.py").unwrap().matches("tests/t1.py"));
        assert!(!Glob::new("tests/*.py").unwrap().matches("tests/a/t1.py"));
        assert!(Glob::new("README.md").unwrap().matches("README.md"));
        assert!(Glob::new("f?.[ch]").unwrap().matches("f1.h"));
        assert!(!Glob::new("f[!0-9].c").unwrap().matches("f1.c"));
        assert!(Glob::new("**").unwrap().matches("a/b/c"));
        assert!(Glob::new("build").unwrap().covers("build/x/y.o"));
        assert!(Glob::new("../x").is_err());
        assert!(Glob::new("/abs").is_err());
        assert!(Glob::new("a[b").is_err());
    }

    #[test]
    fn gitignore_rules() {
        let g = Gitignore::parse("# c\n*.pyc\n/build/\n!keep.pyc\nlogs/\ndocs/*.tmp\n", "");
        assert_eq!(g.verdict("x/y.pyc", false), Some(true));
        assert_eq!(g.verdict("keep.pyc", false), Some(false));
        assert_eq!(g.verdict("build", true), Some(true));
        assert_eq!(g.verdict("build", false), None, "only a folder");
        assert_eq!(g.verdict("a/logs", true), Some(true));
        assert_eq!(g.verdict("docs/a.tmp", false), Some(true));
        assert_eq!(g.verdict("x/docs/a.tmp", false), None);
        assert_eq!(g.verdict("src/a.py", false), None);
        let sub = Gitignore::parse("*.log\n/out\n", "pkg");
        assert_eq!(sub.verdict("pkg/a/b.log", false), Some(true));
        assert_eq!(sub.verdict("b.log", false), None);
        assert_eq!(sub.verdict("pkg/out", true), Some(true));
        assert_eq!(sub.verdict("pkg/a/out", true), None);
    }
}
