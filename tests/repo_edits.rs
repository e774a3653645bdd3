#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! The diff proposer on the built-in repository task, through the command
//! line against a scripted OpenAI-compatible server on loopback whose
//! replies use each edit form a model produces: SEARCH/REPLACE blocks under
//! their file's path, a unified diff, a `*** Begin Patch`; then an edit of a
//! read-only file, refused, and the retry that is told why.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::scripted_server::ScriptedServer;
use galapagos::engine::archive::read_genomes;
use galapagos::engine::genome::Genome;

const FEATURES: &str = "fitpkg/features.py";
const MODEL: &str = "fitpkg/model.py";
const TEST: &str = "tests/test_model.py";

fn replies() -> Vec<String> {
    let search_replace = "The fitted frequency looks closer to 1.6, and the periodic weight should grow with it.\n\n\
**fitpkg/features.py**\n```python\n<<<<<<< SEARCH\nFREQUENCY = 1.0  # angular frequency of the periodic feature\n\
=======\nFREQUENCY = 1.6  # angular frequency of the periodic feature\n>>>>>>> REPLACE\n```\n\n\
Then the weight:\n\nfitpkg/model.py\n```python\n<<<<<<< SEARCH\nWEIGHTS = [0.40, 0.70]  # one weight per feature: bias, periodic\n\
=======\nWEIGHTS = [0.40, 1.80]  # one weight per feature: bias, periodic\n>>>>>>> REPLACE\n```\n";
    // Wrong line numbers on purpose: the hunk is found by its context.
    let unified = "Raise the periodic weight only:\n\n```diff\n--- a/fitpkg/model.py\n+++ b/fitpkg/model.py\n\
@@ -9,3 +9,3 @@\n # EVOLVE-BLOCK-START\n-WEIGHTS = [0.40, 0.70]  # one weight per feature: bias, periodic\n\
+WEIGHTS = [0.40, 1.50]  # one weight per feature: bias, periodic\n \n```\n";
    let begin_patch = "*** Begin Patch\n*** Update File: fitpkg/features.py\n@@ # EVOLVE-BLOCK-START\n\
-FREQUENCY = 1.0  # angular frequency of the periodic feature\n+FREQUENCY = 1.55  # angular frequency of the periodic feature\n\
*** Add File: fitpkg/constants.py\n+\"\"\"Constants shared by the package.\"\"\"\n+SCALE = 1.0\n*** End Patch\n";
    let read_only = concat!(
        "The test is too strict:\n\ntests/test_model.py\n<<<<<<< SEARCH\n",
        "        self.assertEqual(len(features(0.5)), len(WEIGHTS))\n",
        "=======\n",
        "        pass\n",
        ">>>>>>> REPLACE\n"
    );
    let retry = "Then only the weights:\n\n`fitpkg/model.py`\n<<<<<<< SEARCH\n\
WEIGHTS = [0.40, 0.70]  # one weight per feature: bias, periodic\n=======\n\
WEIGHTS = [0.45, 1.70]  # one weight per feature: bias, periodic\n>>>>>>> REPLACE\n";
    [search_replace, unified, begin_patch, read_only, retry]
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn run_folder(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("genomes.jsonl").is_file())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.into_iter().next().unwrap()
}

fn text<'a>(g: &'a Genome, path: &str) -> &'a str {
    g.content
        .text_of(path)
        .unwrap_or_else(|| panic!("genome {} has no {path}", g.id))
}

#[test]
fn each_edit_form_changes_the_files_its_reply_names_and_a_refusal_is_told_on_retry() {
    let server = ScriptedServer::start(replies());
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "best_of_n",
            "--task",
            "fit_package",
            "--iterations",
            "4",
            "--quiet",
            "--api-base",
            &format!("http://127.0.0.1:{}/v1", server.port),
            "--model",
            "scripted-coder",
            "--api-key-env",
            "GALAPAGOS_TEST_KEY",
            "--out",
        ])
        .arg(out.path())
        .env("GALAPAGOS_TEST_KEY", "sk-test-scripted")
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert_eq!(server.bodies().len(), 5, "four iterations and one retry");

    let genomes = read_genomes(&run_folder(out.path()).join("genomes.jsonl")).unwrap();
    let initial = &genomes[0];
    assert!(!initial.content.is_single());
    let child = |iteration: u64, attempt: usize| -> &Genome {
        genomes
            .iter()
            .filter(|g| g.iteration == iteration)
            .nth(attempt)
            .unwrap_or_else(|| panic!("no attempt {attempt} in iteration {iteration}"))
    };

    // SEARCH/REPLACE under each file's path: both files change.
    let g = child(1, 0);
    assert!(g.valid, "{:?}", g.error);
    assert!(text(g, FEATURES).contains("FREQUENCY = 1.6  #"));
    assert!(text(g, MODEL).contains("WEIGHTS = [0.40, 1.80]"));
    assert_eq!(text(g, TEST), text(initial, TEST));
    assert_eq!(g.metadata.patch_type, "diff");

    // A unified diff with wrong line numbers: only the model changes.
    let g = child(2, 0);
    assert!(g.valid, "{:?}", g.error);
    assert!(text(g, MODEL).contains("WEIGHTS = [0.40, 1.50]"));
    assert_eq!(text(g, FEATURES), text(initial, FEATURES));

    // *** Begin Patch: an update and an added file.
    let g = child(3, 0);
    assert!(g.valid, "{:?}", g.error);
    assert!(text(g, FEATURES).contains("FREQUENCY = 1.55  #"));
    assert_eq!(
        text(g, "fitpkg/constants.py"),
        "\"\"\"Constants shared by the package.\"\"\"\nSCALE = 1.0\n"
    );
    assert_eq!(text(g, MODEL), text(initial, MODEL));
    assert_eq!(g.content.len(), initial.content.len() + 1);

    // An edit of a read-only file is refused with the path and the rule...
    let refused = child(4, 0);
    assert!(!refused.valid);
    let error = refused.error.as_deref().unwrap();
    assert!(
        error.contains("refused: changing `tests/test_model.py` is not allowed")
            && error.contains("evolve globs"),
        "{error}"
    );
    assert_eq!(refused.content, initial.content);
    // ... the retry's prompt tells the model, and the retry's edit applies.
    let retry_prompt = server.user_message(4);
    assert!(
        retry_prompt.contains("refused: changing `tests/test_model.py`"),
        "{retry_prompt}"
    );
    let g = child(4, 1);
    assert!(g.valid, "{:?}", g.error);
    assert!(text(g, MODEL).contains("WEIGHTS = [0.45, 1.70]"));

    // The prompt showed the editable files in full and the context files,
    // and asked for edits that name their file.
    let prompt = server.user_message(0);
    for needle in [
        "## `fitpkg/features.py` (editable)",
        "## `fitpkg/model.py` (editable)",
        "## `README.md` (read-only)",
        "## `tests/test_model.py` (read-only)",
        "*** Begin Patch",
        "--- a/path",
        "right under a line that holds its file's path",
        "fitpkg/*.py",
        "only the code between them may change",
        "Other files (not shown): `tests/__init__.py (empty)`",
    ] {
        assert!(prompt.contains(needle), "{needle} not in\n{prompt}");
    }
}

#[test]
fn the_compiled_repository_task_is_built_and_benchmarked_for_each_candidate() {
    let sieve = concat!(
        "A sieve counts every number at once:\n\n",
        "src/count.cpp\n```cpp\n<<<<<<< SEARCH\n",
        "// One primality test per number.\n",
        "std::uint64_t count_primes(std::uint64_t n) {\n",
        "    std::uint64_t count = 0;\n",
        "    for (std::uint64_t k = 2; k <= n; ++k) {\n",
        "        if (is_prime(k)) {\n",
        "            ++count;\n",
        "        }\n",
        "    }\n",
        "    return count;\n",
        "}\n",
        "=======\n",
        "#include <vector>\n\n",
        "// Sieve of Eratosthenes.\n",
        "std::uint64_t count_primes(std::uint64_t n) {\n",
        "    if (n < 2) {\n",
        "        return 0;\n",
        "    }\n",
        "    std::vector<char> composite(n + 1, 0);\n",
        "    std::uint64_t count = 0;\n",
        "    for (std::uint64_t k = 2; k <= n; ++k) {\n",
        "        if (!composite[k]) {\n",
        "            ++count;\n",
        "            for (std::uint64_t m = k * k; m <= n; m += k) {\n",
        "                composite[m] = 1;\n",
        "            }\n",
        "        }\n",
        "    }\n",
        "    return count;\n",
        "}\n",
        ">>>>>>> REPLACE\n```\n",
    );
    let broken = "*** Begin Patch\n*** Update File: src/primality.cpp\n@@\n-    return true;\n+    return true\n*** End Patch\n";
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // A candidate whose library writes outside its folder when it loads.
    let outside = out.path().join("escaped.txt");
    let escape = format!(
        "{}{}{}",
        "src/count.cpp\n<<<<<<< SEARCH\n// One primality test per number.\n=======\n#include <cstdio>\n\n\
         static const int escape_attempt = [] {\n    if (std::FILE* f = std::fopen(\"",
        outside.display(),
        "\", \"w\")) {\n        std::fputs(\"out\", f);\n        std::fclose(f);\n    }\n    return 0;\n}();\n\n\
         // One primality test per number.\n>>>>>>> REPLACE\n"
    );
    let server = ScriptedServer::start(vec![sieve.to_owned(), escape, broken.to_owned()]);
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "best_of_n",
            "--task",
            "prime_count_cpp",
            "--iterations",
            "3",
            "--quiet",
            "--api-base",
            &format!("http://127.0.0.1:{}/v1", server.port),
            "--model",
            "scripted-coder",
            "--api-key-env",
            "GALAPAGOS_TEST_KEY",
            "--out",
        ])
        .arg(out.path())
        .env("GALAPAGOS_TEST_KEY", "sk-test-scripted")
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let genomes = read_genomes(&run_folder(out.path()).join("genomes.jsonl")).unwrap();
    let initial = &genomes[0];
    assert!(initial.valid, "{:?} {:?}", initial.error, initial.artifacts);
    let first = initial.scores["combined_score"];
    let sieve = genomes.iter().find(|g| g.iteration == 1).unwrap();
    assert!(sieve.valid, "{:?} {:?}", sieve.error, sieve.artifacts);
    assert!(text(sieve, "src/count.cpp").contains("std::vector<char> composite"));
    // Counted by CPU time, a sieve is many times faster than trial division
    // whatever else the machine is doing.
    let faster = sieve.scores["combined_score"];
    assert!(faster > 5.0 * first, "sieve {faster} against {first}");
    // Built and run in the sandbox: the candidate's folder is the only one
    // it can write to.
    let escape = genomes.iter().find(|g| g.iteration == 2).unwrap();
    assert!(text(escape, "src/count.cpp").contains("escape_attempt"));
    assert!(escape.valid, "{:?} {:?}", escape.error, escape.artifacts);
    assert!(
        !outside.exists(),
        "the candidate wrote {}",
        outside.display()
    );
    // The sieve taken home: `apply` writes its files into a folder, where
    // the README's build command builds it and the benchmark counts right.
    let run = run_folder(out.path());
    let home_dir = out.path().join("primes");
    let applied = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("apply")
        .arg(&run)
        .args(["--genome", &sieve.id.to_string(), "--to"])
        .arg(&home_dir)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let built = Command::new("sh")
        .args([
            "-c",
            "g++ -O2 -std=c++17 -Iinclude src/*.cpp bench/main.cpp -o bench_primes && ./bench_primes 1000000",
        ])
        .current_dir(&home_dir)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&built.stdout), "1000000 78498\n");
    // A candidate that does not build is invalid, with the compiler's words.
    let broken = genomes.iter().find(|g| g.iteration == 3).unwrap();
    assert!(!broken.valid);
    let error = broken.error.as_deref().unwrap_or_default();
    assert!(error.contains("does not build"), "{error}");
    assert!(
        broken
            .artifacts
            .get("compiler_output")
            .is_some_and(|c| c.contains("primality.cpp")),
        "{:?}",
        broken.artifacts
    );
}
