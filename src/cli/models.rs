//! `galapagos models check`: one tiny request to each configured endpoint
//! (or to the one the flags name), with latency, the answer, the models the
//! server lists, and for a failure what is wrong and how to fix it.

use crate::engine::model::check::{self, Report};
use crate::engine::model::presets;
use crate::engine::model::user_settings::EndpointSettings;

use super::ModelArgs;

/// `galapagos models …`.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// Ask each endpoint of the user settings (or the one --provider / --api-base names) a tiny
    /// question; exit 1 when one fails.
    Check {
        #[command(flatten)]
        model: ModelArgs,
    },
    /// List the provider presets.
    Providers,
}

/// Runs a `models` subcommand; the exit code.
pub fn models(command: &ModelsCommand) -> i32 {
    match command {
        ModelsCommand::Check { model } => check_command(model),
        ModelsCommand::Providers => {
            for p in presets::PRESETS {
                println!(
                    "{:<17} {:<26} {:<20} {}  {}",
                    p.name,
                    p.label,
                    p.protocol.label(),
                    p.api_base,
                    if p.key_required {
                        format!("key in ${}", p.api_key_env)
                    } else {
                        "no key".to_owned()
                    }
                );
            }
            0
        }
    }
}

/// The endpoint the flags describe, if any flag names one.
fn endpoint_of(args: &ModelArgs) -> Result<Option<(EndpointSettings, String)>, String> {
    if args.provider.is_none() && args.api_base.is_none() {
        if args.model.is_some() || args.api_key_env.is_some() {
            return Err("--model and --api-key-env need --provider or --api-base here".to_owned());
        }
        return Ok(None);
    }
    let mut ep = match args.provider.as_deref() {
        Some(name) => presets::preset(name)
            .ok_or_else(|| {
                format!(
                    "--provider: unknown provider `{name}` (known: {})",
                    presets::names()
                )
            })
            .map(EndpointSettings::of_preset)?,
        None => EndpointSettings::default(),
    };
    if let Some(base) = &args.api_base {
        base.trim().clone_into(&mut ep.api_base);
        if args.provider.is_none() {
            ep.name = String::new();
        }
    }
    if let Some(var) = &args.api_key_env {
        var.clone_into(&mut ep.api_key_env);
    }
    let model = args
        .model
        .clone()
        .or_else(|| ep.model.clone())
        .ok_or_else(|| "--api-base needs --model NAME".to_owned())?;
    ep.validate().map_err(|e| e.to_string())?;
    Ok(Some((ep, model)))
}

fn check_command(args: &ModelArgs) -> i32 {
    let reports: Vec<Result<Report, String>> = match endpoint_of(args) {
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
        Ok(Some((ep, model))) => {
            vec![check::check_endpoint(&ep, &model).map_err(|e| e.to_string())]
        }
        Ok(None) => {
            let settings = match crate::engine::model::load_user_settings() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return 2;
                }
            };
            if settings.endpoints.is_empty() {
                eprintln!(
                    "no endpoint configured: add one in the studio's model dialog or the settings \
                     file ({}), or check one with --provider NAME [--model NAME] or --api-base URL \
                     --model NAME",
                    crate::engine::model::user_settings::user_settings_path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "no config dir".to_owned())
                );
                return 2;
            }
            check::check_settings(&settings)
        }
    };
    let mut failed = false;
    for r in reports {
        match r {
            Ok(report) => {
                failed |= !report.ok();
                for line in report.lines() {
                    println!("{line}");
                }
            }
            Err(e) => {
                failed = true;
                println!("{e}");
            }
        }
    }
    i32::from(failed)
}
