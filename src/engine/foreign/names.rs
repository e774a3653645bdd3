//! Names in a hub: a namespace, a card's name and a version are each one
//! plain path component of a strict character set, never a path.

/// Why `value` cannot be a namespace or card name (`what` names the field):
/// letters, digits, `_` and `-` only.
pub fn check_name(what: &str, value: &str) -> Option<String> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (!ok).then(|| {
        let field = if what.is_empty() {
            String::new()
        } else {
            format!("{what}: ")
        };
        format!("{field}`{value}` must be letters, digits, `_` or `-`")
    })
}

/// Whether `v` can be a version: letters, digits, `.`, `_` and `-`, at most
/// 64, not starting with `.` (so never `.` or `..`), and not a name git
/// takes for `.git`.
pub fn check_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && !v.starts_with('.')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !super::is_git_name(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_component() {
        assert!(check_name("name", "top_k-2").is_none());
        for bad in ["", ".", "..", "a/b", "/abs", "a b", "a.b", "é"] {
            assert!(check_name("name", bad).is_some(), "{bad:?}");
        }
        assert!(check_version("1.2.0-rc1"));
        for bad in [
            "", ".", "..", "../x", "/tmp/x", "a/b", ".hidden", "1 2", "git~1",
        ] {
            assert!(!check_version(bad), "{bad:?}");
        }
    }
}
