//! `galapagos steer` on a live run, here or on a server: the changes go to
//! the run through its service as the studio's commands go through its
//! channel (the loop checks, logs and records them), and the command waits
//! until the run's events show each one taken (or refused), then prints
//! the steering in force.

use std::time::Duration;

use crate::engine::events::LogLevel;
use crate::engine::service::protocol::{Command, Message, RequestBody, RunState, WireEvent};
use crate::engine::service::{Client, ClientError, Target};
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
    let outcome = rt.block_on(async {
        let client = Client::connect(target, &options).await?;
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
        if let Some(text) = notes {
            expected.notes = Some(text.trim_end().to_owned());
            commands.push(Command::Notes { text });
        }
        for &genome in args.unpin {
            expected.unpins.push(genome);
            commands.push(Command::Unpin { genome });
        }
        for &genome in args.pin {
            expected.pins.push(genome);
            commands.push(Command::Pin { genome });
        }
        if let Some(card_yaml) = settings {
            expected.settings = true;
            commands.push(Command::Settings { card_yaml });
        }
        if args.pause {
            expected.paused = Some(true);
            commands.push(Command::Pause);
        }
        if args.resume {
            expected.paused = Some(false);
            commands.push(Command::Resume);
        }
        if args.stop {
            expected.stopped = true;
            commands.push(Command::Stop);
        }
        for command in commands {
            client.request(RequestBody::Command { command }).await?;
        }
        let mut errors = Vec::new();
        // how the run ended, when it did while its changes were awaited
        let mut ended: Option<String> = None;
        let deadline = tokio::time::Instant::now() + CONFIRM;
        while !expected.met(&state.steering, state.paused) {
            let message = tokio::time::timeout_at(deadline, stream.recv()).await;
            let Ok(message) = message else {
                errors.push(format!(
                    "the run did not show every change taken within {} s (it has them queued)",
                    CONFIRM.as_secs()
                ));
                break;
            };
            match message {
                Some(Message::Event { event, .. }) => match *event {
                    WireEvent::Steered(s) => state.steering = s,
                    WireEvent::Paused => state.paused = true,
                    WireEvent::Resumed => state.paused = false,
                    WireEvent::Finished(s) => {
                        expected.stopped = false;
                        eprintln!("the run ended: {}", s.status.label());
                        ended = Some(s.status.label());
                        break;
                    }
                    WireEvent::SettingsChanged(change) => {
                        expected.settings = false;
                        println!("{change}");
                    }
                    WireEvent::SettingsRefused(fixed) => {
                        expected.settings = false;
                        for f in fixed {
                            errors.push(format!("cannot change in flight: {f}"));
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
                        errors.push(message);
                    }
                    _ => {}
                },
                Some(Message::Ended { status }) => {
                    if !expected.stopped {
                        errors.push(format!("the run ended: {status}"));
                    }
                    expected.stopped = false;
                    ended = Some(status);
                    break;
                }
                Some(_) => {}
                None => {
                    errors.push("the connection closed before every change was seen".to_owned());
                    break;
                }
            }
        }
        Ok((state, errors, ended))
    });
    match outcome {
        Ok((state, errors, ended)) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            print_steering(&state.steering);
            let now = match &ended {
                Some(status) => status.as_str(),
                None if state.paused => "paused",
                None => "running",
            };
            println!("state: {now}");
            if errors.is_empty() { 0 } else { 2 }
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}
