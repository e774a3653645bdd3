//! Steering a run by hand: a program written by a person evaluated and
//! admitted as a child (live while paused, and from the command line on a
//! stopped run), notes added to every following prompt, a pinned
//! inspiration, all recorded and kept across resume.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use galapagos::engine::archive::{Archive, RunLock};
use galapagos::engine::events::{LogLevel, RunCommand, RunEvent, RunStatus};
use galapagos::engine::genome::{Genome, PERSON, PERSON_PATCH, Tree};
use galapagos::engine::run_thread::RunHandle;
use galapagos::engine::steering::{Change, NOTES_HEADING, Pin};

/// The quadratic program with the target's constants: fitness 1.
const PERFECT: &str = "# EVOLVE-BLOCK-START\nA = 2.5\nB = -1.25\nC = 0.75\nSHIFT = 0.0\n# EVOLVE-BLOCK-END\n\n\ndef run():\n    return [A, B, C, SHIFT]\n";

const NOTES: &str = "Keep SHIFT at zero; the target is a quadratic.";

/// The next event, within a generous bound.
fn next(handle: &mut RunHandle, deadline: Instant) -> RunEvent {
    assert!(Instant::now() < deadline, "no event in time");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()),
            handle.events.recv(),
        )
        .await
    })
    .expect("no event in time")
    .expect("the run ended without Finished")
}

/// Events until one matches `want` (which is returned); the rest are kept.
fn until(
    handle: &mut RunHandle,
    seen: &mut Vec<RunEvent>,
    want: impl Fn(&RunEvent) -> bool,
) -> RunEvent {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ev = next(handle, deadline);
        if want(&ev) {
            return ev;
        }
        assert!(
            !matches!(ev, RunEvent::Finished(_)),
            "the run finished first: {seen:?}"
        );
        seen.push(ev);
    }
}

fn admitted(events: &[RunEvent]) -> Vec<Arc<Genome>> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::GenomeAdmitted { genome, .. } => Some(Arc::clone(genome)),
            _ => None,
        })
        .collect()
}

/// Every prompt after the notes carries them; every child of a parent other
/// than #0 shows the pinned #0 first among its inspirations.
fn assert_steered(genomes: &[Genome]) {
    let mut pinned_shown = 0;
    for g in genomes {
        let prompt = g.prompt.as_ref().expect("a model's child has its prompt");
        assert!(
            prompt.user.contains(NOTES_HEADING) && prompt.user.contains(NOTES),
            "genome #{} prompt lacks the notes:\n{}",
            g.id,
            prompt.user
        );
        if g.parent_id != Some(0) {
            assert_eq!(
                g.inspiration_ids.first(),
                Some(&0),
                "genome #{} (parent {:?}) does not show the pinned #0: {:?}",
                g.id,
                g.parent_id,
                g.inspiration_ids
            );
            pinned_shown += 1;
        }
    }
    assert!(
        pinned_shown > 0,
        "no child of another parent to show the pin"
    );
}

#[test]
fn a_person_program_notes_and_a_pin_go_through_the_loop_and_survive_resume() {
    let registry = registry();
    let mut c = with_slow_evaluator(card("topk.yaml", &registry), 20);
    c.general.max_iterations = 6;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let run_dir = dir.path().join("run");
    let mut handle = spawn(request(c, &task, Some(run_dir.clone())));
    assert!(handle.send(RunCommand::Pause));
    let mut seen = Vec::new();
    until(&mut handle, &mut seen, |e| matches!(e, RunEvent::Paused));
    if admitted(&seen).is_empty() {
        let initial = until(&mut handle, &mut seen, |e| {
            matches!(e, RunEvent::GenomeAdmitted { .. })
        });
        seen.push(initial);
    }
    let before = admitted(&seen).len();

    // While paused: notes, a pin, and a person's program.
    assert!(handle.send(RunCommand::SetNotes(NOTES.to_owned())));
    assert!(handle.send(RunCommand::Pin(0)));
    let program = Tree::from(PERFECT);
    assert!(handle.send(RunCommand::Inject {
        parent: 0,
        program,
        outside_markers: false,
    }));
    let ev = until(
        &mut handle,
        &mut seen,
        |e| matches!(e, RunEvent::GenomeAdmitted { genome, .. } if genome.is_by_person()),
    );
    let RunEvent::GenomeAdmitted {
        genome: person,
        best_id,
        ..
    } = ev
    else {
        unreachable!()
    };
    // admitted while paused: nothing else was
    assert_eq!(admitted(&seen).len(), before);
    assert_eq!(person.parent_id, Some(0));
    assert_eq!(person.metadata.patch_type, PERSON_PATCH);
    assert_eq!(person.author(), Some(PERSON));
    assert!(person.prompt.is_none() && person.response.is_none());
    assert_eq!(person.fitness(), Some(1.0), "{person:?}");
    assert_eq!(best_id, Some(person.id));
    assert!(
        person.diff.as_deref().unwrap().contains("+A = 2.5"),
        "{:?}",
        person.diff
    );
    let steered: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            RunEvent::Steered(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let last = steered.last().expect("a Steered event per change");
    assert_eq!(last.notes, NOTES);
    assert_eq!(
        last.pins,
        vec![Pin {
            genome: 0,
            since: 1
        }]
    );

    assert!(handle.send(RunCommand::Resume));
    let summary = loop {
        match next(&mut handle, Instant::now() + Duration::from_secs(120)) {
            RunEvent::Finished(s) => break s,
            ev => seen.push(ev),
        }
    };
    handle.join();
    // the person's child is admitted like any child but spends no budget
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(summary.iterations, 6);
    assert_eq!(summary.genomes, admitted(&seen).len() as u64 + 1);

    let archive = Archive::open(&run_dir).unwrap();
    let genomes = archive.genomes().unwrap();
    let recorded = genomes.iter().find(|g| g.id == person.id).unwrap();
    assert!(recorded.is_by_person());
    assert_eq!(recorded.diff, person.diff);
    let after: Vec<Genome> = genomes
        .iter()
        .filter(|g| g.id > person.id)
        .cloned()
        .collect();
    assert!(!after.is_empty());
    assert_steered(&after);
    // recorded with the iteration each change took effect at
    let ck = archive.checkpoint().unwrap().unwrap();
    assert_eq!(ck.steering.notes, NOTES);
    assert_eq!(ck.steering.notes_since, 1);
    let changes: Vec<(u64, Change)> = ck
        .steering
        .history
        .iter()
        .map(|c| (c.iteration, c.change.clone()))
        .collect();
    assert_eq!(
        changes,
        vec![
            (
                1,
                Change::Notes {
                    text: NOTES.to_owned()
                }
            ),
            (1, Change::Pin { genome: 0 })
        ]
    );
    let log: Vec<String> = archive.events().unwrap().into_iter().map(|e| e.2).collect();
    assert!(
        log.iter()
            .any(|l| l.contains("from iteration 1: genome #0 pinned")),
        "{log:?}"
    );
    drop(archive);

    // Resumed: the notes and the pin are still in force.
    let mut handle = spawn(resume_request(&run_dir, 9, &registry));
    let mut resumed = Vec::new();
    let steering = until(&mut handle, &mut resumed, |e| {
        matches!(e, RunEvent::Steered(_))
    });
    let RunEvent::Steered(steering) = steering else {
        unreachable!()
    };
    assert_eq!(
        steering.pins,
        vec![Pin {
            genome: 0,
            since: 1
        }]
    );
    let (more, summary) = collect(handle, |_, _| {});
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(summary.iterations, 9);
    let more: Vec<Genome> = more.iter().map(|g| (**g).clone()).collect();
    assert!(!more.is_empty());
    assert_steered(&more);
}

#[test]
fn refused_changes_say_why_and_record_nothing() {
    let registry = registry();
    let mut c = with_slow_evaluator(card("topk.yaml", &registry), 20);
    c.general.max_iterations = 3;
    let dir = tempfile::tempdir().unwrap();
    let task = temp_task(dir.path());
    let mut handle = spawn(request(c, &task, None));
    assert!(handle.send(RunCommand::Pause));
    let mut seen = Vec::new();
    until(&mut handle, &mut seen, |e| matches!(e, RunEvent::Paused));
    if admitted(&seen).is_empty() {
        until(&mut handle, &mut seen, |e| {
            matches!(e, RunEvent::GenomeAdmitted { .. })
        });
    }
    assert!(handle.send(RunCommand::Pin(99)));
    assert!(handle.send(RunCommand::Inject {
        parent: 0,
        program: Tree::single("initial_program.py", PROGRAM),
        outside_markers: false,
    }));
    assert!(handle.send(RunCommand::Inject {
        parent: 42,
        program: Tree::single("initial_program.py", PERFECT),
        outside_markers: false,
    }));
    let mut errors = Vec::new();
    while errors.len() < 3 {
        match until(&mut handle, &mut seen, |e| {
            matches!(
                e,
                RunEvent::Log {
                    level: LogLevel::Error,
                    ..
                } | RunEvent::GenomeAdmitted { .. }
                    | RunEvent::Steered(_)
            )
        }) {
            RunEvent::Log { message, .. } => errors.push(message),
            other => panic!("a refused change went through: {other:?}"),
        }
    }
    assert!(
        errors[0].contains("cannot pin genome #99: no such genome"),
        "{errors:?}"
    );
    assert!(errors[1].contains("unchanged"), "{errors:?}");
    assert!(errors[2].contains("no genome #42"), "{errors:?}");
    assert!(handle.send(RunCommand::Stop));
    let (_, summary) = collect(handle, |_, _| {});
    assert_eq!(summary.status, RunStatus::Stopped);
}

fn galapagos(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn only_run(root: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().unwrap()
}

#[test]
fn the_command_line_steers_a_stopped_run_and_resume_goes_on_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(home.join("home")).unwrap();
    let task = temp_task(home);
    let task_arg = task.to_str().unwrap();
    let o = galapagos(
        &[
            "run",
            "topk",
            "--task",
            task_arg,
            "--iterations",
            "2",
            "--quiet",
            "--out",
            "runs",
        ],
        home,
    );
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&home.join("runs"));
    let run_arg = run.to_str().unwrap();
    let genomes_before = Archive::open(&run).unwrap().genome_count().unwrap();

    // A program that changes nothing is refused, and nothing is recorded.
    let same = home.join("same.py");
    std::fs::write(&same, PROGRAM).unwrap();
    let o = galapagos(
        &["inject", run_arg, "--parent", "0", same.to_str().unwrap()],
        home,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("unchanged"), "{}", text(&o));
    // A folder for a single-file program is refused by name.
    let o = galapagos(&["inject", run_arg, "--parent", "0", task_arg], home);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("give the file"), "{}", text(&o));
    // While another process writes the run folder, nothing is written.
    let perfect = home.join("perfect.py");
    std::fs::write(&perfect, PERFECT).unwrap();
    {
        let _lock = RunLock::acquire(&run).unwrap();
        let o = galapagos(
            &[
                "inject",
                run_arg,
                "--parent",
                "0",
                perfect.to_str().unwrap(),
            ],
            home,
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("is in use by"), "{}", text(&o));
    }
    assert_eq!(
        Archive::open(&run).unwrap().genome_count().unwrap(),
        genomes_before
    );

    // The program goes in as a child of #0, evaluated by the run's evaluator.
    let o = galapagos(
        &[
            "inject",
            run_arg,
            "--parent",
            "0",
            perfect.to_str().unwrap(),
        ],
        home,
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(&format!(
            "genome #{genomes_before} (written by a person, child of #0): combined_score 1.000000"
        )),
        "{}",
        text(&o)
    );
    let archive = Archive::open(&run).unwrap();
    let genomes = archive.genomes().unwrap();
    assert_eq!(genomes.len() as u64, genomes_before + 1);
    let person = genomes.last().unwrap();
    assert!(person.is_by_person());
    assert_eq!(person.parent_id, Some(0));
    assert_eq!(person.fitness(), Some(1.0));
    assert_eq!(
        archive.meta().unwrap().status,
        "completed",
        "the run had spent its budget, and still has"
    );
    drop(archive);

    // Notes and a pin; `steer RUN` prints them back.
    let o = galapagos(&["steer", run_arg, "--notes", NOTES, "--pin", "0"], home);
    assert!(o.status.success(), "{}", text(&o));
    let o = galapagos(&["steer", run_arg], home);
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        shown.contains(NOTES) && shown.contains("pinned: #0 (from iteration 4)"),
        "{shown}"
    );
    let o = galapagos(&["steer", run_arg, "--pin", "1000"], home);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot pin genome #1000"), "{}", text(&o));

    // Resume continues with the person's genome (now the best, so the
    // parent) and the notes and the pin.
    let o = galapagos(&["resume", run_arg, "--iterations", "4", "--quiet"], home);
    assert!(o.status.success(), "{}", text(&o));
    let genomes = Archive::open(&run).unwrap().genomes().unwrap();
    let resumed: Vec<Genome> = genomes
        .iter()
        .filter(|g| g.id > genomes_before)
        .cloned()
        .collect();
    assert!(!resumed.is_empty());
    assert!(
        resumed.iter().any(|g| g.parent_id == Some(genomes_before)),
        "the person's genome is in the population: {:?}",
        resumed.iter().map(|g| g.parent_id).collect::<Vec<_>>()
    );
    assert_steered(&resumed);
}

/// People are held to the task's edit rules as the model is: `inject` of a
/// program changed outside its EVOLVE-BLOCK markers is refused naming the
/// rule and the line, and with `--outside-markers` it goes in, the genome
/// and the run's log recording the override.
#[test]
fn inject_outside_the_markers_needs_the_override_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(home.join("home")).unwrap();
    let task = temp_task(home);
    let o = galapagos(
        &[
            "run",
            "topk",
            "--task",
            task.to_str().unwrap(),
            "--iterations",
            "1",
            "--quiet",
            "--out",
            "runs",
        ],
        home,
    );
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&home.join("runs"));
    let run_arg = run.to_str().unwrap();
    let before = Archive::open(&run).unwrap().genome_count().unwrap();
    // the harness outside the block returns the target itself
    let outside = PERFECT.replace(
        "    return [A, B, C, SHIFT]",
        "    return [2.5, -1.25, 0.75, 0.0]",
    );
    assert_ne!(outside, PERFECT);
    let program = home.join("outside.py");
    std::fs::write(&program, &outside).unwrap();
    let inject = |extra: &[&str]| {
        let mut args = vec!["inject", run_arg, "--parent", "0"];
        args.extend_from_slice(extra);
        args.push(program.to_str().unwrap());
        galapagos(&args, home)
    };
    let o = inject(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("changed outside the EVOLVE-BLOCK markers (initial_program.py line 10")
            && text(&o).contains("--outside-markers"),
        "{}",
        text(&o)
    );
    assert_eq!(Archive::open(&run).unwrap().genome_count().unwrap(), before);

    let o = inject(&["--outside-markers"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("kept by --outside-markers"),
        "{}",
        text(&o)
    );
    let archive = Archive::open(&run).unwrap();
    let person = archive.genomes().unwrap().pop().unwrap();
    assert!(person.is_by_person());
    assert_eq!(person.fitness(), Some(1.0));
    let rule = person.rule_override.as_deref().unwrap_or_default();
    assert!(
        rule.contains("outside the EVOLVE-BLOCK markers") && rule.contains("line 10"),
        "{rule}"
    );
    let events = format!("{:?}", archive.events().unwrap());
    assert!(events.contains("overrode the task's edit rule"), "{events}");
}

/// A repository task: the program is a folder; `inject` takes the whole
/// folder, refuses a change to a read-only file by name and admits one to
/// an editable module.
#[test]
fn a_folder_program_goes_in_whole_and_read_only_files_stay_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(home.join("home")).unwrap();
    let o = galapagos(
        &[
            "run",
            "best_of_n",
            "--task",
            "fit_package",
            "--iterations",
            "1",
            "--quiet",
            "--out",
            "runs",
        ],
        home,
    );
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&home.join("runs"));
    let run_arg = run.to_str().unwrap();
    let o = galapagos(&["apply", run_arg, "--genome", "0", "--to", "edit"], home);
    assert!(o.status.success(), "{}", text(&o));
    let before = Archive::open(&run).unwrap().genome_count().unwrap();

    // A file for a folder program, and a change to a read-only test file.
    let o = galapagos(
        &["inject", run_arg, "--parent", "0", "edit/fitpkg/model.py"],
        home,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("give the whole folder"), "{}", text(&o));
    let test_file = home.join("edit/tests/test_model.py");
    let original = std::fs::read_to_string(&test_file).unwrap();
    std::fs::write(&test_file, format!("{original}\n# loosened by hand\n")).unwrap();
    let o = galapagos(&["inject", run_arg, "--parent", "0", "edit"], home);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("tests/test_model.py"), "{}", text(&o));
    assert_eq!(Archive::open(&run).unwrap().genome_count().unwrap(), before);

    // An edit of an editable module goes in, every other file as it was.
    std::fs::write(&test_file, original).unwrap();
    let model = home.join("edit/fitpkg/model.py");
    let text_before = std::fs::read_to_string(&model).unwrap();
    // inside its EVOLVE-BLOCK, as the task's edit rules want
    let edited = text_before.replacen(
        "# EVOLVE-BLOCK-START\n",
        "# EVOLVE-BLOCK-START\n# edited by hand\n",
        1,
    );
    assert_ne!(edited, text_before);
    std::fs::write(&model, edited).unwrap();
    let o = galapagos(&["inject", run_arg, "--parent", "0", "edit"], home);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("written by a person, child of #0"),
        "{}",
        text(&o)
    );
    let genomes = Archive::open(&run).unwrap().genomes().unwrap();
    let person = genomes.last().unwrap();
    assert!(person.is_by_person());
    let changes: Vec<String> = person
        .content
        .changes_from(&genomes[0].content)
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(changes, vec!["fitpkg/model.py".to_owned()]);
    assert!(
        person
            .diff
            .as_deref()
            .unwrap()
            .contains("+# edited by hand")
    );
}
