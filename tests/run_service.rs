// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The run service on this machine, without ssh: a live run served on its
//! folder's socket (owner-only), followed to its end with every genome once,
//! a subscription resumed from its cursor with no gap and no duplicate, a
//! watcher's commands refused, a steering command taken by the loop, the
//! bodies of a genome on demand, a finished run's folder answering the same
//! questions, and a client of another protocol version refused.

#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use galapagos::engine::archive::Archive;
use galapagos::engine::events::RunEvent;
use galapagos::engine::redact::Redactor;
use galapagos::engine::run_thread::{RunHandle, start};
use galapagos::engine::service::protocol::{
    Command, Cursor, Message, Reply, RequestBody, WireEvent,
};
use galapagos::engine::service::{
    Client, ClientError, ConnectOptions, Follow, ServeContext, Target, Update, local, serve,
};

/// A served run of `iterations` iterations whose children each take
/// `sleep_ms` to evaluate, recorded in `root/run`.
fn served_run(root: &Path, iterations: u64, sleep_ms: i64) -> (RunHandle, PathBuf) {
    let registry = common::registry();
    let task = common::temp_task(root);
    let mut card = common::with_slow_evaluator(common::card("best_of_n.yaml", &registry), sleep_ms);
    card.general.max_iterations = iterations;
    card.general.parallel = 1;
    let dir = root.join("run");
    let plan = common::plan_in(card, &task, Some(dir.clone()), &registry);
    let ctx = ServeContext {
        dir: dir.clone(),
        card: plan.valid_card().clone(),
        task: plan.task().clone(),
        registry,
        redactor: Arc::new(Redactor::default()),
    };
    let handle = start(plan, galapagos::engine::model::default_model(), None).unwrap();
    let (handle, unserved) = serve(handle, ctx, None);
    assert!(unserved.is_none(), "{unserved:?}");
    (handle, dir)
}

/// Drain the local consumer's events on a thread (as the command line
/// does), returning the genome ids it saw once the run ends.
fn drain(mut handle: RunHandle) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let mut ids = Vec::new();
        while let Some(e) = handle.events.blocking_recv() {
            match e {
                RunEvent::GenomeAdmitted { genome, .. } => ids.push(genome.id),
                RunEvent::Finished(_) => break,
                _ => {}
            }
        }
        handle.join();
        ids
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn options(read_only: bool) -> ConnectOptions {
    ConnectOptions {
        read_only,
        ..ConnectOptions::new("run_service test")
    }
}

/// Wait (bounded) until the run has `n` genomes on record.
fn wait_for_genomes(dir: &Path, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let count = Archive::open(dir)
            .and_then(|a| a.genome_count())
            .unwrap_or(0);
        if count >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {count} genomes after 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_each_once(ids: &[u64], n: u64, what: &str) {
    let want: Vec<u64> = (0..n).collect();
    assert_eq!(ids, want.as_slice(), "{what}: every genome once, in order");
}

#[test]
fn a_live_run_is_followed_to_its_end_with_every_genome_once_on_an_owner_only_socket() {
    let root = tempfile::tempdir().unwrap();
    let (handle, dir) = served_run(root.path(), 12, 20);
    let service = dir.join(local::SERVICE_DIR);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&service), 0o700);
    assert_eq!(mode(&local::socket_path(&dir)), 0o600);
    let local_ids = drain(handle);
    let rt = runtime();
    let (ids, ended, welcome_live) = rt.block_on(async {
        let mut follow = Follow::start(Target::Local(dir.clone()), options(true), true);
        let mut ids = Vec::new();
        let mut live = None;
        loop {
            match tokio::time::timeout(Duration::from_secs(120), follow.updates.recv())
                .await
                .unwrap()
            {
                Some(Update::Connected { welcome, .. }) => {
                    live.get_or_insert(welcome.live);
                }
                Some(Update::Reset { .. }) => ids.clear(),
                Some(Update::Event(RunEvent::GenomeAdmitted { genome, .. })) => ids.push(genome.id),
                Some(Update::Ended { status }) => return (ids, status, live),
                Some(Update::Failed(why)) => panic!("{why}"),
                Some(_) => {}
                None => panic!("the follow ended without Ended"),
            }
        }
    });
    assert_eq!(welcome_live, Some(true));
    assert_eq!(ended, "completed");
    let local_ids = local_ids.join().unwrap();
    let n = Archive::open(&dir).unwrap().genome_count().unwrap();
    assert!(n >= 13, "{n}");
    assert_each_once(&ids, n, "the client");
    assert_each_once(&local_ids, n, "the command line's own events");
    // the run's end removed its socket
    let deadline = Instant::now() + Duration::from_secs(30);
    while local::socket_path(&dir).exists() {
        assert!(Instant::now() < deadline, "the socket outlived the run");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Read stream messages until `stop` says so; the genome ids admitted and
/// the last cursor.
async fn read_until(
    messages: &mut tokio::sync::mpsc::Receiver<Message>,
    mut cursor: Option<Cursor>,
    ids: &mut Vec<u64>,
    mut stop: impl FnMut(&[u64]) -> bool,
) -> Option<Cursor> {
    while !stop(ids) {
        let m = tokio::time::timeout(Duration::from_secs(120), messages.recv())
            .await
            .expect("a message within 120 s")
            .expect("the stream goes on");
        match m {
            Message::Reset { .. } => {
                ids.clear();
                cursor = None;
            }
            Message::History { genomes } => ids.extend(genomes.iter().map(|g| g.id)),
            Message::Synced { cursor: c } => cursor = Some(c),
            Message::Event { seq, event } => {
                let c = cursor.as_mut().expect("events come after Synced");
                assert_eq!(seq, c.next, "events come in order, without a gap");
                c.next = seq + 1;
                if let WireEvent::GenomeAdmitted { genome, .. } = *event {
                    assert!(genome.content.single_text() == Some(""), "heads only");
                    ids.push(genome.id);
                    c.genomes = c.genomes.max(genome.id + 1);
                }
            }
            Message::Ended { .. } => break,
            _ => {}
        }
    }
    cursor
}

#[test]
fn a_subscription_resumes_from_its_cursor_with_no_gap_and_no_duplicate() {
    let root = tempfile::tempdir().unwrap();
    let (handle, dir) = served_run(root.path(), 40, 30);
    let local_ids = drain(handle);
    wait_for_genomes(&dir, 3);
    let rt = runtime();
    let target = Target::Local(dir.clone());
    let ids = rt.block_on(async {
        // the first client: a snapshot, then some live events
        let first = Client::connect(&target, &options(true)).await.unwrap();
        assert!(first.welcome().live && first.welcome().read_only);
        let (resumed, _, mut messages) = first.subscribe(None, true).await.unwrap();
        assert!(!resumed);
        let mut ids = Vec::new();
        let cursor = read_until(&mut messages, None, &mut ids, |ids| ids.len() >= 8)
            .await
            .unwrap();
        drop(messages);
        drop(first);
        // the connection is gone; the run goes on; the next one resumes
        let second = Client::connect(&target, &options(true)).await.unwrap();
        let (resumed, next, mut messages) =
            second.subscribe(Some(cursor.clone()), true).await.unwrap();
        assert!(resumed, "the ring holds the cursor: no snapshot");
        assert_eq!(next, cursor.next);
        read_until(&mut messages, Some(cursor), &mut ids, |_| false).await;
        ids
    });
    let n = Archive::open(&dir).unwrap().genome_count().unwrap();
    assert_each_once(&ids, n, "the resumed client");
    assert_each_once(&local_ids.join().unwrap(), n, "the local events");
}

#[test]
fn commands_are_taken_by_the_loop_and_refused_to_a_watcher_and_bodies_come_on_demand() {
    let root = tempfile::tempdir().unwrap();
    let (handle, dir) = served_run(root.path(), 100_000, 30);
    let commands = handle.commands.clone();
    let local = drain(handle);
    wait_for_genomes(&dir, 2);
    let rt = runtime();
    let target = Target::Local(dir.clone());
    rt.block_on(async {
        let watcher = Client::connect(&target, &options(true)).await.unwrap();
        let refused = watcher
            .request(RequestBody::Command {
                command: Command::Pause,
            })
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, ClientError::Request(m) if m.contains("read-only")),
            "{refused}"
        );
        let steerer = Client::connect(&target, &options(false)).await.unwrap();
        let (_, _, mut messages) = steerer.subscribe(None, false).await.unwrap();
        for command in [
            Command::Notes {
                text: "try a hexagonal layout".into(),
            },
            Command::Pin { genome: 999_999 },
            Command::Pause,
        ] {
            let r = steerer
                .request(RequestBody::Command { command })
                .await
                .unwrap();
            assert!(matches!(r, Reply::Done));
        }
        let (mut noted, mut refused_pin, mut paused) = (false, false, false);
        while !(noted && refused_pin && paused) {
            let m = tokio::time::timeout(Duration::from_secs(120), messages.recv())
                .await
                .unwrap()
                .unwrap();
            if let Message::Event { event, .. } = m {
                match *event {
                    WireEvent::Steered(s) => noted |= s.notes == "try a hexagonal layout",
                    WireEvent::Log { message, .. } => {
                        refused_pin |= message.starts_with("cannot pin genome #999999:");
                    }
                    WireEvent::Paused => paused = true,
                    _ => {}
                }
            }
        }
        let status = match steerer.request(RequestBody::Status).await.unwrap() {
            Reply::Status(row) => row,
            other => panic!("{other:?}"),
        };
        assert_eq!(status.state, "paused");
        assert!(status.live);
        // a genome's bodies on demand; the stream carries none
        let g = steerer.genome(0).await.unwrap();
        assert_eq!(g.content.single_text(), Some(common::PROGRAM));
        let missing = steerer.genome(10_000_000).await.unwrap_err();
        assert!(
            missing.to_string().contains("no genome #10000000"),
            "{missing}"
        );
    });
    assert!(
        commands
            .try_send(galapagos::engine::events::RunCommand::Stop)
            .is_ok()
    );
    local.join().unwrap();
}

#[test]
fn a_finished_runs_folder_answers_the_same_questions() {
    let root = tempfile::tempdir().unwrap();
    let (handle, dir) = served_run(root.path(), 6, 0);
    let ids = drain(handle).join().unwrap();
    let rt = runtime();
    rt.block_on(async {
        let client = Client::connect(&Target::Local(dir.clone()), &options(false))
            .await
            .unwrap();
        assert!(!client.welcome().live && client.welcome().run);
        let refused = client
            .request(RequestBody::Command {
                command: Command::Stop,
            })
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("not running"), "{refused}");
        let (_, _, mut messages) = client.subscribe(None, true).await.unwrap();
        let mut got = Vec::new();
        read_until(&mut messages, None, &mut got, |_| false).await;
        assert_eq!(got, ids);
        let mut lines = 0;
        client
            .export(|chunk| {
                lines += chunk.len();
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!(lines, ids.len());
        // the folder of runs lists it
        let parent = Client::connect(&Target::Local(root.path().to_path_buf()), &options(true))
            .await
            .unwrap();
        match parent.request(RequestBody::Runs).await.unwrap() {
            Reply::Runs(rows) => {
                assert_eq!(rows.len(), 1, "{rows:?}");
                assert_eq!(rows[0].state, "completed");
                assert_eq!(rows[0].genomes, ids.len() as u64);
                assert!(!rows[0].live);
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn a_client_of_another_protocol_version_is_refused_naming_both() {
    let root = tempfile::tempdir().unwrap();
    let (handle, dir) = served_run(root.path(), 100_000, 30);
    let commands = handle.commands.clone();
    let local = drain(handle);
    let stream = local::connect_std(&dir).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut w = stream.try_clone().unwrap();
    w.write_all(b"{\"id\":0,\"request\":{\"hello\":{\"version\":999}}}\n")
        .unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    assert!(
        line.contains("protocol version 999") && line.contains("speaks version 1"),
        "{line}"
    );
    assert!(
        commands
            .try_send(galapagos::engine::events::RunCommand::Stop)
            .is_ok()
    );
    local.join().unwrap();
}
