// They use Linux (its sandbox, Unix sockets, file modes or links): built on Linux only.
#![cfg(target_os = "linux")]
//! The studio following a run served by another side (egui_kittest, no
//! GPU): File › Connect to a run… with an `ssh://` address, through the
//! stdio transport (a stand-in `ssh` that runs the remote command here, so
//! no sshd is needed; the real ssh is the command-line tests'); the plot
//! fills, a genome's program arrives when it is selected, the connection's
//! state shows in the status bar, and a connection killed mid-run comes back
//! and resumes with every genome once. The server's runs are listed on the
//! Runs tab.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use galapagos::engine::redact::Redactor;
use galapagos::engine::run_thread::{RunHandle, start};
use galapagos::engine::service::{ConnectOptions, ServeContext, SshOptions, serve};
use galapagos::studio::App;
use galapagos::studio::run::remote::LinkState;
use galapagos::studio::state::{State, Tab};

/// A live served run whose children each take `sleep_ms`.
fn served_run(root: &Path, iterations: u64, sleep_ms: i64) -> (RunHandle, PathBuf) {
    let registry = common::registry();
    let task = common::temp_task(root);
    let mut card = common::with_slow_evaluator(common::card("best_of_n.yaml", &registry), sleep_ms);
    card.general.max_iterations = iterations;
    card.general.parallel = 1;
    let dir = root.join("runs").join("served");
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

/// An `ssh` that runs its last argument (the remote command) here.
fn stand_in_ssh(root: &Path) -> PathBuf {
    let path = root.join("ssh-here");
    std::fs::write(
        &path,
        "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn app(root: &Path) -> Harness<'static, App> {
    let state = State {
        runs_folder: root.join("local-runs"),
        ..State::default()
    };
    let mut app =
        App::new(state, common::registry()).with_settings_path(Some(root.join("settings.json")));
    app.set_connect_options(ConnectOptions {
        ssh: SshOptions {
            ssh: vec![stand_in_ssh(root).display().to_string()],
            config: None,
            remote: env!("CARGO_BIN_EXE_galapagos").to_owned(),
        },
        ..ConnectOptions::new("studio_remote test")
    });
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(
            |ui, app: &mut App| {
                app.logic(ui.ctx());
                app.show(ui);
            },
            app,
        )
}

fn step_until(h: &mut Harness<'static, App>, what: &str, done: impl Fn(&App) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while !done(h.state()) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    h.run_steps(2);
}

/// The processes this test process started, directly or not, whose
/// command line holds `needle`.
fn our_descendants_running(needle: &str) -> Vec<u32> {
    let children = |pid: u32| -> Vec<u32> {
        let mut out = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
        out
    };
    let mut found = Vec::new();
    let mut queue = children(std::process::id());
    while let Some(pid) = queue.pop() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
        {
            found.push(pid);
        }
        queue.extend(children(pid));
    }
    found
}

fn ids(app: &App) -> Vec<u64> {
    app.run_view
        .history()
        .genomes
        .iter()
        .map(|g| g.id)
        .collect()
}

#[test]
fn the_studio_follows_a_served_run_through_a_lost_and_regained_connection() {
    let root = tempfile::tempdir().unwrap();
    let (handle, dir) = served_run(root.path(), 100_000, 40);
    let commands = handle.commands.clone();
    let local = std::thread::spawn(move || common::collect(handle, |_, _| {}));
    let address = format!("ssh://lab-server{}", dir.display());
    let mut h = app(root.path());
    h.run();
    h.get_by_label("File").click();
    h.run();
    h.get_by_label("Connect to a run…").click();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "Run address")
        .focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "Run address")
        .type_text(&address);
    h.run();
    h.get_by_label("Connect").click();
    step_until(&mut h, "the run's genomes", |a| {
        a.state.tab == Tab::Run && a.run_view.history().genomes.len() >= 4
    });
    assert!(matches!(
        h.state().run_view.remote().map(|r| &r.state),
        Some(LinkState::Connected { live: true })
    ));
    assert_eq!(h.state().state.recent_remotes.first(), Some(&address));
    // the status bar says where the run is
    h.get_by_label_contains(&format!("connected to {address}"));
    // the plot draws the genomes
    step_until(&mut h, "the plot", |a| a.run_view.plot_drawn_count() > 0);
    // a genome's program comes when it is selected
    h.state_mut().run_view.select(Some(0));
    step_until(&mut h, "genome #0's program", |a| a.run_view.has_body(0));
    let g0 = h.state().run_view.history().body(0).unwrap().clone();
    assert_eq!(g0.content.single_text(), Some(common::PROGRAM));
    h.get_by_label("Program").click();
    h.run_steps(3);
    h.query_by_label_contains("def run():")
        .expect("the program is shown in the inspector");

    // the connection is lost: the transport's process (a child of this
    // test) is killed by its pid
    let transport = our_descendants_running("serve --stdio");
    assert!(!transport.is_empty(), "the stand-in ssh runs serve --stdio");
    for pid in transport {
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
    }
    step_until(&mut h, "the lost connection", |a| {
        matches!(
            a.run_view.remote().map(|r| &r.state),
            Some(LinkState::Reconnecting { .. })
        )
    });
    h.get_by_label_contains("reconnecting in");
    let before = h.state().run_view.history().genomes.len();
    step_until(&mut h, "the regained connection and new genomes", |a| {
        a.run_view.remote().is_some_and(|r| r.reconnections >= 1)
            && a.run_view.history().genomes.len() >= before + 3
    });
    h.get_by_label_contains(&format!("connected to {address}"));
    let got = ids(h.state());
    assert_eq!(
        got,
        (0..got.len() as u64).collect::<Vec<_>>(),
        "every genome once, across the reconnection"
    );
    // pause through the same connection
    h.get_by_label("Pause").click();
    step_until(&mut h, "the pause", |a| a.run_view.history().paused);

    // the Runs tab lists the server's runs
    h.state_mut().state.tab = Tab::Runs;
    h.run_steps(2);
    let listing = format!("ssh://lab-server{}", root.path().join("runs").display());
    h.get_by_role_and_label(Role::TextInput, "Server").focus();
    h.run_steps(1);
    h.get_by_role_and_label(Role::TextInput, "Server")
        .type_text(&listing);
    h.run_steps(2);
    h.get_by_label("List server runs").click();
    step_until(&mut h, "the server's runs", |a| {
        a.runs.host_rows().is_some()
    });
    let rows = h.state().runs.host_rows().unwrap().clone().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].state, "paused");
    h.get_by_label("Connect");

    assert!(
        commands
            .try_send(galapagos::engine::events::RunCommand::Stop)
            .is_ok()
    );
    local.join().unwrap();
}
