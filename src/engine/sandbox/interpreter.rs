//! The interpreter a sandboxed process runs, found outside the sandbox: its
//! executable and the dirs it reads (its prefixes), which the sandbox binds
//! back read-only when a hidden dir covers them. Located without running it
//! when it is a binary ([`locate`]), else asked ([`probe`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The interpreter the worker runs, as the interpreter itself reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Interpreter {
    /// `sys.executable`: the worker starts from it (no shim in between).
    pub executable: PathBuf,
    /// Dirs the interpreter reads its standard library and packages from.
    pub prefixes: Vec<PathBuf>,
}

/// Asks the interpreter where it lives (`-I -S`: no site, no environment
/// variables, so nothing but this code runs) and compiles the worker's code
/// in the code dir (argument 1) when its bytecode is missing or stale, so a
/// worker that cannot write there (in the sandbox) still starts from
/// bytecode.
const PROBE: &str = r#"import importlib.util, json, os, sys
prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))}
# A venv (found by its pyvenv.cfg; without `site`, sys.prefix is the base's).
venv = os.path.dirname(os.path.dirname(sys.executable))
if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
    prefixes.add(venv)
out = {"executable": sys.executable, "prefixes": sorted(prefixes)}
code = sys.argv[1]
for rel in sys.argv[2:]:
    src = os.path.join(code, rel)
    try:
        cached = importlib.util.cache_from_source(src)
        st = os.stat(src)
        try:
            with open(cached, "rb") as f:
                head = f.read(16)
        except OSError:
            head = b""
        fresh = (head[:4] == importlib.util.MAGIC_NUMBER and head[4:8] == bytes(4)
                 and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                 and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)
        if not fresh:
            import py_compile
            py_compile.compile(src, cfile=cached, doraise=True)
    except Exception as exc:
        out.setdefault("uncompiled", []).append(f"{rel}: {exc}")
print(json.dumps(out))
"#;

/// Run `python` (as the user named it: a name on PATH, a path, a
/// version-manager shim) outside the sandbox, from `cwd`, with the run's
/// environment (only this module's own code runs), to learn where it lives;
/// it also compiles the worker's `files` in `code_dir`.
pub(crate) async fn probe(
    python: &Path,
    cwd: &Path,
    code_dir: &Path,
    files: &[&str],
) -> Result<Interpreter, String> {
    #[derive(serde::Deserialize)]
    struct Found {
        executable: PathBuf,
        prefixes: Vec<PathBuf>,
    }
    let run = tokio::process::Command::new(python)
        .args(["-I", "-S", "-c", PROBE])
        .arg(code_dir)
        .args(files)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(Duration::from_secs(60), run).await {
        Err(_) => {
            return Err(format!(
                "the Python interpreter `{}` did not answer within 60 s",
                python.display()
            ));
        }
        Ok(Err(e)) => {
            return Err(format!(
                "cannot run the Python interpreter `{}`: {e} (set the evaluator's `python` parameter)",
                python.display()
            ));
        }
        Ok(Ok(o)) => o,
    };
    let text = String::from_utf8_lossy(&output.stdout);
    match serde_json::from_str::<Found>(text.trim()) {
        Ok(found) if output.status.success() && found.executable.is_absolute() => Ok(Interpreter {
            executable: found.executable,
            prefixes: found
                .prefixes
                .into_iter()
                .filter(|p| p.is_absolute())
                .collect(),
        }),
        _ => Err(format!(
            "the Python interpreter `{}` does not run ({}): {}",
            python.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// The interpreter `python` names, found without running it, when it is a
/// binary (the common case: a venv's, a pyenv version's, the system's, a
/// conda env's python): named by path, or by a name on `PATH`. None for a
/// script (a version manager's shim), a relative path, or anything not
/// found: [`probe`] asks the interpreter itself then.
pub(crate) fn locate(python: &str) -> Option<Interpreter> {
    let named = Path::new(python);
    let path = if named.is_absolute() {
        named.to_path_buf()
    } else if python.contains('/') {
        return None;
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(python))
            .find(|p| p.is_file())?
    };
    let mut head = [0u8; 4];
    std::io::Read::read_exact(&mut std::fs::File::open(&path).ok()?, &mut head).ok()?;
    if &head != b"\x7fELF" {
        return None;
    }
    let real = std::fs::canonicalize(&path).ok()?;
    let mut prefixes: Vec<PathBuf> = Vec::new();
    let mut add = |p: Option<&Path>| {
        if let Some(p) = p.filter(|p| p.components().count() > 1)
            && !prefixes.iter().any(|q| q == p)
        {
            prefixes.push(p.to_path_buf());
        }
    };
    add(path.parent());
    add(real.parent());
    add(real.parent().and_then(Path::parent));
    // A venv: its dir (pyvenv.cfg beside bin/) and the base it names.
    let venv = path.parent().and_then(Path::parent);
    if let Some(cfg) = venv.and_then(|v| std::fs::read_to_string(v.join("pyvenv.cfg")).ok()) {
        add(venv);
        let home = cfg.lines().find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "home").then(|| PathBuf::from(value.trim()))
        });
        if let Some(home) = home {
            add(Some(&home));
            add(home.parent());
        }
    }
    Some(Interpreter {
        executable: path,
        prefixes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_interpreter_is_located_without_running_it_and_a_script_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        let binary = std::env::current_exe().unwrap();
        crate::engine::platform::symlink(&binary, venv.join("bin/python")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            "home = /opt/base/bin\nversion = 3.11\n",
        )
        .unwrap();
        let python = venv.join("bin/python");
        let found = locate(python.to_str().unwrap()).expect("an ELF binary");
        assert_eq!(
            found.executable, python,
            "the venv's path, not the link's target"
        );
        for p in [
            venv.clone(),
            venv.join("bin"),
            PathBuf::from("/opt/base/bin"),
            PathBuf::from("/opt/base"),
            binary.parent().unwrap().to_path_buf(),
        ] {
            assert!(found.prefixes.contains(&p), "{p:?} in {:?}", found.prefixes);
        }
        let shim = dir.path().join("python-shim");
        std::fs::write(&shim, "#!/bin/sh\nexec python3 \"$@\"\n").unwrap();
        assert_eq!(
            locate(shim.to_str().unwrap()),
            None,
            "a script is asked instead"
        );
        assert_eq!(locate("relative/python"), None);
        assert_eq!(locate("/nonexistent/python9"), None);
    }
}
