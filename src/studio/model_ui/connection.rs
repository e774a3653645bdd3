//! Test connection: `models check` for one endpoint of the dialog, on a
//! worker thread (the UI thread never waits for the network), its progress
//! and its report drawn in the endpoint's frame.

use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use egui::{RichText, Ui};

use crate::engine::model::check::{self, Report};
use crate::engine::model::user_settings::EndpointSettings;

/// Where one endpoint's test is.
#[derive(Default)]
pub enum Test {
    /// Not run (or its settings changed since).
    #[default]
    Idle,
    /// On its worker thread since `started`.
    Running {
        started: Instant,
        rx: Receiver<Result<Report, String>>,
    },
    /// The worker's report, or why there is none.
    Done(Result<Report, String>),
}

impl Test {
    /// Starts the check of `model` at `endpoint` on a thread of its own; it
    /// asks for a repaint when it is done.
    pub fn start(endpoint: EndpointSettings, model: String, ctx: &egui::Context) -> Test {
        let (tx, rx) = std::sync::mpsc::channel();
        let ctx = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name("galapagos-model-check".into())
            .spawn(move || {
                let report = check::check_endpoint(&endpoint, &model).map_err(|e| e.to_string());
                // The dialog may be gone: nobody to tell.
                let _ = tx.send(report);
                ctx.request_repaint();
            });
        match spawned {
            Ok(_) => Test::Running {
                started: Instant::now(),
                rx,
            },
            Err(e) => Test::Done(Err(format!("cannot start the check: {e}"))),
        }
    }

    /// True while the worker runs.
    pub fn running(&self) -> bool {
        matches!(self, Test::Running { .. })
    }

    /// Takes the worker's report when it is there (never waits).
    pub fn poll(&mut self) {
        if let Test::Running { rx, .. } = self {
            match rx.try_recv() {
                Ok(report) => *self = Test::Done(report),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    *self = Test::Done(Err("the check stopped without a report".to_owned()));
                }
            }
        }
    }

    /// Draws the progress or the report.
    pub fn ui(&self, ui: &mut Ui) {
        match self {
            Test::Idle => {}
            Test::Running { started, .. } => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!(
                        "Testing… {:.1} s (one tiny request, then the model list)",
                        started.elapsed().as_secs_f64()
                    ));
                });
                ui.ctx().request_repaint_after(Duration::from_millis(100));
            }
            Test::Done(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            Test::Done(Ok(report)) => report_ui(ui, report),
        }
    }
}

fn report_ui(ui: &mut Ui, r: &Report) {
    ui.weak(format!("{} via {} at {}", r.model, r.protocol, r.url));
    match &r.outcome {
        Ok(a) => {
            let good = crate::studio::theme::data::GOOD;
            ui.colored_label(
                good,
                format!(
                    "Connected in {} ms. The model answered: {:?}",
                    a.latency.as_millis(),
                    a.text.trim()
                ),
            );
        }
        Err(p) => {
            ui.colored_label(
                ui.visuals().error_fg_color,
                RichText::new(format!("{}: {}", capitalized(p.mistake.label()), p.message)),
            );
            ui.label(RichText::new(format!("Fix: {}", p.fix)).strong());
        }
    }
    match &r.models {
        Some(Ok(names)) if !names.is_empty() => {
            let mut shown = names
                .iter()
                .take(12)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if names.len() > 12 {
                shown.push_str(&format!(", … ({} in all)", names.len()));
            }
            ui.weak(format!("Models listed: {shown}"));
        }
        Some(Ok(_)) => {
            ui.weak("The server lists no models");
        }
        Some(Err(e)) => {
            ui.weak(format!("Model list: {e}"));
        }
        None => {}
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
