//! The files the Slurm evaluator reads back from a candidate's dir in the
//! cluster's staging dir (`result.json`, `started.json`, the runner's
//! `stdout` and `stderr`): a node, the candidate and whoever else can write
//! the staging dir wrote them, so each is read through
//! [`crate::engine::foreign`]: a plain file of that dir only (a link, to a
//! host file or anywhere, is refused and not followed; a FIFO is refused,
//! not waited on), under its cap.

use std::path::Path;

use crate::engine::foreign::{Folder, Limit, Links};

/// `name` in `dir` as text: None when it is not there (yet), a clear error
/// naming the file and why when it is refused.
pub(super) fn read_text(dir: &Path, name: &str, limit: Limit) -> Result<Option<String>, String> {
    let folder = match Folder::open(dir, Links::Never) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    folder
        .read_text_if_any(name, limit)
        .map_err(|e| e.to_string())
}

/// `name` in `dir` as bytes (empty when it is not there), or why it is
/// refused.
pub(super) fn read_bytes(dir: &Path, name: &str, limit: Limit) -> Result<Vec<u8>, String> {
    let folder = match Folder::open(dir, Links::Never) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    match folder.read(name, limit) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
    use super::*;

    #[test]
    fn a_staged_result_that_is_a_link_a_fifo_or_oversize_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("host-secret");
        std::fs::write(&host, "{\"combined_score\": 1e9}").unwrap();
        let stage = dir.path().join("c1");
        std::fs::create_dir(&stage).unwrap();
        assert_eq!(
            read_text(&stage, "result.json", Limit::STAGED_RESULT).unwrap(),
            None,
            "not there yet"
        );
        // A link to a host file.
        crate::engine::platform::symlink(&host, stage.join("result.json")).unwrap();
        let err = read_text(&stage, "result.json", Limit::STAGED_RESULT).unwrap_err();
        assert!(err.contains("result.json") && err.contains("link"), "{err}");
        let err = read_bytes(&stage, "result.json", Limit::STAGED_OUTPUT).unwrap_err();
        assert!(err.contains("link"), "{err}");
        // A FIFO with no writer: refused at once, not waited on.
        std::fs::remove_file(stage.join("result.json")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(stage.join("result.json"))
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_text(&stage, "result.json", Limit::STAGED_RESULT).unwrap_err();
        assert!(err.contains("result.json") && err.contains("FIFO"), "{err}");
        // Over the cap.
        std::fs::remove_file(stage.join("result.json")).unwrap();
        let big = usize::try_from(Limit::STAGED_RESULT.bytes).unwrap() + 1;
        std::fs::write(stage.join("result.json"), vec![b' '; big]).unwrap();
        let err = read_text(&stage, "result.json", Limit::STAGED_RESULT).unwrap_err();
        assert!(err.contains("result.json") && err.contains("cap"), "{err}");
        // A plain file is read.
        std::fs::write(stage.join("stderr"), "said").unwrap();
        assert_eq!(
            read_bytes(&stage, "stderr", Limit::STAGED_OUTPUT).unwrap(),
            b"said"
        );
    }
}
