//! The isolation kit: everything the engine uses to run code it does not
//! trust (a candidate program, a task's evaluator, a coding agent) apart
//! from the machine, from the run and from each other. It sits below the
//! slots that run such code and depends on none of them:
//!
//! - the Python evaluator (`evaluator/subprocess.rs` with
//!   `evaluator/python_worker/`): one container per run for its warm worker,
//!   and per-candidate namespaces inside it;
//! - the command evaluator (`evaluator/command/`): one container per
//!   candidate;
//! - the Slurm evaluator (`evaluator/slurm/`): the container options for a
//!   candidate on a node, written into `runner.json`;
//! - the coding-agent proposer (`proposer/agent_command/`): one container
//!   per proposal.
//!
//! | file | one job |
//! |---|---|
//! | [`isolation`] | an evaluator's choice of container and network (`Isolation`: `sandbox`, `network`), and the parameter table of every sandbox key an evaluator takes |
//! | [`limits`] | the one limits table: what a sandboxed process may read and use as a card sets it (`Allowance`: `read_paths`, memory, CPU time, processes, file size, the writable-space quota, `output_limit_kb`; the evaluators and the coding agent flatten it in), their values for one process (`Limits`), the rlimits that enforce them, and the one explainer that names the limit a process hit from raw facts |
//! | [`environment`] | the one environment allowlist, with a profile per kind of process (the Python evaluator, a command, Slurm's clients, a coding agent), and refusing a listed name that holds a model key (or its value) |
//! | [`lowered`] | the one list of a card's settings that lower isolation below the safe defaults (the sandbox off, the network, `read_paths` outside the task, a variable of the user's environment passed, a cluster's extra `sbatch_args` and `staging_dir`), from what each block says it reaches; what `crate::engine::consent` asks consent for |
//! | [`paths`] | the host paths a sandbox hides (the user's data dirs) and shows (`read_paths`, never a whole home or the settings file), the scratch dir inside |
//! | [`interpreter`] | the interpreter a sandboxed process runs and the dirs it reads, found outside the sandbox |
//! | [`capture`] | a process's stdout and stderr kept within bounds (head and tail, the rest counted) |
//! | [`bwrap`] | the bubblewrap command line (`Jail`, `bwrap_args`): what a container hides, shows and lets write |
//! | [`run_as`] | as root: the unprivileged user a container's process runs as (`setpriv`), a task folder it can read, a folder handed over to it |
//! | [`prlimit`] | the limits applied with `prlimit` inside a container |
//! | [`process`] | `/proc`, killing whole process groups, wait statuses and signal names |
//! | [`supervise`] | seeing one container's process tree to its end: output read as it comes, the group killed at the time limit, on exit and on drop, CPU time from the kernel |
//!
//! `bwrap`, `run_as`, `prlimit`, `process` and `supervise` are Linux's
//! (bubblewrap, `setpriv`, `prlimit`, `/proc`, process groups); what they
//! call of the system goes through [`crate::engine::platform`], the one
//! module with a `cfg` on the target (beside this kit rather than in it: the
//! foreign-folder, tree, consent and run-service code use it too, and the
//! kit depends on them). On another system they type-check, and local
//! evaluation and agents are refused before anything starts
//! ([`crate::engine::platform::refusal`]).
//!
//! # The container
//!
//! `sandbox: bwrap` (the default on Linux; the README's Security model says
//! what it guarantees and what not) is bubblewrap ([`bwrap::bwrap_args`]):
//! new user, pid, IPC, UTS and cgroup namespaces, no network namespace
//! shared with the machine unless `network: true` (the agent never has
//! one), no capabilities, a new session, `--die-with-parent`, the machine's
//! file system read-only with the user's data dirs ([`paths::private_dirs`]:
//! `/home`, `/root`, `$HOME`, the settings file's dir), `/tmp`, `/var/tmp`
//! and `/run` replaced by empty read-only dirs, a fresh `/dev` (GPU device
//! nodes passed in) and `/proc` (`/proc/sys` read-only), and only what its
//! process reads bound back read-only: the task folder, the code dir, a
//! socket's dir, the interpreter's dirs ([`interpreter`], found or probed
//! outside the sandbox) and `read_paths`. What it can write is a scratch
//! tmpfs ([`paths::SCRATCH_ROOT`], holding HOME and TMPDIR) and
//! `/dev/shm`, each capped at `write_quota_mib`; with
//! [`bwrap::Jail::one_scratch`] (a container per candidate) the scratch dir
//! is a link into `/dev/shm`, so everything it writes shares one quota.
//!
//! Per run, the Python worker's container is paid once; inside it, each
//! candidate's child enters namespaces of its own in Python
//! (`assets/python/galapagos_sandbox.py`): it is pid 1 of a pid namespace
//! (the kernel kills what it left when it ends), has its own user, mount
//! and IPC namespaces, a fresh tmpfs of `write_quota_mib` as its scratch
//! dir, the lane socket's dir hidden, the limits, no capabilities,
//! `no_new_privs`, non-dumpable and a Landlock domain of its own (no TCP
//! unless `network`, no signals to or abstract sockets shared with
//! processes outside it). A container per candidate (the command evaluator,
//! a Slurm node) gets those from bubblewrap itself, with `prlimit`
//! ([`prlimit::prlimit_args`]) under a shell that is its pid 1
//! (`--as-pid-1`).
//!
//! *As root* ([`run_as`]): a user namespace made by root keeps root's uid
//! on the machine, which the kernel exempts from `RLIMIT_NPROC`, so
//! bubblewrap runs without `--unshare-user`, keeping only `CAP_SETUID` and
//! `CAP_SETGID`, and `setpriv` ([`run_as::as_user`]) starts the process as
//! `nobody` with no capabilities and `no_new_privs` (a process per
//! candidate in a user namespace of its own, so each candidate's processes
//! count apart). Everything bound in must be passable by that user: the
//! dirs bubblewrap makes on the way to a mount point get `--perms 0755`, a
//! socket is opened to all, and a task folder `nobody` cannot read is bound
//! in as a readable copy ([`run_as::stage_task`]).
//!
//! # Invariants
//!
//! - A sandboxed process never gets the run's environment: it starts from
//!   the allowlist ([`environment`]) plus the names a card lists, and a
//!   listed name that holds a model API key, or a key's value, is refused
//!   (`BuildContext::key_vars` names them).
//! - `read_paths` never shows `/`, `/home`, `/root`, the whole `$HOME` or
//!   the settings file ([`paths::refuse_read_path`]).
//! - Nothing a sandboxed process writes is read back as a fact about it:
//!   its CPU time is the kernel's count for the exited container
//!   ([`supervise`]), its output is bounded ([`capture`]), and a limit is
//!   named only on evidence ([`limits::Limits::explain`]).
//! - Nothing lowers isolation silently: a card's settings that widen what
//!   its processes reach are listed by one function ([`lowered::lowered`]),
//!   and a card from elsewhere that lowers any runs only with the person's
//!   consent to that card and each setting (`crate::engine::consent`).
//! - A process tree never outlives what started it: the container runs in
//!   a process group of its own, killed at the time limit, once it has
//!   exited (closing what a leftover held) and when its supervision is
//!   dropped ([`supervise::GroupGuard`]); its pid namespace ends with its
//!   pid 1.
//! - One default and one name per setting: the card's limits live only in
//!   [`limits::Allowance`] (the evaluators and the coding agent flatten the
//!   same struct), and a limit is explained only by [`limits::Limits::hit`];
//!   the Python side enforces and reports facts, it does not explain.
//! - One environment list ([`environment::VARIABLES`]); a kind of process
//!   differs from another only by its [`environment::Profile`].
//!
//! # The container, layer by layer
//!
//! **The sandbox** (`sandbox: bwrap`, the default on Linux; the security model, `docs/security.md`, says what it guarantees
//! and what not). Two layers, so that the expensive part is paid once per run:
//!
//! 1. *Per run*, bubblewrap (`sandbox/bwrap.rs`): the worker starts in new user, pid, IPC, UTS and cgroup
//!    namespaces, with no network namespace shared with the machine unless `network: true`, no capabilities, a new
//!    session, the machine's file system read-only with the user's data dirs, `/tmp`, `/var/tmp` and `/run` replaced by
//!    empty read-only dirs, a fresh `/dev` and `/proc`, and only the task folder, the code dir, the lane socket's dir,
//!    the interpreter's dirs and `read_paths` bound back read-only. The interpreter is found (or probed) outside the
//!    sandbox; the worker's bytecode is compiled outside it, since the code dir is read-only inside.
//! 2. *Per candidate*, in Python before the candidate exists (`galapagos_sandbox.py`): each standby child is pid 1 of a
//!    pid namespace of its own (the kernel kills everything left in it when it ends), enters its own user, mount and
//!    IPC namespaces, mounts a fresh tmpfs of `write_quota_mib` as its scratch dir (`HOME`, `TMPDIR`, `/dev/shm`, its program files: one writable-space quota) and hides the lane socket's
//!    dir, applies the limits (`sandbox/limits.rs` names the one hit), then drops every capability, sets
//!    `no_new_privs`, becomes non-dumpable and enters a Landlock domain of its own (no TCP unless `network`, no signals
//!    to or abstract sockets shared with processes outside it; files may move between directories, which a Landlock
//!    domain refuses with EXDEV from ABI 2 on unless a rule allows it, and compilers such as rustc need). The worker
//!    makes its own user namespace before it imports `evaluator.py` (the kernel makes one only for a process with a
//!    single thread, and imports such as numpy's start threads) and the zygote's pid namespace after it.
//!
//! *As root* (`sandbox/run_as.rs`): a user namespace made by root keeps root's uid on the machine, which the kernel
//! exempts from `RLIMIT_NPROC`, so bubblewrap runs without `--unshare-user`, keeping only `CAP_SETUID`/`CAP_SETGID`,
//! and `setpriv` (`run_as::as_user`) starts the worker, or the command evaluator's command, as `nobody`, with no
//! capabilities and `no_new_privs`; the worker's own per-candidate user namespaces then count each candidate's
//! processes apart. Everything bound in must be passable by that user: the dirs bubblewrap makes on the way to a
//! mount point get `--perms 0755`, the lane socket is opened to all (its peers are still checked by pid), the
//! worker's code is world-readable, and a task folder `nobody` cannot read is bound in as a readable copy
//! (`run_as::stage_task`).
//!
//! The environment of the worker and every candidate is an allowlist (`sandbox/environment.rs`, its `Evaluator` profile); the worker's code dir
//! is first on `PYTHONPATH`. A task's hidden paths (`task/hidden.rs`: its `hidden/` folder and `hidden:` globs) reach
//! the evaluator as `GALAPAGOS_HIDDEN`; the task loader never takes a description from them.

pub(crate) mod bwrap;
pub(crate) mod capture;
pub(crate) mod environment;
pub(crate) mod interpreter;
pub mod isolation;
pub mod limits;
pub mod lowered;
pub(crate) mod paths;
pub(crate) mod prlimit;
pub(crate) mod process;
pub(crate) mod run_as;
pub(crate) mod supervise;

pub use isolation::{Isolation, Sandbox};
pub use limits::Allowance;
