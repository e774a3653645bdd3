//! Steering a live run, here or on a server (`galapagos steer` on a live
//! run, `galapagos mcp`'s `steer_run`): the changes go to the run through
//! its service as the studio's commands go through its channel (the loop
//! checks, logs and records them), and [`steer_live`] waits until the run's
//! events show each one taken (or refused); `galapagos steer` then prints
//! the steering in force.

use std::time::Duration;

use crate::engine::events::LogLevel;
use crate::engine::service::protocol::{Command, Message, RequestBody, RunState, WireEvent};
use crate::engine::service::{Client, ClientError, ConnectOptions, Target};
use crate::engine::steering::Steering;

use super::report::print_steering;
use crate::engine::genome::GenomeId;

/// How long the run has to show a change taken.
const CONFIRM: Duration = Duration::from_secs(120);

/// What the command waits to see.
#[derive(Default)]
struct Expected {
    notes: Option<String>,
    pins: Vec<u64>,
    unpins: Vec<u64>,
    paused: Option<bool>,
    stopped: bool,
    settings: bool,
}

impl Expected {
    fn met(&self, s: &Steering, paused: bool) -> bool {
        self.notes.as_ref().is_none_or(|n| &s.notes == n)
            && self.pins.iter().all(|&g| s.is_pinned(g))
            && self.unpins.iter().all(|&g| !s.is_pinned(g))
            && self.paused.is_none_or(|p| p == paused)
            && !self.stopped
            && !self.settings
    }
}

/// What `galapagos steer` asks of a live run (its arguments).
pub(super) struct Changes<'a> {
    pub pin: &'a [GenomeId],
    pub unpin: &'a [GenomeId],
    pub pause: bool,
    pub resume: bool,
    pub stop: bool,
    /// A card file whose settings the paused run goes on with.
    pub settings: Option<&'a std::path::Path>,
    pub remote: &'a super::remote::RemoteArgs,
}

/// The changes to make to a live run, in the order they are sent: notes,
/// unpins, pins, new settings (a card's YAML), pause, resume, stop.
#[derive(Clone, Debug, Default)]
pub(crate) struct LiveChanges {
    pub notes: Option<String>,
    pub unpin: Vec<u64>,
    pub pin: Vec<u64>,
    pub settings: Option<String>,
    pub pause: bool,
    pub resume: bool,
    pub stop: bool,
}

/// What a live run made of the changes.
#[derive(Debug)]
pub(crate) struct Steered {
    /// The run's state once every change was seen taken (or refused).
    pub state: RunState,
    /// Changes refused, and the run's errors meanwhile.
    pub errors: Vec<String>,
    /// What changed in the run's settings, as the run said it.
    pub settings: Vec<String>,
    /// How the run ended, when it ended meanwhile.
    pub ended: Option<String>,
    /// The run said it finished (its `Finished` event) while the changes
    /// were awaited (else it was seen ended only by the stream's end).
    pub finished: bool,
}

/// Send `changes` to the live run at `target` through its service and wait
/// (at most [`CONFIRM`]) until its events show each taken or refused: what
/// `galapagos steer` and `galapagos mcp`'s `steer_run` do.
pub(crate) async fn steer_live(
    target: &Target,
    options: &ConnectOptions,
    changes: LiveChanges,
) -> Result<Steered, ClientError> {
    let client = Client::connect(target, options).await?;
    if !client.welcome().live {
        return Err(ClientError::Request(format!(
            "{target}: the run is not running; a stopped run is steered where it is recorded \
             (`galapagos steer PATH` on the server)"
        )));
    }
    let (_, _, mut stream) = client.subscribe(None, false).await?;
    let mut state = RunState::default();
    let mut ended = false;
    loop {
        match stream.recv().await {
            Some(Message::Snapshot(s)) => state = s.state,
            Some(Message::Synced { .. }) => break,
            Some(Message::Ended { .. }) => {
                ended = true;
                break;
            }
            Some(_) => {}
            None => return Err(ClientError::Closed(String::new())),
        }
    }
    if ended || state.summary.is_some() {
        return Err(ClientError::Request(format!("{target}: the run has ended")));
    }
    let mut commands = Vec::new();
    let mut expected = Expected::default();
    if let Some(text) = changes.notes {
        expected.notes = Some(text.trim_end().to_owned());
        commands.push(Command::Notes { text });
    }
    for genome in changes.unpin {
        expected.unpins.push(genome);
        commands.push(Command::Unpin { genome });
    }
    for genome in changes.pin {
        expected.pins.push(genome);
        commands.push(Command::Pin { genome });
    }
    if let Some(card_yaml) = changes.settings {
        expected.settings = true;
        commands.push(Command::Settings { card_yaml });
    }
    if changes.pause {
        expected.paused = Some(true);
        commands.push(Command::Pause);
    }
    if changes.resume {
        expected.paused = Some(false);
        commands.push(Command::Resume);
    }
    if changes.stop {
        expected.stopped = true;
        commands.push(Command::Stop);
    }
    for command in commands {
        client.request(RequestBody::Command { command }).await?;
    }
    let mut out = Steered {
        state,
        errors: Vec::new(),
        settings: Vec::new(),
        ended: None,
        finished: false,
    };
    let deadline = tokio::time::Instant::now() + CONFIRM;
    while !expected.met(&out.state.steering, out.state.paused) {
        let message = tokio::time::timeout_at(deadline, stream.recv()).await;
        let Ok(message) = message else {
            out.errors.push(format!(
                "the run did not show every change taken within {} s (it has them queued)",
                CONFIRM.as_secs()
            ));
            break;
        };
        match message {
            Some(Message::Event { event, .. }) => match *event {
                WireEvent::Steered(s) => out.state.steering = s,
                WireEvent::Paused => out.state.paused = true,
                WireEvent::Resumed => out.state.paused = false,
                WireEvent::Finished(s) => {
                    expected.stopped = false;
                    out.ended = Some(s.status.label());
                    out.finished = true;
                    break;
                }
                WireEvent::SettingsChanged(change) => {
                    expected.settings = false;
                    out.settings.push(change.to_string());
                }
                WireEvent::SettingsRefused(fixed) => {
                    expected.settings = false;
                    for f in fixed {
                        out.errors.push(format!("cannot change in flight: {f}"));
                    }
                }
                WireEvent::Log {
                    level: LogLevel::Error,
                    message,
                } => {
                    // a refused pin names its genome
                    expected
                        .pins
                        .retain(|g| !message.starts_with(&format!("cannot pin genome #{g}:")));
                    out.errors.push(message);
                }
                _ => {}
            },
            Some(Message::Ended { status }) => {
                if !expected.stopped {
                    out.errors.push(format!("the run ended: {status}"));
                }
                out.ended = Some(status);
                break;
            }
            Some(_) => {}
            None => {
                out.errors
                    .push("the connection closed before every change was seen".to_owned());
                break;
            }
        }
    }
    Ok(out)
}

/// Steer the live run at `target`; `notes`: the notes to set, if any.
pub(super) fn steer(target: &Target, args: &Changes<'_>, notes: Option<String>) -> i32 {
    let settings = match args.settings {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(yaml) => Some(yaml),
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return 2;
            }
        },
        None => None,
    };
    let rt = match super::remote::runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let options = args.remote.options("galapagos steer", false);
    let changes = LiveChanges {
        notes,
        unpin: args.unpin.to_vec(),
        pin: args.pin.to_vec(),
        settings,
        pause: args.pause,
        resume: args.resume,
        stop: args.stop,
    };
    match rt.block_on(steer_live(target, &options, changes)) {
        Ok(out) => {
            for change in &out.settings {
                println!("{change}");
            }
            if let (Some(status), true) = (&out.ended, out.finished) {
                eprintln!("the run ended: {status}");
            }
            for e in &out.errors {
                eprintln!("error: {e}");
            }
            print_steering(&out.state.steering);
            let now = match &out.ended {
                Some(status) => status.as_str(),
                None if out.state.paused => "paused",
                None => "running",
            };
            println!("state: {now}");
            if out.errors.is_empty() { 0 } else { 2 }
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}
