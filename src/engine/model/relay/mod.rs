//! The model relay: a coding agent never holds the run's key.
//!
//! A run that proposes with a coding agent starts one [`Relay`] on its tokio
//! runtime: an HTTP server on a random loopback port and on a Unix socket
//! in a folder the caller names (a sandboxed agent without network reaches
//! the socket through a bridge). Each proposal opens a [`RelaySession`]: a
//! fresh random token, handed to the agent as its API key with the base
//! URLs of the usual SDKs ([`RelaySession::env`]). The relay forwards a
//! request that carries a live token to the run's endpoint
//! ([`RelayUpstream`]) with the real key in the header its protocol uses,
//! passes the request and the reply through unchanged (streamed or not),
//! counts the tokens and cost the reply reports into the session, and
//! keeps every request and reply as an [`AgentStep`], redacted. A wrong or
//! finished token, a reached cap, a model the run does not name, a route it
//! does not relay and a request it cannot read are answered by the relay
//! itself in the protocol's own error shape (`shape.rs`) and never
//! forwarded.
//!
//! The agent is not trusted, and the caps are hard: requests in flight at
//! once hold what they may spend and have their output limits lowered to
//! what the caps leave (`admit.rs`), a reply's usage is read as it goes by
//! however large it is (`tap.rs`) and one whose usage cannot be read counts
//! as the rest of the cap, a proposal ends only once its requests in flight
//! are cut and recorded ([`RelaySession::finish`]), what one proposal may
//! hold of the relay is bounded (`limits.rs`), and the keys are taken out
//! of replies even when split across chunks or written in JSON's escapes
//! ([`crate::engine::redact::RedactStream`]).
//!
//! - `upstream.rs`: where requests go ([`RelayUpstream`]).
//! - `session.rs`: a proposal's token, caps, usage and steps.
//! - `admit.rs`: whether a request fits its caps, and its output limit.
//! - `tap.rs`: a reply's usage read as it goes by.
//! - `limits.rs`: the bounds, in one place.
//! - `route.rs`: which protocol a request speaks and which token it carries.
//! - `forward.rs`: one request, from the agent to the endpoint and back.
//! - `shape.rs`: the relay's own answers in each protocol's shape.
//! - `steps.rs`: a kept step read back per protocol (messages, tool calls,
//!   the reply) for the studio's Agent tab.
//!
//! # How it works
//!
//! A coding agent proposing for a run never holds the run's key. The run starts one `Relay` on its
//! tokio runtime (`Relay::start(RelayUpstream, Arc<Redactor>, socket_dir)`): a hyper HTTP/1 server
//! on `127.0.0.1` (a port the system picks) and on `socket_dir/relay.sock` (a sandboxed agent has
//! no network; a bridge inside its sandbox forwards a loopback port to the socket). `RelayUpstream`
//! (`upstream.rs`) is the run's endpoints as its model settings name them
//! (`RelayUpstream::for_model`, through `LanguageModel::endpoint_configs`): base URL, the protocols
//! each speaks, the *name* of its key variable and its key header, and the run's price table; the
//! relay reads the key values once when it starts and refuses to start, naming the variable, when a
//! required one is unset.
//!
//! Each proposal opens a `RelaySession` (`session.rs`): a fresh 256-bit token from the system's
//! generator, caps (`SessionCaps`: tokens, USD, and the run's `RunMeter`), the usage so far and its
//! steps. `RelaySession::env(base)` is what the agent gets: `OPENAI_BASE_URL`/`OPENAI_API_BASE`
//! (`…/v1`), `ANTHROPIC_BASE_URL`, and the token as `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and
//! `ANTHROPIC_AUTH_TOKEN`. `finish` ends it (the token is refused from then on) and returns the
//! steps, in request order, and the usage.
//!
//! How one request flows (`forward.rs`):
//!
//! 1. The token is taken from `Authorization: Bearer`, `x-api-key` or `api-key` (`route.rs`). No
//!    live session for it: 401 in the protocol's shape, nothing read, nothing forwarded; the relay
//!    counts it (`Relay::unauthorized`), no session keeps it.
//! 2. The step's index and start are fixed; the body is read (at most 32 MiB).
//! 3. The route (`route.rs`): `POST …/chat/completions`, `…/responses`, `…/messages` (metered),
//!    `…/messages/count_tokens` and `GET …/models` (forwarded, not metered), with or without `/v1`;
//!    anything else is refused with 404.
//! 4. A reached cap refuses (OpenAI's 429 `insufficient_quota`; Anthropic's 400
//!    `invalid_request_error`, as each answers a spent balance), the proposal's own caps checked
//!    first, then the run's budget (`RunMeter::reached`); the message names the cap and its card
//!    field and the step keeps which (`AgentStep::cap`); a body that is not JSON, or a protocol no
//!    endpoint of the run speaks, with 400.
//! 5. The request goes to the first endpoint speaking its protocol (`ApiBase::request_url`, so
//!    Azure deployment slots and `api-version` work as for the run's own client) with the agent's
//!    headers minus hop-by-hop ones, its token and `accept-encoding`, plus the endpoint's headers
//!    and the real key in its header (`Authorization: Bearer`, `x-api-key`, `api-key`). The body is
//!    sent as the agent wrote it, with one exception: a Chat Completions stream that does not ask
//!    for `stream_options.include_usage` is given it, or its tokens could not be counted.
//! 6. The reply: a stream (`text/event-stream`) is passed to the agent chunk by chunk as it comes
//!    and kept in memory (at most 64 MiB) to read its usage when it ends; a whole reply is read,
//!    then passed on with its status and headers. Either way the bytes are the endpoint's, except
//!    that any secret in them is redacted (an endpoint echoing the key never hands it to the
//!    agent). A whole reply that breaks off or is not JSON becomes a 502 in the protocol's shape; a
//!    stream that breaks off ends with the protocol's own error event (`shape.rs`); an endpoint
//!    that cannot be reached is a 502.
//! 7. The usage is read with the protocol's own reader (`Protocol::usage_of`, the same `wire/` code
//!    the run's client uses, which reads usage whatever the reply holds: text, tool calls or
//!    nothing), priced with the run's price table by the request's model, and added to the session
//!    and to the run's meter.
//!
//! What is recorded: one `AgentStep` per request that carried a live token, refused or not:
//! protocol, method and path, start and duration (ms from the session's start), status, streamed,
//! the request body as forwarded and the reply as the agent got it (each redacted with the run's
//! `Redactor` and with the keys the relay read, the reply cut to 256 KiB with its full length
//! kept), the priced usage, why the relay refused it (`refused`) or what went wrong on the way
//! (`note`). A request still in flight when the session is finished is not among its steps.
//!
//! Reading a step back (`steps.rs`) is the relay's knowledge of the protocols turned around: a
//! step's request and reply become the messages it sent (tool calls and tool results among them,
//! and how many of them the previous request had already sent), the reply's text and tool calls,
//! tokens and cost, and the refusal or error (`StepView`, and a one-line `StepSummary` per row); a
//! `Transcript` reads each step only when first asked for and keeps what it read, so the studio's
//! Agent tab pays for the rows in view, not for 10,000 steps (`benches/agent_tab.rs` times its
//! frames). The tab (`studio/run/agent_view.rs`) gives the list 42% of its height and the chosen
//! step a scroll area of its own; below 420 points (a 1024×640 window) its header, the list (four
//! rows) and the step scroll as one instead.

mod admit;
mod forward;
pub mod limits;
mod route;
mod session;
mod shape;
pub mod steps;
mod tap;
mod upstream;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;

pub use limits::SessionLimits;
pub use session::{RelaySession, SessionCaps};
pub use shape::Trouble;
pub use upstream::{RelayUpstream, UpstreamEndpoint};

use crate::engine::redact::Redactor;
use session::Session;

/// The socket's file name in the caller's folder.
pub const SOCKET_NAME: &str = "relay.sock";

/// Longest a Unix socket's path may be (`sun_path` holds 108 bytes with its
/// terminating zero).
const MAX_SOCKET_PATH: usize = 107;

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("the model relay has nothing to forward to: {0} calls no HTTP endpoint")]
    NoEndpoint(String),
    #[error(
        "the model relay needs the key of {endpoint} in the environment variable {var}, which is not set"
    )]
    KeyMissing { endpoint: String, var: String },
    #[error("the model relay could not listen on {what}: {source}")]
    Listen {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the model relay's socket path {path} is {len} bytes long; a Unix socket's path may be at most {MAX_SOCKET_PATH}: give a shorter folder"
    )]
    SocketPathTooLong { path: PathBuf, len: usize },
    #[error("the model relay could not set up its HTTP client: {0}")]
    Client(String),
}

/// What the listeners and the request handlers share.
pub(crate) struct Shared {
    upstream: RelayUpstream,
    /// The key of each endpoint, in `upstream.endpoints`' order (`None`:
    /// the endpoint takes none).
    keys: Vec<Option<String>>,
    /// The run's secrets and the keys the relay read itself (so a key
    /// never reaches a step or the agent even if the run's redactor lacks
    /// it).
    redactor: Redactor,
    client: reqwest::Client,
    sessions: Mutex<HashMap<String, Weak<Session>>>,
    /// Requests refused for want of a live token (kept in no session).
    unauthorized: AtomicU64,
}

impl Shared {
    fn end_session(&self, token: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(token);
    }

    /// The live session of `token`.
    fn session(&self, token: &str) -> Option<Arc<Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(token)
            .and_then(Weak::upgrade)
    }

    /// True when `text` holds one of the run's secrets or the relay's keys.
    fn finds(&self, text: &str) -> bool {
        self.redactor.finds(text)
    }

    /// `text` with the run's secrets and the relay's keys taken out.
    fn redact(&self, text: &str) -> String {
        self.redactor.text(text).into_owned()
    }
}

/// The relay of one run. Dropping it stops its listeners and removes its
/// socket.
pub struct Relay {
    shared: Arc<Shared>,
    tcp_addr: SocketAddr,
    socket: PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("tcp_addr", &self.tcp_addr)
            .field("socket", &self.socket)
            .field("upstream", &self.shared.upstream)
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// Starts the relay on the current tokio runtime, the keys read from
    /// the process environment. Listens on `127.0.0.1` (a port the system
    /// picks) and on `socket_dir/relay.sock`.
    pub async fn start(
        upstream: RelayUpstream,
        redactor: Arc<Redactor>,
        socket_dir: &Path,
    ) -> Result<Relay, RelayError> {
        Self::start_with_env(upstream, redactor, socket_dir, &|name| {
            std::env::var(name).ok()
        })
        .await
    }

    /// [`Relay::start`] with the environment given as a lookup function.
    pub async fn start_with_env(
        upstream: RelayUpstream,
        redactor: Arc<Redactor>,
        socket_dir: &Path,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Relay, RelayError> {
        if upstream.endpoints.is_empty() {
            return Err(RelayError::NoEndpoint("the upstream".into()));
        }
        let mut keys = Vec::new();
        let mut own = Vec::new();
        for e in &upstream.endpoints {
            let key = env(&e.api_key_env).filter(|k| !k.trim().is_empty());
            if key.is_none() && e.key_required {
                return Err(RelayError::KeyMissing {
                    endpoint: e.api_base.to_string(),
                    var: e.api_key_env.clone(),
                });
            }
            if let Some(k) = &key {
                own.push((format!("${}", e.api_key_env), k.clone()));
            }
            own.extend(e.api_base.secrets());
            keys.push(key);
        }
        crate::engine::model::openai::install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(60))
            // A redirect is the endpoint's answer: the agent gets it as is.
            .redirect(reqwest::redirect::Policy::none());
        let bases = || upstream.endpoints.iter().map(|e| e.api_base.expose());
        if bases().all(crate::engine::model::openai::is_local_base) {
            builder = builder.no_proxy();
        }
        if bases().all(|b| b.trim_start().to_ascii_lowercase().starts_with("http://")) {
            // Plain HTTP needs no certificates (as the model client).
            builder = builder.tls_certs_only(Vec::<reqwest::Certificate>::new());
        }
        let client = builder
            .build()
            .map_err(|e| RelayError::Client(e.to_string()))?;

        let socket = socket_dir.join(SOCKET_NAME);
        let len = socket.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(RelayError::SocketPathTooLong { path: socket, len });
        }
        // A socket left by a relay that was killed is in the way; anything
        // else by that name is not ours to remove.
        if let Ok(meta) = std::fs::symlink_metadata(&socket)
            && crate::engine::platform::is_socket(&meta.file_type())
        {
            std::fs::remove_file(&socket).ok();
        }
        let unix = crate::engine::platform::UnixListener::bind(&socket).map_err(|source| {
            RelayError::Listen {
                what: socket.display().to_string(),
                source,
            }
        })?;
        let tcp = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| RelayError::Listen {
                what: "127.0.0.1".into(),
                source,
            })?;
        let tcp_addr = tcp.local_addr().map_err(|source| RelayError::Listen {
            what: "127.0.0.1".into(),
            source,
        })?;

        let shared = Arc::new(Shared {
            upstream,
            keys,
            redactor: redactor.with(&Redactor::new(own)),
            client,
            sessions: Mutex::new(HashMap::new()),
            unauthorized: AtomicU64::new(0),
        });
        // Connections over both listeners: the next waits for one to end.
        let connections = Arc::new(tokio::sync::Semaphore::new(limits::MAX_CONNECTIONS));
        let (on_tcp, tcp_slots) = (Arc::clone(&shared), Arc::clone(&connections));
        let tcp_task = tokio::spawn(async move {
            loop {
                let Ok(slot) = Arc::clone(&tcp_slots).acquire_owned().await else {
                    return;
                };
                let Ok((stream, _)) = tcp.accept().await else {
                    // Out of file descriptors or the like: wait, go on.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                stream.set_nodelay(true).ok();
                serve(Arc::clone(&on_tcp), stream, slot);
            }
        });
        let (on_unix, unix_slots) = (Arc::clone(&shared), connections);
        let unix_task = tokio::spawn(async move {
            loop {
                let Ok(slot) = Arc::clone(&unix_slots).acquire_owned().await else {
                    return;
                };
                let Ok((stream, _)) = unix.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                serve(Arc::clone(&on_unix), stream, slot);
            }
        });
        Ok(Relay {
            shared,
            tcp_addr,
            socket,
            tasks: vec![tcp_task, unix_task],
        })
    }

    /// The loopback address it listens on.
    pub fn tcp_addr(&self) -> SocketAddr {
        self.tcp_addr
    }

    /// `http://127.0.0.1:PORT`, the base to give [`RelaySession::env`] for
    /// an agent that reaches the loopback port directly.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.tcp_addr)
    }

    /// The Unix socket it listens on.
    pub fn unix_socket(&self) -> &Path {
        &self.socket
    }

    /// How many requests it refused for want of a live token (they belong
    /// to no session, so no step keeps them).
    pub fn unauthorized(&self) -> u64 {
        self.shared.unauthorized.load(Ordering::Relaxed)
    }

    /// Where it forwards to.
    pub fn upstream(&self) -> &RelayUpstream {
        &self.shared.upstream
    }

    /// A new session with a fresh token and `caps`.
    pub fn session(&self, caps: SessionCaps) -> RelaySession {
        let token = session::new_token();
        let session = Arc::new(Session::new(caps));
        self.shared
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(token.clone(), Arc::downgrade(&session));
        RelaySession {
            token,
            session,
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        std::fs::remove_file(&self.socket).ok();
    }
}

/// Serves one connection (HTTP/1.1, kept alive) on a task of its own,
/// holding `slot` of the relay's connections until it ends.
fn serve<S>(shared: Arc<Shared>, stream: S, slot: tokio::sync::OwnedSemaphorePermit)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let service = service_fn(move |request| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, std::convert::Infallible>(forward::handle(shared, request).await) }
        });
        // A connection the agent drops mid-request ends here; the request
        // goes on in its own task and is recorded.
        http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits::HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service)
            .await
            .ok();
        drop(slot);
    });
}
