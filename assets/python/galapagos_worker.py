"""Galapagos evaluation worker.

Started once per run by the Rust `SubprocessEvaluator`. It imports the
task's evaluator.py a single time, then serves evaluation requests as JSON
lines on stdin/stdout, any number at once (replies go out as candidates
finish, matched by id). Every candidate runs in a forked child in its own
process group, so a runaway or crashing candidate is killed (SIGKILL to the
whole group) without losing the warm interpreter.

Zygote pattern: right after the import the worker forks a zygote that forks
every child (see `Zygote`), so the worker itself never forks again. Two
standby children wait at any time, already set up (own process group,
parent-death signal, stdin from /dev/null, stdout/stderr on capture pipes, a
rehearsal of the request path). A request costs one pipe write (the request
line is forwarded as is); the child writes the program file, evaluates, and
sends the result back on a second pipe; its replacement is asked for while it
runs. By default each child evaluates exactly one candidate and exits, so
candidates stay isolated from each other. With `reuse` K > 1 (the evaluator's
`candidates_per_process`) a child serves up to K candidates one after
another, like a pool worker of OpenEvolve, but still killable: a candidate
that overruns or crashes takes only its own child with it. After each
candidate the child puts back what candidates commonly change (working
directory, sys.path, argv, environment, standard streams, recursion limit,
random state, warning filters, signal handlers and timers), and it retires
instead of serving again when the candidate left threads or processes
behind, closed or redirected a standard stream, replaced anything in
builtins, evaluator.py's globals or a module evaluator.py uses, or grew the
process by more than RSS_GROWTH_LIMIT.

Protocol (one JSON object per line):
  worker -> rust  {"ready": true, "executable": str}  or  {"ready": false, "error": str, "traceback": str}
  rust -> worker  {"id": int, "program": str, "timeout": float,
                   "cascade": bool, "thresholds": [float, ...]}
  worker -> rust  {"id": int, "started": pid}           (the child's process group)
  worker -> rust  {"id": int, "scores": {str: float}, "nonfinite": [str],
                   "artifacts": {str: str}, "error": str | null, "timeout": bool,
                   "elapsed_secs": float, "reused": int}
  ("reused": how many candidates the child had served before this one.)

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

CAPTURE_LIMIT = 20_000
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
    """A result reduced to numeric scores and string artifacts."""

    def __init__(self):
        self.scores = {}
        self.nonfinite = []
        self.artifacts = {}
        self.error = None

    def merge(self, other):
        for k, v in other.scores.items():
            self.scores[k] = v
            if k in self.nonfinite:
                self.nonfinite.remove(k)
        for k in other.nonfinite:
            self.scores.pop(k, None)
            if k not in self.nonfinite:
                self.nonfinite.append(k)
        self.artifacts.update(other.artifacts)
        if other.error:
            self.error = other.error

    def failed(self):
        """Same invalidity rule as the Rust side (used to stop a cascade)."""
        if self.error or self.nonfinite:
            return True
        err = self.artifacts.get("error")
        if isinstance(err, str) and err.strip():
            return True
        for key in ("validity", "valid"):
            if key in self.scores and self.scores[key] <= 0:
                return True
        return self.scores.get("timeout", 0.0) > 0

    def gate_score(self):
        if "combined_score" in self.scores:
            return self.scores["combined_score"]
        vals = list(self.scores.values())
        return sum(vals) / len(vals) if vals else 0.0

    def to_json(self):
        return {
            "scores": self.scores,
            "nonfinite": self.nonfinite,
            "artifacts": self.artifacts,
            "error": self.error,
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


def as_number(value):
    """float for numeric-like values (bool -> 0/1, numpy scalars), else None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, numbers.Real):
        return float(value)
    if type(value).__name__ in ("bool_", "bool8"):
        return 1.0 if bool(value) else 0.0
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict)):
        return None
    if hasattr(value, "__float__") and getattr(value, "ndim", 0) == 0:
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    return None


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
        key = str(key)
        if value is None:
            continue
        num = as_number(value)
        if num is None:
            out.artifacts[key] = as_artifact(value)
        elif math.isfinite(num):
            out.scores[key] = num
        else:
            out.nonfinite.append(key)
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
        return out


def run_evaluation(module, program_path, cascade, thresholds):
    stage1 = getattr(module, "evaluate_stage1", None)
    if not (cascade and callable(stage1)):
        fn = getattr(module, "evaluate", None)
        if not callable(fn):
            out = Normalised()
            out.error = "evaluator.py defines no evaluate(program_path) function"
            return out
        return call_stage(fn, program_path)
    result = call_stage(stage1, program_path)
    stages = [("stage2", getattr(module, "evaluate_stage2", None)),
              ("stage3", getattr(module, "evaluate_stage3", None))]
    previous = "stage1"
    for index, (name, fn) in enumerate(stages):
        if result.failed():
            result.artifacts["failure_stage"] = previous
            return result
        if index < len(thresholds) and result.gate_score() < thresholds[index]:
            result.artifacts["failure_stage"] = previous
            return result
        if not callable(fn):
            return result
        result.merge(call_stage(fn, program_path))
        previous = name
    if result.failed():
        result.artifacts["failure_stage"] = previous
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


def standby_main(module, fds, scratch, suffix, reuse=1, warm=True):
    """Body of a pre-forked standby child (zygote pattern).

    Everything that does not depend on the candidate (own process group,
    parent-death signal, default signal handlers, stdin from /dev/null,
    stdout/stderr onto the capture pipes, closing the protocol channel, a
    warm-up) is done here, before any candidate exists, so it is off the
    critical path. The child then blocks until the worker forwards one request
    line on its private pipe, writes the program file, evaluates that
    candidate, and sends the result back on its result pipe (length-prefixed
    JSON, with "reusable": whether it will serve another). With `reuse` 1 it
    then exits; otherwise it waits for the next line, up to `reuse`
    candidates. End of file on the request pipe (the worker retired it or
    died) exits at once.
    """
    request_fd, result_fd, out_fd, err_fd = fds
    os.setpgid(0, 0)
    set_parent_death_signal()
    if reuse > 1 and LIBC is not None:
        # Orphaned grandchildren come back to this child, so `dirty` sees them.
        try:
            LIBC.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except Exception:
            pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    release_protocol()
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    # The warm-up only pays off when it runs before the candidate arrives; a
    # candidate already waiting would just wait for it. The run's first child
    # (`warm` False) is forked just before its candidate is sent: it skips it.
    if warm and not select.select([request_fd], [], [], 0)[0]:
        warm_up(scratch)
    state = CandidateState(module, scratch, (request_fd, result_fd)) if reuse > 1 else None
    reader = LineReader(request_fd)
    served = 0
    while True:
        line = reader.next_line()
        if line is None:
            os._exit(0)
        request = json.loads(line)
        program_path = os.path.join(scratch, f"candidate_{request.get('id', 0)}{suffix}")
        with open(program_path, "w", encoding="utf-8") as f:
            f.write(request.get("program", ""))
        result = run_evaluation(
            module, program_path, bool(request.get("cascade", True)), list(request.get("thresholds") or [])
        )
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
            write_all(result_fd, len(data).to_bytes(RESULT_HEADER, "big") + data)
        except OSError:
            os._exit(0)
        if not keep:
            os._exit(0)


# ------------------------------------------------------------ worker side


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Capture:
    """What a candidate wrote to one stream, read from a pipe while it runs.
    Keeps the first and the last 2 * CAPTURE_LIMIT bytes, so a chatty
    candidate costs bounded memory; the middle is counted, not kept."""

    def __init__(self, fd):
        self.fd = fd
        os.set_blocking(fd, False)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def pump(self):
        """Read what is there; False at end of file."""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            room = 2 * CAPTURE_LIMIT - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                extra = len(self.tail) - 2 * CAPTURE_LIMIT
                if extra > 0:
                    del self.tail[:extra]
                    self.dropped += extra

    def reset(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def text(self):
        data = bytes(self.head)
        if self.dropped:
            data += f"\n... [{self.dropped} bytes omitted] ...\n".encode()
        data += bytes(self.tail)
        return clip(data.decode("utf-8", errors="replace"), CAPTURE_LIMIT)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def describe_status(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"candidate crashed: killed by {name} (signal {sig})"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return f"candidate exited with status {code} before the evaluator returned (os._exit or a crash)"


class ZygoteGone(OSError):
    """The zygote ended (a candidate may have killed its parent)."""


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
      worker -> zygote  b"F" with the child's four pipe ends (SCM_RIGHTS)
                        (b"C": the same, for a child that skips the warm-up)
      zygote -> worker  b"P <pid>"           a child was forked (in request order)
      zygote -> worker  b"X <pid> <status>"  a child ended (its wait status)
    """

    def __init__(self, module, scratch, suffix, reuse=1):
        import socket

        self.sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                self.sock.close()
                zygote_main(module, child_sock, scratch, suffix, reuse)
            except BaseException:
                import traceback

                traceback.print_exc()
            os._exit(70)
        child_sock.close()
        self.pid = pid
        self.fd = self.sock.fileno()
        self.spawned = []
        self.statuses = {}

    def request(self, fds, warm=True):
        import socket

        socket.send_fds(self.sock, [b"F" if warm else b"C"], fds)

    def pump(self, block=False):
        """Read the messages that are there (or wait for one); False when the zygote is gone."""
        self.sock.setblocking(block)
        try:
            while True:
                try:
                    msg = self.sock.recv(64)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not msg:
                    return False
                parts = msg.split()
                if parts[0] == b"P":
                    self.spawned.append(int(parts[1]))
                elif parts[0] == b"X":
                    self.statuses[int(parts[1])] = int(parts[2])
                if block:
                    return True
        finally:
            self.sock.setblocking(False)

    def next_pid(self):
        while not self.spawned:
            if not self.pump(block=True):
                raise ZygoteGone("the zygote process ended")
        return self.spawned.pop(0)

    def status(self, pid, timeout):
        """The wait status of a child that ended, waiting up to `timeout` s; None if unknown."""
        deadline = time.monotonic() + timeout
        while pid not in self.statuses:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([self.fd], [], [], left)
            if not self.pump():
                return None
        return self.statuses.pop(pid)

    def forget(self, pid):
        self.statuses.pop(pid, None)


def zygote_main(module, sock, scratch, suffix, reuse):
    """Fork a standby child per request; report forks and exits."""
    import socket

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
    while True:
        try:
            ready, _, _ = select.select([fd, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 512)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                sock.send(f"X {pid} {status}".encode())
        if fd in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 16, 4)
            except OSError:
                os._exit(0)
            if not msg:
                os._exit(0)
            if len(fds) != 4:
                for f in fds:
                    os.close(f)
                continue
            pid = os.fork()
            if pid == 0:
                try:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for f in (fd, wake_r, wake_w):
                        os.close(f)
                    standby_main(module, fds, scratch, suffix, reuse, warm=msg[:1] != b"C")
                except BaseException:
                    import traceback

                    traceback.print_exc()
                os._exit(70)
            try:
                os.setpgid(pid, pid)  # the child does it too; whichever runs first
            except OSError:
                pass
            for f in fds:
                os.close(f)
            sock.send(f"P {pid}".encode())
            if "traceback" not in sys.modules:
                # After the first fork, so the run's first candidate does not
                # wait for it; later children inherit it (format_exception).
                import traceback  # noqa: F401


class Standby:
    """One pre-forked child waiting for its candidate on a private pipe."""

    def __init__(self, zygote, warm=True):
        request_r, request_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        child_ends = [request_r, result_w, out_w, err_w]
        try:
            zygote.request(child_ends, warm)
        except OSError:
            for fd in child_ends + [request_w, result_r, out_r, err_r]:
                os.close(fd)
            raise
        for fd in child_ends:
            os.close(fd)
        self.zygote = zygote
        self._pid = None
        self.write_fd = request_w
        self.result_fd = result_r
        self.captures = {"stdout": Capture(out_r), "stderr": Capture(err_r)}
        self.served = 0  # candidates handed to this child so far

    @property
    def pid(self):
        """The child's pid (also its process group), once the zygote said it."""
        if self._pid is None:
            self._pid = self.zygote.next_pid()
        return self._pid

    def hand_over(self, line, keep_open=False):
        """Forward the request line (and close the pipe unless the child may
        serve again); False when the child is gone."""
        ok = True
        try:
            write_all(self.write_fd, line)
            self.served += 1
        except OSError:
            ok = False
        if not (ok and keep_open):
            os.close(self.write_fd)
            self.write_fd = None
        return ok

    def captured(self):
        """The candidate's stdout/stderr that are not empty (reads what is left)."""
        out = {}
        for name, capture in self.captures.items():
            if capture.fd is not None:
                capture.pump()
            text = capture.text()
            if text:
                out[name] = text
        return out

    def reset_captures(self):
        """Start the next candidate's captures (a reused child)."""
        for capture in self.captures.values():
            capture.reset()

    def close(self):
        for name in ("write_fd", "result_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        for capture in self.captures.values():
            capture.close()

    def retire(self):
        """Kill an unused or broken standby."""
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None
        try:
            kill_group(self.pid)
        except OSError:
            pass
        self.close()


class StandbySlot:
    """The standby children of this worker, forked by its zygote.

    `depth` are kept ready (oldest first; config `standby`, 2 for a single
    worker, 1 when several share the machine): the replacement for the one a
    request takes is asked for while that candidate evaluates, and has at
    least the rest of that evaluation and the next proposal to finish its
    set-up. The zygote reaps the children."""

    def __init__(self):
        self.depth = 1
        self.ready = []
        self.idle = []  # reused children between candidates (most recent last)
        self.reuse = 1
        self.zygote = None
        self.programs = []
        self.scratch = None
        self.suffix = ".py"

    def configure(self, module, scratch, suffix, reuse=1):
        self.scratch, self.suffix, self.reuse = scratch, suffix, reuse
        self.zygote = Zygote(module, scratch, suffix, reuse)

    def take(self):
        """The child for the next candidate: the reused child that served
        last (its pages are the warmest), else the oldest standby, else a new one."""
        if self.idle:
            return self.idle.pop()
        return self.ready.pop(0) if self.ready else Standby(self.zygote)

    def candidates(self):
        """How many children `take` can offer before it forks a new one."""
        return len(self.idle) + len(self.ready)

    def park(self, standby, rid):
        """The candidate of a reused child is over and the child waits for the next."""
        standby.reset_captures()
        self.idle.append(standby)
        self.programs.append(os.path.join(self.scratch, f"candidate_{rid}{self.suffix}"))

    def finish(self, standby, rid):
        """The candidate of `standby` is over and its group SIGKILLed."""
        standby.close()
        self.zygote.forget(standby.pid)
        self.programs.append(os.path.join(self.scratch, f"candidate_{rid}{self.suffix}"))

    def tidy(self, running):
        """Remove finished program files; forget exit reports of children
        that are not running (standbys killed while they waited)."""
        for path in self.programs:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.programs = []
        for pid in [p for p in self.zygote.statuses if p not in running]:
            del self.zygote.statuses[pid]
            # A reused child that died while it waited (killed from outside).
            for standby in [c for c in self.idle if c._pid == pid]:
                self.idle.remove(standby)
                standby.close()

    def refill(self):
        while len(self.ready) < self.depth:
            self.ready.append(Standby(self.zygote))


STANDBY = StandbySlot()


class Running:
    """One candidate in flight: its child, its deadline, its partial result."""

    def __init__(self, rid, standby, timeout):
        self.rid = rid
        self.standby = standby
        self.timeout = timeout
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.buf = bytearray()
        self.need = None
        self.result_open = True
        self.drained = False
        self.streams = {c.fd: c for c in standby.captures.values()}
        os.set_blocking(standby.result_fd, False)

    def read_result(self):
        """Read what the child sent; the result bytes once complete, else None."""
        try:
            chunk = os.read(self.standby.result_fd, 1 << 20)
        except BlockingIOError:
            self.drained = True
            return None
        except OSError:
            chunk = b""
        if not chunk:
            self.result_open = False  # end of file without a whole result: only the exit counts now
            return None
        self.buf += chunk
        if self.need is None and len(self.buf) >= RESULT_HEADER:
            self.need = RESULT_HEADER + int.from_bytes(self.buf[:RESULT_HEADER], "big")
        if self.need is not None and len(self.buf) >= self.need:
            return bytes(self.buf[RESULT_HEADER:self.need])
        return None


def failure_reply(rid, error, text=""):
    return {"id": rid, "scores": {}, "nonfinite": [], "artifacts": {"traceback": text} if text else {},
            "error": error, "timeout": False}


ZYGOTE_GONE = (
    "evaluation worker died (its zygote, the candidate's parent process, ended); "
    "the candidate may have killed or crashed it; the worker will be restarted"
)


class Server:
    """Serves requests from stdin, any number at once: each candidate runs in
    its own standby child; replies go out as candidates finish."""

    def __init__(self):
        self.running = {}
        self.inbuf = bytearray()

    def start(self, line):
        try:
            request = json.loads(line)
        except ValueError:
            return
        rid = request.get("id", 0)
        if rid in self.running:
            send(failure_reply(rid, f"worker failure: request id {rid} is already running"))
            return
        try:
            timeout = float(request.get("timeout", 60.0))
            # A standby killed from outside while it waited refuses the
            # hand-over: try the next one, and in the end a fresh one.
            for _ in range(STANDBY.candidates() + 1):
                standby = STANDBY.take()
                if standby.hand_over(line, keep_open=STANDBY.reuse > 1):
                    break
                standby.retire()
            else:
                raise RuntimeError("cannot hand the candidate to a fresh child process")
            send({"id": rid, "started": standby.pid})
            self.running[rid] = Running(rid, standby, timeout)
        except ZygoteGone:
            # The candidate killed the zygote before it could even say the
            # child's pid (a candidate runs at once when nothing else waits).
            # The serve loop sees the zygote's end next and the worker exits.
            send(failure_reply(rid, ZYGOTE_GONE))
            return
        except Exception as exc:
            error, text = format_exception(exc)
            send(failure_reply(rid, f"worker failure: {error}", text))
            return
        # The candidate is running: ask for the next children meanwhile.
        try:
            STANDBY.refill()
        except OSError:
            pass

    def finish(self, run, outcome, detail):
        del self.running[run.rid]
        pid = run.standby.pid
        reply = {"id": run.rid, "scores": {}, "nonfinite": [], "artifacts": {}, "error": None,
                 "timeout": outcome == "timeout"}
        if outcome == "done":
            try:
                reply.update(json.loads(detail))
            except ValueError as exc:
                reply["error"] = f"unreadable evaluation result: {exc}"
        reusable = reply.pop("reusable", False) is True and run.standby.write_fd is not None
        if not reusable:
            # Clear the whole group: stray grandchildren must not outlive the
            # candidate (and a child that sent its result needs no teardown).
            kill_group(pid)
        if outcome == "timeout":
            STANDBY.zygote.status(pid, 10.0)  # gone before the reply says so
            reply["error"] = f"timeout: evaluation exceeded {run.timeout:g} s and was killed"
        elif outcome == "exit":
            reply["error"] = ZYGOTE_GONE if detail is None else describe_status(detail)
        reply.setdefault("artifacts", {}).update(run.standby.captured())
        reply["elapsed_secs"] = time.monotonic() - run.started
        reply["reused"] = run.standby.served - 1
        if reusable:
            STANDBY.park(run.standby, run.rid)
        else:
            STANDBY.finish(run.standby, run.rid)
        send(reply)

    def read_requests(self, fd):
        """Start every whole request line on stdin; False at end of file."""
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.inbuf += chunk
        while True:
            end = self.inbuf.find(b"\n")
            if end < 0:
                return True
            line = bytes(self.inbuf[: end + 1])
            del self.inbuf[: end + 1]
            self.start(line)

    def serve(self, stdin_fd):
        zygote = STANDBY.zygote
        while True:
            watch = {stdin_fd: None, zygote.fd: None}
            for run in self.running.values():
                for fd in run.streams:
                    watch[fd] = (run, "stream")
                if run.result_open:
                    watch[run.standby.result_fd] = (run, "result")
            wait = None
            if self.running:
                wait = max(0.0, min(r.deadline for r in self.running.values()) - time.monotonic())
            try:
                ready, _, _ = select.select(list(watch), [], [], wait)
            except (OSError, ValueError):
                ready = []
            ready = set(ready)
            for fd in ready:
                if fd == stdin_fd or fd == zygote.fd:
                    continue
                run, kind = watch[fd]
                if run.rid not in self.running:
                    continue
                if kind == "stream":
                    if not run.streams[fd].pump():
                        del run.streams[fd]
                    continue
                result = run.read_result()
                if result is not None:
                    self.finish(run, "done", result)
            if zygote.fd in ready and not zygote.pump():
                for run in list(self.running.values()):
                    self.finish(run, "exit", None)
                return
            for run in list(self.running.values()):
                pid = run.standby.pid
                if pid in zygote.statuses:
                    # It ended: whatever it wrote is in the pipe by now.
                    run.drained = False
                    result = None
                    while run.result_open and not run.drained and result is None:
                        result = run.read_result()
                    if result is not None:
                        self.finish(run, "done", result)
                    else:
                        self.finish(run, "exit", zygote.statuses.pop(pid))
                elif time.monotonic() >= run.deadline:
                    self.finish(run, "timeout", None)
            if stdin_fd in ready and not self.read_requests(stdin_fd):
                # The caller is gone: nothing to reply to.
                for run in self.running.values():
                    kill_group(run.standby.pid)
                for standby in STANDBY.idle:
                    standby.retire()
                return
            if not self.running:
                STANDBY.tidy(set())
            else:
                STANDBY.tidy({r.standby.pid for r in self.running.values()})


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
    os.makedirs(scratch, exist_ok=True)
    try:
        module = load_evaluator(evaluator_path, task_dir)
    except BaseException as exc:
        error, text = format_exception(exc)
        send({"ready": False, "error": error, "traceback": text})
        return
    # Objects that exist now (the evaluator and its imports) are never
    # collected: a collection in a forked child then does not touch, and so
    # copy, their memory pages.
    if hasattr(gc, "freeze"):
        gc.freeze()
    if sys.version_info < (3, 9):
        send({"ready": False, "error": f"Python 3.9 or newer is needed, this is {sys.version.split()[0]}",
              "traceback": ""})
        return
    STANDBY.depth = max(1, int(config.get("standby", 2)))
    reuse = max(1, int(config.get("reuse", 1)))
    try:
        STANDBY.configure(module, scratch, suffix, reuse)
    except OSError as exc:
        send({"ready": False, "error": f"cannot start the zygote process: {exc}", "traceback": ""})
        return
    try:
        # The run sends its first candidate (the initial program) as soon as
        # the worker is ready: that child has no time to warm up.
        STANDBY.ready.append(Standby(STANDBY.zygote, warm=False))
        STANDBY.refill()
    except OSError:
        pass
    send({"ready": True, "executable": sys.executable or ""})
    Server().serve(sys.stdin.fileno())


if __name__ == "__main__":
    main()
