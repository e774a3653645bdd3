#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Changing a paused run's settings: a selection policy's ratios, a prompt
//! setting, the budget and the model's temperature take effect at the
//! iteration the run records (and a resumed run is built with them); a
//! change that cannot be made in flight is refused whole, naming the block,
//! and the run goes on as it was; a model with a secret the run did not
//! start with is refused and its secret is written nowhere.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use galapagos::engine::archive::Archive;
use galapagos::engine::card::{Card, ValidCard};
use galapagos::engine::events::{RunCommand, RunEvent, RunStatus, RunSummary};
use galapagos::engine::genome::Genome;
use galapagos::engine::launch::{RunPlan, fit_to_task};
use galapagos::engine::model::resolve::build_model_with_env;
use galapagos::engine::model::{
    EndpointSettings, LanguageModel, LlmSettings, ModelOverrides, ModelRequest, ModelSettings,
    ModelSpec, OfflineModel, default_model,
};
use galapagos::engine::params::ParamValue;
use galapagos::engine::run_thread::RunHandle;
use galapagos::engine::steering::changes::{Fixed, SettingsChange};
use galapagos::engine::task::Task;

/// openevolve's blocks with the trivial evaluator, two islands.
fn islands_card(iterations: u64) -> Card {
    let registry = registry();
    let mut c = with_evaluator(card("openevolve.yaml", &registry), "trivial");
    c.population.params.set("num_islands", ParamValue::Int(2));
    c.general.max_iterations = iterations;
    c
}

fn checked(card: Card, task: &Path) -> Box<ValidCard> {
    let registry = registry();
    let card = card.check(&registry).unwrap();
    Box::new(fit_to_task(card, &Task::load(task).unwrap(), &registry).unwrap())
}

/// An admitted genome with the policy's status after it.
type Admitted = (std::sync::Arc<Genome>, Vec<(String, String)>);

/// Everything a run reported that these tests look at.
#[derive(Default)]
struct Seen {
    genomes: Vec<Admitted>,
    changed: Vec<SettingsChange>,
    refused: Vec<Vec<Fixed>>,
    summary: Option<RunSummary>,
}

/// The next event within `deadline` (a run that hangs fails the test
/// instead of hanging it).
fn next_event(h: &mut RunHandle, deadline: Instant) -> Option<RunEvent> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()),
            h.events.recv(),
        )
        .await
    })
    .expect("the run did not finish in time")
}

/// Drain `h` to its end; `at(n, h)` after the n-th admitted genome, and
/// `paused(h)` once when the run says it paused.
fn follow(
    mut h: RunHandle,
    mut at: impl FnMut(usize, &RunHandle),
    mut paused: impl FnMut(&RunHandle),
) -> Seen {
    let mut seen = Seen::default();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        match next_event(&mut h, deadline) {
            Some(RunEvent::GenomeAdmitted { genome, policy, .. }) => {
                seen.genomes.push((genome, policy.fields));
                at(seen.genomes.len(), &h);
            }
            Some(RunEvent::Paused) => paused(&h),
            Some(RunEvent::SettingsChanged(c)) => seen.changed.push(c),
            Some(RunEvent::SettingsRefused(f)) => seen.refused.push(f),
            Some(RunEvent::Finished(s)) => {
                seen.summary = Some(s);
                h.join();
                return seen;
            }
            Some(_) => {}
            None => panic!("event channel closed without Finished"),
        }
    }
}

/// The policy's "explore / exploit / random" counts in a status.
fn draws(fields: &[(String, String)]) -> [u64; 3] {
    let (_, v) = fields
        .iter()
        .find(|(k, _)| k == "explore / exploit / random")
        .unwrap();
    let n: Vec<u64> = v.split(" / ").map(|x| x.parse().unwrap()).collect();
    [n[0], n[1], n[2]]
}

fn system(g: &Genome) -> String {
    g.prompt
        .as_ref()
        .map(|p| p.system.clone())
        .unwrap_or_default()
}

#[test]
fn ratios_a_prompt_setting_and_the_budget_change_at_the_recorded_iteration_and_survive_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let dir = tmp.path().join("run");
    let base = islands_card(30);
    let mut steered = base.clone();
    steered
        .selection_policy
        .params
        .set("exploration_ratio", ParamValue::Float(1.0));
    steered
        .selection_policy
        .params
        .set("exploitation_ratio", ParamValue::Float(0.0));
    steered.prompt_builder.params.set(
        "system_message",
        ParamValue::Str("You are steered. Improve the program.".to_owned()),
    );
    steered.general.max_iterations = 14;
    let new = checked(steered, &task);
    let mut sent = false;
    let seen = follow(
        spawn_with(
            request(base, &task, Some(dir.clone())),
            SlowOffline::model(15),
        ),
        |n, h| {
            if n == 6 {
                assert!(h.send(RunCommand::Pause));
            }
        },
        |h| {
            if !std::mem::replace(&mut sent, true) {
                assert!(h.send(RunCommand::reconfigure((*new).clone(), None)));
                assert!(h.send(RunCommand::Resume));
            }
        },
    );
    let summary = seen.summary.unwrap();
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(summary.iterations, 14, "the new budget");
    assert!(seen.refused.is_empty(), "{:?}", seen.refused);
    assert_eq!(seen.changed.len(), 1);
    let change = &seen.changed[0];
    let k = change.iteration;
    let fields: Vec<&str> = change.changes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "selection_policy.exploitation_ratio",
            "selection_policy.exploration_ratio",
            "prompt_builder.system_message",
            "general.max_iterations"
        ]
    );
    assert!(k > 1 && k < 14, "{k}");
    // Every genome before K was prompted the old way, every one from K on
    // the new way; the policy drew only "explore" from K on, its earlier
    // counts carried over.
    let mut at_change: Option<[u64; 3]> = None;
    for (g, policy) in &seen.genomes {
        if g.iteration == 0 {
            continue;
        }
        let steered = system(g).starts_with("You are steered.");
        assert_eq!(
            steered,
            g.iteration >= k,
            "genome {} iteration {}",
            g.id,
            g.iteration
        );
        let d = draws(policy);
        if g.iteration < k {
            at_change = Some(d);
        } else {
            let before = at_change.unwrap();
            assert!(
                d[1] == before[1] && d[2] == before[2],
                "{before:?} then {d:?}"
            );
            assert!(d[0] >= before[0]);
        }
    }
    let before = at_change.unwrap();
    assert!(
        before.iter().sum::<u64>() > 0,
        "state carried over, not reset"
    );
    let last = draws(&seen.genomes.last().unwrap().1);
    assert!(last[0] > before[0], "{before:?} then {last:?}");

    // The record: the change with its iteration, the card a resume builds.
    let a = Archive::open(&dir).unwrap();
    assert_eq!(a.settings_changes().unwrap(), seen.changed);
    let meta = a.meta().unwrap();
    assert_eq!(meta.max_iterations, 14);
    assert!(
        meta.card_yaml.contains("You are steered."),
        "{}",
        meta.card_yaml
    );
    let log: Vec<String> = a.events().unwrap().into_iter().map(|e| e.2).collect();
    assert!(
        log.iter()
            .any(|m| m.starts_with(&format!("settings changed from iteration {k}: "))),
        "{log:?}"
    );
    drop(a);
    assert!(
        std::fs::read_to_string(dir.join("card.yaml"))
            .unwrap()
            .contains("exploration_ratio: 1.0")
    );

    // Resumed: built with the changed values.
    let registry = registry();
    let plan = RunPlan::resume(&dir, Some(18), &registry).unwrap();
    assert_eq!(
        plan.card().selection_policy.params.get("exploration_ratio"),
        Some(&ParamValue::Float(1.0))
    );
    let seen = follow(spawn_with(plan, SlowOffline::model(0)), |_, _| {}, |_| {});
    assert_eq!(seen.summary.unwrap().iterations, 18);
    for (g, policy) in &seen.genomes {
        assert!(system(g).starts_with("You are steered."), "genome {}", g.id);
        let d = draws(policy);
        assert_eq!([d[1], d[2]], [before[1], before[2]]);
    }
}

#[test]
fn a_change_that_cannot_be_made_in_flight_is_refused_naming_the_block_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let dir = tmp.path().join("run");
    let base = islands_card(10);
    let mut bad = base.clone();
    bad.population.params.set("num_islands", ParamValue::Int(3));
    bad.general.max_iterations = 20;
    bad.seed = 99;
    bad.selection_policy
        .params
        .set("exploration_ratio", ParamValue::Float(0.5));
    let new = checked(bad, &task);
    let unpaused = checked(
        {
            let mut c = base.clone();
            c.general.max_iterations = 4;
            c
        },
        &task,
    );
    let mut sent = false;
    let seen = follow(
        spawn_with(
            request(base, &task, Some(dir.clone())),
            SlowOffline::model(15),
        ),
        |n, h| {
            if n == 2 {
                // Not paused: refused, the run goes on.
                assert!(h.send(RunCommand::reconfigure((*unpaused).clone(), None)));
            }
            if n == 4 {
                assert!(h.send(RunCommand::Pause));
            }
        },
        |h| {
            if !std::mem::replace(&mut sent, true) {
                assert!(h.send(RunCommand::reconfigure((*new).clone(), None)));
                assert!(h.send(RunCommand::Resume));
            }
        },
    );
    assert_eq!(seen.summary.unwrap().iterations, 10, "the budget as it was");
    assert!(seen.changed.is_empty(), "{:?}", seen.changed);
    assert_eq!(seen.refused.len(), 2);
    assert_eq!(seen.refused[0][0].what, "run");
    assert!(seen.refused[0][0].why.contains("pause it first"));
    let named: Vec<String> = seen.refused[1].iter().map(ToString::to_string).collect();
    assert_eq!(
        named,
        [
            "population (islands): its parameters cannot change in flight",
            "seed: a run draws from one seed"
        ]
    );
    let a = Archive::open(&dir).unwrap();
    assert!(a.settings_changes().unwrap().is_empty());
    let meta = a.meta().unwrap();
    assert_eq!(meta.max_iterations, 10);
    assert!(
        meta.card_yaml.contains("exploration_ratio: 0.2"),
        "{}",
        meta.card_yaml
    );
    let log: Vec<String> = a.events().unwrap().into_iter().map(|e| e.2).collect();
    assert!(
        log.iter()
            .any(|m| m.contains("population (islands): its parameters cannot change in flight")),
        "{log:?}"
    );
}

/// Answers as the offline model would, in the Chat Completions shape.
fn chat(s: &llm_server::Seen) -> llm_server::Reply {
    let text = |i: usize| {
        s.body["messages"][i]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let reply = OfflineModel::new().reply_text(&ModelRequest {
        system: text(0),
        user: text(1),
        seed: s.body.to_string().len() as u64,
    });
    llm_server::Reply::json(
        200,
        &serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
    )
}

/// One model, `loop-model`, at temperature `t`.
fn llm(t: f64) -> LlmSettings {
    LlmSettings {
        models: vec![ModelSpec {
            name: "loop-model".into(),
            weight: 1.0,
            temperature: None,
            top_p: None,
            max_tokens: None,
        }],
        temperature: Some(t),
        ..LlmSettings::default()
    }
}

/// The model a front end builds from `llm(t)` with one endpoint at
/// `api_base` that needs no key.
fn model_at(api_base: &str, t: f64) -> Arc<dyn LanguageModel> {
    let mut settings = ModelSettings::default();
    settings.endpoints.push(EndpointSettings {
        name: "loopback".into(),
        key_required: Some(false),
        api_key_env: "GALAPAGOS_TEST_NO_KEY".into(),
        ..EndpointSettings::for_base(api_base)
    });
    build_model_with_env(
        Some(&llm(t)),
        &ModelOverrides::default(),
        &settings,
        default_model(),
        &|_| None,
    )
    .unwrap()
    .0
}

/// The temperature of each request the server saw, in order.
fn temperatures(server: &llm_server::LlmServer) -> Vec<f64> {
    server
        .seen()
        .iter()
        .filter_map(|s| s.body["temperature"].as_f64())
        .collect()
}

#[test]
fn a_changed_temperature_reaches_the_endpoint_from_the_recorded_iteration_and_after_resume() {
    let server = llm_server::LlmServer::start(chat);
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let dir = tmp.path().join("run");
    let base_url = server.base("/v1");
    // The card's own evaluator (the command line's resume knows no test
    // evaluator).
    let mut base = card("openevolve.yaml", &registry());
    base.population
        .params
        .set("num_islands", ParamValue::Int(2));
    base.general.max_iterations = 10;
    base.llm = Some(llm(0.7));
    // One request per iteration.
    base.general.inner_retry_times = 0;
    let mut cooler = base.clone();
    cooler.llm = Some(llm(0.2));
    let new = checked(cooler, &task);
    let cool_model = model_at(&base_url, 0.2);
    let mut sent = false;
    let seen = follow(
        spawn_with(
            request(base, &task, Some(dir.clone())),
            model_at(&base_url, 0.7),
        ),
        |n, h| {
            if n == 4 {
                assert!(h.send(RunCommand::Pause));
            }
        },
        |h| {
            if !std::mem::replace(&mut sent, true) {
                assert!(h.send(RunCommand::reconfigure(
                    (*new).clone(),
                    Some(Arc::clone(&cool_model))
                )));
                assert!(h.send(RunCommand::Resume));
            }
        },
    );
    assert_eq!(seen.summary.unwrap().iterations, 10);
    assert_eq!(seen.changed.len(), 1, "{:?}", seen.refused);
    let change = &seen.changed[0];
    assert_eq!(change.changes.len(), 1);
    assert_eq!(change.changes[0].to_string(), "llm.temperature 0.7 -> 0.2");
    // Each request's temperature: 0.7 for the iterations before the change,
    // 0.2 from it on (one request per iteration here).
    let temps = temperatures(&server);
    let hot = temps
        .iter()
        .take_while(|t| (**t - 0.7).abs() < 1e-9)
        .count();
    assert_eq!(hot as u64, change.iteration - 1, "{temps:?}");
    assert!(
        temps[hot..].iter().all(|t| (t - 0.2).abs() < 1e-9) && temps.len() > hot,
        "{temps:?}"
    );
    let a = Archive::open(&dir).unwrap();
    assert_eq!(a.settings_changes().unwrap(), seen.changed);
    let meta = a.meta().unwrap();
    assert!(
        meta.card_yaml.contains("temperature: 0.2"),
        "{}",
        meta.card_yaml
    );
    drop(a);

    // `galapagos resume` (the model built from the recorded card, the
    // endpoint from the command line) asks at the new temperature.
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let before = temps.len();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .arg("resume")
        .arg(&dir)
        .args(["--iterations", "13", "--quiet", "--api-base", &base_url])
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let temps = temperatures(&server);
    assert_eq!(temps.len(), before + 3, "{temps:?}");
    assert!(
        temps[before..].iter().all(|t| (t - 0.2).abs() < 1e-9),
        "{temps:?}"
    );

    // Without the new model the change is refused, naming llm.
    let mut hotter = islands_card(4);
    hotter.llm = Some(llm(0.7));
    let mut again = hotter.clone();
    again.llm = Some(llm(1.0));
    let again = checked(again, &task);
    let mut sent = false;
    let seen = follow(
        spawn_with(
            request(hotter, &task, Some(tmp.path().join("run2"))),
            model_at(&base_url, 0.7),
        ),
        |n, h| {
            if n == 2 {
                assert!(h.send(RunCommand::Pause));
            }
        },
        |h| {
            if !std::mem::replace(&mut sent, true) {
                assert!(h.send(RunCommand::reconfigure((*again).clone(), None)));
                assert!(h.send(RunCommand::Resume));
            }
        },
    );
    assert!(seen.changed.is_empty());
    assert_eq!(
        seen.refused[0][0].to_string(),
        "llm: no model was built from the new llm settings"
    );
}

/// Every file under `dir`, as text (lossy), with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

#[test]
fn a_model_with_a_secret_the_run_did_not_start_with_is_refused_and_written_nowhere() {
    const SECRET: &str = "pw-not-in-this-run-4821";
    const KNOWN: &str = "pw-this-run-knows-7310";
    let server = llm_server::LlmServer::start(chat);
    let tmp = tempfile::tempdir().unwrap();
    let task = temp_task(tmp.path());
    let plain = server.base("/v1");
    // The same endpoint, with credentials in its URL (the run's redactor
    // knows those of the model it started with).
    let with_password = |pw: &str| plain.replacen("http://", &format!("http://galapagos:{pw}@"), 1);

    let run = |dir: &Path, start_url: &str, new_url: &str| {
        let mut base = islands_card(6);
        base.llm = Some(llm(0.7));
        let mut cooler = base.clone();
        cooler.llm = Some(llm(0.3));
        let new = checked(cooler, &task);
        let new_model = model_at(new_url, 0.3);
        let mut sent = false;
        follow(
            spawn_with(
                request(base, &task, Some(dir.to_path_buf())),
                model_at(start_url, 0.7),
            ),
            |n, h| {
                if n == 2 {
                    assert!(h.send(RunCommand::Pause));
                }
            },
            |h| {
                if !std::mem::replace(&mut sent, true) {
                    assert!(h.send(RunCommand::reconfigure(
                        (*new).clone(),
                        Some(Arc::clone(&new_model))
                    )));
                    assert!(h.send(RunCommand::Resume));
                }
            },
        )
    };

    // Started without credentials, offered a model with a password: refused,
    // the run goes on at its temperature, the password is in no file.
    let dir = tmp.path().join("refused");
    let seen = run(&dir, &plain, &with_password(SECRET));
    assert!(seen.changed.is_empty(), "{:?}", seen.changed);
    assert_eq!(seen.refused.len(), 1);
    let refusal = seen.refused[0][0].to_string();
    assert!(
        refusal.starts_with("llm: its secret (")
            && refusal.ends_with("is not one the run started with; fork instead"),
        "{refusal}"
    );
    assert!(!refusal.contains(SECRET), "{refusal}");
    assert_eq!(seen.summary.unwrap().iterations, 6);
    assert!(temperatures(&server).iter().all(|t| (t - 0.7).abs() < 1e-9));
    let a = Archive::open(&dir).unwrap();
    assert!(a.settings_changes().unwrap().is_empty());
    assert!(a.meta().unwrap().card_yaml.contains("temperature: 0.7"));
    drop(a);
    for (path, text) in files_under(&dir) {
        assert!(
            !text.contains(SECRET),
            "{} holds the secret",
            path.display()
        );
    }

    // Started with a password, offered the same endpoint and password at
    // another temperature: taken, and the password is in no file either.
    let dir = tmp.path().join("taken");
    let seen = run(&dir, &with_password(KNOWN), &with_password(KNOWN));
    assert!(seen.refused.is_empty(), "{:?}", seen.refused);
    assert_eq!(seen.changed.len(), 1);
    assert_eq!(
        seen.changed[0].changes[0].to_string(),
        "llm.temperature 0.7 -> 0.3"
    );
    for (path, text) in files_under(&dir) {
        assert!(!text.contains(KNOWN), "{} holds the secret", path.display());
    }
}
