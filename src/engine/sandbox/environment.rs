//! The environment a process the run starts gets: never the run's own
//! (which holds the model's API key), but the variables of one allowlist
//! ([`VARIABLES`]) that its [`Profile`] passes, the names a card lists, and
//! what the sandbox sets itself (a private HOME and TMPDIR).
//!
//! One list, each variable in a [`Group`]; a profile is the groups it
//! passes, and [`Profile::groups`] says why each differs from the others.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::engine::component::BuildContext;
use crate::engine::params::ParamError;

/// Why a variable of the run's environment may pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    /// The search path, locale and time zone (`LC_*` too).
    Basics,
    /// Which GPUs to use.
    Gpu,
    /// Who the user is and where their home is.
    User,
    /// Where temporary files go.
    Temp,
    /// Where language toolchains and environments live (Rust, Go, a Python
    /// venv or conda env, Julia).
    Toolchain,
    /// Slurm's client configuration (`SBATCH_*` too).
    Slurm,
}

/// The one allowlist: every variable of the run's environment that a
/// process the run starts may get, by [`Group`]; names ending in `*` are
/// prefixes.
pub(crate) const VARIABLES: [(&str, Group); 27] = [
    ("PATH", Group::Basics),
    ("LANG", Group::Basics),
    ("LANGUAGE", Group::Basics),
    ("TZ", Group::Basics),
    ("LC_*", Group::Basics),
    ("CUDA_VISIBLE_DEVICES", Group::Gpu),
    ("CUDA_DEVICE_ORDER", Group::Gpu),
    ("HIP_VISIBLE_DEVICES", Group::Gpu),
    ("ROCR_VISIBLE_DEVICES", Group::Gpu),
    ("NVIDIA_VISIBLE_DEVICES", Group::Gpu),
    ("GPU_DEVICE_ORDINAL", Group::Gpu),
    ("HOME", Group::User),
    ("USER", Group::User),
    ("LOGNAME", Group::User),
    ("TMPDIR", Group::Temp),
    ("CARGO_HOME", Group::Toolchain),
    ("RUSTUP_HOME", Group::Toolchain),
    ("RUSTUP_TOOLCHAIN", Group::Toolchain),
    ("GOPATH", Group::Toolchain),
    ("GOROOT", Group::Toolchain),
    ("GOCACHE", Group::Toolchain),
    ("GOMODCACHE", Group::Toolchain),
    ("VIRTUAL_ENV", Group::Toolchain),
    ("CONDA_PREFIX", Group::Toolchain),
    ("JULIA_DEPOT_PATH", Group::Toolchain),
    ("SLURM_CONF", Group::Slurm),
    ("SBATCH_*", Group::Slurm),
];

/// Who a process is, for what of the run's environment it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Profile {
    /// The Python evaluation worker and every candidate it runs, locally
    /// or on a Slurm node.
    Evaluator,
    /// The command evaluator's command (any executable, often a build).
    Command,
    /// Slurm's client commands (`sbatch`, `srun`, ...), which pass their
    /// environment on to the jobs they start.
    SlurmClient,
    /// A coding agent.
    Agent,
}

impl Profile {
    /// The groups of [`VARIABLES`] this profile passes.
    pub(crate) fn groups(self) -> &'static [Group] {
        match self {
            // Python needs no more: HOME and TMPDIR are private ones the
            // worker sets, and its interpreter is found outside the sandbox.
            Profile::Evaluator => &[Group::Basics, Group::Gpu],
            // A command may be a compiler or a build tool: it finds its
            // toolchain through the user's variables (in the sandbox HOME
            // and TMPDIR are then replaced by private ones).
            Profile::Command => &[
                Group::Basics,
                Group::Gpu,
                Group::User,
                Group::Temp,
                Group::Toolchain,
            ],
            // Slurm's clients find the cluster through its configuration and
            // the user; GPUs and toolchains are the node's business.
            Profile::SlurmClient => &[Group::Basics, Group::User, Group::Slurm],
            // Nothing of the run's: its environment is built from scratch
            // (a PATH that finds its program first, [`AGENT_SET`], the
            // card's entries and the relay's), so nothing the run's
            // environment holds reaches a program that talks to a model.
            Profile::Agent => &[],
        }
    }

    /// Whether the variable `name` of the run's environment passes.
    pub(crate) fn passes(self, name: &str) -> bool {
        let groups = self.groups();
        VARIABLES.iter().any(|(listed, group)| {
            groups.contains(group)
                && match listed.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == *listed,
                }
        })
    }

    /// Variables set for this profile whatever the run's environment holds
    /// (a private HOME and TMPDIR; the worker's bytecode setting): a card
    /// may not list them.
    pub(crate) fn sets(self) -> &'static [&'static str] {
        match self {
            Profile::Evaluator => &["HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE"],
            Profile::Command | Profile::Agent => &["HOME", "TMPDIR"],
            Profile::SlurmClient => &[],
        }
    }

    /// The variables of `vars` (the run's environment) this profile passes.
    pub(crate) fn filter(
        self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> impl Iterator<Item = (OsString, OsString)> {
        vars.into_iter()
            .filter(move |(name, _)| name.to_str().is_some_and(|n| self.passes(n)))
    }
}

/// The names of the [`Group::Gpu`] variables (a cluster node sets its own).
pub(crate) fn gpu_selection() -> impl Iterator<Item = &'static str> {
    VARIABLES
        .iter()
        .filter(|(_, group)| *group == Group::Gpu)
        .map(|(name, _)| *name)
}

/// What a coding agent's environment sets besides its PATH, HOME and
/// TMPDIR: a UTF-8 locale and a terminal that takes no escape sequences.
pub(crate) const AGENT_SET: [(&str, &str); 2] = [("LANG", "C.UTF-8"), ("TERM", "dumb")];

/// Whether `name` is an environment variable's name (letters, digits and
/// `_`, not starting with a digit).
pub(crate) fn valid_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

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
    if !valid_name(name) {
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
    if Profile::Evaluator.sets().contains(&name) {
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

/// The environment of a worker and its candidates: what
/// [`Profile::Evaluator`] passes of `vars` (the run's environment), the
/// card's `listed` names when set, a private `home` and `tmp`, `PYTHONPATH`
/// with `code_dir` first (then the entries of a listed `PYTHONPATH`), and
/// bytecode writing off. Nothing else.
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
        let passed = Profile::Evaluator.passes(text) || listed.iter().any(|l| l == text);
        if passed && !Profile::Evaluator.sets().contains(&text) {
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
    fn each_profile_passes_its_groups_of_the_one_list() {
        let passed = |profile: Profile| -> Vec<&str> {
            VARIABLES
                .iter()
                .map(|(name, _)| *name)
                .filter(|name| profile.passes(&name.replace('*', "X")))
                .collect()
        };
        let gpu: Vec<&str> = gpu_selection().collect();
        assert_eq!(
            gpu,
            [
                "CUDA_VISIBLE_DEVICES",
                "CUDA_DEVICE_ORDER",
                "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES",
                "NVIDIA_VISIBLE_DEVICES",
                "GPU_DEVICE_ORDINAL"
            ]
        );
        let basics = ["PATH", "LANG", "LANGUAGE", "TZ", "LC_*"];
        let evaluator: Vec<&str> = basics.iter().chain(&gpu).copied().collect();
        assert_eq!(passed(Profile::Evaluator), evaluator);
        let command = passed(Profile::Command);
        assert_eq!(command.len(), 5 + 6 + 3 + 1 + 10, "{command:?}");
        for name in [
            "HOME",
            "TMPDIR",
            "CARGO_HOME",
            "VIRTUAL_ENV",
            "CUDA_VISIBLE_DEVICES",
        ] {
            assert!(command.contains(&name), "{name}: {command:?}");
        }
        assert!(!command.contains(&"SLURM_CONF"));
        assert_eq!(
            passed(Profile::SlurmClient),
            [
                "PATH",
                "LANG",
                "LANGUAGE",
                "TZ",
                "LC_*",
                "HOME",
                "USER",
                "LOGNAME",
                "SLURM_CONF",
                "SBATCH_*"
            ]
        );
        assert!(passed(Profile::Agent).is_empty());
        assert!(Profile::Command.passes("LC_ALL") && Profile::SlurmClient.passes("SBATCH_QOS"));
        for profile in [Profile::Evaluator, Profile::Command, Profile::SlurmClient] {
            for secret in [
                "OPENAI_API_KEY",
                "AWS_SECRET_ACCESS_KEY",
                "SSH_AUTH_SOCK",
                "LC",
                "SBATCH",
            ] {
                assert!(!profile.passes(secret), "{profile:?} passes {secret}");
            }
        }
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
