//! One endpoint in the model dialog: a provider preset to start from, the
//! fields of its settings, its extra headers, and Test connection.

use egui::{RichText, Ui};

use super::FIELD;
use super::connection::Test;
use crate::engine::model::openai::{KeyHeader, REASONING_EFFORTS, validate_env_name};
use crate::engine::model::user_settings::EndpointSettings;
use crate::engine::model::{PRESETS, Protocol};

/// One endpoint being edited (text fields for the optional lists).
pub(super) struct EndpointDraft {
    pub(super) settings: EndpointSettings,
    /// `settings.model` as text (empty = none).
    pub(super) model: String,
    /// `settings.models`, comma separated.
    pub(super) models: String,
    /// `settings.headers` as rows, in the order edited.
    pub(super) headers: Vec<(String, String)>,
    /// Test connection's state.
    pub(super) test: Test,
}

/// What the user did to an endpoint this frame.
#[derive(Default)]
pub(super) struct Edit {
    pub(super) changed: bool,
    pub(super) remove: bool,
}

impl EndpointDraft {
    pub(super) fn of(e: &EndpointSettings) -> Self {
        Self {
            settings: e.clone(),
            model: e.model.clone().unwrap_or_default(),
            models: e.models.join(", "),
            headers: e
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            test: Test::Idle,
        }
    }

    pub(super) fn to_settings(&self) -> EndpointSettings {
        let model = self.model.trim();
        EndpointSettings {
            name: self.settings.name.trim().to_owned(),
            api_base: self.settings.api_base.trim().to_owned(),
            api_key_env: self.settings.api_key_env.trim().to_owned(),
            model: (!model.is_empty()).then(|| model.to_owned()),
            models: self
                .models
                .split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect(),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.trim().to_owned(), v.clone()))
                .collect(),
            api_version: self
                .settings
                .api_version
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned),
            ..self.settings.clone()
        }
    }

    /// Starts over from `preset`'s settings, keeping the limits set here.
    fn apply_preset(&mut self, name: &str) {
        let Some(p) = PRESETS.iter().find(|p| p.name == name) else {
            return;
        };
        let old = &self.settings;
        let fresh = EndpointSettings {
            timeout_secs: old.timeout_secs,
            first_byte_timeout_secs: old.first_byte_timeout_secs,
            stall_timeout_secs: old.stall_timeout_secs,
            max_attempts: old.max_attempts,
            concurrency: old.concurrency,
            ..EndpointSettings::of_preset(p)
        };
        *self = EndpointDraft::of(&fresh);
    }

    /// The model Test connection asks: the default one, else the first served.
    fn test_model(&self) -> Option<String> {
        let s = self.to_settings();
        s.model.or_else(|| s.models.first().cloned())
    }

    /// Draws the endpoint's frame; what the user did.
    pub(super) fn ui(&mut self, ui: &mut Ui) -> Edit {
        let mut edit = Edit::default();
        self.test.poll();
        egui::Frame::group(ui.style()).show(ui, |ui| {
            edit.changed |= self.preset_row(ui);
            egui::Grid::new("endpoint-grid")
                .num_columns(4)
                .min_col_width(90.0)
                .spacing([10.0, 6.0])
                .show(ui, |ui| edit.changed |= self.fields(ui));
            edit.changed |= self.headers_ui(ui);
            ui.horizontal_wrapped(|ui| {
                if ui.button("Remove endpoint").clicked() {
                    edit.remove = true;
                }
                let problem = self.to_settings().validate().err().map(|e| e.to_string());
                let model = self.test_model();
                let why_not = match (&problem, &model) {
                    (Some(p), _) => Some(p.clone()),
                    (None, None) => Some("Name a model first".to_owned()),
                    _ if self.test.running() => Some("Testing…".to_owned()),
                    _ => None,
                };
                let button =
                    ui.add_enabled(why_not.is_none(), egui::Button::new("Test connection"));
                let button = match &why_not {
                    Some(w) => button.on_disabled_hover_text(w),
                    None => button.on_hover_text(
                        "Send one tiny request with these settings (keys from the environment), \
                         and list the server's models",
                    ),
                };
                if button.clicked()
                    && let Some(model) = model
                {
                    self.test = Test::start(self.to_settings(), model, ui.ctx());
                }
                if let Some(p) = &problem {
                    ui.colored_label(ui.visuals().error_fg_color, p);
                }
            });
            self.test.ui(ui);
        });
        if edit.changed && !self.test.running() {
            self.test = Test::Idle;
        }
        edit
    }

    fn preset_row(&mut self, ui: &mut Ui) -> bool {
        let mut chosen: Option<&'static str> = None;
        ui.horizontal(|ui| {
            let label = ui.label("Provider");
            let current = self
                .settings
                .provider
                .as_deref()
                .and_then(|n| PRESETS.iter().find(|p| p.name == n))
                .map_or("Custom", |p| p.label);
            egui::ComboBox::from_id_salt("provider")
                .selected_text(current)
                .width(FIELD[0])
                .show_ui(ui, |ui| {
                    for p in PRESETS {
                        if ui
                            .selectable_label(
                                self.settings.provider.as_deref() == Some(p.name),
                                p.label,
                            )
                            .on_hover_text(p.note)
                            .clicked()
                        {
                            chosen = Some(p.name);
                        }
                    }
                })
                .response
                .labelled_by(label.id)
                .on_hover_text("Fill the URL, protocol, key variable and headers for a provider");
            if let Some(note) = self
                .settings
                .provider
                .as_deref()
                .and_then(|n| PRESETS.iter().find(|p| p.name == n))
                .map(|p| p.note)
            {
                ui.weak(note);
            }
        });
        match chosen {
            Some(name) => {
                self.apply_preset(name);
                true
            }
            None => false,
        }
    }

    fn fields(&mut self, ui: &mut Ui) -> bool {
        let mut changed = false;
        let s = &mut self.settings;
        changed |= text_row(ui, "Name", &mut s.name, "label, e.g. local vLLM");
        changed |= text_row(ui, "API base", &mut s.api_base, "https://api.openai.com/v1");
        ui.end_row();
        changed |= text_row(ui, "Model", &mut self.model, "default model name");
        changed |= text_row(ui, "Serves models", &mut self.models, "a, b (empty = any)");
        ui.end_row();
        let bad_env = validate_env_name(s.api_key_env.trim()).err();
        let label = ui.label("Key variable");
        let edit = egui::TextEdit::singleline(&mut s.api_key_env)
            .hint_text("OPENAI_API_KEY")
            // Not a variable name: perhaps a pasted key; never show it.
            .password(bad_env.is_some());
        changed |= ui
            .add_sized(FIELD, edit)
            .labelled_by(label.id)
            .on_hover_text("Name of the environment variable holding the key (not the key)")
            .changed();
        let label = ui.label("Protocol");
        let protocol = s.protocol.unwrap_or_default();
        egui::ComboBox::from_id_salt("protocol")
            .selected_text(protocol.label())
            .width(FIELD[0])
            .show_ui(ui, |ui| {
                for p in Protocol::ALL {
                    if ui.selectable_label(protocol == p, p.label()).clicked() && p != protocol {
                        s.protocol = Some(p);
                        s.key_header = Some(KeyHeader::for_protocol(p));
                        changed = true;
                    }
                }
            })
            .response
            .labelled_by(label.id);
        ui.end_row();
        let label = ui.label("Key header");
        let header = s
            .key_header
            .unwrap_or_else(|| KeyHeader::for_protocol(protocol));
        egui::ComboBox::from_id_salt("key-header")
            .selected_text(header.name())
            .width(FIELD[0])
            .show_ui(ui, |ui| {
                for h in [KeyHeader::Bearer, KeyHeader::ApiKey, KeyHeader::XApiKey] {
                    if ui.selectable_label(header == h, h.name()).clicked() && h != header {
                        s.key_header = Some(h);
                        changed = true;
                    }
                }
            })
            .response
            .labelled_by(label.id);
        let mut version = s.api_version.clone().unwrap_or_default();
        if text_row(ui, "API version", &mut version, "Azure: 2024-10-21") {
            s.api_version = Some(version);
            changed = true;
        }
        ui.end_row();
        let label = ui.label("Timeout (s)");
        changed |= ui
            .add(
                egui::DragValue::new(&mut s.timeout_secs)
                    .range(1.0..=86_400.0)
                    .speed(1.0),
            )
            .labelled_by(label.id)
            .changed();
        let label = ui.label("First byte (s)");
        changed |= ui
            .add(
                egui::DragValue::new(&mut s.first_byte_timeout_secs)
                    .range(1.0..=86_400.0)
                    .speed(1.0),
            )
            .labelled_by(label.id)
            .on_hover_text("Longest wait for the reply's header; most servers send it only with the whole reply")
            .changed();
        ui.end_row();
        let label = ui.label("Stall (s)");
        changed |= ui
            .add(
                egui::DragValue::new(&mut s.stall_timeout_secs)
                    .range(1.0..=86_400.0)
                    .speed(1.0),
            )
            .labelled_by(label.id)
            .on_hover_text(
                "Longest silence between two chunks of a reply (with streaming, between two events)",
            )
            .changed();
        ui.end_row();
        let label = ui.label("Max attempts");
        changed |= ui
            .add(egui::DragValue::new(&mut s.max_attempts).range(1..=100))
            .labelled_by(label.id)
            .changed();
        let label = ui.label("Concurrency");
        // 0: unset, as many requests at once as the run has iterations in flight
        let mut concurrency = s.concurrency.unwrap_or(0);
        let response = ui
            .add(
                egui::DragValue::new(&mut concurrency)
                    .range(0..=4096)
                    .custom_formatter(|v, _| {
                        if v < 0.5 {
                            "the run's parallel".to_owned()
                        } else {
                            format!("{v:.0}")
                        }
                    }),
            )
            .labelled_by(label.id)
            .on_hover_text(
                "Requests in flight at once to this endpoint; 0: as many as the run has iterations \
                 in flight (its parallel). A run with more in flight than this says so",
            );
        if response.changed() {
            s.concurrency = (concurrency > 0).then_some(concurrency);
            changed = true;
        }
        ui.end_row();
        let label = ui.label("Reasoning effort");
        let effort = s.reasoning_effort.clone();
        egui::ComboBox::from_id_salt("reasoning-effort")
            .selected_text(effort.as_deref().unwrap_or("default"))
            .width(FIELD[0])
            .show_ui(ui, |ui| {
                if ui.selectable_label(effort.is_none(), "default").clicked() && effort.is_some() {
                    s.reasoning_effort = None;
                    changed = true;
                }
                for e in REASONING_EFFORTS {
                    if ui
                        .selectable_label(effort.as_deref() == Some(e), *e)
                        .clicked()
                        && effort.as_deref() != Some(e)
                    {
                        s.reasoning_effort = Some((*e).to_owned());
                        changed = true;
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text("Sent to reasoning models only (o-series, GPT-5)");
        ui.label("Replies");
        ui.horizontal(|ui| {
            changed |= ui
                .checkbox(&mut s.stream, "Stream")
                .on_hover_text("Ask for the reply as a stream of events: the stall limit then guards each chunk")
                .changed();
            changed |= ui
                .checkbox(&mut s.prompt_cache, "Prompt cache")
                .on_hover_text("Mark the prompt's stable start (instructions and task) for the provider's cache")
                .changed();
        });
        ui.end_row();
        changed
    }

    fn headers_ui(&mut self, ui: &mut Ui) -> bool {
        let mut changed = false;
        let mut remove = None;
        ui.horizontal(|ui| {
            ui.label(RichText::new("Headers").weak()).on_hover_text(
                "Sent with every request (never a key: keys come from the key variable)",
            );
            if ui.small_button("Add header").clicked() {
                self.headers.push((String::new(), String::new()));
                changed = true;
            }
        });
        for (i, (name, value)) in self.headers.iter_mut().enumerate() {
            ui.push_id(("header", i), |ui| {
                ui.horizontal(|ui| {
                    changed |= ui
                        .add_sized(
                            [150.0, 20.0],
                            egui::TextEdit::singleline(name).hint_text("X-Title"),
                        )
                        .changed();
                    changed |= ui
                        .add_sized(
                            [250.0, 20.0],
                            egui::TextEdit::singleline(value).hint_text("value"),
                        )
                        .changed();
                    if ui.small_button("Remove header").clicked() {
                        remove = Some(i);
                    }
                });
            });
        }
        if let Some(i) = remove {
            self.headers.remove(i);
            changed = true;
        }
        changed
    }
}

/// A labelled single-line text field in a grid; true when edited.
pub(super) fn text_row(ui: &mut Ui, label: &str, text: &mut String, hint: &str) -> bool {
    let l = ui.label(label);
    ui.add_sized(FIELD, egui::TextEdit::singleline(text).hint_text(hint))
        .labelled_by(l.id)
        .changed()
}
