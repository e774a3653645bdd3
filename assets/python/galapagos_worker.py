"""Galapagos evaluation worker.

Started once per run by the Rust `SubprocessEvaluator`. It imports the
task's evaluator.py a single time and then only forks: every candidate runs
in a forked child in its own process group, so a runaway or crashing
candidate is killed (SIGKILL to the whole group) without losing the warm
interpreter.

Zygote pattern: right after the import the worker forks a zygote that forks
every child (see `Zygote`), so the worker itself never forks again. Standby
children are set up before any candidate exists (own process group,
parent-death signal, stdin from /dev/null, a rehearsal of the request path)
and connect to the run directly: one connection to the run's lane socket
carries requests in and results out, and hands the run the read ends of the
child's stdout and stderr pipes (see `standby_main`). The run hands a request to
a ready child itself, reads its result and its output, and kills its group
at the timeout or when it is done, so neither a request nor a result passes
through the worker. By default each child evaluates exactly one candidate,
so candidates stay isolated from each other. With `reuse` K > 1 (the
evaluator's `candidates_per_process`) a child serves up to K candidates one
after another, like a pool worker of OpenEvolve, but still killable: a
candidate that overruns or crashes takes only its own child with it. After
each candidate the child puts back what candidates commonly change (working
directory, sys.path, argv, environment, standard streams, recursion limit,
random state, warning filters, signal handlers and timers), and it retires
instead of serving again when the candidate left threads or processes
behind, closed or redirected a standard stream, replaced anything in
builtins, evaluator.py's globals or a module evaluator.py uses, or grew the
process by more than RSS_GROWTH_LIMIT.

Protocol with the run, on the worker's stdin/stdout (one JSON object per line):
  worker -> rust  {"ready": true, "executable": str, "zygote": pid (in the
                  worker's own pid namespace), "stale": bool (its bytecode)}
                  or {"ready": false, "error": str, "traceback": str,
                  "import_failed": bool (evaluator.py itself failed)}
  rust -> worker  {"fork": n}            fork n more standby children
  rust -> worker  {"status": pid}        how did that child end?
  worker -> rust  {"exited": pid, "status": int, "cpu": float}   its wait status
                  and CPU seconds (once known)
Each child's lane (a connection to the run's socket whose first line,
b"lane", comes with the read ends of its stdout and stderr pipes, SCM_RIGHTS):
  rust -> child   {"id": int, "program": str, "timeout": float,
                   "cascade": bool, "thresholds": [float, ...]}   one line
  child -> rust   8-byte big-endian length, then {"metrics": [[key, kind, value],
                  ...] (see `raw_metric`), "artifacts": {str: str},
                  "error": str | null, "exception": [{"types": [str, ...], "errno":
                  int | null, "starting_process": bool}, ...], "reusable": bool}
The run decides whether a result makes the candidate valid (one rule, in
Rust); this module only reports what the evaluator returned.

With the sandbox (config "isolate"), each child sets up namespaces of its
own for its candidate before the request comes: see galapagos_sandbox.py.

Only the standard library is used.
"""

import gc
import json
import math
import numbers
import os
import select
import signal
import sys
import time

RSS_GROWTH_LIMIT = 512 << 20  # bytes a reused child may grow before it retires
ARTIFACT_LIMIT = 100_000
WORKER_FILE = os.path.abspath(__file__)


def _protocol_channel():
    """Keep the real stdout for the protocol only; point fd 1 at stderr so that
    anything the evaluator prints can never corrupt the JSON lines."""
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


PROTO = _protocol_channel()


def release_protocol():
    """In a forked process: stdin from /dev/null and the protocol channel
    closed, so it holds none of the worker's pipes (the run sees the worker's
    end as soon as the worker itself ends)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        PROTO.close()
    except OSError:
        pass


def send(obj):
    PROTO.write(json.dumps(obj, allow_nan=False) + "\n")
    PROTO.flush()


def clip(text, limit):
    if len(text) <= limit:
        return text
    half = limit // 2
    omitted = len(text) - 2 * half
    return text[:half] + f"\n... [{omitted} characters omitted] ...\n" + text[-half:]


def format_exception(exc):
    """Traceback without the worker's own frames, plus the one-line error."""
    import traceback  # the zygote imports it after its first fork, so children have it

    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if os.path.abspath(f.filename) != WORKER_FILE]
    )
    text = "".join(te.format())
    lines = str(exc).strip().splitlines()
    summary = type(exc).__name__ + (f": {lines[0]}" if lines else "")
    return summary, text


# ---------------------------------------------------------------- results


class Normalised:
    """An evaluator's result as the run receives it: every metric with its
    kind (see `raw_metric`), the artifacts as strings, and an error when the
    evaluator raised or returned something that is not a result. Whether
    the candidate is valid is the run's decision (one rule, in Rust), not
    this module's."""

    def __init__(self):
        self.metrics = {}  # key -> [kind, value]
        self.artifacts = {}
        self.error = None
        self.raised = False  # the evaluator raised: the worker, not the evaluator, judged it
        self.exception = []  # what the evaluator raised, as facts (see `exception_facts`)

    def merge(self, other):
        """A later cascade stage's result: its metrics and artifacts win."""
        self.metrics.update(other.metrics)
        self.artifacts.update(other.artifacts)
        if other.error:
            self.error = other.error
            self.exception = other.exception

    def gate_score(self):
        """What a cascade threshold is compared with: a numeric
        `combined_score`, else the mean of the numeric metrics (bools as 0/1);
        None when there is nothing to compare (the cascade stops)."""
        combined = self.metrics.get("combined_score")
        if combined is not None:
            return combined[1] if combined[0] == "number" else None
        values = [v for kind, v in self.metrics.values() if kind == "number"]
        values += [1.0 if v else 0.0 for kind, v in self.metrics.values() if kind == "bool"]
        return sum(values) / len(values) if values else 0.0

    def to_json(self):
        return {
            "metrics": [[key, kind, value] for key, (kind, value) in self.metrics.items()],
            "artifacts": self.artifacts,
            "error": self.error,
            "exception": self.exception,
        }


def as_artifact(value):
    if isinstance(value, str):
        text = value
    elif isinstance(value, (bytes, bytearray)):
        text = bytes(value).decode("utf-8", errors="replace")
    elif isinstance(value, (list, tuple, dict)):
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError):
            text = str(value)
    else:
        text = str(value)
    return clip(text, ARTIFACT_LIMIT)


def raw_metric(value):
    """[kind, value] for the wire: "number" (a finite float), "nonfinite"
    ("nan", "inf", "-inf"), "bool", "none", "text" (a string), or the Python
    type's name with the value as text (lists and dicts as JSON)."""
    if value is None:
        return ["none", None]
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool8"):
        return ["bool", bool(value)]
    if isinstance(value, (str, bytes, bytearray)):
        return ["text", as_artifact(value)]
    number = None
    if isinstance(value, numbers.Real):
        try:
            number = float(value)
        except OverflowError:  # an int beyond float's range
            number = math.inf if value > 0 else -math.inf
    elif not isinstance(value, (list, tuple, dict)) and hasattr(value, "__float__") \
            and getattr(value, "ndim", 0) == 0:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = None
    if number is not None:
        if math.isfinite(number):
            return ["number", number]
        return ["nonfinite", "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")]
    return [type(value).__name__, as_artifact(value)]


def normalise(result):
    out = Normalised()
    if result is None:
        out.error = "evaluate returned None (expected a dict of metrics)"
        return out
    if isinstance(result, dict):
        metrics = dict(result)
        extra = metrics.pop("artifacts", None) if isinstance(metrics.get("artifacts"), dict) else None
    elif hasattr(result, "metrics"):
        metrics = result.metrics
        extra = getattr(result, "artifacts", None)
        if not isinstance(metrics, dict):
            out.error = f"evaluate returned .metrics of type {type(metrics).__name__} (expected a dict)"
            return out
    else:
        out.error = (
            f"evaluate returned {type(result).__name__} "
            "(expected a dict or an object with .metrics)"
        )
        return out
    for key, value in metrics.items():
        out.metrics[str(key)] = raw_metric(value)
    if isinstance(extra, dict):
        for key, value in extra.items():
            if value is not None:
                out.artifacts[str(key)] = as_artifact(value)
    return out


# ------------------------------------------------------------- child side


def call_stage(fn, program_path):
    try:
        return normalise(fn(program_path))
    except BaseException as exc:  # SystemExit / KeyboardInterrupt from a candidate too
        out = Normalised()
        summary, out.artifacts["traceback"] = format_exception(exc)
        out.error = f"evaluator raised {summary}"
        out.raised = True
        out.exception = exception_facts(exc)
        return out


def exception_facts(exc):
    """What an exception from a candidate's evaluation is, and each it came
    from (its cause or context), as facts for the run, which names the limit
    they show (`Limits::hit` in the isolation kit): the names of its classes,
    its errno, and whether it was raised while starting a process. At most
    20."""
    facts = []
    seen = set()
    while exc is not None and id(exc) not in seen and len(facts) < 20:
        seen.add(id(exc))
        number = exc.errno if isinstance(exc, OSError) and isinstance(exc.errno, int) else None
        facts.append({
            "types": [cls.__name__ for cls in type(exc).__mro__ if cls not in (BaseException, object)],
            "errno": number,
            "starting_process": number is not None and _from_fork(exc),
        })
        exc = exc.__cause__ or exc.__context__
    return facts


def _from_fork(exc):
    """Was `exc` raised while starting a process (os.fork, subprocess,
    multiprocessing)?"""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        code = tb.tb_frame.f_code
        name = os.path.basename(code.co_filename)
        if name in ("subprocess.py", "popen_fork.py", "popen_forkserver.py", "os.py"):
            return True
        last = tb
        tb = tb.tb_next
    if last is None:
        return False
    # A call of os.fork() (a built-in: no frame of its own) or the like on
    # the line that raised.
    import linecache
    import re

    line = linecache.getline(last.tb_frame.f_code.co_filename, last.tb_lineno)
    return re.search(r"\b(fork|forkpty|posix_spawnp?|spawnv\w*|start_new_thread)\s*\(", line) is not None


def run_evaluation(module, program_path, cascade, thresholds):
    stage1 = getattr(module, "evaluate_stage1", None)
    if not (cascade and callable(stage1)):
        fn = getattr(module, "evaluate", None)
        if not callable(fn):
            out = Normalised()
            out.error = "evaluator.py defines no evaluate(program_path) function"
            return out
        return call_stage(fn, program_path)
    # `failure_stage` is the worker's word only for a stage that raised (an
    # evaluator's own `failure_stage` is kept); a program below a threshold
    # is weak, not failed, and an invalid verdict is the evaluator's own.
    result = call_stage(stage1, program_path)
    if result.raised:
        result.artifacts.setdefault("failure_stage", "stage1")
    stages = [("stage2", getattr(module, "evaluate_stage2", None)),
              ("stage3", getattr(module, "evaluate_stage3", None))]
    for index, (name, fn) in enumerate(stages):
        if result.error:
            return result
        if index < len(thresholds):
            gate = result.gate_score()
            if gate is None or gate < thresholds[index]:
                return result
        if not callable(fn):
            return result
        stage = call_stage(fn, program_path)
        result.merge(stage)
        if stage.raised:
            result.artifacts.setdefault("failure_stage", name)
    return result


def _load_libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except Exception:
        return None


# Loaded by the zygote at its start (children inherit it); the worker itself
# needs neither ctypes nor traceback until something fails.
LIBC = None


def set_parent_death_signal():
    """Best effort: die with the worker (Linux prctl PR_SET_PDEATHSIG)."""
    if LIBC is not None:
        try:
            LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)
        except Exception:
            pass


RESULT_HEADER = 8  # bytes of big-endian length before the result JSON


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _warm_evaluate(program_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_galapagos_warm", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"combined_score": float(module.f(0.5)[0]), "count": 3, "valid": True, "note": "warm"}


def warm_up(scratch):
    """Rehearse, in a standby child and before any candidate exists, what a
    request costs apart from the evaluator's own code: parse a request, write
    a program file, load it with importlib (as OpenEvolve-style evaluators
    load the candidate), normalise a result and encode it.

    A forked child pays a copy-on-write page fault the first time it writes
    each page it shares with its parent, and Python writes wherever it reads
    (reference counts); paying those faults here keeps them off the critical
    path. Nothing of the user's runs: the program is the worker's own."""
    try:
        request = json.loads(json.dumps({"id": 0, "program": WARM_MODULE, "timeout": 60.0,
                                         "cascade": True, "thresholds": [0.5, 0.75]}))
        path = os.path.join(scratch, f"warm_{os.getpid()}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(request["program"])
        result = call_stage(_warm_evaluate, path)
        os.unlink(path)
        data = json.dumps(result.to_json(), allow_nan=False).encode("utf-8")
        fd = os.open(os.devnull, os.O_WRONLY)
        write_all(fd, len(data).to_bytes(RESULT_HEADER, "big") + data)
        os.close(fd)
    except Exception:
        pass


_MISSING = object()


def rss_bytes():
    """Peak resident memory of this process so far (one system call)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, OSError, ValueError):
        return 0


class CandidateState:
    """What a reused child puts back after each candidate (`restore`), and
    the checks that then decide whether it may serve again (`dirty`).

    Captured once, after the warm-up and before the first candidate, so every
    candidate starts from the state a fresh child would have (the `random`
    module is reseeded, as it is in a forked child; numpy's global generator
    is put back, as a fork copies it)."""

    SIGNALS = tuple(
        getattr(signal, name) for name in ("SIGALRM", "SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2", "SIGHUP")
        if hasattr(signal, name)
    )

    def __init__(self, module, scratch, fds=()):
        import builtins
        import types

        self.scratch = scratch
        # The standard streams and the child's own pipes, by identity: a
        # candidate that closed or redirected one would break the next.
        self.fds = {fd: self.identity(fd) for fd in (0, 1, 2, *fds)}
        self.cwd = os.getcwd()
        self.path = list(sys.path)
        self.argv = list(sys.argv)
        # os.environ's raw dict (bytes) compares in well under a microsecond;
        # the mapping itself decodes every entry.
        self.environ = dict(os.environ)
        self.environ_raw = dict(getattr(os.environ, "_data", {})) or None
        self.recursion = sys.getrecursionlimit()
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        self.module_names = set(sys.modules)
        self.signals = {s: signal.getsignal(s) for s in self.SIGNALS}
        self.np_random = None
        np = sys.modules.get("numpy")
        if np is not None:
            try:
                self.np_random = np.random.get_state()
            except Exception:
                self.np_random = None
        warnings = sys.modules.get("warnings")
        self.warnings = list(warnings.filters) if warnings is not None else None
        # Identity snapshots: a replaced (monkeypatched) or deleted name shows.
        seen = set()
        self.watched = []
        for m in [builtins, module] + [v for v in vars(module).values() if isinstance(v, types.ModuleType)]:
            if id(m) in seen:
                continue
            seen.add(id(m))
            live = vars(m)
            self.watched.append((getattr(m, "__name__", "?"), live, dict(live)))
        self.rss = rss_bytes()

    def restore(self):
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
        sys.path[:] = self.path
        sys.argv[:] = self.argv
        raw = getattr(os.environ, "_data", None)
        if (raw != self.environ_raw) if self.environ_raw is not None else (os.environ != self.environ):
            os.environ.clear()
            os.environ.update(self.environ)
        sys.setrecursionlimit(self.recursion)
        sys.stdin, sys.stdout, sys.stderr = self.streams
        rnd = sys.modules.get("random")
        if rnd is not None:
            rnd.seed(int.from_bytes(os.urandom(16), "big"))  # fresh, as in a forked child
        if self.np_random is not None:
            try:
                sys.modules["numpy"].random.set_state(self.np_random)
            except Exception:
                pass
        if self.warnings is not None:
            sys.modules["warnings"].filters[:] = self.warnings
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in self.signals.items():
            if signal.getsignal(sig) is not handler and handler is not None:
                signal.signal(sig, handler)

    @staticmethod
    def identity(fd):
        try:
            st = os.fstat(fd)
            return (st.st_dev, st.st_ino)
        except OSError:
            return None

    def dirty(self, result):
        """Why this child must not serve another candidate, or None."""
        for fd, ident in self.fds.items():
            if self.identity(fd) != ident:
                return f"file descriptor {fd} was closed or replaced"
        for name, live, snapshot in self.watched:
            for key, value in snapshot.items():
                if live.get(key, _MISSING) is not value:
                    return f"{name}.{key} was replaced or deleted"
        threading = sys.modules.get("threading")
        if threading is not None and threading.active_count() > 1:
            return "threads are still running"
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    return "child processes are still running"
        except ChildProcessError:
            pass
        if result.error and ("MemoryError" in result.error or "RecursionError" in result.error):
            return result.error
        if len(sys.modules) != len(self.module_names):
            # Candidate modules an evaluator registered would pile up; library
            # imports stay (importing them again would cost every candidate).
            for key in set(sys.modules) - self.module_names:
                path = getattr(sys.modules.get(key), "__file__", None) or ""
                if path.startswith(self.scratch):
                    del sys.modules[key]
            self.module_names = set(sys.modules)
        if rss_bytes() - self.rss > RSS_GROWTH_LIMIT:
            return "memory grew by more than 512 MiB"
        return None


class LineReader:
    """Request lines from a pipe (a request is one JSON line)."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()

    def next_line(self):
        """The next line, or None at end of file."""
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line = bytes(self.buf[: end + 1])
                del self.buf[: end + 1]
                return line
            chunk = os.read(self.fd, 65536)
            if not chunk:
                if self.buf:
                    line, self.buf = bytes(self.buf), bytearray()
                    return line
                return None
            self.buf += chunk


def connect_lane(path, kind, fds=()):
    """Connect to the run's lane socket and say what this is (with `fds`
    passed along); the connection's fd."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        socket.send_fds(sock, [kind + b"\n"], list(fds))
    except BaseException:
        sock.close()
        raise
    return sock.detach()


def standby_main(module, lanes, scratch, suffix, reuse=1, warm=True, isolate=None, limits=None):
    """Body of a pre-forked standby child (zygote pattern).

    Everything that does not depend on the candidate (own process group,
    parent-death signal, default signal handlers, stdin from /dev/null,
    closing the protocol channel, the connections to the run, the
    candidate's namespaces and limits, a warm-up) is done here, before any
    candidate exists, so it is off the critical path.

    The child talks to the run directly: one connection to the run's lane
    socket (`lanes`) carries requests in (one JSON line each) and results out
    (length-prefixed JSON, with "reusable": whether it will serve another),
    and passes the run the read ends of two pipes that are the child's
    stdout and stderr (fds 1 and 2), so what a candidate prints reaches the
    run even if it crashes. The run knows the child by the connection's peer
    pid; it enforces the timeout and kills the child's group itself.

    With `isolate` (a dict: "network", "root", "hide"), this process is in
    namespaces of its own (see galapagos_sandbox), its scratch dir a tmpfs
    of the limits' "write_quota_mib". `limits` ("rlimits", "cpu_secs",
    "write_quota_mib", see `apply_limits`) apply to it.
    """
    # Its own process group (the run kills it). Isolated, this process is
    # pid 1 of its own pid namespace: its end ends the namespace.
    os.setpgid(0, 0)
    set_parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    release_protocol()
    # stdout and stderr become pipes whose read ends go to the run with the
    # lane, so what a candidate prints reaches the run even if it crashes.
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    lane = connect_lane(lanes, b"lane", (out_r, err_r))
    for fd in (out_r, err_r):
        os.close(fd)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.close(out_w)
    os.close(err_w)
    limits = limits or {}
    if isolate is None:
        try:
            apply_limits(limits, isolated=False, reused=reuse > 1)
        except (OSError, ValueError) as exc:
            refuse(lane, f"cannot apply the evaluator's limits: {exc}")
        serve_lane(module, lane, scratch, suffix, reuse, warm, limits)
        os._exit(0)
    # Isolated: this process is pid 1 of a pid namespace of its own (the
    # zygote forked it into one): namespaces, a private scratch dir, limits
    # and no privileges for the candidate, then serve.
    import galapagos_sandbox as sandbox

    try:
        sandbox.enter_namespaces()
        sandbox.private_mounts(isolate["root"], limits.get("write_quota_mib"), list(isolate.get("hide") or []))
        os.makedirs(scratch, exist_ok=True)
    except (sandbox.SetupError, OSError) as exc:
        refuse(lane, str(exc))
    try:
        apply_limits(limits, isolated=True, reused=reuse > 1)
        sandbox.drop_privileges(bool(isolate.get("network")))
    except (OSError, ValueError) as exc:
        refuse(lane, f"cannot restrict the candidate's process: {exc}")
    serve_lane(module, lane, scratch, suffix, reuse, warm, limits)
    os._exit(0)


def release_output():
    """fds 1 and 2 to /dev/null (a process that must not hold the
    candidate's output pipes open)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def refuse(lane, message):
    """Answer the next request on `lane` with `message` as the error (the
    candidate cannot be evaluated safely), then end. Does not return."""
    payload = {"error": message, "reusable": False}
    data = json.dumps(payload).encode("utf-8")
    try:
        LineReader(lane).next_line()
        write_all(lane, len(data).to_bytes(RESULT_HEADER, "big") + data)
        while os.read(lane, 65536):
            pass
    except OSError:
        pass
    os._exit(0)


def apply_limits(limits, isolated, reused):
    """Limits of the process that runs candidates: each of "rlimits" (the
    run's table, `Limits::rlimits` in the isolation kit: [name in
    `resource`, value, counted per user]; one counted per user only
    `isolated`, in the candidate's own user namespace), and CPU time
    (SIGXCPU at the limit, SIGKILL 1 s later; a reused process's limit moves
    with each candidate, see `raise_cpu_limit`)."""
    import resource

    def set_limit(which, value):
        if value is None:
            return
        value = int(value)
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    for name, value, per_user in limits.get("rlimits") or []:
        if isolated or not per_user:
            set_limit(getattr(resource, name), value)
    cpu = limits.get("cpu_secs")
    if cpu is not None and not reused:
        # SIGXCPU at the limit; SIGKILL a second later for a process that
        # ignores it (a candidate that handles it, or pid 1 of its namespace).
        soft = max(1, int(cpu + 0.999))
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        top = soft + 1 if hard == resource.RLIM_INFINITY else min(soft + 1, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (min(soft, top), top))


def raise_cpu_limit(cpu_secs):
    """Before each candidate of a reused process: its CPU limit counts from
    now (the soft limit moves up; the hard one stays open)."""
    if cpu_secs is None:
        return
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = max(1, int(used.ru_utime + used.ru_stime + cpu_secs + 0.999))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def write_folder(root, tree):
    """Write a folder program (`{"files": {path: text}, "binary": {path:
    base64}}`) under `root`, the candidate's own copy in the child's scratch
    dir. Paths were checked by the run; a path that would leave `root` is
    refused here too."""
    import base64

    os.makedirs(root, exist_ok=True)
    top = os.path.realpath(root)
    entries = [(p, t.encode("utf-8")) for p, t in (tree.get("files") or {}).items()]
    entries += [(p, base64.b64decode(b)) for p, b in (tree.get("binary") or {}).items()]
    for rel, data in entries:
        path = os.path.realpath(os.path.join(top, rel))
        if os.path.isabs(rel) or not path.startswith(top + os.sep):
            raise ValueError(f"{rel}: a program file outside its folder")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def remove_program(path):
    """Remove a candidate's file or folder (whatever it made in it too)."""
    import shutil

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def serve_lane(module, lane, scratch, suffix, reuse, warm, limits):
    """Serve candidates on `lane` in this process: one with `reuse` 1 (then
    wait for the run to kill this process's group, with any
    grandchildren), else up to `reuse` in turn. End of file on the lane (the
    run closed it, or is gone) exits at once. Processes forked from this one
    (an evaluator's helper running the candidate apart) lose the lane: no
    code they run can write a result."""
    if reuse > 1 and LIBC is not None:
        # Orphaned grandchildren come back to this child, so `dirty` sees them.
        try:
            LIBC.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except Exception:
            pass
    os.register_at_fork(after_in_child=lambda: _forget(lane))
    # The warm-up only pays off when it runs before the candidate arrives; a
    # candidate already waiting would just wait for it. The run's first child
    # (`warm` False) is forked just before its candidate is sent: it skips it.
    if warm and not select.select([lane], [], [], 0)[0]:
        warm_up(scratch)
    state = CandidateState(module, scratch, (lane,)) if reuse > 1 else None
    reader = LineReader(lane)
    served = 0
    while True:
        line = reader.next_line()
        if line is None:
            os._exit(0)
        request = json.loads(line)
        if reuse > 1:
            raise_cpu_limit(limits.get("cpu_secs"))
        if request.get("files") is not None:
            program_path = os.path.join(scratch, f"candidate_{request.get('id', 0)}")
            write_folder(program_path, request["files"])
        else:
            program_path = os.path.join(scratch, f"candidate_{request.get('id', 0)}{suffix}")
            with open(program_path, "w", encoding="utf-8") as f:
                f.write(request.get("program", ""))
        result = run_evaluation(
            module, program_path, bool(request.get("cascade", True)), list(request.get("thresholds") or [])
        )
        remove_program(program_path)
        served += 1
        keep = False
        if state is not None and served < reuse:
            state.restore()
            keep = state.dirty(result) is None
        payload = result.to_json()
        payload["reusable"] = keep
        data = json.dumps(payload, allow_nan=False).encode("utf-8")
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        try:
            write_all(lane, len(data).to_bytes(RESULT_HEADER, "big") + data)
        except OSError:
            os._exit(0)
        if not keep:
            # The run kills this child's whole group (grandchildren too) now;
            # wait for that, or for the run to close the lane.
            try:
                while os.read(lane, 65536):
                    pass
            except OSError:
                pass
            os._exit(0)


def _forget(fd):
    try:
        os.close(fd)
    except OSError:
        pass


# ------------------------------------------------------------ worker side


class Zygote:
    """A fork of the worker, made once the evaluator is imported, whose only
    job is to fork the standby children.

    Forking write-protects every page of the forking process, and Python
    writes to most of its pages (reference counts), so a process that forks
    pays a page fault per page it touches afterwards: about a millisecond per
    fork here. The zygote does almost nothing between forks, so it pays
    little, and the worker, which never forks again, pays nothing. The
    children are the zygote's: it reaps them and reports each exit status.

    Messages on the socket (SOCK_SEQPACKET, one per packet):
      worker -> zygote  b"F"                 fork a standby child
                        (b"C": one that skips the warm-up)
      zygote -> worker  b"X <pid> <status> <cpu>"  a child ended (its wait status,
                                             its CPU seconds)
    """

    def __init__(self, module, lanes, scratch, suffix, reuse=1, isolate=None, limits=None):
        import socket

        self.sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                self.sock.close()
                zygote_main(module, child_sock, lanes, scratch, suffix, reuse, isolate, limits)
            except BaseException:
                import traceback

                traceback.print_exc()
            os._exit(70)
        child_sock.close()
        self.pid = pid
        self.fd = self.sock.fileno()
        self.sock.setblocking(False)

    def fork(self, warm=True):
        self.sock.setblocking(True)
        try:
            self.sock.send(b"F" if warm else b"C")
        finally:
            self.sock.setblocking(False)

    def exits(self):
        """(pid, status, cpu seconds) of the children that ended, as reported so far; None
        when the zygote is gone."""
        out = []
        while True:
            try:
                msg = self.sock.recv(64)
            except BlockingIOError:
                return out
            except OSError:
                return None
            if not msg:
                return None
            parts = msg.split()
            if parts[0] == b"X" and len(parts) == 4:
                out.append((int(parts[1]), int(parts[2]), float(parts[3])))


def zygote_main(module, sock, lanes, scratch, suffix, reuse, isolate, limits):
    """Fork a standby child per request; report exits."""
    global LIBC
    if sys.platform.startswith("linux"):
        LIBC = _load_libc()
    set_parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    release_protocol()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    fd = sock.fileno()
    # Isolated: each standby child is forked into a pid namespace of its own,
    # as its pid 1 (when it ends, the kernel kills every process left in it);
    # this process (pid 1 of one the worker made, so it may make them) comes
    # back to its own after each fork.
    pidns = None
    if isolate is not None:
        import galapagos_sandbox as sandbox

        pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    while True:
        try:
            ready, _, _ = select.select([fd, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 512)
            while True:
                try:
                    pid, status, usage = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                sock.send(f"X {pid} {status} {usage.ru_utime + usage.ru_stime:.3f}".encode())
        if fd in ready:
            try:
                msg = sock.recv(16)
            except OSError:
                os._exit(0)
            if not msg:
                os._exit(0)
            if pidns is not None:
                sandbox.new_pid_namespace()
            pid = os.fork()
            if pid == 0:
                try:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for f in (fd, wake_r, wake_w) + ((pidns,) if pidns is not None else ()):
                        os.close(f)
                    standby_main(module, lanes, scratch, suffix, reuse, msg[:1] != b"C", isolate, limits)
                except BaseException:
                    import traceback

                    traceback.print_exc()
                os._exit(70)
            if pidns is not None:
                sandbox.back_to_pid_namespace(pidns)
            try:
                os.setpgid(pid, pid)  # the child does it too; whichever runs first
            except OSError:
                pass
            if "traceback" not in sys.modules:
                # After the first fork, so the run's first candidate does not
                # wait for it; later children inherit it (format_exception).
                import traceback  # noqa: F401


STATUS_MEMORY = 4096  # exit statuses kept for the run to ask about


def serve(zygote, stdin_fd):
    """The worker's loop: fork standby children when the run asks
    (`{"fork": n}`), and tell it how a child ended (`{"status": pid}` ->
    `{"exited": pid, "status": s}`, at once or when the zygote reports it).
    Returns when the run closes stdin or the zygote is gone."""
    statuses = {}  # pid -> wait status, the most recent STATUS_MEMORY
    asked = set()
    inbuf = bytearray()
    while True:
        try:
            ready, _, _ = select.select([stdin_fd, zygote.fd], [], [])
        except InterruptedError:
            continue
        if zygote.fd in ready:
            ended = zygote.exits()
            if ended is None:
                return
            for pid, status, cpu in ended:
                if pid in asked:
                    asked.discard(pid)
                    send({"exited": pid, "status": status, "cpu": cpu})
                statuses[pid] = (status, cpu)
                if len(statuses) > STATUS_MEMORY:
                    del statuses[next(iter(statuses))]
        if stdin_fd in ready:
            try:
                chunk = os.read(stdin_fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                return
            inbuf += chunk
            while True:
                end = inbuf.find(b"\n")
                if end < 0:
                    break
                line = bytes(inbuf[:end])
                del inbuf[: end + 1]
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(message, dict):
                    continue
                if "fork" in message:
                    for _ in range(max(0, min(int(message["fork"]), 64))):
                        try:
                            zygote.fork()
                        except OSError:
                            return
                if "status" in message:
                    pid = int(message["status"])
                    if pid in statuses:
                        status, cpu = statuses[pid]
                        send({"exited": pid, "status": status, "cpu": cpu})
                    else:
                        asked.add(pid)


def stale_bytecode():
    """Whether a module of the worker's code ran without up-to-date bytecode
    beside it (in the sandbox the code dir is read-only: the run compiles it
    outside, for the next start)."""
    import importlib.util

    for name in ("galapagos_worker", "galapagos_sandbox", "galapagos_eval", "openevolve",
                 "openevolve.evaluation_result"):
        source = getattr(sys.modules.get(name), "__file__", None)
        if not source:
            continue
        try:
            st = os.stat(source)
            with open(importlib.util.cache_from_source(source), "rb") as f:
                head = f.read(16)
        except OSError:
            return True
        if (head[:4] != importlib.util.MAGIC_NUMBER or head[4:8] != bytes(4)
                or int.from_bytes(head[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(head[12:16], "little") != st.st_size & 0xFFFFFFFF):
            return True
    return False


def load_evaluator(path, task_dir):
    """Import evaluator.py once, with the task dir as cwd and on sys.path."""
    import importlib.util

    os.chdir(task_dir)
    if task_dir not in sys.path:
        sys.path.insert(0, task_dir)
    spec = importlib.util.spec_from_file_location("evaluator", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluator"] = module
    spec.loader.exec_module(module)
    return module


WARM_MODULE = """X = 1.0


def f(x):
    return [X * x for _ in range(3)]
"""


def main():
    config = json.loads(sys.argv[1])
    evaluator_path = config["evaluator"]
    task_dir = config["task_dir"]
    suffix = config.get("suffix", ".py")
    scratch = config["scratch"]
    lanes = config["lanes"]
    if sys.version_info < (3, 9):
        send({"ready": False, "error": f"Python 3.9 or newer is needed, this is {sys.version.split()[0]}",
              "traceback": ""})
        return
    os.makedirs(scratch, exist_ok=True)
    isolate = config.get("isolate")
    if isolate is not None:
        # Before the import: a user namespace is only made for a process
        # with one thread, and an import may start threads.
        try:
            import galapagos_sandbox

            galapagos_sandbox.enter_user_namespace()
        except Exception as exc:
            send({"ready": False, "error": str(exc), "traceback": ""})
            return
    try:
        module = load_evaluator(evaluator_path, task_dir)
    except BaseException as exc:
        error, text = format_exception(exc)
        send({"ready": False, "error": error, "traceback": text, "import_failed": True})
        return
    # Objects that exist now (the evaluator and its imports) are never
    # collected: a collection in a forked child then does not touch, and so
    # copy, their memory pages.
    if hasattr(gc, "freeze"):
        gc.freeze()
    try:
        # The children connect to the run's lane socket: fail here, clearly,
        # rather than in every child.
        os.close(connect_lane(lanes, b"probe"))
    except OSError as exc:
        send({"ready": False, "error": f"cannot connect to the run's socket {lanes}: {exc}", "traceback": ""})
        return
    standby = max(1, int(config.get("standby", 2)))
    reuse = max(1, int(config.get("reuse", 1)))
    limits = config.get("limits") or {}
    if isolate is not None:
        try:
            galapagos_sandbox.zygote_pid_namespace()
        except Exception as exc:
            send({"ready": False, "error": str(exc), "traceback": ""})
            return
    try:
        zygote = Zygote(module, lanes, scratch, suffix, reuse, isolate, limits)
        # The run sends its first candidate (the initial program) as soon as
        # a child is there: that child has no time to warm up.
        zygote.fork(warm=False)
        for _ in range(standby - 1):
            zygote.fork()
    except OSError as exc:
        send({"ready": False, "error": f"cannot start the zygote process: {exc}", "traceback": ""})
        return
    send({"ready": True, "executable": sys.executable or "", "zygote": zygote.pid,
          "stale": stale_bytecode()})
    serve(zygote, sys.stdin.fileno())


if __name__ == "__main__":
    main()
