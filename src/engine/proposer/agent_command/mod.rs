//! `AgentCommandProposer` (card kind `agent_command`): any coding agent as
//! the variation operator. For each proposal it makes a workspace holding
//! the parent's tree as a git repository (the parent committed, so the
//! agent's change is `git diff`), writes the rendered prompt and a
//! read-only `.galapagos/` folder into it (the pool's leaderboard, trees
//! and feedback, the run's notes: [`context`]), and runs the card's command
//! in the sandbox candidates get ([`jail`]): the workspace is in the only
//! writable file system, of the writable-space quota, HOME and TMPDIR are private, the network is a fresh
//! namespace in which only the run's model relay is reachable, the whole
//! process tree dies with the proposal (and with the run), and the limits
//! apply. When the command ends, the child is the workspace's tree
//! ([`workspace::read_back`]): changes outside the task's editable files are
//! dropped and named, an unchanged workspace is a no-op, a failing or
//! overrunning agent a failed proposal with its output kept. Everything it
//! did is the genome's [`AgentRun`].
//!
//! # One proposal, step by step
//!
//! 1. **Workspace** (`workspace.rs`): a folder `p<iteration>-<n>/` under the run folder's
//!    `agent-workspaces/` (a temp dir of the proposer's for a run without a folder) with `work/`
//!    (the primary parent's tree, `git init`-ed and committed as "the parent program", so the
//!    agent's change is `git diff`), `info/` and `out/`. Git runs only then, outside the sandbox,
//!    with no user or system configuration and hooks off; after the agent has had the workspace its
//!    `.git` may hold hooks or configuration, so nothing runs git there again. The proposer empties
//!    `agent-workspaces/` when it is built, so a run killed during a proposal leaves nothing once
//!    it is resumed; each proposal's folder is removed when the proposal ends (a guard, whatever
//!    the outcome).
//! 2. **What the agent reads** (`context.rs`): `info/` is shown read-only at `work/.galapagos/`:
//!    `prompt.md` (the prompt builder's system and user text and how to work in the workspace),
//!    `leaderboard.md` / `.json` (the parents the policy handed over and the inspirations, best
//!    first, at most `pool_size`: id, fitness, scores, a one-line summary of how each was made),
//!    `pool/<id>/tree/` and `pool/<id>/feedback.md` (each one's files and its evaluator's error and
//!    artifacts) and `notes.md` (the run's memory, `memory_chars` of it). `out/` is shown writable
//!    at `work/.galapagos/out/`: the agent names the parent it built on in `out/parent` (an id
//!    among the pool, after copying that tree over the workspace) and leaves notes in
//!    `out/notes.md`, which go to `ProposerEnv::write_memory`. `.galapagos/` is in
//!    `.git/info/exclude`.
//! 3. **The sandbox** (`jail.rs`): the command evaluator's container (`bwrap_args` with one
//!    writable file system of `write_quota_mib`, `/dev/shm`, holding the workspace (at
//!    `workspace::INSIDE`), `out/`, HOME and TMPDIR, so a write past the quota fails with "no space"
//!    and nothing the agent writes reaches the machine's disk; the run folder and the workspaces'
//!    root hidden; the run holds that file system open from outside and fills it with `work/` while
//!    the bridge holds the agent back (`--hold`), and reads the child from it afterwards;
//!    `--as-pid-1`; `prlimit`'s memory, process and file-size limits; as root, `setpriv` to nobody
//!    in a user namespace of its own), with the agent's additions placed where the candidates'
//!    `--chdir` was: the `.galapagos/` binds, a private HOME and TMPDIR (`--perms 01777` dirs in
//!    the scratch tmpfs, so nobody can write them as root), and the workspace as the working dir.
//!    The network is always a fresh namespace (`--unshare-net`). The environment is built from
//!    scratch: `PATH` (the agent's program's dir first), `LANG`, `TERM`, HOME, TMPDIR and the
//!    card's `env` entries (a name that holds one of the run's model keys is refused when the
//!    proposer is built). The program is found on the run's PATH and shown with its installation
//!    (its dir's parent: a venv, and a script's interpreter with that interpreter's prefixes,
//!    `locate`). bubblewrap runs in a process group of its own, killed at `timeout_secs`, when the
//!    agent exits and when the proposal is dropped. The container's pid 1 is `galapagos
//!    agent-bridge` (a hidden subcommand; the engine finds the `galapagos` binary as its own
//!    executable or beside it). Its stdin is the proposal's lifeline: a pipe whose write end only
//!    the proposal holds, so it closes when the proposal ends or the run dies in any way; the
//!    bridge then kills the agent's process group and exits, and the kernel kills the rest of the
//!    pid namespace. (The agent's own stdin is the prompt's file when the card says `prompt_via:
//!    stdin`, opened by the bridge.) It also sets its own parent-death signal (SIGKILL) after its
//!    exec, and bubblewrap has one for the run (`--die-with-parent`), but those alone were seen to
//!    miss under load: a killed run left the bridge and its agent running, reparented to init. A
//!    shell as pid 1 (as the command evaluator has) was seen to outlive bubblewrap as root, the
//!    parent-death signal bubblewrap sets before the exec not reaching it. `tests/agent_command.rs`
//!    kills a run with an agent and its setsid'd survivor and checks that none is left, and closes
//!    a bridge's lifeline and checks that its agent is stopped.
//! 4. **The model** (`relay.rs`, `bridge.rs`): the proposer starts the run's model relay
//!    (`engine/model/relay/`) at its first proposal, on the run's runtime, to the endpoints of the
//!    run's model (`RelayUpstream::for_model`; none for the offline model, and then the agent has
//!    no model), with the run's secrets in its redactor and its Unix socket in a private dir under
//!    `/tmp` (short, for the socket path limit; opened to nobody, the token still required). Each
//!    proposal opens a session (a fresh token, the card's `max_tokens` / `max_cost_usd` and the
//!    run's `RunMeter` from `BuildContext::meter`, so the relay refuses past the run's budget too)
//!    whose `env(http://127.0.0.1:4141)` the agent gets; `{model}` in the command is the model of
//!    the run's first endpoint and `{relay_url}` that base URL, for an agent whose endpoint is set
//!    on its command line (Codex's model provider: its built-in one ignores `OPENAI_BASE_URL`). Pid
//!    1, started with `--socket S`, listens on the namespace's `127.0.0.1:4141` and copies each
//!    connection to the relay's socket (its dir bound in) and back; it runs the agent as its child
//!    and exits with its status. When the agent is done the session is finished: its steps become
//!    `AgentRun::steps` and its usage the proposal's (the genome's `usage`, which the run's budget
//!    adds up). A relay that cannot start (a key variable unset) is a fatal proposal error: the run
//!    stops and says why.
//! 5. **The child** (`workspace::read_back`): the workspace's files are walked without following
//!    links (a link, a fifo or a file over 16 MiB is dropped and named), compared with the parent
//!    the agent named (or the primary), and each added, changed or deleted path goes through the
//!    task's `EditRules::check`: what it refuses is dropped and named in `AgentRun::dropped`. An
//!    exit other than 0 or the time limit is `ProposalError::Failed` with the output kept; an
//!    unchanged child is `NoOp` (naming what was dropped). The record is the genome's `AgentRun`
//!    (`Proposal::agent`), which the run's redactor covers (command, output, steps, notes, dropped
//!    paths).

pub mod bridge;
mod context;
mod jail;
mod relay;
mod workspace;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::{Proposal, ProposalError, ProposalRequest, Proposer};
use crate::engine::agent_run::{AgentExit, AgentRun};
use crate::engine::component::{BuildContext, Component, ComponentInfo};
use crate::engine::genome::{Genome, Tree};
use crate::engine::memory::{Knowledge, MemoryQuery};
use crate::engine::meter::RunMeter;
use crate::engine::model::relay::SessionCaps;
use crate::engine::params::{ParamError, ParamSpec, ParamType, param_table};
use crate::engine::sandbox::environment::{self, Profile};
use crate::engine::sandbox::limits::{self, Allowance};
use crate::engine::task::program_folder::EditRules;

/// How the rendered prompt reaches the agent (the prompt is always written
/// to `{prompt_file}` as well).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptVia {
    /// On the command's standard input.
    #[default]
    Stdin,
    /// As one more argument: in place of `{prompt}` when the command has
    /// it, else appended.
    Argument,
    /// Only as the file `{prompt_file}` (stdin is empty).
    File,
}

/// Parameters of [`AgentCommandProposer`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentCommandParams {
    /// The agent's command line: `{workspace}`, `{prompt_file}`,
    /// `{prompt}`, `{model}` (the run's model) and `{relay_url}` (the model
    /// relay's base URL inside the sandbox) are replaced.
    pub command: Vec<String>,
    pub prompt_via: PromptVia,
    /// Wall-clock limit of one proposal's agent, in seconds.
    pub timeout_secs: f64,
    /// Tokens one proposal's agent may use through the relay (null: no
    /// cap beyond the run's budget).
    pub max_tokens: Option<u64>,
    /// Dollars one proposal's agent may spend through the relay (null: no
    /// cap beyond the run's budget).
    pub max_cost_usd: Option<f64>,
    /// Environment variables the agent gets: `NAME` passes the run's value,
    /// `NAME=value` sets one. Nothing else of the run's environment reaches
    /// it.
    pub env: Vec<String>,
    /// What the agent may read besides its workspace (`read_paths`), the
    /// limits of its processes and the output kept, as candidates have them
    /// (the isolation kit's [`Allowance`]; the sandbox and its network are
    /// not the card's to choose: the agent always runs in bubblewrap, with
    /// only the run's model relay to reach).
    #[serde(flatten)]
    pub allowance: Allowance,
    /// Programs of the pool shown in `.galapagos/`, best first.
    pub pool_size: u64,
    /// Characters of the run's memory written to `.galapagos/notes.md`.
    pub memory_chars: u64,
    /// A child whose longest file has more characters is refused.
    pub max_code_length: u64,
}

impl Default for AgentCommandParams {
    fn default() -> Self {
        Self {
            command: Vec::new(),
            prompt_via: PromptVia::Stdin,
            timeout_secs: 600.0,
            max_tokens: Some(200_000),
            max_cost_usd: Some(1.0),
            env: Vec::new(),
            allowance: Allowance::default(),
            pool_size: 16,
            memory_chars: 4000,
            max_code_length: 200_000,
        }
    }
}

/// The agent's own parameters ([`SPECS`] adds the isolation kit's).
const OWN_SPECS: &[ParamSpec] = &[
    ParamSpec {
        key: "command",
        doc: "The agent's command line, one argument per entry; {workspace} is the workspace (also its \
              working dir), {prompt_file} the prompt's file, {prompt} the prompt's text, {model} the run's \
              model, {relay_url} the model relay's base URL inside the sandbox (add /v1 for OpenAI's APIs)",
        ty: ParamType::TextList,
    },
    ParamSpec {
        key: "prompt_via",
        doc: "How the prompt reaches the agent besides {prompt_file}: on stdin, as an argument (in \
              place of {prompt}, else appended), or only as the file",
        ty: ParamType::Choice(&["stdin", "argument", "file"]),
    },
    ParamSpec {
        key: "timeout_secs",
        doc: "Wall-clock limit of one proposal's agent; at it, its whole process tree is killed and \
              the proposal fails with its output kept",
        ty: ParamType::Float {
            min: 1.0,
            max: 86400.0,
        },
    },
    ParamSpec {
        key: "max_tokens",
        doc: "Tokens one proposal's agent may use through the model relay; past it the relay refuses \
              its requests (null: only the run's budget)",
        ty: ParamType::OptionalInt {
            min: 1,
            max: i64::MAX,
        },
    },
    ParamSpec {
        key: "max_cost_usd",
        doc: "Dollars one proposal's agent may spend through the model relay; past it the relay \
              refuses its requests (null: only the run's budget)",
        ty: ParamType::OptionalFloat { min: 0.0, max: 1e6 },
    },
    ParamSpec {
        key: "env",
        doc: "Environment variables the agent gets: NAME passes the run's value, NAME=value sets one \
              (never a model key: the agent reaches the model through the relay with a token)",
        ty: ParamType::TextList,
    },
    ParamSpec {
        key: "pool_size",
        doc: "Programs of the pool (the parents the policy handed over, best first) in the workspace's \
              .galapagos/ folder with their scores, trees and feedback",
        ty: ParamType::Int { min: 1, max: 1000 },
    },
    ParamSpec {
        key: "memory_chars",
        doc: "Characters of the run's memory written to .galapagos/notes.md (0: none)",
        ty: ParamType::Int {
            min: 0,
            max: 10_000_000,
        },
    },
    super::MAX_CODE_LENGTH,
];

/// The agent's parameter table: its own, then the isolation kit's
/// [`limits::SPECS`] (`read_paths`, the limits, `output_limit_kb`).
const SPECS: &[ParamSpec] = param_table!(OWN_SPECS, limits::SPECS);

/// The coding-agent proposer (card kind `agent_command`).
pub struct AgentCommandProposer {
    params: AgentCommandParams,
    rules: EditRules,
    /// The sandbox's programs and what the agent's sandbox hides.
    jail: jail::Prison,
    /// Where each proposal's workspace is made.
    root: workspace::Root,
    /// Numbers the proposals' workspaces.
    next: AtomicU64,
    /// The run's model relay (None: the run's model calls no endpoint, as
    /// the offline model: the agent then has no model to call).
    relay: Option<relay::Link>,
    /// The run's meter: each session's spend counts toward the run's
    /// budget, and the relay refuses a request once it is spent.
    meter: Arc<RunMeter>,
}

impl std::fmt::Debug for AgentCommandProposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCommandProposer")
            .field("command", &self.params.command)
            .finish_non_exhaustive()
    }
}

/// The name of an `env` entry (`NAME` or `NAME=value`).
fn env_name(entry: &str) -> &str {
    entry.split_once('=').map_or(entry, |(name, _)| name)
}

impl Component for AgentCommandProposer {
    type Slot = dyn Proposer;
    type Params = AgentCommandParams;

    const INFO: ComponentInfo = ComponentInfo {
        kind: "agent_command",
        type_name: "AgentCommandProposer",
        summary: "Runs a coding agent (a command) in a sandboxed git workspace of the parent; its \
                  changes to the editable files are the child (pair with the identity policy to let \
                  it choose its parent)",
        params: SPECS,
    };

    fn check(params: &AgentCommandParams) -> Result<(), ParamError> {
        let refuse = |key: String, reason: String| Err(ParamError { key, reason });
        for (i, entry) in params.env.iter().enumerate() {
            let name = env_name(entry);
            if !environment::valid_name(name) {
                return refuse(
                    format!("env[{i}]"),
                    format!("`{entry}` is not NAME or NAME=value with a variable's name"),
                );
            }
            if Profile::Agent.sets().contains(&name) {
                return refuse(
                    format!("env[{i}]"),
                    format!(
                        "`{name}` is set by the proposer for every agent (its private HOME and \
                         TMPDIR, the relay's address and token)"
                    ),
                );
            }
        }
        params.allowance.check()
    }

    fn build(params: AgentCommandParams, ctx: &BuildContext<'_>) -> Result<Self, ParamError> {
        // Checked here rather than in `check`: a block just put on a card
        // has no command yet, and the card stays valid while it is edited.
        if params.command.first().is_none_or(|c| c.trim().is_empty()) {
            return Err(ParamError {
                key: "command".into(),
                reason: "the agent's command line is empty: name the program to run (the built-in \
                         cards agent_* have one for each supported agent)"
                    .into(),
            });
        }
        for (i, entry) in params.env.iter().enumerate() {
            let name = env_name(entry);
            if !entry.contains('=') && ctx.key_vars.iter().any(|k| k == name) {
                return Err(ParamError {
                    key: format!("env[{i}]"),
                    reason: format!(
                        "`{name}` holds a model key of the run: the agent never gets a key (it reaches \
                         the model through the run's relay, with a token of its own)"
                    ),
                });
            }
        }
        let jail = jail::Prison::new(ctx.run_dir).map_err(|reason| ParamError {
            key: "command".into(),
            reason,
        })?;
        let root = workspace::Root::new(ctx.run_dir).map_err(|reason| ParamError {
            key: "command".into(),
            reason,
        })?;
        Ok(Self {
            rules: ctx.task.edit_rules(),
            jail,
            root,
            next: AtomicU64::new(0),
            relay: relay::Link::for_model(ctx.model.as_ref()),
            meter: Arc::clone(&ctx.meter),
            params,
        })
    }

    /// The agent, always in the sandbox with no network but the relay: its
    /// read paths and the variables it is passed can widen it.
    fn reach(params: &AgentCommandParams) -> Option<crate::engine::component::Reach> {
        Some(crate::engine::component::Reach {
            read_paths: params.allowance.read_paths.clone(),
            env: params.env.clone(),
            ..crate::engine::component::Reach::sandboxed(
                crate::engine::component::Runs::Agent(params.command.clone()),
                crate::engine::component::Place::ThisMachine,
            )
        })
    }
}

impl AgentCommandProposer {
    fn max_code_length(&self) -> usize {
        usize::try_from(self.params.max_code_length).unwrap_or(usize::MAX)
    }

    /// The programs `.galapagos/` shows: the parents the policy handed over
    /// and the inspirations, each once, best first, at most `pool_size`.
    fn pool(request: &ProposalRequest, size: u64) -> Vec<Arc<Genome>> {
        let mut pool: Vec<Arc<Genome>> = Vec::new();
        for g in request
            .parents
            .iter()
            .chain(std::iter::once(&request.parent))
            .chain(&request.inspirations)
        {
            if !pool.iter().any(|p| p.id == g.id) {
                pool.push(Arc::clone(g));
            }
        }
        pool.sort_by(|a, b| b.fitness_or_min().total_cmp(&a.fitness_or_min()));
        pool.truncate(usize::try_from(size).unwrap_or(usize::MAX));
        pool
    }

    /// The command line with its placeholders filled in.
    fn command_line(&self, ws: &workspace::Workspace, prompt: &str) -> Vec<String> {
        let prompt_file = ws.prompt_file();
        let model = self.relay.as_ref().map_or("", |r| r.model.as_str());
        let relay_url = self
            .relay
            .as_ref()
            .map_or_else(String::new, |_| bridge::base_url());
        let fill = |a: &str| {
            a.replace("{model}", model)
                .replace("{relay_url}", &relay_url)
                .replace("{workspace}", &ws.work_inside().to_string_lossy())
                .replace("{prompt_file}", &prompt_file.to_string_lossy())
                .replace("{prompt}", prompt)
        };
        let mut argv: Vec<String> = self.params.command.iter().map(|a| fill(a)).collect();
        if self.params.prompt_via == PromptVia::Argument
            && !self.params.command.iter().any(|a| a.contains("{prompt}"))
        {
            argv.push(prompt.to_owned());
        }
        argv
    }
}

/// What became of the agent's workspace, as a proposal (a failure with the
/// limit of `limits` it shows named first, by the isolation kit's one
/// explainer).
fn outcome(
    run: &mut AgentRun,
    back: Result<workspace::ReadBack, String>,
    parent: &Tree,
    max_code_length: usize,
    limits: limits::Limits,
) -> Result<Tree, ProposalError> {
    let failed = match &run.exit {
        AgentExit::Finished => None,
        AgentExit::Failed(why) => {
            let error = format!("the agent failed: {why}");
            let evidence = limits::Evidence {
                said: &[run.stderr.as_str(), run.stdout.as_str()],
                ..limits::Evidence::default()
            };
            Some(
                limits
                    .hit(&evidence)
                    .map_or_else(|| error.clone(), |hit| hit.name(&error)),
            )
        }
        AgentExit::TimedOut => Some(format!(
            "the agent ran over its time limit ({:.0} s) and its processes were killed",
            run.wall_ms / 1000.0
        )),
        AgentExit::NotStarted(why) => Some(format!("the agent could not be started: {why}")),
    };
    if let Some(why) = failed {
        return Err(ProposalError::Failed(why));
    }
    let back = back.map_err(ProposalError::Failed)?;
    run.dropped = back.dropped;
    if back.child == *parent {
        let dropped = if run.dropped.is_empty() {
            String::new()
        } else {
            format!(
                "; dropped (outside the editable files): {}",
                run.dropped.join("; ")
            )
        };
        return Err(ProposalError::NoOp(format!(
            "the agent left the program unchanged{dropped}"
        )));
    }
    let len = back.child.longest_text_chars();
    if len > max_code_length {
        return Err(ProposalError::Parse(format!(
            "the agent's child has a file of {len} characters, over max_code_length \
             ({max_code_length})"
        )));
    }
    Ok(back.child)
}

#[async_trait::async_trait]
impl Proposer for AgentCommandProposer {
    async fn propose(&self, request: ProposalRequest) -> Proposal {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let notes = if self.params.memory_chars == 0 {
            Vec::new()
        } else {
            let query = MemoryQuery {
                island: None,
                max_chars: Some(usize::try_from(self.params.memory_chars).unwrap_or(usize::MAX)),
            };
            request.env.read_memory(&query).await.notes
        };
        let pool = Self::pool(&request, self.params.pool_size);
        let prompt = context::prompt_text(&request.prompt, request.parent.id);
        let mut run = AgentRun::default();
        let failed = |run: AgentRun, why: String| Proposal {
            content: Err(ProposalError::Failed(why)),
            response: None,
            model: None,
            usage: None,
            patch_type: "agent".to_owned(),
            parent_id: None,
            agent: Some(Box::new(run)),
        };
        let ws = match self.root.create(
            &format!("p{}-{n}", request.env.candidate_id()),
            &request.parent.content,
        ) {
            Ok(ws) => ws,
            Err(e) => {
                run.exit = AgentExit::NotStarted(e.clone());
                return failed(run, e);
            }
        };
        if let Err(e) = context::write(&ws.info, &prompt, &pool, &notes) {
            run.exit = AgentExit::NotStarted(e.clone());
            return failed(run, e);
        }
        run.command = self.command_line(&ws, &prompt);
        let prompt_on_stdin = self.params.prompt_via == PromptVia::Stdin;
        // A session of the run's relay: a fresh token, the card's caps and
        // the run's budget.
        let (session, relay_env, relay_socket) = match &self.relay {
            None => (None, Vec::new(), None),
            Some(link) => match link.relay().await {
                Ok(relay) => {
                    let session = relay.session(SessionCaps {
                        max_tokens: self.params.max_tokens,
                        max_cost_usd: self.params.max_cost_usd,
                        run: Some(Arc::clone(&self.meter)),
                        ..SessionCaps::default()
                    });
                    let mut env = session.env(&bridge::base_url());
                    // The relay forwards only the run's models: Claude Code's
                    // background requests (its "small, fast" model) use the
                    // run's model too.
                    for name in [
                        "ANTHROPIC_SMALL_FAST_MODEL",
                        "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                    ] {
                        env.push((name.to_owned(), link.model.clone()));
                    }
                    (Some(session), env, Some(relay.unix_socket().to_path_buf()))
                }
                Err(e) => {
                    let why = format!("the model relay for the agent could not start: {e}");
                    run.exit = AgentExit::NotStarted(why.clone());
                    return Proposal {
                        content: Err(ProposalError::Fatal(why)),
                        ..failed(run, String::new())
                    };
                }
            },
        };
        let ran = self
            .jail
            .run(&jail::Job {
                argv: &run.command,
                ws: &ws,
                prompt_on_stdin,
                params: &self.params,
                relay_env,
                relay_socket,
            })
            .await;
        // Every request it made, in order, with its usage: those still in
        // flight are cut and counted first.
        let usage = match session {
            Some(s) => {
                let (steps, usage) = s.finish().await;
                run.steps = steps;
                Some(usage)
            }
            None => None,
        };
        run.exit = ran.exit;
        run.wall_ms = ran.wall_ms;
        run.stdout = ran.stdout;
        run.stderr = ran.stderr;
        // The parent it named, when it is one it was handed.
        let said = ran.left.as_ref().and_then(workspace::said_parent);
        let mut parent = Arc::clone(&request.parent);
        let mut parent_id = None;
        if let Some(said) = said {
            match request.parents.iter().find(|p| p.id == said) {
                Some(p) => {
                    run.chosen_parent = Some(said);
                    if p.id != request.parent.id {
                        parent_id = Some(p.id);
                        parent = Arc::clone(p);
                    }
                }
                None => run.stderr.push_str(&format!(
                    "\n[galapagos: the agent named #{said} as its parent, which is not in the pool; \
                     the child's parent is #{}]",
                    request.parent.id
                )),
            }
        }
        if let Some(text) = ran.left.as_ref().and_then(workspace::notes) {
            run.notes = Some(text.clone());
            request
                .env
                .write_memory(Knowledge { notes: vec![text] })
                .await;
        }
        let back = match &ran.left {
            Some(left) => workspace::read_back(left, &parent.content, &self.rules),
            None => Err("the agent never had a workspace".to_owned()),
        };
        let limits = jail::Prison::limits(&self.params);
        let content = outcome(
            &mut run,
            back,
            &parent.content,
            self.max_code_length(),
            limits,
        );
        drop(ran.left);
        drop(ws);
        let response = (!run.stdout.is_empty()).then(|| run.stdout.clone());
        Proposal {
            content,
            response,
            model: self.relay.as_ref().map(|r| r.model.clone()),
            usage: usage.filter(|_| !run.steps.is_empty()),
            patch_type: "agent".to_owned(),
            parent_id,
            agent: Some(Box::new(run)),
        }
    }
}

/// `NAME=value` entries and passed names resolved against the run's
/// environment (a passed name that is unset is left out).
fn card_env(entries: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in entries {
        match entry.split_once('=') {
            Some((name, value)) => {
                out.insert(name.to_owned(), value.to_owned());
            }
            None => {
                if let Ok(value) = std::env::var(entry) {
                    out.insert(entry.clone(), value);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
