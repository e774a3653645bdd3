//! The run's model relay as the agent proposer uses it: started at the
//! first proposal on the run's runtime, its Unix socket in a private dir of
//! its own (short, for the socket's path limit) that the sandbox binds in;
//! one session, with a fresh token and the card's caps, per proposal.

use std::path::Path;
use std::sync::Arc;

use crate::engine::model::LanguageModel;
use crate::engine::model::relay::{Relay, RelayUpstream};
use crate::engine::redact::Redactor;

/// The relay of one proposer, started when first needed.
pub(super) struct Link {
    upstream: RelayUpstream,
    redactor: Arc<Redactor>,
    /// The model `{model}` stands for: the run's (its first endpoint's).
    pub(super) model: String,
    started: tokio::sync::OnceCell<Result<(Relay, tempfile::TempDir), String>>,
}

impl Link {
    /// The relay to the endpoints `model` calls; None when it calls none
    /// (the offline model).
    pub(super) fn for_model(model: &dyn LanguageModel) -> Option<Self> {
        let upstream = RelayUpstream::for_model(model).ok()?;
        let name = model.endpoint_configs().first()?.model.clone();
        Some(Self {
            upstream,
            redactor: Arc::new(Redactor::new(model.secrets())),
            model: name,
            started: tokio::sync::OnceCell::new(),
        })
    }

    /// The running relay, started on the first call.
    pub(super) async fn relay(&self) -> Result<&Relay, String> {
        let started = self
            .started
            .get_or_init(|| async {
                let dir = tempfile::Builder::new()
                    .prefix("galapagos-relay-")
                    .tempdir_in("/tmp")
                    .map_err(|e| format!("cannot create the model relay's socket dir: {e}"))?;
                let relay = Relay::start(
                    self.upstream.clone(),
                    Arc::clone(&self.redactor),
                    dir.path(),
                )
                .await
                .map_err(|e| e.to_string())?;
                open_to_the_sandbox(dir.path(), relay.unix_socket())?;
                Ok((relay, dir))
            })
            .await;
        started.as_ref().map(|(r, _)| r).map_err(Clone::clone)
    }
}

/// As root the agent runs as nobody: let it pass the dir and connect to
/// the socket (a request still needs its proposal's token).
fn open_to_the_sandbox(dir: &Path, socket: &Path) -> Result<(), String> {
    for (path, mode) in [(dir, 0o755), (socket, 0o777)] {
        crate::engine::platform::set_mode(path, mode)
            .map_err(|e| format!("cannot open {} to the agent's sandbox: {e}", path.display()))?;
    }
    Ok(())
}
