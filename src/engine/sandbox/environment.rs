//! What an evaluation worker, and every candidate it runs, starts with: an
//! environment built from an allowlist, never the run's own environment
//! (which holds the model's API key).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::engine::component::BuildContext;
use crate::engine::params::ParamError;

/// Variables passed from the run's environment when set: the search path,
/// locale and time zone, and which GPUs to use. `LC_*` too.
const PASSED: [&str; 10] = [
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
];

/// The [`PASSED`] variables that select GPUs (a cluster node sets its own).
pub(crate) fn gpu_selection() -> &'static [&'static str] {
    &PASSED[4..]
}

/// Variables the evaluator sets itself: a card may not list them.
const OWN: [&str; 3] = ["HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE"];

/// Why a name listed in `evaluator.env` is refused, if it is.
///
/// `keys` are the names of the variables that hold model API keys (the
/// configured ones, and `OPENAI_API_KEY` always); `lookup` reads the run's
/// environment, so a listed variable that holds the same value as a key is
/// refused too.
pub(crate) fn refuse_listed(
    name: &str,
    keys: &[String],
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> Option<String> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        // The text is not echoed: it may be a pasted key.
        return Some(
            "an entry is not an environment variable name (letters, digits and _, not starting \
             with a digit)"
                .to_owned(),
        );
    }
    if keys.iter().any(|k| k == name) {
        return Some(format!(
            "`{name}` holds a model API key: it is never passed to the evaluator, whose candidates \
             could read it (remove it from evaluator.env)"
        ));
    }
    if OWN.contains(&name) {
        return Some(format!(
            "`{name}` is set by the evaluator itself (a private one per run); remove it from evaluator.env"
        ));
    }
    let value = lookup(name).filter(|v| !v.is_empty())?;
    let holder = keys.iter().find(|k| lookup(k).as_ref() == Some(&value))?;
    Some(format!(
        "`{name}` holds the same value as the model API key variable `{holder}`: it is never \
         passed to the evaluator, whose candidates could read it (remove it from evaluator.env)"
    ))
}

/// The key variable every run may use (`OPENAI_API_KEY`).
pub(crate) fn default_key_vars() -> Vec<String> {
    vec![crate::engine::model::openai::DEFAULT_API_KEY_ENV.to_owned()]
}

/// The run's key variables ([`BuildContext::key_vars`]), with the default
/// one and the model's even when the context was made without them.
pub(crate) fn key_vars(ctx: &BuildContext<'_>) -> Vec<String> {
    let mut keys = default_key_vars();
    keys.extend(ctx.model.key_env_vars());
    keys.extend(ctx.key_vars.iter().cloned());
    keys.sort();
    keys.dedup();
    keys
}

/// The first `env` entry refused by [`refuse_listed`].
pub(crate) fn check_env(
    listed: &[String],
    keys: &[String],
    lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<(), ParamError> {
    for (i, name) in listed.iter().enumerate() {
        if let Some(reason) = refuse_listed(name, keys, lookup) {
            return Err(ParamError {
                key: format!("env[{i}]"),
                reason,
            });
        }
    }
    Ok(())
}

/// The environment of a worker and its candidates: [`PASSED`] and `LC_*`
/// from `lookup` when set, the card's `listed` names when set, a private
/// `home` and `tmp`, `PYTHONPATH` with `code_dir` first (then the entries of
/// a listed `PYTHONPATH`), and bytecode writing off. Nothing else.
/// The variable that hands the task's hidden paths to the evaluator, as a
/// JSON list (`galapagos_eval.hidden_paths` reads it); None without any.
pub(crate) fn hidden_var(hidden: &[PathBuf]) -> Option<(OsString, OsString)> {
    if hidden.is_empty() {
        return None;
    }
    let list: Vec<String> = hidden
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    Some((
        "GALAPAGOS_HIDDEN".into(),
        serde_json::Value::from(list).to_string().into(),
    ))
}

pub(crate) fn environment(
    listed: &[String],
    home: &Path,
    tmp: &Path,
    code_dir: &Path,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    let mut python_path = vec![code_dir.to_path_buf()];
    for (name, value) in vars {
        let Some(text) = name.to_str() else {
            continue;
        };
        if text == "PYTHONPATH" {
            if listed.iter().any(|l| l == text) {
                python_path.extend(std::env::split_paths(&value));
            }
            continue;
        }
        let passed =
            PASSED.contains(&text) || text.starts_with("LC_") || listed.iter().any(|l| l == text);
        if passed && !OWN.contains(&text) {
            out.push((name, value));
        }
    }
    out.push(("HOME".into(), home.into()));
    out.push(("TMPDIR".into(), tmp.into()));
    out.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    if let Ok(joined) = std::env::join_paths(&python_path) {
        out.push(("PYTHONPATH".into(), joined));
    } else {
        out.push(("PYTHONPATH".into(), code_dir.into()));
    }
    out
}

/// The entries of `PYTHONPATH` in `env` (as [`environment`] built it).
pub(crate) fn python_path(env: &[(OsString, OsString)]) -> Vec<PathBuf> {
    env.iter()
        .find(|(k, _)| k == OsStr::new("PYTHONPATH"))
        .map(|(_, v)| std::env::split_paths(v).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_allowlist_and_the_listed_names_pass() {
        let run_env = vars(&[
            ("PATH", "/usr/bin"),
            ("LANG", "C.UTF-8"),
            ("LC_NUMERIC", "de_DE"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("HOME", "/home/me"),
            ("CUDA_VISIBLE_DEVICES", "1"),
            ("DATA_DIR", "/data"),
            ("PYTHONPATH", "/opt/lib:/opt/more"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
        ]);
        let listed = vec!["DATA_DIR".to_owned(), "PYTHONPATH".to_owned()];
        let env = environment(
            &listed,
            Path::new("/p/home"),
            Path::new("/p/tmp"),
            Path::new("/code"),
            run_env,
        );
        let names: Vec<&str> = env.iter().filter_map(|(k, _)| k.to_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "LANG",
                "LC_NUMERIC",
                "CUDA_VISIBLE_DEVICES",
                "DATA_DIR",
                "HOME",
                "TMPDIR",
                "PYTHONDONTWRITEBYTECODE",
                "PYTHONPATH"
            ]
        );
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("HOME"), Some("/p/home".into()));
        assert_eq!(get("PYTHONPATH"), Some("/code:/opt/lib:/opt/more".into()));
    }

    #[test]
    fn key_variables_names_and_values_are_refused() {
        let keys = vec!["OPENAI_API_KEY".to_owned(), "MY_LLM_KEY".to_owned()];
        let lookup = |n: &str| match n {
            "MY_LLM_KEY" => Some(OsString::from("sk-abc")),
            "COPY" => Some(OsString::from("sk-abc")),
            "DATA_DIR" => Some(OsString::from("/data")),
            _ => None,
        };
        let refused = |n: &str| refuse_listed(n, &keys, &lookup);
        assert!(refused("OPENAI_API_KEY").unwrap().contains("API key"));
        assert!(refused("MY_LLM_KEY").unwrap().contains("API key"));
        assert!(refused("COPY").unwrap().contains("same value"));
        assert!(refused("HOME").unwrap().contains("set by the evaluator"));
        assert!(
            refused("1BAD")
                .unwrap()
                .contains("not an environment variable name")
        );
        let pasted = refused("sk-abc").unwrap();
        assert!(!pasted.contains("sk-abc"), "{pasted}");
        assert_eq!(refused("DATA_DIR"), None);
        assert_eq!(refused("UNSET_BUT_FINE"), None);
    }
}
