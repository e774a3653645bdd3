//! The agent proposer with agents that are shell scripts, in the real
//! sandbox, on the built-in repository task.

use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::engine::genome::{GenomeId, Prompt};
use crate::engine::memory::Memory;
use crate::engine::proposer::ProposerEnv;
use crate::engine::task::Task;
use crate::engine::testing::TrivialEvaluator;

/// Notes kept as written.
struct Notes(Vec<String>);

#[async_trait::async_trait]
impl Memory for Notes {
    fn read(&self, _query: &MemoryQuery) -> Knowledge {
        Knowledge {
            notes: self.0.clone(),
        }
    }

    fn write(&mut self, knowledge: Knowledge) {
        self.0.extend(knowledge.notes);
    }
}

fn task() -> Task {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/fit_package");
    Task::load(&dir).unwrap()
}

fn genome(id: GenomeId, content: Tree, score: f64) -> Arc<Genome> {
    Arc::new(Genome {
        id,
        valid: true,
        scores: [("combined_score".to_owned(), score)].into_iter().collect(),
        content,
        parent_id: (id > 0).then_some(0),
        ..Genome::default()
    })
}

/// A proposer running `script` under `/bin/sh` (its workspace is the
/// working dir).
fn proposer(task: &Task, script: &str, timeout_secs: f64) -> AgentCommandProposer {
    let params = AgentCommandParams {
        command: vec!["/bin/sh".into(), "-c".into(), script.into(), "agent".into()],
        timeout_secs,
        ..AgentCommandParams::default()
    };
    AgentCommandProposer::check(&params).unwrap();
    AgentCommandProposer {
        rules: task.edit_rules(),
        jail: jail::Prison::new(None).unwrap(),
        root: workspace::Root::new(None).unwrap(),
        next: AtomicU64::new(0),
        relay: None,
        meter: Arc::default(),
        params,
    }
}

type SharedNotes = crate::engine::proposer::SharedMemory;

fn request(parents: Vec<Arc<Genome>>, notes: &SharedNotes) -> ProposalRequest {
    ProposalRequest {
        prompt: Prompt {
            system: "You improve programs.".into(),
            user: "# Task\nMake fitpkg fit the signal better.".into(),
        },
        parent: Arc::clone(&parents[0]),
        parents,
        inspirations: Vec::new(),
        seed: 1,
        pool: Vec::new(),
        mode: crate::engine::prompt::EditMode::Diff,
        env: ProposerEnv::new(Arc::new(TrivialEvaluator::default()), Arc::clone(notes), 7),
    }
}

fn notes(initial: &[&str]) -> SharedNotes {
    let memory: Box<dyn Memory> =
        Box::new(Notes(initial.iter().map(|s| (*s).to_owned()).collect()));
    Arc::new(tokio::sync::RwLock::new(memory))
}

/// What the workspaces' root holds now.
fn left_over(p: &AgentCommandProposer) -> Vec<String> {
    std::fs::read_dir(p.root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn the_child_is_the_workspace_with_changes_outside_the_editable_files_dropped_and_named() {
    let task = task();
    let base = task.initial_program.clone();
    let other = base.with_texts({
        let mut t = base.texts();
        t.insert(
            "fitpkg/model.py".into(),
            t["fitpkg/model.py"].replace("0.40, 0.70", "0.45, 0.75"),
        );
        t
    });
    let pool = vec![genome(0, base.clone(), 0.5), genome(3, other.clone(), 0.7)];
    // It reads the prompt on stdin and `.galapagos/`, builds on #3 (copying
    // its tree), edits a module, touches the README (read-only context),
    // adds a file outside the globs, and leaves a note.
    let script = r#"
set -e
grep -q 'fit the signal better' -
test "$(git log --format=%s)" = "the parent program"
grep -q '| 3 | 0.700000 |' .galapagos/leaderboard.md
grep -q 'an old note' .galapagos/notes.md
cp -r .galapagos/pool/3/tree/. .
echo 3 > .galapagos/out/parent
sed -i 's/0.45, 0.75/0.50, 0.90/' fitpkg/model.py
echo changed >> README.md
echo x > notes.txt
if echo no > .galapagos/leaderboard.md 2>/dev/null; then echo ".galapagos is writable"; exit 9; fi
echo 'tried 0.50, 0.90' > .galapagos/out/notes.md
git diff --stat
"#;
    let p = proposer(&task, script, 60.0);
    let memory = notes(&["an old note"]);
    let out = p.propose(request(pool, &memory)).await;
    let run = out.agent.as_deref().expect("an agent record");
    assert_eq!(run.exit, AgentExit::Finished, "{run:#?}");
    let child = out.content.expect("a child");
    assert!(
        child
            .text_of("fitpkg/model.py")
            .unwrap()
            .contains("0.50, 0.90"),
        "{}",
        child.text()
    );
    assert_eq!(child.text_of("README.md"), base.text_of("README.md"));
    assert!(child.get("notes.txt").is_none());
    assert_eq!(out.parent_id, Some(3), "the parent it named");
    assert_eq!(run.chosen_parent, Some(3));
    assert_eq!(run.dropped.len(), 2, "{:?}", run.dropped);
    assert!(
        run.dropped
            .iter()
            .any(|d| d.starts_with("README.md: outside the editable files")),
        "{:?}",
        run.dropped
    );
    assert!(
        run.dropped.iter().any(|d| d.starts_with("notes.txt")),
        "{:?}",
        run.dropped
    );
    assert!(
        run.stdout.contains("fitpkg/model.py"),
        "git diff --stat: {}",
        run.stdout
    );
    assert_eq!(run.notes.as_deref(), Some("tried 0.50, 0.90"));
    let kept = memory.read().await.read(&MemoryQuery::all()).notes;
    assert_eq!(
        kept,
        vec!["an old note".to_owned(), "tried 0.50, 0.90".to_owned()]
    );
    assert!(left_over(&p).is_empty(), "the workspace is removed");
}

#[tokio::test]
async fn an_unchanged_workspace_is_a_no_op_and_a_failing_agent_a_failure_with_its_output() {
    let task = task();
    let pool = vec![genome(0, task.initial_program.clone(), 0.5)];
    let memory = notes(&[]);
    let out = proposer(&task, "cat > /dev/null; echo looked", 60.0)
        .propose(request(pool.clone(), &memory))
        .await;
    assert!(
        matches!(&out.content, Err(ProposalError::NoOp(m)) if m.contains("unchanged")),
        "{:?}",
        out.content
    );
    let out = proposer(
        &task,
        "echo 'WEIGHTS = 1' >> fitpkg/model.py; echo trying; echo broke >&2; exit 3",
        60.0,
    )
    .propose(request(pool.clone(), &memory))
    .await;
    let run = out.agent.as_deref().unwrap();
    assert_eq!(run.exit, AgentExit::Failed("exit status 3".into()));
    assert!(
        matches!(&out.content, Err(ProposalError::Failed(m)) if m.contains("exit status 3")),
        "{:?}",
        out.content
    );
    assert_eq!((run.stdout.trim(), run.stderr.trim()), ("trying", "broke"));
    // Only editable files changed outside the editable globs: a no-op
    // that names what it dropped.
    let out = proposer(&task, "echo more >> README.md", 60.0)
        .propose(request(pool.clone(), &memory))
        .await;
    assert!(
        matches!(&out.content, Err(ProposalError::NoOp(m)) if m.contains("README.md")),
        "{:?}",
        out.content
    );
    // A program that is not there.
    let p = AgentCommandProposer {
        params: AgentCommandParams {
            command: vec!["no-such-agent-xyz".into()],
            ..AgentCommandParams::default()
        },
        ..proposer(&task, "true", 60.0)
    };
    let out = p.propose(request(pool, &memory)).await;
    let run = out.agent.as_deref().unwrap();
    assert!(
        matches!(&run.exit, AgentExit::NotStarted(m) if m.contains("`no-such-agent-xyz` is not found on PATH")),
        "{:?}",
        run.exit
    );
}

#[tokio::test]
async fn an_overrunning_agent_and_what_it_started_are_killed_at_its_limit() {
    let task = task();
    let pool = vec![genome(0, task.initial_program.clone(), 0.5)];
    let memory = notes(&[]);
    // A survivor that leaves its process group and session, and the agent
    // itself, which never ends.
    let script = "setsid sleep 977.25 & echo started; sleep 600";
    let p = proposer(&task, script, 2.0);
    let t = Instant::now();
    let out = p.propose(request(pool, &memory)).await;
    let run = out.agent.as_deref().unwrap();
    assert_eq!(run.exit, AgentExit::TimedOut);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(run.stdout.trim(), "started");
    assert!(matches!(&out.content, Err(ProposalError::Failed(m)) if m.contains("time limit")));
    // Nothing it started is left (the pid namespace died with it).
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    while survivors("977.25") > 0 {
        assert!(Instant::now() < deadline, "a survivor outlived the agent");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(left_over(&p).is_empty());
}

/// Processes whose command line holds `mark`.
fn survivors(mark: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
        })
        .count()
}

#[tokio::test]
async fn the_agent_writes_only_its_workspace_and_reaches_no_network() {
    let task = task();
    let pool = vec![genome(0, task.initial_program.clone(), 0.5)];
    let memory = notes(&[]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    let script = format!(
        r#"
for f in /etc/galapagos-agent-x {outside}/escaped /tmp/x "$HOME/../../../escaped"; do
  if echo x > "$f" 2>/dev/null; then echo "wrote $f"; fi
done
echo x > "$HOME/ok" && echo "home is writable"
echo x > "$TMPDIR/ok" && echo "tmp is writable"
if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo "reached the loopback port"; fi
ls {outside} 2>&1 | head -1
env | cut -d= -f1 | sort | tr '\n' ' '
sed -i 's/0.40, 0.70/0.41, 0.70/' fitpkg/model.py
"#,
        outside = outside.path().display()
    );
    let p = proposer(
        &task,
        &format!("exec bash -c '{}'", script.replace('\'', r"'\''")),
        60.0,
    );
    let out = p.propose(request(pool, &memory)).await;
    let run = out.agent.as_deref().unwrap();
    assert_eq!(run.exit, AgentExit::Finished, "{run:#?}");
    assert!(!run.stdout.contains("wrote "), "{}", run.stdout);
    assert!(!run.stdout.contains("reached"), "{}", run.stdout);
    assert!(
        run.stdout.contains("home is writable") && run.stdout.contains("tmp is writable"),
        "{}",
        run.stdout
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let names: Vec<&str> = run
        .stdout
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .collect();
    for name in &names {
        assert!(
            [
                "PATH", "LANG", "TERM", "HOME", "TMPDIR", "PWD", "SHLVL", "_", "OLDPWD"
            ]
            .contains(name),
            "the agent got {name}: {names:?}"
        );
    }
    assert!(
        out.content
            .unwrap()
            .text_of("fitpkg/model.py")
            .unwrap()
            .contains("0.41, 0.70")
    );
    drop(listener);
}

/// The agent's sandbox settings are the isolation kit's `Allowance`: the keys
/// a card wrote before keep their meaning, the candidates' other limits are
/// taken too, and the evaluators' `sandbox` and `network` are refused by name.
#[test]
fn the_agents_limits_are_the_candidates_keys_with_one_default_each() {
    use crate::engine::params::{ParamMap, ParamValue};
    let mut map = ParamMap::default();
    map.set(
        "command",
        ParamValue::from_json(&serde_json::json!(["agent"])).unwrap(),
    );
    for (key, value) in [
        ("read_paths", serde_json::json!(["~/tools"])),
        ("memory_limit_mib", serde_json::json!(2048)),
        ("process_limit", serde_json::json!(64)),
        ("write_quota_mib", serde_json::json!(1024)),
        ("output_limit_kb", serde_json::json!(64)),
        ("cpu_limit_secs", serde_json::json!(30.0)),
        ("file_size_limit_mib", serde_json::json!(8)),
    ] {
        map.set(key, ParamValue::from_json(&value).unwrap());
    }
    let specs = AgentCommandProposer::INFO.params;
    assert_eq!(map.validate(specs), Vec::new());
    let params: AgentCommandParams = map.decode().unwrap();
    let a = &params.allowance;
    assert_eq!(a.read_paths, ["~/tools"]);
    assert_eq!(
        (
            a.memory_limit_mib,
            a.process_limit,
            a.write_quota_mib,
            a.output_limit_kb
        ),
        (Some(2048), Some(64), 1024, 64)
    );
    let limits = jail::Prison::limits(&params);
    assert_eq!((limits.cpu_secs, limits.file_size_mib), (30.0, Some(8)));
    // Unset, each takes the one default the evaluators have.
    let defaults = AgentCommandParams::default();
    assert_eq!(
        defaults.allowance,
        crate::engine::sandbox::Allowance::default()
    );
    assert_eq!(defaults.allowance.write_quota_mib, 512);
    for key in ["sandbox", "network"] {
        let mut bad = map.clone();
        bad.set(
            key,
            ParamValue::from_json(&serde_json::json!(false)).unwrap(),
        );
        let errors = bad.validate(specs);
        assert!(
            errors
                .iter()
                .any(|e| e.key == key && e.reason.starts_with("unknown parameter")),
            "{key}: {errors:?}"
        );
    }
}
