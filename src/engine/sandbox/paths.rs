//! The host paths a sandbox hides and shows: the user's own data dirs
//! (hidden), the `read_paths` a card adds (shown read-only, never a whole
//! home or the settings file), and the scratch dir inside it where a
//! sandboxed process writes.

use std::path::{Path, PathBuf};

use crate::engine::params::ParamError;

/// Why a `read_paths` entry is refused, if it is: it would show the user's
/// whole home (or `/`, `/home`, `/root`) or the settings file.
pub(crate) fn refuse_read_path(path: &str) -> Option<String> {
    let p = expand_home(path);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let whole = [
        Some(PathBuf::from("/")),
        Some("/home".into()),
        Some("/root".into()),
        home,
    ];
    if whole.iter().flatten().any(|w| *w == p) {
        return Some(format!(
            "`{path}` would show all of it to candidates; name the dirs they need"
        ));
    }
    let settings = crate::engine::model::user_settings::user_settings_path();
    if settings.is_some_and(|s| s.starts_with(&p)) {
        return Some(format!("`{path}` holds galapagos's settings file"));
    }
    None
}

/// The first `read_paths` entry refused by [`refuse_read_path`].
pub(crate) fn check_read_paths(paths: &[String]) -> Result<(), ParamError> {
    for (i, path) in paths.iter().enumerate() {
        if let Some(reason) = refuse_read_path(path) {
            return Err(ParamError {
                key: format!("read_paths[{i}]"),
                reason,
            });
        }
    }
    Ok(())
}

/// `path` with a leading `~/` (or a lone `~`) replaced by `$HOME`.
pub(crate) fn expand_home(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    match (path.strip_prefix("~/"), path == "~") {
        (Some(rest), _) => home().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        (None, true) => home().unwrap_or_else(|| PathBuf::from(path)),
        _ => PathBuf::from(path),
    }
}

/// Where the user's own data lives: `/home`, `/root`, `$HOME`, and the dir
/// of galapagos's settings file (those that exist, never `/`).
pub(crate) fn private_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/home"), PathBuf::from("/root")];
    dirs.extend(std::env::var_os("HOME").map(PathBuf::from));
    dirs.extend(
        crate::engine::model::user_settings::user_settings_path()
            .and_then(|p| p.parent().map(Path::to_path_buf)),
    );
    dirs.retain(|d| d.is_absolute() && d.components().count() > 1 && d.is_dir());
    dirs
}

/// Where a sandboxed candidate can write: a fresh tmpfs per candidate,
/// holding its HOME (`home`) and TMPDIR (`tmp`).
pub(crate) const SCRATCH_ROOT: &str = "/tmp/galapagos";
