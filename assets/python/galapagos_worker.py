"""Galapagos evaluation worker.

Started once per pool slot by the Rust `SubprocessEvaluator`. It imports the
task's evaluator.py a single time, then serves evaluation requests as JSON
lines on stdin/stdout. Every candidate runs in a forked child in its own
process group, so a runaway or crashing candidate is killed (SIGKILL to the
whole group) without losing the warm interpreter.

Zygote pattern: the child for the *next* candidate is forked (and set up: own
process group, parent-death signal, stdin from /dev/null) right after a reply
is sent, while the caller is busy with the next proposal. It then waits on a
private pipe; a request only costs writing the program file and one pipe
write, and the fork is off the critical path. Each child still evaluates
exactly one candidate and exits, so candidates stay isolated from each other.

Protocol (one JSON object per line):
  worker -> rust  {"ready": true}  or  {"ready": false, "error": str, "traceback": str}
  rust -> worker  {"id": int, "program": str, "timeout": float,
                   "cascade": bool, "thresholds": [float, ...]}
  worker -> rust  {"id": int, "started": pid}           (the child's process group)
  worker -> rust  {"id": int, "scores": {str: float}, "nonfinite": [str],
                   "artifacts": {str: str}, "error": str | null, "timeout": bool}

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
import traceback

CAPTURE_LIMIT = 20_000
ARTIFACT_LIMIT = 100_000
WORKER_FILE = os.path.abspath(__file__)


def _protocol_channel():
    """Keep the real stdout for the protocol only; point fd 1 at stderr so that
    anything the evaluator prints can never corrupt the JSON lines."""
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


PROTO = _protocol_channel()


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


LIBC = _load_libc() if sys.platform.startswith("linux") else None


def set_parent_death_signal():
    """Best effort: die with the worker (Linux prctl PR_SET_PDEATHSIG)."""
    if LIBC is not None:
        try:
            LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)
        except Exception:
            pass


def standby_main(module, request_fd, done_fd):
    """Body of a pre-forked standby child (zygote pattern).

    Everything that does not depend on the candidate (own process group,
    parent-death signal, default signal handlers, stdin from /dev/null, closing
    the protocol channel) is done here, before any candidate exists, so it is
    off the critical path. The child then blocks until the worker sends one
    request line on its private pipe, evaluates that one candidate and exits.
    End of file on the pipe (the worker retired it or died) exits at once.
    When the result is on disk it writes one byte to `done_fd`, so the worker
    can reply without waiting for this process's teardown.
    """
    os.setpgid(0, 0)
    set_parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        PROTO.close()
    except OSError:
        pass
    chunks = []
    while True:
        chunk = os.read(request_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(request_fd)
    if not chunks:
        os._exit(0)
    job = json.loads(b"".join(chunks))
    child_main(module, job["request"], job["workdir"], job["program_path"], done_fd)


def child_main(module, request, workdir, program_path, done_fd):
    out_fd = os.open(os.path.join(workdir, "stdout.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err_fd = os.open(os.path.join(workdir, "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    result = run_evaluation(
        module, program_path, bool(request.get("cascade", True)), list(request.get("thresholds") or [])
    )
    data = json.dumps(result.to_json(), allow_nan=False)
    tmp = os.path.join(workdir, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, os.path.join(workdir, "result.json"))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    try:
        os.write(done_fd, b"1")
    except OSError:
        pass
    os._exit(0)


# ------------------------------------------------------------ worker side


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_capture(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    if len(data) > 4 * CAPTURE_LIMIT:
        data = data[: 2 * CAPTURE_LIMIT] + data[-2 * CAPTURE_LIMIT:]
    return clip(data.decode("utf-8", errors="replace"), CAPTURE_LIMIT)


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


class Standby:
    """One pre-forked child waiting for its candidate on a private pipe."""

    def __init__(self, module):
        sys.stdout.flush()
        sys.stderr.flush()
        read_fd, write_fd = os.pipe()
        done_read, done_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(write_fd)
                os.close(done_read)
                standby_main(module, read_fd, done_write)
            except BaseException:
                traceback.print_exc()
            os._exit(70)
        os.close(read_fd)
        os.close(done_write)
        self.done_fd = done_read
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self.pid = pid
        self.write_fd = write_fd
        self.pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(pid)
            except OSError:
                self.pidfd = None
        self.reaped = False

    def hand_over(self, job):
        """Send the job and close the pipe; False when the child is gone."""
        try:
            view = memoryview(job)
            while view:
                view = view[os.write(self.write_fd, view):]
            return True
        except OSError:
            return False
        finally:
            os.close(self.write_fd)
            self.write_fd = None

    def wait_done(self, timeout):
        """Wait up to `timeout` seconds for the child to report its result or
        to end. Returns "done" (result written; the child is exiting and is
        reaped later by `reap`), the wait status of a child that ended
        without reporting, or None on timeout."""
        deadline = time.monotonic() + timeout
        delay = 0.0005
        watch = [self.done_fd]
        while True:
            if watch:
                try:
                    ready, _, _ = select.select(watch, [], [], 0)
                except (OSError, ValueError):
                    ready = []
                if ready:
                    try:
                        data = os.read(self.done_fd, 1)
                    except OSError:
                        data = b""
                    if data:
                        return "done"
                    watch = []  # end of file without a result: only the exit counts now
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.reaped = True
                return 0
            if done == self.pid:
                self.reaped = True
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if self.pidfd is not None:
                select.select(watch + [self.pidfd], [], [], left)
            elif watch:
                select.select(watch, [], [], min(delay, left))
                delay = min(delay * 2, 0.02)
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.02)

    def wait(self, timeout):
        """Wait up to `timeout` seconds (None = for ever); the wait status, or None on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while True:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG if deadline is not None else 0)
            except ChildProcessError:
                self.reaped = True
                return 0
            if done == self.pid:
                self.reaped = True
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if self.pidfd is not None:
                select.select([self.pidfd], [], [], left)
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.02)

    def close(self):
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None
        if self.done_fd is not None:
            os.close(self.done_fd)
            self.done_fd = None
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def retire(self):
        """Kill and reap an unused or broken standby."""
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None
        if not self.reaped:
            kill_group(self.pid)
            self.wait(None)
        self.close()


class StandbySlot:
    """Holds the next standby child; refilled after each reply, off the critical path."""

    def __init__(self):
        self.current = None
        self.finished = []
        self.workdirs = []

    def clean_later(self, workdir):
        """Remove a candidate's folder after the reply is sent."""
        self.workdirs.append(workdir)

    def finish_later(self, standby):
        """A child that reported its result and was SIGKILLed with its group:
        reap it after the reply is sent."""
        self.finished.append(standby)

    def reap(self):
        for standby in self.finished:
            if not standby.reaped:
                standby.wait(None)
            standby.close()
        self.finished = []
        for workdir in self.workdirs:
            remove_workdir(workdir)
        self.workdirs = []

    def take(self, module):
        standby, self.current = self.current, None
        if standby is None:
            standby = Standby(module)
        return standby

    def refill(self, module):
        if self.current is None:
            self.current = Standby(module)
        self.reap()


STANDBY = StandbySlot()


def evaluate_request(module, request, scratch, suffix):
    rid = request.get("id", 0)
    workdir = os.path.join(scratch, f"c{rid}")
    os.makedirs(workdir, exist_ok=True)
    for name in ("stdout.txt", "stderr.txt", "result.json", "result.json.tmp"):
        try:
            os.unlink(os.path.join(workdir, name))
        except FileNotFoundError:
            pass
    program_path = os.path.join(workdir, f"candidate_{rid}{suffix}")
    with open(program_path, "w", encoding="utf-8") as f:
        f.write(request.get("program", ""))
    timeout = float(request.get("timeout", 60.0))
    job = json.dumps({"request": request, "workdir": workdir, "program_path": program_path}).encode()
    started = time.monotonic()
    standby = STANDBY.take(module)
    if not standby.hand_over(job):
        # The standby died while it waited (killed from outside): use a fresh one.
        standby.retire()
        standby = STANDBY.take(module)
        if not standby.hand_over(job):
            standby.retire()
            raise RuntimeError("cannot hand the candidate to a fresh child process")
    pid = standby.pid
    send({"id": rid, "started": pid})
    status = standby.wait_done(timeout)
    timed_out = status is None
    # Always clear the whole group: stray grandchildren must not outlive the
    # candidate (and a child that reported its result needs no teardown time).
    kill_group(pid)
    if status == "done":
        STANDBY.finish_later(standby)
    else:
        if timed_out:
            status = standby.wait(None)
        standby.close()
    elapsed = time.monotonic() - started
    reply = {"id": rid, "scores": {}, "nonfinite": [], "artifacts": {}, "error": None, "timeout": timed_out}
    result_path = os.path.join(workdir, "result.json")
    if timed_out:
        reply["error"] = f"timeout: evaluation exceeded {timeout:g} s and was killed"
    elif os.path.exists(result_path):
        try:
            with open(result_path, encoding="utf-8") as f:
                reply.update(json.load(f))
        except (OSError, ValueError) as exc:
            reply["error"] = f"unreadable evaluation result: {exc}"
    elif status == "done":
        reply["error"] = "candidate signalled completion but left no evaluation result"
    else:
        reply["error"] = describe_status(status)
    artifacts = reply.setdefault("artifacts", {})
    for name in ("stdout", "stderr"):
        text = read_capture(os.path.join(workdir, f"{name}.txt"))
        if text:
            artifacts[name] = text
    reply["elapsed_secs"] = elapsed
    STANDBY.clean_later(workdir)
    return reply


def remove_workdir(workdir):
    try:
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)
    except OSError:
        pass


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
    try:
        STANDBY.refill(module)
    except OSError:
        pass
    send({"ready": True})
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        try:
            request = json.loads(line)
        except ValueError:
            continue
        try:
            reply = evaluate_request(module, request, scratch, suffix)
        except Exception as exc:
            error, text = format_exception(exc)
            reply = {
                "id": request.get("id", 0),
                "scores": {},
                "nonfinite": [],
                "artifacts": {"traceback": text},
                "error": f"worker failure: {error}",
                "timeout": False,
            }
        send(reply)
        # Fork the next candidate's child now, while the caller works on the
        # next proposal, instead of after the next request arrives.
        try:
            STANDBY.refill(module)
        except OSError:
            pass


if __name__ == "__main__":
    main()
